//! `Kubelet::Process`: pods run as real local processes — exit codes, output in `pods/log` as it is printed,
//! Jobs completing and failing, a missing executable, the environment, and deletion with SIGTERM then SIGKILL.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, LogParams, PostParams};
use serde_json::{Value, json};
use support::eventually;
use toolforge_local_cluster::{
    Controllers, ImagePolicy, Kubelet, LocalCluster, Options, ProcessOptions,
};

const MS: Duration = Duration::from_millis(1);

async fn start(tool_data_dir: Option<&Path>) -> (LocalCluster, kube::Client) {
    start_with(ProcessOptions {
        tool_data_dir: tool_data_dir.map(Path::to_path_buf),
        restart_backoff: 30 * MS,
        // The tests' pods name `busybox`, which a Toolforge node would not pull.
        images: ImagePolicy::Any,
    })
    .await
}

async fn start_with(options: ProcessOptions) -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            job_backoff_base: 20 * MS,
            job_backoff_cap: 100 * MS,
            kubelet: Some(Kubelet::Process(options)),
        }),
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

fn shell(script: &str) -> Value {
    json!(["/bin/sh", "-c", "--", script])
}

/// A container whose process ignores SIGTERM (only the grace period's SIGKILL ends it); it prints `started`.
fn ignoring_sigterm() -> Value {
    json!({"name": "main", "image": "busybox", "command": shell("trap '' TERM; echo started; exec sleep 60")})
}

fn job(name: &str, backoff_limit: i32, script: &str) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"backoffLimit": backoff_limit, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "job", "image": "busybox", "command": shell(script)}]}}}
    }))
    .expect("valid job")
}

fn pod(name: &str, container: &Value, extra: &Value) -> Pod {
    let mut spec = json!({"restartPolicy": "Never", "containers": [container]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec
    }))
    .expect("valid pod")
}

/// `<reason> <message>` of each Event about a pod, oldest first.
async fn pod_events(client: &kube::Client, pod: &str) -> Vec<String> {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(client.clone());
    let mut seen: Vec<(String, String)> = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(pod))
        .map(|e| {
            let text = format!(
                "{} {}",
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            );
            (e.metadata.name.unwrap_or_default(), text)
        })
        .collect();
    seen.sort();
    seen.into_iter().map(|(_, text)| text).collect()
}

/// `(ready, started, restartCount)` of a pod's container and its `Ready` condition.
async fn readiness(pods: &Api<Pod>, name: &str) -> Option<(bool, Option<bool>, i32, String)> {
    let status = pods.get(name).await.ok()?.status?;
    let container = status.container_statuses?.first()?.clone();
    container.state.as_ref()?.running.as_ref()?;
    let ready = status
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "Ready")?
        .status;
    Some((
        container.ready,
        container.started,
        container.restart_count,
        ready,
    ))
}

fn condition(job: &Job, kind: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == kind && c.status == "True"))
}

fn terminated(pod: &Pod) -> Option<(i32, String)> {
    let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?;
    let t = status.state.as_ref()?.terminated.as_ref()?;
    Some((t.exit_code, t.reason.clone().unwrap_or_default()))
}

async fn job_pods(pods: &Api<Pod>, job: &str) -> Vec<Pod> {
    pods.list(&ListParams::default().labels(&format!("job-name={job}")))
        .await
        .expect("list")
        .items
}

#[tokio::test]
async fn a_job_whose_process_succeeds_completes_with_its_output_in_the_log() {
    let (_cluster, client) = start(None).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    jobs.create(
        &PostParams::default(),
        &job("hello", 0, "echo hello; echo oops >&2"),
    )
    .await
    .expect("job");
    eventually("the job completes", || async {
        let job = jobs.get("hello").await.ok()?;
        condition(&job, "Complete").then_some(())
    })
    .await;
    let pod = job_pods(&pods, "hello").await.remove(0);
    let name = pod.metadata.name.clone().expect("name");
    assert_eq!(terminated(&pod), Some((0, "Completed".to_owned())));
    let status = pod.status.expect("status");
    assert_eq!(status.phase.as_deref(), Some("Succeeded"));
    let log = pods.logs(&name, &LogParams::default()).await.expect("log");
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["hello", "oops"]);
}

#[tokio::test]
async fn a_process_exiting_3_fails_its_pod_and_the_job_backs_off_and_fails() {
    let (_cluster, client) = start(None).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    jobs.create(
        &PostParams::default(),
        &job("three", 1, "echo failing; exit 3"),
    )
    .await
    .expect("job");
    eventually("the job fails", || async {
        let job = jobs.get("three").await.ok()?;
        condition(&job, "Failed").then_some(())
    })
    .await;
    let failed = job_pods(&pods, "three").await;
    assert_eq!(failed.len(), 2, "one retry after the first failure");
    for pod in failed {
        assert_eq!(terminated(&pod), Some((3, "Error".to_owned())));
        let status = pod.status.expect("status");
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        let started = status.container_statuses.expect("statuses")[0]
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.started_at.clone());
        assert!(started.is_some(), "startedAt is set");
    }
}

#[tokio::test]
async fn a_missing_executable_is_a_start_error_with_exit_code_128() {
    let (_cluster, client) = start(None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let container = json!({"name": "main", "image": "busybox", "command": ["/no/such/run-it"]});
    pods.create(
        &PostParams::default(),
        &pod("missing", &container, &json!({})),
    )
    .await
    .expect("pod");
    let (code, reason) = eventually("the start error", || async {
        terminated(&pods.get("missing").await.ok()?)
    })
    .await;
    assert_eq!((code, reason.as_str()), (128, "StartError"));
    let pod = pods.get("missing").await.expect("pod");
    assert_eq!(pod.status.and_then(|s| s.phase).as_deref(), Some("Failed"));
}

#[tokio::test]
async fn a_process_killed_by_a_signal_exits_with_128_plus_the_signal() {
    let (_cluster, client) = start(None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let container = json!({"name": "main", "image": "busybox", "command": shell("kill -KILL $$")});
    pods.create(
        &PostParams::default(),
        &pod("killed", &container, &json!({})),
    )
    .await
    .expect("pod");
    let (code, reason) = eventually("the process ends", || async {
        terminated(&pods.get("killed").await.ok()?)
    })
    .await;
    assert_eq!((code, reason.as_str()), (137, "Error"));
}

#[tokio::test]
async fn a_restarting_container_crash_loops_with_its_real_exit_code() {
    let (_cluster, client) = start(None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let container =
        json!({"name": "main", "image": "busybox", "command": shell("echo run; exit 4")});
    let always = json!({"restartPolicy": "Always"});
    pods.create(&PostParams::default(), &pod("loop", &container, &always))
        .await
        .expect("pod");
    let last = eventually("two restarts", || async {
        let pod = pods.get("loop").await.ok()?;
        let status = pod.status?.container_statuses?.remove(0);
        (status.restart_count >= 2).then_some(status.last_state?.terminated?)
    })
    .await;
    assert_eq!(last.exit_code, 4);
    assert_eq!(last.reason.as_deref(), Some("Error"));
    let previous = LogParams {
        previous: true,
        ..LogParams::default()
    };
    let log = pods.logs("loop", &previous).await.expect("previous log");
    assert_eq!(log, "run\n");
}

/// Creates `pod` and waits until its process runs and printed `log`.
async fn create_running(pods: &Api<Pod>, pod: &Pod, log: &str) {
    pods.create(&PostParams::default(), pod).await.expect("pod");
    let name = pod.metadata.name.as_deref().expect("a named pod");
    eventually("the process runs and printed", || async {
        let text = pods.logs(name, &LogParams::default()).await.ok()?;
        (text == log).then_some(())
    })
    .await;
}

#[tokio::test]
async fn deleting_a_running_pod_terminates_its_process_within_the_grace_period() {
    let (_cluster, client) = start(None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let container = json!({"name": "main", "image": "busybox", "command": shell("echo started; exec sleep 60")});
    let grace = json!({"terminationGracePeriodSeconds": 5});
    // The output is served while the process still runs.
    create_running(&pods, &pod("sleeper", &container, &grace), "started\n").await;
    let begun = Instant::now();
    pods.delete("sleeper", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the pod is gone", || async {
        pods.get_opt("sleeper").await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(
        begun.elapsed() < Duration::from_secs(3),
        "SIGTERM ends sleep at once"
    );

    // A process that ignores SIGTERM is killed once the grace period is over.
    let stubborn = ignoring_sigterm();
    let grace = json!({"terminationGracePeriodSeconds": 1});
    create_running(&pods, &pod("stubborn", &stubborn, &grace), "started\n").await;
    let begun = Instant::now();
    pods.delete("stubborn", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the pod is gone", || async {
        pods.get_opt("stubborn").await.ok()?.is_none().then_some(())
    })
    .await;
    let took = begun.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "killed after the grace period, not before ({took:?})"
    );
    assert!(
        took < Duration::from_secs(4),
        "killed soon after the grace period ({took:?})"
    );
}

#[tokio::test]
async fn with_a_fast_clock_a_30_second_grace_period_ends_in_a_fraction_of_a_second() {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            kubelet: Some(Kubelet::Process(ProcessOptions {
                images: ImagePolicy::Any,
                ..ProcessOptions::default()
            })),
            ..Controllers::default()
        }),
        clock_speed: 1000.0,
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let pods: Api<Pod> = Api::namespaced(cluster.client().expect("client"), "default");
    let stubborn = ignoring_sigterm();
    let grace = json!({"terminationGracePeriodSeconds": 30});
    create_running(&pods, &pod("stubborn", &stubborn, &grace), "started\n").await;
    let begun = Instant::now();
    pods.delete("stubborn", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the pod is gone", || async {
        pods.get_opt("stubborn").await.ok()?.is_none().then_some(())
    })
    .await;
    // 30 cluster seconds are 30 real milliseconds; the rest is the kubelet's real-time polling.
    let took = begun.elapsed();
    assert!(took < Duration::from_secs(2), "killed after {took:?}");
}

#[tokio::test]
async fn what_the_process_started_is_stopped_with_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let (_cluster, client) = start(Some(home.path())).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    // A background child that would leave a mark if it outlived the pod, and a foreground one sh waits for.
    let script = "(sleep 1; touch \"$HOME/survived\") & echo started; sleep 60";
    let container = json!({"name": "main", "image": "busybox", "command": shell(script)});
    create_running(&pods, &pod("group", &container, &json!({})), "started\n").await;
    pods.delete("group", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the pod is gone", || async {
        pods.get_opt("group").await.ok()?.is_none().then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !home.path().join("survived").exists(),
        "the whole process group got SIGTERM"
    );

    // A Job's process that exits leaves nothing behind either.
    let jobs: Api<Job> = Api::namespaced(pods.clone().into_client(), "default");
    let script = "(sleep 1; touch \"$HOME/lingered\") & echo done";
    jobs.create(&PostParams::default(), &job("leaves", 0, script))
        .await
        .expect("job");
    eventually("the job completes", || async {
        condition(&jobs.get("leaves").await.ok()?, "Complete").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !home.path().join("lingered").exists(),
        "killed with its first process"
    );
}

#[tokio::test]
async fn follow_streams_lines_as_the_process_prints_them_and_ends_when_it_exits() {
    let (_cluster, client) = start(None).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let container = json!({"name": "main", "image": "busybox",
        "command": shell("echo one; sleep 1; echo two")});
    create_running(&pods, &pod("talker", &container, &json!({})), "one\n").await;
    let follow = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let mut lines = pods
        .log_stream("talker", &follow)
        .await
        .expect("stream")
        .lines();
    assert_eq!(
        lines.try_next().await.expect("read").as_deref(),
        Some("one")
    );
    let pod = pods.get("talker").await.expect("pod");
    assert_eq!(terminated(&pod), None, "still running after the first line");
    assert_eq!(
        lines.try_next().await.expect("read").as_deref(),
        Some("two")
    );
    let end = tokio::time::timeout(Duration::from_secs(5), lines.try_next()).await;
    assert_eq!(end.expect("the stream ends").expect("read"), None);
    let pod = pods.get("talker").await.expect("pod");
    assert_eq!(terminated(&pod), Some((0, "Completed".to_owned())));
}

#[tokio::test]
async fn the_process_sees_home_tool_data_dir_port_and_its_env_in_a_created_working_dir() {
    let home = tempfile::tempdir().expect("tempdir");
    let (_cluster, client) = start(Some(home.path())).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let working = home.path().join("not/yet/there");
    let container = json!({"name": "main", "image": "busybox",
        "command": shell("echo \"$HOME|$TOOL_DATA_DIR|$PORT|$GREETING\"; pwd"),
        "workingDir": working.to_str().expect("utf-8"),
        "ports": [{"containerPort": 8000, "protocol": "TCP"}],
        "env": [{"name": "GREETING", "value": "hi"}]});
    pods.create(&PostParams::default(), &pod("env", &container, &json!({})))
        .await
        .expect("pod");
    eventually("the process ends", || async {
        terminated(&pods.get("env").await.ok()?)
    })
    .await;
    let log = pods.logs("env", &LogParams::default()).await.expect("log");
    let home = home.path().display();
    assert_eq!(
        log,
        format!("{home}|{home}|8000|hi\n{}\n", working.display())
    );
    assert!(working.is_dir());
}

#[tokio::test]
async fn an_image_the_node_cannot_pull_waits_in_err_image_pull_then_image_pull_back_off() {
    const PULL_ERROR: &str = "rpc error: code = NotFound desc = failed to pull and unpack image \"nope:1\": failed to resolve reference \"nope:1\": not found";
    let home = tempfile::tempdir().expect("temp dir");
    let (_cluster, client) = start_with(ProcessOptions {
        tool_data_dir: Some(home.path().to_path_buf()),
        restart_backoff: 100 * MS,
        images: ImagePolicy::Toolforge,
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let container = json!({"name": "job", "image": "nope:1", "command": shell("touch ran")});
    pods.create(&PostParams::default(), &pod("nope", &container, &json!({})))
        .await
        .expect("pod created");
    let waiting = |reason: &'static str| {
        let pods = pods.clone();
        async move {
            let pod = pods.get("nope").await.expect("pod");
            let status = pod.status?;
            let state = status.container_statuses?.first()?.state.clone()?;
            let waiting = state.waiting?;
            (waiting.reason.as_deref() == Some(reason))
                .then(|| (status.phase, waiting.message.unwrap_or_default()))
        }
    };
    let (phase, message) = eventually("ErrImagePull", || waiting("ErrImagePull")).await;
    assert_eq!(phase.as_deref(), Some("Pending"));
    assert_eq!(message, PULL_ERROR);
    let (phase, message) = eventually("ImagePullBackOff", || waiting("ImagePullBackOff")).await;
    assert_eq!(phase.as_deref(), Some("Pending"));
    assert_eq!(message, "Back-off pulling image \"nope:1\"");

    let seen = pod_events(&client, "nope").await;
    assert_eq!(
        seen,
        [
            "Scheduled Successfully assigned default/nope to local".to_owned(),
            "Pulling Pulling image \"nope:1\"".to_owned(),
            format!("Failed Failed to pull image \"nope:1\": {PULL_ERROR}"),
            "Failed Error: ErrImagePull".to_owned(),
            "BackOff Back-off pulling image \"nope:1\"".to_owned(),
            "Failed Error: ImagePullBackOff".to_owned(),
        ]
    );
    assert!(
        !home.path().join("ran").exists(),
        "the container never ran (its command would have created `ran`)"
    );
}

#[tokio::test]
async fn a_readiness_probe_keeps_the_container_unready_until_it_passes() {
    let home = tempfile::tempdir().expect("temp dir");
    let (_cluster, client) = start(Some(home.path())).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let container = json!({"name": "web", "image": "busybox", "command": shell("exec sleep 60"),
        "readinessProbe": {"exec": {"command": shell("test -f ready || { echo not yet; exit 1; }")}, "periodSeconds": 1, "failureThreshold": 1}});
    pods.create(&PostParams::default(), &pod("web", &container, &json!({})))
        .await
        .expect("pod created");
    let unready = eventually("running, not ready", || async {
        readiness(&pods, "web").await.filter(|(ready, ..)| !ready)
    })
    .await;
    assert_eq!(unready, (false, Some(true), 0, "False".to_owned()));
    let refused = eventually("an Unhealthy event", || async {
        pod_events(&client, "web")
            .await
            .into_iter()
            .find(|e| e.starts_with("Unhealthy"))
    })
    .await;
    assert_eq!(refused, "Unhealthy Readiness probe failed: not yet\n");
    std::fs::write(home.path().join("ready"), "").expect("ready file");
    let ready = eventually("ready", || async {
        readiness(&pods, "web").await.filter(|(ready, ..)| *ready)
    })
    .await;
    assert_eq!(ready, (true, Some(true), 0, "True".to_owned()));
    std::fs::remove_file(home.path().join("ready")).expect("removed");
    eventually("unready again", || async {
        readiness(&pods, "web").await.filter(|(ready, ..)| !ready)
    })
    .await;
}

#[tokio::test]
async fn a_failing_liveness_probe_kills_and_restarts_the_container() {
    let home = tempfile::tempdir().expect("temp dir");
    let (_cluster, client) = start(Some(home.path())).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let container = json!({"name": "job", "image": "busybox", "command": shell("exec sleep 60"),
        "livenessProbe": {"exec": {"command": shell("echo sick; exit 1")}, "initialDelaySeconds": 1,
            "periodSeconds": 1, "failureThreshold": 2}});
    let started = Instant::now();
    pods.create(
        &PostParams::default(),
        &pod("live", &container, &json!({"restartPolicy": "Always"})),
    )
    .await
    .expect("pod created");
    let restarted = eventually("a restart", || async {
        let pod = pods.get("live").await.ok()?;
        let status = pod.status?.container_statuses?.first()?.clone();
        (status.restart_count == 1).then_some(status)
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the first probe waits a second and the second failure a period more"
    );
    let last = restarted
        .last_state
        .and_then(|s| s.terminated)
        .expect("the killed run");
    assert_eq!(
        (last.exit_code, last.reason.as_deref()),
        (143, Some("Error"))
    );
    let events = pod_events(&client, "live").await;
    let failure = "Unhealthy Liveness probe failed: sick\n";
    assert_eq!(
        events.iter().filter(|e| *e == failure).count(),
        1,
        "repeats of one Event are counted, not duplicated: {events:?}"
    );
    assert!(
        events
            .contains(&"Killing Container job failed liveness probe, will be restarted".to_owned()),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_startup_probe_gates_readiness_until_its_http_endpoint_answers() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        probe.local_addr().expect("address").port()
    };
    let (_cluster, client) = start(None).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let container = json!({"name": "web", "image": "busybox", "command": shell("exec sleep 60"),
        "ports": [{"name": "http", "containerPort": port}],
        "startupProbe": {"httpGet": {"port": "http", "path": "/healthz"}, "periodSeconds": 1,
            "failureThreshold": 30}});
    pods.create(&PostParams::default(), &pod("web", &container, &json!({})))
        .await
        .expect("pod created");
    let starting = eventually("running, not started", || async {
        readiness(&pods, "web").await
    })
    .await;
    assert_eq!(starting, (false, Some(false), 0, "False".to_owned()));
    let refused = eventually("an Unhealthy event", || async {
        pod_events(&client, "web")
            .await
            .into_iter()
            .find(|e| e.starts_with("Unhealthy"))
    })
    .await;
    assert_eq!(
        refused,
        format!(
            "Unhealthy Startup probe failed: Get \"http://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    let server = std::net::TcpListener::bind(("127.0.0.1", port)).expect("port still free");
    let answer = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut stream, _) = server.accept().expect("probed");
        let mut request = [0_u8; 1024];
        let read = stream.read(&mut request).expect("request");
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        String::from_utf8_lossy(&request[..read]).into_owned()
    });
    let request = tokio::task::spawn_blocking(move || answer.join().expect("answered"))
        .await
        .expect("joined");
    assert!(
        request.starts_with("GET /healthz HTTP/1.1\r\n")
            && request.contains("User-Agent: kube-probe/1.33"),
        "{request}"
    );
    let started = eventually("started and ready", || async {
        readiness(&pods, "web").await.filter(|(ready, ..)| *ready)
    })
    .await;
    assert_eq!(started, (true, Some(true), 0, "True".to_owned()));
}

/// The pod's container state, once it terminated: `(phase, exit code, reason)`.
async fn final_state(pods: &Api<Pod>, name: &str) -> Option<(String, i32, String)> {
    let pod = pods.get(name).await.ok()?;
    let phase = pod.status.as_ref()?.phase.clone()?;
    let (code, reason) = terminated(&pod)?;
    Some((phase, code, reason))
}

#[tokio::test]
async fn a_deleted_pod_gets_sigterm_first_and_a_second_delete_shortens_its_grace_period() {
    let home = tempfile::tempdir().expect("tempdir");
    let (_cluster, client) = start(Some(home.path())).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // Default grace period (30 s). A finalizer keeps the pod after the kubelet's final delete, to read its
    // final status.
    let trapping = json!({"name": "main", "image": "busybox", "command": shell(
        "trap 'echo term > got-term; exit 0' TERM; echo started; while :; do sleep 0.1; done")});
    let mut kept = pod("trapper", &trapping, &json!({}));
    kept.metadata.finalizers = Some(vec!["example.org/keep".to_owned()]);
    create_running(&pods, &kept, "started\n").await;
    let begun = Instant::now();
    pods.delete("trapper", &DeleteParams::default())
        .await
        .expect("delete");
    let (phase, code, reason) =
        eventually("the pod terminated", || final_state(&pods, "trapper")).await;
    assert!(
        begun.elapsed() < Duration::from_secs(3),
        "it ended when its process did"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("got-term")).expect("the trap ran"),
        "term\n"
    );
    // Its process exited 0 on SIGTERM: the pod succeeded, as a kubelet reports it.
    assert_eq!(
        (phase.as_str(), code, reason.as_str()),
        ("Succeeded", 0, "Completed")
    );
    let killing: Vec<String> = pod_events(&client, "trapper")
        .await
        .into_iter()
        .filter(|e| e.starts_with("Killing"))
        .collect();
    assert_eq!(killing, ["Killing Stopping container main"]);

    // A process ignoring SIGTERM, deleted with the default 30 s, then again with 1 s: killed a second later.
    let stubborn = ignoring_sigterm();
    create_running(&pods, &pod("stubborn", &stubborn, &json!({})), "started\n").await;
    pods.delete("stubborn", &DeleteParams::default())
        .await
        .expect("delete");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let waiting = pods.get("stubborn").await.expect("still there");
    assert_eq!(waiting.metadata.deletion_grace_period_seconds, Some(30));
    let begun = Instant::now();
    pods.delete("stubborn", &DeleteParams::default().grace_period(1))
        .await
        .expect("second delete");
    eventually("the pod is gone", || async {
        pods.get_opt("stubborn").await.ok()?.is_none().then_some(())
    })
    .await;
    let took = begun.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "killed after the shorter grace period, not before ({took:?})"
    );
    assert!(took < Duration::from_secs(4), "not after 30 s ({took:?})");
}

#[tokio::test]
async fn toolforge_images_run_and_always_pulls_report_the_pull() {
    let (_cluster, client) = start_with(ProcessOptions {
        restart_backoff: 30 * MS,
        ..ProcessOptions::default()
    })
    .await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let table = "docker-registry.svc.toolforge.org/toolforge-bookworm-sssd-web:latest";
    let harbor = "tools-harbor.wmcloud.org/tool-mytool/web:v1";
    for (name, image) in [("table", table), ("harbor", harbor)] {
        let container = json!({"name": "job", "image": image, "command": shell("echo ran")});
        pods.create(&PostParams::default(), &pod(name, &container, &json!({})))
            .await
            .expect("pod created");
    }
    for name in ["table", "harbor"] {
        let (phase, ..) = eventually("the pod ran", || final_state(&pods, name)).await;
        assert_eq!(phase, "Succeeded", "{name}");
    }
    // `:latest` defaults to `imagePullPolicy: Always`: pulled at every start.
    let events = pod_events(&client, "table").await;
    assert!(
        events.contains(&format!("Pulling Pulling image \"{table}\"")),
        "{events:?}"
    );
    let prefix = format!("Pulled Successfully pulled image \"{table}\" in ");
    let pulled = events
        .iter()
        .find(|e| e.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{events:?}"));
    assert!(
        pulled.contains(" including waiting). Image size: ") && pulled.ends_with(" bytes."),
        "{pulled}"
    );
    // A tag other than `latest` is `IfNotPresent`: already on the node.
    let events = pod_events(&client, "harbor").await;
    assert!(
        events.contains(&format!(
            "Pulled Container image \"{harbor}\" already present on machine"
        )),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| e.starts_with("Pulling")),
        "{events:?}"
    );
}

#[tokio::test]
async fn the_node_renews_its_lease_and_kubelet_events_name_the_node() {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            kubelet: Some(Kubelet::Process(ProcessOptions::default())),
            ..Controllers::default()
        }),
        // 10 cluster seconds between renewals are half a real second; the kubelet waits at least one.
        clock_speed: 20.0,
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let client = cluster.client().expect("client");
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "kube-node-lease");
    let lease = eventually("the node's lease", || async {
        leases.get_opt("local").await.ok()?
    })
    .await;
    let spec = lease.spec.clone().expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("local"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    let owner = &lease.metadata.owner_references.expect("owned")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Node", "local")
    );
    let first = spec.renew_time.expect("renewed");
    eventually("a renewal", || async {
        let renewed = leases.get("local").await.ok()?.spec?.renew_time?;
        (renewed.0 > first.0).then_some(())
    })
    .await;

    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let container =
        json!({"name": "job", "image": "nowhere.invalid/none:1", "command": shell("true")});
    pods.create(&PostParams::default(), &pod("p", &container, &json!({})))
        .await
        .expect("pod created");
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(client);
    let failed = eventually("the kubelet's Failed event", || async {
        events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("Failed"))
    })
    .await;
    let source = failed.source.expect("source");
    assert_eq!(
        (source.component.as_deref(), source.host.as_deref()),
        (Some("kubelet"), Some("local"))
    );
    assert_eq!(
        (
            failed.reporting_component.as_deref(),
            failed.reporting_instance.as_deref()
        ),
        (Some("kubelet"), Some("local"))
    );
    cluster.shutdown().await.expect("shutdown");
}

/// Whether this test (and so its cluster) runs as root.
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

#[tokio::test]
async fn a_container_that_would_break_run_as_non_root_is_refused_and_never_runs() {
    let home = tempfile::tempdir().expect("tempdir");
    let (_cluster, client) = start(Some(home.path())).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    // As root, a container without `runAsUser` would run as root (there is no image user); otherwise only an
    // explicit `runAsUser: 0` would.
    let (context, expected) = if running_as_root() {
        (
            json!({"runAsNonRoot": true}),
            "container has runAsNonRoot and image will run as root",
        )
    } else {
        (
            json!({"runAsNonRoot": true, "runAsUser": 0}),
            "container's runAsUser breaks non-root policy",
        )
    };
    let container = json!({"name": "main", "image": "busybox", "command": shell("touch ran")});
    let created = pods
        .create(
            &PostParams::default(),
            &pod("rooted", &container, &json!({"securityContext": context})),
        )
        .await
        .expect("pod created");
    let uid = created.metadata.uid.expect("uid");
    let message = eventually("CreateContainerConfigError", || async {
        let pod = pods.get("rooted").await.ok()?;
        let status = pod.status?;
        let waiting = status.container_statuses?.first()?.state.clone()?.waiting?;
        (waiting.reason.as_deref() == Some("CreateContainerConfigError"))
            .then_some((status.phase, waiting.message))
    })
    .await;
    let full = format!("{expected} (pod: \"rooted_default({uid})\", container: main)");
    assert_eq!(message, (Some("Pending".to_owned()), Some(full.clone())));
    assert!(
        pod_events(&client, "rooted")
            .await
            .contains(&format!("Failed Error: {full}"))
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!home.path().join("ran").exists(), "the command never ran");
}

#[tokio::test]
async fn a_root_cluster_runs_the_container_as_its_run_as_user_in_a_working_dir_it_owns() {
    let (_cluster, client) = start(None).await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    // A fresh directory the kubelet creates: anyone may reach it, and the container's user owns it.
    let top = std::env::temp_dir().join(format!("run-as-{}", std::process::id()));
    let work = top.join("work");
    let container = json!({"name": "main", "image": "busybox", "workingDir": work,
        "command": shell("echo $(id -u):$(id -g); touch made-here")});
    let context = json!({"runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65533});
    pods.create(
        &PostParams::default(),
        &pod("nobody", &container, &json!({"securityContext": context})),
    )
    .await
    .expect("pod created");
    let (phase, ..) = eventually("the pod ran", || final_state(&pods, "nobody")).await;
    let log = pods
        .logs("nobody", &LogParams::default())
        .await
        .expect("log");
    let made = std::fs::metadata(work.join("made-here"));
    let _ = std::fs::remove_dir_all(&top);
    assert_eq!(phase, "Succeeded", "{log}");
    if running_as_root() {
        assert_eq!(log, "65534:65533\n");
        let made = made.expect("the process wrote in its working directory");
        assert_eq!(
            (
                std::os::unix::fs::MetadataExt::uid(&made),
                std::os::unix::fs::MetadataExt::gid(&made)
            ),
            (65534, 65533)
        );
    } else {
        // A cluster that is not root cannot change users: the process runs as the cluster's user.
        assert_ne!(log, "65534:65533\n");
    }
}
