//! The `watch` daemon fed files that are being written (SPEC §8, issue 14): a writer saving one job at a time,
//! pausing longer than the debounce between jobs and taking longer than the prune settle period in all, deletes
//! and re-runs nothing; a file cut short for longer than the settle period is pruned as asked, and restoring it
//! re-creates what was deleted but does not run its one-off again (the pruned one-off's runs are a tombstone).

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;
use support::{Cluster, NAMESPACE, eventually};

const TIMEOUT: Duration = Duration::from_secs(20);

const JOBS: &str = "\
- name: migrate
  command: ./migrate.sh
  image: bookworm
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
- name: web
  command: ./web.sh
  image: python3.11
  continuous: true
";

/// The file's text up to (not including) job `name`.
fn up_to(name: &str) -> &'static str {
    &JOBS[..JOBS.find(&format!("- name: {name}\n")).unwrap()]
}

async fn uid(cluster: &Cluster, name: &str) -> Option<String> {
    Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE)
        .get_opt(name)
        .await
        .unwrap()
        .and_then(|deployment| deployment.metadata.uid)
}

/// Starts the daemon on [`JOBS`] and waits until everything is applied and `migrate` ran.
async fn applied(cluster: &Cluster) -> support::Background {
    cluster.write_jobs(JOBS);
    let daemon = cluster.spawn_watch(&[]);
    eventually(
        TIMEOUT,
        "the jobs are applied and `migrate` ran",
        || async {
            uid(cluster, "web").await.is_some()
                && cluster.inventory().await["jobs"]["migrate"]["runs"][0]["outcome"] == "succeeded"
        },
    )
    .await;
    daemon
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_saved_one_job_at_a_time_deletes_and_reruns_nothing() {
    let cluster = Cluster::start().await;
    let daemon = applied(&cluster).await;
    let (bot, web) = (uid(&cluster, "bot").await, uid(&cluster, "web").await);
    let runs = cluster.local.request_count("create", "jobs");

    // Each prefix is a valid file dropping the jobs after it. 4 × 350 ms is longer than the 1 s settle period,
    // each pause shorter: the settle period starts again at each change.
    for name in ["bot", "nightly", "web"] {
        cluster.write_jobs(up_to(name));
        tokio::time::sleep(Duration::from_millis(350)).await;
    }
    cluster.write_jobs(JOBS);
    daemon
        .wait_for_log("the jobs file changed again: its deletes wait", 2)
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = daemon.log();
    assert_eq!(uid(&cluster, "bot").await, bot, "{log}");
    assert_eq!(uid(&cluster, "web").await, web, "{log}");
    assert_eq!(cluster.local.request_count("create", "jobs"), runs, "{log}");
    assert!(!log.contains("delete:"), "{log}");
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_cut_short_and_restored_re_creates_what_was_pruned_and_reruns_nothing() {
    let cluster = Cluster::start().await;
    let daemon = applied(&cluster).await;
    let runs = cluster.local.request_count("create", "jobs");

    // Cut to `bot` and `nightly` for longer than the settle period: `migrate` and `web` are pruned (half of the
    // jobs: more would need `--allow-mass-delete`).
    cluster.write_jobs(&JOBS[up_to("bot").len()..up_to("web").len()]);
    eventually(TIMEOUT, "`web` is pruned", || async {
        uid(&cluster, "web").await.is_none()
    })
    .await;
    eventually(TIMEOUT, "`migrate` is a tombstone", || async {
        cluster.inventory().await["pruned"]["migrate"]["record"]["runs"][0]["outcome"]
            == "succeeded"
    })
    .await;

    cluster.write_jobs(JOBS);
    eventually(
        TIMEOUT,
        "`web` is back and `migrate` recorded again",
        || async {
            let inventory = cluster.inventory().await;
            uid(&cluster, "web").await.is_some() && inventory["jobs"].get("migrate").is_some()
        },
    )
    .await;
    let log = daemon.log();
    assert_eq!(cluster.local.request_count("create", "jobs"), runs, "{log}");
    let inventory = cluster.inventory().await;
    assert_eq!(
        inventory["jobs"]["migrate"]["runs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(inventory.get("pruned").is_none(), "{inventory}");
    cluster.run(&["diff"]).await.expect_code(0);
}
