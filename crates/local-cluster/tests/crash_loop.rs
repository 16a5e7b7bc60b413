//! Readiness of real processes (`Kubelet::Process`): a container is ready only once it has stayed running
//! through the kubelet's one-second status sync, so Deployments of crash-looping pods — a process that exits at
//! once, or after 0.3 s — never have a ready pod, never become Available, run into their progress deadline, and
//! `kubectl rollout status` fails as on Kubernetes; a process that keeps running still rolls out.

mod support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use support::eventually;
use toolforge_local_cluster::{
    Controllers, ImagePolicy, Kubelet, LocalCluster, Options, ProcessOptions,
};

/// The kubectl binaries `rollout status` is checked with.
const KUBECTLS: [&str; 3] = [
    "kubectl",
    "/usr/lib/google-cloud-sdk/bin/kubectl.1.33",
    "/usr/lib/google-cloud-sdk/bin/kubectl.1.27",
];

async fn start(clock_speed: f64, restart_backoff: Duration) -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            kubelet: Some(Kubelet::Process(ProcessOptions {
                tool_data_dir: None,
                restart_backoff,
                images: ImagePolicy::Any,
            })),
            ..Controllers::default()
        }),
        clock_speed,
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

/// A one-replica Deployment running `script` in `/bin/sh` (progress deadline and `minReadySeconds` defaulted).
fn deployment(name: &str, script: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
                "name": "job", "image": "busybox", "command": ["/bin/sh", "-c", "--", script]}]}}}
    }))
    .expect("valid deployment")
}

async fn create(client: &kube::Client, deployments: &[(&str, &str)]) {
    let api: Api<Deployment> = Api::default_namespaced(client.clone());
    for (name, script) in deployments {
        api.create(&PostParams::default(), &deployment(name, script))
            .await
            .expect("deployment created");
    }
}

fn app(pod: &Pod) -> String {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("app"))
        .cloned()
        .unwrap_or_default()
}

/// Whether the pod's container or its `Ready` condition says ready.
fn pod_ready(pod: &Pod) -> bool {
    let Some(status) = &pod.status else {
        return false;
    };
    let container = status.container_statuses.iter().flatten().any(|c| c.ready);
    let condition = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    container || condition
}

fn condition(deployment: &Deployment, kind: &str) -> Option<(String, String)> {
    deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

/// Watches every object of kind `K` (from the start: nothing is missed) and collects each state seen, with
/// when it arrived, for `real` time from now.
async fn watch<K>(
    client: &kube::Client,
    real: Duration,
) -> tokio::task::JoinHandle<Vec<(Instant, K)>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::default_namespaced(client.clone());
    let stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch");
    let mut stream = stream.boxed();
    let until = tokio::time::Instant::now() + real;
    tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Ok(event) = tokio::time::timeout_at(until, stream.try_next()).await {
            let Some(event) = event.expect("watch event") else {
                break;
            };
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                    seen.push((Instant::now(), o));
                }
                WatchEvent::Bookmark(_) => {}
                WatchEvent::Error(error) => panic!("watch error: {error:?}"),
            }
        }
        seen
    })
}

/// What the watches saw of a crash-looping Deployment `name`: never a ready pod, a crash loop with a growing
/// `restartCount` and the process's exit in `lastState`, and never any ready or available replica.
fn assert_crash_looped(name: &str, pods: &[(Instant, Pod)], deployments: &[Deployment]) {
    let seen: Vec<&Pod> = pods
        .iter()
        .map(|(_, p)| p)
        .filter(|p| app(p) == name)
        .collect();
    assert!(!seen.is_empty(), "{name}: no pod seen");
    for pod in &seen {
        assert!(!pod_ready(pod), "{name}: a ready pod: {:?}", pod.status);
    }
    let containers = || {
        seen.iter()
            .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref()?.first())
    };
    let restarts = containers().map(|c| c.restart_count).max().unwrap_or(0);
    assert!(
        restarts >= 2,
        "{name}: restartCount only reached {restarts}"
    );
    let (code, reason) = if name == "crash" {
        (1, "Error")
    } else {
        (0, "Completed")
    };
    assert!(
        containers().any(|c| {
            let last = c.last_state.as_ref().and_then(|s| s.terminated.as_ref());
            last.is_some_and(|t| {
                t.exit_code == code
                    && t.reason.as_deref() == Some(reason)
                    && t.started_at.is_some()
                    && t.finished_at.is_some()
            })
        }),
        "{name}: no lastState.terminated with exit code {code}, startedAt and finishedAt"
    );
    assert!(
        containers().any(|c| {
            let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
            waiting.and_then(|w| w.reason.as_deref()) == Some("CrashLoopBackOff")
        }),
        "{name}: never in CrashLoopBackOff"
    );
    let states: Vec<&Deployment> = deployments
        .iter()
        .filter(|d| d.metadata.name.as_deref() == Some(name))
        .collect();
    assert!(!states.is_empty(), "{name}: no deployment seen");
    for deployment in states {
        let counts = deployment.status.clone().unwrap_or_default();
        assert_eq!(
            (counts.ready_replicas, counts.available_replicas),
            (None, None),
            "{name}: {counts:?}"
        );
        assert_ne!(
            condition(deployment, "Available").map(|(s, _)| s),
            Some("True".to_owned()),
            "{name}: Available"
        );
    }
}

/// Two crash-looping Deployments, one exiting at once and one after a moment with code 0, and a healthy one.
const DEPLOYMENTS: [(&str, &str); 3] = [
    ("crash", "echo starting; exit 1"),
    ("brief", "sleep 0.3; exit 0"),
    ("healthy", "sleep 1000"),
];

#[tokio::test]
async fn crash_looping_deployments_never_have_a_ready_pod_nor_become_available() {
    // Real time, with a short crash-loop back-off so the pods restart several times while watched.
    let (_cluster, client) = start(1.0, Duration::from_millis(50)).await;
    let observe = Duration::from_secs(4);
    let pods = watch::<Pod>(&client, observe).await;
    let deployments = watch::<Deployment>(&client, observe).await;
    create(&client, &DEPLOYMENTS).await;
    let pods = pods.await.expect("pod watch");
    let deployments: Vec<Deployment> = deployments
        .await
        .expect("deployment watch")
        .into_iter()
        .map(|(_, d)| d)
        .collect();

    for name in ["crash", "brief"] {
        assert_crash_looped(name, &pods, &deployments);
    }

    // A process that keeps running is first shown running but not ready, then ready a status sync later.
    let healthy: Vec<&(Instant, Pod)> = pods.iter().filter(|(_, p)| app(p) == "healthy").collect();
    let running = |pod: &Pod| {
        pod.status
            .as_ref()
            .and_then(|s| {
                s.container_statuses
                    .as_ref()?
                    .first()?
                    .state
                    .as_ref()?
                    .running
                    .as_ref()
            })
            .is_some()
    };
    let (first_running, pod) = healthy
        .iter()
        .find(|(_, p)| running(p))
        .expect("healthy pod running");
    assert!(
        !pod_ready(pod),
        "ready as soon as it runs: {:?}",
        pod.status
    );
    let (first_ready, _) = healthy
        .iter()
        .find(|(_, p)| pod_ready(p))
        .expect("healthy pod ready");
    let delay = first_ready.duration_since(*first_running);
    assert!(
        delay >= Duration::from_millis(800),
        "ready {delay:?} after it ran"
    );
    let available = deployments
        .iter()
        .filter(|d| d.metadata.name.as_deref() == Some("healthy"))
        .any(|d| condition(d, "Available").is_some_and(|(s, _)| s == "True"));
    assert!(available, "the healthy deployment became available");
}

/// Runs `program` (a kubectl) against the cluster; returns (success, stdout, stderr).
async fn kubectl(program: &str, kubeconfig: &PathBuf, args: &[&str]) -> (bool, String, String) {
    let output = tokio::process::Command::new(program)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn crash_looping_deployments_exceed_their_progress_deadline_and_rollout_status_fails() {
    // 200× real time: the default 600 s progress deadline passes in 3 s, the 10 s back-off in 50 ms; the status
    // sync stays a real second (200 cluster seconds), well inside the deadline of the healthy Deployment.
    let (cluster, client) = start(200.0, Duration::from_secs(10)).await;
    let began = Instant::now();
    create(&client, &DEPLOYMENTS).await;
    let api: Api<Deployment> = Api::default_namespaced(client.clone());
    for name in ["crash", "brief"] {
        let progressing = eventually("ProgressDeadlineExceeded", || async {
            let deployment = api.get(name).await.ok()?;
            condition(&deployment, "Progressing")
                .filter(|(_, reason)| reason == "ProgressDeadlineExceeded")
        })
        .await;
        assert_eq!(progressing.0, "False", "{name}");
        let deployment = api.get(name).await.expect("deployment");
        assert_eq!(
            condition(&deployment, "Available"),
            Some(("False".to_owned(), "MinimumReplicasUnavailable".to_owned())),
            "{name}"
        );
    }
    // 600 cluster seconds at 200× real time (less the second a deadline may fire early).
    let elapsed = began.elapsed();
    assert!(elapsed >= Duration::from_millis(2900), "{elapsed:?}");
    let healthy = api.get("healthy").await.expect("healthy");
    assert_eq!(
        condition(&healthy, "Progressing"),
        Some(("True".to_owned(), "NewReplicaSetAvailable".to_owned()))
    );

    let directory = tempfile::tempdir().expect("temp dir");
    let kubeconfig = directory.path().join("kubeconfig");
    cluster
        .write_kubeconfig(&kubeconfig)
        .expect("kubeconfig written");
    for program in KUBECTLS {
        for name in ["crash", "brief"] {
            let target = format!("deployment/{name}");
            let (success, stdout, stderr) = kubectl(
                program,
                &kubeconfig,
                &["rollout", "status", &target, "--timeout=20s"],
            )
            .await;
            assert!(!success, "{program} {name}: {stdout}");
            assert!(
                stderr.contains(&format!(
                    "error: deployment \"{name}\" exceeded its progress deadline"
                )),
                "{program} {name}: {stdout} {stderr}"
            );
        }
        // RESTARTS as kubectl prints it from the server's table: the count and when the last run ended.
        let (success, stdout, stderr) = kubectl(
            program,
            &kubeconfig,
            &["get", "pods", "-l", "app=crash", "--no-headers"],
        )
        .await;
        assert!(success, "{program}: {stderr}");
        let cells: Vec<&str> = stdout.split_whitespace().collect();
        assert_eq!(cells.get(1), Some(&"0/1"), "{program}: {stdout}");
        let restarts: u32 = cells
            .get(3)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{program}: {stdout}"));
        assert!(restarts >= 2, "{program}: {stdout}");
        assert!(
            cells.get(4).is_some_and(|c| c.starts_with('(')) && cells.get(5) == Some(&"ago)"),
            "{program}: {stdout}"
        );
        let (success, stdout, stderr) = kubectl(
            program,
            &kubeconfig,
            &["rollout", "status", "deployment/healthy", "--timeout=20s"],
        )
        .await;
        assert!(success, "{program}: {stdout} {stderr}");
        assert!(
            stdout.contains("deployment \"healthy\" successfully rolled out"),
            "{program}: {stdout}"
        );
    }
}
