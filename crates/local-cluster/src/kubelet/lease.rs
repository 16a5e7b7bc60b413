//! The node's heartbeat: as a kubelet does, it keeps the Lease `kube-node-lease/<node>` (held by the node,
//! `leaseDurationSeconds: 40`, owned by the Node) renewed every 10 seconds of cluster time, which is how clients
//! and the node lifecycle controller tell a live node from a dead one.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::bootstrap::NODE_NAME as NODE;
use crate::registry::meta;
use crate::registry::ops::{self, Part, WriteOptions};
use crate::registry::resources;
use crate::registry::store::Store;

/// How often the kubelet renews its Lease (`nodeLeaseDurationSeconds` / 4 on Kubernetes).
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// The shortest real wait between renewals: under a fast test clock every renewal would otherwise be a durable
/// write many times a second.
const MIN_REAL_WAIT: Duration = Duration::from_secs(1);
/// How long the Lease counts as held without a renewal.
const DURATION_SECONDS: u64 = 40;
const NAMESPACE: &str = "kube-node-lease";

/// Renews the node's Lease now and every [`RENEW_EVERY`] until `shutdown`.
pub(super) fn spawn(store: &Store, shutdown: &CancellationToken) {
    let (store, shutdown) = (store.clone(), shutdown.clone());
    // Detached: the task ends by itself when `shutdown` is cancelled.
    drop(tokio::spawn(async move {
        loop {
            renew(&store);
            let wait = store.clock().real(RENEW_EVERY).max(MIN_REAL_WAIT);
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }));
}

/// A `MicroTime` as the API writes `renewTime`: RFC 3339 with microseconds.
fn micro_time(store: &Store) -> String {
    store
        .clock()
        .now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// Creates or renews the Lease; a failure (the namespace deleted, say) is logged and retried at the next renewal.
fn renew(store: &Store) {
    let Some(leases) = resources::find("coordination.k8s.io", "v1", "leases") else {
        return;
    };
    let now = micro_time(store);
    let options = WriteOptions::default();
    let result = if let Some(mut lease) = store.get(leases, NAMESPACE, NODE) {
        meta::set_at(&mut lease, &["spec", "renewTime"], json!(now));
        meta::set_at(&mut lease, &["spec", "holderIdentity"], json!(NODE));
        ops::replace(store, leases, NAMESPACE, NODE, lease, Part::Main, &options)
    } else {
        let lease = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": NODE, "namespace": NAMESPACE, "ownerReferences": owner(store)},
            "spec": {"holderIdentity": NODE, "leaseDurationSeconds": DURATION_SECONDS, "renewTime": now},
        });
        ops::create(store, leases, Some(NAMESPACE), lease, &options)
    };
    if let Err(error) = result {
        tracing::warn!(message = %error.message, "cannot renew the node's Lease");
    }
}

/// The Node as the Lease's owner, as the kubelet sets it (so that deleting the Node deletes its Lease).
fn owner(store: &Store) -> Value {
    let node = resources::find("", "v1", "nodes").and_then(|nodes| store.get(nodes, "", NODE));
    match node {
        Some(node) => {
            json!([{"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": meta::uid(&node)}])
        }
        None => json!([]),
    }
}
