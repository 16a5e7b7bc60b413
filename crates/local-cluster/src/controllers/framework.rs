//! The controller framework, shaped like a kube-runtime reconciler: a [`Reconciler`] maps store changes to the
//! keys of its primary objects, decides what to do about one key from a snapshot of the store and the time
//! (returning [`Effect`]s and an optional requeue delay), and [`run`] executes the effects through the same
//! registry operations the API uses, so resourceVersions, generation and watch events are those of any client.
//!
//! It is not a cache or a work queue with rate limiting: reconcilers read the store directly (it is in-process
//! and always current), and requeues are timers, never polling. Requeue and retry delays are cluster durations:
//! the timers wait them on the cluster's [`crate::clock::Clock`]. Everything stops with the cluster's shutdown.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::controllers::recorder::{self, Event};
use crate::registry::api_error::ApiError;
use crate::registry::delete::{self, DeleteOptions};
use crate::registry::meta;
use crate::registry::ops::{self, Part, WriteOptions};
use crate::registry::resources::ResourceType;
use crate::registry::store::{Change, ObjectKey, Store};

/// A primary object of one reconciler, by namespace and name (the reconciler knows the type).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl Key {
    pub(crate) fn of(object: &Value) -> Self {
        Key {
            namespace: meta::namespace(object).to_owned(),
            name: meta::name(object).to_owned(),
        }
    }
}

/// One write a reconciler wants done.
#[derive(Debug, Clone)]
pub(crate) enum Effect {
    /// Create an object in its `metadata.namespace`; if that fails, record the Event (if any) with the error
    /// appended to its message (`FailedCreate` `Error creating: <error>`).
    Create(&'static ResourceType, Value, Option<Event>),
    /// Replace an object (or its status); its `resourceVersion` makes the write conditional.
    Replace(&'static ResourceType, Part, Value),
    /// Delete an object, with a uid precondition taken from the given state.
    Delete(&'static ResourceType, Value, DeleteOptions),
    /// Record an Event.
    Event(Event),
}

impl PartialEq for Effect {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Effect::Create(kind, object, failed),
                Effect::Create(other_kind, other, other_failed),
            ) => kind.is(other_kind) && object == other && failed == other_failed,
            (
                Effect::Replace(kind, part, object),
                Effect::Replace(other_kind, other_part, other),
            ) => kind.is(other_kind) && part == other_part && object == other,
            (
                Effect::Delete(kind, object, options),
                Effect::Delete(other_kind, other, other_options),
            ) => kind.is(other_kind) && object == other && options == other_options,
            (Effect::Event(event), Effect::Event(other)) => event == other,
            _ => false,
        }
    }
}

/// What a reconcile decided: the effects, in order, and when to look again without a change.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Action {
    pub(crate) effects: Vec<Effect>,
    pub(crate) requeue_after: Option<Duration>,
}

impl Action {
    /// Keeps the earliest of two requeue delays.
    pub(crate) fn requeue(&mut self, after: Duration) {
        self.requeue_after = Some(self.requeue_after.map_or(after, |d| d.min(after)));
    }
}

/// A controller: which keys a change concerns, and the decision for one key.
pub(crate) trait Reconciler: Send + 'static {
    /// The keys of the primary objects a change concerns.
    fn keys(&self, change: &Change) -> Vec<Key>;
    /// Every primary object, for the first sync and after missed changes.
    fn all(&self, store: &Store) -> Vec<Key>;
    /// What to do now about one key (its object may be gone).
    fn reconcile(&mut self, key: &Key, store: &Store) -> Action;
    /// What to write when the API refused a child this key's reconcile created (the ReplicaSet's
    /// `ReplicaFailure` condition); nothing by default. The key is retried with back-off either way.
    fn refused(&mut self, _key: &Key, _store: &Store, _error: &ApiError) -> Vec<Effect> {
        Vec::new()
    }
}

/// Why a list of effects stopped: the error, and whether it was the creation of a child.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: ApiError,
    pub(crate) creating: bool,
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        Failure {
            error,
            creating: false,
        }
    }
}

/// How long to wait before retrying a key whose effects failed (a conflict usually; the change that caused it
/// normally triggers the key earlier); it doubles per consecutive failure of the key, up to [`RETRY_CAP`], so a
/// refusal that lasts (a quota) does not turn into a stream of writes.
const RETRY_AFTER: Duration = Duration::from_millis(200);
const RETRY_CAP: Duration = Duration::from_secs(60);

/// The retry delay after `failures` consecutive failures.
fn retry_after(failures: u32) -> Duration {
    RETRY_AFTER
        .saturating_mul(2_u32.saturating_pow(failures.saturating_sub(1)))
        .min(RETRY_CAP)
}

/// Runs a reconciler until `shutdown`.
pub(crate) async fn run(
    mut reconciler: impl Reconciler,
    store: Store,
    shutdown: CancellationToken,
) {
    let mut changes = store.subscribe();
    let mut queue: BTreeSet<Key> = reconciler.all(&store).into_iter().collect();
    let mut timers: BTreeMap<Key, Instant> = BTreeMap::new();
    let mut failures: BTreeMap<Key, u32> = BTreeMap::new();
    loop {
        for key in std::mem::take(&mut queue) {
            timers.remove(&key);
            let action = reconciler.reconcile(&key, &store);
            let requeue = match execute(&store, action.effects) {
                Ok(()) => {
                    failures.remove(&key);
                    action.requeue_after
                }
                Err(Failure { error, creating }) => {
                    if creating
                        && let Err(Failure { error, .. }) =
                            execute(&store, reconciler.refused(&key, &store, &error))
                    {
                        tracing::debug!(?key, %error, "recording a refused creation failed");
                    }
                    let count = failures.entry(key.clone()).or_insert(0);
                    *count += 1;
                    tracing::debug!(?key, %error, failures = *count, "reconcile failed, retrying");
                    Some(retry_after(*count))
                }
            };
            if let Some(after) = requeue {
                timers.insert(key, store.clock().deadline(after));
            }
        }
        let next = timers.values().min().copied();
        tokio::select! {
            () = shutdown.cancelled() => return,
            received = changes.recv() => match received {
                Ok(change) => {
                    queue.extend(reconciler.keys(&change));
                    // Batch whatever else is already committed, so one reconcile sees all of it.
                    loop {
                        match changes.try_recv() {
                            Ok(change) => queue.extend(reconciler.keys(&change)),
                            Err(TryRecvError::Lagged(_)) => queue.extend(reconciler.all(&store)),
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvError::Lagged(_)) => queue.extend(reconciler.all(&store)),
                Err(RecvError::Closed) => return,
            },
            () = sleep_until(next) => {
                let now = Instant::now();
                let due: Vec<Key> = timers.iter().filter(|(_, at)| **at <= now).map(|(k, _)| k.clone()).collect();
                for key in due {
                    timers.remove(&key);
                    queue.insert(key);
                }
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Executes effects in order, stopping at the first failure (later effects usually depend on earlier ones).
pub(crate) fn execute(store: &Store, effects: Vec<Effect>) -> Result<(), Failure> {
    let options = WriteOptions::default();
    for effect in effects {
        match effect {
            Effect::Create(resource, object, failed) => {
                let namespace = meta::namespace(&object).to_owned();
                if let Err(error) = ops::create(store, resource, Some(&namespace), object, &options)
                {
                    if let Some(mut event) = failed {
                        event.message.push_str(&error.message);
                        // The creation error is what matters; a lost event does not change it.
                        let _ = recorder::record(store, &event);
                    }
                    return Err(Failure {
                        error,
                        creating: true,
                    });
                }
            }
            Effect::Replace(resource, part, object) => {
                let namespace = meta::namespace(&object).to_owned();
                let name = meta::name(&object).to_owned();
                ops::replace(store, resource, &namespace, &name, object, part, &options)?;
            }
            Effect::Delete(resource, object, mut options) => {
                options.precondition_uid = Some(meta::uid(&object).to_owned());
                match delete::delete(
                    store,
                    resource,
                    meta::namespace(&object),
                    meta::name(&object),
                    &options,
                ) {
                    // Already gone is what the delete wanted.
                    Err(error) if error.code == 404 => {}
                    other => {
                        other?;
                    }
                }
            }
            Effect::Event(event) => recorder::record(store, &event)?,
        }
    }
    Ok(())
}

/// Runs a reconciler on its own task until `shutdown`.
pub(crate) fn spawn(reconciler: impl Reconciler, store: &Store, shutdown: &CancellationToken) {
    // Detached: the task ends by itself when `shutdown` is cancelled.
    drop(tokio::spawn(run(
        reconciler,
        store.clone(),
        shutdown.clone(),
    )));
}

/// The Warning `FailedCreate` Event a controller records when creating a child fails; the executor appends the
/// error to `prefix`.
pub(crate) fn failed_create(
    resource: &ResourceType,
    owner: &Value,
    prefix: &str,
    component: &'static str,
) -> Event {
    Event::about(
        resource,
        owner,
        None,
        "Warning",
        "FailedCreate",
        prefix.to_owned(),
        component,
    )
}

/// The `status` of a condition of `type_` in `status.conditions`, if present.
pub(crate) fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    meta::at(object, &["status", "conditions"])?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// Whether a condition of `type_` is `True`.
pub(crate) fn is_true(object: &Value, type_: &str) -> bool {
    condition(object, type_)
        .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

/// A pod from a template, named `<owner>-<5 random characters>` and controlled by `owner` (of type `resource`).
pub(crate) fn pod_from_template(resource: &ResourceType, owner: &Value, template: &Value) -> Value {
    let mut pod = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": template.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
        "spec": template.get("spec").cloned().unwrap_or_else(|| serde_json::json!({})),
    });
    let name = meta::generate_name(&format!("{}-", meta::name(owner)));
    meta::remove_at(&mut pod, &["metadata", "generateName"]);
    meta::set_at(&mut pod, &["metadata", "name"], Value::from(name));
    meta::set_at(
        &mut pod,
        &["metadata", "namespace"],
        Value::from(meta::namespace(owner)),
    );
    meta::set_at(
        &mut pod,
        &["metadata", "ownerReferences"],
        serde_json::json!([{"apiVersion": resource.api_version(), "kind": resource.kind,
            "name": meta::name(owner), "uid": meta::uid(owner), "controller": true, "blockOwnerDeletion": true}]),
    );
    pod
}

/// The name of the object of `kind` controlling `object`, if any.
/// The keys a change leads to for a reconciler of `owner` objects (of kind `owner_kind`) that also watches the
/// `dependent` objects they control: the owner itself, or the owner named by a dependent's controller reference.
pub(crate) fn owner_keys(
    change: &Change,
    owner: &ResourceType,
    owner_kind: &str,
    dependent: &ResourceType,
) -> Vec<Key> {
    if change.resource.is(owner) {
        return vec![Key::of(&change.object)];
    }
    if change.resource.is(dependent) {
        return controller_name(&change.object, owner_kind)
            .map(|name| Key {
                namespace: meta::namespace(&change.object).to_owned(),
                name: name.to_owned(),
            })
            .into_iter()
            .collect();
    }
    Vec::new()
}

/// The key of every object of `resource`, for a resync: read from the store's keys, no object is parsed.
pub(crate) fn all_keys(store: &Store, resource: &'static ResourceType) -> Vec<Key> {
    store.read(|s| {
        s.list_entries(resource, None)
            .map(|(key, _)| Key {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            })
            .collect()
    })
}

/// The `owner` object at `key` and the `dependent` objects in its namespace whose owner references name it (by
/// uid), read in one consistent snapshot; `None` when the owner is gone. The dependents are found through the
/// store's owner index, ordered by name: only they are read, not the whole namespace.
pub(crate) fn owner_and_dependents(
    store: &Store,
    owner: &'static ResourceType,
    dependent: &'static ResourceType,
    key: &Key,
) -> Option<(Value, Vec<Value>)> {
    store.read(|s| {
        let object = s.get(&ObjectKey::new(owner, &key.namespace, &key.name))?;
        let dependents = s
            .owners
            .dependents(meta::uid(&object))
            .filter(|candidate| candidate.is_of(dependent) && candidate.namespace == key.namespace)
            .filter_map(|candidate| s.get(candidate))
            .collect();
        Some((object, dependents))
    })
}

pub(crate) fn controller_name<'a>(object: &'a Value, kind: &str) -> Option<&'a str> {
    meta::owner_references(object)
        .iter()
        .find(|r| {
            r.get("controller") == Some(&Value::Bool(true))
                && meta::str_at(r, &["kind"]) == Some(kind)
        })
        .and_then(|r| meta::str_at(r, &["name"]))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::resources::{configmaps, find, jobs, pods};

    #[test]
    fn retries_back_off_from_200_ms_to_a_minute() {
        let delays = [1, 2, 3, 9, 20].map(|n| retry_after(n).as_millis());
        assert_eq!(delays, [200, 400, 800, 51_200, 60_000]);
    }

    #[test]
    fn the_dependents_are_the_objects_of_the_dependent_type_naming_the_owner_by_uid() {
        let store = ops::store_with_namespace("a");
        let create = |resource, object| {
            ops::create(
                &store,
                resource,
                Some("a"),
                object,
                &WriteOptions::default(),
            )
            .expect("created")
            .object
        };
        let owner = create(configmaps(), json!({"metadata": {"name": "owner"}}));
        let reference = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]);
        for name in ["z-dependent", "a-dependent"] {
            create(
                configmaps(),
                json!({"metadata": {"name": name, "ownerReferences": reference}}),
            );
        }
        create(configmaps(), json!({"metadata": {"name": "unowned"}}));
        let secrets = find("", "v1", "secrets").expect("served");
        create(
            secrets,
            json!({"metadata": {"name": "other-kind", "ownerReferences": reference}}),
        );

        let key = Key {
            namespace: "a".into(),
            name: "owner".into(),
        };
        let (found, dependents) =
            owner_and_dependents(&store, configmaps(), configmaps(), &key).expect("the owner");
        assert_eq!(found["metadata"]["uid"], owner["metadata"]["uid"]);
        let names: Vec<&str> = dependents.iter().map(meta::name).collect();
        assert_eq!(names, ["a-dependent", "z-dependent"]);
        let (_, secrets) =
            owner_and_dependents(&store, configmaps(), secrets, &key).expect("the owner");
        assert_eq!(
            secrets.iter().map(meta::name).collect::<Vec<_>>(),
            ["other-kind"]
        );

        let gone = Key {
            namespace: "a".into(),
            name: "missing".into(),
        };
        assert!(owner_and_dependents(&store, configmaps(), configmaps(), &gone).is_none());
    }

    #[test]
    fn a_refused_creation_stops_the_effects_and_records_failed_create_with_the_error() {
        let store = ops::store_with_namespace("default");
        let job = json!({"metadata": {"name": "j", "namespace": "default", "uid": "ju"}});
        let invalid = json!({"metadata": {"name": "j-abcde", "namespace": "default"}, "spec": {"containers": []}});
        let later = Event::about(
            jobs(),
            &job,
            None,
            "Normal",
            "SuccessfulCreate",
            "never".into(),
            "job-controller",
        );
        let effects = vec![
            Effect::Create(
                pods(),
                invalid,
                Some(failed_create(
                    jobs(),
                    &job,
                    "Error creating: ",
                    "job-controller",
                )),
            ),
            Effect::Event(later),
        ];
        let Failure { error, creating } = execute(&store, effects).expect_err("the pod is invalid");
        assert!(creating);
        assert_eq!(error.code, 422);
        let events =
            store.list(crate::registry::resources::find("", "v1", "events").expect("served"));
        assert_eq!(events.len(), 1, "the effects after the failure did not run");
        assert_eq!(events[0]["reason"], "FailedCreate");
        assert_eq!(events[0]["type"], "Warning");
        assert_eq!(
            events[0]["message"],
            format!("Error creating: {}", error.message)
        );
    }
}
