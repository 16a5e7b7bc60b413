//! Field management, as the API server does it with structured-merge-diff: every write records in
//! `metadata.managedFields` which manager owns which fields. Writes other than server-side apply are `Update`
//! operations: the writer takes every field it added or changed (from whoever owned it) and fields it removed
//! lose their owners. Server-side apply is the `Apply` operation: the applier owns exactly the fields of its
//! configuration, changing a field someone else owns is a conflict (409) unless forced, and a field the
//! applier stops applying is removed only when no other manager owns it.

mod entries;
mod merge;
mod schema;
mod set;
mod walk;

use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::clock::Clock;
use crate::registry::api_error::ApiError;
use crate::registry::meta;
use crate::registry::ops::{Part, WriteOptions};
use crate::registry::resources::ResourceType;
pub(crate) use entries::Operation;
use entries::{Entry, of_object};
use schema::Types;
use set::{Element, FieldSet, path_text};

/// The longest manager name the API server keeps.
const MANAGER_MAX_LENGTH: usize = 128;

/// Who is writing: the `fieldManager` parameter, else the user agent up to its first `/` (as the API server
/// derives it: `kubectl/v1.33.0 (linux/amd64)` is `kubectl`), else, for writes from inside the cluster, the
/// component Kubernetes would name: the kubelet for pod status and its own events, the API server for the
/// namespaces it creates, the controller manager for everything else.
pub(crate) fn manager(
    options: &WriteOptions,
    resource: &ResourceType,
    part: Part,
    object: &Value,
) -> String {
    if let Some(manager) = options.field_manager.as_deref().filter(|m| !m.is_empty()) {
        return manager.to_owned();
    }
    if let Some(agent) = &options.user_agent {
        let mut prefix = String::new();
        for c in agent.split('/').next().unwrap_or_default().chars() {
            if c.is_control() {
                continue;
            }
            if prefix.len() + c.len_utf8() > MANAGER_MAX_LENGTH {
                break;
            }
            prefix.push(c);
        }
        return prefix;
    }
    let reported_by_kubelet = meta::str_at(object, &["source", "component"]) == Some("kubelet")
        || meta::str_at(object, &["reportingComponent"]) == Some("kubelet");
    if (resource.builtin("pods") && part == Part::Status)
        || (resource.builtin("events") && reported_by_kubelet)
    {
        "kubelet".into()
    } else if resource.builtin("namespaces") || resource.builtin("customresourcedefinitions") {
        "kube-apiserver".into()
    } else {
        "kube-controller-manager".into()
    }
}

fn types(resource: &ResourceType) -> Types {
    if resource.is_custom() {
        Types::Custom
    } else {
        Types::BuiltIn
    }
}

fn subresource(part: Part) -> String {
    match part {
        Part::Main => String::new(),
        Part::Status => "status".into(),
    }
}

/// Server-set fields no manager owns (the API server strips them from every set).
static SERVER_SET: LazyLock<FieldSet> = LazyLock::new(|| {
    let mut set = FieldSet::default();
    let field = |name: &str| Element::Field(name.to_owned());
    for top in ["apiVersion", "kind", "metadata"] {
        set.insert(&[field(top)]);
    }
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[field("metadata"), field(name)]);
    }
    set
});

fn status() -> Element {
    Element::Field("status".into())
}

/// What a write to `part` may own: with a status subresource, the main resource owns everything but the status
/// and the status subresource only the status (the types' reset fields).
fn restrict(resource: &ResourceType, part: Part, set: &FieldSet) -> FieldSet {
    match part {
        Part::Status => set.only_under(&status()),
        Part::Main if resource.has_status => {
            let mut main = set.clone();
            let mut status_only = FieldSet::default();
            status_only.insert_member(status());
            main.recursive_difference(&status_only);
            main
        }
        Part::Main => set.clone(),
    }
}

fn restrict_comparison(resource: &ResourceType, part: Part, comparison: &mut walk::Comparison) {
    comparison.added = restrict(resource, part, &comparison.added);
    comparison.modified = restrict(resource, part, &comparison.modified);
    comparison.removed = restrict(resource, part, &comparison.removed);
}

/// The struct fields an empty object of a built-in type already has (Go's zero value serialises them, and a
/// pod spec's `containers` as an empty list), so a create does not own them as values of their own: `f:spec`
/// and `f:containers` but `f:labels: {.: {}, …}`.
fn zero_value(types: Types, object: &Value) -> Value {
    const STRUCTS: [&str; 7] = [
        "metadata",
        "spec",
        "status",
        "template",
        "jobTemplate",
        "strategy",
        "updateStrategy",
    ];
    let Some(fields) = object.as_object().filter(|_| types == Types::BuiltIn) else {
        return json!({});
    };
    Value::Object(
        fields
            .iter()
            .filter_map(|(name, value)| match value {
                Value::Object(_) if STRUCTS.contains(&name.as_str()) => {
                    Some((name.clone(), zero_value(types, value)))
                }
                Value::Array(_) if name == "containers" => Some((name.clone(), json!([]))),
                _ => None,
            })
            .collect(),
    )
}

/// The write path's hook: records an `Update` for every write but server-side apply, whose managed fields
/// [`apply`] settled.
pub(crate) fn record_write(
    resource: &ResourceType,
    old: Option<&Value>,
    new: &mut Value,
    part: Part,
    options: &WriteOptions,
    clock: Clock,
) {
    if options.operation == Operation::Apply {
        return;
    }
    let manager = manager(options, resource, part, new);
    record_update(resource, old, new, part, &manager, meta::now(clock));
}

/// Records an `Update` by `manager` in `new`'s managedFields: a create when `old` is `None`. Entries the
/// client sent replace the stored ones (a write to the main resource only; `[{}]` clears them); an empty or
/// unreadable list keeps the stored ones, so clients unaware of the field cannot drop it.
pub(crate) fn record_update(
    resource: &ResourceType,
    old: Option<&Value>,
    new: &mut Value,
    part: Part,
    manager: &str,
    now: String,
) {
    let sent = meta::remove_at(new, &["metadata", "managedFields"]);
    let stored = || old.map(of_object).unwrap_or_default();
    let mut owners = match sent {
        Some(sent) if part == Part::Main && entries::is_reset(&sent) => Vec::new(),
        Some(sent) if part == Part::Main => match entries::decode(&sent) {
            Ok(list) if !list.is_empty() => list,
            _ => stored(),
        },
        _ => stored(),
    };
    let types = types(resource);
    let zero;
    let before = if let Some(old) = old {
        old
    } else {
        zero = zero_value(types, new);
        &zero
    };
    let mut comparison = walk::compare(types, before, new);
    restrict_comparison(resource, part, &mut comparison);
    let mut changed = comparison.changed();
    for entry in &mut owners {
        entry.fields.difference(&comparison.removed);
        entry.fields.difference(&changed);
    }
    changed.difference(&SERVER_SET);
    if !changed.is_empty() {
        let mine = Entry {
            manager: manager.to_owned(),
            operation: Operation::Update,
            api_version: resource.api_version(),
            time: Some(now),
            subresource: subresource(part),
            fields: changed,
        };
        match owners.iter_mut().find(|entry| entry.same_manager(&mine)) {
            Some(entry) => {
                entry.fields.union(&mine.fields);
                entry.time = mine.time;
            }
            None => owners.push(mine),
        }
    }
    entries::store(new, owners);
}

/// The outcome of an apply: the object to write, with its managedFields.
pub(crate) fn apply(
    resource: &ResourceType,
    live: &Value,
    config: &Value,
    part: Part,
    manager: &str,
    force: bool,
    now: String,
) -> Result<Value, ApiError> {
    if meta::at(config, &["metadata", "managedFields"]).is_some() {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let types = types(resource);
    let mut owners = of_object(live);
    let mut live = live.clone();
    meta::remove_at(&mut live, &["metadata", "managedFields"]);
    let applied = restrict(resource, part, &walk::field_set(types, config));
    let mut mine = Entry {
        manager: manager.to_owned(),
        operation: Operation::Apply,
        api_version: resource.api_version(),
        time: Some(now),
        subresource: subresource(part),
        fields: applied,
    };
    let previous = owners
        .iter()
        .position(|entry| entry.same_manager(&mine))
        .map(|index| owners.remove(index));

    let merged = merge::merge(types, &live, config);
    let mut comparison = walk::compare(types, &live, &merged);
    restrict_comparison(resource, part, &mut comparison);
    let changed = comparison.changed();
    let conflicts: Vec<(String, String)> = owners
        .iter()
        .flat_map(|entry| {
            entry
                .fields
                .intersection(&changed)
                .paths()
                .into_iter()
                .map(move |path| (entry.describe(), path_text(&path)))
        })
        .collect();
    if !conflicts.is_empty() && !force {
        return Err(conflict_error(conflicts));
    }
    for entry in &mut owners {
        entry.fields.difference(&changed);
    }

    let mut pruned = merged;
    if let Some(previous) = &previous {
        // Server-set fields count as owned so that `metadata` itself is never pruned.
        let mut owned = SERVER_SET.clone();
        owned.union(&mine.fields);
        for entry in &owners {
            owned.union(&entry.fields);
        }
        walk::remove_items(types, &mut pruned, &unowned(&previous.fields, &owned));
    }
    let mut removal = walk::compare(types, &live, &pruned);
    restrict_comparison(resource, part, &mut removal);
    for entry in &mut owners {
        entry.fields.difference(&removal.removed);
    }
    mine.fields.difference(&SERVER_SET);
    if let Some(previous) = previous
        && previous.fields == mine.fields
        && pruned == live
    {
        // A no-op apply keeps the object as it is, time included, so it is not a write.
        mine.time = previous.time;
    }
    owners.push(mine);
    entries::store(&mut pruned, owners);
    Ok(pruned)
}

/// The paths of `last` that no manager owns any more, pruned at the highest such path. A field with owned
/// fields below it counts as owned (structured-merge-diff's `EnsureNamedFieldsAreMembers`); a list element
/// does not, so an element nobody owns goes with what others own inside it.
fn unowned(last: &FieldSet, owned: &FieldSet) -> FieldSet {
    let is_owned = |element: &Element| {
        owned.has_member(element)
            || (matches!(element, Element::Field(_)) && owned.child(element).is_some())
    };
    let mut remove = FieldSet::default();
    for member in last.members() {
        if !is_owned(member) {
            remove.insert_member(member.clone());
        }
    }
    for (element, below) in last.children() {
        if remove.has_member(element) {
            continue;
        }
        if matches!(element, Element::Field(_)) && !is_owned(element) {
            remove.insert_member(element.clone());
            continue;
        }
        let nothing = FieldSet::default();
        let owned_below = owned.child(element).unwrap_or(&nothing);
        remove.insert_child(element.clone(), unowned(below, owned_below));
    }
    remove
}

/// The 409 of an apply that would change fields other managers own, as the API server words it.
fn conflict_error(mut conflicts: Vec<(String, String)>) -> ApiError {
    conflicts.sort_by(|a, b| a.0.cmp(&b.0));
    let message = if let [(manager, path)] = conflicts.as_slice() {
        format!("Apply failed with 1 conflict: conflict with {manager}: {path}")
    } else {
        let mut lines: Vec<String> = Vec::new();
        let mut current: Option<&str> = None;
        for (manager, path) in &conflicts {
            if current != Some(manager) {
                lines.push(format!("conflicts with {manager}"));
                current = Some(manager);
            }
            lines.push(format!("- {path}"));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(manager, path)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {manager}"), "field": path})
        })
        .collect();
    let mut error = ApiError {
        code: 409,
        reason: "Conflict",
        message,
        details: serde_json::Map::new(),
    };
    error.details.insert("causes".into(), Value::Array(causes));
    error
}

#[cfg(test)]
mod tests;
