//! Upstream's stored job records (SPEC §13; docs/rendering.md, "The stored record") end to end against the local
//! cluster, which installs upstream's two custom resource definitions as a Toolforge cluster has them: `apply`
//! writes a record beside each scheduled and continuous job, updates and deletes it with the job, repairs one a
//! crash or a hand left missing, adopts jobs upstream made (records and workloads) without restarting them, never
//! touches a record of a job that is not ours, and works as before on a cluster without the records.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use support::{Cluster, NAMESPACE};
use toolforge_local_cluster::{Fault, Hold};

const JOBS: &str = "\
- name: migrate
  command: ./migrate.sh
  image: python3.11
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
  retry: 2
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
  mem: 1Gi
";

fn records(cluster: &Cluster, kind: &str) -> Api<DynamicObject> {
    let plural = match kind {
        "ContinuousJob" => "continuous-jobs",
        "ScheduledJob" => "scheduled-jobs",
        other => panic!("not a record kind: {other}"),
    };
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("jobs-api.toolforge.org", "v1", kind),
        plural,
    );
    Api::namespaced_with(cluster.client.clone(), NAMESPACE, &resource)
}

async fn spec(cluster: &Cluster, kind: &str, name: &str) -> Option<Value> {
    let record = records(cluster, kind).get_opt(name).await.unwrap()?;
    Some(record.data["spec"].clone())
}

fn deployments(cluster: &Cluster) -> Api<Deployment> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

/// What upstream's model stores for the file's jobs (reference/toolforge.md §3.8), written out by hand.
fn nightly() -> Value {
    json!({"job_name": "nightly", "tool_name": "mytool", "job_type": "scheduled", "cmd": "./nightly.sh",
        "image": {"short_name": "bookworm"}, "schedule": "17 3 * * *", "retry": 2})
}

fn bot(memory: &str) -> Value {
    json!({"job_name": "bot", "tool_name": "mytool", "job_type": "continuous", "cmd": "./bot.py",
        "image": {"short_name": "python3.11"}, "memory": memory, "continuous": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_are_written_updated_and_deleted_with_their_jobs() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert!(!diff.stdout.contains("note:"), "{}", diff.stdout);
    cluster.run(&["apply"]).await.expect_code(0);

    assert_eq!(
        spec(&cluster, "ScheduledJob", "nightly").await,
        Some(nightly())
    );
    assert_eq!(
        spec(&cluster, "ContinuousJob", "bot").await,
        Some(bot("1.0Gi"))
    );
    let all = |kind| {
        let api = records(&cluster, kind);
        async move {
            api.list(&kube::api::ListParams::default())
                .await
                .unwrap()
                .items
                .len()
        }
    };
    assert_eq!(
        (all("ContinuousJob").await, all("ScheduledJob").await),
        (1, 1),
        "one-offs have no record"
    );
    cluster.run(&["diff"]).await.expect_code(0);

    // A changed definition changes the record with the workload.
    cluster.write_jobs(&JOBS.replace("mem: 1Gi", "mem: 2Gi"));
    cluster.run(&["apply"]).await.expect_code(0);
    assert_eq!(
        spec(&cluster, "ContinuousJob", "bot").await,
        Some(bot("2.0Gi"))
    );

    // Pruned: the record goes with the CronJob.
    let without_nightly = JOBS.replace(
        "- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: '17 3 * * *'\n  retry: 2\n",
        "",
    );
    cluster.write_jobs(&without_nightly.replace("mem: 1Gi", "mem: 2Gi"));
    cluster.run(&["apply", "--yes"]).await.expect_code(0);
    assert_eq!(spec(&cluster, "ScheduledJob", "nightly").await, None);
    assert!(
        Api::<CronJob>::namespaced(cluster.client.clone(), NAMESPACE)
            .get_opt("nightly")
            .await
            .unwrap()
            .is_none()
    );

    // A change of kind: the ContinuousJob record makes way for a ScheduledJob one.
    cluster
        .write_jobs("- {name: bot, command: ./bot.py, image: python3.11, schedule: '@hourly'}\n");
    cluster.run(&["apply", "--yes"]).await.expect_code(0);
    assert_eq!(spec(&cluster, "ContinuousJob", "bot").await, None);
    assert_eq!(
        spec(&cluster, "ScheduledJob", "bot").await.unwrap()["schedule"],
        "@hourly"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_edited_record_is_repaired_without_touching_the_workload() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);
    let before = deployments(&cluster).get("bot").await.unwrap();

    records(&cluster, "ContinuousJob")
        .delete("bot", &DeleteParams::default())
        .await
        .unwrap();
    let patch = Patch::Merge(json!({"spec": {"cmd": "./edited.sh"}}));
    records(&cluster, "ScheduledJob")
        .patch("nightly", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert_eq!(diff.row("bot").unwrap().0, "repair", "{}", diff.stdout);
    assert!(
        diff.stdout
            .contains("the stored record upstream lists is missing"),
        "{}",
        diff.stdout
    );
    assert_eq!(diff.row("nightly").unwrap().0, "repair", "{}", diff.stdout);
    assert!(
        diff.stdout.contains("--- ScheduledJob/nightly (live)"),
        "{}",
        diff.stdout
    );

    cluster.run(&["apply"]).await.expect_code(0);
    assert_eq!(
        spec(&cluster, "ContinuousJob", "bot").await,
        Some(bot("1.0Gi"))
    );
    assert_eq!(
        spec(&cluster, "ScheduledJob", "nightly").await,
        Some(nightly())
    );
    let after = deployments(&cluster).get("bot").await.unwrap();
    assert_eq!(
        (after.metadata.uid, after.metadata.generation),
        (before.metadata.uid, before.metadata.generation),
        "the Deployment is not written"
    );
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_killed_before_it_stored_the_record_is_repaired_by_the_next() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster
        .local
        .hold(Hold::before("create", "continuous-jobs"));
    let mut apply = cluster.spawn(&["apply"]);
    tokio::time::timeout(Duration::from_secs(30), cluster.local.held())
        .await
        .unwrap_or_else(|_| panic!("the record's create never came:\n{}", apply.log()));
    apply.kill();
    cluster.local.release_held();
    let bot_uid = deployments(&cluster).get("bot").await.unwrap().metadata.uid;
    assert_eq!(spec(&cluster, "ContinuousJob", "bot").await, None);

    cluster.run(&["apply"]).await.expect_code(0);
    assert_eq!(
        spec(&cluster, "ContinuousJob", "bot").await,
        Some(bot("1.0Gi"))
    );
    assert_eq!(
        deployments(&cluster).get("bot").await.unwrap().metadata.uid,
        bot_uid,
        "the Deployment stays"
    );
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_upstream_made_are_adopted_with_their_records_and_others_records_are_left_alone() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    // Make the jobs look made by upstream's jobs-api: no inventory, none of our labels or annotations, and
    // records without labels whose spec sets a default explicitly.
    cluster.forget_inventory().await;
    let strip = support::as_upstream_made();
    let bot_before = deployments(&cluster)
        .patch("bot", &PatchParams::default(), &strip)
        .await
        .unwrap();
    Api::<CronJob>::namespaced(cluster.client.clone(), NAMESPACE)
        .patch("nightly", &PatchParams::default(), &strip)
        .await
        .unwrap();
    let upstream_record = Patch::Merge(json!({"metadata": {"labels": null, "annotations": null},
        "spec": {"emails": "none"}}));
    records(&cluster, "ContinuousJob")
        .patch("bot", &PatchParams::default(), &upstream_record)
        .await
        .unwrap();
    // A record of a job nobody here owns: upstream's, its workload gone.
    let stray: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "jobs-api.toolforge.org/v1", "kind": "ContinuousJob",
        "metadata": {"name": "theirs"},
        "spec": {"job_name": "theirs", "tool_name": "mytool", "job_type": "continuous", "cmd": "./x",
            "image": {"short_name": "python3.11"}}
    }))
    .unwrap();
    let stray = records(&cluster, "ContinuousJob")
        .create(&PostParams::default(), &stray)
        .await
        .unwrap();

    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert_eq!(diff.row("bot").unwrap().0, "adopt", "{}", diff.stdout);
    assert_eq!(diff.row("nightly").unwrap().0, "adopt", "{}", diff.stdout);
    assert_eq!(diff.row("theirs").unwrap().0, "ignored", "{}", diff.stdout);

    cluster.run(&["apply"]).await.expect_code(0);
    let bot_after = deployments(&cluster).get("bot").await.unwrap();
    assert_eq!(bot_after.metadata.uid, bot_before.metadata.uid);
    assert_eq!(
        bot_after.metadata.generation, bot_before.metadata.generation,
        "not restarted"
    );
    let record = records(&cluster, "ContinuousJob").get("bot").await.unwrap();
    assert_eq!(
        record.data["spec"],
        bot("1.0Gi"),
        "the file's definition, as upstream stores it"
    );
    assert_eq!(
        record.metadata.labels.unwrap()["jobs.toolforge.org/inventory"],
        "toolforge-jobs"
    );
    let untouched = records(&cluster, "ContinuousJob")
        .get("theirs")
        .await
        .unwrap();
    assert_eq!(
        untouched.metadata.resource_version,
        stray.metadata.resource_version
    );
    cluster.run(&["diff"]).await.expect_code(0);

    // Pruning all of ours leaves theirs.
    cluster.write_jobs("[]\n");
    cluster
        .run(&["apply", "--yes", "--allow-empty"])
        .await
        .expect_code(0);
    assert_eq!(spec(&cluster, "ContinuousJob", "bot").await, None);
    assert!(spec(&cluster, "ContinuousJob", "theirs").await.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_may_not_read_records_applies_as_before_and_is_told_once() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster
        .local
        .inject_fault(Fault::new("list", "continuous-jobs", 403, 100));
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert_eq!(diff.stdout.matches("note:").count(), 1, "{}", diff.stdout);
    assert!(
        diff.stdout
            .contains("upstream's `toolforge jobs list` will not show"),
        "{}",
        diff.stdout
    );
    cluster.run(&["apply"]).await.expect_code(0);
    assert!(
        deployments(&cluster)
            .get_opt("bot")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        spec(&cluster, "ContinuousJob", "bot").await,
        None,
        "nothing written"
    );
}

/// A bounded randomized kill loop: `apply`s of a changing file are killed (SIGKILL) at random moments (requests slowed
/// to 5 ms, so a kill lands anywhere among the writes); then one `apply` runs to the end. Every scheduled and
/// continuous job must end with exactly its record, and nothing else of ours may be left. `KILL_LOOP_SEED`
/// replays a run (the seed is in the failure messages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applies_killed_at_random_moments_converge_to_one_record_per_job() {
    let mut moments = support::KillLoop::new();
    let seed = moments.seed;
    let files = [
        JOBS.to_owned(),
        JOBS.replace("mem: 1Gi", "mem: 2Gi"),
        // `nightly` becomes continuous, `bot` scheduled.
        "- {name: nightly, command: ./nightly.sh, image: bookworm, continuous: true}\n\
         - {name: bot, command: ./bot.py, image: python3.11, schedule: '@hourly'}\n"
            .to_owned(),
    ];
    let cluster = Cluster::start().await;
    cluster.local.set_latency(Duration::from_millis(5));
    let mut last = 0;
    for _ in 0..8 {
        last = usize::try_from(moments.below(files.len() as u64)).unwrap();
        cluster.write_jobs(&files[last]);
        let mut apply = cluster.spawn(&["apply", "--yes", "--allow-mass-delete"]);
        tokio::time::sleep(Duration::from_millis(moments.below(400))).await;
        apply.kill();
        let _ = apply.exit_code().await;
    }
    // A killed apply's Lease names a process that is gone: the next apply takes it over.
    let converged = cluster
        .run(&[
            "apply",
            "--yes",
            "--allow-mass-delete",
            "--wait-for-lock=60s",
        ])
        .await;
    assert_eq!(
        converged.code, 0,
        "seed {seed}: {}{}",
        converged.stdout, converged.stderr
    );
    cluster.local.set_latency(Duration::ZERO);

    let (continuous, scheduled) = if last == 2 {
        (vec!["nightly"], vec!["bot"])
    } else {
        (vec!["bot"], vec!["nightly"])
    };
    for (kind, expected) in [("ContinuousJob", continuous), ("ScheduledJob", scheduled)] {
        let mut names: Vec<String> = records(&cluster, kind)
            .list(&kube::api::ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|record| record.metadata.name.unwrap())
            .collect();
        names.sort();
        assert_eq!(names, expected, "seed {seed}: {kind} records");
    }
    let diff = cluster.run(&["diff"]).await;
    assert_eq!(diff.code, 0, "seed {seed}: {}{}", diff.stdout, diff.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_may_read_but_not_write_records_still_applies_its_jobs() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster
        .local
        .inject_fault(Fault::new("create", "continuous-jobs", 403, 100));
    let apply = cluster.run(&["apply"]).await;
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(
        apply
            .stderr
            .contains("may not write the stored record ContinuousJob `bot`"),
        "{}",
        apply.stderr
    );
    assert!(
        deployments(&cluster)
            .get_opt("bot")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(spec(&cluster, "ContinuousJob", "bot").await, None);
    assert_eq!(
        spec(&cluster, "ScheduledJob", "nightly").await,
        Some(nightly()),
        "the other kind is written"
    );
}
