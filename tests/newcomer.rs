//! The newcomer path (SPEC §10): no kubeconfig anywhere, so `apply` starts the embedded local cluster in the
//! background, the jobs really run as local processes in the directory of jobs.yaml, `list`, `logs` and `flush`
//! work on them, and `local-cluster stop` stops it. Runs the binary with an empty temporary `$HOME`.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn toolforge_jobs(home: &Path, directory: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
        .args(args)
        .current_dir(directory)
        .env_clear()
        .env("HOME", home)
        .env("USER", "newcomer")
        .env("PATH", std::env::var_os("PATH").unwrap())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn without_a_kubeconfig_jobs_run_on_the_embedded_cluster_until_it_is_stopped() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("jobs.yaml"),
        "- name: hello\n  command: echo hello from $TOOL_DATA_DIR\n  image: bookworm\n  wait: true\n\
         - name: ticker\n  command: while true; do echo tick; sleep 1; done\n  image: bookworm\n  continuous: true\n",
    )
    .unwrap();

    let apply = toolforge_jobs(home.path(), project.path(), &["apply", "--wait=60s"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    let stderr = String::from_utf8_lossy(&apply.stderr);
    assert!(
        stderr.contains("using the local cluster at https://127.0.0.1:"),
        "{}",
        text(&apply)
    );
    assert!(
        stderr.contains("started it in the background"),
        "{}",
        text(&apply)
    );

    // The one-off ran in the tool's home, the directory of jobs.yaml, and logged there.
    let log = std::fs::read_to_string(project.path().join("hello.out")).unwrap();
    assert!(log.contains("hello from"), "{log}");
    let ticks = project.path().join("ticker.out");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&ticks).is_ok_and(|log| log.contains("tick")) {
        assert!(Instant::now() < deadline, "the continuous job never logged");
        std::thread::sleep(Duration::from_millis(100));
    }

    // The second command finds the running cluster, and nothing changed.
    let diff = toolforge_jobs(home.path(), project.path(), &["diff"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff));
    assert!(String::from_utf8_lossy(&diff.stderr).contains("already running"));

    // The upstream commands see the same cluster: the jobs are listed, their logs read, and flushed.
    let list = toolforge_jobs(home.path(), project.path(), &["list"]);
    assert_eq!(list.status.code(), Some(0), "{}", text(&list));
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains("hello") && listed.contains("ticker"),
        "{}",
        text(&list)
    );
    let logs = toolforge_jobs(home.path(), project.path(), &["logs", "hello"]);
    assert_eq!(logs.status.code(), Some(0), "{}", text(&logs));
    assert!(
        String::from_utf8_lossy(&logs.stdout).contains("hello from"),
        "{}",
        text(&logs)
    );
    let flush = toolforge_jobs(home.path(), project.path(), &["flush"]);
    assert_eq!(flush.status.code(), Some(0), "{}", text(&flush));
    let after = toolforge_jobs(home.path(), project.path(), &["list", "-o", "json"]);
    assert_eq!(after.status.code(), Some(0), "{}", text(&after));
    let jobs: serde_json::Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(jobs.as_array().map(Vec::len), Some(0), "{}", text(&after));

    let stop = toolforge_jobs(home.path(), project.path(), &["local-cluster", "stop"]);
    assert_eq!(stop.status.code(), Some(0), "{}", text(&stop));
    assert!(String::from_utf8_lossy(&stop.stderr).contains("stopped the local cluster"));
    // Its processes are gone: the ticker stops growing its log.
    std::thread::sleep(Duration::from_millis(300));
    let size = std::fs::metadata(&ticks).unwrap().len();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        std::fs::metadata(&ticks).unwrap().len(),
        size,
        "the job still runs"
    );
    assert!(
        home.path()
            .join(".local/state/toolforge-jobs/local-cluster/state.json")
            .exists()
    );
}
