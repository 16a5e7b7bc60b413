//! The Job and TTL controllers with the scripted kubelet, seen through kube-rs as a reconciler sees them: Jobs
//! that succeed, fail, run out of time or cannot pull their image, with the status, conditions, pods and Events
//! of Kubernetes 1.33. Delays are shortened through `Controllers` and `Script` so each test takes under seconds.

mod support;

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use support::eventually;
use toolforge_local_cluster::{
    ContainerOutcome, Controllers, Kubelet, LocalCluster, Options, Script,
};

const MS: Duration = Duration::from_millis(1);

async fn start(script: Script) -> (LocalCluster, kube::Client) {
    start_with(script, Options::default()).await
}

async fn start_with(script: Script, options: Options) -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            job_backoff_base: 20 * MS,
            job_backoff_cap: 100 * MS,
            kubelet: Some(Kubelet::Scripted(script.restart_backoff(30 * MS))),
        }),
        ..options
    })
    .await
    .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

fn job(name: &str, image: &str, spec: &Value) -> Job {
    let mut body = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": image, "command": ["run-it"]}]}}}
    });
    if let (Some(target), Some(extra)) = (body["spec"].as_object_mut(), spec.as_object()) {
        target.extend(extra.clone());
    }
    serde_json::from_value(body).expect("valid job")
}

async fn finished(jobs: &Api<Job>, name: &str, condition: &str) -> Job {
    eventually(condition, || async {
        let job = jobs.get(name).await.expect("job exists");
        let conditions = job.status.as_ref()?.conditions.as_ref()?;
        conditions
            .iter()
            .any(|c| c.type_ == condition && c.status == "True")
            .then_some(job)
    })
    .await
}

fn conditions(job: &Job) -> Vec<(String, Option<String>, Option<String>)> {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.reason, c.message))
        .collect()
}

async fn pods_of(client: &kube::Client, job: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.list(&ListParams::default().labels(&format!("job-name={job}")))
        .await
        .expect("pods listed")
        .items
}

/// (type, reason, message) of the Events about one object, oldest first.
async fn events_about(client: &kube::Client, name: &str) -> Vec<(String, String, String)> {
    let events: Api<Event> = Api::default_namespaced(client.clone());
    let mut found: Vec<Event> = events
        .list(&ListParams::default())
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .collect();
    found.sort_by_key(|e| e.metadata.name.clone());
    found
        .into_iter()
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

fn terminated(pod: &Pod) -> Option<(i32, String)> {
    let state = pod
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?;
    let terminated = state.terminated.as_ref()?;
    Some((
        terminated.exit_code,
        terminated.reason.clone().unwrap_or_default(),
    ))
}

#[tokio::test]
async fn a_succeeding_job_completes_with_its_counts_conditions_pod_and_events() {
    let (_cluster, client) = start(Script::new(ContainerOutcome::Succeed { after: 50 * MS })).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("hello", "busybox", &json!({})))
        .await
        .expect("created");
    let done = finished(&jobs, "hello", "Complete").await;
    let status = done.status.clone().expect("status");
    assert_eq!(status.succeeded, Some(1));
    assert_eq!(status.active, None, "0 is omitted");
    assert_eq!((status.ready, status.terminating), (Some(0), Some(0)));
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    let reached = (
        Some("CompletionsReached".to_owned()),
        Some("Reached expected number of succeeded pods".to_owned()),
    );
    assert_eq!(
        conditions(&done),
        [
            (
                "SuccessCriteriaMet".to_owned(),
                reached.0.clone(),
                reached.1.clone()
            ),
            ("Complete".to_owned(), reached.0, reached.1),
        ]
    );

    let pods = pods_of(&client, "hello").await;
    assert_eq!(pods.len(), 1);
    let pod = &pods[0];
    let name = pod.metadata.name.clone().expect("name");
    assert!(
        name.starts_with("hello-") && name.len() == "hello-".len() + 5,
        "{name}"
    );
    let owner = &pod.metadata.owner_references.as_ref().expect("owned")[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Job", "hello"));
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(Some(owner.uid.clone()), done.metadata.uid);
    let labels = pod.metadata.labels.clone().expect("labels");
    for key in [
        "batch.kubernetes.io/controller-uid",
        "batch.kubernetes.io/job-name",
        "controller-uid",
        "job-name",
    ] {
        assert!(labels.contains_key(key), "missing label {key}");
    }
    assert_eq!(
        pod.metadata.finalizers, None,
        "the tracking finalizer is removed once counted"
    );
    assert_eq!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded")
    );
    assert_eq!(terminated(pod), Some((0, "Completed".to_owned())));

    let job_events = events_about(&client, "hello").await;
    assert_eq!(
        job_events,
        [
            (
                "Normal".to_owned(),
                "SuccessfulCreate".to_owned(),
                format!("Created pod: {name}")
            ),
            (
                "Normal".to_owned(),
                "Completed".to_owned(),
                "Job completed".to_owned()
            ),
        ]
    );
    let reasons: Vec<String> = events_about(&client, &name)
        .await
        .into_iter()
        .map(|(_, r, _)| r)
        .collect();
    assert_eq!(
        reasons,
        ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    );
}

#[tokio::test]
async fn a_failing_job_with_backoff_limit_2_runs_three_pods_then_fails() {
    let (_cluster, client) = start(Script::new(ContainerOutcome::Exit {
        code: 3,
        after: 10 * MS,
    }))
    .await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job("flaky", "busybox", &json!({"backoffLimit": 2})),
    )
    .await
    .expect("created");
    let failed = finished(&jobs, "flaky", "Failed").await;
    let status = failed.status.clone().expect("status");
    assert_eq!(
        (status.failed, status.succeeded, status.active),
        (Some(3), None, None)
    );
    assert_eq!(
        status.completion_time, None,
        "only complete Jobs have a completionTime"
    );
    let limit = (
        Some("BackoffLimitExceeded".to_owned()),
        Some("Job has reached the specified backoff limit".to_owned()),
    );
    assert_eq!(
        conditions(&failed),
        [
            ("FailureTarget".to_owned(), limit.0.clone(), limit.1.clone()),
            ("Failed".to_owned(), limit.0, limit.1),
        ]
    );
    let pods = pods_of(&client, "flaky").await;
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Failed")
        );
        assert_eq!(terminated(pod), Some((3, "Error".to_owned())));
    }
    let events = events_about(&client, "flaky").await;
    assert_eq!(
        events
            .iter()
            .filter(|(_, r, _)| r == "SuccessfulCreate")
            .count(),
        3
    );
    assert_eq!(
        events.last(),
        Some(&(
            "Warning".to_owned(),
            "BackoffLimitExceeded".to_owned(),
            "Job has reached the specified backoff limit".to_owned()
        ))
    );
}

#[tokio::test]
async fn a_job_past_its_active_deadline_fails_and_its_pod_is_deleted() {
    let (_cluster, client) = start(Script::new(ContainerOutcome::RunForever)).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job("slow", "busybox", &json!({"activeDeadlineSeconds": 1})),
    )
    .await
    .expect("created");
    let failed = finished(&jobs, "slow", "Failed").await;
    let deadline = (
        Some("DeadlineExceeded".to_owned()),
        Some("Job was active longer than specified deadline".to_owned()),
    );
    assert_eq!(
        conditions(&failed),
        [
            (
                "FailureTarget".to_owned(),
                deadline.0.clone(),
                deadline.1.clone()
            ),
            ("Failed".to_owned(), deadline.0, deadline.1),
        ]
    );
    let status = failed.status.clone().expect("status");
    assert_eq!(
        (status.failed, status.active, status.terminating),
        (Some(1), None, Some(0))
    );
    assert!(
        pods_of(&client, "slow").await.is_empty(),
        "the running pod was deleted"
    );
    let reasons: Vec<String> = events_about(&client, "slow")
        .await
        .into_iter()
        .map(|(_, r, _)| r)
        .collect();
    assert_eq!(
        reasons,
        ["SuccessfulCreate", "SuccessfulDelete", "DeadlineExceeded"]
    );
}

#[tokio::test]
async fn ttl_after_finished_deletes_the_job_and_its_pods() {
    let (_cluster, client) = start(Script::new(ContainerOutcome::Succeed { after: 10 * MS })).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job("brief", "busybox", &json!({"ttlSecondsAfterFinished": 0})),
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
    assert!(pods_of(&client, "brief").await.is_empty());
}

#[tokio::test]
async fn an_image_pull_error_leaves_the_pod_pending_in_image_pull_back_off_and_counts_no_failure() {
    let script = Script::new(ContainerOutcome::Succeed { after: 10 * MS })
        .image("nope:latest", ContainerOutcome::ImagePullError);
    let (_cluster, client) = start(script).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job("pull", "nope:latest", &json!({})),
    )
    .await
    .expect("created");
    let pod = eventually("ImagePullBackOff", || async {
        let pods = pods_of(&client, "pull").await;
        let pod = pods.into_iter().next()?;
        let status = pod
            .status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .first()?
            .clone();
        let waiting = status.state?.waiting?;
        (waiting.reason.as_deref() == Some("ImagePullBackOff")).then_some((pod, waiting.message))
    })
    .await;
    assert_eq!(
        pod.1.as_deref(),
        Some("Back-off pulling image \"nope:latest\"")
    );
    assert_eq!(
        pod.0.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Pending")
    );
    let name = pod.0.metadata.name.clone().expect("name");
    let events = events_about(&client, &name).await;
    let warnings: Vec<&str> = events
        .iter()
        .filter(|(t, _, _)| t == "Warning")
        .map(|(_, _, m)| m.as_str())
        .collect();
    assert!(
        warnings.contains(&"Error: ErrImagePull") && warnings.contains(&"Error: ImagePullBackOff"),
        "{events:?}"
    );
    let job = jobs.get("pull").await.expect("job");
    let status = job.status.expect("status");
    assert_eq!(
        (status.active, status.failed),
        (Some(1), None),
        "a pull error never counts as a failure"
    );
}

#[tokio::test]
async fn restarts_under_on_failure_fail_the_job_at_the_backoff_limit_and_remove_its_pod() {
    let (_cluster, client) = start(Script::new(ContainerOutcome::Exit {
        code: 1,
        after: 5 * MS,
    }))
    .await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let mut restarting = job("crashy", "busybox", &json!({"backoffLimit": 2}));
    if let Some(spec) = restarting
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
    {
        spec.restart_policy = Some("OnFailure".to_owned());
    }
    jobs.create(&PostParams::default(), &restarting)
        .await
        .expect("created");
    let failed = finished(&jobs, "crashy", "Failed").await;
    let reasons: Vec<Option<String>> = conditions(&failed).into_iter().map(|(_, r, _)| r).collect();
    assert_eq!(
        reasons,
        [
            Some("BackoffLimitExceeded".to_owned()),
            Some("BackoffLimitExceeded".to_owned())
        ]
    );
    let status = failed.status.clone().expect("status");
    assert_eq!(
        status.failed,
        Some(1),
        "the restarting pod counts as one failure when deleted"
    );
    assert!(pods_of(&client, "crashy").await.is_empty());
    let events: Api<Event> = Api::default_namespaced(client.clone());
    let back_offs = events
        .list(&ListParams::default())
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("BackOff"))
        .filter_map(|e| e.message)
        .collect::<Vec<_>>();
    assert!(
        back_offs.first().is_some_and(
            |m| m.starts_with("Back-off restarting failed container main in pod crashy-")
        ),
        "{back_offs:?}"
    );
}

#[tokio::test]
async fn a_cronjob_runs_its_missed_minute_as_a_job_and_sees_it_complete() {
    use k8s_openapi::api::batch::v1::CronJob;
    use kube::api::{Patch, PatchParams};

    let (_cluster, client) = start(Script::new(ContainerOutcome::Succeed { after: 10 * MS })).await;
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    let cronjob: CronJob = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "every"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}}
    }))
    .expect("valid cronjob");
    cronjobs
        .create(&PostParams::default(), &cronjob)
        .await
        .expect("created");
    // Pretend the last run was five minutes ago, so the current minute is due without waiting for it.
    let earlier = jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5);
    let status =
        json!({"status": {"lastScheduleTime": earlier.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}});
    cronjobs
        .patch_status("every", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status patched");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job = eventually("the scheduled job", || async {
        let listed = jobs
            .list(&ListParams::default())
            .await
            .expect("jobs listed");
        listed.items.into_iter().next()
    })
    .await;
    let name = job.metadata.name.clone().expect("name");
    let scheduled = job
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("batch.kubernetes.io/cronjob-scheduled-timestamp"))
        .cloned()
        .expect("scheduled-timestamp annotation");
    let minutes = scheduled
        .parse::<jiff::Timestamp>()
        .expect("RFC 3339")
        .as_second()
        / 60;
    assert_eq!(name, format!("every-{minutes}"));
    let seen = eventually("the cronjob to see its job complete", || async {
        let cronjob = cronjobs.get("every").await.expect("cronjob");
        let status = cronjob.status.clone()?;
        (status.active.is_none() && status.last_successful_time.is_some()).then_some(status)
    })
    .await;
    assert_eq!(
        seen.last_schedule_time.map(|t| t.0.to_string()),
        Some(scheduled)
    );
    let reasons: Vec<(String, String)> = events_about(&client, "every")
        .await
        .into_iter()
        .map(|(_, r, m)| (r, m))
        .collect();
    assert_eq!(
        reasons,
        [
            ("SuccessfulCreate".to_owned(), format!("Created job {name}")),
            (
                "SawCompletedJob".to_owned(),
                format!("Saw completed job: {name}, status: Complete")
            ),
        ]
    );
}

#[tokio::test]
async fn a_replicaset_keeps_its_replicas_running_and_scales_down_with_events() {
    use k8s_openapi::api::apps::v1::ReplicaSet;
    use kube::api::{Patch, PatchParams};

    let (_cluster, client) = start(Script::new(ContainerOutcome::RunForever)).await;
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let set: ReplicaSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
    }))
    .expect("valid replicaset");
    sets.create(&PostParams::default(), &set)
        .await
        .expect("created");
    let ready = |want: i32| {
        let sets = sets.clone();
        async move {
            eventually("the replicas to be ready", || async {
                let status = sets.get("web").await.expect("replicaset").status?;
                (status.replicas == want
                    && status.ready_replicas == Some(want)
                    && status.available_replicas == Some(want))
                .then_some(status)
            })
            .await
        }
    };
    let status = ready(2).await;
    assert_eq!(status.fully_labeled_replicas, Some(2));
    assert_eq!(status.observed_generation, Some(1));
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let listed = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("pods")
        .items;
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|p| {
        p.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("web-"))
    }));

    let scale = json!({"spec": {"replicas": 1}});
    sets.patch("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .expect("scaled");
    let status = ready(1).await;
    assert_eq!(status.observed_generation, Some(2));
    eventually("the surplus pod to go", || async {
        let left = pods
            .list(&ListParams::default().labels("app=web"))
            .await
            .expect("pods")
            .items;
        (left.len() == 1).then_some(())
    })
    .await;
    let reasons: Vec<String> = events_about(&client, "web")
        .await
        .into_iter()
        .map(|(_, r, _)| r)
        .collect();
    assert_eq!(
        reasons,
        ["SuccessfulCreate", "SuccessfulCreate", "SuccessfulDelete"]
    );
}

fn deployment_conditions(
    deployment: &k8s_openapi::api::apps::v1::Deployment,
) -> Vec<(String, String, Option<String>)> {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.status, c.reason))
        .collect()
}

/// Waits until generation `generation` of Deployment `web` has rolled out to 2 available replicas.
async fn rolled_out(
    deployments: &Api<k8s_openapi::api::apps::v1::Deployment>,
    generation: i64,
) -> k8s_openapi::api::apps::v1::Deployment {
    eventually("the rollout", || async {
        let d = deployments.get("web").await.expect("deployment");
        let status = d.status.clone()?;
        let done = status.observed_generation == Some(generation)
            && status.updated_replicas == Some(2)
            && status.replicas == Some(2)
            && status.available_replicas == Some(2)
            && deployment_conditions(&d)
                .iter()
                .any(|(_, _, r)| r.as_deref() == Some("NewReplicaSetAvailable"));
        done.then_some(d)
    })
    .await
}

#[tokio::test]
async fn a_deployment_rolls_out_and_rolls_a_new_template_over_to_a_new_replicaset() {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use kube::api::{Patch, PatchParams};

    let (_cluster, client) = start(Script::new(ContainerOutcome::RunForever)).await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1"}]}}}
    }))
    .expect("valid deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let first = rolled_out(&deployments, 1).await;
    assert_eq!(
        deployment_conditions(&first),
        [
            (
                "Available".to_owned(),
                "True".to_owned(),
                Some("MinimumReplicasAvailable".to_owned())
            ),
            (
                "Progressing".to_owned(),
                "True".to_owned(),
                Some("NewReplicaSetAvailable".to_owned())
            ),
        ]
    );
    let revision = |d: &Deployment| {
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            .cloned()
    };
    assert_eq!(revision(&first), Some("1".to_owned()));
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let listed = sets
        .list(&ListParams::default())
        .await
        .expect("replicasets")
        .items;
    assert_eq!(listed.len(), 1);
    let first_set = listed[0].metadata.name.clone().expect("name");
    let hash = listed[0]
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("pod-template-hash"))
        .cloned()
        .expect("hash label");
    assert_eq!(first_set, format!("web-{hash}"));

    let new_image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}}});
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(&new_image),
        )
        .await
        .expect("patched");
    let second = rolled_out(&deployments, 2).await;
    assert_eq!(revision(&second), Some("2".to_owned()));
    let old = sets
        .get(&first_set)
        .await
        .expect("old replicaset kept for history");
    assert_eq!(old.spec.and_then(|s| s.replicas), Some(0));
    let messages: Vec<String> = events_about(&client, "web")
        .await
        .into_iter()
        .map(|(_, _, m)| m)
        .collect();
    assert_eq!(
        messages.first(),
        Some(&format!("Scaled up replica set {first_set} from 0 to 2"))
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with(&format!("Scaled down replica set {first_set} from 2 to"))),
        "{messages:?}"
    );
}

#[tokio::test]
async fn a_deployment_whose_image_cannot_be_pulled_exceeds_its_progress_deadline() {
    use k8s_openapi::api::apps::v1::Deployment;

    let (_cluster, client) = start(
        Script::new(ContainerOutcome::RunForever).image("nope:1", ContainerOutcome::ImagePullError),
    )
    .await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "stuck"},
        "spec": {"replicas": 1, "progressDeadlineSeconds": 1, "selector": {"matchLabels": {"app": "stuck"}},
            "template": {"metadata": {"labels": {"app": "stuck"}},
                "spec": {"containers": [{"name": "main", "image": "nope:1"}]}}}
    }))
    .expect("valid deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let stuck = eventually("ProgressDeadlineExceeded", || async {
        let d = deployments.get("stuck").await.expect("deployment");
        deployment_conditions(&d)
            .iter()
            .any(|(_, _, r)| r.as_deref() == Some("ProgressDeadlineExceeded"))
            .then_some(d)
    })
    .await;
    assert_eq!(
        deployment_conditions(&stuck),
        [
            (
                "Available".to_owned(),
                "False".to_owned(),
                Some("MinimumReplicasUnavailable".to_owned())
            ),
            (
                "Progressing".to_owned(),
                "False".to_owned(),
                Some("ProgressDeadlineExceeded".to_owned())
            ),
        ]
    );
    let status = stuck.status.expect("status");
    assert_eq!(
        (status.unavailable_replicas, status.available_replicas),
        (Some(1), None)
    );
}

#[tokio::test]
async fn pods_orphaned_by_deleting_their_job_keep_running_without_the_tracking_finalizer() {
    use kube::api::DeleteParams;

    let (_cluster, client) = start(Script::new(ContainerOutcome::RunForever)).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("left", "busybox", &json!({})))
        .await
        .expect("created");
    eventually("a running pod", || async {
        let pods = pods_of(&client, "left").await;
        let pod = pods.into_iter().next()?;
        (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    jobs.delete("left", &DeleteParams::orphan())
        .await
        .expect("deleted");
    let pod = eventually("the orphan to be released", || async {
        let pod = pods_of(&client, "left").await.into_iter().next()?;
        (pod.metadata.owner_references.is_none() && pod.metadata.finalizers.is_none())
            .then_some(pod)
    })
    .await;
    assert_eq!(pod.status.and_then(|s| s.phase).as_deref(), Some("Running"));
    assert!(jobs.get_opt("left").await.expect("get works").is_none());
}

#[tokio::test]
async fn after_a_restart_from_the_state_file_a_running_job_pod_is_lost_like_on_a_rebooted_node() {
    let directory = tempfile::tempdir().expect("temp dir");
    let options = Options {
        state_file: Some(directory.path().join("state.json")),
        ..Options::default()
    };
    let (cluster, client) =
        start_with(Script::new(ContainerOutcome::RunForever), options.clone()).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job("rebooted", "busybox", &json!({"backoffLimit": 0})),
    )
    .await
    .expect("created");
    eventually("a running pod", || async {
        let pod = pods_of(&client, "rebooted").await.into_iter().next()?;
        (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    cluster.shutdown().await.expect("clean shutdown");

    let (_cluster, client) = start_with(Script::new(ContainerOutcome::RunForever), options).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let failed = finished(&jobs, "rebooted", "Failed").await;
    assert_eq!(failed.status.and_then(|s| s.failed), Some(1));
    let pod = pods_of(&client, "rebooted")
        .await
        .into_iter()
        .next()
        .expect("the lost pod stays");
    assert_eq!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Failed")
    );
    assert_eq!(
        terminated(&pod),
        Some((137, "ContainerStatusUnknown".to_owned()))
    );
}

/// A ResourceQuota `tool-q` in `default` with these hard limits.
async fn quota(client: &kube::Client, hard: Value) {
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::default_namespaced(client.clone());
    let quota = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "tool-q"}, "spec": {"hard": hard}}))
    .expect("valid quota");
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("quota created");
}

#[tokio::test]
async fn a_job_over_quota_records_failed_create_stays_without_pods_and_starts_once_it_fits() {
    use kube::api::{Patch, PatchParams};

    let (_cluster, client) = start(Script::new(ContainerOutcome::Succeed { after: 20 * MS })).await;
    quota(&client, json!({"count/pods": "0"})).await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(
        &PostParams::default(),
        &job("blocked", "busybox", &json!({})),
    )
    .await
    .expect("the Job itself is not limited");
    let refusal = eventually("a FailedCreate event", || async {
        events_about(&client, "blocked")
            .await
            .into_iter()
            .find(|(_, reason, _)| reason == "FailedCreate")
    })
    .await;
    let (kind, _, message) = &refusal;
    assert_eq!(kind, "Warning");
    let pod_name = message
        .strip_prefix("Error creating: pods \"")
        .and_then(|rest| rest.split_once('"'))
        .map_or_else(|| panic!("unexpected message {message}"), |(name, _)| name);
    assert!(pod_name.starts_with("blocked-") && pod_name.len() == "blocked-".len() + 5);
    assert_eq!(
        message,
        &format!(
            "Error creating: pods \"{pod_name}\" is forbidden: exceeded quota: tool-q, requested: count/pods=1, used: count/pods=0, limited: count/pods=0"
        )
    );
    // Retries keep being refused (with back-off) without failing the Job or counting anything.
    tokio::time::sleep(300 * MS).await;
    let status = jobs
        .get("blocked")
        .await
        .expect("job")
        .status
        .expect("status");
    assert_eq!(
        (status.active, status.failed, status.succeeded),
        (None, None, None)
    );
    assert_eq!(status.conditions, None);
    assert_eq!(status.ready, Some(0));
    assert!(pods_of(&client, "blocked").await.is_empty());

    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::default_namespaced(client.clone());
    quotas
        .patch(
            "tool-q",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hard": {"count/pods": "1"}}})),
        )
        .await
        .expect("quota raised");
    finished(&jobs, "blocked", "Complete").await;
}

#[tokio::test]
async fn a_deployment_whose_pods_are_over_quota_reports_replica_failure() {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

    let (_cluster, client) = start(Script::new(ContainerOutcome::RunForever)).await;
    quota(&client, json!({"pods": "1"})).await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1"}]}}}
    }))
    .expect("valid deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let failure = eventually("the ReplicaFailure condition", || async {
        let d = deployments.get("web").await.expect("deployment");
        d.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "ReplicaFailure")
    })
    .await;
    assert_eq!(
        (failure.status.as_str(), failure.reason.as_deref()),
        ("True", Some("FailedCreate"))
    );
    let message = failure.message.expect("message");
    assert!(
        message.starts_with("pods \"web-")
            && message.ends_with(
                "\" is forbidden: exceeded quota: tool-q, requested: pods=1, used: pods=1, limited: pods=1"
            ),
        "{message}"
    );
    let sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let set = sets
        .list(&ListParams::default())
        .await
        .expect("replicasets")
        .items
        .remove(0);
    let set_name = set.metadata.name.clone().expect("name");
    let set_failure = set
        .status
        .and_then(|s| s.conditions)
        .and_then(|c| c.into_iter().find(|c| c.type_ == "ReplicaFailure"))
        .expect("the ReplicaSet has the condition");
    assert_eq!(set_failure.message.as_deref(), Some(message.as_str()));
    let events = events_about(&client, &set_name).await;
    assert!(
        events.iter().any(|(kind, reason, text)| kind == "Warning"
            && reason == "FailedCreate"
            && *text == format!("Error creating: {message}")),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_deployment_whose_replicaset_is_over_quota_is_not_progressing_until_it_fits() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Patch, PatchParams};

    let (_cluster, client) = start(Script::new(ContainerOutcome::RunForever)).await;
    quota(&client, json!({"count/replicasets.apps": "0"})).await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1"}]}}}
    }))
    .expect("valid deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let progressing = eventually("Progressing False", || async {
        let d = deployments.get("web").await.expect("deployment");
        d.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Progressing" && c.status == "False")
    })
    .await;
    assert_eq!(progressing.reason.as_deref(), Some("ReplicaSetCreateError"));
    let message = progressing.message.expect("message");
    let set = message
        .strip_prefix("Failed to create new replica set \"")
        .and_then(|rest| rest.split_once('"'))
        .map_or_else(|| panic!("unexpected message {message}"), |(name, _)| name);
    assert_eq!(
        message,
        format!(
            "Failed to create new replica set \"{set}\": replicasets.apps \"{set}\" is forbidden: exceeded quota: tool-q, requested: count/replicasets.apps=1, used: count/replicasets.apps=0, limited: count/replicasets.apps=0"
        )
    );
    let events = events_about(&client, "web").await;
    assert!(
        events.contains(&(
            "Warning".to_owned(),
            "ReplicaSetCreateError".to_owned(),
            message.clone()
        )),
        "{events:?}"
    );

    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::default_namespaced(client.clone());
    quotas
        .patch(
            "tool-q",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hard": {"count/replicasets.apps": "1"}}})),
        )
        .await
        .expect("quota raised");
    rolled_out(&deployments, 1).await;
}
