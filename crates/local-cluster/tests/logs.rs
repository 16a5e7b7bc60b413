//! `pods/{name}/log` as kube-rs (`Api::<Pod>::logs`, `log_stream`) and kubectl (`kubectl logs`) see it: what a
//! scripted container printed, `tailLines`/`limitBytes`/`timestamps`, `previous` after a crash-loop restart, the
//! 400s of containers that did not start, and `follow` streaming until the container exits or the pod goes.

mod support;

use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use serde_json::{Value, json};
use toolforge_local_cluster::{
    ContainerOutcome, Controllers, Kubelet, LocalCluster, Options, Script,
};

use support::{Kubectl, eventually};

const MS: Duration = Duration::from_millis(1);

async fn start(script: Script) -> (LocalCluster, kube::Client) {
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

fn job(name: &str, image: &str) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "job", "image": image, "command": ["run-it"]}]}}}
    }))
    .expect("valid job")
}

fn pod(name: &str, restart_policy: &str, containers: &Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": restart_policy, "containers": containers}
    }))
    .expect("valid pod")
}

fn one(image: &str) -> Value {
    json!([{"name": "job", "image": image}])
}

/// The pod's first container status: (state key, reason, restart count).
fn state(pod: &Pod) -> Option<(String, String, i32)> {
    let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?;
    let state = status.state.as_ref()?;
    let (key, reason) = if let Some(w) = &state.waiting {
        ("waiting", w.reason.clone().unwrap_or_default())
    } else if let Some(t) = &state.terminated {
        ("terminated", t.reason.clone().unwrap_or_default())
    } else {
        ("running", String::new())
    };
    Some((key.to_owned(), reason, status.restart_count))
}

async fn in_state(pods: &Api<Pod>, name: &str, key: &str, reason: &str, restarts: i32) {
    eventually(&format!("{name} {key} {reason} {restarts}"), || async {
        let pod = pods.get(name).await.expect("pod exists");
        (state(&pod)? == (key.to_owned(), reason.to_owned(), restarts)).then_some(())
    })
    .await;
}

/// The (code, message) of a failed request.
fn api_error(result: Result<String, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn params() -> LogParams {
    LogParams::default()
}

#[tokio::test]
async fn a_job_pods_output_is_served_with_tail_lines_limit_bytes_and_timestamps() {
    let (cluster, client) = start(
        Script::new(ContainerOutcome::Succeed { after: 20 * MS })
            .output("busybox", "one\ntwo\nthree\n"),
    )
    .await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("hello", "busybox"))
        .await
        .expect("job created");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let name = eventually("the job's pod to succeed", || async {
        let list = pods
            .list(&ListParams::default().labels("job-name=hello"))
            .await
            .expect("pods listed");
        let pod = list.items.into_iter().next()?;
        (pod.status.as_ref()?.phase.as_deref() == Some("Succeeded"))
            .then(|| pod.metadata.name.clone().expect("named"))
    })
    .await;
    cluster.reset_request_counts();
    assert_eq!(
        pods.logs(&name, &params()).await.expect("logs"),
        "one\ntwo\nthree\n"
    );
    assert_eq!(cluster.request_count("get", "pods/log"), 1);
    let tail = LogParams {
        tail_lines: Some(1),
        ..params()
    };
    assert_eq!(pods.logs(&name, &tail).await.expect("tail"), "three\n");
    let limited = LogParams {
        limit_bytes: Some(5),
        ..params()
    };
    assert_eq!(pods.logs(&name, &limited).await.expect("limited"), "one\nt");
    let stamped = LogParams {
        timestamps: true,
        container: Some("job".into()),
        ..params()
    };
    let text = pods.logs(&name, &stamped).await.expect("timestamps");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for (line, expected) in lines.iter().zip(["one", "two", "three"]) {
        let (at, rest) = line.split_once(' ').expect("timestamp and text");
        assert_eq!(rest, expected);
        assert_eq!(at.len(), "2026-01-02T03:04:05.123456789Z".len(), "{at}");
        assert!(at.parse::<jiff::Timestamp>().is_ok(), "{at}");
    }
    let since = LogParams {
        since_seconds: Some(3600),
        ..params()
    };
    assert_eq!(
        pods.logs(&name, &since).await.expect("since"),
        "one\ntwo\nthree\n"
    );

    let wrong = LogParams {
        container: Some("nope".into()),
        ..params()
    };
    assert_eq!(
        api_error(pods.logs(&name, &wrong).await),
        (400, format!("container nope is not valid for pod {name}"))
    );
    let previous = LogParams {
        previous: true,
        ..params()
    };
    assert_eq!(
        api_error(pods.logs(&name, &previous).await),
        (
            400,
            format!("previous terminated container \"job\" in pod \"{name}\" not found")
        )
    );
    assert_eq!(
        api_error(pods.logs("missing", &params()).await),
        (404, "pods \"missing\" not found".to_owned())
    );
    let negative = LogParams {
        tail_lines: Some(-1),
        ..params()
    };
    assert_eq!(api_error(pods.logs(&name, &negative).await).0, 422);
    assert_eq!(cluster.request_count("get", "pods/log"), 9);

    // The logs go with the pod.
    pods.delete(&name, &DeleteParams::default())
        .await
        .expect("pod deleted");
    eventually("the pod to be gone", || async {
        pods.get_opt(&name)
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    assert_eq!(api_error(pods.logs(&name, &params()).await).0, 404);
}

#[tokio::test]
async fn previous_serves_the_run_before_a_crash_loop_restart() {
    let (_cluster, client) = start(
        Script::new(ContainerOutcome::Exit {
            code: 1,
            after: 600 * MS,
        })
        .output_per_run("busybox", &["first run\n", "second run\n"]),
    )
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(
        &PostParams::default(),
        &pod("crash", "Always", &one("busybox")),
    )
    .await
    .expect("pod created");
    in_state(&pods, "crash", "running", "", 0).await;
    assert_eq!(
        pods.logs("crash", &params()).await.expect("logs"),
        "first run\n"
    );
    // Backing off: both the current and the previous logs are those of the run that crashed.
    in_state(&pods, "crash", "waiting", "CrashLoopBackOff", 1).await;
    let previous = LogParams {
        previous: true,
        ..params()
    };
    assert_eq!(
        pods.logs("crash", &params()).await.expect("logs"),
        "first run\n"
    );
    assert_eq!(
        pods.logs("crash", &previous).await.expect("previous"),
        "first run\n"
    );
    // Restarted: the current run printed anew, the previous is the crashed one.
    in_state(&pods, "crash", "running", "", 1).await;
    assert_eq!(
        pods.logs("crash", &params()).await.expect("logs"),
        "second run\n"
    );
    assert_eq!(
        pods.logs("crash", &previous).await.expect("previous"),
        "first run\n"
    );
}

#[tokio::test]
async fn containers_that_did_not_start_are_waiting_and_several_need_a_name() {
    let (_cluster, client) = start(
        Script::new(ContainerOutcome::RunForever)
            .image("nope:1", ContainerOutcome::ImagePullError)
            .start_delay(Duration::from_secs(60)),
    )
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(
        &PostParams::default(),
        &pod("slow", "Never", &one("busybox")),
    )
    .await
    .expect("pod created");
    in_state(&pods, "slow", "waiting", "ContainerCreating", 0).await;
    assert_eq!(
        api_error(pods.logs("slow", &params()).await),
        (
            400,
            "container \"job\" in pod \"slow\" is waiting to start: ContainerCreating".to_owned()
        )
    );
    let two = json!([{"name": "job", "image": "busybox"}, {"name": "side", "image": "busybox"}]);
    pods.create(&PostParams::default(), &pod("two", "Never", &two))
        .await
        .expect("pod created");
    assert_eq!(
        api_error(pods.logs("two", &params()).await),
        (
            400,
            "a container name must be specified for pod two, choose one of: [job side]".to_owned()
        )
    );
}

#[tokio::test]
async fn an_image_that_cannot_be_pulled_is_waiting_to_start() {
    let (_cluster, client) = start(
        Script::new(ContainerOutcome::RunForever)
            .image("nope:1", ContainerOutcome::ImagePullError)
            .start_delay(10 * MS),
    )
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(
        &PostParams::default(),
        &pod("pull", "Never", &one("nope:1")),
    )
    .await
    .expect("pod created");
    in_state(&pods, "pull", "waiting", "ImagePullBackOff", 0).await;
    assert_eq!(
        api_error(pods.logs("pull", &params()).await),
        (
            400,
            "container \"job\" in pod \"pull\" is waiting to start: trying and failing to pull image"
                .to_owned()
        )
    );
}

#[tokio::test]
async fn follow_streams_the_output_and_ends_when_the_container_exits() {
    let (_cluster, client) = start(
        Script::new(ContainerOutcome::Succeed { after: 800 * MS })
            .output("busybox", "hello\nworld\n")
            .image("forever", ContainerOutcome::RunForever)
            .output("forever", "still here\n"),
    )
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(
        &PostParams::default(),
        &pod("short", "Never", &one("busybox")),
    )
    .await
    .expect("pod created");
    in_state(&pods, "short", "running", "", 0).await;
    let follow = LogParams {
        follow: true,
        ..params()
    };
    let began = Instant::now();
    let stream = pods.log_stream("short", &follow).await.expect("stream");
    let mut lines = stream.lines();
    assert_eq!(lines.try_next().await.expect("read"), Some("hello".into()));
    assert_eq!(lines.try_next().await.expect("read"), Some("world".into()));
    let end = tokio::time::timeout(Duration::from_secs(10), lines.try_next())
        .await
        .expect("the stream ends");
    assert_eq!(end.expect("read"), None);
    let short = pods.get("short").await.expect("pod");
    assert_eq!(
        state(&short).map(|(key, reason, _)| (key, reason)),
        Some(("terminated".to_owned(), "Completed".to_owned())),
        "the stream ended after {:?}",
        began.elapsed()
    );

    // A container that runs forever: the stream ends when its pod is deleted.
    pods.create(
        &PostParams::default(),
        &pod("long", "Always", &one("forever")),
    )
    .await
    .expect("pod created");
    in_state(&pods, "long", "running", "", 0).await;
    let mut lines = pods
        .log_stream("long", &follow)
        .await
        .expect("stream")
        .lines();
    assert_eq!(
        lines.try_next().await.expect("read"),
        Some("still here".into())
    );
    pods.delete("long", &DeleteParams::default())
        .await
        .expect("pod deleted");
    let end = tokio::time::timeout(Duration::from_secs(10), lines.try_next())
        .await
        .expect("the stream ends");
    assert_eq!(end.expect("read"), None);
}

#[tokio::test]
async fn kubectl_logs_resolves_a_job_to_its_pod_and_tails_a_pod() {
    let (cluster, client) = start(
        Script::new(ContainerOutcome::Succeed { after: 20 * MS })
            .output("busybox", "alpha\nbeta\ngamma\n")
            .image("nope:1", ContainerOutcome::ImagePullError)
            .start_delay(10 * MS),
    )
    .await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("hello", "busybox"))
        .await
        .expect("job created");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let name = eventually("the job's pod to succeed", || async {
        let list = pods
            .list(&ListParams::default().labels("job-name=hello"))
            .await
            .expect("pods listed");
        let pod = list.items.into_iter().next()?;
        (pod.status.as_ref()?.phase.as_deref() == Some("Succeeded"))
            .then(|| pod.metadata.name.clone().expect("named"))
    })
    .await;
    let kubectl = Kubectl::new(&cluster);
    assert_eq!(
        kubectl.ok(&["logs", "job/hello"]).await,
        "alpha\nbeta\ngamma\n"
    );
    assert_eq!(kubectl.ok(&["logs", &name, "--tail=1"]).await, "gamma\n");
    assert_eq!(
        kubectl.ok(&["logs", &name, "-c", "job", "--tail=2"]).await,
        "beta\ngamma\n"
    );
    assert_eq!(
        kubectl.ok(&["logs", "-f", &name]).await,
        "alpha\nbeta\ngamma\n",
        "follow ends with the finished container"
    );
    let stamped = kubectl
        .ok(&["logs", &name, "--timestamps", "--tail=1"])
        .await;
    assert!(stamped.ends_with("Z gamma\n"), "{stamped}");
    let (success, _, stderr) = kubectl.run(&["logs", &name, "--previous"]).await;
    assert!(!success);
    assert!(
        stderr.contains(&format!(
            "previous terminated container \"job\" in pod \"{name}\" not found"
        )),
        "{stderr}"
    );
    pods.create(
        &PostParams::default(),
        &pod("pull", "Never", &one("nope:1")),
    )
    .await
    .expect("pod created");
    in_state(&pods, "pull", "waiting", "ImagePullBackOff", 0).await;
    let (success, _, stderr) = kubectl.run(&["logs", "pull"]).await;
    assert!(!success);
    assert!(
        stderr.contains("Error from server (BadRequest): container \"job\" in pod \"pull\" is waiting to start: trying and failing to pull image"),
        "{stderr}"
    );
    let (success, _, stderr) = kubectl.run(&["logs", "missing"]).await;
    assert!(!success);
    assert!(stderr.contains("pods \"missing\" not found"), "{stderr}");
}
