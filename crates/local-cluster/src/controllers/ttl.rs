//! The TTL-after-finished controller (reference §3.2 "Other"): deletes a finished Job
//! `ttlSecondsAfterFinished` seconds after its `completionTime` (or its `Failed` condition), with Foreground
//! propagation and a uid precondition as the real controller does, so its pods go first.

use jiff::Timestamp;
use serde_json::Value;

use crate::controllers::framework::{Action, Effect, Key, Reconciler, condition, is_true};
use crate::registry::delete::DeleteOptions;
use crate::registry::meta;
use crate::registry::resources::{Propagation, jobs};
use crate::registry::store::{Change, ObjectKey, Store};

/// The TTL controller's reconciler; its keys are Jobs.
#[derive(Debug)]
pub(crate) struct TtlController;

impl Reconciler for TtlController {
    fn keys(&self, change: &Change) -> Vec<Key> {
        if change.resource.is(jobs()) && change.event != crate::registry::store::EventType::Deleted
        {
            vec![Key::of(&change.object)]
        } else {
            Vec::new()
        }
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        store.list(jobs()).iter().map(Key::of).collect()
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let job = store.read(|s| s.get(&ObjectKey::new(jobs(), &key.namespace, &key.name)));
        job.map(|job| decide(&job, store.clock().now()))
            .unwrap_or_default()
    }
}

/// When a finished Job finished.
fn finished_at(job: &Value) -> Option<Timestamp> {
    let text = if is_true(job, "Complete") {
        meta::str_at(job, &["status", "completionTime"])
    } else if is_true(job, "Failed") {
        condition(job, "Failed").and_then(|c| meta::str_at(c, &["lastTransitionTime"]))
    } else {
        None
    };
    text.and_then(meta::parse_time)
}

/// Delete the Job now, later, or never.
pub(crate) fn decide(job: &Value, now: Timestamp) -> Action {
    let mut action = Action::default();
    let ttl = meta::at(job, &["spec", "ttlSecondsAfterFinished"]).and_then(Value::as_i64);
    let (Some(ttl), Some(finished)) = (ttl, finished_at(job)) else {
        return action;
    };
    if meta::is_deleting(job) {
        return action;
    }
    let Ok(expires) = finished.checked_add(jiff::SignedDuration::from_secs(ttl)) else {
        return action;
    };
    if now >= expires {
        action.effects.push(Effect::Delete(
            jobs(),
            job.clone(),
            DeleteOptions::with_propagation(Propagation::Foreground),
        ));
    } else {
        action.requeue(now.duration_until(expires).unsigned_abs());
    }
    action
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn finished(ttl: i64) -> Value {
        json!({"metadata": {"name": "j", "namespace": "default", "uid": "u"},
            "spec": {"ttlSecondsAfterFinished": ttl},
            "status": {"completionTime": "2026-01-01T00:00:00Z",
                "conditions": [{"type": "Complete", "status": "True"}]}})
    }

    #[test]
    fn a_finished_job_is_deleted_in_the_foreground_once_its_ttl_passed_and_not_before() {
        let at = |text: &str| text.parse::<Timestamp>().expect("valid time");
        let early = decide(&finished(60), at("2026-01-01T00:00:20Z"));
        assert!(early.effects.is_empty());
        assert_eq!(
            early.requeue_after,
            Some(std::time::Duration::from_secs(40))
        );
        let late = decide(&finished(60), at("2026-01-01T00:01:00Z"));
        assert_eq!(
            late.effects,
            [Effect::Delete(
                jobs(),
                finished(60),
                DeleteOptions::with_propagation(Propagation::Foreground)
            )]
        );
        let mut running = finished(0);
        meta::remove_at(&mut running, &["status"]);
        assert_eq!(
            decide(&running, at("2026-01-01T00:01:00Z")),
            Action::default()
        );
    }
}
