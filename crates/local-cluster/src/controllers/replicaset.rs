//! The ReplicaSet controller (reference §3.4): keeps `spec.replicas` active pods from the template (terminal and
//! deleting pods do not count; the kubelet restarts exited containers), deleting surplus pods not-ready first,
//! and writes `replicas`, `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas` (ready for
//! `minReadySeconds`) and `observedGeneration`. A refused pod creation (a quota) records `FailedCreate` and
//! sets the `ReplicaFailure` condition (reason `FailedCreate`, the API's message), which stays until no pod is
//! missing.
//!
//! Not covered: adoption of orphan pods, `FailedDelete`, slow-start batches.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::controllers::framework::{
    self, Action, Effect, Key, Reconciler, condition, is_true, owner_and_dependents, owner_keys,
};
use crate::controllers::recorder::Event;
use crate::registry::api_error::ApiError;
use crate::registry::delete::DeleteOptions;
use crate::registry::meta;
use crate::registry::ops::Part;
use crate::registry::resources::{pods, replicasets};
use crate::registry::selector::LabelSelector;
use crate::registry::store::{Change, Store};

const COMPONENT: &str = "replicaset-controller";

/// The ReplicaSet controller's reconciler; its keys are ReplicaSets.
#[derive(Debug)]
pub(crate) struct ReplicaSetController;

impl Reconciler for ReplicaSetController {
    fn keys(&self, change: &Change) -> Vec<Key> {
        owner_keys(change, replicasets(), "ReplicaSet", pods())
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        framework::all_keys(store, replicasets())
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let found = owner_and_dependents(store, replicasets(), pods(), key);
        found
            .map(|(set, owned)| decide(&set, &owned, store.clock().now()))
            .unwrap_or_default()
    }

    fn refused(&mut self, key: &Key, store: &Store, error: &ApiError) -> Vec<Effect> {
        store
            .get(replicasets(), &key.namespace, &key.name)
            .and_then(|set| with_failure(&set, &error.message, store.clock().now()))
            .map(|set| Effect::Replace(replicasets(), Part::Status, set))
            .into_iter()
            .collect()
    }
}

/// The ReplicaSet with the `ReplicaFailure` condition for a refused creation, unless it has one already (the
/// first refusal's message stays, as the controller's `SetCondition` keeps it).
fn with_failure(set: &Value, message: &str, now: Timestamp) -> Option<Value> {
    if condition(set, "ReplicaFailure").is_some() {
        return None;
    }
    let mut updated = set.clone();
    let status = meta::map_at(&mut updated, &["status"]);
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if let Some(list) = conditions.as_array_mut() {
        list.push(
            json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
            "message": message, "lastTransitionTime": meta::format_time(now)}),
        );
    }
    Some(updated)
}

fn is_active(pod: &Value) -> bool {
    !meta::is_deleting(pod)
        && !matches!(
            meta::str_at(pod, &["status", "phase"]),
            Some("Succeeded" | "Failed")
        )
}

fn event(set: &Value, reason: &str, message: String) -> Effect {
    Effect::Event(Event::about(
        replicasets(),
        set,
        None,
        "Normal",
        reason,
        message,
        COMPONENT,
    ))
}

/// When a ready pod became (or becomes) available: its `Ready` transition plus `minReadySeconds`.
fn available_at(pod: &Value, min_ready_seconds: i64) -> Option<Timestamp> {
    if !is_true(pod, "Ready") {
        return None;
    }
    let ready_since = condition(pod, "Ready")
        .and_then(|c| meta::str_at(c, &["lastTransitionTime"]))
        .and_then(meta::parse_time)?;
    ready_since
        .checked_add(jiff::SignedDuration::from_secs(min_ready_seconds))
        .ok()
}

/// The decision for one ReplicaSet and the pods it controls.
pub(crate) fn decide(set: &Value, owned: &[Value], now: Timestamp) -> Action {
    let mut action = Action::default();
    if meta::is_deleting(set) {
        return action;
    }
    let mut active: Vec<&Value> = owned.iter().filter(|p| is_active(p)).collect();
    let wanted = meta::at(set, &["spec", "replicas"])
        .and_then(Value::as_i64)
        .and_then(|r| usize::try_from(r).ok())
        .unwrap_or(1);
    let mut effects = Vec::new();
    let missing = active.len() < wanted;
    if missing {
        let template = meta::at(set, &["spec", "template"])
            .cloned()
            .unwrap_or_default();
        for _ in active.len()..wanted {
            let pod = framework::pod_from_template(replicasets(), set, &template);
            effects.push(event(
                set,
                "SuccessfulCreate",
                format!("Created pod: {}", meta::name(&pod)),
            ));
            let failed =
                framework::failed_create(replicasets(), set, "Error creating: ", COMPONENT);
            effects.insert(0, Effect::Create(pods(), pod, Some(failed)));
        }
    } else if active.len() > wanted {
        // Unscheduled, then not ready, then the newest go first.
        active.sort_by_key(|p| {
            let scheduled = meta::str_at(p, &["spec", "nodeName"]).is_some_and(|n| !n.is_empty());
            let created = meta::str_at(p, &["metadata", "creationTimestamp"]).unwrap_or_default();
            (
                scheduled,
                is_true(p, "Ready"),
                std::cmp::Reverse(created.to_owned()),
            )
        });
        for pod in active.drain(..active.len() - wanted) {
            effects.push(event(
                set,
                "SuccessfulDelete",
                format!("Deleted pod: {}", meta::name(pod)),
            ));
            effects.insert(
                0,
                Effect::Delete(pods(), pod.clone(), DeleteOptions::default()),
            );
        }
    }
    let min_ready = meta::at(set, &["spec", "minReadySeconds"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    // "Fully labelled": every label of the template, not just the selector's.
    let template_labels = meta::at(set, &["spec", "template", "metadata", "labels"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    let labels =
        LabelSelector::from_object(&json!({"matchLabels": template_labels})).unwrap_or_default();
    let ready = active.iter().filter(|p| is_true(p, "Ready")).count();
    let mut available = 0;
    for at in active.iter().filter_map(|p| available_at(p, min_ready)) {
        if at <= now {
            available += 1;
        } else {
            action.requeue(now.duration_until(at).unsigned_abs());
        }
    }
    let mut status = json!({"replicas": active.len()});
    let counts = [
        (
            "fullyLabeledReplicas",
            active.iter().filter(|p| labels.matches(p)).count(),
        ),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ];
    for (field, count) in counts {
        // Go omits these when zero.
        if count > 0 {
            meta::set_at(&mut status, &[field], json!(count));
        }
    }
    if let Some(generation) = meta::at(set, &["metadata", "generation"]) {
        meta::set_at(&mut status, &["observedGeneration"], generation.clone());
    }
    // A creation failure stays reported while pods are missing; once none is, the condition goes.
    if missing && let Some(failure) = condition(set, "ReplicaFailure") {
        meta::set_at(&mut status, &["conditions"], json!([failure]));
    }
    if set.get("status") != Some(&status) {
        let mut updated = set.clone();
        meta::set_at(&mut updated, &["status"], status);
        action
            .effects
            .push(Effect::Replace(replicasets(), Part::Status, updated));
    }
    action.effects.extend(effects);
    action
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn set(replicas: i64, min_ready: i64) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "uid": "ru", "generation": 3},
            "spec": {"replicas": replicas, "minReadySeconds": min_ready,
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}}})
    }

    fn pod(name: &str, node: Option<&str>, ready_since: Option<&str>) -> Value {
        let conditions: Vec<Value> = ready_since
            .map(|t| json!({"type": "Ready", "status": "True", "lastTransitionTime": t}))
            .into_iter()
            .collect();
        let mut pod = json!({"metadata": {"name": name, "namespace": "default", "uid": name,
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"app": "web"}},
            "spec": {}, "status": {"phase": "Running", "conditions": conditions}});
        if let Some(node) = node {
            meta::set_at(&mut pod, &["spec", "nodeName"], json!(node));
        }
        pod
    }

    fn at(text: &str) -> Timestamp {
        text.parse().expect("valid time")
    }

    #[test]
    fn surplus_pods_go_unscheduled_first_then_not_ready() {
        let pods = [
            pod("ready", Some("local"), Some("2026-01-01T00:00:01Z")),
            pod("unscheduled", None, None),
            pod("starting", Some("local"), None),
        ];
        let action = decide(&set(1, 0), &pods, at("2026-01-01T00:01:00Z"));
        let deleted: Vec<&str> = action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Delete(_, pod, _) => Some(meta::name(pod)),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, ["starting", "unscheduled"]);
    }

    #[test]
    fn a_ready_pod_counts_as_available_after_min_ready_seconds() {
        let pods = [pod("a", Some("local"), Some("2026-01-01T00:00:00Z"))];
        let early = decide(&set(1, 10), &pods, at("2026-01-01T00:00:04Z"));
        assert_eq!(early.requeue_after, Some(Duration::from_secs(6)));
        let status = |action: &Action| {
            action.effects.iter().find_map(|e| match e {
                Effect::Replace(_, Part::Status, set) => set.get("status").cloned(),
                _ => None,
            })
        };
        assert_eq!(
            status(&early),
            Some(
                json!({"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1, "observedGeneration": 3})
            )
        );
        let later = decide(&set(1, 10), &pods, at("2026-01-01T00:00:10Z"));
        assert_eq!(
            status(&later).map(|s| s["availableReplicas"].clone()),
            Some(json!(1))
        );
    }

    #[test]
    fn a_refused_creation_is_reported_until_no_pod_is_missing() {
        let now = at("2026-01-01T00:00:05Z");
        let failed = with_failure(
            &set(2, 0),
            "pods \"web-abcde\" is forbidden: exceeded quota",
            now,
        )
        .expect("no condition yet");
        assert_eq!(
            failed["status"]["conditions"],
            json!([{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                "message": "pods \"web-abcde\" is forbidden: exceeded quota",
                "lastTransitionTime": "2026-01-01T00:00:05Z"}])
        );
        assert!(
            with_failure(&failed, "another", now).is_none(),
            "the first message stays"
        );
        let written = |action: &Action| match action.effects.first() {
            Some(Effect::Replace(_, Part::Status, set)) => set["status"].clone(),
            other => panic!("status written first, got {other:?}"),
        };
        let one = [pod("a", Some("local"), None)];
        let still_missing = decide(&failed, &one, now);
        assert_eq!(
            written(&still_missing)["conditions"],
            failed["status"]["conditions"]
        );
        assert!(matches!(still_missing.effects[1], Effect::Create(..)));
        let both = [pod("a", Some("local"), None), pod("b", Some("local"), None)];
        assert!(
            written(&decide(&failed, &both, now))
                .get("conditions")
                .is_none()
        );
    }
}
