//! The Job controller (reference §3.2): creates a Job's pods, counts finished ones through the
//! `batch.kubernetes.io/job-tracking` finalizer, retries failures after an exponential back-off, fails the Job
//! on `backoffLimit` or `activeDeadlineSeconds`, and writes the status and conditions of Kubernetes 1.31+
//! (`SuccessCriteriaMet`/`FailureTarget`, then `Complete`/`Failed` once no pod is terminating).
//!
//! Not covered: Indexed completion mode, pod failure policies, success policies, per-index back-off,
//! adoption of orphan pods. Counting is one step (status, then finalizer removal) instead of going through
//! `uncountedTerminatedPods`, which is always written as `{}`.

use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::controllers::framework::{self, Action, Effect, Key, Reconciler, is_true};
use crate::controllers::recorder::Event;
use crate::registry::delete::DeleteOptions;
use crate::registry::meta;
use crate::registry::ops::Part;
use crate::registry::resources::{jobs, pods};
use crate::registry::store::{Change, ObjectKey, Store};
use crate::registry::stored::Stored;

/// The finalizer that keeps a Job's pod until the controller has counted it.
pub(crate) const TRACKING: &str = "batch.kubernetes.io/job-tracking";
const COMPONENT: &str = "job-controller";

/// The retry back-off after failed pods: `base × 2^(failures − 1)`, at most `cap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    pub(crate) base: Duration,
    pub(crate) cap: Duration,
}

impl Backoff {
    fn delay(self, failures: u32) -> Duration {
        let factor = 2_u32.saturating_pow(failures.saturating_sub(1));
        self.base.saturating_mul(factor).min(self.cap)
    }
}

/// The Job controller's reconciler; its keys are Job names (a Job that is gone still has pods to release).
#[derive(Debug)]
pub(crate) struct JobController {
    pub(crate) backoff: Backoff,
}

/// The name of the Job controlling a pod.
fn controlling_job(pod: &Value) -> Option<&Value> {
    meta::owner_references(pod).iter().find(|r| {
        r.get("controller") == Some(&Value::Bool(true))
            && meta::str_at(r, &["kind"]) == Some("Job")
            && meta::str_at(r, &["apiVersion"]) == Some("batch/v1")
    })
}

/// The name of the Job a pod belongs to: its controller's, or, for a pod orphaned while still holding the
/// tracking finalizer, its `batch.kubernetes.io/job-name` label's (so the finalizer can be removed).
fn job_of(pod: &Value) -> Option<&str> {
    match controlling_job(pod) {
        Some(owner) => meta::str_at(owner, &["name"]),
        None if has_tracking(pod) => {
            meta::str_at(pod, &["metadata", "labels", "batch.kubernetes.io/job-name"])
        }
        None => None,
    }
}

fn key_of_pod(pod: &Value) -> Option<Key> {
    job_of(pod).map(|name| Key {
        namespace: meta::namespace(pod).to_owned(),
        name: name.to_owned(),
    })
}

impl Reconciler for JobController {
    fn keys(&self, change: &Change) -> Vec<Key> {
        if change.resource.is(jobs()) {
            return vec![Key::of(&change.object)];
        }
        if change.resource.is(pods()) {
            return key_of_pod(&change.object).into_iter().collect();
        }
        Vec::new()
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        let mut keys: Vec<Key> = framework::all_keys(store, jobs());
        keys.extend(store.list(pods()).iter().filter_map(key_of_pod));
        keys
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let (job, pods) = store.read(|s| {
            let job = s.get(&ObjectKey::new(jobs(), &key.namespace, &key.name));
            // A pod of the Job names it (as its owner or in its label): the namespace's other pods are not parsed.
            let pods: Vec<Value> = s
                .list_mentioning(pods(), Some(&key.namespace), &[key.name.as_str()])
                .map(Stored::value)
                .filter(|p| job_of(p) == Some(key.name.as_str()))
                .collect();
            (job, pods)
        });
        decide(job.as_ref(), &pods, store.clock().now(), self.backoff)
    }
}

fn phase(pod: &Value) -> &str {
    meta::str_at(pod, &["status", "phase"]).unwrap_or_default()
}

fn is_terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

fn is_failed(pod: &Value) -> bool {
    phase(pod) == "Failed" || (meta::is_deleting(pod) && phase(pod) != "Succeeded")
}

fn is_active(pod: &Value) -> bool {
    !is_terminal(pod) && !meta::is_deleting(pod)
}

/// `podReplacementPolicy: Failed`: a pod being deleted counts (as failed, and toward the wanted pods) only once
/// it is terminal; the default `TerminatingOrFailed` counts it as failed at once and replaces it.
fn only_failed_replaced(job: &Value) -> bool {
    meta::str_at(job, &["spec", "podReplacementPolicy"]) == Some("Failed")
}

fn has_tracking(pod: &Value) -> bool {
    meta::finalizers(pod).iter().any(|f| f == TRACKING)
}

fn int(value: &Value, path: &[&str]) -> Option<i64> {
    meta::at(value, path).and_then(Value::as_i64)
}

/// Removes the tracking finalizer from a pod (which lets a deleted pod go). Unconditional, like the real
/// controller's patch: a kubelet status write in between must not make a counted pod count again.
fn release(pod: &Value) -> Effect {
    let mut pod = pod.clone();
    meta::remove_at(&mut pod, &["metadata", "resourceVersion"]);
    let mut finalizers = meta::finalizers(&pod);
    finalizers.retain(|f| f != TRACKING);
    meta::set_finalizers(&mut pod, &finalizers);
    Effect::Replace(pods(), Part::Main, pod)
}

fn event(job: &Value, kind: &'static str, reason: &str, message: String) -> Effect {
    Effect::Event(Event::about(
        jobs(),
        job,
        None,
        kind,
        reason,
        message,
        COMPONENT,
    ))
}

fn condition(type_: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": reason, "message": message,
        "lastProbeTime": now, "lastTransitionTime": now})
}

/// The time a pod finished: its latest container `finishedAt`, else its deletion or creation time.
fn finish_time(pod: &Value) -> Option<Timestamp> {
    let statuses = meta::at(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    statuses
        .iter()
        .filter_map(|c| meta::str_at(c, &["state", "terminated", "finishedAt"]))
        .filter_map(meta::parse_time)
        .max()
        .or_else(|| {
            meta::str_at(pod, &["metadata", "deletionTimestamp"])
                .or_else(|| meta::str_at(pod, &["metadata", "creationTimestamp"]))
                .and_then(meta::parse_time)
        })
}

/// When the next pod may be created: failures since the last success, back-off from the last failure.
fn retry_at(pods: &[&Value], backoff: Backoff) -> Option<Timestamp> {
    let mut finished: Vec<(Timestamp, bool)> = pods
        .iter()
        .filter(|p| is_terminal(p) || meta::is_deleting(p))
        .filter_map(|p| finish_time(p).map(|t| (t, is_failed(p))))
        .collect();
    finished.sort();
    let failures: Vec<Timestamp> = finished
        .iter()
        .rev()
        .take_while(|(_, failed)| *failed)
        .map(|(t, _)| *t)
        .collect();
    let last = *failures.first()?;
    let count = u32::try_from(failures.len()).unwrap_or(u32::MAX);
    let delay = jiff::SignedDuration::try_from(backoff.delay(count)).ok()?;
    last.checked_add(delay).ok()
}

/// Why the Job fails now, if it does: (reason, message), in the reference's order.
fn failure(
    job: &Value,
    active: &[&Value],
    failed: i64,
    now: Timestamp,
) -> Option<(&'static str, &'static str)> {
    const BACKOFF: (&str, &str) = (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    );
    let limit = int(job, &["spec", "backoffLimit"]).unwrap_or(6);
    if failed > limit {
        return Some(BACKOFF);
    }
    if meta::str_at(job, &["spec", "template", "spec", "restartPolicy"]) == Some("OnFailure") {
        let restarts: i64 = active
            .iter()
            .flat_map(|p| {
                ["containerStatuses", "initContainerStatuses"]
                    .into_iter()
                    .flat_map(|field| {
                        meta::at(p, &["status", field])
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    })
            })
            .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
            .sum();
        if (limit == 0 && restarts > 0) || (limit > 0 && restarts >= limit) {
            return Some(BACKOFF);
        }
    }
    deadline(job).filter(|d| now >= *d).map(|_| {
        (
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        )
    })
}

/// `startTime + activeDeadlineSeconds`, when both are set.
fn deadline(job: &Value) -> Option<Timestamp> {
    let start = meta::str_at(job, &["status", "startTime"]).and_then(meta::parse_time)?;
    let seconds = int(job, &["spec", "activeDeadlineSeconds"])?;
    start
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .ok()
}

/// A new pod from the Job's template, owned by the Job and held by the tracking finalizer.
fn new_pod(job: &Value) -> Value {
    let template = meta::at(job, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    let mut pod = framework::pod_from_template(jobs(), job, &template);
    meta::set_at(&mut pod, &["metadata", "finalizers"], json!([TRACKING]));
    pod
}

/// The decision for one Job name: `job` is the current Job (if any), `pods` the pods a Job of that name controls.
pub(crate) fn decide(
    job: Option<&Value>,
    pods: &[Value],
    now: Timestamp,
    backoff: Backoff,
) -> Action {
    let mut action = Action::default();
    let Some(job) = job else {
        // The Job is gone: its pods must not stay behind because of our finalizer.
        action
            .effects
            .extend(pods.iter().filter(|p| has_tracking(p)).map(release));
        return action;
    };
    let (mine, orphans): (Vec<&Value>, Vec<&Value>) = pods.iter().partition(|p| {
        controlling_job(p).and_then(|o| meta::str_at(o, &["uid"])) == Some(meta::uid(job))
    });
    action
        .effects
        .extend(orphans.into_iter().filter(|p| has_tracking(p)).map(release));
    let finished = is_true(job, "Complete") || is_true(job, "Failed");
    if meta::is_deleting(job) || finished {
        action.effects.extend(
            mine.iter()
                .filter(|p| has_tracking(p) && (meta::is_deleting(job) || !is_active(p)))
                .map(|p| release(p)),
        );
        return action;
    }
    sync(job, &mine, now, backoff, action)
}

/// The decision for a live, unfinished Job and its pods.
fn sync(
    job: &Value,
    mine: &[&Value],
    now: Timestamp,
    backoff: Backoff,
    mut action: Action,
) -> Action {
    let now_text = meta::format_time(now);
    let Pods {
        active,
        terminating,
        uncounted,
        succeeded,
        failed,
    } = Pods::of(job, mine);
    let mut status = job.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> = meta::at(&status, &["conditions"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut pod_effects = Vec::new();
    let mut events = Vec::new();
    let suspended = suspension(job, &mut status, &mut conditions, &mut events, &now_text);
    let mut removed = 0;
    // The terminal condition to add once no pod is active or terminating, with its reason and message.
    let ending: Option<(&str, String, String)> =
        if let Some((reason, message)) = reason_of(&conditions, "FailureTarget") {
            // Active pods left behind by a failed delete are deleted again.
            pod_effects.extend(delete_pods(job, &active, &mut events));
            Some(("Failed", reason, message))
        } else if let Some((reason, message)) = reason_of(&conditions, "SuccessCriteriaMet") {
            Some(("Complete", reason, message))
        } else if suspended {
            pod_effects.extend(delete_pods(job, &active, &mut events));
            None
        } else if let Some((reason, message)) = failure(job, &active, failed, now) {
            conditions.push(condition("FailureTarget", reason, message, &now_text));
            pod_effects.extend(delete_pods(job, &active, &mut events));
            Some(("Failed", reason.to_owned(), message.to_owned()))
        } else if active.is_empty()
            && int(job, &["spec", "completions"]).map_or(succeeded >= 1, |c| succeeded >= c)
        {
            let (reason, message) = (
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            );
            conditions.push(condition("SuccessCriteriaMet", reason, message, &now_text));
            Some(("Complete", reason.to_owned(), message.to_owned()))
        } else {
            let wanted = wanted_active(job, succeeded, active.len());
            // Under `podReplacementPolicy: Failed` a terminating pod is replaced only once it has failed.
            let occupied = active.len()
                + if only_failed_replaced(job) {
                    terminating
                } else {
                    0
                };
            if active.len() > wanted {
                let surplus = surplus(&active, wanted);
                removed = surplus.len();
                pod_effects.extend(delete_pods(job, &surplus, &mut events));
            } else if occupied < wanted {
                if let Some(at) = retry_at(mine, backoff).filter(|at| *at > now) {
                    action.requeue(now.duration_until(at).unsigned_abs());
                } else {
                    let missing = wanted - occupied;
                    pod_effects.extend(create_pods(job, missing, &mut events));
                }
            }
            if let Some(at) = deadline(job) {
                action.requeue(now.duration_until(at).unsigned_abs());
            }
            None
        };
    if let Some((type_, reason, message)) = ending
        && active.is_empty()
        && terminating == 0
    {
        conditions.push(condition(type_, &reason, &message, &now_text));
        if type_ == "Complete" {
            meta::set_at(&mut status, &["completionTime"], json!(now_text));
            events.push(event(
                job,
                "Normal",
                "Completed",
                "Job completed".to_owned(),
            ));
        } else {
            events.push(event(job, "Warning", &reason, message));
        }
    }
    let ready = active.iter().filter(|p| is_true(p, "Ready")).count();
    // New pods count as active once they exist (their creation triggers the next sync): a creation the API
    // refuses, over a quota, leaves `active` as it was, as the real controller's decrement on failure does.
    set_counts(&mut status, active.len() - removed, succeeded, failed);
    meta::set_at(&mut status, &["ready"], json!(ready));
    meta::set_at(&mut status, &["terminating"], json!(terminating));
    meta::set_at(&mut status, &["uncountedTerminatedPods"], json!({}));
    if !conditions.is_empty() {
        meta::set_at(&mut status, &["conditions"], Value::Array(conditions));
    }
    if job.get("status") != Some(&status) {
        let mut updated = job.clone();
        meta::set_at(&mut updated, &["status"], status);
        action
            .effects
            .push(Effect::Replace(jobs(), Part::Status, updated));
    }
    // Finalizers go only once the counts that include these pods are stored.
    action.effects.extend(uncounted.into_iter().map(release));
    action.effects.extend(pod_effects);
    action.effects.extend(events);
    action
}

/// Applies `spec.suspend` to the status: the `Suspended` condition and events on each change, `startTime` set
/// when the Job runs (again). Returns whether the Job is suspended.
fn suspension(
    job: &Value,
    status: &mut Value,
    conditions: &mut Vec<Value>,
    events: &mut Vec<Effect>,
    now: &str,
) -> bool {
    let suspended = meta::at(job, &["spec", "suspend"]) == Some(&Value::Bool(true));
    let was = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some("Suspended"));
    let was_suspended =
        was.is_some_and(|i| conditions[i].get("status").and_then(Value::as_str) == Some("True"));
    if suspended && !was_suspended {
        let entry = condition("Suspended", "JobSuspended", "Job suspended", now);
        match was {
            Some(i) => conditions[i] = entry,
            None => conditions.push(entry),
        }
        events.push(event(
            job,
            "Normal",
            "Suspended",
            "Job suspended".to_owned(),
        ));
    } else if !suspended && was_suspended {
        let mut resumed = condition("Suspended", "JobResumed", "Job resumed", now);
        meta::set_at(&mut resumed, &["status"], json!("False"));
        if let Some(i) = was {
            conditions[i] = resumed;
        }
        events.push(event(job, "Normal", "Resumed", "Job resumed".to_owned()));
        meta::set_at(status, &["startTime"], json!(now));
    }
    if !suspended && meta::at(status, &["startTime"]).is_none() {
        meta::set_at(status, &["startTime"], json!(now));
    }
    suspended
}

/// The pods of a Job, sorted the way its status counts them.
struct Pods<'a> {
    active: Vec<&'a Value>,
    terminating: usize,
    /// Finished (or deleted) pods still holding the tracking finalizer: not yet in `succeeded`/`failed`.
    uncounted: Vec<&'a Value>,
    /// `succeeded` and `failed` including the uncounted pods.
    succeeded: i64,
    failed: i64,
}

impl<'a> Pods<'a> {
    fn of(job: &Value, mine: &[&'a Value]) -> Self {
        let uncounted: Vec<&Value> = mine
            .iter()
            .copied()
            .filter(|p| {
                has_tracking(p)
                    && (is_terminal(p) || (meta::is_deleting(p) && !only_failed_replaced(job)))
            })
            .collect();
        let newly_failed = uncounted.iter().filter(|p| is_failed(p)).count();
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        Pods {
            active: mine.iter().copied().filter(|p| is_active(p)).collect(),
            terminating: mine
                .iter()
                .filter(|p| meta::is_deleting(p) && !is_terminal(p))
                .count(),
            succeeded: int(job, &["status", "succeeded"]).unwrap_or(0)
                + count(uncounted.len() - newly_failed),
            failed: int(job, &["status", "failed"]).unwrap_or(0) + count(newly_failed),
            uncounted,
        }
    }
}

/// Writes `active`, `succeeded` and `failed`, omitted when zero as Go does.
fn set_counts(status: &mut Value, active: usize, succeeded: i64, failed: i64) {
    let counts = [
        ("active", i64::try_from(active).unwrap_or(i64::MAX)),
        ("succeeded", succeeded),
        ("failed", failed),
    ];
    for (field, count) in counts {
        if count == 0 {
            meta::remove_at(status, &[field]);
        } else {
            meta::set_at(status, &[field], json!(count));
        }
    }
}

/// Creates `count` pods, each with its `SuccessfulCreate` event.
fn create_pods(job: &Value, count: usize, events: &mut Vec<Effect>) -> Vec<Effect> {
    (0..count)
        .map(|_| {
            let pod = new_pod(job);
            let message = format!("Created pod: {}", meta::name(&pod));
            events.push(event(job, "Normal", "SuccessfulCreate", message));
            let failed = framework::failed_create(jobs(), job, "Error creating: ", COMPONENT);
            Effect::Create(crate::registry::resources::pods(), pod, Some(failed))
        })
        .collect()
}

/// The reason and message of a condition already in the list.
fn reason_of(conditions: &[Value], type_: &str) -> Option<(String, String)> {
    let found = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))?;
    let text = |field: &str| {
        found
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some((text("reason"), text("message")))
}

/// How many pods should be active now.
fn wanted_active(job: &Value, succeeded: i64, active: usize) -> usize {
    let parallelism = int(job, &["spec", "parallelism"]).unwrap_or(1);
    let wanted = match int(job, &["spec", "completions"]) {
        // Without completions, the first success means no new pods, but the running ones finish.
        None if succeeded > 0 => return active,
        None => parallelism,
        Some(completions) => parallelism.min(completions - succeeded),
    };
    usize::try_from(wanted).unwrap_or(0)
}

/// The active pods beyond `wanted`, not-ready ones first (parallelism lowered, or completions nearly reached).
fn surplus<'a>(active: &[&'a Value], wanted: usize) -> Vec<&'a Value> {
    let mut surplus = active.to_vec();
    surplus.sort_by_key(|p| is_true(p, "Ready"));
    surplus.truncate(active.len().saturating_sub(wanted));
    surplus
}

/// Deletes pods (Background, the pod's own grace period), each with its `SuccessfulDelete` event.
fn delete_pods(job: &Value, pods: &[&Value], events: &mut Vec<Effect>) -> Vec<Effect> {
    pods.iter()
        .map(|pod| {
            events.push(event(
                job,
                "Normal",
                "SuccessfulDelete",
                format!("Deleted pod: {}", meta::name(pod)),
            ));
            Effect::Delete(
                crate::registry::resources::pods(),
                (*pod).clone(),
                DeleteOptions::default(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKOFF: Backoff = Backoff {
        base: Duration::from_secs(10),
        cap: Duration::from_secs(360),
    };

    fn at(text: &str) -> Timestamp {
        text.parse().expect("valid time")
    }

    fn job(spec: &Value) -> Value {
        let mut job = json!({"metadata": {"name": "j", "namespace": "default", "uid": "ju", "resourceVersion": "7"},
            "spec": {"backoffLimit": 6, "template": {"metadata": {"labels": {"job-name": "j"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}},
            "status": {"startTime": "2026-01-01T00:00:00Z"}});
        if let (Some(target), Some(extra)) = (job["spec"].as_object_mut(), spec.as_object()) {
            target.extend(extra.clone());
        }
        job
    }

    fn pod(name: &str, phase: &str, finished: Option<&str>, restarts: i64) -> Value {
        let state = finished.map_or_else(
            || json!({"running": {}}),
            |t| json!({"terminated": {"exitCode": 1, "finishedAt": t}}),
        );
        json!({"metadata": {"name": name, "namespace": "default", "uid": name,
                "creationTimestamp": "2026-01-01T00:00:00Z", "finalizers": [TRACKING],
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "ju", "controller": true}]},
            "status": {"phase": phase, "containerStatuses": [{"restartCount": restarts, "state": state}]}})
    }

    fn status_written(action: &Action) -> Value {
        action
            .effects
            .iter()
            .find_map(|e| match e {
                Effect::Replace(kind, Part::Status, job) if kind.is(jobs()) => {
                    job.get("status").cloned()
                }
                _ => None,
            })
            .expect("a status write")
    }

    fn created(action: &Action) -> Vec<&Value> {
        action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Create(_, pod, _) => Some(pod),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_back_off_doubles_from_its_base_up_to_its_cap() {
        let delays = [1, 2, 3, 6, 7, 40].map(|n| BACKOFF.delay(n).as_secs());
        assert_eq!(delays, [10, 20, 40, 320, 360, 360]);
    }

    #[test]
    fn a_new_job_starts_and_gets_one_owned_tracked_pod_from_its_template() {
        let mut fresh = job(&json!({}));
        meta::remove_at(&mut fresh, &["status"]);
        let action = decide(Some(&fresh), &[], at("2026-01-01T00:00:03Z"), BACKOFF);
        assert_eq!(
            status_written(&action),
            json!({"startTime": "2026-01-01T00:00:03Z", "ready": 0, "terminating": 0,
                "uncountedTerminatedPods": {}}),
            "the pod counts as active once it exists"
        );
        let pods = created(&action);
        assert_eq!(pods.len(), 1);
        let pod = pods[0];
        assert!(meta::name(pod).starts_with("j-") && meta::name(pod).len() == 7);
        assert_eq!(pod["metadata"]["finalizers"], json!([TRACKING]));
        assert_eq!(pod["metadata"]["labels"]["job-name"], "j");
        assert_eq!(
            pod["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert_eq!(pod["spec"]["restartPolicy"], "Never");
    }

    #[test]
    fn a_failed_pod_is_counted_and_replaced_only_after_the_back_off() {
        let failed = pod("p1", "Failed", Some("2026-01-01T00:00:10Z"), 0);
        let early = decide(
            Some(&job(&json!({}))),
            std::slice::from_ref(&failed),
            at("2026-01-01T00:00:15Z"),
            BACKOFF,
        );
        assert_eq!(status_written(&early)["failed"], 1);
        assert!(created(&early).is_empty());
        assert_eq!(early.requeue_after, Some(Duration::from_secs(5)));
        assert!(early.effects.iter().any(
            |e| matches!(e, Effect::Replace(_, Part::Main, p) if meta::finalizers(p).is_empty())
        ));
        let mut counted = job(&json!({}));
        meta::set_at(&mut counted, &["status", "failed"], json!(1));
        let mut released = failed;
        meta::remove_at(&mut released, &["metadata", "finalizers"]);
        let later = decide(
            Some(&counted),
            &[released],
            at("2026-01-01T00:00:20Z"),
            BACKOFF,
        );
        assert_eq!(created(&later).len(), 1);
    }

    #[test]
    fn restarts_under_on_failure_count_toward_the_backoff_limit() {
        let spec = json!({"backoffLimit": 2,
            "template": {"spec": {"restartPolicy": "OnFailure", "containers": []}}});
        let restarting = pod("p1", "Running", None, 2);
        let action = decide(
            Some(&job(&spec)),
            &[restarting],
            at("2026-01-01T00:00:20Z"),
            BACKOFF,
        );
        let status = status_written(&action);
        assert_eq!(status["conditions"][0]["type"], "FailureTarget");
        assert_eq!(status["conditions"][0]["reason"], "BackoffLimitExceeded");
        assert_eq!(
            status["conditions"].as_array().map(Vec::len),
            Some(1),
            "Failed waits for the pod to go"
        );
        assert!(
            action
                .effects
                .iter()
                .any(|e| matches!(e, Effect::Delete(_, p, _) if meta::name(p) == "p1"))
        );
    }

    #[test]
    fn the_deadline_requeues_until_it_passes() {
        let spec = json!({"activeDeadlineSeconds": 30});
        let running = pod("p1", "Running", None, 0);
        let before = decide(
            Some(&job(&spec)),
            std::slice::from_ref(&running),
            at("2026-01-01T00:00:10Z"),
            BACKOFF,
        );
        assert_eq!(before.requeue_after, Some(Duration::from_secs(20)));
        let after = decide(
            Some(&job(&spec)),
            &[running],
            at("2026-01-01T00:00:30Z"),
            BACKOFF,
        );
        assert_eq!(
            status_written(&after)["conditions"][0]["reason"],
            "DeadlineExceeded"
        );
    }

    #[test]
    fn a_suspended_job_deletes_its_pods_and_resuming_restarts_the_clock() {
        let running = pod("p1", "Running", None, 0);
        let suspended = job(&json!({"suspend": true}));
        let action = decide(
            Some(&suspended),
            std::slice::from_ref(&running),
            at("2026-01-01T00:00:20Z"),
            BACKOFF,
        );
        let status = status_written(&action);
        assert_eq!(status["conditions"][0]["type"], "Suspended");
        assert_eq!(status["conditions"][0]["reason"], "JobSuspended");
        assert!(
            action
                .effects
                .iter()
                .any(|e| matches!(e, Effect::Delete(_, p, _) if meta::name(p) == "p1"))
        );
        assert!(created(&action).is_empty());
        let mut resumed = job(&json!({"suspend": false}));
        meta::set_at(&mut resumed, &["status"], status);
        let action = decide(Some(&resumed), &[], at("2026-01-01T00:01:00Z"), BACKOFF);
        let status = status_written(&action);
        assert_eq!(status["conditions"][0]["status"], "False");
        assert_eq!(status["conditions"][0]["reason"], "JobResumed");
        assert_eq!(status["startTime"], "2026-01-01T00:01:00Z");
        assert_eq!(created(&action).len(), 1);
    }

    #[test]
    fn lowering_parallelism_deletes_surplus_pods_not_ready_first() {
        let mut ready = pod("ready", "Running", None, 0);
        meta::set_at(
            &mut ready,
            &["status", "conditions"],
            json!([{"type": "Ready", "status": "True"}]),
        );
        let starting = pod("starting", "Pending", None, 0);
        let action = decide(
            Some(&job(&json!({"parallelism": 1, "completions": 5}))),
            &[ready, starting],
            at("2026-01-01T00:00:20Z"),
            BACKOFF,
        );
        let deleted: Vec<&str> = action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Delete(_, p, _) => Some(meta::name(p)),
                _ => None,
            })
            .collect();
        assert_eq!(deleted, ["starting"]);
        assert_eq!(status_written(&action)["active"], 1);
    }

    #[test]
    fn without_completions_the_first_success_lets_running_pods_finish_without_new_ones() {
        let spec = json!({"parallelism": 2});
        let done = pod("done", "Succeeded", Some("2026-01-01T00:00:10Z"), 0);
        let running = pod("running", "Running", None, 0);
        let action = decide(
            Some(&job(&spec)),
            &[done, running],
            at("2026-01-01T00:00:20Z"),
            BACKOFF,
        );
        assert!(created(&action).is_empty());
        assert!(
            !action
                .effects
                .iter()
                .any(|e| matches!(e, Effect::Delete(..)))
        );
        let status = status_written(&action);
        assert_eq!(
            (status["succeeded"].clone(), status["active"].clone()),
            (json!(1), json!(1))
        );
        assert_eq!(
            status.get("conditions"),
            None,
            "not complete while a pod runs"
        );
    }

    #[test]
    fn pods_of_a_vanished_job_lose_the_tracking_finalizer() {
        let orphan = pod("p1", "Succeeded", Some("2026-01-01T00:00:10Z"), 0);
        let action = decide(None, &[orphan], at("2026-01-01T00:00:20Z"), BACKOFF);
        assert!(matches!(
            &action.effects[..],
            [Effect::Replace(_, Part::Main, p)] if meta::finalizers(p).is_empty()
        ));
    }
}
