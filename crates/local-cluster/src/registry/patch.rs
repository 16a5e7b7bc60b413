//! The PATCH body types: JSON patch (RFC 6902), merge patch (RFC 7386) and the strategic merge patch that
//! `kubectl apply` and `kubectl patch` send, with its directives (`$patch`, `$setElementOrder/…`,
//! `$deleteFromPrimitiveList/…`, `$retainKeys`). Server-side apply merges with the same list keys.
//!
//! Strategic merge needs the Go types' patch metadata; without schemas the merge key is chosen by the list's
//! field name, which is unambiguous for the served types.

use serde_json::{Map, Value};

use crate::registry::api_error::ApiError;

/// The patch flavours, from the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    pub(crate) const ACCEPTED: [&str; 4] = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];

    pub(crate) fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Applies a JSON patch document to `target`.
pub(crate) fn json_patch(target: &mut Value, body: &[u8]) -> Result<(), ApiError> {
    let patch: json_patch::Patch = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    json_patch::patch(target, &patch).map_err(|e| ApiError {
        code: 422,
        reason: "Invalid",
        message: e.to_string(),
        details: Map::new(),
    })
}

/// Applies a merge patch (RFC 7386).
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// The merge key of a list field under strategic merge, or `None` for atomic lists.
pub(crate) fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "imagePullSecrets"
        | "env"
        | "schedulingGates"
        | "resourceClaims" => "name",
        "ports" if items.iter().any(|p| p.get("containerPort").is_some()) => "containerPort",
        "ports" => "port",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "hostAliases" | "podIPs" | "hostIPs" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        "ownerReferences" => "uid",
        "conditions" => "type",
        _ => return None,
    })
}

/// Lists of strings merged as sets rather than replaced.
pub(crate) fn is_merged_primitive_list(field: &str) -> bool {
    field == "finalizers"
}

/// Applies a strategic merge patch.
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let Some(patch) = patch.as_object() else {
        return Err(ApiError::bad_request(
            "strategic merge patch must be a JSON object",
        ));
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else {
        return Ok(());
    };
    merge_map(target, patch)
}

fn merge_map(target: &mut Map<String, Value>, patch: &Map<String, Value>) -> Result<(), ApiError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = strip_directives(patch)?;
            return Ok(());
        }
        Some("delete") => {
            target.clear();
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unknown patch type: {other}"
            )));
        }
    }
    let mut orders: Vec<(&str, &Vec<Value>)> = Vec::new();
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix("$setElementOrder/") {
            if let Some(order) = value.as_array() {
                orders.push((field, order));
            }
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let remove = value.as_array().cloned().unwrap_or_default();
            if let Some(list) = target.get_mut(field).and_then(Value::as_array_mut) {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if key == "$patch" || key == "$retainKeys" {
            continue;
        }
        if key.starts_with('$') {
            return Err(ApiError::bad_request(format!(
                "unknown directive {key} in strategic merge patch"
            )));
        }
        merge_field(target, key, value)?;
    }
    for (field, order) in orders {
        reorder(target, field, order);
    }
    if let Some(keep) = patch.get("$retainKeys").and_then(Value::as_array) {
        target.retain(|k, _| keep.iter().any(|kept| kept.as_str() == Some(k)));
    }
    Ok(())
}

fn merge_field(target: &mut Map<String, Value>, key: &str, value: &Value) -> Result<(), ApiError> {
    match value {
        Value::Null => {
            target.remove(key);
        }
        Value::Object(patch) => {
            if patch.get("$patch").and_then(Value::as_str) == Some("delete") {
                target.remove(key);
                return Ok(());
            }
            let slot = target
                .entry(key.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let Value::Object(inner) = slot {
                merge_map(inner, patch)?;
            }
        }
        Value::Array(items) => {
            let slot = target
                .entry(key.to_owned())
                .or_insert_with(|| Value::Array(Vec::new()));
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            if let Value::Array(list) = slot {
                merge_list(key, list, items)?;
            }
        }
        scalar => {
            target.insert(key.to_owned(), scalar.clone());
        }
    }
    Ok(())
}

fn merge_list(field: &str, list: &mut Vec<Value>, items: &[Value]) -> Result<(), ApiError> {
    let replace = items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"));
    if replace {
        *list = items
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .map(strip_value)
            .collect::<Result<_, _>>()?;
        return Ok(());
    }
    if is_merged_primitive_list(field) {
        for item in items {
            if !list.contains(item) {
                list.push(item.clone());
            }
        }
        return Ok(());
    }
    let objects = items.iter().all(Value::is_object);
    let Some(key) = merge_key(field, items).filter(|_| objects) else {
        *list = items.iter().map(strip_value).collect::<Result<_, _>>()?;
        return Ok(());
    };
    for item in items {
        let Some(item_map) = item.as_object() else {
            continue;
        };
        let id = item_map.get(key);
        let position = list
            .iter()
            .position(|existing| existing.get(key) == id && id.is_some());
        if item_map.get("$patch").and_then(Value::as_str) == Some("delete") {
            list.retain(|existing| existing.get(key) != id);
            continue;
        }
        match position
            .and_then(|p| list.get_mut(p))
            .and_then(Value::as_object_mut)
        {
            Some(existing) => merge_map(existing, item_map)?,
            None => list.push(Value::Object(strip_directives(item_map)?)),
        }
    }
    Ok(())
}

/// Orders a merged list as `$setElementOrder` says; elements it does not name keep their relative order after.
fn reorder(target: &mut Map<String, Value>, field: &str, order: &[Value]) {
    let Some(list) = target.get_mut(field).and_then(Value::as_array_mut) else {
        return;
    };
    let key = merge_key(field, list);
    let identity = |v: &Value| -> Value {
        match key {
            Some(k) if v.is_object() => v.get(k).cloned().unwrap_or(Value::Null),
            _ => v.clone(),
        }
    };
    let rank = |v: &Value| {
        let id = identity(v);
        order
            .iter()
            .position(|o| identity(o) == id)
            .unwrap_or(order.len())
    };
    list.sort_by_key(rank);
}

fn strip_value(value: &Value) -> Result<Value, ApiError> {
    match value {
        Value::Object(map) => Ok(Value::Object(strip_directives(map)?)),
        Value::Array(items) => Ok(Value::Array(
            items.iter().map(strip_value).collect::<Result<_, _>>()?,
        )),
        other => Ok(other.clone()),
    }
}

/// Builds a new value from patch content, interpreting directives against an empty original.
fn strip_directives(map: &Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let mut out = Map::new();
    let mut cleaned = map.clone();
    if cleaned.get("$patch").and_then(Value::as_str) == Some("replace") {
        cleaned.remove("$patch");
    }
    merge_map(&mut out, &cleaned)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn smp(mut target: Value, patch: &Value) -> Value {
        strategic_merge(&mut target, patch).expect("patch applies");
        target
    }

    #[test]
    fn kubectl_apply_container_patch_merges_by_name_and_strips_directives() {
        let live = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "busybox", "command": ["echo", "hi"]},
            {"name": "d", "image": "x"}]}}}});
        let patch = json!({"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "d"}, {"name": "c"}],
            "containers": [{"command": ["echo", "bye"], "name": "c"}]}}}});
        let result = smp(live, &patch);
        assert_eq!(
            result["spec"]["template"]["spec"]["containers"],
            json!([
            {"name": "d", "image": "x"},
            {"name": "c", "image": "busybox", "command": ["echo", "bye"]}])
        );
        assert!(result.to_string().find('$').is_none());
    }

    #[test]
    fn delete_replace_and_retain_keys_directives() {
        let live = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "containers": [{"name": "a"}, {"name": "b"}], "tolerations": [{"key": "x"}]},
            "metadata": {"finalizers": ["f1", "f2"]}});
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "containers": [{"name": "a", "$patch": "delete"}], "tolerations": [{"key": "y"}]},
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"], "finalizers": ["f3"]}});
        let result = smp(live, &patch);
        assert_eq!(result["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(result["spec"]["containers"], json!([{"name": "b"}]));
        assert_eq!(result["spec"]["tolerations"], json!([{"key": "y"}]));
        assert_eq!(result["metadata"]["finalizers"], json!(["f2", "f3"]));
        let replaced = smp(
            json!({"a": {"x": 1, "y": 2}}),
            &json!({"a": {"$patch": "replace", "z": 3}}),
        );
        assert_eq!(replaced, json!({"a": {"z": 3}}));
        let nulls = smp(json!({"a": {"x": 1, "y": 2}}), &json!({"a": {"x": null}}));
        assert_eq!(nulls, json!({"a": {"y": 2}}));
    }

    #[test]
    fn unknown_directives_are_rejected() {
        let mut target = json!({});
        let error = strategic_merge(&mut target, &json!({"$bogus": 1})).expect_err("rejected");
        assert_eq!(error.code, 400);
    }

    #[test]
    fn json_and_merge_patches() {
        let mut target = json!({"a": [1, 2], "b": {"c": 1}});
        json_patch(
            &mut target,
            br#"[{"op":"add","path":"/a/-","value":3},{"op":"remove","path":"/b/c"}]"#,
        )
        .expect("applies");
        assert_eq!(target, json!({"a": [1, 2, 3], "b": {}}));
        let error = json_patch(&mut target, br#"[{"op":"test","path":"/a/0","value":9}]"#)
            .expect_err("test fails");
        assert_eq!(error.code, 422);
        merge_patch(&mut target, &json!({"a": null, "b": {"d": 1}}));
        assert_eq!(target, json!({"b": {"d": 1}}));
    }
}
