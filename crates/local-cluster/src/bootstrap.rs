//! What every local cluster contains from the start: the built-in namespaces, the `kubernetes` service, and the
//! identity ConfigMap `kube-public/toolforge-local-cluster` through which clients (toolforge-jobs) recognise the
//! local cluster and learn where tools' home directories are (SPEC §10).

use std::path::Path;

use serde_json::json;

use crate::ops::{self, WriteOptions};
use crate::resources;
use crate::store::Store;

/// Namespace of the identity ConfigMap.
pub const IDENTITY_NAMESPACE: &str = "kube-public";
/// Name of the identity ConfigMap. Its data: `cluster: toolforge-local`, `version` (of this crate) and, when
/// known, `toolsHome` (the directory holding tools' home directories).
pub const IDENTITY_NAME: &str = "toolforge-local-cluster";

const BUILT_IN_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

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
