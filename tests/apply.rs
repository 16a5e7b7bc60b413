//! `diff` and `apply` end to end against the local cluster: the plan after creation, after a hand edit, after
//! TTL clean-up of a one-off, with upstream-created and foreign objects, trigger changes, pruning, the lock, and
//! what reading the live state costs.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Background, Cluster, NAMESPACE};
use toolforge_local_cluster::{ContainerOutcome, Script};

const JOBS: &str = "\
- name: migrate
  command: ./migrate.sh
  image: python3.11
  wait: true
  trigger: v1
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
  mem: 1Gi
";

fn jobs(cluster: &Cluster) -> Api<KubeJob> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

fn deployments(cluster: &Cluster) -> Api<Deployment> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

fn cron_jobs(cluster: &Cluster) -> Api<CronJob> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

/// The CronJob `nightly`, once asserted to run the changed command of [`apply_held_at_the_lock`].
async fn verbose_nightly(cluster: &Cluster) -> CronJob {
    let nightly = cron_jobs(cluster).get("nightly").await.unwrap();
    assert!(
        serde_json::to_string(&nightly.spec)
            .unwrap()
            .contains("--verbose"),
        "{nightly:?}"
    );
    nightly
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_plans_creates_apply_creates_and_then_nothing_changes() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);

    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    for job in ["migrate", "nightly", "bot"] {
        assert_eq!(diff.row(job).unwrap().0, "create", "{}", diff.stdout);
    }
    diff.expect_stdout("Plan: 3 create");

    cluster.run(&["apply"]).await.expect_code(0);
    let job = jobs(&cluster).get("migrate").await.unwrap();
    let deployment = deployments(&cluster).get("bot").await.unwrap();
    assert_eq!(
        deployment.metadata.labels.unwrap()["jobs.toolforge.org/inventory"],
        "toolforge-jobs"
    );
    let inventory: ConfigMap = Api::namespaced(cluster.client.clone(), NAMESPACE)
        .get("toolforge-jobs")
        .await
        .unwrap();
    let record: Value = serde_json::from_str(&inventory.data.unwrap()["inventory.json"]).unwrap();
    let runs = record["jobs"]["migrate"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["jobUid"], json!(job.metadata.uid));
    assert_eq!(
        runs[0]["outcome"], "succeeded",
        "the barrier saw it succeed"
    );

    // Nothing changed: exit 0, the same bytes twice, and the live state costs one read per kind the file uses
    // (CronJobs and their stored records; Deployments and theirs — no Services, `bot` has no port) and the
    // inventory; no quota, limit, image table or identity (only a plan that writes needs them). No Jobs either:
    // `migrate`'s run is recorded as ended, so it is done whether or not its Job is still there.
    cluster.local.reset_request_counts();
    let first = cluster.run(&["diff"]).await;
    first.expect_code(0);
    assert_eq!(
        cluster.requests(),
        5,
        "{:?}",
        cluster.local.request_counts()
    );
    assert_eq!(cluster.local.request_count("list", "services"), 0);
    assert_eq!(cluster.local.request_count("list", "jobs"), 0);
    assert_eq!(cluster.local.request_count("get", "configmaps"), 1);
    let second = cluster.run(&["diff"]).await;
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(first.row("migrate").unwrap().0, "done (succeeded)");
    first.expect_stdout("Plan: 2 unchanged, 1 done; nothing to change");

    // A plan made from everything says the same of `migrate`, its Job still there.
    jobs(&cluster).get("migrate").await.unwrap();
    let full = cluster.run(&["diff", "--replace", "nightly"]).await;
    full.expect_code(3);
    assert_eq!(
        full.row("migrate").unwrap().0,
        "done (succeeded)",
        "{}",
        full.stdout
    );
    assert_eq!(cluster.local.request_count("list", "jobs"), 1);

    let json = cluster.run(&["diff", "-o", "json"]).await;
    json.expect_code(0);
    let plan: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(plan["version"], 1);
    assert_eq!(plan["counts"], json!({"unchanged": 2, "done": 1}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edit_is_shown_as_a_repair_with_a_yaml_diff_and_apply_restores_it() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);
    let before = deployments(&cluster).get("bot").await.unwrap();

    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "job", "resources": {"limits": {"memory": "2Gi"}, "requests": {"memory": "1Gi"}}}
    ]}}}});
    deployments(&cluster)
        .patch("bot", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();

    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert_eq!(diff.row("bot").unwrap().0, "repair", "{}", diff.stdout);
    diff.expect_stdout("--- Deployment/bot (live)");
    diff.expect_stdout("mem: 2.0Gi → 1.0Gi");
    let line = |sign: char, text: &str| {
        diff.stdout
            .lines()
            .any(|line| line.starts_with(sign) && line.trim_start_matches(sign).trim() == text)
    };
    assert!(line('-', "memory: 2Gi"), "{}", diff.stdout);
    assert!(line('+', "memory: 1.0Gi"), "{}", diff.stdout);

    // Only the repaired job changed; the other two are counted in M, not in N.
    cluster
        .run(&["apply"])
        .await
        .expect_code(0)
        .expect_stderr("applied: 1 of 3 jobs changed");
    let after = deployments(&cluster).get("bot").await.unwrap();
    assert_eq!(after.metadata.uid, before.metadata.uid, "repaired in place");
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_cleaned_up_after_it_ran_is_done_and_never_runs_twice() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);
    let first = jobs(&cluster).get("migrate").await.unwrap();

    // What the TTL controller does 30 s after the Job finished.
    jobs(&cluster)
        .delete("migrate", &DeleteParams::background())
        .await
        .unwrap();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);
    assert_eq!(
        diff.row("migrate").unwrap().0,
        "done (succeeded)",
        "{}",
        diff.stdout
    );

    cluster.run(&["apply"]).await.expect_code(0);
    assert!(
        jobs(&cluster).get_opt("migrate").await.unwrap().is_none(),
        "no second run"
    );

    // A new trigger is a new fingerprint: it runs again.
    cluster.write_jobs(&JOBS.replace("trigger: v1", "trigger: v2"));
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert_eq!(diff.row("migrate").unwrap().0, "rerun", "{}", diff.stdout);
    cluster.run(&["apply"]).await.expect_code(0);
    let second = jobs(&cluster).get("migrate").await.unwrap();
    assert_ne!(second.metadata.uid, first.metadata.uid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_objects_are_adopted_without_a_restart_and_foreign_ones_are_conflicts() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    // Make `bot` look created by upstream's jobs-api: no inventory, none of our labels or annotations.
    cluster.forget_inventory().await;
    let bot = deployments(&cluster)
        .patch("bot", &PatchParams::default(), &support::as_upstream_made())
        .await
        .unwrap();
    // And a Deployment named `nightly-web`, not ours at all.
    let foreign: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "nightly-web", "labels": {"app": "mine"}},
        "spec": {"selector": {"matchLabels": {"app": "mine"}},
            "template": {"metadata": {"labels": {"app": "mine"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let foreign = deployments(&cluster)
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    cluster.write_jobs(&format!(
        "{JOBS}- name: nightly-web\n  command: ./web.sh\n  image: python3.11\n  continuous: true\n"
    ));

    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(1);
    assert_eq!(diff.row("bot").unwrap().0, "adopt", "{}", diff.stdout);
    assert_eq!(
        diff.row("nightly-web").unwrap().0,
        "conflict",
        "{}",
        diff.stdout
    );

    let apply = cluster.run(&["apply"]).await;
    apply.expect_code(1);
    apply.expect_stderr("cannot be applied");
    let untouched = deployments(&cluster).get("nightly-web").await.unwrap();
    assert_eq!(untouched.metadata.generation, foreign.metadata.generation);
    assert_eq!(untouched.metadata.labels, foreign.metadata.labels);
    let annotations = untouched.metadata.annotations.unwrap_or_default();
    assert!(
        annotations
            .keys()
            .all(|key| !key.starts_with("jobs.toolforge.org/")),
        "{annotations:?}"
    );

    // Without the foreign job in the file, the adoption goes through: same object, labelled as ours.
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);
    let adopted = deployments(&cluster).get("bot").await.unwrap();
    assert_eq!(adopted.metadata.uid, bot.metadata.uid);
    assert_eq!(
        adopted.metadata.generation, bot.metadata.generation,
        "not restarted"
    );
    assert!(
        adopted
            .metadata
            .labels
            .unwrap()
            .contains_key("jobs.toolforge.org/inventory")
    );
    cluster.run(&["diff"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_needs_a_confirmation_and_respects_the_guards() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    let without_bot = JOBS.split("- name: bot").next().unwrap().to_owned();
    cluster.write_jobs(&without_bot);
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert_eq!(diff.row("bot").unwrap().0, "delete");

    let unconfirmed = cluster.run(&["apply"]).await;
    unconfirmed.expect_code(7);
    unconfirmed.expect_stderr("--yes");
    assert!(
        deployments(&cluster)
            .get_opt("bot")
            .await
            .unwrap()
            .is_some()
    );

    cluster.run(&["apply", "--yes"]).await.expect_code(0);
    assert!(
        deployments(&cluster)
            .get_opt("bot")
            .await
            .unwrap()
            .is_none()
    );

    // An empty list would delete everything: invalid unless `--allow-empty` says it is meant.
    cluster.write_jobs("[]\n");
    let empty = cluster.run(&["apply", "--yes"]).await;
    empty.expect_code(2);
    empty.expect_stderr("--allow-empty");
    let jobs_left = cron_jobs(&cluster);
    assert!(jobs_left.get_opt("nightly").await.unwrap().is_some());
    cluster
        .run(&["apply", "--yes", "--allow-empty"])
        .await
        .expect_code(0);
    assert!(jobs_left.get_opt("nightly").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_leaves_alone_a_recorded_name_whose_object_is_not_ours() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    // `bot` is deleted with upstream's CLI and re-created by it under the same name: framework labels, none of
    // this inventory's. The inventory still records `bot`.
    let upstream = deployments(&cluster)
        .patch("bot", &PatchParams::default(), &support::as_upstream_made())
        .await
        .unwrap();
    cluster.write_jobs(JOBS.split("- name: bot").next().unwrap());

    let apply = cluster
        .run(&["apply", "--yes", "--allow-mass-delete"])
        .await;
    apply.expect_code(0);
    let kept = deployments(&cluster).get("bot").await.unwrap();
    assert_eq!(kept.metadata.uid, upstream.metadata.uid, "{}", apply.stdout);
    assert!(apply.stdout.contains("not ours"), "{}", apply.stdout);
    // The record is dropped: the next apply has nothing to prune.
    let again = cluster.run(&["diff"]).await;
    again.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_stops_apply_with_the_holder_named() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let now = jiff::Timestamp::now().to_string();
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "toolforge-jobs"},
        "spec": {"holderIdentity": "watch by tools.mytool@tools-bastion (pid 7)",
            "leaseDurationSeconds": 60, "acquireTime": now, "renewTime": now}
    }))
    .unwrap();
    Api::<Lease>::namespaced(cluster.client.clone(), NAMESPACE)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();

    let apply = cluster.run(&["apply"]).await;
    apply.expect_code(6);
    apply.expect_stderr("held by watch by tools.mytool@tools-bastion (pid 7)");
    assert!(
        deployments(&cluster)
            .get_opt("bot")
            .await
            .unwrap()
            .is_none()
    );
    // `diff` takes no lock.
    cluster.run(&["diff"]).await.expect_code(3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_wait_one_off_stops_the_jobs_after_it_and_reports_why() {
    let script = Script::new(ContainerOutcome::RunForever).label(
        "app.kubernetes.io/name",
        "migrate",
        ContainerOutcome::Exit {
            code: 3,
            after: Duration::from_millis(20),
        },
    );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(JOBS);

    let apply = cluster.run(&["apply"]).await;
    apply.expect_code(4);
    apply.expect_stderr("BackoffLimitExceeded");
    apply.expect_stderr("exited with code 3");
    apply.expect_stderr("the jobs after it were not applied");
    assert!(
        deployments(&cluster)
            .get_opt("bot")
            .await
            .unwrap()
            .is_none()
    );

    // The failure is recorded: the next apply does not run it again by itself, and says how to.
    let diff = cluster.run(&["diff"]).await;
    diff.expect_stdout("--retry-failed");
    let first = jobs(&cluster).get("migrate").await.unwrap();
    let again = cluster.run(&["apply", "--retry-failed"]).await;
    again.expect_code(4);
    let second = jobs(&cluster).get("migrate").await.unwrap();
    assert_ne!(
        first.metadata.uid, second.metadata.uid,
        "run again on request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_wait_fails_early_on_an_image_pull_error_and_times_out_on_a_stuck_rollout() {
    let script = Script::new(ContainerOutcome::RunForever)
        .label(
            "app.kubernetes.io/name",
            "bot",
            ContainerOutcome::ImagePullError,
        )
        .label(
            "app.kubernetes.io/name",
            "web",
            ContainerOutcome::NeverReady,
        );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(JOBS);

    let started = std::time::Instant::now();
    let apply = cluster.run(&["apply", "--wait=60s"]).await;
    apply.expect_code(4);
    assert!(started.elapsed() < Duration::from_secs(30), "failed early");
    // The kubelet reports ErrImagePull, then ImagePullBackOff; failing at the first one seen is right.
    assert!(
        apply.stderr.contains("ImagePullBackOff") || apply.stderr.contains("ErrImagePull"),
        "no image pull error in stderr:\n{}",
        apply.stderr
    );

    cluster.write_jobs(&format!(
        "{JOBS}- name: web\n  command: ./web.sh\n  image: python3.11\n  continuous: true\n"
    ));
    // Without a terminal, a line every 10 s says what is still going on.
    let stuck = cluster.run(&["apply", "--wait=11s", "--job", "web"]).await;
    stuck.expect_code(5);
    stuck
        .expect_stderr("timed out")
        .expect_stderr("still working on web (");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_shows_in_the_plan_and_a_refused_pod_fails_the_wait_with_the_reason() {
    let cluster = Cluster::start().await;
    let quota: k8s_openapi::api::core::v1::ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "tool-mytool"},
        "spec": {"hard": {"count/deployments.apps": "0", "count/jobs.batch": "15", "pods": "0"}}
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(cluster.client.clone(), NAMESPACE)
        .create(&PostParams::default(), &quota)
        .await
        .unwrap();
    cluster.write_jobs(JOBS);

    // A Deployment over the count quota: the plan says so before anything is written.
    let diff = cluster.run(&["diff", "--no-server-dry-run"]).await;
    diff.expect_code(1);
    let over = diff
        .stdout
        .lines()
        .find(|line| line.contains("count/deployments.apps"))
        .unwrap();
    assert!(over.contains("over quota"), "{}", diff.stdout);
    assert!(over.contains("+1"), "{over}");
    // The server's dry run refuses it too, with Kubernetes' words.
    let dry = cluster.run(&["diff"]).await;
    assert!(
        dry.stdout.contains("exceeded quota: tool-mytool"),
        "{}",
        dry.stdout
    );

    // A pod over the quota is an error of the plan as well.
    cluster.write_jobs(JOBS.split("- name: nightly").next().unwrap());
    let pods = cluster.run(&["apply"]).await;
    pods.expect_code(1);
    assert!(pods.stdout.contains("over quota"), "{}", pods.stdout);

    // What the plan does not foresee (here: a LimitRange's limit-to-request ratio) the server refuses when the
    // Job controller creates the pod: the wait fails on that FailedCreate event, not at the deadline.
    Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(cluster.client.clone(), NAMESPACE)
        .delete("tool-mytool", &DeleteParams::default())
        .await
        .unwrap();
    let ratio: k8s_openapi::api::core::v1::LimitRange = serde_json::from_value(json!({
        "metadata": {"name": "ratio"},
        "spec": {"limits": [{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}]}
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::LimitRange>::namespaced(cluster.client.clone(), NAMESPACE)
        .create(&PostParams::default(), &ratio)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let apply = cluster.run(&["apply", "--wait=60s"]).await;
    apply.expect_code(4);
    assert!(started.elapsed() < Duration::from_secs(30), "failed early");
    apply.expect_stderr("cpu max limit to request ratio per Container is 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_in_place_replaces_on_request_reruns_on_trigger_files_and_ignores_others() {
    let cluster = Cluster::start().await;
    std::fs::write(
        cluster.directory.path().join("schema.sql"),
        "create table a;\n",
    )
    .unwrap();
    let file = "\
- name: migrate
  command: ./migrate.sh
  image: python3.11
  trigger-files: ['*.sql']
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
";
    cluster.write_jobs(file);
    cluster.run(&["apply", "--wait=60s"]).await.expect_code(0);
    let nightly = cron_jobs(&cluster).get("nightly").await.unwrap();
    let bot = deployments(&cluster).get("bot").await.unwrap();
    let migrate = jobs(&cluster).get("migrate").await.unwrap();

    // A job that `run` (or upstream) created: listed, never touched.
    let mut stray = bot.clone();
    stray.metadata = kube::api::ObjectMeta {
        name: Some("stray".to_owned()),
        labels: bot.metadata.labels.clone().map(|mut labels| {
            labels.remove("jobs.toolforge.org/inventory");
            labels.remove("applyset.kubernetes.io/part-of");
            labels.insert("app.kubernetes.io/name".to_owned(), "stray".to_owned());
            labels
        }),
        ..kube::api::ObjectMeta::default()
    };
    stray.status = None;
    deployments(&cluster)
        .create(&PostParams::default(), &stray)
        .await
        .unwrap();

    // A schedule change is an update in place; the changed trigger file re-runs the one-off.
    cluster.write_jobs(&file.replace("17 3 * * *", "18 3 * * *"));
    std::fs::write(
        cluster.directory.path().join("schema.sql"),
        "create table b;\n",
    )
    .unwrap();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(3);
    assert_eq!(diff.row("nightly").unwrap().0, "update", "{}", diff.stdout);
    assert_eq!(diff.row("migrate").unwrap().0, "replace", "{}", diff.stdout);
    assert_eq!(diff.row("stray").unwrap().0, "ignored", "{}", diff.stdout);
    cluster
        .run(&["apply", "--wait=60s", "--replace", "bot"])
        .await
        .expect_code(0);

    let updated = cron_jobs(&cluster).get("nightly").await.unwrap();
    assert_eq!(updated.metadata.uid, nightly.metadata.uid, "in place");
    assert_eq!(updated.spec.unwrap().schedule, "18 3 * * *");
    let replaced = deployments(&cluster).get("bot").await.unwrap();
    assert_ne!(
        replaced.metadata.uid, bot.metadata.uid,
        "--replace re-creates"
    );
    let rerun = jobs(&cluster).get("migrate").await.unwrap();
    assert_ne!(rerun.metadata.uid, migrate.metadata.uid, "a new run");
    assert!(
        deployments(&cluster)
            .get_opt("stray")
            .await
            .unwrap()
            .is_some()
    );
    cluster.run(&["diff"]).await.expect_code(0);
}

/// The requests made since the last reset, for assertion messages.
fn reads(cluster: &Cluster) -> String {
    format!("{:?}", cluster.local.request_counts())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_op_apply_of_300_scheduled_jobs_reads_their_kind_and_the_inventory_only() {
    let cluster = Cluster::start().await;
    let mut jobs = String::new();
    for index in 0..300 {
        writeln!(
            jobs,
            "- name: job-{index}\n  command: ./run.sh {index}\n  image: bookworm\n  schedule: '{} 3 * * *'",
            index % 60
        )
        .unwrap();
    }
    cluster.write_jobs(&jobs);
    cluster.run(&["apply"]).await.expect_code(0);

    cluster.local.reset_request_counts();
    let apply = cluster.run(&["apply"]).await;
    apply.expect_code(0);
    apply.expect_stdout("Plan: 300 unchanged; nothing to change");
    // CronJobs, their stored records, the inventory: nothing written, no lock taken.
    assert_eq!(cluster.requests(), 3, "{}", reads(&cluster));
    assert_eq!(cluster.local.request_count("list", "cronjobs"), 1);
    assert_eq!(
        cluster.local.request_count("list", "scheduled-jobs"),
        1,
        "{}",
        reads(&cluster)
    );
    assert_eq!(cluster.local.request_count("get", "configmaps"), 1);
}

/// One job of every kind, the continuous one with a port.
const EVERY_KIND: &str = "\
- name: migrate
  command: ./migrate.sh
  image: python3.11
  wait: true
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
- name: web
  command: ./serve.py
  image: python3.11
  continuous: true
  port: 8000
";

/// A cluster where [`EVERY_KIND`] was applied without waiting for `migrate`, whose Job succeeds soon after.
async fn every_kind_applied_without_waiting() -> Cluster {
    let cluster = Cluster::start().await;
    cluster.write_jobs(&EVERY_KIND.replace("  wait: true\n", ""));
    cluster.run(&["apply"]).await.expect_code(0);
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_a_run_is_recorded_from_the_first_read_alone() {
    let cluster = every_kind_applied_without_waiting().await;
    support::eventually(
        Duration::from_secs(20),
        "migrate's Job succeeded",
        || async {
            let job = jobs(&cluster).get("migrate").await.unwrap();
            job.status.and_then(|status| status.succeeded) == Some(1)
        },
    )
    .await;

    // Its end is not recorded: the Jobs are listed, and the diff says how it ended, with the six of a no-op.
    cluster.local.reset_request_counts();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);
    assert_eq!(diff.row("migrate").unwrap().0, "unchanged");
    diff.expect_stdout("ran with this definition: succeeded");
    assert_eq!(cluster.requests(), 7, "{}", reads(&cluster));

    // `apply` records it: the inventory is the only write, made from the same first read (no limits, quotas,
    // image table or identity).
    cluster.local.reset_request_counts();
    cluster.run(&["apply"]).await.expect_code(0);
    for (verb, resource) in [
        ("list", "limitranges"),
        ("list", "resourcequotas"),
        ("create", "jobs"),
        ("update", "deployments"),
        ("update", "cronjobs"),
    ] {
        assert_eq!(
            cluster.local.request_count(verb, resource),
            0,
            "{verb} {resource}: {}",
            reads(&cluster)
        );
    }
    assert_eq!(
        cluster.inventory().await["jobs"]["migrate"]["runs"][0]["outcome"],
        "succeeded"
    );

    cluster.local.reset_request_counts();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);
    assert_eq!(diff.row("migrate").unwrap().0, "done (succeeded)");
    assert_eq!(cluster.requests(), 6, "{}", reads(&cluster));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_job_went_unseen_is_recorded_over_and_needs_no_jobs_after() {
    let cluster = every_kind_applied_without_waiting().await;
    // As the TTL controller does 30 s after the Job ends, before any apply saw it end.
    jobs(&cluster)
        .delete("migrate", &DeleteParams::background())
        .await
        .unwrap();
    support::eventually(Duration::from_secs(20), "migrate's Job is gone", || async {
        jobs(&cluster).get_opt("migrate").await.unwrap().is_none()
    })
    .await;

    let apply = cluster.run(&["apply"]).await;
    apply.expect_code(0);
    assert_eq!(apply.row("migrate").unwrap().0, "done (unknown)");
    let run = &cluster.inventory().await["jobs"]["migrate"]["runs"][0];
    assert_eq!(run["outcome"], "unknown");
    assert!(run["finished"].is_string(), "recorded over: {run}");

    cluster.local.reset_request_counts();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);
    assert_eq!(diff.row("migrate").unwrap().0, "done (unknown)");
    assert_eq!(cluster.requests(), 6, "{}", reads(&cluster));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_op_of_every_kind_reads_six_times_and_lists_jobs_only_while_a_run_may_be_going() {
    let script = Script::new(ContainerOutcome::RunForever).label(
        "app.kubernetes.io/name",
        "forever",
        ContainerOutcome::RunForever,
    );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(EVERY_KIND);
    cluster.run(&["apply"]).await.expect_code(0);

    cluster.local.reset_request_counts();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);
    assert_eq!(diff.row("migrate").unwrap().0, "done (succeeded)");
    // CronJobs and ScheduledJobs; Deployments, the Services (`web` has a port) and ContinuousJobs; the inventory.
    // No Jobs: `migrate`'s run is recorded as ended.
    assert_eq!(cluster.requests(), 6, "{}", reads(&cluster));
    for resource in [
        "cronjobs",
        "scheduled-jobs",
        "deployments",
        "services",
        "continuous-jobs",
    ] {
        assert_eq!(
            cluster.local.request_count("list", resource),
            1,
            "{resource}: {}",
            reads(&cluster)
        );
    }

    // A one-off applied without waiting, still running: its end is not recorded, so the Jobs are listed (once the
    // inventory says so) and the no-op shows it running.
    let running = "- name: forever\n  command: ./forever.sh\n  image: bookworm\n";
    cluster.write_jobs(&format!("{EVERY_KIND}{running}"));
    cluster.run(&["apply"]).await.expect_code(0);
    cluster.local.reset_request_counts();
    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);
    assert_eq!(diff.row("forever").unwrap().0, "unchanged");
    diff.expect_stdout("the Job of this definition is running");
    assert_eq!(cluster.requests(), 7, "{}", reads(&cluster));
    assert_eq!(cluster.local.request_count("list", "jobs"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_a_kind_the_file_no_longer_uses_is_still_found_and_deleted() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    // The file keeps only the scheduled job: the inventory's one-off and continuous jobs are read all the same.
    let nightly = JOBS
        .split("- name: ")
        .find(|job| job.starts_with("nightly"))
        .unwrap();
    cluster.write_jobs(&format!("- name: {nightly}"));
    cluster.local.reset_request_counts();
    let diff = cluster
        .run(&["diff", "--no-server-dry-run", "--allow-mass-delete"])
        .await;
    diff.expect_code(3);
    assert_eq!(diff.row("bot").unwrap().0, "delete", "{}", diff.stdout);
    assert_eq!(diff.row("migrate").unwrap().0, "delete", "{}", diff.stdout);
    assert_eq!(diff.row("nightly").unwrap().0, "unchanged");
    // The file's kinds and the inventory, then — the inventory holding jobs the file no longer has — everything
    // else: Jobs, Deployments, Services, ContinuousJobs, the image table, the identity, limits and quotas.
    assert_eq!(cluster.requests(), 11, "{}", reads(&cluster));
    for resource in ["jobs", "deployments", "limitranges", "resourcequotas"] {
        assert_eq!(
            cluster.local.request_count("list", resource),
            1,
            "{resource}: {}",
            reads(&cluster)
        );
    }

    cluster
        .run(&["apply", "--yes", "--allow-mass-delete"])
        .await
        .expect_code(0);
    assert!(
        deployments(&cluster)
            .get_opt("bot")
            .await
            .unwrap()
            .is_none()
    );
    assert!(jobs(&cluster).get_opt("migrate").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_that_writes_reads_the_limits_quotas_and_image_table() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    cluster.write_jobs(&JOBS.replace("./nightly.sh", "./nightly.sh --verbose"));
    cluster.local.reset_request_counts();
    let diff = cluster.run(&["diff", "--no-server-dry-run"]).await;
    diff.expect_code(3);
    assert_eq!(diff.row("nightly").unwrap().0, "update", "{}", diff.stdout);
    // The six of a no-op, then what a plan that writes needs: the Services, the image table and the identity
    // (two GETs of ConfigMaps besides the inventory), the LimitRanges and the ResourceQuotas.
    assert_eq!(cluster.requests(), 11, "{}", reads(&cluster));
    assert_eq!(cluster.local.request_count("get", "configmaps"), 3);
    assert_eq!(cluster.local.request_count("list", "limitranges"), 1);
    assert_eq!(cluster.local.request_count("list", "resourcequotas"), 1);
    assert_eq!(
        cluster.local.request_count("list", "cronjobs"),
        1,
        "read once"
    );

    // A LimitRange the change exceeds is reported by the plan, as before.
    let limit_range: k8s_openapi::api::core::v1::LimitRange = serde_json::from_value(json!({
        "metadata": {"name": "limits"},
        "spec": {"limits": [{"type": "Container", "max": {"memory": "512Mi"}}]}
    }))
    .unwrap();
    Api::namespaced(cluster.client.clone(), NAMESPACE)
        .create(&PostParams::default(), &limit_range)
        .await
        .unwrap();
    cluster.write_jobs(&JOBS.replace("./bot.py", "./bot.py --verbose"));
    let refused = cluster.run(&["diff", "--no-server-dry-run"]).await;
    refused.expect_code(1);
    refused.expect_stdout("512Mi");
}

/// 100 jobs, half scheduled, half continuous (every other one with a port), each command ending in `suffix`.
fn hundred_jobs(suffix: &str) -> String {
    let mut jobs = String::new();
    for index in 0..100 {
        if index % 2 == 0 {
            writeln!(
                jobs,
                "- name: cron-{index}\n  command: ./report.sh {index}{suffix}\n  image: bookworm\n  schedule: '{} 3 * * *'",
                index % 60
            )
            .unwrap();
        } else {
            let port = if index % 4 == 1 {
                format!("\n  port: {}", 8000 + index)
            } else {
                String::new()
            };
            writeln!(
                jobs,
                "- name: bot-{index}\n  command: ./bot.py {index}{suffix}\n  image: python3.11\n  continuous: true{port}"
            )
            .unwrap();
        }
    }
    jobs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_apply_of_100_jobs_reads_the_live_state_once() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(&hundred_jobs(""));
    cluster.run(&["apply"]).await.expect_code(0);

    cluster.write_jobs(&hundred_jobs(" --changed"));
    cluster.local.reset_request_counts();
    let apply = cluster.run(&["apply"]).await;
    apply.expect_code(0);
    apply.expect_stdout("Plan: 100 update");
    assert!(
        apply.stderr.contains("applied: 100 of 100 jobs changed"),
        "{}",
        apply.stderr
    );
    // Every kind is listed once: under the lock the plan stands, since no apply wrote the inventory meanwhile.
    for resource in [
        "cronjobs",
        "scheduled-jobs",
        "deployments",
        "services",
        "continuous-jobs",
        "jobs",
        "limitranges",
        "resourcequotas",
    ] {
        assert_eq!(
            cluster.local.request_count("list", resource),
            1,
            "{resource}: {}",
            reads(&cluster)
        );
    }
    // The inventory, the image table and the identity, then the inventory's version under the lock.
    assert_eq!(
        cluster.local.request_count("get", "configmaps"),
        4,
        "{}",
        reads(&cluster)
    );
    // Two inventory writes: the jobs' records after their stage, the apply's record at its end.
    assert_eq!(
        cluster.local.request_count("update", "configmaps"),
        2,
        "{}",
        reads(&cluster)
    );
}

/// An applied `JOBS` whose `nightly` then changes, and an `apply` of the change held when it asks for the lock
/// (after it read and planned): the caller changes the cluster, then releases it.
async fn apply_held_at_the_lock() -> (Cluster, Background) {
    apply_of_held_at_the_lock(&JOBS.replace("./nightly.sh", "./nightly.sh --verbose")).await
}

/// An applied `JOBS`, and an `apply` of `changed` held when it asks for the lock.
async fn apply_of_held_at_the_lock(changed: &str) -> (Cluster, Background) {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    cluster.write_jobs(changed);
    cluster
        .local
        .hold(toolforge_local_cluster::Hold::after("get", "leases"));
    let apply = cluster.spawn(&["apply"]);
    tokio::time::timeout(Duration::from_secs(30), cluster.local.held())
        .await
        .unwrap_or_else(|_| panic!("the apply never asked for the lock:\n{}", apply.log()));
    (cluster, apply)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_that_wrote_between_the_read_and_the_lock_makes_the_plan_read_again() {
    let (cluster, mut apply) = apply_held_at_the_lock().await;
    // The apply has read and planned an update of `nightly` when it asks for the lock: held there, another
    // writer deletes the CronJob and writes the inventory, as every apply that writes does.
    cron_jobs(&cluster)
        .delete("nightly", &DeleteParams::default())
        .await
        .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    config_maps
        .patch(
            "toolforge-jobs",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"written": "by-another-apply"}}})),
        )
        .await
        .unwrap();
    cluster.local.reset_request_counts();
    cluster.local.release_held();

    // Planned again from what is there: `nightly` is created, not updated (a PUT of the deleted CronJob would
    // fail with 404).
    assert_eq!(apply.exit_code().await, 0, "{}", apply.log());
    verbose_nightly(&cluster).await;
    assert_eq!(
        cluster.local.request_count("list", "cronjobs"),
        1,
        "read again under the lock: {}",
        reads(&cluster)
    );
    assert_eq!(cluster.local.request_count("create", "cronjobs"), 1);
    assert_eq!(cluster.local.request_count("update", "cronjobs"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_written_since_the_read_is_no_conflict_of_the_plan() {
    let (cluster, mut apply) = apply_held_at_the_lock().await;
    // Held at the lock, the apply has planned an update of `nightly`; the CronJob controller writes its status,
    // which moves the resourceVersion as in Kubernetes (a Deployment rolling out does so several times).
    cron_jobs(&cluster)
        .patch_status(
            "nightly",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"lastScheduleTime": "2026-12-07T03:00:00Z"}})),
        )
        .await
        .unwrap();
    cluster.local.reset_request_counts();
    cluster.local.release_held();

    assert_eq!(apply.exit_code().await, 0, "{}", apply.log());
    assert!(
        !apply.log().contains("planning again"),
        "the plan stands: {}",
        apply.log()
    );
    assert!(
        apply.log().contains("applied: 1 of 3 jobs changed"),
        "{}",
        apply.log()
    );
    let nightly = verbose_nightly(&cluster).await;
    assert!(nightly.status.unwrap().last_schedule_time.is_some());
    // The conflict, then the update sent again after a read of the CronJob alone; nothing listed again.
    for (verb, expected) in [("update", 2), ("list", 0)] {
        assert_eq!(
            cluster.local.request_count(verb, "cronjobs"),
            expected,
            "{verb}: {}",
            reads(&cluster)
        );
    }
}

/// Somebody edits the CronJob `nightly` by hand (not through an apply: the inventory stays as it was), so an
/// update planned from what was listed before has a stale resourceVersion.
async fn edit_nightly_by_hand(cluster: &Cluster) {
    cron_jobs(cluster)
        .patch(
            "nightly",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"edited": "by-hand"}}})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_conflicts_makes_the_plan_read_again_once() {
    let (cluster, mut apply) = apply_held_at_the_lock().await;
    // Held at the lock, the apply has planned an update of `nightly` from the CronJob it listed.
    edit_nightly_by_hand(&cluster).await;
    cluster.local.reset_request_counts();
    cluster.local.release_held();

    assert_eq!(apply.exit_code().await, 0, "{}", apply.log());
    apply
        .wait_for_log("reading the live state again and planning again", 1)
        .await;
    verbose_nightly(&cluster).await;
    // The conflict, then the update made from the CronJob read again.
    assert_eq!(
        cluster.local.request_count("update", "cronjobs"),
        2,
        "{}",
        reads(&cluster)
    );
    assert_eq!(
        cluster.local.request_count("list", "cronjobs"),
        1,
        "{}",
        reads(&cluster)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_written_before_a_conflict_count_as_applied() {
    let changed = JOBS
        .replace("./nightly.sh", "./nightly.sh --verbose")
        .replace("./bot.py", "./bot.py --verbose");
    let (cluster, mut apply) = apply_of_held_at_the_lock(&changed).await;
    // `nightly` and `bot` are updated side by side; `nightly`'s update conflicts with a hand edit, `bot`'s goes
    // through, so the plan made again changes only `nightly`.
    edit_nightly_by_hand(&cluster).await;
    cluster.local.release_held();

    assert_eq!(apply.exit_code().await, 0, "{}", apply.log());
    apply
        .wait_for_log("reading the live state again and planning again", 1)
        .await;
    apply.wait_for_log("applied: 2 of 3 jobs changed", 1).await;
    verbose_nightly(&cluster).await;
}
