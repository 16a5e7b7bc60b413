//! The embedded local cluster on a shared host (SPEC §10): its directory and files are the owner's alone, other
//! Unix users can neither read them nor talk to the cluster, concurrent first commands end up on one cluster,
//! `local-cluster stop` ends it and every process it started, and a tool's kubeconfig from
//! `local-cluster kubeconfig --tool` works with kubectl and toolforge-jobs in that tool's namespace only.
//! Runs the binary with an empty temporary `$HOME`; the other-user checks run as `nobody` (they need root).

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

struct Home {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = tempfile::tempdir().unwrap();
        // A home others may enter, as on a shared host: only the cluster's own directory protects its files.
        std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let project = tempfile::tempdir().unwrap();
        Home { home, project }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"));
        command
            .args(args)
            .current_dir(self.project.path())
            .env_clear()
            .env("HOME", self.home.path())
            .env("USER", "owner")
            .env("PATH", std::env::var_os("PATH").unwrap());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn directory(&self) -> PathBuf {
        self.home
            .path()
            .join(".local/state/toolforge-jobs/local-cluster")
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = self.run(&["local-cluster", "stop"]);
    }
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The pids of processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| {
                String::from_utf8_lossy(&line)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .filter(|pid| *pid != std::process::id())
        .collect()
}

fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// Runs `program args` as the user `nobody`.
fn as_nobody(program: &str, args: &[&str]) -> Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", program])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn concurrent_first_commands_share_one_private_cluster_that_stop_ends_with_its_jobs() {
    let home = Home::new();
    std::fs::write(
        home.project.path().join("jobs.yaml"),
        "- name: ticker\n  command: while true; do echo tick-embedded-security; sleep 1; done\n  image: bookworm\n  continuous: true\n",
    )
    .unwrap();
    let starts: Vec<_> = (0..4)
        .map(|_| home.command(&["list"]).spawn().unwrap())
        .collect();
    for start in starts {
        let output = start.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    }
    let directory = home.directory();
    let state = directory.join("state.json");
    let servers = processes_with(&format!("local-cluster --state {}", state.display()));
    assert_eq!(
        servers.len(),
        1,
        "one cluster serves the state: {servers:?}"
    );

    eventually("the state file", || state.exists());
    assert_eq!(mode(&directory), 0o700);
    assert_eq!(mode(&directory.join("state.credentials")), 0o700);
    let private = [
        state.clone(),
        directory.join("kubeconfig"),
        directory.join("pid"),
        directory.join("log"),
        directory.join("start.lock"),
        directory.join("state.credentials/ca.pem"),
        directory.join("state.credentials/admin.token"),
    ];
    for file in &private {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    if is_root() {
        for file in &private {
            let read = as_nobody("cat", &[file.to_str().unwrap()]);
            assert!(!read.status.success(), "nobody read {}", file.display());
        }
        // Nor can another user use the owner's cluster through the owner's kubeconfig (with a copy of the
        // program they may run: the build directory may be closed to them).
        let kubeconfig = directory.join("kubeconfig");
        let programs = tempfile::tempdir().unwrap();
        std::fs::set_permissions(programs.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let program = programs.path().join("toolforge-jobs");
        std::fs::copy(env!("CARGO_BIN_EXE_toolforge-jobs"), &program).unwrap();
        let steal = as_nobody(
            program.to_str().unwrap(),
            &[
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--tool",
                "x",
                "list",
            ],
        );
        assert!(!steal.status.success(), "{}", text(&steal));
        assert!(
            String::from_utf8_lossy(&steal.stderr).contains("cannot read the kubeconfig"),
            "{}",
            text(&steal)
        );
    }

    let apply = home.run(&["apply", "--yes", "--wait=60s"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    eventually("the continuous job's process", || {
        !processes_with("tick-embedded-security").is_empty()
    });
    let stop = home.run(&["local-cluster", "stop"]);
    assert_eq!(stop.status.code(), Some(0), "{}", text(&stop));
    assert!(String::from_utf8_lossy(&stop.stderr).contains("stopped the local cluster"));
    eventually("every process of the cluster to end", || {
        processes_with(&state.display().to_string()).is_empty()
            && processes_with("tick-embedded-security").is_empty()
    });
}

#[test]
fn a_tools_kubeconfig_works_in_its_namespace_only() {
    let home = Home::new();
    let minted = home.run(&["local-cluster", "kubeconfig", "--tool", "alpha"]);
    assert_eq!(minted.status.code(), Some(0), "{}", text(&minted));
    let files = home.directory().join("tools/alpha");
    for file in ["kubeconfig", "client.crt", "client.key"] {
        assert_eq!(mode(&files.join(file)), 0o600, "{file}");
    }
    let kubeconfig = files.join("kubeconfig");
    let kubeconfig = kubeconfig.to_str().unwrap();
    let text_of = std::fs::read_to_string(kubeconfig).unwrap();
    assert!(
        text_of.contains("client.crt") && text_of.contains("namespace: tool-alpha"),
        "{text_of}"
    );

    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(home.home.path().join("kube-cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .unwrap()
    };
    let own = kubectl(&["get", "pods"]);
    assert!(own.status.success(), "{}", text(&own));
    let other = kubectl(&["get", "pods", "-n", "tool-beta"]);
    assert!(!other.status.success());
    assert!(
        String::from_utf8_lossy(&other.stderr).contains(
            "pods is forbidden: User \"alpha\" cannot list resource \"pods\" in API group \"\" in the namespace \"tool-beta\""
        ),
        "{}",
        text(&other)
    );

    std::fs::write(
        home.project.path().join("jobs.yaml"),
        "- name: once\n  command: echo once\n  image: bookworm\n",
    )
    .unwrap();
    let apply = home.run(&["--kubeconfig", kubeconfig, "apply", "--yes"]);
    assert_eq!(apply.status.code(), Some(0), "{}", text(&apply));
    let list = home.run(&["--kubeconfig", kubeconfig, "list"]);
    assert!(
        String::from_utf8_lossy(&list.stdout).contains("once"),
        "{}",
        text(&list)
    );
    let elsewhere = home.run(&["--kubeconfig", kubeconfig, "--tool", "beta", "list"]);
    assert_ne!(elsewhere.status.code(), Some(0), "{}", text(&elsewhere));
    assert!(
        String::from_utf8_lossy(&elsewhere.stderr).contains("forbidden"),
        "{}",
        text(&elsewhere)
    );
}
