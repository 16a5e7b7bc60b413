//! Admission: what the LimitRanger and ResourceQuota plugins of a 1.33 API server do to a create, in the same
//! places of the request (reference: `plugin/pkg/admission/limitranger` and `plugin/pkg/admission/resourcequota`).
//!
//! [`mutate`] runs after decoding and defaulting, before the server-set metadata and validation: LimitRanger
//! fills in the `default`/`defaultRequest` resources of the namespace's LimitRanges. [`validate`] runs after
//! validation, before the object is stored (so it wins over AlreadyExists, as on a real server): LimitRanger
//! checks `min`/`max`/`maxLimitRequestRatio`, then ResourceQuota checks the namespace's quotas against their
//! `status.used`. Both refuse with 403 Forbidden `<resource> "<name>" is forbidden: <reason>`. A dry run is
//! admitted the same way.
//!
//! [`refresh_quotas`] plays the quota controller: after every write it recomputes `status.hard` and
//! `status.used` of the quotas in the namespaces the write touched, so the next admission sees current usage.
//!
//! Updates are not admitted: LimitRanger skips Pod updates in 1.33 and the resources a quota counts are
//! immutable on the served types (there is no `pods/resize`).

mod limit_ranger;
mod resource_quota;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::registry::api_error::ApiError;
use crate::registry::quantity::Quantity;
use crate::registry::resources::{self, ResourceType};
use crate::registry::store::Inner;

pub(crate) use resource_quota::refresh as refresh_quotas;

/// A `ResourceList`: resource name → quantity, ordered by name (Go sorts the names it prints).
type Resources = BTreeMap<String, Quantity>;

/// The mutating half: LimitRanger's defaults for a new Pod.
pub(crate) fn mutate(s: &Inner, resource: &ResourceType, object: &mut Value) {
    if is_pods(resource) {
        limit_ranger::admit(s, object);
    }
}

/// The validating half: LimitRanger for a new Pod, then ResourceQuota for any object.
pub(crate) fn validate(
    s: &Inner,
    resource: &'static ResourceType,
    object: &Value,
) -> Result<(), ApiError> {
    if is_pods(resource) {
        limit_ranger::validate(s, object)?;
    }
    resource_quota::admit(s, resource, object)
}

fn is_pods(resource: &ResourceType) -> bool {
    resource.group.is_empty() && resource.plural == "pods"
}

fn limitranges() -> &'static ResourceType {
    // Invariant: limitranges are in the static registry.
    resources::find("", "v1", "limitranges").expect("limitranges are served")
}

fn resourcequotas() -> &'static ResourceType {
    // Invariant: resourcequotas are in the static registry.
    resources::find("", "v1", "resourcequotas").expect("resourcequotas are served")
}

/// The resource list at `path`; entries that are not quantities are skipped (decoding canonicalised them).
fn resource_list(object: &Value, path: &[&str]) -> Resources {
    crate::registry::meta::at(object, path)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), Quantity::from_value(value)?)))
        .collect()
}

/// The containers of a pod spec, then its init containers, as LimitRanger and quota walk them.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["containers", "initContainers"]
        .into_iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten()
}

/// A pod's effective `requests` or `limits` (`field`): the containers' sum, raised to any init container's
/// larger value (`PodRequests`/`PodLimits` without sidecars and overhead).
fn pod_total(spec: &Value, field: &str) -> Resources {
    let of = |list: &str| -> Vec<Resources> {
        spec.get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|container| resource_list(container, &["resources", field]))
            .collect()
    };
    let mut total = Resources::new();
    for container in of("containers") {
        for (name, quantity) in container {
            let sum = total.get(&name).map_or(quantity, |t| t.add(quantity));
            total.insert(name, sum);
        }
    }
    for init in of("initContainers") {
        for (name, quantity) in init {
            let max = total.get(&name).map_or(quantity, |t| t.larger(quantity));
            total.insert(name, max);
        }
    }
    total
}
