//! Drift: our objects changing in the cluster, seen through kube-runtime watchers (one LIST, then a WATCH per kind,
//! on the managed-by label), reduced to one item per change that may need a repair.
//!
//! A change is a new object, a deleted one, or one whose spec (its `generation`, or for a Service its spec
//! itself), labels or annotations differ from what was seen; status updates (pods starting, a Job's counters, a
//! CronJob's last schedule) are not changes, so a running job costs nothing. Jobs a CronJob started are not ours
//! to repair. The watchers resume dropped streams, relist after a 410 and back off on errors by themselves; a
//! relist is compared with what was known before it, so a change missed while disconnected is still seen.
//!
//! The same watch on Jobs tells when a one-off finished (its `Complete` or `Failed` condition, also for Jobs
//! that finished while the daemon was away), so the outcome of its run is recorded without waiting for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};

use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Service;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event as Seen, watcher};
use kube::{Resource, ResourceExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model::inventory::RunOutcome;
use crate::model::labels;

/// What one object looks like, as far as drift goes: a hash of its identity, spec, labels and annotations.
type Signature = u64;

/// What the watches saw that the daemon acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Change {
    /// One of our objects changed ("Deployment `bot` deleted"): a reconcile may have to repair it.
    Drift(String),
    /// The Job `uid` of one-off `job` finished.
    Finished {
        job: String,
        uid: String,
        outcome: RunOutcome,
    },
    /// An event that needs nothing (a status update, one of the daemon's own writes coming back): the daemon is
    /// not idle yet.
    Nothing,
}

/// One object as the watches see it (`None` in an event: not ours to repair, a Job a CronJob started).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Object {
    name: String,
    signature: Signature,
    /// A finished Job: its UID and how it ended.
    finished: Option<(String, RunOutcome)>,
}

/// One watcher's item.
type Item = (&'static str, watcher::Result<Seen<Option<Object>>>);

/// A stream of the changes to our objects that matter.
pub(super) fn watch(client: &kube::Client, namespace: &str) -> BoxStream<'static, Change> {
    let streams = vec![
        kind::<Job>(client, namespace, "Job", crate::wait::finished),
        kind::<CronJob>(client, namespace, "CronJob", |_| None),
        kind::<Deployment>(client, namespace, "Deployment", |_| None),
        kind::<Service>(client, namespace, "Service", |_| None),
    ];
    let mut known = Known::default();
    stream::select_all(streams)
        .flat_map(move |(kind, seen)| {
            let changes = match seen {
                Ok(seen) => {
                    let changes = known.see(kind, seen);
                    if changes.is_empty() {
                        vec![Change::Nothing]
                    } else {
                        changes
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, kind, "watch failed; it resumes by itself");
                    Vec::new()
                }
            };
            stream::iter(changes)
        })
        .boxed()
}

fn kind<K>(
    client: &kube::Client,
    namespace: &str,
    kind: &'static str,
    finished: fn(&K) -> Option<RunOutcome>,
) -> BoxStream<'static, Item>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().labels(&labels::framework_selector());
    watcher(api, config)
        .default_backoff()
        .map(move |seen| {
            let seen = seen.map(|seen| map_seen(seen, |object| observe(&object, finished)));
            (kind, seen)
        })
        .boxed()
}

fn map_seen<K, T>(seen: Seen<K>, f: impl Fn(K) -> T) -> Seen<T> {
    match seen {
        Seen::Apply(object) => Seen::Apply(f(object)),
        Seen::Delete(object) => Seen::Delete(f(object)),
        Seen::Init => Seen::Init,
        Seen::InitApply(object) => Seen::InitApply(f(object)),
        Seen::InitDone => Seen::InitDone,
    }
}

/// The object as far as the daemon cares, or `None` for a Job a CronJob started.
fn observe<K: Resource + Serialize>(
    object: &K,
    finished: fn(&K) -> Option<RunOutcome>,
) -> Option<Object> {
    if object
        .owner_references()
        .iter()
        .any(|owner| owner.kind == "CronJob")
    {
        return None;
    }
    let mut hasher = DefaultHasher::new();
    let meta = object.meta();
    meta.uid.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    match meta.generation {
        Some(generation) => generation.hash(&mut hasher),
        // Services have no generation: their spec is the signature.
        None => serde_json::to_value(object)
            .ok()
            .and_then(|value| value.get("spec").map(ToString::to_string))
            .hash(&mut hasher),
    }
    Some(Object {
        name: object.name_any(),
        signature: hasher.finish(),
        finished: meta.uid.clone().zip(finished(object)),
    })
}

/// The signatures of the objects seen, per kind, and the finished Jobs already reported.
#[derive(Debug, Default)]
struct Known {
    kinds: BTreeMap<&'static str, KindState>,
    /// UIDs of the finished Jobs reported (a finished Job keeps being seen until it is deleted).
    finished: BTreeSet<String>,
}

#[derive(Debug, Default)]
struct KindState {
    /// Whether a first complete list arrived (before it, everything is new and nothing is drift: the daemon's
    /// first reconcile covers it).
    synced: bool,
    objects: BTreeMap<String, Signature>,
    relist: Option<BTreeMap<String, Signature>>,
}

impl Known {
    /// Takes in one event; returns what of it the daemon acts on.
    fn see(&mut self, kind: &'static str, seen: Seen<Option<Object>>) -> Vec<Change> {
        let mut changes = Vec::new();
        if let Seen::Apply(Some(object)) | Seen::InitApply(Some(object)) = &seen
            && let Some((uid, outcome)) = &object.finished
            && self.finished.insert(uid.clone())
        {
            changes.push(Change::Finished {
                job: object.name.clone(),
                uid: uid.clone(),
                outcome: *outcome,
            });
        }
        if let Seen::Delete(Some(Object {
            finished: Some((uid, _)),
            ..
        })) = &seen
        {
            self.finished.remove(uid);
        }
        changes.extend(self.drift(kind, seen).map(Change::Drift));
        changes
    }

    fn drift(&mut self, kind: &'static str, seen: Seen<Option<Object>>) -> Option<String> {
        let state = self.kinds.entry(kind).or_default();
        match seen {
            Seen::Init => {
                state.relist = Some(BTreeMap::new());
                None
            }
            Seen::InitApply(Some(object)) => {
                state
                    .relist
                    .get_or_insert_with(BTreeMap::new)
                    .insert(object.name, object.signature);
                None
            }
            Seen::InitDone => {
                let listed = state.relist.take().unwrap_or_default();
                let before = std::mem::replace(&mut state.objects, listed);
                let first = !std::mem::replace(&mut state.synced, true);
                (!first && before != state.objects)
                    .then(|| format!("{kind} objects changed while the watch was down"))
            }
            Seen::Apply(Some(Object {
                name, signature, ..
            })) => {
                let previous = state.objects.insert(name.clone(), signature);
                match previous {
                    Some(previous) if previous == signature => None,
                    Some(_) => Some(format!("{kind} `{name}` changed")),
                    None => Some(format!("{kind} `{name}` appeared")),
                }
                .filter(|_| state.synced)
            }
            Seen::Delete(Some(Object { name, .. })) => {
                state.objects.remove(&name);
                Some(format!("{kind} `{name}` deleted")).filter(|_| state.synced)
            }
            Seen::InitApply(None) | Seen::Apply(None) | Seen::Delete(None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[expect(clippy::unnecessary_wraps, reason = "events carry an `Option`")]
    fn object(name: &str, signature: Signature) -> Option<Object> {
        Some(Object {
            name: name.to_owned(),
            signature,
            finished: None,
        })
    }

    fn drift(text: &str) -> Vec<Change> {
        vec![Change::Drift(text.to_owned())]
    }

    #[test]
    fn the_first_list_is_not_drift_later_changes_are() {
        let mut known = Known::default();
        assert_eq!(known.see("Deployment", Seen::Init), []);
        assert_eq!(
            known.see("Deployment", Seen::InitApply(object("bot", 1))),
            []
        );
        assert_eq!(known.see("Deployment", Seen::InitDone), []);
        assert_eq!(known.see("Deployment", Seen::Apply(object("bot", 1))), []);
        assert_eq!(
            known.see("Deployment", Seen::Apply(object("bot", 2))),
            drift("Deployment `bot` changed")
        );
        assert_eq!(
            known.see("Deployment", Seen::Delete(object("bot", 2))),
            drift("Deployment `bot` deleted")
        );
        assert_eq!(known.see("Job", Seen::Apply(None)), [], "a CronJob's Job");
    }

    #[test]
    fn a_relist_is_compared_with_what_was_known() {
        let mut known = Known::default();
        for seen in [Seen::Init, Seen::InitApply(object("a", 1)), Seen::InitDone] {
            known.see("CronJob", seen);
        }
        for seen in [Seen::Init, Seen::InitApply(object("a", 1))] {
            assert_eq!(known.see("CronJob", seen), []);
        }
        assert_eq!(known.see("CronJob", Seen::InitDone), [], "same objects");
        for seen in [Seen::Init, Seen::InitApply(object("a", 3))] {
            known.see("CronJob", seen);
        }
        assert_eq!(known.see("CronJob", Seen::InitDone).len(), 1);
    }

    #[test]
    fn a_finished_job_is_reported_once_even_when_it_finished_before_the_first_list() {
        let mut known = Known::default();
        let finished = Some(Object {
            name: "migrate".to_owned(),
            signature: 1,
            finished: Some(("u1".to_owned(), RunOutcome::Failed)),
        });
        let reported = vec![Change::Finished {
            job: "migrate".to_owned(),
            uid: "u1".to_owned(),
            outcome: RunOutcome::Failed,
        }];
        known.see("Job", Seen::Init);
        assert_eq!(
            known.see("Job", Seen::InitApply(finished.clone())),
            reported
        );
        known.see("Job", Seen::InitDone);
        assert_eq!(known.see("Job", Seen::Apply(finished.clone())), []);
    }

    #[test]
    fn status_changes_do_not_change_the_signature() {
        let mut job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "migrate", "uid": "u1", "generation": 1, "labels": {"a": "b"}},
            "spec": {"template": {}}
        }))
        .unwrap();
        let before = observe(&job, crate::wait::finished).unwrap();
        assert_eq!(before.finished, None);
        job.status = Some(
            serde_json::from_value(serde_json::json!({
                "succeeded": 1,
                "conditions": [{"type": "Complete", "status": "True"}]
            }))
            .unwrap(),
        );
        let after = observe(&job, crate::wait::finished).unwrap();
        assert_eq!(after.signature, before.signature);
        assert_eq!(
            after.finished,
            Some(("u1".to_owned(), RunOutcome::Succeeded))
        );
        job.metadata.generation = Some(2);
        assert_ne!(
            observe(&job, crate::wait::finished).unwrap().signature,
            before.signature
        );
    }
}
