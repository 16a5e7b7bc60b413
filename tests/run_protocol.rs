//! The one-off run protocol (SPEC §6, §7), step by step: record the run, create the Job suspended, record its
//! UID, resume it. An apply that stops after any step (here: an API error at the next step, which ends the apply
//! as a kill would) leaves a state from which the next apply runs the one-off exactly once, and a `wait` one-off
//! that nobody saw finish keeps holding the jobs after it.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use kube::api::{Api, DeleteParams, ListParams};
use support::{Cluster, NAMESPACE};
use toolforge_local_cluster::Fault;

const JOBS: &str = support::MIGRATE_THEN_BOT;

fn jobs(cluster: &Cluster) -> Api<KubeJob> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

/// Applies until it converges and checks that `migrate` ran once, recorded by the UID of its one Job.
async fn converges_with_one_run(cluster: &Cluster) {
    let apply = cluster.run(&["apply"]).await;
    apply.expect_code(0);
    let listed = jobs(cluster).list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1, "{}", apply.stderr);
    let job = &listed.items[0];
    assert_ne!(job.spec.as_ref().unwrap().suspend, Some(true), "resumed");
    let runs = cluster.inventory().await["jobs"]["migrate"]["runs"].clone();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["jobUid"].as_str(), job.metadata.uid.as_deref());
    assert_eq!(runs[0]["outcome"], "succeeded");
    let bot = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(
        bot.get_opt("bot").await.unwrap().is_some(),
        "the barrier let `bot` through"
    );
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_after_the_run_was_recorded_the_next_apply_starts_it() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster
        .local
        .inject_fault(Fault::new("create", "jobs", 403, 1));
    cluster.run(&["apply"]).await.expect_code(1);
    assert!(
        jobs(&cluster)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    let diff = cluster.run(&["diff"]).await;
    assert_eq!(diff.row("migrate").unwrap().0, "rerun", "{}", diff.stdout);
    converges_with_one_run(&cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_after_the_job_was_created_the_next_apply_takes_it_over() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    // The inventory write that records the Job's UID fails: the Job stays suspended, unrecorded.
    cluster
        .local
        .inject_fault(Fault::new("update", "configmaps", 403, 1));
    cluster.run(&["apply"]).await.expect_code(1);
    let job = jobs(&cluster).get("migrate").await.unwrap();
    assert_eq!(job.spec.unwrap().suspend, Some(true), "never ran");

    let diff = cluster.run(&["diff"]).await;
    assert_eq!(diff.row("migrate").unwrap().0, "adopt", "{}", diff.stdout);
    converges_with_one_run(&cluster).await;
    let after = jobs(&cluster).get("migrate").await.unwrap();
    assert_eq!(
        after.metadata.uid, job.metadata.uid,
        "the same Job, not a second run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_before_the_job_was_resumed_the_next_apply_resumes_it() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster
        .local
        .inject_fault(Fault::new("patch", "jobs", 403, 1));
    cluster.run(&["apply"]).await.expect_code(1);
    let job = jobs(&cluster).get("migrate").await.unwrap();
    assert_eq!(job.spec.unwrap().suspend, Some(true));

    converges_with_one_run(&cluster).await;
    let after = jobs(&cluster).get("migrate").await.unwrap();
    assert_eq!(after.metadata.uid, job.metadata.uid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_one_off_nobody_saw_finish_holds_the_jobs_after_it() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    // Its wait cannot watch (the apply ends as if killed while waiting); the Job then finishes and its TTL
    // removes it, so no outcome is ever seen.
    cluster
        .local
        .inject_fault(Fault::new("watch", "jobs", 403, 1));
    cluster.run(&["apply"]).await.expect_code(1);
    jobs(&cluster)
        .delete("migrate", &DeleteParams::background())
        .await
        .unwrap();
    let record = cluster.inventory().await;
    assert_eq!(
        record["jobs"]["migrate"]["runs"][0]["outcome"], "unknown",
        "{record}"
    );

    let held = cluster.run(&["apply"]).await;
    held.expect_code(4);
    held.expect_stderr("`migrate` has `wait`");
    let bot = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE);
    assert!(bot.get_opt("bot").await.unwrap().is_none(), "held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_pruned_and_put_back_with_the_same_definition_does_not_run_again() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);
    let created = cluster.local.request_count("create", "jobs");
    // A file cut short (a half-written save, a bad merge) prunes `migrate`; its runs stay as a tombstone.
    cluster.write_jobs(&JOBS[JOBS.find("- name: bot").unwrap()..]);
    cluster.run(&["apply", "--yes"]).await.expect_code(0);
    let inventory = cluster.inventory().await;
    assert!(inventory["jobs"].get("migrate").is_none());
    assert_eq!(
        inventory["pruned"]["migrate"]["record"]["runs"][0]["outcome"],
        "succeeded"
    );

    cluster.write_jobs(JOBS);
    let diff = cluster.run(&["diff"]).await;
    assert_eq!(
        diff.row("migrate").unwrap().0,
        "done (succeeded)",
        "{}",
        diff.stdout
    );
    diff.expect_stdout("ran before it was removed from the file (");
    cluster.run(&["apply"]).await.expect_code(0);
    assert_eq!(
        cluster.local.request_count("create", "jobs"),
        created,
        "not run again"
    );
    let inventory = cluster.inventory().await;
    assert!(inventory.get("pruned").is_none(), "{inventory}");
    assert_eq!(
        inventory["jobs"]["migrate"]["runs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    cluster.run(&["diff"]).await.expect_code(0);

    // A new definition is a new run, as for any job.
    cluster.write_jobs(&JOBS.replace("./migrate.sh", "./migrate.sh --all"));
    cluster.run(&["apply"]).await.expect_code(0);
    assert_eq!(cluster.local.request_count("create", "jobs"), created + 1);
}
