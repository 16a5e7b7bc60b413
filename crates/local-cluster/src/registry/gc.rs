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
//! with their own resourceVersions and watch events, right after the write that caused them. It looks only at
//! what the changes since its last run concern (the changed objects, the dependents of removed ones, the owners
//! they reference, their namespace), found through the store's owner index ([`crate::registry::owners`]).

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::Value;

use crate::registry::delete::{self, DeleteOptions, FOREGROUND, ORPHAN};
use crate::registry::meta;
use crate::registry::owners::Work;
use crate::registry::resources::Propagation;
use crate::registry::store::{Inner, ObjectKey};

#[derive(Debug)]
enum Action {
    Delete(ObjectKey, Propagation),
    SetOwners(ObjectKey, Vec<Value>),
    RemoveFinalizer(ObjectKey, &'static str),
    Remove(ObjectKey),
}

/// Runs until the changes, including its own, leave nothing to do.
pub(crate) fn collect(s: &mut Inner) {
    // Each round makes progress on a finite store; the bound only guards against a bug looping forever.
    for _ in 0..10_000 {
        let work = s.owners.take_work();
        if work.touched.is_empty() && !work.everything {
            return;
        }
        for action in plan(s, &Targets::of(s, work)) {
            execute(s, action);
        }
    }
}

/// The objects a round looks at.
#[derive(Debug, Default)]
struct Targets {
    /// Whose owner references are checked.
    dependents: BTreeSet<ObjectKey>,
    /// Which are checked as owners being deleted (orphan, foreground, namespace).
    owners: BTreeSet<ObjectKey>,
    /// Changed objects in a namespace that may be being deleted.
    contents: BTreeSet<ObjectKey>,
}

impl Targets {
    fn of(s: &Inner, work: Work) -> Self {
        let mut targets = Targets::default();
        if work.everything {
            for (key, object) in s.all() {
                targets.dependents.insert(key.clone());
                if meta::is_deleting(&object) {
                    targets.owners.insert(key.clone());
                }
            }
            return targets;
        }
        for touched in work.touched {
            if touched.removed {
                targets
                    .dependents
                    .extend(s.owners.dependents(&touched.uid).cloned());
            } else {
                targets.dependents.insert(touched.key.clone());
                targets.owners.insert(touched.key.clone());
            }
            targets.owners.extend(
                touched
                    .owners
                    .iter()
                    .filter_map(|uid| s.owners.key_of(uid).cloned()),
            );
            if !touched.key.namespace.is_empty() {
                targets.contents.insert(touched.key);
            }
        }
        targets
    }
}

fn plan(s: &Inner, targets: &Targets) -> Vec<Action> {
    let mut actions = Vec::new();
    for key in &targets.dependents {
        if let Some(object) = s.peek(key) {
            plan_dependent(s, key, &object, &mut actions);
        }
    }
    for key in &targets.owners {
        if let Some(object) = s.peek(key).filter(|o| meta::is_deleting(o)) {
            plan_owner(s, key, &object, &mut actions);
        }
    }
    let mut emptied = BTreeSet::new();
    for key in &targets.contents {
        let namespace = namespace_key(&key.namespace);
        if !namespace_emptying(s, &namespace) || targets.owners.contains(&namespace) {
            continue;
        }
        if s.peek(key).is_some_and(|o| !meta::is_deleting(&o)) {
            actions.push(Action::Delete(key.clone(), Propagation::Background));
        } else if s.owners.namespace_size(&key.namespace) == 0 && emptied.insert(namespace.clone())
        {
            actions.push(Action::Remove(namespace));
        }
    }
    actions
}

fn namespace_key(name: &str) -> ObjectKey {
    ObjectKey {
        group: "",
        plural: "namespaces",
        namespace: String::new(),
        name: name.to_owned(),
    }
}

/// Whether the namespace at `key` is being deleted and only waits for its contents to go.
fn namespace_emptying(s: &Inner, key: &ObjectKey) -> bool {
    s.peek(key)
        .is_some_and(|n| meta::is_deleting(&n) && meta::finalizers(&n).is_empty())
}

/// Whether an owner reference points at an existing object of the right kind in a compatible namespace.
/// References to kinds the cluster does not serve count as present: nothing can prove them gone.
fn owner_present(s: &Inner, dependent: &ObjectKey, reference: &Value) -> bool {
    let api_version = meta::str_at(reference, &["apiVersion"]).unwrap_or_default();
    let kind = meta::str_at(reference, &["kind"]).unwrap_or_default();
    let Some(owner_type) = s.by_kind(api_version, kind) else {
        return true;
    };
    let uid = meta::str_at(reference, &["uid"]).unwrap_or_default();
    s.owners.key_of(uid).is_some_and(|owner_key| {
        owner_key.is_of(owner_type)
            && (!owner_type.namespaced || owner_key.namespace == dependent.namespace)
    })
}

fn plan_dependent(s: &Inner, key: &ObjectKey, object: &Value, actions: &mut Vec<Action>) {
    let references = meta::owner_references(object);
    if references.is_empty() {
        return;
    }
    let live: Vec<Value> = references
        .iter()
        .filter(|r| owner_present(s, key, r))
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
    owner_key: &'a ObjectKey,
    uid: &'a str,
) -> impl Iterator<Item = (&'a ObjectKey, Cow<'a, Value>)> + 'a {
    s.owners
        .dependents(uid)
        .filter(|k| owner_key.namespace.is_empty() || k.namespace == owner_key.namespace)
        .filter_map(|k| s.peek(k).map(|o| (k, o)))
}

fn plan_owner(s: &Inner, key: &ObjectKey, object: &Value, actions: &mut Vec<Action>) {
    let finalizers = meta::finalizers(object);
    let uid = meta::uid(object);
    if finalizers.iter().any(|f| f == ORPHAN) {
        for (dependent_key, dependent) in dependents_of(s, key, uid) {
            let kept: Vec<Value> = meta::owner_references(&dependent)
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
            if !meta::is_deleting(&dependent) {
                actions.push(Action::Delete(
                    dependent_key.clone(),
                    Propagation::Foreground,
                ));
            }
            blocking |= meta::owner_references(&dependent).iter().any(|r| {
                meta::str_at(r, &["uid"]) == Some(uid)
                    && r.get("blockOwnerDeletion") == Some(&Value::Bool(true))
            });
        }
        if !blocking {
            actions.push(Action::RemoveFinalizer(key.clone(), FOREGROUND));
        }
    } else if key.group.is_empty() && key.plural == "namespaces" && finalizers.is_empty() {
        // The namespace itself changed (its deletion started): one pass over everything for its contents;
        // later, each content change is looked at alone.
        if s.owners.namespace_size(&key.name) == 0 {
            actions.push(Action::Remove(key.clone()));
        }
        for (content_key, content) in s.all().filter(|(k, _)| k.namespace == key.name) {
            if !meta::is_deleting(&content) {
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
            let (Some(resource), Some(mut object)) = (s.type_of(&key), s.get(&key)) else {
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
            let (Some(resource), Some(mut object)) = (s.type_of(&key), s.get(&key)) else {
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
