//! What a cluster with a state file survives, and the API server's limits. The crash tests run the cluster in a
//! child process — this test binary again, running only [`child_cluster_process`] — and SIGKILL it: every write
//! acknowledged before the kill is there after a restart, and the container processes the killed cluster left
//! running are stopped before new ones start; namespaces restored from the state file get the current CA bundle.
//! Then: Events expire after the event TTL, and ConfigMaps over
//! 1 MiB and request bodies over 3 MiB are refused as Kubernetes refuses them.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use support::eventually;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use toolforge_local_cluster::{
    Controllers, ImagePolicy, Kubelet, LocalCluster, Options, ProcessOptions, credentials_directory,
};

/// Set in the child process: the state file of the cluster it serves.
const CHILD_STATE: &str = "LOCAL_CLUSTER_TEST_CHILD_STATE";
/// What the child prints once its kubeconfig is written.
const READY: &str = "local cluster ready";

fn kubeconfig_path(state: &Path) -> PathBuf {
    state.with_extension("kubeconfig")
}

/// The cluster of a child process (a no-op in an ordinary test run): serves `CHILD_STATE` with the process
/// kubelet until its stdin closes, then shuts down cleanly; a SIGKILL from the parent is the crash under test.
#[tokio::test]
#[expect(
    clippy::print_stdout,
    reason = "the child tells its parent on stdout that it serves"
)]
async fn child_cluster_process() {
    let Some(state) = std::env::var_os(CHILD_STATE).map(PathBuf::from) else {
        return;
    };
    let cluster = LocalCluster::start(Options {
        state_file: Some(state.clone()),
        credentials_dir: Some(credentials_directory(&state)),
        controllers: Some(Controllers {
            kubelet: Some(Kubelet::Process(ProcessOptions {
                restart_backoff: Duration::from_millis(100),
                images: ImagePolicy::Any,
                ..ProcessOptions::default()
            })),
            ..Controllers::default()
        }),
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    cluster
        .write_kubeconfig(&kubeconfig_path(&state))
        .expect("kubeconfig written");
    println!("{READY}");
    tokio::task::spawn_blocking(|| std::io::stdin().lines().take_while(Result::is_ok).count())
        .await
        .expect("stdin read until closed");
    cluster.shutdown().await.expect("clean shutdown");
}

/// A cluster in a child process.
struct ChildCluster {
    process: Child,
    client: kube::Client,
}

impl ChildCluster {
    async fn start(state: &Path) -> ChildCluster {
        let kubeconfig = kubeconfig_path(state);
        let _ = std::fs::remove_file(&kubeconfig);
        let mut process = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "child_cluster_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_STATE, state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("child starts");
        let mut stdout = BufReader::new(process.stdout.take().expect("piped")).lines();
        loop {
            let line = stdout.next_line().await.expect("child output");
            match line {
                // libtest prints the test's name on the same line first.
                Some(line) if line.ends_with(READY) => break,
                Some(_) => {}
                None => panic!("the child cluster exited before it was ready"),
            }
        }
        // The rest of its output is read, or libtest's last lines would fail on a closed pipe.
        drop(tokio::spawn(async move {
            while let Ok(Some(_)) = stdout.next_line().await {}
        }));
        let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).expect("kubeconfig parses");
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .expect("config");
        let client = kube::Client::try_from(config).expect("client");
        ChildCluster { process, client }
    }

    /// SIGKILL: no shutdown, no last save.
    async fn kill(mut self) {
        self.process.start_kill().expect("killed");
        self.process.wait().await.expect("reaped");
    }

    /// Closes its stdin: the cluster shuts down cleanly and stops its processes.
    async fn stop(mut self) {
        drop(self.process.stdin.take());
        let status = self.process.wait().await.expect("exits");
        assert!(status.success(), "the child cluster failed: {status}");
    }
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))
        .expect("valid config map")
}

async fn config_map_names(client: &kube::Client) -> Vec<String> {
    let maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    maps.list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .collect()
}

#[tokio::test]
async fn every_acknowledged_write_survives_a_sigkill_right_after_its_response() {
    let directory = tempfile::tempdir().expect("temp dir");
    let state = directory.path().join("state.json");
    let mut acknowledged: Vec<String> = Vec::new();
    for round in 0..20 {
        let cluster = ChildCluster::start(&state).await;
        let names = config_map_names(&cluster.client).await;
        for name in &acknowledged {
            assert!(names.contains(name), "round {round}: {name} was lost");
        }
        let maps: Api<ConfigMap> = Api::default_namespaced(cluster.client.clone());
        // One write alone, then eight in flight together (sharing fsyncs): the kill follows the first response.
        let in_flight = if round % 2 == 0 { 1 } else { 8 };
        let mut creates: FuturesUnordered<_> = (0..in_flight)
            .map(|i| {
                let maps = maps.clone();
                let name = format!("round-{round}-{i}");
                async move {
                    let created = maps
                        .create(&PostParams::default(), &config_map(&name))
                        .await;
                    (name, created.is_ok())
                }
            })
            .collect();
        let Some((first, first_ok)) = creates.next().await else {
            unreachable!("at least one create");
        };
        let mut process = cluster.process;
        process.start_kill().expect("killed");
        assert!(first_ok, "round {round}: the first create failed");
        acknowledged.push(first);
        // Responses already on their way when the kill came are acknowledged writes too.
        while let Some((name, ok)) = creates.next().await {
            if ok {
                acknowledged.push(name);
            }
        }
        process.wait().await.expect("reaped");
    }
    let cluster = ChildCluster::start(&state).await;
    let names = config_map_names(&cluster.client).await;
    for name in &acknowledged {
        assert!(names.contains(name), "{name} was lost");
    }
    assert!(acknowledged.len() >= 20);
    cluster.stop().await;
}

/// The pids of live processes whose command line is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted))
        .filter(|pid| {
            // Zombies left for a reaper that never comes do not run.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
        })
        .collect()
}

#[tokio::test]
async fn the_processes_a_killed_cluster_left_running_are_stopped_and_replaced_by_exactly_one() {
    let directory = tempfile::tempdir().expect("temp dir");
    let state = directory.path().join("state.json");
    // A command line no other test runs, to count this Deployment's processes.
    let seconds = (900_000 + std::process::id()).to_string();
    let argv = ["sleep", seconds.as_str()];
    let cluster = ChildCluster::start(&state).await;
    let deployments: Api<Deployment> = Api::default_namespaced(cluster.client.clone());
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "continuous"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "continuous"}},
            "template": {"metadata": {"labels": {"app": "continuous"}},
                "spec": {"containers": [{"name": "main", "image": "busybox", "command": argv}]}}}
    }))
    .expect("valid deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let first = eventually("the first process", || async {
        let found = processes(&argv);
        (found.len() == 1).then(|| found[0])
    })
    .await;
    // The kubelet records a process just after it started it; a cluster killed in between cannot know it (a
    // window of one reconcile). This test is about the processes it knew.
    let pids = directory.path().join("state.json.pids");
    eventually("the process is recorded", || async {
        std::fs::read_to_string(&pids)
            .is_ok_and(|text| {
                text.lines()
                    .any(|line| line.starts_with(&format!("{first} ")))
            })
            .then_some(())
    })
    .await;
    cluster.kill().await;
    assert_eq!(
        processes(&argv),
        [first],
        "the process outlives its cluster"
    );

    let cluster = ChildCluster::start(&state).await;
    assert!(
        !processes(&argv).contains(&first),
        "the previous life's process is stopped before the cluster serves"
    );
    let second = eventually("a new process", || async {
        let found = processes(&argv);
        (found.len() == 1).then(|| found[0])
    })
    .await;
    assert_ne!(second, first);
    // It stays the only one while the controllers settle.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(processes(&argv), [second]);
    }
    cluster.stop().await;
    eventually("the processes stopped with the cluster", || async {
        processes(&argv).is_empty().then_some(())
    })
    .await;
}

/// Waits until `kube-root-ca.crt` in `namespace` holds the cluster's current CA.
async fn published_ca(cluster: &LocalCluster, namespace: &str) {
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client().expect("client"), namespace);
    let wanted = cluster.ca_certificate_pem().to_owned();
    eventually(&format!("kube-root-ca.crt in {namespace}"), || async {
        let found = maps.get_opt("kube-root-ca.crt").await.expect("get")?;
        (found.data?.get("ca.crt") == Some(&wanted)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn namespaces_restored_from_the_state_file_get_the_ca_bundle_of_the_current_ca() {
    let directory = tempfile::tempdir().expect("temp dir");
    let state = directory.path().join("state.json");
    let start = |controllers: Option<Controllers>, credentials: &str| {
        LocalCluster::start(Options {
            state_file: Some(state.clone()),
            credentials_dir: Some(directory.path().join(credentials)),
            controllers,
            ..Options::default()
        })
    };
    // Made by a cluster without controllers, as one from before the publisher existed: no bundle yet.
    let api_only = start(None, "first").await.expect("cluster starts");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(api_only.client().expect("client"));
    let namespace =
        serde_json::from_value(json!({"metadata": {"name": "restored"}})).expect("valid namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("created");
    let restored: Api<ConfigMap> = Api::namespaced(api_only.client().expect("client"), "restored");
    assert!(
        restored
            .get_opt("kube-root-ca.crt")
            .await
            .expect("get")
            .is_none(),
        "an API server without the controller manager publishes nothing"
    );
    api_only.shutdown().await.expect("shutdown");

    let published = start(Some(Controllers::default()), "first")
        .await
        .expect("cluster starts");
    for namespace in ["restored", "default", "kube-system"] {
        published_ca(&published, namespace).await;
    }
    published.shutdown().await.expect("shutdown");

    // A new CA (the credentials directory replaced) is published over the old bundle.
    let renewed = start(Some(Controllers::default()), "second")
        .await
        .expect("cluster starts");
    published_ca(&renewed, "restored").await;
    renewed.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn an_event_disappears_once_its_ttl_has_passed() {
    let cluster = LocalCluster::start(Options {
        event_ttl: Duration::from_secs(2),
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let events: Api<Event> = Api::default_namespaced(cluster.client().expect("client"));
    let now = jiff::Timestamp::now().to_string();
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "short-lived"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "Started", "message": "Started container main", "type": "Normal",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "source": {"component": "kubelet"}
    }))
    .expect("valid event");
    events
        .create(&PostParams::default(), &event)
        .await
        .expect("created");
    assert!(events.get_opt("short-lived").await.expect("get").is_some());
    eventually("the event to expire", || async {
        events
            .get_opt("short-lived")
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    cluster.shutdown().await.expect("shutdown");
}

fn api_error(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn config_maps_over_one_mebibyte_and_bodies_over_three_are_refused() {
    const MIB: usize = 1 << 20;
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let maps: Api<ConfigMap> = Api::default_namespaced(cluster.client().expect("client"));
    let sized = |name: &str, text: usize, binary: usize| -> ConfigMap {
        let bytes = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            vec![7_u8; binary],
        );
        serde_json::from_value(json!({"metadata": {"name": name},
            "data": {"text": "x".repeat(text)}, "binaryData": {"bytes": bytes}}))
        .expect("valid config map")
    };
    maps.create(&PostParams::default(), &sized("fits", MIB - 1000, 1000))
        .await
        .expect("exactly 1 MiB of values is accepted");
    let error = api_error(
        maps.create(&PostParams::default(), &sized("over", MIB - 1000, 1001))
            .await
            .expect_err("one byte more is refused"),
    );
    assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        error.message,
        "ConfigMap \"over\" is invalid: []: Too long: may not be more than 1048576 bytes"
    );
    let error = api_error(
        maps.create(&PostParams::default(), &sized("huge", 3 * MIB, 0))
            .await
            .expect_err("a body over 3 MiB is refused"),
    );
    assert_eq!(
        (error.code, error.reason.as_str(), error.message.as_str()),
        (
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728"
        )
    );
    cluster.shutdown().await.expect("shutdown");
}
