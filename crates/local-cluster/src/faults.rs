//! Request accounting and fault injection for tests: every request is counted per (verb, resource), and tests
//! can make chosen requests fail with a status code (before they are carried out, or after: a lost response), add
//! latency, close every open watch, or make the next watch fail with 410 Expired inside its stream (the way a real
//! server reports a compacted version).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::ClusterState;
use crate::api::request_info::RequestInfo;
use crate::status::ApiError;

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
}

impl Faults {
    pub(crate) fn new() -> Self {
        Faults {
            counters: Mutex::new(BTreeMap::new()),
            rules: Mutex::new(Vec::new()),
            latency: Mutex::new(Duration::ZERO),
            expire_next_watch: AtomicBool::new(false),
            close_watches: tokio::sync::watch::Sender::new(0),
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
}
