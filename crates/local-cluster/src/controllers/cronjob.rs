//! The CronJob controller (reference §3.3): at the most recent scheduled minute (in `spec.timeZone`, else UTC)
//! it creates the Job `<cronjob>-<minutes since the epoch>` from the template, honouring `suspend`,
//! `startingDeadlineSeconds` and `concurrencyPolicy`; it keeps `status.active`, `lastScheduleTime` and
//! `lastSuccessfulTime`, deletes finished Jobs beyond the history limits, and sleeps until the next minute due.
//! A refused Job creation (a quota on `count/jobs.batch`) records Warning `FailedCreate` `Error creating job:
//! <error>` and is retried with back-off for the same scheduled time (the status is written after the Job).
//!
//! Not covered: `UnexpectedJob` events (manual Jobs from a CronJob are left alone), `@every`.

use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};

use crate::controllers::framework::{
    self, Action, Effect, Key, Reconciler, is_true, owner_and_dependents, owner_keys,
};
use crate::controllers::recorder::Event;
use crate::registry::delete::DeleteOptions;
use crate::registry::meta;
use crate::registry::ops::Part;
use crate::registry::resources::{self, Propagation, ResourceType, jobs};
use crate::registry::store::{Change, Store};
use crate::schedule::{self, Schedule};

const COMPONENT: &str = "cronjob-controller";
const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// How far the controller looks back for a missed time, or ahead for the next one (then it looks again).
const HORIZON_MINUTES: i64 = 8 * 24 * 60;
/// The real controller wakes this long after the scheduled time.
const WAKE_AFTER: Duration = Duration::from_millis(100);

fn cronjobs() -> &'static ResourceType {
    // Invariant: cronjobs are in the static registry.
    resources::find("batch", "v1", "cronjobs").expect("cronjobs are served")
}

/// The CronJob controller's reconciler; its keys are CronJobs.
#[derive(Debug)]
pub(crate) struct CronJobController;

impl Reconciler for CronJobController {
    fn keys(&self, change: &Change) -> Vec<Key> {
        owner_keys(change, cronjobs(), "CronJob", jobs())
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        framework::all_keys(store, cronjobs())
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        owner_and_dependents(store, cronjobs(), jobs(), key)
            .map(|(cronjob, owned)| decide(&cronjob, &owned, store.clock().now()))
            .unwrap_or_default()
    }
}

fn finished(job: &Value) -> Option<&'static str> {
    if is_true(job, "Complete") {
        Some("Complete")
    } else if is_true(job, "Failed") {
        Some("Failed")
    } else {
        None
    }
}

fn reference(job: &Value) -> Value {
    json!({"kind": "Job", "namespace": meta::namespace(job), "name": meta::name(job), "uid": meta::uid(job),
        "apiVersion": "batch/v1", "resourceVersion": meta::resource_version(job).unwrap_or_default()})
}

/// The references `status.active` lists for these Jobs. A Job already listed keeps its reference as written when
/// it joined (with its resourceVersion then): the list changes only when Jobs join or leave, not with every
/// status write of a Job.
fn active_references(cronjob: &Value, active: &[&Value]) -> Vec<Value> {
    let listed = meta::at(cronjob, &["status", "active"])
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    active
        .iter()
        .map(|job| {
            listed
                .iter()
                .find(|r| meta::str_at(r, &["uid"]) == Some(meta::uid(job)))
                .cloned()
                .unwrap_or_else(|| reference(job))
        })
        .collect()
}

fn event(cronjob: &Value, kind: &'static str, reason: &str, message: String) -> Effect {
    Effect::Event(Event::about(
        cronjobs(),
        cronjob,
        None,
        kind,
        reason,
        message,
        COMPONENT,
    ))
}

fn minute_floor(at: Timestamp) -> i64 {
    at.as_second().div_euclid(60) * 60
}

fn minute(second: i64) -> Option<Timestamp> {
    Timestamp::from_second(second).ok()
}

/// The most recent scheduled minute in `(earliest, now]`, and how many there were (counting stops past 100).
fn most_recent(
    schedule: &Schedule,
    zone: &TimeZone,
    earliest: Timestamp,
    now: Timestamp,
) -> (Option<Timestamp>, usize) {
    let first = minute_floor(earliest) + 60;
    let last = minute_floor(now);
    let mut found = None;
    let mut count = 0;
    let mut at = last;
    while at >= first.max(last - HORIZON_MINUTES * 60) && count <= 100 {
        if let Some(time) = minute(at)
            && schedule.matches(zone.to_datetime(time))
        {
            found = found.or(Some(time));
            count += 1;
        }
        at -= 60;
    }
    (found, count)
}

/// The next scheduled minute after `now`, or the horizon if none comes before it.
fn next_after(schedule: &Schedule, zone: &TimeZone, now: Timestamp) -> Timestamp {
    let start = minute_floor(now) + 60;
    (0..HORIZON_MINUTES)
        .filter_map(|m| minute(start + m * 60))
        .find(|time| schedule.matches(zone.to_datetime(*time)))
        .or_else(|| minute(start + HORIZON_MINUTES * 60))
        .unwrap_or(now)
}

/// RFC 3339 in the CronJob's zone, as Go prints it (`Z` for UTC).
fn zoned_text(at: Timestamp, zone: &TimeZone) -> String {
    let zoned = at.to_zoned(zone.clone());
    if zoned.offset().seconds() == 0 {
        meta::format_time(at)
    } else {
        zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

fn new_job(cronjob: &Value, at: Timestamp, zone: &TimeZone) -> Value {
    let template = meta::at(cronjob, &["spec", "jobTemplate"])
        .cloned()
        .unwrap_or_default();
    let name = format!("{}-{}", meta::name(cronjob), at.as_second() / 60);
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": meta::namespace(cronjob),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": meta::name(cronjob),
                "uid": meta::uid(cronjob), "controller": true, "blockOwnerDeletion": true}]},
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    });
    if let Some(labels) = meta::at(&template, &["metadata", "labels"]) {
        meta::set_at(&mut job, &["metadata", "labels"], labels.clone());
    }
    let mut annotations = meta::at(&template, &["metadata", "annotations"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    meta::set_at(&mut annotations, &[SCHEDULED], json!(zoned_text(at, zone)));
    meta::set_at(&mut job, &["metadata", "annotations"], annotations);
    job
}

/// Deletes the oldest finished Jobs of one outcome beyond `limit`.
fn trim_history(cronjob: &Value, owned: &[Value], outcome: &str, limit: i64) -> Vec<Effect> {
    let mut done: Vec<&Value> = owned
        .iter()
        .filter(|j| finished(j) == Some(outcome))
        .collect();
    // Oldest first by start time, Jobs without one last, ties by name.
    done.sort_by_key(|j| {
        let start = meta::str_at(j, &["status", "startTime"]).and_then(meta::parse_time);
        (start.is_none(), start, meta::name(j).to_owned())
    });
    let excess = done
        .len()
        .saturating_sub(usize::try_from(limit).unwrap_or(0));
    done.into_iter()
        .take(excess)
        .flat_map(|job| delete_job(cronjob, job))
        .collect()
}

fn delete_job(cronjob: &Value, job: &Value) -> [Effect; 2] {
    [
        Effect::Delete(
            jobs(),
            job.clone(),
            DeleteOptions::with_propagation(Propagation::Background),
        ),
        event(
            cronjob,
            "Normal",
            "SuccessfulDelete",
            format!("Deleted job {}", meta::name(job)),
        ),
    ]
}

/// The decision for one CronJob and the Jobs it owns.
pub(crate) fn decide(cronjob: &Value, owned: &[Value], now: Timestamp) -> Action {
    let mut action = Action::default();
    if meta::is_deleting(cronjob) {
        return action;
    }
    let mut status = cronjob.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut effects = Vec::new();
    // Keep `active` in step with the Jobs: finished and vanished ones leave, ones we created join.
    let mut active = Vec::new();
    for listed in meta::at(&status, &["active"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = meta::str_at(listed, &["name"]).unwrap_or_default();
        let uid = meta::str_at(listed, &["uid"]);
        match owned.iter().find(|j| Some(meta::uid(j)) == uid) {
            Some(job) => match finished(job) {
                Some(outcome) => effects.push(event(
                    cronjob,
                    "Normal",
                    "SawCompletedJob",
                    format!("Saw completed job: {name}, status: {outcome}"),
                )),
                None => active.push(job),
            },
            None => effects.push(event(
                cronjob,
                "Normal",
                "MissingJob",
                format!("Active job went missing: {name}"),
            )),
        }
    }
    for job in owned {
        let ours = meta::at(job, &["metadata", "annotations", SCHEDULED]).is_some();
        if ours && finished(job).is_none() && !active.iter().any(|a| meta::uid(a) == meta::uid(job))
        {
            active.push(job);
        }
    }
    let newest_success = owned
        .iter()
        .filter(|j| finished(j) == Some("Complete"))
        .filter_map(|j| meta::str_at(j, &["status", "completionTime"]))
        .max();
    if let Some(time) = newest_success
        && meta::str_at(&status, &["lastSuccessfulTime"]).is_none_or(|t| t < time)
    {
        meta::set_at(&mut status, &["lastSuccessfulTime"], json!(time));
    }
    let spec_int = |field: &str| meta::at(cronjob, &["spec", field]).and_then(Value::as_i64);
    effects.extend(trim_history(
        cronjob,
        owned,
        "Complete",
        spec_int("successfulJobsHistoryLimit").unwrap_or(3),
    ));
    effects.extend(trim_history(
        cronjob,
        owned,
        "Failed",
        spec_int("failedJobsHistoryLimit").unwrap_or(1),
    ));

    let suspended = meta::at(cronjob, &["spec", "suspend"]) == Some(&Value::Bool(true));
    if !suspended {
        schedule_job(
            cronjob,
            now,
            &mut active,
            &mut status,
            &mut effects,
            &mut action,
        );
    }
    let references = active_references(cronjob, &active);
    if references.is_empty() {
        meta::remove_at(&mut status, &["active"]);
    } else {
        meta::set_at(&mut status, &["active"], Value::Array(references));
    }
    // The new Job (which `schedule_job` puts first) is created before the status names it: when the API
    // refuses it (a quota), `active` and `lastScheduleTime` stay as they were and the same time is retried.
    if matches!(effects.first(), Some(Effect::Create(..))) {
        action.effects.push(effects.remove(0));
    }
    if cronjob.get("status") != Some(&status) {
        let mut updated = cronjob.clone();
        meta::set_at(&mut updated, &["status"], status);
        action
            .effects
            .push(Effect::Replace(cronjobs(), Part::Status, updated));
    }
    action.effects.extend(effects);
    action
}

/// Creates the Job for the most recent scheduled time if it is due, and requeues for the next one.
fn schedule_job(
    cronjob: &Value,
    now: Timestamp,
    active: &mut Vec<&Value>,
    status: &mut Value,
    effects: &mut Vec<Effect>,
    action: &mut Action,
) {
    let name = meta::str_at(cronjob, &["spec", "timeZone"]);
    let Ok(zone) = name.map_or(Ok(TimeZone::UTC), TimeZone::get) else {
        let name = name.unwrap_or_default();
        effects.push(event(
            cronjob,
            "Warning",
            "UnknownTimeZone",
            format!("invalid timeZone: {name:?}: unknown time zone {name}"),
        ));
        return;
    };
    let text = meta::str_at(cronjob, &["spec", "schedule"]).unwrap_or_default();
    let schedule = match schedule::parse(text) {
        Ok(schedule) => schedule,
        Err(error) => {
            effects.push(event(
                cronjob,
                "Warning",
                "UnparseableSchedule",
                format!("unparseable schedule: {text:?} : {error}"),
            ));
            return;
        }
    };
    let next = next_after(&schedule, &zone, now);
    action.requeue(now.duration_until(next).unsigned_abs() + WAKE_AFTER);
    let created =
        meta::str_at(cronjob, &["metadata", "creationTimestamp"]).and_then(meta::parse_time);
    let mut earliest = meta::str_at(status, &["lastScheduleTime"])
        .and_then(meta::parse_time)
        .or(created)
        .unwrap_or(now);
    if let Some(deadline) =
        meta::at(cronjob, &["spec", "startingDeadlineSeconds"]).and_then(Value::as_i64)
        && let Ok(limit) = now.checked_sub(jiff::SignedDuration::from_secs(deadline))
    {
        earliest = earliest.max(limit);
    }
    let (Some(at), missed) = most_recent(&schedule, &zone, earliest, now) else {
        return;
    };
    if missed > 100 {
        effects.push(event(cronjob, "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".to_owned()));
    }
    let job = new_job(cronjob, at, &zone);
    if active.iter().any(|a| meta::name(a) == meta::name(&job)) {
        return;
    }
    match meta::str_at(cronjob, &["spec", "concurrencyPolicy"]) {
        Some("Forbid") if !active.is_empty() => {
            effects.push(event(cronjob, "Normal", "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid".to_owned()));
            return;
        }
        Some("Replace") => {
            for old in active.drain(..) {
                effects.extend(delete_job(cronjob, old));
            }
        }
        _ => {}
    }
    meta::set_at(status, &["lastScheduleTime"], json!(meta::format_time(at)));
    effects.push(event(
        cronjob,
        "Normal",
        "SuccessfulCreate",
        format!("Created job {}", meta::name(&job)),
    ));
    let failed = framework::failed_create(cronjobs(), cronjob, "Error creating job: ", COMPONENT);
    effects.insert(0, Effect::Create(jobs(), job, Some(failed)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("valid time")
    }

    fn cronjob(spec: &Value, status: &Value) -> Value {
        let mut cronjob = json!({"metadata": {"name": "cj", "namespace": "default", "uid": "cu",
                "creationTimestamp": "2026-03-02T07:00:00Z"},
            "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Allow",
                "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                "jobTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": {"template": {"spec": {}}}}},
            "status": status});
        if let (Some(target), Some(extra)) = (cronjob["spec"].as_object_mut(), spec.as_object()) {
            target.extend(extra.clone());
        }
        cronjob
    }

    fn job(name: &str, condition: Option<&str>, started: &str) -> Value {
        let conditions: Vec<Value> = condition
            .map(|c| json!({"type": c, "status": "True"}))
            .into_iter()
            .collect();
        json!({"metadata": {"name": name, "namespace": "default", "uid": name,
                "annotations": {SCHEDULED: started},
                "ownerReferences": [{"kind": "CronJob", "name": "cj", "uid": "cu", "controller": true}]},
            "status": {"startTime": started, "completionTime": started, "conditions": conditions}})
    }

    fn created(action: &Action) -> Vec<&Value> {
        action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Create(_, job, _) => Some(job),
                _ => None,
            })
            .collect()
    }

    fn status(action: &Action) -> Value {
        action
            .effects
            .iter()
            .find_map(|e| match e {
                Effect::Replace(_, Part::Status, c) => c.get("status").cloned(),
                _ => None,
            })
            .unwrap_or(Value::Null)
    }

    fn events(action: &Action) -> Vec<(&str, &str)> {
        action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Event(event) => Some((event.reason.as_str(), event.message.as_str())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_most_recent_missed_minute_gets_a_job_named_after_it_and_the_next_one_a_timer() {
        let action = decide(
            &cronjob(&json!({}), &json!({})),
            &[],
            at("2026-03-02T07:12:30Z"),
        );
        let jobs = created(&action);
        assert_eq!(
            jobs.len(),
            1,
            "one Job, for 07:10 only, not the missed 07:05"
        );
        let minutes = at("2026-03-02T07:10:00Z").as_second() / 60;
        assert_eq!(meta::name(jobs[0]), format!("cj-{minutes}"));
        assert!(
            matches!(
                action.effects[..2],
                [Effect::Create(..), Effect::Replace(_, Part::Status, _)]
            ),
            "the Job is created before the status names it"
        );
        assert_eq!(
            jobs[0]["metadata"]["annotations"][SCHEDULED],
            "2026-03-02T07:10:00Z"
        );
        assert_eq!(jobs[0]["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(jobs[0]["metadata"]["ownerReferences"][0]["kind"], "CronJob");
        assert_eq!(status(&action)["lastScheduleTime"], "2026-03-02T07:10:00Z");
        assert_eq!(
            events(&action),
            [(
                "SuccessfulCreate",
                format!("Created job cj-{minutes}").as_str()
            )]
        );
        assert_eq!(action.requeue_after, Some(Duration::from_millis(150_100)));
    }

    #[test]
    fn schedules_run_in_the_time_zone_and_the_annotation_carries_its_offset() {
        let spec = json!({"schedule": "0 9 * * *", "timeZone": "Europe/Berlin"});
        let action = decide(&cronjob(&spec, &json!({})), &[], at("2026-03-02T08:00:30Z"));
        let jobs = created(&action);
        assert_eq!(jobs.len(), 1);
        assert_eq!(
            jobs[0]["metadata"]["annotations"][SCHEDULED],
            "2026-03-02T09:00:00+01:00"
        );
        let unknown = json!({"timeZone": "Mars/Olympus"});
        let refused = decide(
            &cronjob(&unknown, &json!({})),
            &[],
            at("2026-03-02T08:00:30Z"),
        );
        assert!(created(&refused).is_empty());
        assert_eq!(events(&refused)[0].0, "UnknownTimeZone");
    }

    #[test]
    fn forbid_waits_for_the_running_job_and_replace_deletes_it() {
        let running = job("cj-1", None, "2026-03-02T07:05:00Z");
        let state = json!({"lastScheduleTime": "2026-03-02T07:05:00Z",
            "active": [{"kind": "Job", "name": "cj-1", "uid": "cj-1"}]});
        let forbid = cronjob(&json!({"concurrencyPolicy": "Forbid"}), &state);
        let waiting = decide(
            &forbid,
            std::slice::from_ref(&running),
            at("2026-03-02T07:10:01Z"),
        );
        assert!(created(&waiting).is_empty());
        assert_eq!(events(&waiting)[0].0, "JobAlreadyActive");
        let replace = cronjob(&json!({"concurrencyPolicy": "Replace"}), &state);
        let replaced = decide(&replace, &[running], at("2026-03-02T07:10:01Z"));
        assert_eq!(created(&replaced).len(), 1);
        assert!(events(&replaced).contains(&("SuccessfulDelete", "Deleted job cj-1")));
        assert_eq!(status(&replaced).get("active"), None);
    }

    #[test]
    fn a_running_job_keeps_its_active_reference_as_written_when_it_joined() {
        // Kubernetes writes the reference (with the Job's resourceVersion then) once, when it creates the Job;
        // the Job's own status writes since do not rewrite the CronJob.
        let mut running = job("cj-1", None, "2026-03-02T07:05:00Z");
        meta::set_at(&mut running, &["metadata", "resourceVersion"], json!("42"));
        let joined = json!({"kind": "Job", "namespace": "default", "name": "cj-1", "uid": "cj-1",
            "apiVersion": "batch/v1", "resourceVersion": "7"});
        let state = json!({"lastScheduleTime": "2026-03-02T07:05:00Z", "active": [joined]});
        let action = decide(
            &cronjob(&json!({"suspend": true}), &state),
            &[running],
            at("2026-03-02T07:06:00Z"),
        );
        assert_eq!(action.effects, [], "no status write");
    }

    #[test]
    fn finished_jobs_leave_active_and_old_failures_beyond_the_limit_are_deleted() {
        let done = job("cj-3", Some("Complete"), "2026-03-02T07:05:00Z");
        let old_failure = job("cj-1", Some("Failed"), "2026-03-02T06:00:00Z");
        let new_failure = job("cj-2", Some("Failed"), "2026-03-02T06:30:00Z");
        let state = json!({"lastScheduleTime": "2026-03-02T07:05:00Z",
            "active": [{"kind": "Job", "name": "cj-3", "uid": "cj-3"}]});
        let action = decide(
            &cronjob(&json!({"suspend": true}), &state),
            &[done, old_failure, new_failure],
            at("2026-03-02T07:06:00Z"),
        );
        let status = status(&action);
        assert_eq!(status.get("active"), None);
        assert_eq!(status["lastSuccessfulTime"], "2026-03-02T07:05:00Z");
        let events = events(&action);
        assert!(events.contains(&(
            "SawCompletedJob",
            "Saw completed job: cj-3, status: Complete"
        )));
        assert!(events.contains(&("SuccessfulDelete", "Deleted job cj-1")));
        assert!(!events.iter().any(|(_, m)| m.contains("cj-2")));
        assert!(created(&action).is_empty(), "suspended");
    }

    #[test]
    fn a_job_refused_over_quota_records_failed_create_and_leaves_the_status_for_a_retry() {
        use crate::controllers::framework::{Failure, execute};
        use crate::registry::ops::{self, WriteOptions};
        use crate::registry::resources::find;
        use crate::registry::store::Store;

        let store = Store::new(100, crate::clock::Clock::default());
        let create = |resource: &'static ResourceType, object: Value| {
            ops::create(
                &store,
                resource,
                Some("default"),
                object,
                &WriteOptions::default(),
            )
            .expect("created")
            .object
        };
        create(
            find("", "v1", "namespaces").expect("served"),
            json!({"metadata": {"name": "default"}}),
        );
        create(
            find("", "v1", "resourcequotas").expect("served"),
            json!({"metadata": {"name": "q"}, "spec": {"hard": {"count/jobs.batch": "0"}}}),
        );
        let mut stored = cronjob(&json!({}), &json!({}));
        for field in ["uid", "creationTimestamp"] {
            meta::remove_at(&mut stored, &["metadata", field]);
        }
        stored["spec"]["jobTemplate"]["spec"]["template"]["spec"] = json!({"restartPolicy": "Never",
            "containers": [{"name": "job", "image": "busybox"}]});
        let stored = create(cronjobs(), stored);
        let later = Timestamp::now() + jiff::SignedDuration::from_mins(10);
        let action = decide(&stored, &[], later);
        let name = meta::name(created(&action)[0]).to_owned();
        let Err(Failure { error, creating }) = execute(&store, action.effects) else {
            panic!("the Job is over quota");
        };
        assert!(creating);
        let expected = format!(
            "jobs.batch \"{name}\" is forbidden: exceeded quota: q, requested: count/jobs.batch=1, \
             used: count/jobs.batch=0, limited: count/jobs.batch=0"
        );
        assert_eq!(error.message, expected);
        let events = store.list(find("", "v1", "events").expect("served"));
        assert_eq!(
            (events[0]["type"].as_str(), events[0]["reason"].as_str()),
            (Some("Warning"), Some("FailedCreate"))
        );
        assert_eq!(
            events[0]["message"],
            format!("Error creating job: {expected}")
        );
        let after = store.get(cronjobs(), "default", "cj").expect("stored");
        assert_eq!(
            after["status"],
            json!({}),
            "no lastScheduleTime, no active Job"
        );
    }
}
