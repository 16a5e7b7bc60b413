//! `apply --wait` of continuous jobs whose processes really run (the local cluster's process kubelet): a rollout
//! is reported only once every new pod has stayed Ready without a restart for the settle period
//! (`wait::ROLLOUT_SETTLE`), and a process that keeps exiting — at once or after a while, with any exit code — is
//! the crash-loop failure (exit 4) with its report, even when the kubelet reported one of its short runs Ready.
//! Processes run in real time, so each crash test takes a few seconds and the healthy one the settle period.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use toolforge_jobs::wait::ROLLOUT_SETTLE;
use toolforge_local_cluster::{Controllers, Kubelet, LocalCluster, Options, ProcessOptions};

const MS: Duration = Duration::from_millis(1);

/// A local cluster whose pods run as local processes, with the tool's namespace and a directory for jobs.yaml.
struct Cluster {
    _local: LocalCluster,
    directory: tempfile::TempDir,
    kubeconfig: PathBuf,
}

/// What `apply --wait` printed and how long it took.
struct Applied {
    code: i32,
    stderr: String,
    took: Duration,
}

async fn start() -> Cluster {
    let directory = tempfile::tempdir().unwrap();
    let local = LocalCluster::start(Options {
        controllers: Some(Controllers {
            job_backoff_base: 20 * MS,
            job_backoff_cap: 100 * MS,
            kubelet: Some(Kubelet::Process(ProcessOptions {
                tool_data_dir: Some(directory.path().to_path_buf()),
                // Short, so that a crash loop shows quickly; the settle period does not depend on it.
                restart_backoff: 100 * MS,
                ..ProcessOptions::default()
            })),
        }),
        ..Options::default()
    })
    .await
    .expect("the local cluster starts");
    let client = local.client().expect("a client");
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "tool-mytool"}})).unwrap();
    Api::<Namespace>::all(client)
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the namespace is created");
    let kubeconfig = directory.path().join("kubeconfig");
    local.write_kubeconfig(&kubeconfig).unwrap();
    Cluster {
        _local: local,
        directory,
        kubeconfig,
    }
}

impl Cluster {
    /// Writes a jobs.yaml with one continuous job `bot` running `command` (its output in the pod log) and runs
    /// `apply --wait=60s`.
    async fn apply_continuous(&self, command: &str) -> Applied {
        let jobs = self.directory.path().join("jobs.yaml");
        std::fs::write(
            &jobs,
            format!(
                "- name: bot\n  command: {}\n  image: bookworm\n  continuous: true\n  no-filelog: true\n",
                serde_json::to_string(command).unwrap()
            ),
        )
        .unwrap();
        let mut apply = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"));
        apply
            .args(["apply", "--wait=60s", "--kubeconfig"])
            .arg(&self.kubeconfig)
            .args(["--tool", "mytool", "--no-color", "-f"])
            .arg(&jobs)
            .current_dir(self.directory.path())
            .env_remove("RUST_LOG");
        let started = Instant::now();
        let output = tokio::task::spawn_blocking(move || apply.output())
            .await
            .unwrap()
            .expect("toolforge-jobs runs");
        Applied {
            code: output.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            took: started.elapsed(),
        }
    }
}

/// Applies a continuous job running `command` and checks that the wait fails as a crash loop (exit 4, docs/exit-codes.md)
/// with the report's cause and each of `report` in it; returns the stderr.
async fn crash_loops(command: &str, report: &[&str]) -> String {
    let cluster = start().await;
    let applied = cluster.apply_continuous(command).await;
    let stderr = &applied.stderr;
    assert_eq!(applied.code, 4, "`{command}`:\n{stderr}");
    assert!(
        stderr.contains("bot: did not roll out: pod `bot-")
            && stderr.contains("` keeps crashing (CrashLoopBackOff)"),
        "`{command}`:\n{stderr}"
    );
    for text in report {
        assert!(
            stderr.contains(text),
            "`{command}`: no `{text}` in\n{stderr}"
        );
    }
    for word in ["rolled out", "succeeded", "completed"] {
        assert!(!stderr.contains(word), "`{command}`: `{word}` in\n{stderr}");
    }
    assert!(
        applied.took < Duration::from_secs(30),
        "`{command}` took {:?}",
        applied.took
    );
    applied.stderr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_prints_and_exits_1_at_once_is_a_crash_loop_with_its_log() {
    crash_loops(
        "echo starting; exit 1",
        &[
            "exited with code 1 (Error)",
            "\n  | starting",
            "full log: `toolforge-jobs logs bot`",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_exiting_2_at_once_is_a_crash_loop() {
    crash_loops("exit 2", &["exited with code 2 (Error)"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_exits_0_after_half_a_second_is_a_crash_loop_too() {
    crash_loops("sleep 0.5; exit 0", &["exited with code 0 (Completed)"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_runs_2_seconds_before_it_fails_is_a_crash_loop_within_the_settle_period() {
    crash_loops("sleep 2; exit 1", &["exited with code 1 (Error)"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_process_is_rolled_out_and_running_after_the_settle_period() {
    let cluster = start().await;
    let applied = cluster.apply_continuous("sleep 1000").await;
    let stderr = &applied.stderr;
    assert_eq!(applied.code, 0, "{stderr}");
    assert!(stderr.contains("bot: rolled out, running"), "{stderr}");
    assert!(
        stderr.contains("settling: 1 of 1 new replicas are available; checking that they stay up without a restart for 5s"),
        "{stderr}"
    );
    for word in ["succeeded", "completed"] {
        assert!(!stderr.contains(word), "`{word}` in\n{stderr}");
    }
    assert!(
        applied.took >= ROLLOUT_SETTLE,
        "reported before the settle period: {:?}\n{stderr}",
        applied.took
    );
}
