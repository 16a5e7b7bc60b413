//! The cluster clock: with `Options::clock_speed` at 1000, Kubernetes' real durations (a 30-second TTL, a
//! one-minute cron schedule, a 60-second progress deadline, 10-second back-offs) pass in milliseconds of real
//! time, while every time the cluster writes stays consistent with them; at speed 1 the cluster keeps real time.

mod support;

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use support::eventually;
use toolforge_local_cluster::{
    ContainerOutcome, Controllers, Kubelet, LocalCluster, Options, Script,
};

const FAST: f64 = 1000.0;

/// A cluster with Kubernetes' own delays (10 s back-off from a failure, 10 s crash-loop back-off) whose clock
/// runs at `speed`.
async fn start(script: Script, speed: f64) -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            kubelet: Some(Kubelet::Scripted(script)),
            ..Controllers::default()
        }),
        clock_speed: speed,
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

fn job(name: &str, spec: &Value) -> Job {
    let mut body = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["run-it"]}]}}}
    });
    if let (Some(target), Some(extra)) = (body["spec"].as_object_mut(), spec.as_object()) {
        target.extend(extra.clone());
    }
    serde_json::from_value(body).expect("valid job")
}

fn time(text: Option<&str>) -> jiff::Timestamp {
    text.expect("a time").parse().expect("RFC 3339")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_speed_1000_a_job_with_a_30_second_ttl_is_deleted_well_within_a_second() {
    let (cluster, client) = start(
        Script::new(ContainerOutcome::Succeed {
            after: Duration::from_secs(5),
        }),
        FAST,
    )
    .await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let began = Instant::now();
    let version = jobs
        .create(
            &PostParams::default(),
            &job("brief", &json!({"ttlSecondsAfterFinished": 30})),
        )
        .await
        .expect("created")
        .metadata
        .resource_version
        .expect("a resource version");
    // The Job's times are cluster times: it ran its 5 seconds. It lives 30 ms of real time once complete, less
    // than a poll may take on a loaded machine: its watch events show every state it passed through.
    let mut events = jobs
        .watch(
            &WatchParams::default()
                .fields("metadata.name=brief")
                .timeout(10),
            &version,
        )
        .await
        .expect("watch works")
        .boxed();
    let mut finished = None;
    while let Some(event) = events.try_next().await.expect("watch works") {
        match event {
            WatchEvent::Modified(job)
                if job
                    .status
                    .as_ref()
                    .is_some_and(|status| status.completion_time.is_some()) =>
            {
                finished.get_or_insert(job);
            }
            WatchEvent::Deleted(_) => break,
            _ => {}
        }
    }
    let finished = finished.expect("the job completed before it was deleted");
    let status = finished.status.expect("status");
    let ran = time(status.completion_time.map(|t| t.0.to_string()).as_deref())
        .duration_since(time(status.start_time.map(|t| t.0.to_string()).as_deref()));
    assert!(ran >= jiff::SignedDuration::from_secs(4), "ran {ran:?}");
    let real = began.elapsed();
    assert!(real < Duration::from_secs(1), "took {real:?}");
    // 35 cluster seconds (and then some) passed in that real time.
    let created = time(
        finished
            .metadata
            .creation_timestamp
            .map(|t| t.0.to_string())
            .as_deref(),
    );
    assert!(cluster.clock().now().duration_since(created) >= jiff::SignedDuration::from_secs(35));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_speed_1000_a_cronjob_every_minute_creates_a_job_within_a_second() {
    let (_cluster, client) = start(
        Script::new(ContainerOutcome::Succeed {
            after: Duration::from_secs(1),
        }),
        FAST,
    )
    .await;
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    let cronjob: CronJob = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "every"},
        "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}}
    }))
    .expect("valid cronjob");
    let began = Instant::now();
    let created = cronjobs
        .create(&PostParams::default(), &cronjob)
        .await
        .expect("created");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job = eventually("the scheduled job", || async {
        let listed = jobs
            .list(&ListParams::default())
            .await
            .expect("jobs listed");
        listed.items.into_iter().next()
    })
    .await;
    let real = began.elapsed();
    assert!(real < Duration::from_secs(1), "took {real:?}");
    // Scheduled at the first whole minute after the CronJob was created, in cluster time.
    let scheduled = time(
        job.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("batch.kubernetes.io/cronjob-scheduled-timestamp"))
            .map(String::as_str),
    );
    let since = scheduled.duration_since(time(
        created
            .metadata
            .creation_timestamp
            .map(|t| t.0.to_string())
            .as_deref(),
    ));
    assert_eq!(scheduled.as_second() % 60, 0);
    assert!(
        since > jiff::SignedDuration::ZERO && since <= jiff::SignedDuration::from_mins(1),
        "{since:?}"
    );
    let seen = eventually("lastScheduleTime", || async {
        let cronjob = cronjobs.get("every").await.expect("cronjob");
        cronjob.status?.last_schedule_time
    })
    .await;
    assert!(time(Some(&seen.0.to_string())) >= scheduled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_speed_1000_a_never_ready_deployment_exceeds_a_60_second_progress_deadline_quickly() {
    let (_cluster, client) = start(Script::new(ContainerOutcome::NeverReady), FAST).await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "stuck"},
        "spec": {"replicas": 1, "progressDeadlineSeconds": 60, "selector": {"matchLabels": {"app": "stuck"}},
            "template": {"metadata": {"labels": {"app": "stuck"}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
    }))
    .expect("valid deployment");
    let began = Instant::now();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let progressing = eventually("ProgressDeadlineExceeded", || async {
        let d = deployments.get("stuck").await.expect("deployment");
        d.status?
            .conditions?
            .into_iter()
            .find(|c| c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
    })
    .await;
    let real = began.elapsed();
    assert!(real < Duration::from_secs(2), "took {real:?}");
    assert_eq!(
        (progressing.type_.as_str(), progressing.status.as_str()),
        ("Progressing", "False")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_speed_1000_back_offs_of_10_seconds_let_a_failing_job_fail_quickly() {
    let (_cluster, client) = start(
        Script::new(ContainerOutcome::Exit {
            code: 1,
            after: Duration::from_secs(1),
        }),
        FAST,
    )
    .await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let began = Instant::now();
    jobs.create(
        &PostParams::default(),
        &job("flaky", &json!({"backoffLimit": 2})),
    )
    .await
    .expect("created");
    let failed = eventually("the job to fail", || async {
        let job = jobs.get("flaky").await.expect("job");
        let status = job.status?;
        status
            .conditions
            .as_ref()?
            .iter()
            .any(|c| c.type_ == "Failed" && c.status == "True")
            .then_some(status)
    })
    .await;
    let real = began.elapsed();
    // Three runs and back-offs of 10 s and 20 s: over 30 cluster seconds.
    assert_eq!(failed.failed, Some(3));
    assert!(real < Duration::from_secs(2), "took {real:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_speed_1_the_cluster_keeps_real_time() {
    let (cluster, client) = start(
        Script::new(ContainerOutcome::Succeed {
            after: Duration::from_millis(10),
        }),
        1.0,
    )
    .await;
    let drift = cluster.clock().now().duration_since(jiff::Timestamp::now());
    assert!(
        drift.abs() < jiff::SignedDuration::from_millis(100),
        "{drift:?}"
    );
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let began = Instant::now();
    jobs.create(
        &PostParams::default(),
        &job("brief", &json!({"ttlSecondsAfterFinished": 2})),
    )
    .await
    .expect("created");
    eventually("the job to be deleted", || async {
        jobs.get_opt("brief")
            .await
            .expect("get works")
            .is_none()
            .then_some(())
    })
    .await;
    // The two-second TTL takes real seconds: at least one, as the completion time has second precision.
    let real = began.elapsed();
    assert!(real >= Duration::from_secs(1), "took {real:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_at_different_speeds_run_side_by_side() {
    let (slow, _) = start(Script::new(ContainerOutcome::RunForever), 1.0).await;
    let (fast, _) = start(Script::new(ContainerOutcome::RunForever), FAST).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let now = jiff::Timestamp::now();
    let slow_drift = slow.clock().now().duration_since(now);
    let fast_drift = fast.clock().now().duration_since(now);
    assert!(
        slow_drift.abs() < jiff::SignedDuration::from_millis(100),
        "{slow_drift:?}"
    );
    assert!(
        fast_drift >= jiff::SignedDuration::from_secs(40),
        "{fast_drift:?}"
    );
}
