//! The crash matrix (SPEC §6, §7; docs/apply.md, "Crash safety"): `apply` is killed (SIGKILL) at each step of
//! a run of a `wait` one-off followed by a continuous job — not at random moments, but at one exact request per
//! test, which the local cluster holds (a [`Hold`], before the server carries it out or after, before its
//! response is sent) until the test has killed the command. Then `apply` runs again until it converges, and the
//! counts are exact: the one-off's Job was created once and its pod ran once, the inventory records one run,
//! succeeded, by that Job's UID, the continuous job's Deployment was created once, and `diff` finds nothing to do.
//!
//! A bounded randomized kill loop runs beside them, killing at random moments instead of chosen requests.
//!
//! `tests/run_protocol.rs` stops the apply with an API error at the next step instead; this file proves the
//! same with a real kill, where nothing of the dying process (retries, cleanup, the lock's release) runs.
//!
//! The last tests kill the local cluster itself at a step, with the command: the cluster runs in a child
//! process — this test binary again, running only [`child_cluster_process`], as
//! `crates/local-cluster/tests/durability.rs` does — with a state file and the hold, and is restarted from that
//! state file. What it acknowledged survives, what it was holding before carrying it out never happened.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams};
use support::{Background, Cluster, NAMESPACE, Run};
use toolforge_local_cluster::{ContainerOutcome, EventType, Hold, LocalCluster, Options, Script};

const JOBS: &str = support::MIGRATE_THEN_BOT;

/// How long a held request may take to arrive: generous, for a loaded 2-core machine.
const ARRIVES_WITHIN: Duration = Duration::from_secs(60);

/// Where the one-off's Job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobState {
    Absent,
    Suspended,
    Resumed,
}

/// What the inventory records of the one-off's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunState {
    /// No inventory, or no run in it.
    Absent,
    /// Recorded, without a Job UID yet.
    Recorded,
    /// Recorded by its Job's UID, outcome unknown.
    ByUid,
    /// Recorded by its Job's UID, outcome succeeded.
    Succeeded,
}

/// What the cluster holds at a point of the apply: where the test checks that the held request is the step it
/// means (the request counts alone would not tell one inventory write from another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    job: JobState,
    run: RunState,
    /// Whether `bot`'s Deployment exists.
    deployment: bool,
    /// Whether the inventory records `bot`.
    bot_recorded: bool,
    /// Whether the inventory records a finished apply (`lastApply`).
    last_apply: bool,
}

const fn state(job: JobState, run: RunState, deployment: bool, bot_recorded: bool) -> State {
    State {
        job,
        run,
        deployment,
        bot_recorded,
        last_apply: false,
    }
}

/// The inventory record, `None` while its ConfigMap does not exist.
async fn inventory(client: &kube::Client) -> Option<serde_json::Value> {
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE);
    let config_map = config_maps.get_opt("toolforge-jobs").await.unwrap()?;
    Some(serde_json::from_str(&config_map.data.unwrap()["inventory.json"]).unwrap())
}

async fn observe(client: &kube::Client) -> State {
    let jobs = Api::<KubeJob>::namespaced(client.clone(), NAMESPACE);
    let job = match jobs.get_opt("migrate").await.unwrap() {
        None => JobState::Absent,
        Some(job) if job.spec.as_ref().unwrap().suspend == Some(true) => JobState::Suspended,
        Some(_) => JobState::Resumed,
    };
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    let deployment = deployments.get_opt("bot").await.unwrap().is_some();
    let Some(inventory) = inventory(client).await else {
        return state(job, RunState::Absent, deployment, false);
    };
    let run = &inventory["jobs"]["migrate"]["runs"][0];
    let run = match (run["jobUid"].as_str(), run["outcome"].as_str()) {
        _ if run.is_null() => RunState::Absent,
        (None, _) => RunState::Recorded,
        (Some(_), Some("succeeded")) => RunState::Succeeded,
        (Some(_), _) => RunState::ByUid,
    };
    State {
        job,
        run,
        deployment,
        bot_recorded: !inventory["jobs"]["bot"].is_null(),
        last_apply: !inventory["lastApply"].is_null(),
    }
}

/// Runs `apply` (built by `command`) until it exits 0, at most three times, then checks that it converged with
/// one run of `migrate`: one Job, resumed, one pod, one run in the inventory recorded by that Job's UID, `bot`'s
/// Deployment, and `diff` exits 0. Returns the Job's UID and the inventory; the run's outcome is left to
/// [`assert_succeeded`], checked last.
async fn converges_with_one_run(
    step: &str,
    client: &kube::Client,
    command: impl Fn(&[&str]) -> std::process::Command,
) -> (String, serde_json::Value) {
    let mut runs = Vec::new();
    for _ in 0..3 {
        let run = Run::of(command(&["apply"])).await;
        let converged = run.code == 0;
        runs.push(run);
        if converged {
            break;
        }
    }
    assert_eq!(
        runs.last().unwrap().code,
        0,
        "{step}: apply did not converge in {} runs: {runs:#?}",
        runs.len()
    );
    let jobs = Api::<KubeJob>::namespaced(client.clone(), NAMESPACE);
    let listed = jobs.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1, "{step}: one Job: {runs:#?}");
    let job = &listed.items[0];
    assert_ne!(
        job.spec.as_ref().unwrap().suspend,
        Some(true),
        "{step}: resumed"
    );
    let uid = job.metadata.uid.clone().unwrap();
    let pods = Api::<Pod>::namespaced(client.clone(), NAMESPACE);
    let ran = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=migrate"))
        .await
        .unwrap();
    assert_eq!(ran.items.len(), 1, "{step}: one pod, one run");
    let inventory = inventory(client).await.unwrap();
    let recorded = inventory["jobs"]["migrate"]["runs"].as_array().unwrap();
    assert_eq!(recorded.len(), 1, "{step}: one run recorded: {inventory}");
    assert_eq!(recorded[0]["jobUid"], uid.as_str(), "{step}: {inventory}");
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    assert!(
        deployments.get_opt("bot").await.unwrap().is_some(),
        "{step}: the barrier let `bot` through"
    );
    Run::of(command(&["diff"])).await.expect_code(0);
    (uid, inventory)
}

/// The inventory records the run's outcome: the apply that saw it succeed says so.
#[track_caller]
fn assert_succeeded(step: &str, inventory: &serde_json::Value) {
    assert_eq!(
        inventory["jobs"]["migrate"]["runs"][0]["outcome"], "succeeded",
        "{step}: {inventory}"
    );
}

/// The UIDs of every Job and pod of `migrate`, and of every Deployment, that ever existed in the cluster, from
/// its change stream: a second Job or pod would be a second run.
#[derive(Debug, Default)]
struct Created {
    jobs: BTreeSet<String>,
    pods: BTreeSet<String>,
    deployments: BTreeSet<String>,
}

fn record_creations(cluster: &Cluster) -> Arc<Mutex<Created>> {
    let created = Arc::new(Mutex::new(Created::default()));
    let mut changes = cluster.local.store().subscribe();
    let recorded = Arc::clone(&created);
    tokio::spawn(async move {
        loop {
            let change = match changes.recv().await {
                Ok(change) => change,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                Err(lagged) => panic!("the test missed changes: {lagged}"),
            };
            if change.event != EventType::Added {
                continue;
            }
            let metadata = &change.object["metadata"];
            let uid = metadata["uid"].as_str().unwrap().to_owned();
            let mut created = recorded.lock().unwrap();
            match change.resource.plural {
                "jobs" if metadata["name"] == "migrate" => created.jobs.insert(uid),
                "pods" if metadata["labels"]["batch.kubernetes.io/job-name"] == "migrate" => {
                    created.pods.insert(uid)
                }
                "deployments" => created.deployments.insert(uid),
                _ => false,
            };
        }
    });
    created
}

/// Starts `apply`, waits until `hold` holds its request, checks that the cluster is at the step `at` describes,
/// SIGKILLs the command there, releases the request, then applies until it converges and checks the counts.
async fn killed_at(hold: Hold, at: State) {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let created = record_creations(&cluster);
    cluster.local.hold(hold.clone());
    let mut apply = cluster.spawn(&["apply"]);
    let parked = tokio::time::timeout(ARRIVES_WITHIN, cluster.local.held())
        .await
        .unwrap_or_else(|_| panic!("{hold:?} never held a request:\n{}", apply.log()));
    assert_eq!(parked, (hold.verb.clone(), hold.resource.clone()));
    assert_eq!(
        observe(&cluster.client).await,
        at,
        "{hold:?}: not the step meant:\n{}",
        apply.log()
    );
    apply.kill();
    cluster.local.release_held();

    let step = format!("{hold:?}");
    let (uid, inventory) =
        converges_with_one_run(&step, &cluster.client, |args| cluster.command(args)).await;
    {
        let created = created.lock().unwrap();
        assert_eq!(
            created.jobs,
            BTreeSet::from([uid]),
            "{step}: one Job ever created for `migrate`"
        );
        assert_eq!(
            created.pods.len(),
            1,
            "{step}: one pod, one run: {created:?}"
        );
        assert_eq!(
            created.deployments.len(),
            1,
            "{step}: one Deployment: {created:?}"
        );
    }
    assert_succeeded(&step, &inventory);
}

/// A bounded randomized kill loop beside the exact steps: six `apply`s killed (SIGKILL) at random moments, the
/// requests slowed to 5 ms so that a kill lands anywhere between the first write and the barrier's end; then
/// `apply` converges with the same exact counts. `KILL_LOOP_SEED` replays a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_killed_at_random_moments_run_the_one_off_once() {
    let mut moments = support::KillLoop::new();
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let created = record_creations(&cluster);
    cluster.local.set_latency(Duration::from_millis(5));
    for _ in 0..6 {
        let mut apply = cluster.spawn(&["apply"]);
        tokio::time::sleep(Duration::from_millis(moments.below(600))).await;
        apply.kill();
        let _ = apply.exit_code().await;
    }
    cluster.local.set_latency(Duration::ZERO);
    let step = format!("KILL_LOOP_SEED={}", moments.seed);
    let (uid, inventory) =
        converges_with_one_run(&step, &cluster.client, |args| cluster.command(args)).await;
    {
        let created = created.lock().unwrap();
        assert_eq!(
            created.jobs,
            BTreeSet::from([uid]),
            "{step}: one Job ever created"
        );
        assert_eq!(
            created.pods.len(),
            1,
            "{step}: one pod, one run: {created:?}"
        );
        assert_eq!(
            created.deployments.len(),
            1,
            "{step}: one Deployment: {created:?}"
        );
    }
    assert_succeeded(&step, &inventory);
}

use JobState::{Absent as NoJob, Resumed, Suspended};
use RunState::{Absent as NoRun, ByUid, Recorded, Succeeded};

// (a) The inventory write that records the run (the inventory's first write creates its ConfigMap).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_run_is_recorded() {
    let at = state(NoJob, NoRun, false, false);
    killed_at(Hold::before("create", "configmaps"), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_run_is_recorded() {
    let at = state(NoJob, Recorded, false, false);
    killed_at(Hold::after("create", "configmaps"), at).await;
}

// (b) The create of the suspended Job.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_job_is_created() {
    let at = state(NoJob, Recorded, false, false);
    killed_at(Hold::before("create", "jobs"), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_job_is_created() {
    let at = state(Suspended, Recorded, false, false);
    killed_at(Hold::after("create", "jobs"), at).await;
}

// (c) The inventory write that records the Job's UID.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_job_uid_is_recorded() {
    let at = state(Suspended, Recorded, false, false);
    killed_at(Hold::before("update", "configmaps"), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_job_uid_is_recorded() {
    let at = state(Suspended, ByUid, false, false);
    killed_at(Hold::after("update", "configmaps"), at).await;
}

// (d) The resume of the Job.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_job_is_resumed() {
    let at = state(Suspended, ByUid, false, false);
    killed_at(Hold::before("patch", "jobs"), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_job_is_resumed() {
    let at = state(Resumed, ByUid, false, false);
    killed_at(Hold::after("patch", "jobs"), at).await;
}

// (e) Waiting on the barrier: its watches' first LIST of Warning Events (only a wait lists Events), so the
// wait has not judged yet; then the inventory write that records the outcome it saw.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_waiting_on_the_barrier() {
    let at = state(Resumed, ByUid, false, false);
    killed_at(Hold::before("list", "events"), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_outcome_is_recorded() {
    let at = state(Resumed, ByUid, false, false);
    killed_at(Hold::before("update", "configmaps").skipping(1), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_outcome_is_recorded() {
    let at = state(Resumed, Succeeded, false, false);
    killed_at(Hold::after("update", "configmaps").skipping(1), at).await;
}

// (f) The Deployment's create, after the barrier.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_deployment_is_created() {
    let at = state(Resumed, Succeeded, false, false);
    killed_at(Hold::before("create", "deployments"), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_deployment_is_created() {
    let at = state(Resumed, Succeeded, true, false);
    killed_at(Hold::after("create", "deployments"), at).await;
}

// (g) The last inventory writes: the one that records `bot`, then the one that records the finished apply.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_continuous_job_is_recorded() {
    let at = state(Resumed, Succeeded, true, false);
    killed_at(Hold::before("update", "configmaps").skipping(2), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_continuous_job_is_recorded() {
    let at = state(Resumed, Succeeded, true, true);
    killed_at(Hold::after("update", "configmaps").skipping(2), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_apply_is_recorded() {
    let at = state(Resumed, Succeeded, true, true);
    killed_at(Hold::before("update", "configmaps").skipping(3), at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_apply_is_recorded() {
    let at = State {
        last_apply: true,
        ..state(Resumed, Succeeded, true, true)
    };
    killed_at(Hold::after("update", "configmaps").skipping(3), at).await;
}

// The local cluster killed at a step, with the command.

/// Set in the child process: the state file of the cluster it serves.
const CHILD_STATE: &str = "CRASH_MATRIX_CHILD_STATE";
/// Set in the child process: the request it holds, `before|after VERB RESOURCE`.
const CHILD_HOLD: &str = "CRASH_MATRIX_CHILD_HOLD";
/// Set in the child process: the pods of `migrate` run until the cluster dies.
const CHILD_RUNNING: &str = "CRASH_MATRIX_CHILD_RUNNING";
/// What the child prints (on stderr) once its kubeconfig is written, and once it holds the request.
const READY: &str = "crash-matrix: cluster ready";
const HELD: &str = "crash-matrix: request held";

fn child_hold(spec: &str) -> Hold {
    match spec.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["before", verb, resource] => Hold::before(verb, resource),
        ["after", verb, resource] => Hold::after(verb, resource),
        _ => panic!("not a hold: {spec}"),
    }
}

/// The cluster of a child process (a no-op in an ordinary test run): serves `CHILD_STATE` with the tests'
/// scripted kubelet, holds the request `CHILD_HOLD` names (if any) and says so, and serves until the parent
/// SIGKILLs it — the crash under test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_cluster_process() {
    let Some(state) = std::env::var_os(CHILD_STATE).map(PathBuf::from) else {
        return;
    };
    let cluster = LocalCluster::start(Options {
        state_file: Some(state.clone()),
        credentials_dir: Some(toolforge_local_cluster::credentials_directory(&state)),
        controllers: Some(support::controllers(
            match std::env::var_os(CHILD_RUNNING) {
                Some(_) => Script::new(ContainerOutcome::RunForever).label(
                    "batch.kubernetes.io/job-name",
                    "migrate",
                    ContainerOutcome::RunForever,
                ),
                None => Script::new(ContainerOutcome::RunForever),
            },
        )),
        ..Options::default()
    })
    .await
    .expect("the cluster starts");
    support::create_namespace(&cluster.client().unwrap()).await;
    if let Some(spec) = std::env::var_os(CHILD_HOLD) {
        cluster.hold(child_hold(spec.to_str().unwrap()));
    }
    cluster
        .write_kubeconfig(&state.with_extension("kubeconfig"))
        .unwrap();
    eprintln!("{READY}");
    if std::env::var_os(CHILD_HOLD).is_some() {
        let (verb, resource) = cluster.held().await;
        eprintln!("{HELD}: {verb} {resource}");
    }
    std::future::pending::<()>().await;
}

/// A local cluster in a child process, serving a state file in `directory`, where the jobs file is too.
struct ChildCluster {
    process: Background,
    client: kube::Client,
    kubeconfig: PathBuf,
}

impl ChildCluster {
    async fn start(directory: &Path, hold: Option<&str>, running: bool) -> ChildCluster {
        let state = directory.join("state.json");
        let kubeconfig = state.with_extension("kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig);
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "child_cluster_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_STATE, &state)
            .env_remove(CHILD_HOLD)
            .env_remove(CHILD_RUNNING);
        if running {
            command.env(CHILD_RUNNING, "1");
        }
        if let Some(hold) = hold {
            command.env(CHILD_HOLD, hold);
        }
        let process = Background::spawn(command);
        process.wait_for_log(READY, 1).await;
        let text = std::fs::read_to_string(&kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::from_yaml(&text).unwrap(),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        ChildCluster {
            process,
            client,
            kubeconfig,
        }
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        support::command(&self.kubeconfig, self.kubeconfig.parent().unwrap(), args)
    }
}

/// Starts `apply` against a child cluster holding `hold`, checks that the cluster is at the step `at` describes
/// once the request is held, SIGKILLs the cluster and then the command (a machine losing power), restarts the
/// cluster from its state file, applies until it converges and checks the counts.
async fn cluster_killed_at(hold: &str, at: State) {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("jobs.yaml"), JOBS).unwrap();
    let mut cluster = ChildCluster::start(directory.path(), Some(hold), false).await;
    let mut apply = Background::spawn(cluster.command(&["apply"]));
    cluster.process.wait_for_log(HELD, 1).await;
    assert_eq!(
        observe(&cluster.client).await,
        at,
        "{hold}: not the step meant:\n{}",
        apply.log()
    );
    cluster.process.kill();
    apply.kill();
    drop(cluster);

    let cluster = ChildCluster::start(directory.path(), None, false).await;
    let (_, inventory) =
        converges_with_one_run(hold, &cluster.client, |args| cluster.command(args)).await;
    assert_succeeded(hold, &inventory);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_killed_before_the_job_is_created() {
    cluster_killed_at("before create jobs", state(NoJob, Recorded, false, false)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_killed_after_the_job_is_created() {
    cluster_killed_at(
        "after create jobs",
        state(Suspended, Recorded, false, false),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_killed_after_the_job_uid_is_recorded() {
    cluster_killed_at(
        "after update configmaps",
        state(Suspended, ByUid, false, false),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_killed_before_the_job_is_resumed() {
    cluster_killed_at("before patch jobs", state(Suspended, ByUid, false, false)).await;
}

/// A machine losing power while the one-off's pod runs ends that run: its container is gone with the node, so
/// the restarted cluster fails the pod (`ContainerStatusUnknown`) and the Job. It ran once and is never run
/// again by itself (at most once): `apply` holds the jobs after it, exit 4, however often it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_killed_while_the_one_off_runs_fails_that_run_and_never_runs_it_again() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("jobs.yaml"), JOBS).unwrap();
    let hold = "before list events";
    let mut cluster = ChildCluster::start(directory.path(), Some(hold), true).await;
    let mut apply = Background::spawn(cluster.command(&["apply"]));
    cluster.process.wait_for_log(HELD, 1).await;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), NAMESPACE);
    let of_migrate = ListParams::default().labels("batch.kubernetes.io/job-name=migrate");
    support::eventually(ARRIVES_WITHIN, "the one-off's pod runs", || async {
        let listed = pods.list(&of_migrate).await.unwrap();
        listed.items.iter().any(|pod| {
            pod.status
                .as_ref()
                .and_then(|status| status.phase.as_deref())
                == Some("Running")
        })
    })
    .await;
    cluster.process.kill();
    apply.kill();
    drop(cluster);

    let cluster = ChildCluster::start(directory.path(), None, false).await;
    for _ in 0..2 {
        let again = Run::of(cluster.command(&["apply"])).await;
        again.expect_code(4);
        again.expect_stderr("`migrate` has `wait`");
    }
    let jobs = Api::<KubeJob>::namespaced(cluster.client.clone(), NAMESPACE);
    let listed = jobs.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1, "one Job");
    let uid = listed.items[0].metadata.uid.clone().unwrap();
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), NAMESPACE);
    let ran = pods.list(&of_migrate).await.unwrap();
    assert_eq!(ran.items.len(), 1, "one pod, one run");
    let inventory = inventory(&cluster.client).await.unwrap();
    let recorded = inventory["jobs"]["migrate"]["runs"].as_array().unwrap();
    assert_eq!(recorded.len(), 1, "{inventory}");
    assert_eq!(recorded[0]["jobUid"], uid.as_str(), "{inventory}");
    let deployments = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(deployments.get_opt("bot").await.unwrap().is_none(), "held");
}

/// What the outcome left unknown leads to: once the Job's TTL has removed it (30 s after it finished; deleted
/// here), the run reads `done (unknown)` and holds the jobs after it, though an apply saw it succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_an_apply_saw_succeed_does_not_hold_the_jobs_after_it_once_its_job_is_gone() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.local.hold(Hold::before("list", "events"));
    let mut apply = cluster.spawn(&["apply"]);
    tokio::time::timeout(ARRIVES_WITHIN, cluster.local.held())
        .await
        .unwrap();
    apply.kill();
    cluster.local.release_held();
    cluster.run(&["apply"]).await.expect_code(0);
    let jobs = Api::<KubeJob>::namespaced(cluster.client.clone(), NAMESPACE);
    jobs.delete("migrate", &kube::api::DeleteParams::background())
        .await
        .unwrap();
    cluster.write_jobs(&JOBS.replace("./bot.py", "./bot.py --fast"));
    cluster.run(&["apply"]).await.expect_code(0);
}
