//! `wait` one-offs as barriers across applies (SPEC §7): one that failed keeps holding the jobs after it back on
//! every later apply (exit 4) until it is fixed or asked to run again; one whose Job is still running is waited
//! for by the next apply before the jobs after it.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use kube::api::Api;
use serde_json::Value;
use support::{Cluster, NAMESPACE};
use toolforge_local_cluster::{ContainerOutcome, Script};

/// `migrate` runs on python3.12, whose pods the script makes fail; the fix moves it to python3.13.
const JOBS: &str = "\
- name: migrate
  command: ./migrate.sh
  image: python3.12
  wait: true
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
";

const FAILING_IMAGE: &str = "docker-registry.svc.toolforge.org/toolforge-python312-sssd-web:latest";

fn jobs(cluster: &Cluster) -> Api<KubeJob> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

async fn nothing_after_the_barrier(cluster: &Cluster) {
    let deployments = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE);
    let cron_jobs = Api::<CronJob>::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(deployments.get_opt("bot").await.unwrap().is_none());
    assert!(cron_jobs.get_opt("nightly").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_wait_one_off_holds_the_jobs_after_it_until_it_is_fixed() {
    let script = Script::new(ContainerOutcome::RunForever).image(
        FAILING_IMAGE,
        ContainerOutcome::Exit {
            code: 3,
            after: Duration::from_millis(20),
        },
    );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(JOBS);

    // Apply #1: the barrier fails in this apply.
    let first = cluster.run(&["apply"]).await;
    first.expect_code(4);
    first
        .expect_stderr("the jobs after it were not applied")
        .expect_stderr("--retry-failed");
    nothing_after_the_barrier(&cluster).await;
    let failed = jobs(&cluster).get("migrate").await.unwrap();

    // Apply #2, nothing changed: still held, exit 4, one message that says how to proceed, nothing written.
    let diff = cluster.run(&["diff"]).await;
    assert_eq!(diff.row("bot").unwrap().0, "held", "{}", diff.stdout);
    assert_eq!(diff.row("nightly").unwrap().0, "held", "{}", diff.stdout);
    diff.expect_stdout("held: `migrate` (wait) failed; then create")
        .expect_stdout("held back by `migrate` (wait), which failed");
    let second = cluster.run(&["apply"]).await;
    second.expect_code(4);
    second.expect_stdout("held: `migrate` (wait) failed");
    second
        .expect_stderr("error: `migrate` has `wait` and its last run with this definition failed")
        .expect_stderr("fix it (a changed definition runs again)")
        .expect_stderr("`--retry-failed` or `--replace migrate`");
    assert_eq!(
        second.stderr.matches("error:").count(),
        1,
        "one message: {}",
        second.stderr
    );
    nothing_after_the_barrier(&cluster).await;
    assert_eq!(
        jobs(&cluster).get("migrate").await.unwrap().metadata.uid,
        failed.metadata.uid,
        "not run again by itself"
    );

    // The JSON form says the same.
    let json = cluster.run(&["apply", "-o", "json"]).await;
    json.expect_code(4);
    let plan: Value = json
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["event"] == "plan")
        .unwrap()["plan"]
        .clone();
    let bot = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|action| action["job"] == "bot")
        .unwrap();
    assert_eq!(bot["action"], "held", "{bot}");
    assert_eq!(bot["waits"][0]["job"], "migrate", "{bot}");

    // Apply #3 with `--retry-failed`: it runs again (and fails again): still nothing after it.
    let retried = cluster.run(&["apply", "--retry-failed"]).await;
    retried.expect_code(4);
    let second_run = jobs(&cluster).get("migrate").await.unwrap();
    assert_ne!(second_run.metadata.uid, failed.metadata.uid, "run again");
    nothing_after_the_barrier(&cluster).await;

    // Apply #4 with the job fixed: its fingerprint changed, it runs again, succeeds, and the rest is applied.
    cluster.write_jobs(&JOBS.replace("python3.12", "python3.13"));
    let fixed = cluster.run(&["apply"]).await;
    fixed.expect_code(0);
    assert_eq!(
        fixed.row("migrate").unwrap().0,
        "replace",
        "{}",
        fixed.stdout
    );
    assert_eq!(fixed.row("bot").unwrap().0, "create", "{}", fixed.stdout);
    let deployments = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(deployments.get_opt("bot").await.unwrap().is_some());
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_one_off_still_running_is_waited_for_before_the_jobs_after_it() {
    // `migrate` never finishes; its `wait: 1` gives up after a second.
    let script = Script::new(ContainerOutcome::RunForever).label(
        "app.kubernetes.io/name",
        "migrate",
        ContainerOutcome::RunForever,
    );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(&JOBS.replace("wait: true", "wait: 1"));

    cluster.run(&["apply"]).await.expect_code(5);
    nothing_after_the_barrier(&cluster).await;
    let running = jobs(&cluster).get("migrate").await.unwrap();

    // The next apply does not start it again but waits for the live Job before the jobs after it.
    let diff = cluster.run(&["diff"]).await;
    diff.expect_stdout("the jobs after it wait for it");
    let again = cluster.run(&["apply"]).await;
    again.expect_code(5);
    again
        .expect_stderr("timed out")
        .expect_stderr("did not finish in time: the jobs after it were not applied");
    nothing_after_the_barrier(&cluster).await;
    assert_eq!(
        jobs(&cluster).get("migrate").await.unwrap().metadata.uid,
        running.metadata.uid
    );
}
