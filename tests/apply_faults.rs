//! `apply` when things go wrong: transient API errors, lost responses and dropped or expired watches (it retries
//! and converges in the same apply),
//! and `kill -9` at any point (the next apply converges and no one-off ever runs twice for one definition).

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use kube::api::{Api, ListParams};
use support::{Cluster, NAMESPACE};
use toolforge_local_cluster::Fault;

/// Ten one-offs and ten continuous jobs, `generation` in every command so that the next one changes them all.
fn jobs(generation: u32) -> String {
    let mut text = String::new();
    for index in 0..10 {
        let _ = write!(
            text,
            "- name: once-{index}\n  command: ./once.sh {generation}\n  image: bookworm\n\
             - name: bot-{index}\n  command: ./bot.sh {generation}\n  image: bookworm\n  continuous: true\n"
        );
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_errors_and_broken_watches_are_retried_until_apply_converges() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(&jobs(1));
    cluster
        .local
        .inject_fault(Fault::new("create", "jobs", 500, 2));
    cluster
        .local
        .inject_fault(Fault::new("create", "deployments", 503, 3));
    cluster
        .local
        .inject_fault(Fault::new("list", "cronjobs", 502, 1));
    cluster.local.expire_next_watch();
    cluster.run(&["apply", "--wait=60s"]).await.expect_code(0);
    cluster.run(&["diff"]).await.expect_code(0);

    cluster.write_jobs(&jobs(2));
    cluster
        .local
        .inject_fault(Fault::new("update", "deployments", 500, 2));
    cluster
        .local
        .inject_fault(Fault::new("delete", "jobs", 500, 1));
    let watches = {
        let local = &cluster.local;
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            local.close_watches();
        }
    };
    let (apply, ()) = tokio::join!(cluster.run(&["apply", "--wait=60s"]), watches);
    apply.expect_code(0);
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_response_was_lost_converges_in_the_same_apply() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(&jobs(1));
    // The server creates, then the client sees a 500; its retry meets its own object (409 AlreadyExists).
    for resource in ["jobs", "deployments", "configmaps"] {
        cluster
            .local
            .inject_fault(Fault::lost_response("create", resource, 500, 2));
    }
    cluster.run(&["apply", "--wait=60s"]).await.expect_code(0);
    cluster.run(&["diff"]).await.expect_code(0);
    let jobs = Api::<KubeJob>::namespaced(cluster.client.clone(), NAMESPACE);
    assert_eq!(
        jobs.list(&ListParams::default()).await.unwrap().items.len(),
        10,
        "one Job per one-off"
    );
    let recorded = cluster.inventory().await;
    for index in 0..10 {
        let runs = &recorded["jobs"][format!("once-{index}")]["runs"];
        assert_eq!(runs.as_array().unwrap().len(), 1, "{recorded}");
        assert!(runs[0]["jobUid"].is_string(), "{recorded}");
    }
}

/// Every (fingerprint, Job UID) seen per one-off: two UIDs for one fingerprint would be a second run.
type Runs = BTreeMap<String, Vec<(String, String)>>;

async fn remember_runs(jobs: &Api<KubeJob>, seen: &mut Runs) {
    for job in jobs.list(&ListParams::default()).await.unwrap() {
        let fingerprint = job
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get("jobs.toolforge.org/fingerprint").cloned());
        let entry = seen.entry(job.metadata.name.clone().unwrap()).or_default();
        let run = (
            fingerprint.unwrap_or_default(),
            job.metadata.uid.clone().unwrap(),
        );
        if !entry.contains(&run) {
            entry.push(run);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_any_point_apply_converges_and_never_runs_a_one_off_twice() {
    let cluster = Cluster::start().await;
    let jobs_api: Api<KubeJob> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let mut seen = Runs::new();
    for round in 0..6_u32 {
        let generation = round / 2 + 1;
        cluster.write_jobs(&jobs(generation));
        let mut child = cluster
            .command(&["apply", "--yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill it at a different point each round: before, during and after its writes.
        tokio::time::sleep(Duration::from_millis(u64::from(round) * 37 % 200)).await;
        let _ = child.kill();
        let _ = child.wait();
        remember_runs(&jobs_api, &mut seen).await;
    }
    cluster.write_jobs(&jobs(3));
    cluster
        .run(&["apply", "--yes", "--wait=60s"])
        .await
        .expect_code(0);
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);

    remember_runs(&jobs_api, &mut seen).await;
    for (job, runs) in &seen {
        let mut fingerprints: Vec<&String> =
            runs.iter().map(|(fingerprint, _)| fingerprint).collect();
        fingerprints.sort();
        let before = fingerprints.len();
        fingerprints.dedup();
        assert_eq!(
            fingerprints.len(),
            before,
            "{job} ran twice for one definition: {runs:?}"
        );
    }
    // The inventory agrees: at most one run per fingerprint.
    let inventory = cluster.inventory().await;
    for (job, record) in inventory["jobs"].as_object().unwrap() {
        let runs = record["runs"].as_array().cloned().unwrap_or_default();
        let mut fingerprints: Vec<String> = runs
            .iter()
            .map(|run| run["fingerprint"].as_str().unwrap().to_owned())
            .collect();
        let before = fingerprints.len();
        fingerprints.sort();
        fingerprints.dedup();
        assert_eq!(fingerprints.len(), before, "{job}: {runs:?}");
    }
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    assert_eq!(
        deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        10
    );
}
