//! Drift: our objects changing in the cluster, seen through kube-runtime watchers (one LIST, then a WATCH per kind,
//! on the managed-by label), reduced to one item per change that may need a repair.
//!
//! A change is a new object, a deleted one, or one whose spec (its `generation`, or for a Service its spec
//! itself), labels or annotations differ from what was seen; status updates (pods starting, a Job's counters, a
//! CronJob's last schedule) are not changes, so a running job costs nothing. Jobs a CronJob started are not ours
//! to repair. The watchers resume dropped streams, relist after a 410 and back off on errors by themselves; a
//! relist is compared with what was known before it, so a change missed while disconnected is still seen.

use std::collections::BTreeMap;
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

use crate::render::labels::{MANAGED_BY, MANAGED_BY_VALUE};

/// What one object looks like, as far as drift goes: a hash of its identity, spec, labels and annotations.
type Signature = u64;

/// One watcher's item: an object's name and signature (`None`: not ours to repair).
type Item = (
    &'static str,
    watcher::Result<Seen<Option<(String, Signature)>>>,
);

/// A stream that yields a description ("Deployment `bot` deleted") whenever one of our objects changed.
pub(super) fn watch(client: &kube::Client, namespace: &str) -> BoxStream<'static, String> {
    let streams = vec![
        kind::<Job>(client, namespace, "Job"),
        kind::<CronJob>(client, namespace, "CronJob"),
        kind::<Deployment>(client, namespace, "Deployment"),
        kind::<Service>(client, namespace, "Service"),
    ];
    let mut known = Known::default();
    stream::select_all(streams)
        .filter_map(move |(kind, seen)| {
            let change = match seen {
                Ok(seen) => known.see(kind, seen),
                Err(error) => {
                    tracing::warn!(%error, kind, "watch failed; it resumes by itself");
                    None
                }
            };
            futures::future::ready(change)
        })
        .boxed()
}

fn kind<K>(client: &kube::Client, namespace: &str, kind: &'static str) -> BoxStream<'static, Item>
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
    let config = watcher::Config::default().labels(&format!("{MANAGED_BY}={MANAGED_BY_VALUE}"));
    watcher(api, config)
        .default_backoff()
        .map(move |seen| {
            (
                kind,
                seen.map(|seen| map_seen(seen, |object| signed(&object))),
            )
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

/// The object's name and signature, or `None` for a Job a CronJob started.
fn signed<K: Resource + Serialize>(object: &K) -> Option<(String, Signature)> {
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
    Some((object.name_any(), hasher.finish()))
}

/// The signatures of the objects seen, per kind.
#[derive(Debug, Default)]
struct Known {
    kinds: BTreeMap<&'static str, KindState>,
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
    /// Takes in one event; returns what changed, if that is drift.
    fn see(
        &mut self,
        kind: &'static str,
        seen: Seen<Option<(String, Signature)>>,
    ) -> Option<String> {
        let state = self.kinds.entry(kind).or_default();
        match seen {
            Seen::Init => {
                state.relist = Some(BTreeMap::new());
                None
            }
            Seen::InitApply(Some((name, signature))) => {
                state
                    .relist
                    .get_or_insert_with(BTreeMap::new)
                    .insert(name, signature);
                None
            }
            Seen::InitDone => {
                let listed = state.relist.take().unwrap_or_default();
                let before = std::mem::replace(&mut state.objects, listed);
                let first = !std::mem::replace(&mut state.synced, true);
                (!first && before != state.objects)
                    .then(|| format!("{kind} objects changed while the watch was down"))
            }
            Seen::Apply(Some((name, signature))) => {
                let previous = state.objects.insert(name.clone(), signature);
                match previous {
                    Some(previous) if previous == signature => None,
                    Some(_) => Some(format!("{kind} `{name}` changed")),
                    None => Some(format!("{kind} `{name}` appeared")),
                }
                .filter(|_| state.synced)
            }
            Seen::Delete(Some((name, _))) => {
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
    fn object(name: &str, signature: Signature) -> Option<(String, Signature)> {
        Some((name.to_owned(), signature))
    }

    #[test]
    fn the_first_list_is_not_drift_later_changes_are() {
        let mut known = Known::default();
        assert_eq!(known.see("Deployment", Seen::Init), None);
        assert_eq!(
            known.see("Deployment", Seen::InitApply(object("bot", 1))),
            None
        );
        assert_eq!(known.see("Deployment", Seen::InitDone), None);
        assert_eq!(known.see("Deployment", Seen::Apply(object("bot", 1))), None);
        assert_eq!(
            known
                .see("Deployment", Seen::Apply(object("bot", 2)))
                .as_deref(),
            Some("Deployment `bot` changed")
        );
        assert_eq!(
            known
                .see("Deployment", Seen::Delete(object("bot", 2)))
                .as_deref(),
            Some("Deployment `bot` deleted")
        );
        assert_eq!(known.see("Job", Seen::Apply(None)), None, "a CronJob's Job");
    }

    #[test]
    fn a_relist_is_compared_with_what_was_known() {
        let mut known = Known::default();
        for seen in [Seen::Init, Seen::InitApply(object("a", 1)), Seen::InitDone] {
            known.see("CronJob", seen);
        }
        for seen in [Seen::Init, Seen::InitApply(object("a", 1))] {
            assert_eq!(known.see("CronJob", seen), None);
        }
        assert_eq!(known.see("CronJob", Seen::InitDone), None, "same objects");
        for seen in [Seen::Init, Seen::InitApply(object("a", 3))] {
            known.see("CronJob", seen);
        }
        assert!(known.see("CronJob", Seen::InitDone).is_some());
    }

    #[test]
    fn status_changes_do_not_change_the_signature() {
        let mut job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "migrate", "uid": "u1", "generation": 1, "labels": {"a": "b"}},
            "spec": {"template": {}}
        }))
        .unwrap();
        let before = signed(&job);
        job.status = Some(k8s_openapi::api::batch::v1::JobStatus {
            active: Some(1),
            ..Default::default()
        });
        assert_eq!(signed(&job), before);
        job.metadata.generation = Some(2);
        assert_ne!(signed(&job), before);
    }
}
