//! The awaiters of `apply --wait` (`toolforge_jobs::wait`) against the in-process local cluster with its
//! controllers and the scripted kubelet: Jobs that succeed, fail, cannot pull their image, crash-loop, run out of
//! memory, are refused by quota or deleted mid-wait, Deployments that roll out or never become ready, and deadlines.
//! Each test checks the outcome and what a person reads in the failure report. Delays are shortened through
//! `Controllers` and `Script` so each test takes about a second or less.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use toolforge_jobs::wait::{
    self, Cause, ContainerState, DeploymentTarget, FailureReport, JobTarget, LogSource, Outcome,
    Phase, Termination, WaitProgress,
};
use toolforge_local_cluster::{
    ContainerOutcome as Run, Controllers, Fault, Kubelet, LocalCluster, Options, Script,
};

const MS: Duration = Duration::from_millis(1);
/// Far enough that only a broken awaiter reaches it.
const PATIENCE: Duration = Duration::from_secs(20);
/// The rollouts' settle period, shorter than `wait::ROLLOUT_SETTLE` to keep the tests fast (scripted pods do not
/// live in real time); `tests/wait_rollout.rs` runs real processes with the default.
const SETTLE: Duration = Duration::from_millis(300);

async fn start(script: Script) -> (LocalCluster, Client) {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            job_backoff_base: 20 * MS,
            job_backoff_cap: 100 * MS,
            kubelet: Some(Kubelet::Scripted(script.restart_backoff(30 * MS))),
        }),
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

/// Creates Job `name` (one container `job` of `image`, restartPolicy Never unless `spec` says otherwise) and
/// returns what `apply` would wait for.
async fn create_job(client: &Client, name: &str, image: &str, spec: &Value) -> JobTarget {
    let mut body = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "job", "image": image, "command": ["run-it"]}]}}}
    });
    merge(&mut body["spec"], spec);
    let job: Job = serde_json::from_value(body).expect("valid job");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let created = jobs
        .create(&PostParams::default(), &job)
        .await
        .expect("created");
    JobTarget {
        job: name.to_owned(),
        namespace: "default".to_owned(),
        name: name.to_owned(),
        uid: created.uid().expect("uid"),
        file_log: None,
    }
}

fn merge(target: &mut Value, extra: &Value) {
    match (target, extra) {
        (Value::Object(target), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (target, extra) => *target = extra.clone(),
    }
}

/// Waits for `target` with `patience`, returning the outcome, every progress report and how long it took.
async fn wait_job(
    client: &Client,
    target: &JobTarget,
    patience: Duration,
) -> (Outcome, Vec<WaitProgress>, Duration) {
    let started = Instant::now();
    let mut seen = Vec::new();
    let outcome = Box::pin(wait::job(
        client,
        target,
        started + patience,
        &mut |p: &WaitProgress| {
            seen.push(p.clone());
        },
    ))
    .await
    .expect("watches work");
    (outcome, seen, started.elapsed())
}

/// Waits for `target` and, once a progress report satisfies `when`, runs `meanwhile` (so that it happens while
/// the waiter watches, without guessing a sleep).
async fn wait_job_and(
    client: &Client,
    target: &JobTarget,
    when: impl Fn(&WaitProgress) -> bool + Sync,
    meanwhile: impl Future<Output = ()>,
) -> Outcome {
    let reached = tokio::sync::Notify::new();
    let mut record = |p: &WaitProgress| {
        if when(p) {
            reached.notify_one();
        }
    };
    let waiting = Box::pin(wait::job(
        client,
        target,
        Instant::now() + PATIENCE,
        &mut record,
    ));
    let act = async {
        reached.notified().await;
        meanwhile.await;
    };
    let (outcome, ()) = tokio::join!(waiting, act);
    outcome.expect("watches work")
}

/// `count` lines `PREFIX 1` … `PREFIX count`, each ended by a newline.
fn numbered(prefix: &str, count: usize) -> String {
    let lines: Vec<String> = (1..=count).map(|n| format!("{prefix} {n}\n")).collect();
    lines.concat()
}

fn failure(outcome: Outcome) -> FailureReport {
    match outcome {
        Outcome::Failed(report) => *report,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_job_that_completes_succeeds_after_reporting_its_running_pod() {
    let (cluster, client) = start(Script::new(Run::Succeed { after: 300 * MS })).await;
    let target = create_job(&client, "hello", "busybox", &json!({})).await;
    let (outcome, progress, _) = wait_job(&client, &target, PATIENCE).await;
    assert_eq!(outcome, Outcome::Succeeded);
    // Watched, not polled: one list per watch, no GET.
    assert_eq!(cluster.request_count("get", "jobs"), 0);
    assert_eq!(
        (
            cluster.request_count("list", "jobs"),
            cluster.request_count("list", "pods")
        ),
        (1, 1)
    );
    assert!(
        progress.iter().any(|p| p.phase == Phase::Running
            && p.message.starts_with("pod `hello-")
            && p.message.ends_with("` is running")),
        "{progress:?}"
    );
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let done = jobs.get("hello").await.expect("job");
    assert_eq!(
        done.status.and_then(|s| s.succeeded),
        Some(1),
        "not before the Job really succeeded"
    );
}

#[tokio::test]
async fn a_job_past_its_backoff_limit_reports_the_reason_exit_codes_and_the_last_20_log_lines() {
    let output = numbered("step", 25);
    let script = Script::new(Run::Exit {
        code: 3,
        after: 10 * MS,
    })
    .output("busybox", &output);
    let (_cluster, client) = start(script).await;
    let target = create_job(&client, "crunch", "busybox", &json!({"backoffLimit": 1})).await;
    let report = failure(wait_job(&client, &target, PATIENCE).await.0);
    assert_eq!(
        report.cause,
        Cause::Condition {
            type_: "FailureTarget".to_owned(),
            reason: "BackoffLimitExceeded".to_owned(),
            message: "Job has reached the specified backoff limit".to_owned(),
        }
    );
    assert_eq!(report.pods.len(), 2, "both runs failed: {:?}", report.pods);
    for pod in &report.pods {
        assert_eq!(
            pod.state,
            ContainerState::Terminated(Termination {
                reason: "Error".to_owned(),
                exit_code: 3,
                message: None
            })
        );
    }
    let log = report.log.clone().expect("a log tail");
    assert_eq!(log.lines.len(), 20);
    assert_eq!(
        (log.lines[0].as_str(), log.lines[19].as_str()),
        ("step 6", "step 25")
    );
    assert!(
        matches!(&log.source, LogSource::Pod { pod, previous: false, .. } if *pod == report.pods[0].pod)
    );
    let text = report.to_string();
    let newest = &report.pods[0].pod;
    assert!(
        text.starts_with(&format!(
            "job `crunch` failed: BackoffLimitExceeded: Job has reached the specified backoff limit\n  \
             pod `{newest}`, container `job`: exited with code 3 (Error)\n"
        )),
        "{text}"
    );
    assert!(text.contains("\n  | step 25\n"), "{text}");
    assert!(
        text.ends_with(&format!(
            "full log: `toolforge-jobs logs crunch` or `kubectl logs {newest} -c job`"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn a_job_past_its_active_deadline_fails_with_deadline_exceeded() {
    let (_cluster, client) = start(Script::new(Run::RunForever)).await;
    // Long enough for its pod to be seen running on a busy machine.
    let spec = json!({"activeDeadlineSeconds": 3});
    let target = create_job(&client, "slow", "busybox", &spec).await;
    let (outcome, progress, _) = wait_job(&client, &target, PATIENCE).await;
    assert!(
        progress.iter().any(|p| p.phase == Phase::Running),
        "{progress:?}"
    );
    let report = failure(outcome);
    assert_eq!(report.cause.reason(), "DeadlineExceeded");
    // The local cluster removes a Job pod deleted while running at once (docs/local-cluster.md), so no pod line.
    assert!(
        report.to_string().starts_with(
            "job `slow` failed: DeadlineExceeded: Job was active longer than specified deadline"
        ),
        "{report}"
    );
}

#[tokio::test]
async fn an_image_pull_error_fails_the_job_early_instead_of_waiting_for_a_deadline() {
    let (_cluster, client) =
        start(Script::new(Run::Succeed { after: 10 * MS }).image("nope:1", Run::ImagePullError))
            .await;
    // Image pull errors never count as pod failures: only activeDeadlineSeconds would end this Job.
    let target = create_job(
        &client,
        "pull",
        "nope:1",
        &json!({"activeDeadlineSeconds": 600}),
    )
    .await;
    let (outcome, _, took) = wait_job(&client, &target, PATIENCE).await;
    let report = failure(outcome);
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let Cause::Pod { pod, reason } = &report.cause else {
        panic!("not a pod cause: {:?}", report.cause);
    };
    assert!(
        ["ErrImagePull", "ImagePullBackOff"].contains(&reason.as_str()),
        "{reason}"
    );
    assert!(report.to_string().starts_with(&format!(
        "job `pull` failed: pod `{pod}` cannot start ({reason})\n"
    )));
    assert_eq!(report.log, None, "the container never ran");
    let events: Vec<(&str, &str)> = report
        .events
        .iter()
        .map(|e| (e.reason.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(
        events,
        [(
            "Failed",
            "Failed to pull image \"nope:1\": rpc error: code = NotFound desc = failed to pull and unpack image \
             \"nope:1\": failed to resolve reference \"nope:1\": not found"
        )],
        "the pull error, not the bare `Error: ErrImagePull`"
    );
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job = jobs.get("pull").await.expect("job");
    assert_eq!(
        job.status.and_then(|s| s.failed),
        None,
        "the controller counted no failure"
    );
}

#[tokio::test]
async fn a_crash_looping_job_fails_after_the_grace_restarts_with_the_crashed_runs_log() {
    let script = Script::new(Run::Exit {
        code: 1,
        after: Duration::ZERO,
    })
    .output("busybox", "cannot open db.sqlite\n");
    let (_cluster, client) = start(script).await;
    let spec = json!({"backoffLimit": 50, "template": {"spec": {"restartPolicy": "OnFailure"}}});
    let target = create_job(&client, "loop", "busybox", &spec).await;
    let report = failure(wait_job(&client, &target, PATIENCE).await.0);
    assert_eq!(report.cause.reason(), "CrashLoopBackOff");
    let pod = &report.pods[0];
    assert!(pod.restarts >= wait::CRASH_LOOP_RESTARTS, "{pod:?}");
    assert_eq!(pod.last_termination.as_ref().map(|t| t.exit_code), Some(1));
    let log = report.log.clone().expect("a log tail");
    assert_eq!(log.lines, ["cannot open db.sqlite"]);
    assert!(matches!(log.source, LogSource::Pod { previous: true, .. }));
    let text = report.to_string();
    assert!(
        text.starts_with(&format!(
            "job `loop` failed: pod `{}` keeps crashing (CrashLoopBackOff)",
            pod.pod
        )),
        "{text}"
    );
    assert!(
        text.contains("last run exited with code 1 (Error)"),
        "{text}"
    );
    assert!(text.contains("-c job --previous`"), "{text}");
    assert!(
        report.events.iter().all(|e| e.reason != "BackOff"),
        "restarts are on the pod's line: {:?}",
        report.events
    );
}

#[tokio::test]
async fn an_oom_killed_job_says_it_ran_out_of_memory() {
    let (_cluster, client) = start(Script::new(Run::OomKilled { after: 10 * MS })).await;
    let target = create_job(&client, "hungry", "busybox", &json!({"backoffLimit": 0})).await;
    let report = failure(wait_job(&client, &target, PATIENCE).await.0);
    assert_eq!(report.cause.reason(), "BackoffLimitExceeded");
    assert_eq!(report.pods.len(), 1);
    assert_eq!(report.pods[0].reason(), "OOMKilled");
    assert!(
        report
            .to_string()
            .contains("container `job`: killed for using more memory than its limit (OOMKilled, exit code 137)"),
        "{report}"
    );
}

#[tokio::test]
async fn a_job_whose_pods_are_refused_by_quota_fails_with_the_failed_create_message() {
    let (_cluster, client) = start(Script::new(Run::Succeed { after: 10 * MS })).await;
    // Suspended: no pod is created, as when quota refuses every pod; the Event is what the controller records then.
    let target = create_job(&client, "big", "busybox", &json!({"suspend": true})).await;
    let message = "Error creating: pods \"big-x2b4k\" is forbidden: exceeded quota: tool-quota, requested: \
                   limits.memory=8Gi, used: limits.memory=0, limited: limits.memory=4Gi";
    let refuse = async {
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "big.quota"},
            "involvedObject": {"kind": "Job", "namespace": "default", "name": "big", "uid": target.uid,
                "apiVersion": "batch/v1"},
            "type": "Warning", "reason": "FailedCreate", "message": message, "count": 2,
            "source": {"component": "job-controller"},
        }))
        .expect("valid event");
        let events: Api<Event> = Api::default_namespaced(client.clone());
        events
            .create(&PostParams::default(), &event)
            .await
            .expect("event created");
    };
    let suspended = |p: &WaitProgress| p.message == "the Job is suspended";
    let outcome = wait_job_and(&client, &target, suspended, refuse).await;
    let report = failure(outcome);
    assert_eq!(
        report.cause,
        Cause::FailedCreate {
            message: message.to_owned()
        }
    );
    assert_eq!(
        report.to_string(),
        format!("job `big` failed: pods cannot be created: {message}")
    );
}

#[tokio::test]
async fn a_job_deleted_before_it_finished_is_a_failure() {
    let (_cluster, client) = start(Script::new(Run::RunForever)).await;
    let target = create_job(&client, "doomed", "busybox", &json!({})).await;
    let delete = async {
        let jobs: Api<Job> = Api::default_namespaced(client.clone());
        jobs.delete("doomed", &DeleteParams::background())
            .await
            .expect("deleted");
    };
    // Deleted while its pod runs.
    let outcome = wait_job_and(&client, &target, |p| p.phase == Phase::Running, delete).await;
    let report = failure(outcome);
    assert_eq!(report.cause, Cause::Deleted { replaced: false });
    assert!(
        report
            .to_string()
            .starts_with("job `doomed` failed: Job `doomed` was deleted before it finished"),
        "{report}"
    );
}

#[tokio::test]
async fn a_job_replaced_by_another_of_the_same_name_is_not_ours() {
    let (_cluster, client) = start(Script::new(Run::Succeed { after: 10 * MS })).await;
    let first = create_job(&client, "again", "busybox", &json!({"suspend": true})).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.delete("again", &DeleteParams::background())
        .await
        .expect("deleted");
    // The new Job completes; the old one (our UID) never did.
    let second = create_job(&client, "again", "busybox", &json!({})).await;
    assert_ne!(first.uid, second.uid);
    let report = failure(wait_job(&client, &first, PATIENCE).await.0);
    assert_eq!(report.cause, Cause::Deleted { replaced: true });
    assert_eq!(
        wait_job(&client, &second, PATIENCE).await.0,
        Outcome::Succeeded
    );
}

#[tokio::test]
async fn a_job_cleaned_up_by_its_ttl_right_after_succeeding_is_finished_not_failed() {
    let (cluster, client) = start(Script::new(Run::Succeed { after: 300 * MS })).await;
    // The first list of Warning Events fails: the watcher retries after its back-off, and by then the Job has
    // succeeded and its TTL of 0 has deleted it. Its last state seen was Complete.
    cluster.inject_fault(Fault::new("list", "events", 500, 1));
    let target = create_job(
        &client,
        "brief",
        "busybox",
        &json!({"ttlSecondsAfterFinished": 0}),
    )
    .await;
    let (outcome, _, _) = wait_job(&client, &target, PATIENCE).await;
    assert_eq!(outcome, Outcome::CleanedUp);
    assert!(outcome.is_success());
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    assert!(
        jobs.get_opt("brief").await.expect("read").is_none(),
        "the TTL deleted it"
    );
}

#[tokio::test]
async fn a_failure_report_shows_the_file_log_when_the_job_logs_to_a_file() {
    let home = tempfile::tempdir().expect("temp dir");
    let file: PathBuf = home.path().join("report.err");
    let lines = numbered("err", 30);
    std::fs::write(&file, lines).expect("written");
    let (_cluster, client) = start(
        Script::new(Run::Exit {
            code: 2,
            after: 10 * MS,
        })
        .output("", "ignored\n"),
    )
    .await;
    let mut target = create_job(&client, "report", "busybox", &json!({"backoffLimit": 0})).await;
    target.file_log = Some(file.clone());
    let report = failure(wait_job(&client, &target, PATIENCE).await.0);
    let log = report.log.clone().expect("a log tail");
    assert_eq!(log.source, LogSource::File(file.clone()));
    assert_eq!(log.lines.first().map(String::as_str), Some("err 11"));
    assert!(
        report.to_string().ends_with(&format!(
            "full log: `{}` in the tool's home",
            file.display()
        )),
        "{report}"
    );
}

#[tokio::test]
async fn the_deadline_ends_the_wait_with_the_last_progress() {
    let (_cluster, client) = start(Script::new(Run::RunForever)).await;
    let target = create_job(&client, "forever", "busybox", &json!({})).await;
    let (outcome, _, took) = wait_job(&client, &target, 500 * MS).await;
    let Outcome::TimedOut(last) = outcome else {
        panic!("not timed out: {outcome:?}");
    };
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    assert_eq!(last.phase, Phase::Running);
    assert!(
        last.message.starts_with("pod `forever-") && last.message.ends_with("` is running"),
        "{last}"
    );
    assert!(last.elapsed >= 500 * MS, "{last:?}");
}

/// Creates or updates Deployment `name` (`replicas` pods of `image`) and returns what `apply` would wait for.
async fn apply_deployment(
    client: &Client,
    name: &str,
    image: &str,
    spec: &Value,
) -> DeploymentTarget {
    let mut body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image}]}}}
    });
    merge(&mut body["spec"], spec);
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let params = PatchParams::apply("toolforge-jobs").force();
    let written = deployments
        .patch(name, &params, &Patch::Apply(&body))
        .await
        .expect("applied");
    DeploymentTarget {
        job: name.to_owned(),
        namespace: "default".to_owned(),
        name: name.to_owned(),
        uid: written.uid().expect("uid"),
        generation: written.metadata.generation.expect("generation"),
        file_log: None,
    }
}

async fn wait_deployment(
    client: &Client,
    target: &DeploymentTarget,
) -> (Outcome, Vec<WaitProgress>, Duration) {
    let started = Instant::now();
    let mut seen = Vec::new();
    let outcome = Box::pin(wait::deployment_settling(
        client,
        target,
        SETTLE,
        started + PATIENCE,
        &mut |p: &WaitProgress| {
            seen.push(p.clone());
        },
    ))
    .await
    .expect("watches work");
    (outcome, seen, started.elapsed())
}

#[tokio::test]
async fn a_deployment_rollout_succeeds_only_once_our_generation_is_fully_available() {
    let (cluster, client) = start(Script::new(Run::RunForever).start_delay(100 * MS)).await;
    let first = apply_deployment(&client, "web", "busybox:1", &json!({})).await;
    assert_eq!(wait_deployment(&client, &first).await.0, Outcome::Succeeded);

    // Wait for the next generation before writing it: the first rollout's complete status must not count.
    let next = DeploymentTarget {
        generation: first.generation + 1,
        ..first.clone()
    };
    // A failing read is retried: the server's 500 is transient.
    cluster.inject_fault(Fault::new("get", "deployments", 500, 1));
    let observing = tokio::sync::Notify::new();
    let mut progress = Vec::new();
    let mut record = |p: &WaitProgress| {
        if p.phase == Phase::Observing {
            observing.notify_one();
        }
        progress.push(p.clone());
    };
    let waiting = Box::pin(wait::deployment_settling(
        &client,
        &next,
        SETTLE,
        Instant::now() + PATIENCE,
        &mut record,
    ));
    let write = async {
        observing.notified().await;
        apply_deployment(&client, "web", "busybox:2", &json!({})).await
    };
    let (outcome, second) = tokio::join!(waiting, write);
    assert_eq!(second.generation, next.generation);
    assert_eq!(
        outcome.expect("watches work"),
        Outcome::Succeeded,
        "{progress:?}"
    );
    assert_eq!(
        progress[1].message,
        format!(
            "waiting for the Deployment controller to observe generation {}",
            next.generation
        )
    );
    assert!(
        progress.iter().any(|p| p.phase == Phase::RollingOut),
        "{progress:?}"
    );
    assert_eq!(
        cluster.request_count("get", "deployments"),
        3,
        "one read per wait, one retried"
    );
    // Not fooled by the first rollout's status: the new ReplicaSet runs every replica, the old one none.
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let status = deployments
        .get("web")
        .await
        .expect("deployment")
        .status
        .expect("status");
    assert_eq!(status.observed_generation, Some(second.generation));
    assert_eq!(
        (
            status.updated_replicas,
            status.available_replicas,
            status.replicas
        ),
        (Some(2), Some(2), Some(2))
    );
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let mut running: Vec<(String, i32)> = sets
        .list(&ListParams::default())
        .await
        .expect("replicasets")
        .items
        .into_iter()
        .map(|set| {
            let image = set
                .spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .and_then(|t| t.spec.as_ref())
                .map(|s| s.containers[0].image.clone().unwrap_or_default())
                .unwrap_or_default();
            (image, set.status.map_or(0, |s| s.replicas))
        })
        .collect();
    running.sort();
    assert_eq!(
        running,
        [("busybox:1".to_owned(), 0), ("busybox:2".to_owned(), 2)]
    );
}

#[tokio::test]
async fn a_deployment_that_never_becomes_ready_fails_at_its_progress_deadline() {
    let (_cluster, client) =
        start(Script::new(Run::NeverReady).output("", "listening on 8000\n")).await;
    let target = apply_deployment(
        &client,
        "shy",
        "busybox",
        &json!({"replicas": 1, "progressDeadlineSeconds": 1}),
    )
    .await;
    let report = failure(wait_deployment(&client, &target).await.0);
    assert_eq!(report.cause.reason(), "ProgressDeadlineExceeded");
    let pod = &report.pods[0].pod;
    assert_eq!(
        report.pods[0].state,
        ContainerState::Running { ready: false }
    );
    let text = report.to_string();
    assert!(
        text.starts_with("job `shy` did not roll out: ProgressDeadlineExceeded: ReplicaSet \"shy-"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\n  pod `{pod}`, container `web`: running but not ready\n"
        )),
        "{text}"
    );
    assert!(text.contains("\n  | listening on 8000\n"), "{text}");
}

#[tokio::test]
async fn a_deployment_whose_new_pods_cannot_pull_their_image_fails_early() {
    let (_cluster, client) =
        start(Script::new(Run::RunForever).image("nope:2", Run::ImagePullError)).await;
    let good = apply_deployment(&client, "api", "busybox:1", &json!({})).await;
    assert_eq!(wait_deployment(&client, &good).await.0, Outcome::Succeeded);
    let bad = apply_deployment(&client, "api", "nope:2", &json!({})).await;
    let (outcome, _, took) = wait_deployment(&client, &bad).await;
    let report = failure(outcome);
    assert!(
        took < Duration::from_secs(5),
        "the default progress deadline is 10 minutes; took {took:?}"
    );
    assert!(
        ["ErrImagePull", "ImagePullBackOff"].contains(&report.cause.reason()),
        "{report}"
    );
    assert!(
        report
            .to_string()
            .starts_with("job `api` did not roll out: pod `api-"),
        "{report}"
    );
}

#[tokio::test]
async fn a_crash_looping_deployment_fails_after_the_grace_restarts() {
    let script = Script::new(Run::Exit {
        code: 2,
        after: Duration::ZERO,
    })
    .output("", "Traceback: KeyError 'TOKEN'\n");
    let (_cluster, client) = start(script).await;
    let target = apply_deployment(&client, "bot", "busybox", &json!({"replicas": 1})).await;
    let report = failure(wait_deployment(&client, &target).await.0);
    assert_eq!(report.cause.reason(), "CrashLoopBackOff");
    assert_eq!(
        report.log.as_ref().map(|l| l.lines.clone()),
        Some(vec!["Traceback: KeyError 'TOKEN'".to_owned()])
    );
    assert!(
        report
            .to_string()
            .contains("last run exited with code 2 (Error)"),
        "{report}"
    );
}

#[tokio::test]
async fn a_deployment_whose_pods_exit_0_after_a_ready_start_fails_within_the_settle_period() {
    // Each run starts (and is reported Ready) and exits 0 after 100 ms, within the 300 ms settle period.
    let script = Script::new(Run::Exit {
        code: 0,
        after: 100 * MS,
    })
    .output("", "serving\n");
    let (_cluster, client) = start(script).await;
    let target = apply_deployment(&client, "bot", "busybox", &json!({"replicas": 1})).await;
    let (outcome, progress, took) = wait_deployment(&client, &target).await;
    let report = failure(outcome);
    assert_eq!(report.cause.reason(), "CrashLoopBackOff", "{progress:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(
        report.to_string().contains("last run exited with code 0"),
        "{report}"
    );
    assert_eq!(
        report.log.as_ref().map(|l| l.lines.clone()),
        Some(vec!["serving".to_owned()])
    );
}
