//! The LimitRanger admission plugin for Pods: `Container` items give containers their missing `default`
//! limits and `defaultRequest` requests (noted in the `kubernetes.io/limit-ranger` annotation); `Container` and
//! `Pod` items refuse pods outside `min`, `max` or `maxLimitRequestRatio`, with the plugin's messages.
//!
//! Not covered: `PersistentVolumeClaim` items (no claims are served) and pod overhead.

use serde_json::{Map, Value};

use super::{Resources, containers, limitranges, pod_total, resource_list};
use crate::registry::api_error::{ApiError, aggregate_messages};
use crate::registry::meta;
use crate::registry::quantity::Quantity;
use crate::registry::store::Inner;

/// The largest value Kubernetes compares in thousandths (`resource.MaxMilliValue`).
const MAX_MILLI: i128 = (i64::MAX / 1000) as i128;

fn ranges<'a>(s: &'a Inner, namespace: &'a str) -> impl Iterator<Item = Value> + 'a {
    s.list(limitranges(), Some(namespace))
}

fn items(range: &Value) -> impl Iterator<Item = &Value> {
    meta::at(range, &["spec", "limits"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Applies each LimitRange's container defaults to the containers that lack them; the first range that sets a
/// resource wins, as the plugin runs once per range.
pub(super) fn admit(s: &Inner, pod: &mut Value) {
    let namespace = meta::namespace(pod).to_owned();
    for range in ranges(s, &namespace) {
        let mut limits = Map::new();
        let mut requests = Map::new();
        for item in items(&range).filter(|i| meta::str_at(i, &["type"]) == Some("Container")) {
            for (field, into) in [("default", &mut limits), ("defaultRequest", &mut requests)] {
                if let Some(values) = item.get(field).and_then(Value::as_object) {
                    into.extend(values.clone());
                }
            }
        }
        let mut notes = Vec::new();
        for (list, label) in [
            ("containers", "container"),
            ("initContainers", "init container"),
        ] {
            for container in pod
                .pointer_mut(&format!("/spec/{list}"))
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let name = meta::str_at(container, &["name"])
                    .unwrap_or_default()
                    .to_owned();
                for (field, defaults, word) in [
                    ("requests", &requests, "request"),
                    ("limits", &limits, "limit"),
                ] {
                    let set = fill(meta::map_at(container, &["resources", field]), defaults);
                    if !set.is_empty() {
                        notes.push(format!("{} {word} for {label} {name}", set.join(", ")));
                    }
                }
                // An empty `requests`/`limits` map is omitted, as Go's `omitempty` does.
                if let Some(resources) = container
                    .get_mut("resources")
                    .and_then(Value::as_object_mut)
                {
                    resources.retain(|_, v| v.as_object().is_none_or(|m| !m.is_empty()));
                }
            }
        }
        if !notes.is_empty() {
            meta::set_at(
                pod,
                &["metadata", "annotations", "kubernetes.io/limit-ranger"],
                Value::from(format!("LimitRanger plugin set: {}", notes.join("; "))),
            );
        }
    }
}

/// Adds the defaults missing from `target`; returns the names it set, sorted.
fn fill(target: &mut Map<String, Value>, defaults: &Map<String, Value>) -> Vec<String> {
    let mut set = Vec::new();
    for (name, value) in defaults {
        if !target.contains_key(name) {
            target.insert(name.clone(), value.clone());
            set.push(name.clone());
        }
    }
    set
}

/// Refuses a pod that violates a LimitRange: the first range with violations answers, listing all of them.
pub(super) fn validate(s: &Inner, pod: &Value) -> Result<(), ApiError> {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    for range in ranges(s, meta::namespace(pod)) {
        let mut errors = Vec::new();
        for item in items(&range) {
            match meta::str_at(item, &["type"]) {
                Some(kind @ "Container") => {
                    for container in containers(spec) {
                        let requests = resource_list(container, &["resources", "requests"]);
                        let limits = resource_list(container, &["resources", "limits"]);
                        check(item, kind, &requests, &limits, &mut errors);
                    }
                }
                Some(kind @ "Pod") => {
                    let requests = pod_total(spec, "requests");
                    let limits = pod_total(spec, "limits");
                    check(item, kind, &requests, &limits, &mut errors);
                }
                _ => {}
            }
        }
        if !errors.is_empty() {
            return Err(ApiError::forbidden_object(
                crate::registry::resources::pods(),
                meta::name(pod),
                &aggregate_messages(errors),
            ));
        }
    }
    Ok(())
}

/// The `min`, `max` and `maxLimitRequestRatio` constraints of one item, in that order, names sorted.
fn check(
    item: &Value,
    kind: &str,
    requests: &Resources,
    limits: &Resources,
    errors: &mut Vec<String>,
) {
    for (name, enforced) in resource_list(item, &["min"]) {
        let (request, limit) = (requests.get(&name), limits.get(&name));
        let [req, lim, min] = comparable([request, limit, Some(&enforced)]);
        let error = match (request, limit) {
            (None, _) => Some(".  No request is specified".to_owned()),
            (Some(r), _) if req < min => Some(format!(", but request is {r}")),
            (_, Some(l)) if lim < min => Some(format!(", but limit is {l}")),
            _ => None,
        };
        if let Some(tail) = error {
            errors.push(format!(
                "minimum {name} usage per {kind} is {enforced}{tail}"
            ));
        }
    }
    for (name, enforced) in resource_list(item, &["max"]) {
        let (request, limit) = (requests.get(&name), limits.get(&name));
        let [req, lim, max] = comparable([request, limit, Some(&enforced)]);
        let error = match (request, limit) {
            (_, None) => Some(".  No limit is specified".to_owned()),
            (_, Some(l)) if lim > max => Some(format!(", but limit is {l}")),
            (Some(r), _) if req > max => Some(format!(", but request is {r}")),
            _ => None,
        };
        if let Some(tail) = error {
            errors.push(format!(
                "maximum {name} usage per {kind} is {enforced}{tail}"
            ));
        }
    }
    for (name, enforced) in resource_list(item, &["maxLimitRequestRatio"]) {
        let prefix = format!("{name} max limit to request ratio per {kind} is {enforced}");
        let [req, lim, _] = comparable([requests.get(&name), limits.get(&name), Some(&enforced)]);
        if req == 0 {
            errors.push(format!(
                "{prefix}, but no request is specified or request is 0"
            ));
        } else if lim == 0 {
            errors.push(format!("{prefix}, but no limit is specified or limit is 0"));
        } else {
            // Float arithmetic, as the plugin does it.
            #[expect(
                clippy::cast_precision_loss,
                reason = "the plugin compares these values as float64"
            )]
            let (ratio, allowed) = {
                let ratio = lim as f64 / req as f64;
                if enforced.units() <= MAX_MILLI {
                    (ratio, (ratio * 1000.0, enforced.milli() as f64))
                } else {
                    (ratio, (ratio, enforced.units() as f64))
                }
            };
            if allowed.0 > allowed.1 {
                errors.push(format!("{prefix}, but provided ratio is {ratio:.6}"));
            }
        }
    }
}

/// The values the plugin compares: thousandths when all three fit, whole units otherwise; a missing quantity
/// is 0 (`requestLimitEnforcedValues`).
fn comparable(quantities: [Option<&Quantity>; 3]) -> [i128; 3] {
    let units = quantities.map(|q| q.map_or(0, |q| q.units()));
    if units.iter().all(|u| *u <= MAX_MILLI) {
        quantities.map(|q| q.map_or(0, |q| q.milli()))
    } else {
        units
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::store::Store;

    fn store_with(ranges: &[Value]) -> Store {
        let store = Store::new(100, crate::clock::Clock::default());
        store
            .write(|s| {
                for range in ranges {
                    s.create(limitranges(), range.clone());
                }
                Ok(())
            })
            .expect("written");
        store
    }

    fn range(limits: &Value) -> Value {
        json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits", "namespace": "tool"},
            "spec": {"limits": limits}})
    }

    fn pod(resources: &Value) -> Value {
        json!({"metadata": {"name": "x", "namespace": "tool"}, "spec": {"containers": [
            {"name": "job", "image": "busybox", "resources": resources}]}})
    }

    fn refusal(store: &Store, resources: &Value) -> String {
        store
            .read(|s| validate(s, &pod(resources)))
            .expect_err("refused")
            .message
    }

    #[test]
    fn containers_without_resources_get_the_defaults_and_the_annotation() {
        let store = store_with(&[range(&json!([{"type": "Container",
            "default": {"cpu": "500m", "memory": "512Mi"}, "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]))]);
        let mut pod = pod(&json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}}));
        store.read(|s| admit(s, &mut pod));
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "100m", "memory": "1Gi"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
            "LimitRanger plugin set: cpu request for container job; cpu limit for container job"
        );
        let mut untouched = pod.clone();
        store_with(&[]).read(|s| admit(s, &mut untouched));
        assert_eq!(untouched, pod);
    }

    #[test]
    fn violations_are_refused_with_the_plugin_messages() {
        let store = store_with(&[range(&json!([{"type": "Container",
            "min": {"cpu": "50m", "memory": "100Mi"}, "max": {"cpu": "1", "memory": "4Gi"}}]))]);
        let message = refusal(
            &store,
            &json!({"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "2", "memory": "1Gi"}}),
        );
        assert_eq!(
            message,
            r#"pods "x" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#
        );
        let message = refusal(
            &store,
            &json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "50Mi"}}),
        );
        assert_eq!(
            message,
            r#"pods "x" is forbidden: minimum memory usage per Container is 100Mi, but request is 50Mi"#
        );
        let message = refusal(&store, &json!({"requests": {"cpu": "10m"}}));
        assert_eq!(
            message,
            "pods \"x\" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, \
             minimum memory usage per Container is 100Mi.  No request is specified, \
             maximum cpu usage per Container is 1.  No limit is specified, \
             maximum memory usage per Container is 4Gi.  No limit is specified]"
        );
        let fits = json!({"limits": {"cpu": "1", "memory": "4Gi"}, "requests": {"cpu": "50m", "memory": "100Mi"}});
        assert!(store.read(|s| validate(s, &pod(&fits))).is_ok());
    }

    #[test]
    fn ratio_and_pod_items_are_checked() {
        let store = store_with(&[range(
            &json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "Pod", "max": {"memory": "1Gi"}}]),
        )]);
        let message = refusal(
            &store,
            &json!({"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "250m"}}),
        );
        assert_eq!(
            message,
            "pods \"x\" is forbidden: [cpu max limit to request ratio per Container is 2, but provided ratio is \
             4.000000, maximum memory usage per Pod is 1Gi, but limit is 2Gi]"
        );
    }

    #[test]
    fn a_limit_range_is_defaulted_from_max_and_min() {
        let mut range = range(
            &json!([{"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "100Mi"}}, {"type": "Pod"}]),
        );
        crate::registry::defaults::apply(limitranges(), &mut range);
        assert_eq!(
            range["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "100Mi"},
                "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1", "memory": "100Mi"}})
        );
        assert_eq!(range["spec"]["limits"][1], json!({"type": "Pod"}));
    }
}
