//! What the watches of a wait have seen ([`Observed`]), and the loop that feeds it and asks a judge after every
//! change ([`Watches::drive`]).
//!
//! Each watch is a kube-runtime watcher: a consistent LIST, then a WATCH from the list's resourceVersion, relisting
//! on 410 and retrying transient errors with back-off. Nothing is judged before every watch has delivered its first
//! complete list, so a verdict never rests on a half-read state. Deleted objects keep their last state (a failure
//! report still shows the pod the Job controller deleted).
//!
//! A cluster that cannot be reached is not waited for to the deadline: once the watches have failed to reach it
//! for [`UNREACHABLE_LIMIT`] and one more request fails the same way, the wait ends with
//! [`WaitError::Unreachable`].

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use futures::stream::{BoxStream, SelectAll};
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams};
use kube::runtime::watcher::{self, watcher};
use kube::runtime::{WatchStreamExt, watcher::Event as Seen};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::report::FailureReport;
use super::{Phase, WaitError, WaitProgress};
use crate::cluster::connect::unreachable_server;

/// The objects of one kind a watch has seen, by UID.
#[derive(Debug)]
pub(crate) struct Cache<K> {
    /// Whether a complete list has arrived (always true for kinds this wait does not watch).
    synced: bool,
    current: BTreeMap<String, K>,
    /// The last state of objects deleted while watched.
    gone: BTreeMap<String, K>,
    /// Objects of a relist in progress, swapped in when it is done.
    relist: Option<BTreeMap<String, K>>,
}

impl<K: Resource + Clone> Cache<K> {
    fn new(watched: bool) -> Self {
        Cache {
            synced: !watched,
            current: BTreeMap::new(),
            gone: BTreeMap::new(),
            relist: None,
        }
    }

    pub(crate) fn apply(&mut self, seen: Seen<K>) {
        match seen {
            Seen::Init => self.relist = Some(BTreeMap::new()),
            Seen::InitApply(object) => {
                if let Some(listed) = &mut self.relist {
                    listed.insert(key(&object), object);
                }
            }
            Seen::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                let before = std::mem::replace(&mut self.current, listed);
                for (uid, object) in before {
                    if !self.current.contains_key(&uid) {
                        self.gone.insert(uid, object);
                    }
                }
                for uid in self.current.keys() {
                    self.gone.remove(uid);
                }
                self.synced = true;
            }
            Seen::Apply(object) => {
                let uid = key(&object);
                self.gone.remove(&uid);
                self.current.insert(uid, object);
            }
            Seen::Delete(object) => {
                let uid = key(&object);
                self.current.remove(&uid);
                self.gone.insert(uid, object);
            }
        }
    }

    /// The object with this UID, if it exists now.
    pub(crate) fn get(&self, uid: &str) -> Option<&K> {
        self.current.get(uid)
    }

    /// The last state of the object with this UID, if it was deleted while watched.
    pub(crate) fn gone(&self, uid: &str) -> Option<&K> {
        self.gone.get(uid)
    }

    /// The objects that exist now.
    pub(crate) fn current(&self) -> impl Iterator<Item = &K> {
        self.current.values()
    }

    /// Every object seen: those that exist now, then the deleted ones.
    pub(crate) fn all(&self) -> impl Iterator<Item = &K> {
        self.current.values().chain(self.gone.values())
    }
}

fn key<K: Resource>(object: &K) -> String {
    object.uid().unwrap_or_else(|| object.name_any())
}

/// One item from one of the watches.
pub(crate) enum Update {
    Job(watcher::Result<Seen<Job>>),
    Deployment(watcher::Result<Seen<Deployment>>),
    ReplicaSet(watcher::Result<Seen<ReplicaSet>>),
    Pod(watcher::Result<Seen<Pod>>),
    Event(watcher::Result<Seen<Event>>),
}

/// Everything the watches of one wait have seen.
#[derive(Debug)]
pub(crate) struct Observed {
    pub(crate) jobs: Cache<Job>,
    pub(crate) deployments: Cache<Deployment>,
    pub(crate) replica_sets: Cache<ReplicaSet>,
    pub(crate) pods: Cache<Pod>,
    /// The namespace's Warning Events.
    pub(crate) events: Cache<Event>,
    /// Each pod container's `restartCount` when this wait first saw it, by pod UID and container name: a count
    /// above it is a restart during the wait.
    pub(crate) first_restarts: BTreeMap<(String, String), i32>,
}

impl Observed {
    fn synced(&self) -> bool {
        self.jobs.synced
            && self.deployments.synced
            && self.replica_sets.synced
            && self.pods.synced
            && self.events.synced
    }

    /// Notes the restart count of every container not seen before ([`Observed::first_restarts`]); a container
    /// without a status yet has not restarted.
    pub(crate) fn remember_restarts(&mut self) {
        for pod in self.pods.current() {
            let uid = key(pod);
            let statuses: Vec<_> = pod
                .status
                .iter()
                .flat_map(|status| {
                    status
                        .init_container_statuses
                        .iter()
                        .flatten()
                        .chain(status.container_statuses.iter().flatten())
                })
                .collect();
            let spec = pod.spec.iter().flat_map(|spec| {
                spec.init_containers
                    .iter()
                    .flatten()
                    .chain(&spec.containers)
                    .map(|container| &container.name)
            });
            let names = spec.chain(statuses.iter().map(|status| &status.name));
            for name in names {
                let restarts = statuses
                    .iter()
                    .find(|status| &status.name == name)
                    .map_or(0, |status| status.restart_count);
                self.first_restarts
                    .entry((uid.clone(), name.clone()))
                    .or_insert(restarts);
            }
        }
    }

    /// The container's restart count when this wait first saw it (`None`: not seen before).
    pub(crate) fn first_restarts(&self, pod: &str, container: &str) -> Option<i32> {
        self.first_restarts
            .get(&(pod.to_owned(), container.to_owned()))
            .copied()
    }

    /// Warning Events about any of these objects (by UID), newest last.
    pub(crate) fn warnings_about<'a>(&'a self, uids: &[&str]) -> Vec<&'a Event> {
        let mut found: Vec<&Event> = self
            .events
            .current()
            .filter(|event| {
                event
                    .involved_object
                    .uid
                    .as_deref()
                    .is_some_and(|uid| uids.contains(&uid))
            })
            .collect();
        // Same-second Events keep the order of their names, which client-go derives from a nanosecond clock.
        found.sort_by_key(|event| (last_seen(event), event.metadata.name.clone()));
        found
    }
}

/// When an Event last happened, as precisely as it says.
pub(crate) fn last_seen(event: &Event) -> Option<jiff::Timestamp> {
    event
        .last_timestamp
        .as_ref()
        .map(|time| time.0)
        .or_else(|| event.event_time.as_ref().map(|time| time.0))
        .or_else(|| event.first_timestamp.as_ref().map(|time| time.0))
        .or_else(|| {
            event
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| time.0)
        })
}

/// How long the API server may stay unreachable during a wait before the wait gives up.
pub(crate) const UNREACHABLE_LIMIT: Duration = Duration::from_secs(30);

/// The watches a wait opens, merged into one stream.
pub(crate) struct Watches {
    client: kube::Client,
    /// Since when every watch that tried failed to reach the server (`None`: a watch got through since).
    unreachable_since: Option<Instant>,
    namespace: String,
    /// The pods' label selector, when pods are watched.
    pods: Option<String>,
    streams: SelectAll<BoxStream<'static, Update>>,
    observed: Observed,
}

/// Which kinds a wait watches, with their selectors.
#[derive(Debug, Default)]
pub(crate) struct Selectors {
    /// Jobs: a field selector.
    pub(crate) jobs: Option<String>,
    /// Deployments: a field selector.
    pub(crate) deployments: Option<String>,
    /// `ReplicaSet`s: a label selector (`None`: not watched; empty: every one).
    pub(crate) replica_sets: Option<String>,
    /// Pods: a label selector (`None`: not watched; empty: every one).
    pub(crate) pods: Option<String>,
}

impl Watches {
    /// Opens the watches: the selected kinds, and always the namespace's Warning Events.
    pub(crate) fn open(client: &kube::Client, namespace: &str, selectors: &Selectors) -> Self {
        let mut streams = Vec::new();
        if let Some(fields) = &selectors.jobs {
            let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
            streams.push(open(
                jobs,
                watcher::Config::default().fields(fields),
                Update::Job,
            ));
        }
        if let Some(fields) = &selectors.deployments {
            let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            streams.push(open(
                deployments,
                watcher::Config::default().fields(fields),
                Update::Deployment,
            ));
        }
        if let Some(labels) = &selectors.replica_sets {
            let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
            streams.push(open(sets, labelled(labels), Update::ReplicaSet));
        }
        if let Some(labels) = &selectors.pods {
            let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
            streams.push(open(pods, labelled(labels), Update::Pod));
        }
        let events: Api<Event> = Api::namespaced(client.clone(), namespace);
        streams.push(open(
            events,
            watcher::Config::default().fields("type=Warning"),
            Update::Event,
        ));
        Watches {
            client: client.clone(),
            unreachable_since: None,
            namespace: namespace.to_owned(),
            pods: selectors.pods.clone(),
            streams: stream::select_all(streams),
            observed: Observed {
                jobs: Cache::new(selectors.jobs.is_some()),
                deployments: Cache::new(selectors.deployments.is_some()),
                replica_sets: Cache::new(selectors.replica_sets.is_some()),
                pods: Cache::new(selectors.pods.is_some()),
                events: Cache::new(true),
                first_restarts: BTreeMap::new(),
            },
        }
    }

    /// Feeds the watches into [`Observed`] and asks `judge` after every change, until it decides or `deadline`
    /// passes. A [`Step::Settle`] becomes [`Decision::Succeeded`] once the judge has said so of the same pods for
    /// `settle` without a change in between that it judged otherwise, and one more read of the pods agrees.
    /// `progress` gets every new [`WaitProgress`], its time counted from `started`.
    pub(crate) async fn drive(
        mut self,
        started: Instant,
        deadline: Instant,
        settle: Duration,
        progress: &mut (dyn FnMut(&WaitProgress) + Send),
        judge: impl Fn(&Observed) -> Step,
    ) -> Result<Finish, WaitError> {
        let mut last = WaitProgress {
            phase: Phase::Watching,
            message: "reading the current state".to_owned(),
            elapsed: started.elapsed(),
        };
        progress(&last);
        let timeout = tokio::time::sleep_until(deadline);
        tokio::pin!(timeout);
        // The pods the judge last called settling, and since when.
        let mut settling: Option<(Vec<String>, Instant)> = None;
        loop {
            let settled_at = settling.as_ref().map(|(_, since)| *since + settle);
            let update = tokio::select! {
                biased;
                () = &mut timeout => {
                    last.elapsed = started.elapsed();
                    return Ok(Finish::TimedOut(last));
                }
                () = tokio::time::sleep_until(settled_at.unwrap_or(deadline)), if settled_at.is_some() => None,
                () = tokio::time::sleep_until(
                    self.unreachable_since.map_or(deadline, |since| since + UNREACHABLE_LIMIT)
                ), if self.unreachable_since.is_some() => {
                    self.check_reachable().await?;
                    continue;
                }
                // Invariant: watcher streams retry forever and never end, so neither does their merge.
                update = self.streams.next() => Some(update.expect("watch streams never end")),
            };
            let step = match update {
                Some(update) => {
                    self.apply(update)?;
                    if !self.observed.synced() {
                        continue;
                    }
                    self.observed.remember_restarts();
                    judge(&self.observed)
                }
                // Settled: confirm with a fresh read of the pods (a restart the pod watch has not delivered yet).
                None => match self.reread(deadline, &judge).await {
                    Some(Step::Settle(pods, _))
                        if settling
                            .as_ref()
                            .is_some_and(|(settled, _)| *settled == pods) =>
                    {
                        return Ok(Finish::Done(Decision::Succeeded));
                    }
                    Some(step) => step,
                    None => return Ok(Finish::Done(Decision::Succeeded)),
                },
            };
            let (phase, message) = match step {
                Step::Done(decision @ Decision::Failed(..)) => {
                    let decision = self
                        .confirm_failure(deadline, &judge)
                        .await
                        .unwrap_or(decision);
                    return Ok(Finish::Done(decision));
                }
                Step::Done(decision) => return Ok(Finish::Done(decision)),
                Step::Wait(phase, message) => {
                    settling = None;
                    (phase, message)
                }
                Step::Settle(pods, message) => {
                    if settling
                        .as_ref()
                        .is_none_or(|(settled, _)| *settled != pods)
                    {
                        settling = Some((pods, Instant::now()));
                    }
                    (Phase::Settling, message)
                }
            };
            if (phase, message.as_str()) != (last.phase, last.message.as_str()) {
                last = WaitProgress {
                    phase,
                    message,
                    elapsed: started.elapsed(),
                };
                progress(&last);
            }
        }
    }

    /// Reads the pods and Warning Events once more and judges again: the watches are separate streams, so the
    /// Job's `Failed` condition can arrive before the pod watch delivered the last pod's exit. Only a failure counts
    /// (the verdict is already known); a read that fails or misses the deadline changes nothing.
    async fn confirm_failure(
        &mut self,
        deadline: Instant,
        judge: &impl Fn(&Observed) -> Step,
    ) -> Option<Decision> {
        match self.reread(deadline, judge).await? {
            Step::Done(decision @ Decision::Failed(..)) => Some(decision),
            Step::Done(_) | Step::Wait(..) | Step::Settle(..) => None,
        }
    }

    /// Reads the pods and Warning Events once more and judges again (`None`: a read failed or missed `deadline`).
    async fn reread(
        &mut self,
        deadline: Instant,
        judge: &impl Fn(&Observed) -> Step,
    ) -> Option<Step> {
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let warnings = ListParams::default().fields("type=Warning");
        let events = tokio::time::timeout_at(deadline, events.list(&warnings)).await;
        for event in events.ok()?.ok()?.items {
            self.observed.events.apply(Seen::Apply(event));
        }
        if let Some(labels) = &self.pods {
            let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
            let pods =
                tokio::time::timeout_at(deadline, pods.list(&ListParams::default().labels(labels)))
                    .await;
            for pod in pods.ok()?.ok()?.items {
                self.observed.pods.apply(Seen::Apply(pod));
            }
        }
        self.observed.remember_restarts();
        Some(judge(&self.observed))
    }

    /// After [`UNREACHABLE_LIMIT`] of failing watches: one more request, which fails the wait when it cannot
    /// reach the server either. (A watch that reconnected stays silent until something changes, so the watches'
    /// silence alone does not tell.)
    async fn check_reachable(&mut self) -> Result<(), WaitError> {
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        match events.list_metadata(&ListParams::default().limit(1)).await {
            Err(source) => {
                if let Some(server) = unreachable_server(&source) {
                    return Err(WaitError::Unreachable {
                        server: server.to_owned(),
                        source,
                    });
                }
                self.unreachable_since = None;
            }
            Ok(_) => self.unreachable_since = None,
        }
        Ok(())
    }

    fn apply(&mut self, update: Update) -> Result<(), WaitError> {
        let observed = &mut self.observed;
        let failed = match update {
            Update::Job(seen) => seen
                .map(|seen| observed.jobs.apply(seen))
                .err()
                .map(|e| ("jobs", e)),
            Update::Deployment(seen) => seen
                .map(|seen| observed.deployments.apply(seen))
                .err()
                .map(|e| ("deployments", e)),
            Update::ReplicaSet(seen) => seen
                .map(|seen| observed.replica_sets.apply(seen))
                .err()
                .map(|e| ("replicasets", e)),
            Update::Pod(seen) => seen
                .map(|seen| observed.pods.apply(seen))
                .err()
                .map(|e| ("pods", e)),
            Update::Event(seen) => seen
                .map(|seen| observed.events.apply(seen))
                .err()
                .map(|e| ("events", e)),
        };
        match failed {
            Some((resource, source)) if is_permanent(&source) => Err(WaitError::Watch {
                resource,
                namespace: self.namespace.clone(),
                source,
            }),
            Some((resource, source)) => {
                tracing::debug!(resource, error = %source, "watch failed, retrying");
                if unreachable_server(&source).is_some() {
                    self.unreachable_since.get_or_insert_with(Instant::now);
                }
                Ok(())
            }
            None => {
                self.unreachable_since = None;
                Ok(())
            }
        }
    }
}

fn labelled(labels: &str) -> watcher::Config {
    let config = watcher::Config::default();
    if labels.is_empty() {
        config
    } else {
        config.labels(labels)
    }
}

fn open<K>(
    api: Api<K>,
    config: watcher::Config,
    wrap: fn(watcher::Result<Seen<K>>) -> Update,
) -> BoxStream<'static, Update>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    watcher(api, config).default_backoff().map(wrap).boxed()
}

/// Errors that retrying cannot cure: the server refused the request itself.
fn is_permanent(error: &watcher::Error) -> bool {
    let refused = |error: &kube::Error| matches!(error, kube::Error::Api(status) if matches!(status.code, 400 | 401 | 403 | 404 | 422));
    match error {
        watcher::Error::InitialListFailed(error) | watcher::Error::WatchStartFailed(error) => {
            refused(error)
        }
        watcher::Error::WatchError(_) | watcher::Error::WatchFailed(_) => false,
        watcher::Error::NoResourceVersion => true,
    }
}

/// A judge's answer after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Not decided: where it stands.
    Wait(Phase, String),
    /// Done with [`Decision::Succeeded`] if it stays so for the driver's settle period: the UIDs of the pods that
    /// must stay up (another set starts the period again), and where it stands.
    Settle(Vec<String>, String),
    /// Decided.
    Done(Decision),
}

/// A verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Succeeded,
    CleanedUp,
    /// The report without its log, and which pod's log to read.
    Failed(Box<FailureReport>, Option<LogRequest>),
}

/// A pod container whose log belongs in the failure report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogRequest {
    pub(crate) pod: String,
    pub(crate) container: String,
    /// Read the run before the last restart.
    pub(crate) previous: bool,
}

/// How [`Watches::drive`] ended.
#[derive(Debug)]
pub(crate) enum Finish {
    Done(Decision),
    TimedOut(WaitProgress),
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// What a wait of every kind saw after empty lists: ready to judge.
    pub(crate) fn observed() -> Observed {
        Observed {
            jobs: Cache::new(false),
            deployments: Cache::new(false),
            replica_sets: Cache::new(false),
            pods: Cache::new(false),
            events: Cache::new(false),
            first_restarts: BTreeMap::new(),
        }
    }

    /// A Warning Event about the object with this UID.
    pub(crate) fn event(uid: &str, kind: &str, reason: &str, message: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{uid}.{reason}"), "uid": format!("{uid}-{reason}")},
            "involvedObject": {"uid": uid, "kind": kind, "name": format!("name-of-{uid}")},
            "type": "Warning", "reason": reason, "message": message, "count": 1,
        }))
        .expect("valid event")
    }

    fn pod(uid: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": uid, "uid": uid}})).expect("valid pod")
    }

    #[test]
    fn a_relist_keeps_the_last_state_of_objects_that_went_missing() {
        let mut cache: Cache<Pod> = Cache::new(true);
        assert!(!cache.synced);
        cache.apply(Seen::Init);
        cache.apply(Seen::InitApply(pod("a")));
        cache.apply(Seen::InitApply(pod("b")));
        assert!(
            !cache.synced && cache.get("a").is_none(),
            "nothing before the list is done"
        );
        cache.apply(Seen::InitDone);
        assert!(cache.synced);
        cache.apply(Seen::Delete(pod("a")));
        assert!(cache.get("a").is_none() && cache.gone("a").is_some());
        cache.apply(Seen::Init);
        cache.apply(Seen::InitApply(pod("c")));
        cache.apply(Seen::InitDone);
        let current: Vec<_> = cache.current().map(ResourceExt::name_any).collect();
        assert_eq!(current, ["c"]);
        assert!(
            cache.gone("b").is_some(),
            "missing from the relist: deleted"
        );
        assert_eq!(cache.all().count(), 3);
    }
}
