//! Hostile surroundings: API servers that never answer, answer one byte at a time or without end, a cluster
//! that dies during `apply --wait`, and a FIFO where the jobs file should be. The command must end promptly with
//! a short message and bounded memory, never hang.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use support::{Cluster, NAMESPACE, eventually};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use toolforge_local_cluster::{ContainerOutcome, Script};

/// A server on 127.0.0.1 that treats every connection with `serve`, and a kubeconfig for it.
async fn hostile<F, Fut>(serve: F) -> (tempfile::TempDir, PathBuf)
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            // Read the request first: a client may drop a connection that speaks before it was asked.
            let mut request = Vec::new();
            let mut buffer = [0; 4096];
            while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => request.extend_from_slice(&buffer[..read]),
                }
            }
            tokio::spawn(serve(stream));
        }
    });
    let directory = tempfile::tempdir().unwrap();
    let kubeconfig = directory.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n\
             clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\n\
             contexts: [{{name: ctx, context: {{cluster: c, user: u, namespace: tool-mytool}}}}]\n"
        ),
    )
    .unwrap();
    (directory, kubeconfig)
}

/// What a run of `toolforge-jobs list` against a hostile server did.
struct Ended {
    code: Option<i32>,
    stderr: String,
    took: Duration,
    /// The child's peak resident memory, as last read from /proc (kB).
    peak_kb: u64,
}

/// Runs `toolforge-jobs --request-timeout TIMEOUT list` against `kubeconfig`, watching its memory.
async fn list(kubeconfig: &Path, timeout: &str) -> Ended {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
        .args([
            "--request-timeout",
            timeout,
            "--no-color",
            "list",
            "--kubeconfig",
        ])
        .arg(kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
        text
    });
    let started = Instant::now();
    let mut peak_kb = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
            peak_kb = text
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|value| value.trim().trim_end_matches(" kB").parse().ok())
                .unwrap_or(peak_kb);
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the command hangs"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    Ended {
        code: status.code(),
        stderr: reader.join().unwrap(),
        took: started.elapsed(),
        peak_kb,
    }
}

/// The run ended with 1 within `bound`, with a short message saying `needle`.
fn assert_ended(ended: &Ended, bound: Duration, needle: &str) {
    assert_eq!(ended.code, Some(1), "{}", ended.stderr);
    assert!(
        ended.took < bound,
        "took {:?}:\n{}",
        ended.took,
        ended.stderr
    );
    assert!(ended.stderr.contains(needle), "{}", ended.stderr);
    assert!(
        ended.stderr.len() < 20_000,
        "{} bytes of stderr",
        ended.stderr.len()
    );
    assert!(
        ended.stderr.lines().all(|line| line.len() < 1_000),
        "a line of stderr is long:\n{}",
        &ended.stderr[..2_000.min(ended.stderr.len())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out() {
    let (_directory, kubeconfig) = hostile(|stream| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        drop(stream);
    })
    .await;
    let ended = list(&kubeconfig, "1s").await;
    assert_ended(&ended, Duration::from_secs(20), "did not answer within 1 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_sends_its_headers_one_byte_at_a_time_times_out() {
    let (_directory, kubeconfig) = hostile(|mut stream| async move {
        for byte in b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if stream.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    })
    .await;
    let ended = list(&kubeconfig, "1s").await;
    assert_ended(&ended, Duration::from_secs(20), "did not answer within 1 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_body_is_cut_at_the_size_limit_without_filling_memory() {
    let (_directory, kubeconfig) = hostile(|mut stream| async move {
        let headers =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n[";
        if stream.write_all(headers).await.is_err() {
            return;
        }
        // 4 GiB at most, in 64 KiB writes: never allocated, and far more than anyone should read.
        let chunk = vec![b'1'; 64 * 1024];
        for _ in 0..64 * 1024 {
            if stream.write_all(&chunk).await.is_err() {
                return;
            }
        }
    })
    .await;
    let ended = list(&kubeconfig, "20s").await;
    assert_ended(&ended, Duration::from_secs(40), "larger than 64 MiB");
    assert!(
        // `list` reads several kinds at once, each up to the 64 MiB limit: bounded by that, not by the body.
        ended.peak_kb < 1024 * 1024,
        "peak memory {} MiB",
        ended.peak_kb / 1024
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_page_is_quoted_in_part() {
    let (_directory, kubeconfig) = hostile(|mut stream| async move {
        let page = format!("<html>{}</html>", "x".repeat(100_000));
        let response = format!(
            "HTTP/1.1 403 Forbidden\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
    })
    .await;
    let ended = list(&kubeconfig, "5s").await;
    assert_ended(&ended, Duration::from_secs(20), "(100013 bytes in all)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_dies_during_a_wait_fails_it_promptly() {
    let cluster = Cluster::start_with(Script::new(ContainerOutcome::NeverReady)).await;
    cluster
        .write_jobs("- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n");
    let applied = cluster.run(&["apply"]).await;
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let mut child = cluster
        .command(&["wait", "bot", "--timeout", "10m"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(deployments.get_opt("bot").await.unwrap().is_some());
    // The wait's watches are open.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let Cluster {
        local, directory, ..
    } = cluster;
    local.shutdown().await.unwrap();
    let killed = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(90),
            "the wait goes on"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let took = killed.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    drop(directory);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
    assert!(
        stderr.contains("the cluster at https://127.0.0.1:")
            && stderr.contains("has not answered for 30 s"),
        "{stderr}"
    );
}

/// A FIFO in a temporary directory.
fn fifo() -> (tempfile::TempDir, PathBuf) {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("jobs.yaml");
    assert!(
        Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    (directory, path)
}

#[test]
fn a_fifo_is_no_jobs_file() {
    let (_directory, path) = fifo();
    for command in ["validate", "apply"] {
        let started = Instant::now();
        let output = assert_cmd::Command::cargo_bin("toolforge-jobs")
            .unwrap()
            .args([command, "--tool", "mytool", "--no-color", "-f"])
            .arg(&path)
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            stderr.contains("it is a FIFO (named pipe), not a regular file"),
            "{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_reports_a_fifo_and_applies_the_file_that_replaces_it() {
    let cluster = Cluster::start().await;
    let path = cluster.directory.path().join("jobs.yaml");
    assert!(
        Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    let daemon = cluster.spawn_watch(&[]);
    daemon.wait_for_log("FIFO", 1).await;
    std::fs::remove_file(&path).unwrap();
    cluster
        .write_jobs("- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n");
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    eventually(
        Duration::from_secs(20),
        "the daemon applies the new file",
        || async { deployments.get_opt("bot").await.unwrap().is_some() },
    )
    .await;
}
