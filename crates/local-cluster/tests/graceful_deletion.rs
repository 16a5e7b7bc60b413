//! Graceful termination when controllers, the garbage collector and kubectl delete Job pods (reference §1.9,
//! §3.2, §3.5): every path deletes the pod through the API with its grace period, the kubelet sends SIGTERM and
//! waits, and whoever waits for the pod (foreground deletion, the Job's terminal condition) waits for its exit.
//! The pods are real processes that trap TERM, take a moment to exit, and leave a file saying they got it.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use serde_json::{Value, json};
use support::{Kubectl, eventually};
use toolforge_local_cluster::{
    Controllers, ImagePolicy, Kubelet, LocalCluster, Options, ProcessOptions,
};

/// How long a pod takes to exit after SIGTERM (its trap sleeps this long, then writes its file).
const EXIT_AFTER_TERM: Duration = Duration::from_secs(1);

/// A container that runs until SIGTERM, then takes [`EXIT_AFTER_TERM`], writes `$HOME/termed-<pid>` and exits
/// 143 as a process ended by SIGTERM does (exit 0 would make the deleted pod `Succeeded`, as a kubelet reports it).
fn trapping_container() -> Value {
    let script = "trap 'sleep 1; echo TERM > \"$HOME/termed-$$\"; exit 143' TERM; echo started; sleep 600 & wait";
    json!({"name": "main", "image": "busybox", "command": ["/bin/sh", "-c", "--", script]})
}

fn job_template(grace: i64) -> Value {
    json!({"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": grace,
        "containers": [trapping_container()]}})
}

fn job(name: &str, extra: &Value) -> Job {
    let mut spec = json!({"backoffLimit": 0, "template": job_template(30)});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": spec}),
    )
    .expect("valid job")
}

async fn start(home: &Path, clock_speed: f64) -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            job_backoff_base: Duration::from_millis(20),
            job_backoff_cap: Duration::from_millis(100),
            kubelet: Some(Kubelet::Process(ProcessOptions {
                tool_data_dir: Some(home.to_path_buf()),
                restart_backoff: Duration::from_millis(30),
                images: ImagePolicy::Any,
            })),
        }),
        clock_speed,
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

/// How many pods wrote their SIGTERM file.
fn termed(home: &Path) -> usize {
    std::fs::read_dir(home).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("termed-"))
            .count()
    })
}

async fn pods_of(client: &kube::Client, job: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await
        .expect("pods listed")
        .items
}

/// Waits until the Job's pod runs its process.
async fn running(client: &kube::Client, job: &str) {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    eventually("the pod's process runs", || async {
        let pod = pods_of(client, job).await.into_iter().next()?;
        let name = pod.metadata.name?;
        let log = pods.logs(&name, &LogParams::default()).await.ok()?;
        (log == "started\n").then_some(())
    })
    .await;
}

fn condition(job: &Job, type_: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .map(|c| {
            (
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_job_terminates_its_pod_gracefully_and_foreground_waits_for_the_exit() {
    let home = tempfile::tempdir().expect("temp dir");
    let (cluster, client) = start(home.path(), 1.0).await;
    let kubectl = Kubectl::new(&cluster);
    let jobs: Api<Job> = Api::default_namespaced(client.clone());

    // Background (kubectl's default): the Job goes at once, its pod gets SIGTERM and its time to exit.
    jobs.create(&PostParams::default(), &job("background", &json!({})))
        .await
        .expect("job");
    running(&client, "background").await;
    kubectl.ok(&["delete", "job", "background"]).await;
    let pod = pods_of(&client, "background").await;
    assert_eq!(pod.len(), 1, "the pod is still terminating");
    assert!(pod[0].metadata.deletion_timestamp.is_some());
    eventually("the pod is gone", || async {
        pods_of(&client, "background")
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    assert_eq!(termed(home.path()), 1, "the process got SIGTERM");

    // Foreground: kubectl waits until the pod has exited and is gone, as long as its trap takes.
    jobs.create(&PostParams::default(), &job("foreground", &json!({})))
        .await
        .expect("job");
    running(&client, "foreground").await;
    let begun = Instant::now();
    kubectl
        .ok(&["delete", "job", "foreground", "--cascade=foreground"])
        .await;
    let took = begun.elapsed();
    assert!(
        took >= EXIT_AFTER_TERM,
        "kubectl returned after {took:?}, before the pod exited"
    );
    assert_eq!(termed(home.path()), 2, "the pod exited through its trap");
    assert!(pods_of(&client, "foreground").await.is_empty());
    assert!(jobs.get_opt("foreground").await.expect("get").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shorter_grace_period_on_delete_is_the_one_the_pod_gets() {
    let home = tempfile::tempdir().expect("temp dir");
    let (cluster, client) = start(home.path(), 1.0).await;
    let kubectl = Kubectl::new(&cluster);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let stubborn = json!({"name": "main", "image": "busybox",
        "command": ["/bin/sh", "-c", "--", "trap '' TERM; echo started; exec sleep 600"]});
    let pod: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stubborn"},
        "spec": {"terminationGracePeriodSeconds": 30, "containers": [stubborn]}}))
    .expect("valid pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod");
    eventually("the process runs", || async {
        let log = pods.logs("stubborn", &LogParams::default()).await.ok()?;
        (log == "started\n").then_some(())
    })
    .await;
    let begun = Instant::now();
    kubectl
        .ok(&["delete", "pod", "stubborn", "--grace-period=1"])
        .await;
    let took = begun.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(10),
        "the pod ignoring SIGTERM was killed after the 1 s asked for, not 30 s ({took:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspending_a_job_terminates_its_pod_gracefully_and_counts_it_as_terminating() {
    let home = tempfile::tempdir().expect("temp dir");
    let (_cluster, client) = start(home.path(), 1.0).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("pausing", &json!({})))
        .await
        .expect("job");
    running(&client, "pausing").await;
    jobs.patch(
        "pausing",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": true}})),
    )
    .await
    .expect("suspended");
    let status = eventually("the pod counts as terminating", || async {
        let status = jobs.get("pausing").await.ok()?.status?;
        (status.terminating == Some(1)).then_some(status)
    })
    .await;
    assert_eq!(status.active, None, "a terminating pod is not active");
    assert_eq!(termed(home.path()), 0, "the pod is still in its trap");
    let pod = pods_of(&client, "pausing").await;
    assert!(pod[0].metadata.deletion_timestamp.is_some());
    eventually("the pod is gone", || async {
        pods_of(&client, "pausing").await.is_empty().then_some(())
    })
    .await;
    assert_eq!(termed(home.path()), 1, "the process got SIGTERM");
    let job = eventually("terminating is 0 again", || async {
        let job = jobs.get("pausing").await.ok()?;
        (job.status.as_ref()?.terminating == Some(0)).then_some(job)
    })
    .await;
    assert_eq!(
        condition(&job, "Suspended").map(|c| c.0).as_deref(),
        Some("JobSuspended")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_deadline_fails_only_after_its_pod_exited_on_sigterm() {
    let home = tempfile::tempdir().expect("temp dir");
    let (cluster, client) = start(home.path(), 1.0).await;
    let kubectl = Kubectl::new(&cluster);
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job("late", &json!({"activeDeadlineSeconds": 1})),
    )
    .await
    .expect("job");
    kubectl
        .ok(&[
            "wait",
            "--for=condition=failed",
            "job/late",
            "--timeout=20s",
        ])
        .await;
    assert_eq!(
        termed(home.path()),
        1,
        "Failed waited for the pod to exit through its trap"
    );
    let job = jobs.get("late").await.expect("job");
    let expected = (
        "DeadlineExceeded".to_owned(),
        "Job was active longer than specified deadline".to_owned(),
    );
    assert_eq!(condition(&job, "FailureTarget"), Some(expected.clone()));
    assert_eq!(condition(&job, "Failed"), Some(expected));
    let status = job.status.expect("status");
    assert_eq!((status.failed, status.terminating), (Some(1), Some(0)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_pod_replacement_policy_failed_a_terminating_pod_is_replaced_only_once_it_failed() {
    let home = tempfile::tempdir().expect("temp dir");
    let (_cluster, client) = start(home.path(), 1.0).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job(
            "patient",
            &json!({"backoffLimit": 3, "podReplacementPolicy": "Failed"}),
        ),
    )
    .await
    .expect("job");
    running(&client, "patient").await;
    let first = pods_of(&client, "patient").await.remove(0);
    let first_name = first.metadata.name.expect("name");
    pods.delete(&first_name, &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("the pod counts as terminating", || async {
        let status = jobs.get("patient").await.ok()?.status?;
        (status.terminating == Some(1)).then_some(())
    })
    .await;
    assert_eq!(
        pods_of(&client, "patient").await.len(),
        1,
        "no replacement while the first pod terminates"
    );
    let replacement = eventually("a replacement once the first pod failed", || async {
        let pods = pods_of(&client, "patient").await;
        pods.into_iter()
            .find(|p| p.metadata.name.as_deref() != Some(first_name.as_str()))
    })
    .await;
    assert!(replacement.metadata.deletion_timestamp.is_none());
    assert_eq!(
        termed(home.path()),
        1,
        "the first pod exited through its trap"
    );
    let status = jobs
        .get("patient")
        .await
        .expect("job")
        .status
        .expect("status");
    assert_eq!(status.failed, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cronjob_replacing_its_running_job_lets_the_pod_exit_on_sigterm() {
    let home = tempfile::tempdir().expect("temp dir");
    // A minute is a second: the CronJob runs every second of real time. The grace period of 60 cluster seconds
    // is 1 real second, time enough for the trap to write its file (sleeps are real time: the trap's second is
    // 60 cluster seconds, so the pod is killed at the end of its grace period, after the file is written).
    let (_cluster, client) = start(home.path(), 60.0).await;
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    let script = "trap 'echo TERM > \"$HOME/termed-$$\"; sleep 0.2; exit 0' TERM; echo started; sleep 600 & wait";
    let cronjob: CronJob =
        serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "every"},
        "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Replace",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "terminationGracePeriodSeconds": 60,
                "containers": [{"name": "main", "image": "busybox",
                    "command": ["/bin/sh", "-c", "--", script]}]}}}}}}))
        .expect("valid cronjob");
    cronjobs
        .create(&PostParams::default(), &cronjob)
        .await
        .expect("cronjob");
    eventually("a replaced Job's pod ran its SIGTERM trap", || async {
        (termed(home.path()) >= 1).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cronjob_does_not_change_when_only_its_active_jobs_status_changes() {
    let home = tempfile::tempdir().expect("temp dir");
    let (_cluster, client) = start(home.path(), 60.0).await;
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    let cronjob: CronJob =
        serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "steady"},
        "spec": {"schedule": "* * * * *", "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"template": job_template(1)}}}}))
        .expect("valid cronjob");
    let created = cronjobs
        .create(&PostParams::default(), &cronjob)
        .await
        .expect("cronjob");
    let version = created.metadata.resource_version.expect("rv");
    let mut events = cronjobs
        .watch(
            &WatchParams::default()
                .fields("metadata.name=steady")
                .timeout(30),
            &version,
        )
        .await
        .expect("watch")
        .boxed();
    let listed = loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("a Job is listed within 10 s")
            .expect("watch works")
            .expect("watch open");
        if let WatchEvent::Modified(cronjob) = event
            && let Some(active) = cronjob.status.and_then(|s| s.active)
            && !active.is_empty()
        {
            break active[0].clone();
        }
    };
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let name = listed.name.clone().expect("job name");
    // The Job changes (its pod starts, becomes ready) while the CronJob must stay as it is.
    eventually("the Job changed after it was listed", || async {
        let job = jobs.get(&name).await.ok()?;
        (job.metadata.resource_version != listed.resource_version && job.status?.ready == Some(1))
            .then_some(())
    })
    .await;
    let quiet = tokio::time::timeout(Duration::from_millis(1500), events.try_next()).await;
    match quiet {
        Err(_elapsed) => {}
        Ok(event) => panic!("the CronJob changed: {event:?}"),
    }
}
