//! Ctrl-C during `apply` (SPEC §7): the first SIGINT ends every wait at once — `--wait`, and a `wait` one-off
//! holding the stages after it — lets the writes in flight finish, releases the lock, says what was applied,
//! what was not and what it stopped waiting for, and exits 130 within 2 s; a second SIGINT exits at once. On a
//! terminal (tmux) the progress rows end in place, one per job. A lock taken over by somebody else stops the
//! apply the same way, with the lock's exit code.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use support::{Background, Cluster, NAMESPACE, TOOL, eventually};
use toolforge_local_cluster::{ContainerOutcome, Script};

/// `forever` is a one-off whose pod never ends; `bot` rolls out.
const JOBS: &str = "\
- name: forever
  command: ./forever.sh
  image: bookworm
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
";

/// `migrate` holds the stage after it while its pod runs, forever.
const BARRIER: &str = support::MIGRATE_THEN_BOT;

/// A cluster where the pods of `forever` and `migrate` run until deleted.
async fn cluster() -> Cluster {
    let script = Script::new(ContainerOutcome::RunForever)
        .label(
            "app.kubernetes.io/name",
            "forever",
            ContainerOutcome::RunForever,
        )
        .label(
            "app.kubernetes.io/name",
            "migrate",
            ContainerOutcome::RunForever,
        );
    Cluster::start_with(script).await
}

async fn job_exists(cluster: &Cluster, name: &str) -> bool {
    Api::<KubeJob>::namespaced(cluster.client.clone(), NAMESPACE)
        .get_opt(name)
        .await
        .unwrap()
        .is_some()
}

/// Interrupts `apply`, checks that it exits 130 within `bound`, and returns what it printed.
async fn interrupt(apply: &mut Background, bound: Duration) -> String {
    let sent = Instant::now();
    apply.interrupt();
    let code = apply.exit_code().await;
    let took = sent.elapsed();
    let log = apply.log();
    assert_eq!(code, 130, "{log}");
    assert!(took < bound, "exited after {took:?}:\n{log}");
    log
}

async fn lock_is_free(cluster: &Cluster) -> bool {
    Api::<Lease>::namespaced(cluster.client.clone(), NAMESPACE)
        .get_opt("toolforge-jobs")
        .await
        .unwrap()
        .is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_apply_wait_stops_waiting_at_once_and_says_what_it_left() {
    let cluster = cluster().await;
    cluster.write_jobs(JOBS);
    let mut apply = cluster.spawn(&["apply", "--wait"]);
    apply.wait_for_log("forever: running: pod", 1).await;

    let log = interrupt(&mut apply, Duration::from_secs(2)).await;
    assert!(
        log.contains("interrupted: applied `forever` and `bot`; stopped waiting for `forever`"),
        "{log}"
    );
    assert!(lock_is_free(&cluster).await, "the lock was released");
    // Both were applied, so the record says the apply was complete; the Job goes on.
    assert_eq!(
        cluster.inventory().await["lastApply"]["result"]["state"],
        "complete"
    );
    assert!(job_exists(&cluster, "forever").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_a_barrier_runs_applies_nothing_after_it() {
    let cluster = cluster().await;
    cluster.write_jobs(BARRIER);
    let mut apply = cluster.spawn(&["apply"]);
    apply.wait_for_log("migrate: running: pod", 1).await;

    let log = interrupt(&mut apply, Duration::from_secs(2)).await;
    assert!(
        log.contains(
            "interrupted: applied `migrate`; not applied: `bot` (run `apply` again to carry them out); \
             stopped waiting for `migrate`"
        ),
        "{log}"
    );
    let deployments = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(deployments.get_opt("bot").await.unwrap().is_none());
    assert!(lock_is_free(&cluster).await, "the lock was released");
    let record = cluster.inventory().await["lastApply"].clone();
    assert_eq!(record["result"]["state"], "interrupted", "{record}");
    assert_eq!(record["changed"], serde_json::json!(["migrate"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_exits_at_once() {
    let cluster = cluster().await;
    cluster.write_jobs(JOBS);
    let mut apply = cluster.spawn(&["apply", "--wait"]);
    apply.wait_for_log("forever: running: pod", 1).await;
    // Every request from now on takes 30 s: releasing the lock after the first Ctrl-C cannot finish.
    cluster.local.set_latency(Duration::from_secs(30));
    apply.interrupt();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let log = interrupt(&mut apply, Duration::from_secs(1)).await;
    cluster.local.set_latency(Duration::ZERO);
    assert!(log.contains("interrupted again: exiting at once"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_whose_lock_is_taken_over_stops_writing_at_once() {
    let cluster = cluster().await;
    cluster.write_jobs(BARRIER);
    let mut apply = cluster.spawn(&["apply"]);
    apply.wait_for_log("migrate: running: pod", 1).await;

    let leases = Api::<Lease>::namespaced(cluster.client.clone(), NAMESPACE);
    let mut lease = leases.get("toolforge-jobs").await.unwrap();
    lease.spec.as_mut().unwrap().holder_identity =
        Some("apply by thief@elsewhere (pid 1)".to_owned());
    let taken = Instant::now();
    leases
        .replace("toolforge-jobs", &PostParams::default(), &lease)
        .await
        .unwrap();

    let code = apply.exit_code().await;
    let log = apply.log();
    assert_eq!(code, 6, "{log}");
    assert!(
        taken.elapsed() < Duration::from_secs(2),
        "exited after {:?}:\n{log}",
        taken.elapsed()
    );
    assert!(log.contains("error: the lock was taken over"), "{log}");
    let deployments = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(
        deployments.get_opt("bot").await.unwrap().is_none(),
        "nothing written after the loss"
    );
    let holder = leases
        .get("toolforge-jobs")
        .await
        .unwrap()
        .spec
        .unwrap()
        .holder_identity;
    assert_eq!(
        holder.as_deref(),
        Some("apply by thief@elsewhere (pid 1)"),
        "the new holder's lock is left alone"
    );
}

/// A tmux session on its own server, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &str) -> Self {
        let socket = format!("toolforge-jobs-test-{}", std::process::id());
        let status = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", "160", "-y", "40"])
            .arg(command)
            .status()
            .expect("tmux runs (`.ci/run` installs it)");
        assert!(status.success());
        Self { socket }
    }

    fn screen(&self) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn ctrl_c(&self) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "C-c"])
            .status()
            .unwrap();
        assert!(status.success());
    }

    async fn wait_for(&self, text: &str) {
        eventually(Duration::from_secs(30), text, || async {
            self.screen().contains(text)
        })
        .await;
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_ctrl_c_ends_every_row_in_place() {
    let cluster = cluster().await;
    cluster.write_jobs(JOBS);
    let directory = cluster.directory.path();
    let kubeconfig = directory.join("kubeconfig");
    let command = format!(
        "{} apply --wait --kubeconfig {} --tool {TOOL} -f {} --no-color; echo EXIT=$?; sleep 60",
        env!("CARGO_BIN_EXE_toolforge-jobs"),
        kubeconfig.display(),
        directory.join("jobs.yaml").display(),
    );
    let tmux = Tmux::start(&command);
    tmux.wait_for("pod `forever").await;
    let sent = Instant::now();
    tmux.ctrl_c();
    tmux.wait_for("EXIT=").await;
    let took = sent.elapsed();
    let screen = tmux.screen();
    assert!(screen.contains("EXIT=130"), "{screen}");
    assert!(
        took < Duration::from_secs(3),
        "exited after {took:?}:\n{screen}"
    );
    assert!(screen.contains("interrupted: applied"), "{screen}");
    // One row per job, ended in place: no spinner frozen mid-turn (indicatif's are Braille patterns), no row
    // drawn twice.
    let spinner = |c: char| ('\u{2800}'..='\u{28ff}').contains(&c);
    assert!(
        !screen.chars().any(spinner),
        "a spinner was left on screen:\n{screen}"
    );
    for job in ["forever", "bot"] {
        let rows = screen
            .lines()
            .filter(|line| {
                line.trim_start_matches(|c: char| spinner(c) || c == ' ')
                    .starts_with(&format!("{job} "))
            })
            .count();
        assert_eq!(rows, 1, "`{job}` has {rows} rows:\n{screen}");
    }
}
