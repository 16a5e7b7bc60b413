//! Request accounting and fault injection for tests: every request is counted per (verb, resource), and tests
//! can make chosen requests fail with a status code (before they are carried out, or after: a lost response), add
//! latency, close every open watch, or make the next watch fail with 410 Expired inside its stream (the way a real
//! server reports a compacted version).
//!
//! A [`Hold`] parks one chosen request (before it is carried out, or after, before its response is sent) until the
//! test releases it: the test knows the client is at exactly that step, and can kill it (or the cluster) there.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::ClusterState;
use crate::api::request_info::RequestInfo;
use crate::registry::api_error::ApiError;

/// A rule making matching requests fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Verb to match (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`);
    /// `None` matches every verb.
    pub verb: Option<String>,
    /// Resource to match (`jobs`, `jobs/status`); `None` matches every resource.
    pub resource: Option<String>,
    /// The status code to answer with (the Status reason follows the code).
    pub status: u16,
    /// How many matching requests fail before the rule is used up.
    pub times: u32,
    /// Whether the request is carried out first and only its response is replaced by the failure: the client
    /// cannot tell whether it happened (a proxy or connection dying after the server acted).
    pub after: bool,
}

impl Fault {
    /// Fails the next `times` requests with `verb` on `resource` with `status`.
    #[must_use]
    pub fn new(verb: &str, resource: &str, status: u16, times: u32) -> Self {
        Fault {
            verb: Some(verb.to_owned()),
            resource: Some(resource.to_owned()),
            status,
            times,
            after: false,
        }
    }

    /// Carries out the next `times` requests with `verb` on `resource`, then answers them with `status`.
    #[must_use]
    pub fn lost_response(verb: &str, resource: &str, status: u16, times: u32) -> Self {
        Fault {
            after: true,
            ..Fault::new(verb, resource, status, times)
        }
    }

    fn matches(&self, verb: &str, resource: &str) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// A rule parking one matching request until [`LocalCluster::release_held`](crate::LocalCluster::release_held):
/// a crash test awaits [`LocalCluster::held`](crate::LocalCluster::held), kills the client at that exact step and
/// releases. The client is gone by then, so a request held before it was carried out is never carried out (it is
/// answered 503, as a server that dropped it); one held after was carried out and gets its response. A held
/// request is counted like any other (a `create` held before it was carried out still counts as a `create`), and
/// a server shutting down lets its held requests go, so a hold never keeps it from stopping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Verb to match (as [`Fault::verb`]).
    pub verb: String,
    /// Resource to match (as [`Fault::resource`]).
    pub resource: String,
    /// How many matching requests pass before the one that is held (0: the next one).
    pub skip: u32,
    /// Whether the request is carried out first and only its response is held (as [`Fault::after`]).
    pub after: bool,
}

impl Hold {
    /// Holds the next request with `verb` on `resource` before it is carried out.
    #[must_use]
    pub fn before(verb: &str, resource: &str) -> Self {
        Hold {
            verb: verb.to_owned(),
            resource: resource.to_owned(),
            skip: 0,
            after: false,
        }
    }

    /// Carries out the next request with `verb` on `resource`, then holds its response.
    #[must_use]
    pub fn after(verb: &str, resource: &str) -> Self {
        Hold {
            after: true,
            ..Hold::before(verb, resource)
        }
    }

    /// Lets `skip` matching requests pass first: the one after them is held.
    #[must_use]
    pub fn skipping(self, skip: u32) -> Self {
        Hold { skip, ..self }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters and rules stay meaningful even if a holder panicked.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The shared fault and counter state.
#[derive(Debug)]
pub(crate) struct Faults {
    counters: Mutex<BTreeMap<(String, String), u64>>,
    rules: Mutex<Vec<Fault>>,
    latency: Mutex<Duration>,
    expire_next_watch: AtomicBool,
    close_watches: tokio::sync::watch::Sender<u64>,
    holds: Mutex<Vec<Hold>>,
    /// The (verb, resource) of every request parked now, in the order they were parked.
    held: tokio::sync::watch::Sender<Vec<(String, String)>>,
    /// Bumped by [`Faults::release_held`]: every request parked before wakes up.
    releases: tokio::sync::watch::Sender<u64>,
}

impl Faults {
    pub(crate) fn new() -> Self {
        Faults {
            counters: Mutex::new(BTreeMap::new()),
            rules: Mutex::new(Vec::new()),
            latency: Mutex::new(Duration::ZERO),
            expire_next_watch: AtomicBool::new(false),
            close_watches: tokio::sync::watch::Sender::new(0),
            holds: Mutex::new(Vec::new()),
            held: tokio::sync::watch::Sender::new(Vec::new()),
            releases: tokio::sync::watch::Sender::new(0),
        }
    }

    pub(crate) fn hold(&self, hold: Hold) {
        lock(&self.holds).push(hold);
    }

    /// Resolves once a request is parked by a [`Hold`]: its (verb, resource).
    pub(crate) async fn held(&self) -> (String, String) {
        let mut held = self.held.subscribe();
        let parked = held.wait_for(|parked| !parked.is_empty()).await;
        // The sender lives in `self`, which outlives this borrow: the wait cannot fail.
        parked.map_or_else(
            |_| (String::new(), String::new()),
            |parked| parked[0].clone(),
        )
    }

    /// Wakes every parked request.
    pub(crate) fn release_held(&self) {
        self.releases.send_modify(|generation| *generation += 1);
    }

    /// Whether this request is to be held (and whether after it was carried out); uses the rule up.
    fn take_hold(&self, verb: &str, resource: &str) -> Option<bool> {
        let mut holds = lock(&self.holds);
        let position = holds
            .iter()
            .position(|h| h.verb == verb && h.resource == resource)?;
        let hold = &mut holds[position];
        if hold.skip > 0 {
            hold.skip -= 1;
            return None;
        }
        Some(holds.remove(position).after)
    }

    /// Parks the request until it is released or the server shuts down. The request is listed as held while
    /// parked, also when its connection closes and the server drops it midway (the guard unlists it).
    async fn park(&self, key: (String, String), shutdown: &tokio_util::sync::CancellationToken) {
        struct Parked<'a>(
            &'a tokio::sync::watch::Sender<Vec<(String, String)>>,
            (String, String),
        );
        impl Drop for Parked<'_> {
            fn drop(&mut self) {
                self.0.send_modify(|parked| {
                    if let Some(position) = parked.iter().position(|p| *p == self.1) {
                        parked.remove(position);
                    }
                });
            }
        }
        let mut releases = self.releases.subscribe();
        releases.mark_unchanged();
        self.held.send_modify(|parked| parked.push(key.clone()));
        let _parked = Parked(&self.held, key);
        tokio::select! {
            _ = releases.changed() => {}
            () = shutdown.cancelled() => {}
        }
    }

    pub(crate) fn count(&self, verb: &str, resource: &str) -> u64 {
        lock(&self.counters)
            .get(&(verb.to_owned(), resource.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn counts(&self) -> BTreeMap<(String, String), u64> {
        lock(&self.counters).clone()
    }

    pub(crate) fn reset_counts(&self) {
        lock(&self.counters).clear();
    }

    pub(crate) fn add(&self, fault: Fault) {
        lock(&self.rules).push(fault);
    }

    pub(crate) fn set_latency(&self, latency: Duration) {
        *lock(&self.latency) = latency;
    }

    pub(crate) fn expire_next_watch(&self) {
        self.expire_next_watch.store(true, Ordering::SeqCst);
    }

    pub(crate) fn take_expire_next_watch(&self) -> bool {
        self.expire_next_watch.swap(false, Ordering::SeqCst)
    }

    pub(crate) fn close_watches(&self) {
        self.close_watches
            .send_modify(|generation| *generation += 1);
    }

    pub(crate) fn watch_closer(&self) -> tokio::sync::watch::Receiver<u64> {
        self.close_watches.subscribe()
    }

    /// The failure for this request, if a rule matches: its status, and whether the request is carried out first.
    fn take_fault(&self, verb: &str, resource: &str) -> Option<(u16, bool)> {
        let mut rules = lock(&self.rules);
        let position = rules
            .iter()
            .position(|f| f.times > 0 && f.matches(verb, resource))?;
        let rule = &mut rules[position];
        rule.times -= 1;
        let taken = (rule.status, rule.after);
        if rule.times == 0 {
            rules.remove(position);
        }
        Some(taken)
    }
}

/// Counts the request, applies latency and injected failures, then runs the handler.
pub(crate) async fn middleware(
    State(state): State<ClusterState>,
    request: Request,
    next: Next,
) -> Response {
    let (verb, resource) = RequestInfo::parse(request.method(), request.uri()).counter_key();
    *lock(&state.faults.counters)
        .entry((verb.clone(), resource.clone()))
        .or_default() += 1;
    let latency = *lock(&state.faults.latency);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(after) = state.faults.take_hold(&verb, &resource) {
        let response = if after {
            Some(next.run(request).await)
        } else {
            drop(request);
            None
        };
        state.faults.park((verb, resource), &state.shutdown).await;
        return response.unwrap_or_else(|| ApiError::injected(503).into_response());
    }
    match state.faults.take_fault(&verb, &resource) {
        Some((status, false)) => ApiError::injected(status).into_response(),
        Some((status, true)) => {
            drop(next.run(request).await);
            ApiError::injected(status).into_response()
        }
        None => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_rules_are_used_up() {
        let faults = Faults::new();
        faults.add(Fault::new("create", "jobs", 503, 2));
        assert_eq!(faults.take_fault("get", "jobs"), None);
        assert_eq!(faults.take_fault("create", "jobs"), Some((503, false)));
        assert_eq!(faults.take_fault("create", "jobs"), Some((503, false)));
        assert_eq!(faults.take_fault("create", "jobs"), None);
    }

    #[test]
    fn a_hold_lets_the_skipped_requests_pass_then_holds_one() {
        let faults = Faults::new();
        faults.hold(Hold::after("update", "configmaps").skipping(1));
        assert_eq!(faults.take_hold("update", "jobs"), None);
        assert_eq!(faults.take_hold("update", "configmaps"), None, "skipped");
        assert_eq!(faults.take_hold("update", "configmaps"), Some(true));
        assert_eq!(faults.take_hold("update", "configmaps"), None, "used up");
    }

    #[tokio::test]
    async fn a_parked_request_is_listed_until_released_or_the_server_stops() {
        let faults = std::sync::Arc::new(Faults::new());
        let shutdown = tokio_util::sync::CancellationToken::new();
        let parked = {
            let (faults, shutdown) = (std::sync::Arc::clone(&faults), shutdown.clone());
            tokio::spawn(async move {
                faults
                    .park(("create".into(), "jobs".into()), &shutdown)
                    .await;
            })
        };
        assert_eq!(faults.held().await, ("create".into(), "jobs".into()));
        faults.release_held();
        parked.await.expect("the parked request ends");
        assert!(faults.held.borrow().is_empty(), "unlisted once released");

        let parked = {
            let (faults, shutdown) = (std::sync::Arc::clone(&faults), shutdown.clone());
            tokio::spawn(async move {
                faults
                    .park(("patch".into(), "jobs".into()), &shutdown)
                    .await;
            })
        };
        assert_eq!(faults.held().await.0, "patch");
        shutdown.cancel();
        parked.await.expect("the parked request ends");
        assert!(
            faults.held.borrow().is_empty(),
            "a stopping server lets it go"
        );
    }
}
