//! The garbage collector: honours ownerReferences after every write, for all three propagation policies
//! (reference §3.5), and finishes namespace deletion.
//!
//! - Background: a dependent whose served owners are all gone (or dangling) is deleted; one that still has a
//!   live owner loses the references to the vanished ones.
//! - Orphan: an owner with the `orphan` finalizer has its references removed from its dependents, then loses the
//!   finalizer (and so disappears).
//! - Foreground: an owner with `foregroundDeletion` has its dependents deleted in the foreground, and loses the
//!   finalizer once no dependent with `blockOwnerDeletion: true` remains.
//!
//! It runs synchronously under the store lock until nothing is left to do, so its effects are ordinary changes
//! with their own resourceVersions and watch events, right after the write that caused them.

use std::collections::HashMap;

use serde_json::Value;

use crate::registry::delete::{self, DeleteOptions, FOREGROUND, ORPHAN};
use crate::registry::meta;
use crate::registry::resources::Propagation;
use crate::registry::store::{Inner, ObjectKey};

#[derive(Debug)]
enum Action {
    Delete(ObjectKey, Propagation),
    SetOwners(ObjectKey, Vec<Value>),
    RemoveFinalizer(ObjectKey, &'static str),
    Remove(ObjectKey),
}

/// Runs sweeps until one finds nothing to do.
pub(crate) fn collect(s: &mut Inner) {
    // Each sweep makes progress on a finite store; the bound only guards against a bug looping forever.
    for _ in 0..10_000 {
        let actions = plan(s);
        if actions.is_empty() {
            return;
        }
        for action in actions {
            execute(s, action);
        }
    }
}

fn plan(s: &Inner) -> Vec<Action> {
    let interesting = s
        .all()
        .any(|(_, o)| meta::is_deleting(o) || !meta::owner_references(o).is_empty());
    if !interesting {
        return Vec::new();
    }
    let by_uid: HashMap<&str, (&ObjectKey, &Value)> =
        s.all().map(|(k, o)| (meta::uid(o), (k, o))).collect();
    let mut actions = Vec::new();
    for (key, object) in s.all() {
        plan_dependent(s, &by_uid, key, object, &mut actions);
        if meta::is_deleting(object) {
            plan_owner(s, key, object, &mut actions);
        }
    }
    actions
}

/// Whether an owner reference points at an existing object of the right kind in a compatible namespace.
/// References to kinds the cluster does not serve count as present: nothing can prove them gone.
fn owner_present(
    s: &Inner,
    by_uid: &HashMap<&str, (&ObjectKey, &Value)>,
    dependent: &ObjectKey,
    reference: &Value,
) -> bool {
    let api_version = meta::str_at(reference, &["apiVersion"]).unwrap_or_default();
    let kind = meta::str_at(reference, &["kind"]).unwrap_or_default();
    let Some(owner_type) = s.by_kind(api_version, kind) else {
        return true;
    };
    let uid = meta::str_at(reference, &["uid"]).unwrap_or_default();
    by_uid.get(uid).is_some_and(|(owner_key, _)| {
        owner_key.is_of(owner_type)
            && (!owner_type.namespaced || owner_key.namespace == dependent.namespace)
    })
}

fn plan_dependent(
    s: &Inner,
    by_uid: &HashMap<&str, (&ObjectKey, &Value)>,
    key: &ObjectKey,
    object: &Value,
    actions: &mut Vec<Action>,
) {
    let references = meta::owner_references(object);
    if references.is_empty() {
        return;
    }
    let live: Vec<Value> = references
        .iter()
        .filter(|r| owner_present(s, by_uid, key, r))
        .cloned()
        .collect();
    if live.is_empty() {
        if !meta::is_deleting(object) {
            actions.push(Action::Delete(key.clone(), Propagation::Background));
        }
    } else if live.len() < references.len() {
        actions.push(Action::SetOwners(key.clone(), live));
    }
}

fn dependents_of<'a>(
    s: &'a Inner,
    owner_key: &ObjectKey,
    uid: &'a str,
) -> impl Iterator<Item = (&'a ObjectKey, &'a Value)> + 'a {
    let namespace = owner_key.namespace.clone();
    s.all().filter(move |(k, o)| {
        (namespace.is_empty() || k.namespace == namespace)
            && meta::owner_references(o)
                .iter()
                .any(|r| meta::str_at(r, &["uid"]) == Some(uid))
    })
}

fn plan_owner(s: &Inner, key: &ObjectKey, object: &Value, actions: &mut Vec<Action>) {
    let finalizers = meta::finalizers(object);
    let uid = meta::uid(object);
    if finalizers.iter().any(|f| f == ORPHAN) {
        for (dependent_key, dependent) in dependents_of(s, key, uid) {
            let kept: Vec<Value> = meta::owner_references(dependent)
                .iter()
                .filter(|r| meta::str_at(r, &["uid"]) != Some(uid))
                .cloned()
                .collect();
            actions.push(Action::SetOwners(dependent_key.clone(), kept));
        }
        actions.push(Action::RemoveFinalizer(key.clone(), ORPHAN));
    } else if finalizers.iter().any(|f| f == FOREGROUND) {
        let mut blocking = false;
        for (dependent_key, dependent) in dependents_of(s, key, uid) {
            if !meta::is_deleting(dependent) {
                actions.push(Action::Delete(
                    dependent_key.clone(),
                    Propagation::Foreground,
                ));
            }
            blocking |= meta::owner_references(dependent).iter().any(|r| {
                meta::str_at(r, &["uid"]) == Some(uid)
                    && r.get("blockOwnerDeletion") == Some(&Value::Bool(true))
            });
        }
        if !blocking {
            actions.push(Action::RemoveFinalizer(key.clone(), FOREGROUND));
        }
    } else if key.group.is_empty() && key.plural == "namespaces" && finalizers.is_empty() {
        let mut contents = s.all().filter(|(k, _)| k.namespace == key.name).peekable();
        if contents.peek().is_none() {
            actions.push(Action::Remove(key.clone()));
        }
        for (content_key, content) in contents {
            if !meta::is_deleting(content) {
                actions.push(Action::Delete(content_key.clone(), Propagation::Background));
            }
        }
    }
}

fn execute(s: &mut Inner, action: Action) {
    match action {
        Action::Delete(key, propagation) => {
            if let Some(resource) = s.type_of(&key) {
                // The object may already be gone through an earlier action of the same sweep; nothing to do then.
                let _ = delete::delete_in(
                    s,
                    resource,
                    &key,
                    &DeleteOptions::with_propagation(propagation),
                );
            }
        }
        Action::SetOwners(key, owners) => {
            let (Some(resource), Some(mut object)) = (s.type_of(&key), s.get(&key).cloned()) else {
                return;
            };
            if owners.is_empty() {
                meta::remove_at(&mut object, &["metadata", "ownerReferences"]);
            } else {
                meta::set_at(
                    &mut object,
                    &["metadata", "ownerReferences"],
                    Value::Array(owners),
                );
            }
            s.update(resource, object);
        }
        Action::RemoveFinalizer(key, finalizer) => {
            let (Some(resource), Some(mut object)) = (s.type_of(&key), s.get(&key).cloned()) else {
                return;
            };
            let mut finalizers = meta::finalizers(&object);
            finalizers.retain(|f| f != finalizer);
            meta::set_finalizers(&mut object, &finalizers);
            if delete::removed_by_update(&object) {
                s.remove_as(resource, &key, Some(object));
            } else {
                s.update(resource, object);
            }
        }
        Action::Remove(key) => {
            if let Some(resource) = s.type_of(&key) {
                s.remove(resource, &key);
            }
        }
    }
}
