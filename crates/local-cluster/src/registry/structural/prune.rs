//! Defaulting and pruning, as the apiextensions-apiserver does them on decoding a custom resource.

use serde_json::Value;

use super::{Node, RESOURCE_FIELDS, index, join};

/// Drops the nulls a schema neither allows nor defaults, then fills every absent (or non-nullable null) field
/// that has a `default`, recursing into the defaults themselves so nested defaults apply too.
pub(super) fn default(value: &mut Value, node: &Node) {
    match value {
        Value::Object(map) => {
            // The API server's decoder drops these before defaulting, so a required one reads as missing.
            map.retain(|key, field| {
                !(field.is_null()
                    && node
                        .properties
                        .get(key)
                        .is_some_and(|p| !p.nullable && p.default.is_none()))
            });
            for (key, property) in &node.properties {
                let Some(fallback) = &property.default else {
                    continue;
                };
                match map.get_mut(key) {
                    None => {
                        map.insert(key.clone(), fallback.clone());
                    }
                    Some(field) if field.is_null() && !property.nullable => {
                        *field = fallback.clone();
                    }
                    Some(_) => {}
                }
            }
            for (key, field) in map.iter_mut() {
                if let Some(child) = node.properties.get(key).or(node.additional.as_deref()) {
                    default(field, child);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = node.items.as_deref() else {
                return;
            };
            for entry in items {
                if entry.is_null()
                    && !item.nullable
                    && let Some(fallback) = &item.default
                {
                    *entry = fallback.clone();
                }
                default(entry, item);
            }
        }
        _ => {}
    }
}

/// Removes the fields `node` does not specify and returns their paths, sorted. `resource` marks a resource
/// root, whose `apiVersion`, `kind` and `metadata` stay whole.
pub(super) fn prune(value: &mut Value, node: &Node, resource: bool) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_value(value, Some(node), resource, "", &mut pruned);
    pruned.sort();
    pruned
}

/// `node` is `None` below a node that says nothing about its children (`additionalProperties: true`), where
/// Kubernetes prunes every field.
fn prune_value(
    value: &mut Value,
    node: Option<&Node>,
    resource: bool,
    path: &str,
    pruned: &mut Vec<String>,
) {
    if let Some(node) = node
        && node.ext.preserve_unknown
    {
        keep_unknown(value, node, resource, path, pruned);
        return;
    }
    match value {
        Value::Object(map) => {
            let resource = resource || node.is_some_and(|n| n.ext.embedded);
            map.retain(|key, field| {
                if resource && RESOURCE_FIELDS.contains(&key.as_str()) {
                    return true;
                }
                let child_path = join(path, key);
                let known = node.and_then(|n| match n.properties.get(key) {
                    Some(child) => Some(Some(child)),
                    None if n.additional.is_some() => Some(n.additional.as_deref()),
                    None if n.additional_any => Some(None),
                    None => None,
                });
                if let Some(child) = known {
                    prune_value(field, child, false, &child_path, pruned);
                    true
                } else {
                    pruned.push(child_path);
                    false
                }
            });
        }
        Value::Array(items) => {
            let item = node.and_then(|n| n.items.as_deref());
            for (i, entry) in items.iter_mut().enumerate() {
                prune_value(entry, item, false, &index(path, i), pruned);
            }
        }
        _ => {}
    }
}

/// Below `x-kubernetes-preserve-unknown-fields: true` unknown fields stay, but the fields the schema does
/// specify are still pruned by their own schemas.
fn keep_unknown(
    value: &mut Value,
    node: &Node,
    resource: bool,
    path: &str,
    pruned: &mut Vec<String>,
) {
    match value {
        Value::Object(map) => {
            let resource = resource || node.ext.embedded;
            for (key, field) in map.iter_mut() {
                if resource && RESOURCE_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(child) = node.properties.get(key).or(node.additional.as_deref()) {
                    prune_value(field, Some(child), false, &join(path, key), pruned);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for (i, entry) in items.iter_mut().enumerate() {
                    keep_unknown(entry, item, false, &index(path, i), pruned);
                }
            }
        }
        _ => {}
    }
}
