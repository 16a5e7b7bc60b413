//! The garbage collector's cost per write as the store grows: ConfigMaps with an ownerReference are created
//! (8 in flight) on a cluster holding 10 000 and then 50 000 objects; a collector that works from what changed
//! keeps the writes/s flat, one that scans the store after every write slows down in proportion. After each
//! measurement the owner is deleted, and the collector must remove its dependents (the count is checked).
//! Run with `cargo bench -p toolforge-local-cluster --bench gc`; figures go to stdout.

#![expect(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use toolforge_local_cluster::{LocalCluster, Options};

const SIZES: [usize; 2] = [10_000, 50_000];
const OWNED_WRITES: usize = 500;
const IN_FLIGHT: usize = 8;

fn config_map(name: &str, owner: Option<&ConfigMap>) -> ConfigMap {
    let mut map = json!({"metadata": {"name": name}, "data": {"key": "value"}});
    if let Some(owner) = owner {
        map["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
            "name": owner.metadata.name, "uid": owner.metadata.uid}]);
    }
    serde_json::from_value(map).expect("valid config map")
}

/// Creates the maps named `prefix-<i>` for `range`, `IN_FLIGHT` at a time; the elapsed time.
async fn create_many(
    maps: &Api<ConfigMap>,
    prefix: &str,
    range: std::ops::Range<usize>,
    owner: Option<&ConfigMap>,
) -> Duration {
    let started = Instant::now();
    let results: Vec<_> = futures::stream::iter(range)
        .map(|i| {
            let maps = maps.clone();
            let map = config_map(&format!("{prefix}-{i}"), owner);
            async move { maps.create(&PostParams::default(), &map).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    assert!(results.iter().all(Result::is_ok));
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let maps: Api<ConfigMap> = Api::default_namespaced(cluster.client().expect("client"));
    let mut filled = 0;
    for size in SIZES {
        create_many(&maps, "filler", filled..size, None).await;
        filled = size;
        let owner = maps
            .create(&PostParams::default(), &config_map("owner", None))
            .await
            .expect("owner");
        let elapsed = create_many(&maps, "owned", 0..OWNED_WRITES, Some(&owner)).await;
        let per_second =
            f64::from(u32::try_from(OWNED_WRITES).unwrap_or(u32::MAX)) / elapsed.as_secs_f64();
        println!(
            "owned creates at {size:>6} objects: {OWNED_WRITES} in {:>8.1} ms  {per_second:>7.0}/s",
            elapsed.as_secs_f64() * 1000.0
        );
        maps.delete("owner", &DeleteParams::background())
            .await
            .expect("delete owner");
        let left = maps
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .iter()
            .filter(|m| {
                m.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("owned-"))
            })
            .count();
        assert_eq!(left, 0, "the collector removed the dependents");
    }
    cluster.shutdown().await.expect("shutdown");
}
