//! The resource types the local cluster serves, and the facts about each one that the generic API machinery
//! needs: URL names, kind, scope, subresources, default deletion propagation and how to decode the type.
//!
//! Adding a type means adding one entry to [`RESOURCES`]; discovery, OpenAPI, routing and storage follow.
//! The types defined by custom resource definitions are not in this table: each cluster's store keeps the ones it
//! serves (`registry::custom`), and the store's lookups consult both. The free functions here know the built-in
//! types only.

use serde_json::Value;

use crate::registry::custom::Custom;
use crate::registry::decode::{RoundTrip, roundtrip};
use crate::registry::events_view::{EVENTS, View};
use crate::registry::hpa_view::HPA_V1;

/// What happens to an owner's dependents when it is deleted (`DeleteOptions.propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents lose their ownerReference and keep existing.
    Orphan,
    /// The owner goes first; the garbage collector deletes dependents afterwards.
    Background,
    /// The owner waits (finalizer `foregroundDeletion`) until blocking dependents are gone.
    Foreground,
}

/// One served resource type.
#[derive(Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts about a type, each read on its own"
)]
pub struct ResourceType {
    /// API group, empty for the core group.
    pub group: &'static str,
    /// API version inside the group.
    pub version: &'static str,
    /// Plural lower-case name used in URLs; unique within its group.
    pub plural: &'static str,
    /// Singular lower-case name used by discovery.
    pub singular: &'static str,
    /// Kind of the objects.
    pub kind: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names kubectl accepts (`cj`, `deploy`, ...).
    pub short_names: &'static [&'static str],
    /// Discovery categories (`all`).
    pub categories: &'static [&'static str],
    /// Whether the type has a `/status` subresource (and so ignores status on main writes).
    pub has_status: bool,
    /// Whether the type has a `/scale` subresource.
    pub has_scale: bool,
    /// Whether `metadata.generation` tracks spec changes.
    pub tracks_generation: bool,
    /// Propagation used when a delete request names none.
    pub default_propagation: Propagation,
    pub(crate) roundtrip: RoundTrip,
    /// For a view of another type's storage (events.k8s.io Events), the conversions.
    pub(crate) view: Option<&'static View>,
    /// For a type defined by a custom resource definition, what the definition says beyond the fields above.
    pub(crate) custom: Option<&'static Custom>,
}

impl ResourceType {
    /// `batch/v1`, or `v1` for the core group.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `jobs.batch`, or `pods` for the core group, as used in error messages.
    #[must_use]
    pub fn qualified_resource(&self) -> String {
        qualify(self.plural, self.group)
    }

    /// `Job.batch`, or `Pod` for the core group, as used in Invalid messages.
    #[must_use]
    pub fn qualified_kind(&self) -> String {
        qualify(self.kind, self.group)
    }

    /// The kind of a list of these objects (`JobList`, or a custom resource's `spec.names.listKind`).
    #[must_use]
    pub fn list_kind(&self) -> String {
        match self.custom {
            Some(custom) => custom.list_kind.to_owned(),
            None => format!("{}List", self.kind),
        }
    }

    /// Whether this is a custom resource, served from a custom resource definition.
    #[must_use]
    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }

    /// Whether this is the built-in type with this plural (built-in plurals are unique apart from views); a
    /// custom resource may reuse a built-in plural in its own group and must not get that type's behaviour.
    pub(crate) fn builtin(&self, plural: &str) -> bool {
        self.custom.is_none() && self.plural == plural
    }

    /// Whether a delete answers with the deleted object rather than a `Status`, as the Kubernetes stores of
    /// these types are configured to (`ReturnDeletedObject`).
    pub(crate) fn returns_deleted_object(&self) -> bool {
        ["pods", "services", "resourcequotas", "namespaces"]
            .iter()
            .any(|plural| self.builtin(plural))
    }

    /// The group whose storage holds the objects: a view's objects are stored by the type it views.
    pub(crate) fn storage_group(&self) -> &'static str {
        self.view.map_or(self.group, |view| view.storage_group)
    }

    /// Whether stored objects are sent as they are, without conversion to this type's form.
    pub(crate) fn presents_stored(&self) -> bool {
        self.view.is_none()
            && self
                .custom
                .is_none_or(|c| c.storage_version == self.version)
    }

    /// URL prefix of the group version: `/api/v1` or `/apis/batch/v1`.
    #[must_use]
    pub fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The object as clients of this type see it (converted when the type is a view of another's storage).
    pub(crate) fn present(&self, mut object: Value) -> Value {
        if let Some(view) = self.view {
            return (view.from_storage)(object);
        }
        if !self.presents_stored()
            && let Some(map) = object.as_object_mut()
        {
            // Versions of a custom resource convert with strategy None: only apiVersion changes.
            map.insert("apiVersion".into(), Value::from(self.api_version()));
        }
        object
    }

    /// Whether a PUT of a missing object creates it (the strategy's `AllowCreateOnUpdate` in Kubernetes 1.33);
    /// for the other types it is 404.
    pub(crate) fn creates_on_update(&self) -> bool {
        self.custom.is_none()
            && matches!(
                (self.storage_group(), self.plural),
                (
                    "",
                    "services" | "endpoints" | "limitranges" | "serviceaccounts" | "events"
                ) | ("coordination.k8s.io", "leases")
                    | (
                        "rbac.authorization.k8s.io",
                        "clusterroles" | "clusterrolebindings" | "roles" | "rolebindings"
                    )
            )
    }

    /// Whether two types share storage.
    pub(crate) fn is(&self, other: &ResourceType) -> bool {
        self.plural == other.plural && self.storage_group() == other.storage_group()
    }
}

fn qualify(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_owned()
    } else {
        format!("{name}.{group}")
    }
}

const ALL: &[&str] = &["all"];

macro_rules! resource {
    ($group:expr, $version:expr, $plural:expr, $singular:expr, $kind:expr, $ty:ty, namespaced: $ns:expr,
     short: $short:expr, categories: $cat:expr, status: $status:expr, scale: $scale:expr,
     generation: $generation:expr, propagation: $prop:expr) => {
        ResourceType {
            group: $group,
            version: $version,
            plural: $plural,
            singular: $singular,
            kind: $kind,
            namespaced: $ns,
            short_names: $short,
            categories: $cat,
            has_status: $status,
            has_scale: $scale,
            tracks_generation: $generation,
            default_propagation: $prop,
            roundtrip: roundtrip::<$ty>,
            view: None,
            custom: None,
        }
    };
}

use k8s_openapi::api::{
    apps::v1 as apps, autoscaling::v1 as autoscaling_v1, autoscaling::v2 as autoscaling,
    batch::v1 as batch, coordination::v1 as coordination, core::v1 as core,
    networking::v1 as networking, rbac::v1 as rbac,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;

/// Every served type. Order is discovery order.
pub static RESOURCES: &[ResourceType] = &[
    resource!("", "v1", "namespaces", "namespace", "Namespace", core::Namespace, namespaced: false,
        short: &["ns"], categories: &[], status: true, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "nodes", "node", "Node", core::Node, namespaced: false,
        short: &["no"], categories: &[], status: true, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "pods", "pod", "Pod", core::Pod, namespaced: true,
        short: &["po"], categories: ALL, status: true, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "services", "service", "Service", core::Service, namespaced: true,
        short: &["svc"], categories: ALL, status: true, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "configmaps", "configmap", "ConfigMap", core::ConfigMap, namespaced: true,
        short: &["cm"], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "limitranges", "limitrange", "LimitRange", core::LimitRange, namespaced: true,
        short: &["limits"], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", core::ResourceQuota,
        namespaced: true, short: &["quota"], categories: &[], status: true, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", core::ServiceAccount,
        namespaced: true, short: &["sa"], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "events", "event", "Event", core::Event, namespaced: true,
        short: &["ev"], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("batch", "v1", "jobs", "job", "Job", batch::Job, namespaced: true,
        short: &[], categories: ALL, status: true, scale: false, generation: true,
        propagation: Propagation::Orphan),
    resource!("batch", "v1", "cronjobs", "cronjob", "CronJob", batch::CronJob, namespaced: true,
        short: &["cj"], categories: ALL, status: true, scale: false, generation: true,
        propagation: Propagation::Background),
    resource!("apps", "v1", "deployments", "deployment", "Deployment", apps::Deployment, namespaced: true,
        short: &["deploy"], categories: ALL, status: true, scale: true, generation: true,
        propagation: Propagation::Background),
    resource!("apps", "v1", "replicasets", "replicaset", "ReplicaSet", apps::ReplicaSet, namespaced: true,
        short: &["rs"], categories: ALL, status: true, scale: true, generation: true,
        propagation: Propagation::Background),
    resource!("coordination.k8s.io", "v1", "leases", "lease", "Lease", coordination::Lease, namespaced: true,
        short: &[], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", rbac::ClusterRole,
        namespaced: false, short: &[], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding",
        rbac::ClusterRoleBinding, namespaced: false, short: &[], categories: &[], status: false, scale: false,
        generation: false, propagation: Propagation::Background),
    ResourceType {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        has_status: false,
        has_scale: false,
        tracks_generation: false,
        default_propagation: Propagation::Background,
        roundtrip: roundtrip::<k8s_openapi::api::events::v1::Event>,
        view: Some(&EVENTS),
        custom: None,
    },
    // Stored only, for `kubectl apply --prune`'s default allowlist: no controller acts on them.
    resource!("", "v1", "secrets", "secret", "Secret", core::Secret, namespaced: true,
        short: &[], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "endpoints", "endpoints", "Endpoints", core::Endpoints, namespaced: true,
        short: &["ep"], categories: &[], status: false, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim",
        core::PersistentVolumeClaim, namespaced: true, short: &["pvc"], categories: &[], status: true, scale: false,
        generation: false, propagation: Propagation::Background),
    resource!("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", core::PersistentVolume,
        namespaced: false, short: &["pv"], categories: &[], status: true, scale: false, generation: false,
        propagation: Propagation::Background),
    resource!("", "v1", "replicationcontrollers", "replicationcontroller", "ReplicationController",
        core::ReplicationController, namespaced: true, short: &["rc"], categories: ALL, status: true, scale: true,
        generation: true, propagation: Propagation::Background),
    resource!("apps", "v1", "daemonsets", "daemonset", "DaemonSet", apps::DaemonSet, namespaced: true,
        short: &["ds"], categories: ALL, status: true, scale: false, generation: true,
        propagation: Propagation::Background),
    resource!("apps", "v1", "statefulsets", "statefulset", "StatefulSet", apps::StatefulSet, namespaced: true,
        short: &["sts"], categories: ALL, status: true, scale: true, generation: true,
        propagation: Propagation::Background),
    resource!("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", networking::Ingress,
        namespaced: true, short: &["ing"], categories: &[], status: true, scale: false, generation: true,
        propagation: Propagation::Background),
    // Stored as autoscaling/v2, Kubernetes' storage version; v1 is a view of it.
    resource!("autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler",
        "HorizontalPodAutoscaler", autoscaling::HorizontalPodAutoscaler, namespaced: true, short: &["hpa"],
        categories: ALL, status: true, scale: false, generation: true, propagation: Propagation::Background),
    ResourceType {
        group: "autoscaling",
        version: "v1",
        plural: "horizontalpodautoscalers",
        singular: "horizontalpodautoscaler",
        kind: "HorizontalPodAutoscaler",
        namespaced: true,
        short_names: &["hpa"],
        categories: ALL,
        has_status: true,
        has_scale: false,
        tracks_generation: true,
        default_propagation: Propagation::Background,
        roundtrip: roundtrip::<autoscaling_v1::HorizontalPodAutoscaler>,
        view: Some(&HPA_V1),
        custom: None,
    },
    resource!("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
        "CustomResourceDefinition", apiextensions::CustomResourceDefinition, namespaced: false,
        short: &["crd", "crds"], categories: &["api-extensions"], status: true, scale: false, generation: true,
        propagation: Propagation::Background),
];

/// The served type at `group`/`version`/`plural`.
#[must_use]
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The served type for an object's `apiVersion` and `kind`.
/// Views of another type's storage are never the type of a stored object.
#[must_use]
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.kind == kind && r.api_version() == api_version && r.view.is_none())
}

/// The built-in type whose storage holds the objects of `group` and `plural`.
pub(crate) fn by_plural(group: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.plural == plural && r.view.is_none())
}

/// The built-in type for a stored object, from its `apiVersion` and `kind`.
pub(crate) fn of_object(object: &Value) -> Option<&'static ResourceType> {
    by_kind(
        object.get("apiVersion")?.as_str()?,
        object.get("kind")?.as_str()?,
    )
}

/// The `CustomResourceDefinition` type, whose objects define the custom types.
pub(crate) fn crds() -> &'static ResourceType {
    // Invariant: customresourcedefinitions are in the static registry.
    find("apiextensions.k8s.io", "v1", "customresourcedefinitions").expect("CRDs are served")
}

/// Pods, which controllers create, the kubelet runs and admission checks.
pub(crate) fn pods() -> &'static ResourceType {
    // Invariant: pods are in the static registry.
    find("", "v1", "pods").expect("pods are served")
}

/// ReplicaSets, which the Deployment controller creates and the ReplicaSet controller runs.
pub(crate) fn replicasets() -> &'static ResourceType {
    // Invariant: replicasets are in the static registry.
    find("apps", "v1", "replicasets").expect("replicasets are served")
}

/// ConfigMaps, which the cluster publishes its identity and CA bundle in.
pub(crate) fn configmaps() -> &'static ResourceType {
    // Invariant: configmaps are in the static registry.
    find("", "v1", "configmaps").expect("configmaps are served")
}

/// Jobs.
pub(crate) fn jobs() -> &'static ResourceType {
    // Invariant: jobs are in the static registry.
    find("batch", "v1", "jobs").expect("jobs are served")
}

/// The group versions of `types`, in their order (core first, as [`RESOURCES`] starts with it).
pub(crate) fn group_versions(types: &[&'static ResourceType]) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for r in types {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_names_are_unique_so_they_can_key_the_store_except_views() {
        for (i, a) in RESOURCES.iter().enumerate() {
            for b in &RESOURCES[i + 1..] {
                assert!(a.plural != b.plural || b.view.is_some(), "{}", b.plural);
            }
        }
        assert_eq!(
            by_plural("", "events").map(|r| r.group),
            Some(""),
            "storage belongs to the core type"
        );
        let core_events = find("", "v1", "events").expect("served");
        let events = find("events.k8s.io", "v1", "events").expect("served");
        assert!(events.is(core_events), "a view shares its storage");
    }

    #[test]
    fn qualified_names_follow_kubernetes_messages() {
        let jobs = find("batch", "v1", "jobs").expect("jobs are served");
        assert_eq!(jobs.qualified_resource(), "jobs.batch");
        assert_eq!(jobs.qualified_kind(), "Job.batch");
        let pods = find("", "v1", "pods").expect("pods are served");
        assert_eq!(pods.qualified_resource(), "pods");
        assert_eq!(pods.api_version(), "v1");
        assert_eq!(
            by_kind("apps/v1", "Deployment").map(|r| r.plural),
            Some("deployments")
        );
    }
}
