//! The object store: every object of every type under one lock, one global resourceVersion counter, a bounded
//! history of changes for watches that resume from a version, and a broadcast of changes for live watches (and,
//! later, controllers).
//!
//! The store knows nothing about HTTP or validation: [`crate::registry::ops`] decides what to write, the store
//! records it. Writes that change nothing do not bump the resourceVersion and produce no change event.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast;

use crate::clock::Clock;
use crate::registry::api_error::ApiError;
use crate::registry::custom::Types;
use crate::registry::logs::Logs;
use crate::registry::meta;
use crate::registry::owners::Owners;
use crate::registry::persist::Journal;
use crate::registry::resources::{self, ResourceType};
use crate::registry::stored::Stored;

/// The type of a change, as watch events name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// `ADDED`, `MODIFIED` or `DELETED`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change, as controllers, watches and the state file receive it.
#[derive(Debug)]
pub struct Change {
    /// Type of the changed object.
    pub resource: &'static ResourceType,
    /// What happened.
    pub event: EventType,
    /// The state before (None for creations).
    pub old: Option<Arc<Value>>,
    /// The new state; for deletions the last state, carrying the deletion's resourceVersion.
    pub object: Arc<Value>,
    /// The resourceVersion of this change.
    pub resource_version: u64,
    /// `object` as JSON text: the stored text, shared by every watch that sends it and the state file.
    json: OnceLock<Arc<str>>,
}

impl Change {
    /// `object` as JSON text.
    pub(crate) fn json(&self) -> &str {
        self.json.get_or_init(|| Arc::from(self.object.to_string()))
    }
}

/// A change as the watch history keeps it: in the store's compact form, sharing the store's text while it is the
/// current state. Turned back into a [`Change`] only for a watch that resumes from an earlier version.
#[derive(Debug)]
struct Recorded {
    resource: &'static ResourceType,
    event: EventType,
    old: Option<Stored>,
    object: Stored,
    resource_version: u64,
}

impl Recorded {
    /// Whether the object before or after the change may contain every one of `texts` ([`Stored::may_contain_all`]):
    /// a change where neither does is invisible to a watch whose selectors require them.
    fn may_concern(&self, texts: &[String]) -> bool {
        self.object.may_contain_all(texts)
            || self
                .old
                .as_ref()
                .is_some_and(|old| old.may_contain_all(texts))
    }

    fn change(&self) -> Arc<Change> {
        Arc::new(Change {
            resource: self.resource,
            event: self.event,
            old: self.old.as_ref().map(|old| Arc::new(old.value())),
            object: Arc::new(self.object.value()),
            resource_version: self.resource_version,
            json: OnceLock::from(self.object.json()),
        })
    }
}

/// Identifies a stored object. Plural names are unique only within a group (a custom resource may be called
/// `jobs`), so the key holds both.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ObjectKey {
    pub(crate) group: &'static str,
    pub(crate) plural: &'static str,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl ObjectKey {
    pub(crate) fn new(resource: &'static ResourceType, namespace: &str, name: &str) -> Self {
        ObjectKey {
            group: resource.storage_group(),
            plural: resource.plural,
            namespace: if resource.namespaced {
                namespace.to_owned()
            } else {
                String::new()
            },
            name: name.to_owned(),
        }
    }

    pub(crate) fn of(resource: &'static ResourceType, object: &Value) -> Self {
        Self::new(resource, meta::namespace(object), meta::name(object))
    }

    /// Whether the key is an object of `resource` (of any of its versions or views).
    pub(crate) fn is_of(&self, resource: &ResourceType) -> bool {
        self.plural == resource.plural && self.group == resource.storage_group()
    }

    /// Whether `object`, of type `resource`, is the object at this key (what [`ObjectKey::of`] would say,
    /// without building a key).
    fn identifies(&self, resource: &ResourceType, object: &Value) -> bool {
        self.is_of(resource)
            && self.name == meta::name(object)
            && (!resource.namespaced || self.namespace == meta::namespace(object))
    }
}

/// The state under the lock.
#[derive(Debug)]
pub(crate) struct Inner {
    resource_version: u64,
    /// The current objects, each shared with the history's changes that carry it.
    objects: BTreeMap<ObjectKey, Stored>,
    history: VecDeque<Recorded>,
    history_limit: usize,
    /// Changes at or below this version are no longer in `history`.
    compacted: u64,
    pending: Vec<Arc<Change>>,
    /// What pods' containers printed; dropped with the pod.
    pub(crate) logs: Logs,
    /// The cluster's clock, for writes that stamp a time under the lock.
    clock: Clock,
    /// The custom types the established custom resource definitions define (kept by `registry::crd`).
    pub(crate) custom: Types,
    /// Owner references and what changed, for the garbage collector.
    pub(crate) owners: Owners,
}

impl Inner {
    /// The cluster's clock.
    pub(crate) fn clock(&self) -> Clock {
        self.clock
    }

    pub(crate) fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// The served type at `group`/`version`/`plural`, built-in or custom.
    pub(crate) fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&'static ResourceType> {
        resources::find(group, version, plural).or_else(|| self.custom.find(group, version, plural))
    }

    /// The type for an object's `apiVersion` and `kind`, built-in or custom (views excluded).
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<&'static ResourceType> {
        resources::by_kind(api_version, kind).or_else(|| self.custom.by_kind(api_version, kind))
    }

    /// The type of a stored object from its `apiVersion` and `kind`.
    pub(crate) fn of_object(&self, object: &Value) -> Option<&'static ResourceType> {
        self.by_kind(
            object.get("apiVersion")?.as_str()?,
            object.get("kind")?.as_str()?,
        )
    }

    /// The type whose storage a key belongs to.
    pub(crate) fn type_of(&self, key: &ObjectKey) -> Option<&'static ResourceType> {
        resources::by_plural(key.group, key.plural)
            .or_else(|| self.custom.storage(key.group, key.plural))
    }

    /// Every served type: the built-in table, then the custom types.
    pub(crate) fn served(&self) -> Vec<&'static ResourceType> {
        resources::RESOURCES
            .iter()
            .chain(self.custom.served())
            .collect()
    }

    /// The changes of the current write so far.
    pub(crate) fn pending(&self) -> &[Arc<Change>] {
        &self.pending
    }

    /// The object at `key`, as a copy the caller owns.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<Value> {
        self.peek(key).map(Cow::into_owned)
    }

    /// The object at `key`, borrowed when this write already holds it as a tree (the garbage collector looks at
    /// every object a write changed), parsed otherwise.
    pub(crate) fn peek(&self, key: &ObjectKey) -> Option<Cow<'_, Value>> {
        let stored = self.objects.get(key)?;
        Some(
            self.written(key)
                .map_or_else(|| Cow::Owned(stored.value()), Cow::Borrowed),
        )
    }

    /// The current state of the object at `key` if this write changed it: its changes still carry trees.
    fn written(&self, key: &ObjectKey) -> Option<&Value> {
        self.pending
            .iter()
            .rev()
            .find(|change| key.identifies(change.resource, &change.object))
            .filter(|change| change.event != EventType::Deleted)
            .map(|change| &*change.object)
    }

    /// The object at `key`, stored as `stored`, as a tree: copied if this write holds it as one (cheaper than
    /// parsing the text), parsed otherwise.
    fn tree(&self, key: &ObjectKey, stored: &Stored) -> Value {
        self.written(key)
            .map_or_else(|| stored.value(), Value::clone)
    }

    /// Whether an object is stored at `key` (without reading it).
    pub(crate) fn contains(&self, key: &ObjectKey) -> bool {
        self.objects.contains_key(key)
    }

    /// Objects of one type, in one namespace or all, ordered by namespace then name.
    pub(crate) fn list<'a>(
        &'a self,
        resource: &'static ResourceType,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = Value> + 'a {
        self.list_stored(resource, namespace).map(Stored::value)
    }

    /// [`Inner::list`] in the stored form.
    pub(crate) fn list_stored<'a>(
        &'a self,
        resource: &'static ResourceType,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Stored> + 'a {
        self.list_entries(resource, namespace).map(|(_, v)| v)
    }

    /// [`Inner::list_stored`] without the objects whose JSON text lacks one of `texts`: a substring test rules
    /// them out before anybody parses them ([`Stored::may_contain`]).
    pub(crate) fn list_mentioning<'a>(
        &'a self,
        resource: &'static ResourceType,
        namespace: Option<&'a str>,
        texts: &'a [impl AsRef<str>],
    ) -> impl Iterator<Item = &'a Stored> + 'a {
        self.list_stored(resource, namespace)
            .filter(move |stored| stored.may_contain_all(texts))
    }

    /// [`Inner::list_stored`] with each object's key.
    pub(crate) fn list_entries<'a>(
        &'a self,
        resource: &'static ResourceType,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Stored)> + 'a {
        let start = ObjectKey {
            group: resource.storage_group(),
            plural: resource.plural,
            namespace: namespace.unwrap_or_default().to_owned(),
            name: String::new(),
        };
        self.objects.range(start..).take_while(move |(k, _)| {
            k.is_of(resource) && namespace.is_none_or(|ns| k.namespace == ns)
        })
    }

    /// Every object (any type), for the garbage collector and the state file.
    pub(crate) fn all(&self) -> impl Iterator<Item = (&ObjectKey, Value)> {
        self.objects
            .iter()
            .map(|(key, object)| (key, object.value()))
    }

    fn next_version(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    /// Stores a new object; the caller checked the key is free.
    pub(crate) fn create(&mut self, resource: &'static ResourceType, mut object: Value) -> Value {
        let rv = self.next_version();
        meta::set_at(
            &mut object,
            &["metadata", "resourceVersion"],
            Value::from(rv.to_string()),
        );
        let stored = Stored::new(&object);
        self.objects
            .insert(ObjectKey::of(resource, &object), stored.clone());
        self.record(
            resource,
            EventType::Added,
            None,
            (stored, object.clone()),
            rv,
        );
        object
    }

    /// Replaces a stored object. A write that changes nothing keeps the version and emits nothing.
    pub(crate) fn update(&mut self, resource: &'static ResourceType, mut object: Value) -> Value {
        let key = ObjectKey::of(resource, &object);
        let Some(old_stored) = self.objects.get(&key).cloned() else {
            return self.create(resource, object);
        };
        let old = self.tree(&key, &old_stored);
        if let Some(rv) = meta::resource_version(&old) {
            meta::set_at(
                &mut object,
                &["metadata", "resourceVersion"],
                Value::from(rv),
            );
        }
        if old == object {
            return object;
        }
        let rv = self.next_version();
        meta::set_at(
            &mut object,
            &["metadata", "resourceVersion"],
            Value::from(rv.to_string()),
        );
        let stored = Stored::new(&object);
        self.objects.insert(key, stored.clone());
        self.record(
            resource,
            EventType::Modified,
            Some((old_stored, old)),
            (stored, object.clone()),
            rv,
        );
        object
    }

    /// Removes an object; the returned last state carries the deletion's resourceVersion.
    pub(crate) fn remove(
        &mut self,
        resource: &'static ResourceType,
        key: &ObjectKey,
    ) -> Option<Value> {
        self.remove_as(resource, key, None)
    }

    /// Removes an object whose last state is `last` (e.g. with its final finalizer just removed), emitting only
    /// the DELETED event, as an update that empties the finalizers of a deleting object does.
    pub(crate) fn remove_as(
        &mut self,
        resource: &'static ResourceType,
        key: &ObjectKey,
        last: Option<Value>,
    ) -> Option<Value> {
        let stored = self.objects.remove(key)?;
        if resource.builtin("pods") {
            self.logs.remove_pod(&key.namespace, &key.name);
        }
        let rv = self.next_version();
        let old = self.tree(key, &stored);
        let mut object = last.unwrap_or_else(|| old.clone());
        meta::set_at(
            &mut object,
            &["metadata", "resourceVersion"],
            Value::from(rv.to_string()),
        );
        self.record(
            resource,
            EventType::Deleted,
            Some((stored, old)),
            (Stored::new(&object), object.clone()),
            rv,
        );
        Some(object)
    }

    /// The namespaces of the changes not yet published (what the quota refresh looks at).
    pub(crate) fn pending_namespaces(&self) -> std::collections::BTreeSet<String> {
        self.pending
            .iter()
            .filter(|change| change.resource.namespaced)
            .map(|change| meta::namespace(&change.object).to_owned())
            .collect()
    }

    /// Records a committed change; `old` and `object` each come in the stored form and as a tree.
    fn record(
        &mut self,
        resource: &'static ResourceType,
        event: EventType,
        old: Option<(Stored, Value)>,
        object: (Stored, Value),
        rv: u64,
    ) {
        let (old_stored, old) = old.unzip();
        let (stored, object) = object;
        self.owners.record(
            ObjectKey::of(resource, &object),
            event,
            old.as_ref(),
            &object,
            resource.builtin("customresourcedefinitions"),
        );
        let json = OnceLock::from(stored.json());
        self.history.push_back(Recorded {
            resource,
            event,
            old: old_stored,
            object: stored,
            resource_version: rv,
        });
        while self.history.len() > self.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted = dropped.resource_version;
            }
        }
        self.pending.push(Arc::new(Change {
            resource,
            event,
            old: old.map(Arc::new),
            object: Arc::new(object),
            resource_version: rv,
            json,
        }));
    }
}

/// Where a watch starts.
#[derive(Debug)]
pub(crate) enum WatchStart {
    /// Current state (synthetic ADDED events) at this version.
    Snapshot(Vec<Value>, u64),
    /// The retained changes of the watched type after the requested version, and the version of the last
    /// retained change of any type (at least the requested one).
    Backlog(Vec<Arc<Change>>, u64),
    /// The requested version is older than the history; the oldest servable version is given.
    Expired(u64),
    /// The requested version is newer than the store's.
    TooLarge(u64),
}

/// A handle on the store; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
    changes: broadcast::Sender<Arc<Change>>,
    /// Where committed changes are made durable, with a state file.
    journal: Arc<OnceLock<Arc<Journal>>>,
    clock: Clock,
}

impl Store {
    /// An empty store whose cluster reads the time from `clock`.
    pub(crate) fn new(history_limit: usize, clock: Clock) -> Self {
        let (changes, _) = broadcast::channel(8192);
        Store {
            inner: Arc::new(Mutex::new(Inner {
                resource_version: 1,
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                history_limit: history_limit.max(1),
                compacted: 1,
                pending: Vec::new(),
                logs: Logs::default(),
                clock,
                custom: Types::default(),
                owners: Owners::default(),
            })),
            changes,
            journal: Arc::new(OnceLock::new()),
            clock,
        }
    }

    /// The cluster's clock, which every component reads the time from.
    #[must_use]
    pub fn clock(&self) -> Clock {
        self.clock
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-written object behind (writes are single
        // inserts), so a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs a write under the lock, then the garbage collector and the quota usage count, then publishes the
    /// changes in order, to watches and to the journal (still under the lock, so the journal's order is the
    /// resourceVersion order).
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&mut Inner) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let mut inner = self.lock();
        let result = f(&mut inner);
        crate::registry::crd::reconcile(&mut inner);
        crate::registry::gc::collect(&mut inner);
        // The collector may have removed the last objects of a CustomResourceDefinition being deleted.
        crate::registry::crd::reconcile(&mut inner);
        crate::registry::admission::refresh_quotas(&mut inner);
        let pending = std::mem::take(&mut inner.pending);
        if !pending.is_empty() {
            if let Some(journal) = self.journal.get() {
                journal.append(&pending);
            }
            for change in pending {
                // No receiver is fine: nobody watches.
                let _ = self.changes.send(change);
            }
        }
        result
    }

    /// Reads or writes the container logs under the lock.
    pub(crate) fn logs<T>(&self, f: impl FnOnce(&mut Logs) -> T) -> T {
        f(&mut self.lock().logs)
    }

    /// Runs a read under the lock.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Inner) -> T) -> T {
        f(&self.lock())
    }

    /// Receives every committed change from now on (controllers subscribe here).
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.changes.subscribe()
    }

    /// The current global resourceVersion.
    #[must_use]
    pub fn resource_version(&self) -> u64 {
        self.lock().resource_version
    }

    /// One object, by type, namespace (ignored for cluster-scoped types) and name.
    #[must_use]
    pub fn get(
        &self,
        resource: &'static ResourceType,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        self.lock().get(&ObjectKey::new(resource, namespace, name))
    }

    /// All objects of a type.
    #[must_use]
    pub fn list(&self, resource: &'static ResourceType) -> Vec<Value> {
        self.lock().list(resource, None).collect()
    }

    /// Drops the change history, so that every watch resuming from an earlier version gets 410 Expired.
    pub fn compact(&self) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.compacted = inner.resource_version;
    }

    /// Resolves where a watch starts and subscribes it, atomically, so no change falls in between. Objects whose
    /// stored text lacks one of `required` (the watch's selectors' `Filter::required_text`) cannot match, and
    /// are not parsed: a watch of one object by name parses that object only.
    pub(crate) fn watch_from(
        &self,
        resource: &'static ResourceType,
        namespace: Option<&str>,
        from: Option<u64>,
        required: &[String],
    ) -> (WatchStart, broadcast::Receiver<Arc<Change>>) {
        let inner = self.lock();
        let receiver = self.changes.subscribe();
        let start = match from {
            None => WatchStart::Snapshot(
                inner
                    .list_mentioning(resource, namespace, required)
                    .map(Stored::value)
                    .collect(),
                inner.resource_version,
            ),
            Some(rv) if rv > inner.resource_version => WatchStart::TooLarge(inner.resource_version),
            Some(rv) if rv < inner.compacted => WatchStart::Expired(inner.compacted + 1),
            Some(rv) => WatchStart::Backlog(
                inner
                    .history
                    .iter()
                    .filter(|c| c.resource_version > rv && c.resource.is(resource))
                    .filter(|c| c.may_concern(required))
                    .map(Recorded::change)
                    .collect(),
                inner
                    .history
                    .back()
                    .map_or(rv, |last| last.resource_version.max(rv)),
            ),
        };
        (start, receiver)
    }

    /// Loads objects and the counter from a state file; history starts empty at that version. The
    /// custom resource definitions are established before their objects are loaded; objects of types no longer
    /// served are skipped.
    pub(crate) fn restore(&self, resource_version: u64, objects: Vec<Value>) {
        let mut inner = self.lock();
        let mut custom = Vec::new();
        for object in objects {
            match resources::of_object(&object) {
                Some(resource) => {
                    inner
                        .objects
                        .insert(ObjectKey::of(resource, &object), Stored::new(&object));
                }
                None => custom.push(object),
            }
        }
        inner.resource_version = inner.resource_version.max(resource_version);
        crate::registry::crd::establish(&mut inner);
        for object in custom {
            if let Some(resource) = inner.of_object(&object) {
                inner
                    .objects
                    .insert(ObjectKey::of(resource, &object), Stored::new(&object));
            } else {
                tracing::warn!(
                    api_version = meta::str_at(&object, &["apiVersion"]).unwrap_or_default(),
                    kind = meta::str_at(&object, &["kind"]).unwrap_or_default(),
                    name = meta::name(&object),
                    "skipping a stored object whose type is no longer served"
                );
            }
        }
        inner.compacted = inner.resource_version;
        inner.owners = Owners::rebuild(inner.all());
    }

    /// Journals every change from now on (a store has one journal at most: a second is ignored).
    pub(crate) fn attach_journal(&self, journal: Arc<Journal>) {
        let _ = self.journal.set(journal);
    }

    /// Waits until every change committed so far is durable (at once without a state file): a write is
    /// acknowledged only then. Later changes may be covered by the same fsync, so this costs one at most.
    pub(crate) async fn durable(&self) -> Result<(), ApiError> {
        let Some(journal) = self.journal.get() else {
            return Ok(());
        };
        journal.wait(self.resource_version()).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::resources::find;

    fn configmaps() -> &'static ResourceType {
        find("", "v1", "configmaps").expect("served")
    }

    fn cm(name: &str, data: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"k": data}})
    }

    #[test]
    fn one_global_counter_and_no_op_writes_do_not_bump_it() {
        let store = Store::new(100, crate::clock::Clock::default());
        let mut events = store.subscribe();
        let a = store
            .write(|s| Ok(s.create(configmaps(), cm("a", "1"))))
            .expect("writes");
        let b = store
            .write(|s| Ok(s.create(configmaps(), cm("b", "1"))))
            .expect("writes");
        assert_eq!(a["metadata"]["resourceVersion"], "2");
        assert_eq!(b["metadata"]["resourceVersion"], "3");
        let same = store
            .write(|s| Ok(s.update(configmaps(), cm("a", "1"))))
            .expect("writes");
        assert_eq!(same["metadata"]["resourceVersion"], "2");
        assert_eq!(store.resource_version(), 3);
        let changed = store
            .write(|s| Ok(s.update(configmaps(), cm("a", "2"))))
            .expect("writes");
        assert_eq!(changed["metadata"]["resourceVersion"], "4");
        let types: Vec<EventType> = std::iter::from_fn(|| events.try_recv().ok())
            .map(|c| c.event)
            .collect();
        assert_eq!(
            types,
            [EventType::Added, EventType::Added, EventType::Modified]
        );
    }

    #[test]
    fn a_write_reads_back_what_it_changed_and_later_writes_read_the_stored_text() {
        let store = Store::new(100, crate::clock::Clock::default());
        let key = ObjectKey::new(configmaps(), "default", "a");
        store
            .write(|s| {
                s.create(configmaps(), cm("a", "1"));
                assert_eq!(s.get(&key).expect("created")["data"]["k"], "1");
                s.update(configmaps(), cm("a", "2"));
                assert_eq!(s.get(&key).expect("updated")["data"]["k"], "2");
                s.remove(configmaps(), &key);
                assert_eq!(s.get(&key), None);
                s.create(configmaps(), cm("a", "3"));
                assert_eq!(s.get(&key).expect("created again")["data"]["k"], "3");
                Ok(())
            })
            .expect("writes");
        let stored = store.get(configmaps(), "default", "a").expect("stored");
        assert_eq!(stored["data"]["k"], "3");
        assert_eq!(stored["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn deletions_carry_a_new_version_and_history_is_bounded() {
        let store = Store::new(2, crate::clock::Clock::default());
        store
            .write(|s| Ok(s.create(configmaps(), cm("a", "1"))))
            .expect("writes");
        store
            .write(|s| Ok(s.create(configmaps(), cm("b", "1"))))
            .expect("writes");
        let gone = store
            .write(|s| Ok(s.remove(configmaps(), &ObjectKey::new(configmaps(), "default", "a"))))
            .expect("writes")
            .expect("existed");
        assert_eq!(gone["metadata"]["resourceVersion"], "4");
        let (start, _) = store.watch_from(configmaps(), None, Some(3), &[]);
        assert!(matches!(start, WatchStart::Backlog(ref c, 4) if c.len() == 1));
        let (start, _) = store.watch_from(configmaps(), None, Some(1), &[]);
        assert!(matches!(start, WatchStart::Expired(3)), "{start:?}");
        let (start, _) = store.watch_from(configmaps(), None, Some(9), &[]);
        assert!(matches!(start, WatchStart::TooLarge(4)));
    }

    #[test]
    fn a_watch_requiring_text_starts_from_the_objects_and_changes_that_have_it() {
        let store = Store::new(10, crate::clock::Clock::default());
        for (name, value) in [("a", "1"), ("b", "1"), ("a", "2")] {
            store
                .write(|s| {
                    let key = ObjectKey::new(configmaps(), "default", name);
                    Ok(if s.get(&key).is_some() {
                        s.update(configmaps(), cm(name, value))
                    } else {
                        s.create(configmaps(), cm(name, value))
                    })
                })
                .expect("writes");
        }
        let only_a = [r#""name":"a""#.to_owned()];
        let (start, _) = store.watch_from(configmaps(), None, None, &only_a);
        let WatchStart::Snapshot(objects, 4) = start else {
            panic!("{start:?}")
        };
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0]["data"]["k"], "2");
        // After a's creation (version 2): b's creation (3) and a's update (4).
        let (start, _) = store.watch_from(configmaps(), None, Some(2), &only_a);
        let WatchStart::Backlog(changes, 4) = start else {
            panic!("{start:?}")
        };
        assert_eq!(changes.len(), 1, "b's creation is left out");
        assert_eq!(changes[0].object["data"]["k"], "2");
    }
}
