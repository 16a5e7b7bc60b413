//! ResourceQuota: the admission plugin (a create is refused when it would take a quota's `status.used` past
//! `status.hard`, or when a quota on cpu or memory meets a container that does not set them) and the quota
//! controller's usage count, recomputed synchronously after each write.
//!
//! Counted: `count/<resource>.<group>` (`count/pods`, `count/jobs.batch`, ...) for every served type but
//! Events (which quota ignores), the legacy `pods`, `services`, `configmaps` and `resourcequotas`, and for pods
//! that have not terminated `cpu`, `memory`, `ephemeral-storage` (= requests) and their `requests.`/`limits.`
//! forms. Scopes (`spec.scopes`, `spec.scopeSelector`) restrict a quota to the pods they match (`Terminating`,
//! `NotTerminating`, `BestEffort`, `NotBestEffort`, `PriorityClass`); a scoped quota matches no other object.
//! Not covered: the `CrossNamespacePodAffinity` scope (never matches), `services.nodeports` and
//! `services.loadbalancers`, hugepages and extended resources, and sidecar containers' share of pod requests.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::{Resources, containers, is_pods, pod_total, resource_list, resourcequotas};
use crate::registry::api_error::ApiError;
use crate::registry::meta;
use crate::registry::quantity::Quantity;
use crate::registry::resources::{RESOURCES, ResourceType};
use crate::registry::store::Inner;

/// Compute resources of pods a quota can limit (besides the object counts).
const POD_COMPUTE: &[&str] = &[
    "pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
];

/// The compute resources every container must set once a quota limits them (the pod evaluator's
/// `validationSet`).
const MUST_SPECIFY: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The legacy object-count names of the core types that have one.
const LEGACY_COUNTS: &[&str] = &["pods", "services", "configmaps", "resourcequotas"];

fn count_name(resource: &ResourceType) -> String {
    format!("count/{}", resource.qualified_resource())
}

/// Events are never counted (the quota system's `ignoredResources`).
fn counted(resource: &ResourceType) -> bool {
    !resource.builtin("events")
}

/// Whether `object` is in the quota's scopes (all of them; a quota without scopes covers everything).
fn in_scope(quota: &Value, resource: &ResourceType, object: &Value) -> bool {
    let named = meta::at(quota, &["spec", "scopes"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|scope| (scope.as_str().unwrap_or_default(), "Exists", &Value::Null));
    let selected = meta::at(quota, &["spec", "scopeSelector", "matchExpressions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            (
                meta::str_at(e, &["scopeName"]).unwrap_or_default(),
                meta::str_at(e, &["operator"]).unwrap_or_default(),
                e.get("values").unwrap_or(&Value::Null),
            )
        });
    named.chain(selected).all(|(scope, operator, values)| {
        is_pods(resource) && pod_in_scope(object, scope, operator, values)
    })
}

/// One scope of a pod (`podMatchesScopeFunc`): the operator only matters for `PriorityClass`.
fn pod_in_scope(pod: &Value, scope: &str, operator: &str, values: &Value) -> bool {
    let terminating = meta::at(pod, &["spec", "activeDeadlineSeconds"])
        .and_then(Value::as_i64)
        .is_some_and(|d| d >= 0);
    let best_effort = meta::str_at(pod, &["status", "qosClass"]) == Some("BestEffort");
    match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "PriorityClass" => {
            let class = meta::str_at(pod, &["spec", "priorityClassName"]).unwrap_or_default();
            let listed = values
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v.as_str() == Some(class)));
            match operator {
                "Exists" => true,
                "In" => listed,
                "NotIn" => !listed,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a quota on `name` concerns objects of `resource` (the evaluator's `MatchingResources`).
fn handles(resource: &ResourceType, name: &str) -> bool {
    counted(resource)
        && (name == count_name(resource)
            || (resource.group.is_empty()
                && (name == resource.plural && LEGACY_COUNTS.contains(&name)
                    || is_pods(resource) && POD_COMPUTE.contains(&name))))
}

/// What one stored object charges to the quotas of its namespace (the evaluators' `Usage`).
fn usage(resource: &ResourceType, object: &Value) -> Resources {
    let mut used = Resources::from([(count_name(resource), Quantity::ONE)]);
    if is_pods(resource) {
        let phase = meta::str_at(object, &["status", "phase"]);
        // Pods that reached a terminal phase keep only their object count.
        if !matches!(phase, Some("Succeeded" | "Failed")) {
            let spec = object.get("spec").unwrap_or(&Value::Null);
            used.extend(compute(
                &pod_total(spec, "requests"),
                &pod_total(spec, "limits"),
            ));
        }
    } else if resource.group.is_empty() && LEGACY_COUNTS.contains(&resource.plural) {
        used.insert(resource.plural.to_owned(), Quantity::ONE);
    }
    used
}

/// A pod's or container's compute usage from its requests and limits (`podComputeUsageHelper`).
fn compute(requests: &Resources, limits: &Resources) -> Resources {
    let mut used = Resources::from([("pods".to_owned(), Quantity::ONE)]);
    for name in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(request) = requests.get(name) {
            used.insert(name.to_owned(), *request);
            used.insert(format!("requests.{name}"), *request);
        }
        if let Some(limit) = limits.get(name) {
            used.insert(format!("limits.{name}"), *limit);
        }
    }
    used
}

/// `name=value` pairs sorted by name, comma-separated, as the plugin prints resource lists.
fn pretty(resources: &Resources, names: &[&String]) -> String {
    names
        .iter()
        .filter_map(|name| Some(format!("{name}={}", resources.get(*name)?)))
        .collect::<Vec<_>>()
        .join(",")
}

/// Admits a create against every quota of the namespace that limits something the object uses.
pub(super) fn admit(
    s: &Inner,
    resource: &'static ResourceType,
    object: &Value,
) -> Result<(), ApiError> {
    let forbidden =
        |reason: String| ApiError::forbidden_object(resource, meta::name(object), &reason);
    let mut pertinent = Vec::new();
    for quota in s.list(resourcequotas(), Some(meta::namespace(object))) {
        let quota_name = meta::name(&quota).to_owned();
        let hard = resource_list(&quota, &["status", "hard"]);
        let restricted: Vec<&String> = hard.keys().filter(|n| handles(resource, n)).collect();
        if restricted.is_empty() || !in_scope(&quota, resource, object) {
            continue;
        }
        if is_pods(resource)
            && let Some(missing) = missing_resources(object, &restricted)
        {
            return Err(forbidden(format!(
                "failed quota: {quota_name}: must specify {missing}"
            )));
        }
        // `status.used` always has every hard resource ([`refresh`] runs after every write), so the plugin's
        // "status unknown for quota" refusal cannot happen here.
        let used = resource_list(&quota, &["status", "used"]);
        pertinent.push((quota_name, hard, used));
    }
    let delta = usage(resource, object);
    for (quota_name, hard, used) in pertinent {
        let requested: Resources = delta
            .iter()
            .filter(|(name, _)| hard.contains_key(*name))
            .map(|(name, quantity)| (name.clone(), *quantity))
            .collect();
        let exceeded: Vec<&String> = requested
            .iter()
            .filter(|(name, quantity)| {
                let total = used.get(*name).map_or(**quantity, |u| u.add(**quantity));
                hard.get(*name).is_some_and(|limit| total > *limit)
            })
            .map(|(name, _)| name)
            .collect();
        if !exceeded.is_empty() {
            return Err(forbidden(format!(
                "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
                pretty(&requested, &exceeded),
                pretty(&used, &exceeded),
                pretty(&hard, &exceeded)
            )));
        }
    }
    Ok(())
}

/// `limits.cpu for: a,b; memory for: c` when containers lack a compute resource a quota limits (the pod
/// evaluator's `Constraints`).
fn missing_resources(pod: &Value, restricted: &[&String]) -> Option<String> {
    let required: Vec<&str> = restricted
        .iter()
        .map(|n| n.as_str())
        .filter(|n| MUST_SPECIFY.contains(n))
        .collect();
    let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for container in containers(pod.get("spec").unwrap_or(&Value::Null)) {
        let has = compute(
            &resource_list(container, &["resources", "requests"]),
            &resource_list(container, &["resources", "limits"]),
        );
        for name in required.iter().filter(|name| !has.contains_key(**name)) {
            missing
                .entry(name)
                .or_default()
                .insert(meta::str_at(container, &["name"]).unwrap_or_default());
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(name, containers)| {
            let names: Vec<&str> = containers.iter().copied().collect();
            format!("{name} for: {}", names.join(","))
        })
        .collect();
    Some(parts.join("; "))
}

/// The quota controller: recomputes `status.hard` (from `spec.hard`) and `status.used` of every quota in the
/// namespaces the pending changes touched.
pub(crate) fn refresh(s: &mut Inner) {
    for namespace in s.pending_namespaces() {
        let quotas: Vec<Value> = s.list(resourcequotas(), Some(&namespace)).collect();
        if quotas.is_empty() {
            continue;
        }
        for mut quota in quotas {
            let totals = usage_in_scope(s, &namespace, &quota);
            let hard = meta::at(&quota, &["spec", "hard"])
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let used: Map<String, Value> = hard
                .keys()
                .map(|name| {
                    let total = totals.get(name).copied().unwrap_or(Quantity::ZERO);
                    (name.clone(), Value::from(total.to_string()))
                })
                .collect();
            let status = if hard.is_empty() {
                json!({})
            } else {
                json!({"hard": hard, "used": used})
            };
            if quota.get("status") != Some(&status) {
                meta::set_at(&mut quota, &["status"], status);
                s.update(resourcequotas(), quota);
            }
        }
    }
}

/// The usage of everything stored in a namespace that is in the quota's scopes. Only a pod's usage and scopes
/// depend on what it is: the namespace's other objects are counted from the store's keys, not parsed (this runs
/// after every write to a namespace with a quota).
fn usage_in_scope(s: &Inner, namespace: &str, quota: &Value) -> Resources {
    let mut totals = Resources::new();
    let mut charge = |used: Resources, times: usize| {
        for (name, quantity) in used {
            let sum = totals
                .get(&name)
                .copied()
                .unwrap_or(Quantity::ZERO)
                .add(quantity.times(times));
            totals.insert(name, sum);
        }
    };
    let stored: Vec<&'static ResourceType> = RESOURCES.iter().chain(s.custom.stored()).collect();
    for resource in stored
        .into_iter()
        .filter(|r| r.namespaced && r.view.is_none() && counted(r))
    {
        if is_pods(resource) {
            for pod in s
                .list(resource, Some(namespace))
                .filter(|pod| in_scope(quota, resource, pod))
            {
                charge(usage(resource, &pod), 1);
            }
        } else if in_scope(quota, resource, &Value::Null) {
            let objects = s.list_entries(resource, Some(namespace)).count();
            if objects > 0 {
                charge(usage(resource, &Value::Null), objects);
            }
        }
    }
    totals
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::resources::{configmaps, jobs, pods};
    use crate::registry::store::Store;

    fn quota(name: &str, hard: &Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": "tool"},
            "spec": {"hard": hard}})
    }

    fn pod(name: &str, resources: &Value, phase: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "tool"},
            "spec": {"containers": [{"name": "job", "image": "busybox", "resources": resources}]},
            "status": {"phase": phase}})
    }

    fn store_with(objects: Vec<(&'static ResourceType, Value)>) -> Store {
        let store = Store::new(100, crate::clock::Clock::default());
        store
            .write(|s| {
                for (resource, object) in objects {
                    s.create(resource, object);
                }
                Ok(())
            })
            .expect("written");
        store
    }

    fn refusal(store: &Store, resource: &'static ResourceType, object: &Value) -> String {
        store
            .read(|s| admit(s, resource, object))
            .expect_err("refused")
            .message
    }

    #[test]
    fn status_counts_what_the_namespace_holds_and_follows_changes() {
        let resources = json!({"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}});
        let store = store_with(vec![
            (
                resourcequotas(),
                quota(
                    "q",
                    &json!({"pods": "10", "count/pods": "10", "requests.cpu": "2",
                "limits.memory": "8Gi", "count/jobs.batch": "15", "configmaps": "9",
                "count/configmaps": "9"}),
                ),
            ),
            (pods(), pod("a", &resources, "Running")),
            (pods(), pod("b", &resources, "Pending")),
            (pods(), pod("done", &resources, "Succeeded")),
            (
                configmaps(),
                json!({"metadata": {"name": "one", "namespace": "tool"}}),
            ),
            (
                configmaps(),
                json!({"metadata": {"name": "two", "namespace": "tool"}}),
            ),
            (
                configmaps(),
                json!({"metadata": {"name": "elsewhere", "namespace": "other"}}),
            ),
        ]);
        let status = store.get(resourcequotas(), "tool", "q").expect("stored")["status"].clone();
        assert_eq!(status["hard"]["requests.cpu"], "2");
        assert_eq!(
            status["used"],
            json!({"pods": "2", "count/pods": "3", "requests.cpu": "1", "limits.memory": "1Gi",
                "count/jobs.batch": "0", "configmaps": "2", "count/configmaps": "2"})
        );
        store
            .write(|s| {
                let key = crate::registry::store::ObjectKey::new(pods(), "tool", "a");
                s.remove(pods(), &key);
                Ok(())
            })
            .expect("written");
        let used = &store.get(resourcequotas(), "tool", "q").expect("stored")["status"]["used"];
        assert_eq!(used["pods"], "1");
        assert_eq!(used["requests.cpu"], "500m");
    }

    #[test]
    fn scoped_quotas_count_and_limit_only_the_pods_in_their_scopes() {
        let mut terminating = pod("deadline", &json!({}), "Running");
        terminating["spec"]["activeDeadlineSeconds"] = json!(60);
        terminating["status"]["qosClass"] = json!("BestEffort");
        let mut scoped = quota("short", &json!({"pods": "1"}));
        scoped["spec"]["scopes"] = json!(["Terminating"]);
        let mut by_selector = quota("best", &json!({"pods": "5", "count/jobs.batch": "0"}));
        by_selector["spec"]["scopeSelector"] =
            json!({"matchExpressions": [{"scopeName": "BestEffort", "operator": "Exists"}]});
        let store = store_with(vec![
            (resourcequotas(), scoped),
            (resourcequotas(), by_selector),
            (pods(), terminating),
            (
                pods(),
                pod("plain", &json!({"requests": {"cpu": "1"}}), "Running"),
            ),
        ]);
        let used = |name: &str| {
            store.get(resourcequotas(), "tool", name).expect("stored")["status"]["used"].clone()
        };
        assert_eq!(
            used("short"),
            json!({"pods": "1"}),
            "only the pod with a deadline"
        );
        assert_eq!(used("best"), json!({"pods": "1", "count/jobs.batch": "0"}));
        let mut another = pod("x", &json!({}), "Pending");
        another["spec"]["activeDeadlineSeconds"] = json!(5);
        assert_eq!(
            refusal(&store, pods(), &another),
            r#"pods "x" is forbidden: exceeded quota: short, requested: pods=1, used: pods=1, limited: pods=1"#
        );
        let endless = pod("y", &json!({"requests": {"cpu": "1"}}), "Pending");
        assert!(store.read(|s| admit(s, pods(), &endless)).is_ok());
        let job = json!({"metadata": {"name": "j", "namespace": "tool"}});
        assert!(
            store.read(|s| admit(s, jobs(), &job)).is_ok(),
            "a scoped quota matches only pods"
        );
    }

    #[test]
    fn creates_over_quota_are_refused_with_the_plugin_message() {
        let full = json!({"limits": {"cpu": "1500m", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}});
        let store = store_with(vec![
            (
                resourcequotas(),
                quota(
                    "tool-q",
                    &json!({"limits.cpu": "4", "limits.memory": "8Gi", "pods": "10"}),
                ),
            ),
            (pods(), pod("a", &full, "Running")),
            (pods(), pod("b", &full, "Running")),
        ]);
        let big = pod(
            "x",
            &json!({"limits": {"cpu": "2", "memory": "1Gi"}}),
            "Pending",
        );
        assert_eq!(
            refusal(&store, pods(), &big),
            r#"pods "x" is forbidden: exceeded quota: tool-q, requested: limits.cpu=2, used: limits.cpu=3, limited: limits.cpu=4"#
        );
        let fits = pod(
            "x",
            &json!({"limits": {"cpu": "1", "memory": "1Gi"}}),
            "Pending",
        );
        assert!(store.read(|s| admit(s, pods(), &fits)).is_ok());
        let job = json!({"metadata": {"name": "x", "namespace": "tool"}});
        assert!(
            store.read(|s| admit(s, jobs(), &job)).is_ok(),
            "no quota on jobs"
        );
    }

    #[test]
    fn object_counts_are_limited_per_type() {
        let job = |name: &str| json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "tool"}});
        let store = store_with(vec![
            (
                resourcequotas(),
                quota("q", &json!({"count/jobs.batch": "1", "count/events": "0"})),
            ),
            (jobs(), job("first")),
        ]);
        let event = json!({"metadata": {"name": "e", "namespace": "tool"}});
        let events = crate::registry::resources::find("", "v1", "events").expect("served");
        assert!(
            store.read(|s| admit(s, events, &event)).is_ok(),
            "events are not counted"
        );
        assert_eq!(
            refusal(&store, jobs(), &job("x")),
            r#"jobs.batch "x" is forbidden: exceeded quota: q, requested: count/jobs.batch=1, used: count/jobs.batch=1, limited: count/jobs.batch=1"#
        );
    }

    #[test]
    fn containers_must_set_what_a_quota_limits() {
        let store = store_with(vec![(
            resourcequotas(),
            quota(
                "q",
                &json!({"limits.cpu": "4", "limits.memory": "8Gi", "requests.cpu": "2"}),
            ),
        )]);
        let bare = pod("x", &json!({}), "Pending");
        assert_eq!(
            refusal(&store, pods(), &bare),
            r#"pods "x" is forbidden: failed quota: q: must specify limits.cpu for: job; limits.memory for: job; requests.cpu for: job"#
        );
        let partial = pod(
            "x",
            &json!({"limits": {"cpu": "1", "memory": "1Gi"}}),
            "Pending",
        );
        assert_eq!(
            refusal(&store, pods(), &partial),
            r#"pods "x" is forbidden: failed quota: q: must specify requests.cpu for: job"#
        );
    }
}
