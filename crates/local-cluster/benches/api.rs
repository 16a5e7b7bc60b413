//! Throughput of the local cluster through kube-rs: create/get/replace of Jobs, listing 1 000 Jobs, and watch
//! fan-out (many watchers, many writes), a new connection per request (the TLS handshake's cost), and durable
//! writes (ConfigMaps created on a cluster with a state file, one at a time and 8 in flight). Run with
//! `cargo bench -p toolforge-local-cluster`; figures go to stdout.

#![expect(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use toolforge_local_cluster::{LocalCluster, Options};

const JOBS: usize = 1000;
const WATCHERS: usize = 50;
const FAN_OUT_WRITES: usize = 200;
const DURABLE_WRITES: usize = 300;
const IN_FLIGHT: usize = 8;

fn job(name: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["echo", "hi"]}]}}}
    }))
    .expect("valid job")
}

fn report(what: &str, count: usize, elapsed: Duration) {
    let per_second = f64::from(u32::try_from(count).unwrap_or(u32::MAX)) / elapsed.as_secs_f64();
    println!(
        "{what:<34} {count:>6} in {:>8.1} ms  {per_second:>9.0}/s",
        elapsed.as_secs_f64() * 1000.0
    );
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"key": "value"}}))
        .expect("valid config map")
}

/// Creates ConfigMaps on a cluster with a state file: every acknowledged write is durable, so this is the cost
/// of the fsync behind each response (or a share of one, with writes in flight together).
async fn durable_writes() {
    let directory = tempfile::tempdir().expect("temp dir");
    let cluster = LocalCluster::start(Options {
        state_file: Some(directory.path().join("state.json")),
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let maps: Api<ConfigMap> = Api::default_namespaced(cluster.client().expect("client"));
    let started = Instant::now();
    for i in 0..DURABLE_WRITES {
        maps.create(&PostParams::default(), &config_map(&format!("one-{i}")))
            .await
            .expect("create");
    }
    report(
        "durable create (sequential)",
        DURABLE_WRITES,
        started.elapsed(),
    );
    let started = Instant::now();
    let created: Vec<_> = futures::stream::iter(0..DURABLE_WRITES)
        .map(|i| {
            let maps = maps.clone();
            async move {
                maps.create(&PostParams::default(), &config_map(&format!("many-{i}")))
                    .await
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    assert!(created.iter().all(Result::is_ok));
    report(
        &format!("durable create ({IN_FLIGHT} in flight)"),
        DURABLE_WRITES,
        started.elapsed(),
    );
    cluster.shutdown().await.expect("shutdown");
}

#[tokio::main]
async fn main() {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let jobs: Api<Job> = Api::default_namespaced(cluster.client().expect("client"));

    let started = Instant::now();
    for i in 0..JOBS {
        jobs.create(&PostParams::default(), &job(&format!("job-{i}")))
            .await
            .expect("create");
    }
    report("create (sequential)", JOBS, started.elapsed());

    let started = Instant::now();
    for i in 0..JOBS {
        jobs.get(&format!("job-{i}")).await.expect("get");
    }
    report("get (sequential)", JOBS, started.elapsed());

    let started = Instant::now();
    for i in 0..JOBS {
        let name = format!("job-{i}");
        let mut live = jobs.get(&name).await.expect("get");
        live.metadata
            .labels
            .get_or_insert_default()
            .insert("touched".into(), "yes".into());
        jobs.replace(&name, &PostParams::default(), &live)
            .await
            .expect("replace");
    }
    report("get+replace (sequential)", JOBS, started.elapsed());

    let lists = 20;
    let started = Instant::now();
    for _ in 0..lists {
        let list = jobs.list(&ListParams::default()).await.expect("list");
        assert_eq!(list.items.len(), JOBS);
    }
    report("list of 1000 jobs", lists, started.elapsed());

    let version = jobs
        .list(&ListParams::default().limit(1))
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let stream = jobs
            .watch(&WatchParams::default().timeout(60), &version)
            .await
            .expect("watch")
            .boxed();
        watchers.push(tokio::spawn(async move {
            let mut stream = stream;
            let mut seen = 0;
            while seen < FAN_OUT_WRITES {
                match stream.next().await {
                    Some(Ok(WatchEvent::Added(_))) => seen += 1,
                    Some(_) => {}
                    None => break,
                }
            }
            seen
        }));
    }
    let started = Instant::now();
    for i in 0..FAN_OUT_WRITES {
        jobs.create(&PostParams::default(), &job(&format!("fan-{i}")))
            .await
            .expect("create");
    }
    let mut delivered = 0;
    for watcher in watchers {
        delivered += watcher.await.expect("watcher task");
    }
    report(
        &format!("watch fan-out ({WATCHERS} watchers)"),
        delivered,
        started.elapsed(),
    );
    assert_eq!(delivered, WATCHERS * FAN_OUT_WRITES);
    // Every new client opens a new connection: with TLS, each pays a handshake.
    let connections = 200;
    let started = Instant::now();
    for _ in 0..connections {
        let fresh = cluster.client().expect("client");
        fresh.apiserver_version().await.expect("version");
    }
    report(
        "new connection + GET /version",
        connections,
        started.elapsed(),
    );
    println!(
        "requests counted: {}",
        cluster.request_counts().values().sum::<u64>()
    );
    cluster.shutdown().await.expect("shutdown");
    durable_writes().await;
}
