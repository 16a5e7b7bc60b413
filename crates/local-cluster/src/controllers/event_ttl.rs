//! Event expiry, as the API server's `--event-ttl` (1 hour by default; reference §3.7): Kubernetes stores each
//! Event under an etcd lease renewed by every write, so an Event disappears that long after it was last written.
//! Here an Event's last write is the latest of its timestamps (`lastTimestamp`, `eventTime`,
//! `series.lastObservedTime`, `metadata.creationTimestamp`), which the recorder bumps on every repeat; that
//! survives restarts without remembering write times. It runs with or without controllers, as it is the API
//! server's job, on the cluster's clock, so a sped-up clock or a short TTL lets tests see it.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::controllers::framework::{self, Action, Effect, Key, Reconciler};
use crate::controllers::recorder::events;
use crate::registry::delete::DeleteOptions;
use crate::registry::meta;
use crate::registry::store::{Change, EventType, ObjectKey, Store};

/// The Event expiry reconciler; its keys are Events.
#[derive(Debug)]
pub(crate) struct EventTtl {
    ttl: SignedDuration,
}

impl EventTtl {
    pub(crate) fn new(ttl: Duration) -> Self {
        EventTtl {
            ttl: SignedDuration::try_from(ttl).unwrap_or(SignedDuration::MAX),
        }
    }
}

impl Reconciler for EventTtl {
    fn keys(&self, change: &Change) -> Vec<Key> {
        if change.resource.is(events()) && change.event != EventType::Deleted {
            vec![Key::of(&change.object)]
        } else {
            Vec::new()
        }
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        framework::all_keys(store, events())
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let event = store.read(|s| s.get(&ObjectKey::new(events(), &key.namespace, &key.name)));
        event
            .map(|event| decide(&event, self.ttl, store.clock().now()))
            .unwrap_or_default()
    }
}

/// When an Event was last written, as far as its fields tell.
fn last_written(event: &Value) -> Option<Timestamp> {
    [
        &["lastTimestamp"][..],
        &["eventTime"],
        &["series", "lastObservedTime"],
        &["metadata", "creationTimestamp"],
    ]
    .iter()
    .filter_map(|path| meta::str_at(event, path).and_then(meta::parse_time))
    .max()
}

/// Delete the Event now, or look again when it expires.
fn decide(event: &Value, ttl: SignedDuration, now: Timestamp) -> Action {
    let mut action = Action::default();
    let Some(expires) = last_written(event).and_then(|at| at.checked_add(ttl).ok()) else {
        return action;
    };
    if now >= expires {
        action.effects.push(Effect::Delete(
            events(),
            event.clone(),
            DeleteOptions::default(),
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

    #[test]
    fn an_event_expires_a_ttl_after_its_latest_timestamp() {
        let at = |text: &str| text.parse::<Timestamp>().expect("valid time");
        let event = json!({"metadata": {"name": "e", "namespace": "default", "uid": "u",
                "creationTimestamp": "2026-01-01T00:00:00Z"},
            "lastTimestamp": "2026-01-01T00:10:00Z"});
        let ttl = SignedDuration::from_secs(3600);
        let early = decide(&event, ttl, at("2026-01-01T01:00:00Z"));
        assert!(early.effects.is_empty());
        assert_eq!(early.requeue_after, Some(Duration::from_secs(600)));
        let late = decide(&event, ttl, at("2026-01-01T01:10:00Z"));
        assert_eq!(
            late.effects,
            [Effect::Delete(events(), event, DeleteOptions::default())]
        );
    }
}
