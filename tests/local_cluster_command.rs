//! `toolforge-jobs local-cluster`: serves in the foreground, writes a kubeconfig real kubectl can use, runs
//! Jobs as local processes, and stops cleanly on SIGTERM. Needs kubectl on PATH (fresh machines have it); fails without it.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn serves_kubectl_runs_jobs_as_processes_and_stops_on_sigterm() {
    let directory = tempfile::tempdir().unwrap();
    let kubeconfig = directory.path().join("kubeconfig");
    let server = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
        .args(["local-cluster", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(20);
    while !kubeconfig.exists() {
        assert!(Instant::now() < deadline, "no kubeconfig written");
        std::thread::sleep(Duration::from_millis(50));
    }
    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(directory.path().join("cache"))
            .args(args)
            .output()
            .expect("kubectl must be installed for this test")
    };
    let namespaces = kubectl(&["get", "namespaces", "-o", "name"]);
    assert!(
        namespaces.status.success(),
        "{}",
        String::from_utf8_lossy(&namespaces.stderr)
    );
    assert!(String::from_utf8_lossy(&namespaces.stdout).contains("namespace/default"));

    // Jobs really run: the command becomes a local process, and its output is the pod's log.
    let create = kubectl(&[
        "create",
        "job",
        "hello",
        // An image of Toolforge's table: the cluster's kubelet pulls no other (`bookworm` alone would not pull).
        "--image=docker-registry.svc.toolforge.org/toolforge-bookworm-sssd-web:latest",
        "--",
        "sh",
        "-c",
        "echo hello from a local process",
    ]);
    assert!(
        create.status.success(),
        "{}",
        String::from_utf8_lossy(&create.stderr)
    );
    let wait = kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/hello",
        "--timeout=30s",
    ]);
    assert!(
        wait.status.success(),
        "{}",
        String::from_utf8_lossy(&wait.stderr)
    );
    let logs = kubectl(&["logs", "job/hello"]);
    assert_eq!(
        String::from_utf8_lossy(&logs.stdout),
        "hello from a local process\n"
    );

    // An image no Toolforge cluster can pull never runs (unless the cluster was started with --allow-any-image).
    let create = kubectl(&[
        "create",
        "job",
        "elsewhere",
        "--image=nowhere.invalid/none:1",
        "--",
        "sh",
        "-c",
        "echo ran",
    ]);
    assert!(create.status.success());
    wait_for_pull_error(&kubectl, "job-name=elsewhere");

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(server.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let output = server.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("local cluster serving at https://127.0.0.1:")
    );
}

/// Waits until the first pod matching `selector` waits in `ErrImagePull` or `ImagePullBackOff`.
fn wait_for_pull_error(kubectl: &dyn Fn(&[&str]) -> std::process::Output, selector: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let reason = kubectl(&[
            "get",
            "pods",
            "-l",
            selector,
            "-o",
            "jsonpath={.items[0].status.containerStatuses[0].state.waiting.reason}",
        ]);
        let reason = String::from_utf8_lossy(&reason.stdout).into_owned();
        if reason == "ErrImagePull" || reason == "ImagePullBackOff" {
            return;
        }
        assert!(Instant::now() < deadline, "not refused: {reason:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
