//! What every local cluster contains from the start: the built-in namespaces, the node `local`, the `kubernetes`
//! service, and the identity ConfigMap `kube-public/toolforge-local-cluster` through which clients (toolforge-jobs) recognise the
//! local cluster and learn where tools' home directories are (SPEC §10); and, unless turned off, the custom
//! resource definitions of upstream jobs-api that a Toolforge cluster has (`bootstrap/crds/`).

use std::path::Path;

use serde_json::json;

use crate::registry::ops::{self, WriteOptions};
use crate::registry::patch::PatchType;
use crate::registry::resources;
use crate::registry::store::Store;

/// Namespace of the identity ConfigMap.
pub const IDENTITY_NAMESPACE: &str = "kube-public";
/// Name of the identity ConfigMap. Its data: `cluster: toolforge-local`, `version` (of this crate) and, when
/// known, `toolsHome` (the directory holding tools' home directories).
pub const IDENTITY_NAME: &str = "toolforge-local-cluster";

/// The one node of the local cluster, where its kubelet runs pods.
pub const NODE_NAME: &str = "local";

/// The architecture as Go (and so Kubernetes) names it.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

fn node() -> serde_json::Value {
    json!({
        "metadata": {"name": NODE_NAME, "labels": {"kubernetes.io/hostname": NODE_NAME, "kubernetes.io/os": std::env::consts::OS,
            "kubernetes.io/arch": go_arch(), "node-role.kubernetes.io/control-plane": ""}},
        "spec": {},
    })
}

/// What the node's kubelet would report; the kubelet of part 2 takes it over.
fn node_status(clock: crate::clock::Clock) -> serde_json::Value {
    let cpus = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .to_string();
    let capacity =
        json!({"cpu": cpus, "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"});
    let now = crate::registry::meta::now(clock);
    json!({"status": {
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
            "lastHeartbeatTime": now, "lastTransitionTime": now}],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": NODE_NAME}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"architecture": go_arch(), "bootID": "", "containerRuntimeVersion": "toolforge-local://0.1",
            "kernelVersion": "", "kubeProxyVersion": "", "kubeletVersion": "v1.33.0", "machineID": "",
            "operatingSystem": std::env::consts::OS, "osImage": "toolforge-jobs local cluster", "systemUUID": ""},
    }})
}

const BUILT_IN_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Upstream jobs-api's custom resource definitions, as its chart ships them.
const UPSTREAM_CRDS: [&str; 2] = [
    include_str!("bootstrap/crds/continuous-jobs.yaml"),
    include_str!("bootstrap/crds/scheduled-jobs.yaml"),
];

/// Creates the upstream definitions that are missing; ones a state file kept are left as they are.
pub(crate) fn install_upstream_crds(store: &Store) {
    let crds = resources::crds();
    for manifest in UPSTREAM_CRDS {
        let definition: serde_json::Value = match serde_saphyr::from_str(manifest) {
            Ok(definition) => definition,
            Err(error) => {
                tracing::error!(%error, "an upstream custom resource definition does not parse");
                continue;
            }
        };
        let name = crate::registry::meta::name(&definition).to_owned();
        if store.get(crds, "", &name).is_some() {
            continue;
        }
        if let Err(error) = ops::create(store, crds, None, definition, &WriteOptions::default()) {
            tracing::error!(%name, message = %error.message, "cannot install an upstream custom resource definition");
        }
    }
}

/// Creates what is missing; the identity ConfigMap is rewritten at every start so it tells the current truth.
pub(crate) fn seed(store: &Store, tools_home: Option<&Path>) {
    let options = WriteOptions::default();
    let namespaces = ops::namespaces();
    for name in BUILT_IN_NAMESPACES {
        if store.get(namespaces, "", name).is_none() {
            // Built-in names are valid and free (checked above), so creation cannot fail.
            let _ = ops::create(
                store,
                namespaces,
                None,
                json!({"metadata": {"name": name}}),
                &options,
            );
        }
    }
    if let Some(nodes) = resources::find("", "v1", "nodes")
        && store.get(nodes, "", NODE_NAME).is_none()
    {
        // A fixed, valid object and status: neither write can fail.
        let _ = ops::create(store, nodes, None, node(), &options);
        let status = node_status(store.clock()).to_string();
        let _ = ops::patch(
            store,
            nodes,
            "",
            NODE_NAME,
            PatchType::Merge,
            status.as_bytes(),
            ops::Part::Status,
            &options,
        );
    }
    let services = ops::services();
    if store.get(services, "default", "kubernetes").is_none() {
        let body = json!({"metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}});
        // A fixed, valid object in an existing namespace: creation cannot fail.
        let _ = ops::create(store, services, Some("default"), body, &options);
    }
    let Some(configmaps) = resources::find("", "v1", "configmaps") else {
        return;
    };
    let mut data = json!({"cluster": "toolforge-local", "version": env!("CARGO_PKG_VERSION")});
    if let Some(home) = tools_home {
        data["toolsHome"] = json!(home.display().to_string());
    }
    let body =
        json!({"metadata": {"name": IDENTITY_NAME, "namespace": IDENTITY_NAMESPACE}, "data": data});
    // Valid fixed content in a built-in namespace: neither write can fail, and an unchanged one is a no-op.
    if store
        .get(configmaps, IDENTITY_NAMESPACE, IDENTITY_NAME)
        .is_some()
    {
        let _ = ops::replace(
            store,
            configmaps,
            IDENTITY_NAMESPACE,
            IDENTITY_NAME,
            body,
            ops::Part::Main,
            &options,
        );
    } else {
        let _ = ops::create(store, configmaps, Some(IDENTITY_NAMESPACE), body, &options);
    }
}
