//! The owner index the garbage collector works from: which stored object has a uid, which objects name a uid
//! in their ownerReferences, how many objects each namespace holds, and what changed since the collector last
//! looked. The store updates it on every change and rebuilds it on restore, so the collector's work per write
//! is proportional to what the write changed, not to the number of stored objects.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::registry::meta;
use crate::registry::store::{EventType, ObjectKey};

/// One change, as the collector needs to know it.
#[derive(Debug)]
pub(crate) struct Touched {
    pub(crate) key: ObjectKey,
    pub(crate) uid: String,
    /// The object is gone.
    pub(crate) removed: bool,
    /// The owner uids the object referenced before or after the change.
    pub(crate) owners: Vec<String>,
}

/// What the collector has to look at.
#[derive(Debug, Default)]
pub(crate) struct Work {
    pub(crate) touched: Vec<Touched>,
    /// Every object must be looked at: the store was restored, or the served types changed (a reference to a
    /// kind that was not served may now be dangling).
    pub(crate) everything: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Owners {
    by_uid: HashMap<String, ObjectKey>,
    dependents: HashMap<String, BTreeSet<ObjectKey>>,
    namespace_sizes: HashMap<String, usize>,
    work: Work,
}

fn owner_uids(object: &Value) -> impl Iterator<Item = &str> {
    meta::owner_references(object)
        .iter()
        .filter_map(|r| meta::str_at(r, &["uid"]))
}

impl Owners {
    /// The key of the stored object with this uid.
    pub(crate) fn key_of(&self, uid: &str) -> Option<&ObjectKey> {
        self.by_uid.get(uid)
    }

    /// The objects whose ownerReferences name this uid (whether or not it exists).
    pub(crate) fn dependents(&self, uid: &str) -> impl Iterator<Item = &ObjectKey> {
        self.dependents.get(uid).into_iter().flatten()
    }

    /// How many objects the namespace holds.
    pub(crate) fn namespace_size(&self, namespace: &str) -> usize {
        self.namespace_sizes.get(namespace).copied().unwrap_or(0)
    }

    /// What changed since the last call.
    pub(crate) fn take_work(&mut self) -> Work {
        std::mem::take(&mut self.work)
    }

    /// Records one committed change of the object at `key` (`old` is its state before, `object` after, or its
    /// last state when `removed`).
    pub(crate) fn record(
        &mut self,
        key: ObjectKey,
        event: EventType,
        old: Option<&Value>,
        object: &Value,
        types_changed: bool,
    ) {
        let uid = meta::uid(object).to_owned();
        let removed = event == EventType::Deleted;
        let before: BTreeSet<&str> = old.map(owner_uids).into_iter().flatten().collect();
        let after: BTreeSet<&str> = if removed {
            BTreeSet::new()
        } else {
            owner_uids(object).collect()
        };
        for owner in before.difference(&after) {
            if let Some(keys) = self.dependents.get_mut(*owner) {
                keys.remove(&key);
                if keys.is_empty() {
                    self.dependents.remove(*owner);
                }
            }
        }
        for owner in after.difference(&before) {
            self.dependents
                .entry((*owner).to_owned())
                .or_default()
                .insert(key.clone());
        }
        match event {
            EventType::Added => self.add(&key, &uid),
            EventType::Deleted => self.forget(&key, &uid),
            EventType::Modified => {}
        }
        self.work.everything |= types_changed;
        self.work.touched.push(Touched {
            key,
            uid,
            removed,
            owners: before.union(&after).map(|u| (*u).to_owned()).collect(),
        });
    }

    fn add(&mut self, key: &ObjectKey, uid: &str) {
        if !uid.is_empty() {
            self.by_uid.insert(uid.to_owned(), key.clone());
        }
        if !key.namespace.is_empty() {
            *self
                .namespace_sizes
                .entry(key.namespace.clone())
                .or_default() += 1;
        }
    }

    fn forget(&mut self, key: &ObjectKey, uid: &str) {
        if self.by_uid.get(uid) == Some(key) {
            self.by_uid.remove(uid);
        }
        if let Some(size) = self.namespace_sizes.get_mut(&key.namespace) {
            *size = size.saturating_sub(1);
            if *size == 0 {
                self.namespace_sizes.remove(&key.namespace);
            }
        }
    }

    /// The index of a restored store; the collector then looks at everything once.
    pub(crate) fn rebuild<'a>(objects: impl Iterator<Item = (&'a ObjectKey, Value)>) -> Self {
        let mut owners = Owners::default();
        for (key, object) in objects {
            owners.add(key, meta::uid(&object));
            for owner in owner_uids(&object) {
                owners
                    .dependents
                    .entry(owner.to_owned())
                    .or_default()
                    .insert(key.clone());
            }
        }
        owners.work.everything = true;
        owners
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::resources::find;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(find("", "v1", "configmaps").expect("served"), "ns", name)
    }

    fn object(name: &str, owners: &[&str]) -> Value {
        let references: Vec<Value> = owners.iter().map(|u| json!({"uid": u})).collect();
        json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "ownerReferences": references}})
    }

    #[test]
    fn the_index_follows_creations_reference_changes_and_removals() {
        let mut owners = Owners::default();
        let first = object("a", &["o1"]);
        owners.record(key("a"), EventType::Added, None, &first, false);
        let second = object("a", &["o2"]);
        owners.record(key("a"), EventType::Modified, Some(&first), &second, false);
        assert_eq!(owners.dependents("o1").count(), 0);
        assert_eq!(owners.dependents("o2").collect::<Vec<_>>(), [&key("a")]);
        assert_eq!(owners.key_of("uid-a"), Some(&key("a")));
        assert_eq!(owners.namespace_size("ns"), 1);
        owners.record(key("a"), EventType::Deleted, Some(&second), &second, false);
        assert_eq!(owners.dependents("o2").count(), 0);
        assert_eq!(owners.key_of("uid-a"), None);
        assert_eq!(owners.namespace_size("ns"), 0);
        let work = owners.take_work();
        assert!(!work.everything);
        assert_eq!(work.touched.len(), 3);
        assert_eq!(work.touched[1].owners, ["o1", "o2"]);
        assert!(work.touched[2].removed);
        assert!(owners.take_work().touched.is_empty());
    }
}
