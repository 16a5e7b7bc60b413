//! `status`: what a job is doing, computed from its live objects the way upstream's jobs-api computes it
//! (reference/toolforge.md §2.6), for `list`, `show` and `wait`.
//!
//! Pure: the caller lists the namespace's Jobs, Pods and Events once and passes them in ([`Related`]) with the
//! current time; [`of`] picks what belongs to the job. The vocabulary is upstream's: a short status (`pending`,
//! `running`, `succeeded`, `failed`, `unknown`), how long it has been so, and messages such as `restarted (3)`,
//! `exitcode 1` or `Unable to start, out of quota for cpu, memory`; scheduled jobs also get their previous and next
//! run times (the next one from `toolforge_cron`).

pub mod quota;

use std::collections::BTreeSet;

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Serialize;

use crate::plan::Listed;
use crate::render::LiveObject;

/// How long a Deployment may have unavailable replicas before its job counts as failed (upstream's
/// `progressDeadlineSeconds`).
const UNAVAILABLE_GRACE_SECONDS: i64 = 600;

/// Pod-template annotations a rolling restart sets: `kubectl rollout restart`'s and upstream's.
const RESTARTED_AT: [&str; 2] = [
    "kubectl.kubernetes.io/restartedAt",
    "app.kubernetes.io/restartedAt",
];

/// The short status, upstream's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Short {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl Short {
    /// The word, capitalised as the tables print it.
    pub fn title(self) -> &'static str {
        match self {
            Short::Pending => "Pending",
            Short::Running => "Running",
            Short::Succeeded => "Succeeded",
            Short::Failed => "Failed",
            Short::Unknown => "Unknown",
        }
    }
}

/// A job's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub short: Short,
    /// Since when the job has had this status, when known.
    pub since: Option<Timestamp>,
    /// What explains it: `restarted (N)`, `exitcode X`, a waiting reason, the out-of-quota text.
    pub messages: Vec<String>,
    /// Scheduled jobs: when the latest run was scheduled.
    pub previous_schedule: Option<Timestamp>,
    /// Scheduled jobs: when the next run is due.
    pub next_schedule: Option<Timestamp>,
}

/// The JSON form of a [`Status`], upstream's `status` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatusJson {
    pub short: Short,
    /// Seconds since `since`, when known.
    pub duration: Option<i64>,
    pub messages: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_schedule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_schedule: Option<String>,
}

impl Status {
    fn new(short: Short, since: Option<Timestamp>, messages: Vec<String>) -> Self {
        Self {
            short,
            since,
            messages,
            previous_schedule: None,
            next_schedule: None,
        }
    }

    /// `Running for 2d3h`, `Pending for 40s`, or only the word when the start is unknown.
    pub fn summary(&self, now: Timestamp) -> String {
        match self.since {
            Some(since) => format!("{} for {}", self.short.title(), duration(since, now)),
            None => self.short.title().to_owned(),
        }
    }

    /// The JSON form, with the duration as of `now`.
    pub fn to_json(&self, now: Timestamp) -> StatusJson {
        StatusJson {
            short: self.short,
            duration: self.since.map(|since| (now - since).get_seconds().max(0)),
            messages: self.messages.clone(),
            previous_schedule: self.previous_schedule.map(|time| time.to_string()),
            next_schedule: self.next_schedule.map(|time| time.to_string()),
        }
    }
}

/// `1d2h3m`-style: days, hours, minutes, seconds, zero parts left out and seconds dropped once there are days.
pub fn duration(since: Timestamp, now: Timestamp) -> String {
    let seconds = (now - since).get_seconds().max(0);
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (hours, rest) = (rest / 3_600, rest % 3_600);
    let (minutes, seconds) = (rest / 60, rest % 60);
    let mut parts: Vec<String> = [(days, "d"), (hours, "h"), (minutes, "m")]
        .into_iter()
        .filter(|(value, _)| *value > 0)
        .map(|(value, unit)| format!("{value}{unit}"))
        .collect();
    if days == 0 && (seconds > 0 || parts.is_empty()) {
        parts.push(format!("{seconds}s"));
    }
    parts.concat()
}

/// The namespace's objects a status is computed from, each listed once.
#[derive(Debug, Clone, Copy)]
pub struct Related<'a> {
    pub jobs: &'a [Listed<KubeJob>],
    pub pods: &'a [Pod],
    pub events: &'a [Event],
}

/// The status of the job whose workload is `object`.
pub fn of(object: &LiveObject, related: Related<'_>, now: Timestamp) -> Status {
    match object {
        LiveObject::Job(job) => one_off(job, related),
        LiveObject::CronJob(cron_job) => scheduled(cron_job, related, now),
        LiveObject::Deployment(deployment) => continuous(deployment, related, now),
    }
}

/// The pods of the job whose workload is `object`: a Job's, every run's of a CronJob, a Deployment's; oldest
/// first.
pub fn pods_of<'a>(object: &LiveObject, related: Related<'a>) -> Vec<&'a Pod> {
    let mut pods = match object {
        LiveObject::Job(job) => job_pods(&job.metadata, related.pods),
        LiveObject::CronJob(cron_job) => {
            let uid = cron_job.metadata.uid.as_deref().unwrap_or_default();
            related
                .jobs
                .iter()
                .filter(|job| owned_by(&job.metadata, uid))
                .flat_map(|job| job_pods(&job.metadata, related.pods))
                .collect()
        }
        LiveObject::Deployment(deployment) => deployment_pods(deployment, related.pods),
    };
    pods.sort_by_key(|pod| created(&pod.metadata));
    pods
}

/// The pods of the Job with `metadata`.
fn job_pods<'a>(metadata: &ObjectMeta, pods: &'a [Pod]) -> Vec<&'a Pod> {
    let uid = metadata.uid.as_deref().unwrap_or_default();
    pods.iter()
        .filter(|pod| owned_by(&pod.metadata, uid))
        .collect()
}

/// The pods a Deployment's selector selects (they belong to its replica sets, which are not listed).
fn deployment_pods<'a>(deployment: &Deployment, pods: &'a [Pod]) -> Vec<&'a Pod> {
    let selector = deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.selector.match_labels.clone())
        .unwrap_or_default();
    pods.iter()
        .filter(|pod| {
            let labels = pod.metadata.labels.as_ref();
            !selector.is_empty()
                && selector
                    .iter()
                    .all(|(key, value)| labels.and_then(|labels| labels.get(key)) == Some(value))
        })
        .collect()
}

/// A one-off job, or one run of a scheduled job.
fn one_off(job: &KubeJob, related: Related<'_>) -> Status {
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    let pods = job_pods(&job.metadata, related.pods);
    if let Some(status) = pods_status(&pods).filter(|status| status.short != Short::Unknown) {
        return status;
    }
    let status = job.status.as_ref();
    for condition in status
        .and_then(|status| status.conditions.as_ref())
        .into_iter()
        .flatten()
    {
        if condition.status != "True" {
            continue;
        }
        let since = condition.last_transition_time.as_ref().map(|time| time.0);
        match condition.type_.as_str() {
            "Complete" | "SuccessCriteriaMet" => {
                return Status::new(Short::Succeeded, since, Vec::new());
            }
            "Failed" | "FailureTarget" => {
                let message = [condition.reason.as_deref(), condition.message.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(": ");
                return Status::new(
                    Short::Failed,
                    since,
                    vec![message]
                        .into_iter()
                        .filter(|m| !m.is_empty())
                        .collect(),
                );
            }
            _ => {}
        }
    }
    let active = status.and_then(|status| status.active).unwrap_or(0);
    let ready = status.and_then(|status| status.ready).unwrap_or(0);
    if active > 0 && ready == 0 {
        return Status::new(
            Short::Pending,
            status.and_then(|status| time(status.start_time.as_ref())),
            Vec::new(),
        );
    }
    if let Some(message) = out_of_quota(related.events, uid) {
        return Status::new(Short::Failed, created(&job.metadata), vec![message]);
    }
    Status::new(Short::Unknown, None, Vec::new())
}

/// A scheduled job: its latest run's status, or waiting for the next run.
fn scheduled(cron_job: &CronJob, related: Related<'_>, now: Timestamp) -> Status {
    let uid = cron_job.metadata.uid.as_deref().unwrap_or_default();
    let last_schedule = cron_job
        .status
        .as_ref()
        .and_then(|status| time(status.last_schedule_time.as_ref()));
    let last_success = cron_job
        .status
        .as_ref()
        .and_then(|status| time(status.last_successful_time.as_ref()));
    let latest = related
        .jobs
        .iter()
        .filter(|job| owned_by(&job.metadata, uid))
        .max_by_key(|job| created(&job.metadata));
    let mut status = match latest {
        Some(job) => one_off(&job.decode(), related),
        None => Status::new(
            Short::Pending,
            [last_success, last_schedule, created(&cron_job.metadata)]
                .into_iter()
                .flatten()
                .max(),
            vec!["Waiting for scheduled time".to_owned()],
        ),
    };
    status.previous_schedule =
        last_schedule.or_else(|| latest.and_then(|job| created(&job.metadata)));
    status.next_schedule = cron_job
        .spec
        .as_ref()
        .and_then(|spec| next_run(&spec.schedule, spec.time_zone.as_deref(), now));
    status
}

/// When a CronJob's `schedule` runs next after `after`, in `time_zone` (UTC when `None`); `None` when the schedule
/// or the zone cannot be read, or it never runs.
///
/// Only five fields are read, `7` as Sunday too: the reading status has always had. The loader expands upstream's
/// macros, so toolforge-jobs never sends a descriptor, and a CronJob the API server accepted has no `7`.
fn next_run(schedule: &str, time_zone: Option<&str>, after: Timestamp) -> Option<Timestamp> {
    let schedule =
        toolforge_cron::Schedule::parse_fields(schedule, toolforge_cron::Sunday::ZeroOrSeven)
            .ok()?;
    let zone = match time_zone {
        Some(name) => TimeZone::get(name).ok()?,
        None => TimeZone::UTC,
    };
    schedule.next_after(after, &zone)
}

/// A continuous job (or webservice): running when a pod runs, failed when it cannot start.
fn continuous(deployment: &Deployment, related: Related<'_>, now: Timestamp) -> Status {
    let pods = deployment_pods(deployment, related.pods);
    let classified: Vec<Classified> = pods.iter().map(|pod| classify(pod)).collect();
    if let Some(since) = classified
        .iter()
        .filter(|pod| pod.class == Class::Running)
        .map(|pod| pod.since)
        .min()
    {
        return Status::new(Short::Running, since, Vec::new());
    }
    let status = deployment.status.as_ref();
    let quota = status
        .and_then(|status| status.conditions.as_ref())
        .into_iter()
        .flatten()
        .filter(|condition| condition.type_ == "ReplicaFailure" && condition.status == "True")
        .find_map(|condition| condition.message.as_deref().and_then(quota_message));
    if let Some(message) = quota {
        return Status::new(Short::Failed, created(&deployment.metadata), vec![message]);
    }
    let from_pods = pods_status(&pods);
    let unavailable = status
        .and_then(|status| status.unavailable_replicas)
        .unwrap_or(0);
    let started = restarted_at(deployment).or_else(|| created(&deployment.metadata));
    if unavailable > 0
        && started.is_some_and(|started| {
            started
                .checked_add(UNAVAILABLE_GRACE_SECONDS.seconds())
                .is_ok_and(|deadline| now > deadline)
        })
    {
        let messages = from_pods.map(|status| status.messages).unwrap_or_default();
        return Status::new(Short::Failed, started, messages);
    }
    if let Some(status) = from_pods.filter(|status| status.short != Short::Unknown) {
        return status;
    }
    let replicas = deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.replicas)
        .unwrap_or(1);
    let ready = status.and_then(|status| status.ready_replicas).unwrap_or(0);
    let short = if ready >= replicas {
        Short::Running
    } else {
        Short::Pending
    };
    Status::new(short, started, Vec::new())
}

/// What one pod says, in upstream's classes, most telling first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Failed,
    Scheduling,
    Initializing,
    Running,
    Restarted,
    Succeeded,
    Unknown,
}

impl Class {
    fn short(self) -> Short {
        match self {
            Class::Failed => Short::Failed,
            Class::Scheduling | Class::Initializing | Class::Restarted => Short::Pending,
            Class::Running => Short::Running,
            Class::Succeeded => Short::Succeeded,
            Class::Unknown => Short::Unknown,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Classified {
    class: Class,
    since: Option<Timestamp>,
    messages: Vec<String>,
}

/// The status the pods give, the most telling pod first; `None` without pods.
fn pods_status(pods: &[&Pod]) -> Option<Status> {
    let pod = pods
        .iter()
        .map(|pod| classify(pod))
        .min_by_key(|pod| pod.class)?;
    Some(Status::new(pod.class.short(), pod.since, pod.messages))
}

/// One pod: its most telling container.
fn classify(pod: &Pod) -> Classified {
    let status = pod.status.as_ref();
    let phase = status
        .and_then(|status| status.phase.as_deref())
        .unwrap_or_default();
    let started = status
        .and_then(|status| time(status.start_time.as_ref()))
        .or_else(|| created(&pod.metadata));
    let containers: &[ContainerStatus] = status
        .and_then(|status| status.container_statuses.as_deref())
        .unwrap_or_default();
    if phase == "Pending" && containers.is_empty() {
        let message = status
            .and_then(|status| status.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|condition| condition.type_ == "PodScheduled")
            .find_map(|condition| condition.message.clone());
        return Classified {
            class: Class::Scheduling,
            since: created(&pod.metadata),
            messages: message.into_iter().collect(),
        };
    }
    containers
        .iter()
        .map(|container| classify_container(phase, container, started))
        .min_by_key(|container| container.class)
        .unwrap_or(Classified {
            class: Class::Unknown,
            since: None,
            messages: Vec::new(),
        })
}

fn classify_container(
    phase: &str,
    container: &ContainerStatus,
    started: Option<Timestamp>,
) -> Classified {
    let state = container.state.as_ref();
    let waiting = state.and_then(|state| state.waiting.as_ref());
    let running = state.and_then(|state| state.running.as_ref());
    let terminated = state.and_then(|state| state.terminated.as_ref());
    let last_exit = container
        .last_state
        .as_ref()
        .and_then(|last| last.terminated.as_ref())
        .or(terminated)
        .map(|terminated| format!("exitcode {}", terminated.exit_code));
    let classified = |class, since, messages| Classified {
        class,
        since,
        messages,
    };
    match (phase, waiting, running, terminated) {
        ("Pending", Some(waiting), _, _) => {
            let message = [waiting.reason.as_deref(), waiting.message.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(": ");
            classified(
                Class::Initializing,
                started,
                [message].into_iter().filter(|m| !m.is_empty()).collect(),
            )
        }
        ("Running", _, Some(running), _) => classified(
            Class::Running,
            time(running.started_at.as_ref()).or(started),
            Vec::new(),
        ),
        ("Running", Some(_), _, _) | ("Running", _, _, Some(_)) => classified(
            Class::Restarted,
            started,
            [
                Some(format!("restarted ({})", container.restart_count)),
                last_exit,
            ]
            .into_iter()
            .flatten()
            .collect(),
        ),
        ("Succeeded", ..) => classified(
            Class::Succeeded,
            terminated
                .and_then(|terminated| time(terminated.finished_at.as_ref()))
                .or(started),
            Vec::new(),
        ),
        ("Failed", _, _, Some(terminated)) => classified(
            Class::Failed,
            time(terminated.finished_at.as_ref()).or(started),
            last_exit.into_iter().collect(),
        ),
        _ => classified(Class::Unknown, None, Vec::new()),
    }
}

/// Upstream's "Unable to start, out of quota for …" from a `FailedCreate` Event about the object `uid`.
fn out_of_quota(events: &[Event], uid: &str) -> Option<String> {
    events
        .iter()
        .filter(|event| {
            event.involved_object.uid.as_deref() == Some(uid)
                && event.reason.as_deref() == Some("FailedCreate")
        })
        .find_map(|event| event.message.as_deref().and_then(quota_message))
}

/// "Unable to start, out of quota for cpu, memory" from an admission message `… exceeded quota: NAME, requested:
/// limits.cpu=2,limits.memory=1Gi, used: …`; `None` when the message is not about quota.
fn quota_message(message: &str) -> Option<String> {
    if !message.contains("exceeded quota") {
        return None;
    }
    let resources: BTreeSet<&str> = message
        .split_once("requested: ")
        .map(|(_, rest)| rest.split(", ").next().unwrap_or_default())
        .unwrap_or_default()
        .split(',')
        .filter_map(|item| item.split_once('=').map(|(key, _)| key))
        .map(|key| key.rsplit('.').next().unwrap_or(key))
        .filter(|key| !key.is_empty())
        .collect();
    let resources = if resources.is_empty() {
        "resources".to_owned()
    } else {
        resources.into_iter().collect::<Vec<_>>().join(", ")
    };
    Some(format!("Unable to start, out of quota for {resources}"))
}

/// When the Deployment's pods were last restarted with a rolling restart.
fn restarted_at(deployment: &Deployment) -> Option<Timestamp> {
    let annotations = deployment
        .spec
        .as_ref()?
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?;
    RESTARTED_AT
        .iter()
        .filter_map(|key| annotations.get(*key))
        .find_map(|value| value.parse().ok())
}

fn owned_by(metadata: &ObjectMeta, uid: &str) -> bool {
    metadata
        .owner_references
        .iter()
        .flatten()
        .any(|owner| owner.uid == uid)
}

fn time(time: Option<&Time>) -> Option<Timestamp> {
    time.map(|time| time.0)
}

fn created(metadata: &ObjectMeta) -> Option<Timestamp> {
    time(metadata.creation_timestamp.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: &str = "2026-11-30T12:00:00Z";

    #[test]
    fn next_run_reads_five_fields_in_the_cron_jobs_time_zone() {
        let next = |schedule, zone| next_run(schedule, zone, now()).map(|time| time.to_string());
        assert_eq!(
            next("0 18 * * *", None).as_deref(),
            Some("2026-11-30T18:00:00Z")
        );
        assert_eq!(
            next("0 18 * * *", Some("Europe/Berlin")).as_deref(),
            Some("2026-11-30T17:00:00Z")
        );
        // 2026-11-30 is a Monday.
        assert_eq!(
            next("0 0 * * 7", None).as_deref(),
            Some("2026-12-06T00:00:00Z")
        );
        assert_eq!(next("0 18 * * *", Some("Mars/Olympus")), None);
        assert_eq!(next("@daily", None), None);
        assert_eq!(next("61 * * * *", None), None);
        assert_eq!(next("0 0 31 2 *", None), None);
    }

    fn now() -> Timestamp {
        NOW.parse().unwrap()
    }

    fn pod(owner: &str, phase: &str, containers: &serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-11-30T11:00:00Z",
                "labels": {"app": "bot"}, "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": owner}]},
            "status": {"phase": phase, "startTime": "2026-11-30T11:00:00Z", "containerStatuses": containers}
        }))
        .unwrap()
    }

    fn job(conditions: &serde_json::Value) -> KubeJob {
        serde_json::from_value(json!({
            "metadata": {"name": "j", "uid": "job-uid", "creationTimestamp": "2026-11-30T11:00:00Z"},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    fn one(job: &KubeJob, pods: &[Pod], events: &[Event]) -> Status {
        of(
            &LiveObject::Job(job.clone()),
            Related {
                jobs: &[],
                pods,
                events,
            },
            now(),
        )
    }

    #[test]
    fn durations_read_like_upstreams() {
        let since = |seconds: i64| now().checked_sub(seconds.seconds()).unwrap();
        assert_eq!(duration(since(0), now()), "0s");
        assert_eq!(duration(since(40), now()), "40s");
        assert_eq!(duration(since(3_723), now()), "1h2m3s");
        assert_eq!(duration(since(2 * 86_400 + 3 * 3_600 + 59), now()), "2d3h");
    }

    #[test]
    fn pods_give_the_status_with_upstreams_messages() {
        let running = pod(
            "job-uid",
            "Running",
            &json!([{"name": "job", "image": "i", "ready": true,
            "restartCount": 0, "state": {"running": {"startedAt": "2026-11-30T11:59:00Z"}}}]),
        );
        let status = one(&job(&json!([])), &[running], &[]);
        assert_eq!(
            (status.short, status.summary(now())),
            (Short::Running, "Running for 1m".to_owned())
        );

        let crashing = pod(
            "job-uid",
            "Running",
            &json!([{"name": "job", "image": "i", "ready": false,
            "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 2}}}]),
        );
        let status = one(&job(&json!([])), &[crashing], &[]);
        assert_eq!(status.short, Short::Pending);
        assert_eq!(status.messages, ["restarted (3)", "exitcode 2"]);

        let failed = pod(
            "job-uid",
            "Failed",
            &json!([{"name": "job", "image": "i", "ready": false,
            "restartCount": 0, "state": {"terminated": {"exitCode": 1}}}]),
        );
        let pulling = pod(
            "job-uid",
            "Pending",
            &json!([{"name": "job", "image": "i", "ready": false,
            "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}]),
        );
        let status = one(&job(&json!([])), &[pulling.clone(), failed], &[]);
        assert_eq!(
            (status.short, status.messages),
            (Short::Failed, vec!["exitcode 1".to_owned()]),
            "failed first"
        );
        assert_eq!(
            one(&job(&json!([])), &[pulling], &[]).messages,
            ["ImagePullBackOff: no such image"]
        );

        let other = pod("someone-else", "Failed", &json!([]));
        assert_eq!(
            one(&job(&json!([])), &[other], &[]).short,
            Short::Unknown,
            "not its pod"
        );
    }

    #[test]
    fn without_pods_the_conditions_and_quota_events_decide() {
        let complete = job(&json!([{"type": "Complete", "status": "True",
            "lastTransitionTime": "2026-11-30T11:30:00Z"}]));
        assert_eq!(one(&complete, &[], &[]).summary(now()), "Succeeded for 30m");
        let failed = job(
            &json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit"}]),
        );
        assert_eq!(
            one(&failed, &[], &[]).messages,
            ["BackoffLimitExceeded: Job has reached the specified backoff limit"]
        );
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "e"}, "involvedObject": {"uid": "job-uid"}, "reason": "FailedCreate",
            "message": "pods \"j-x\" is forbidden: exceeded quota: compute, requested: limits.cpu=2,limits.memory=1Gi, used: limits.cpu=4, limited: limits.cpu=4"
        }))
        .unwrap();
        let status = one(&job(&json!([])), &[], &[event]);
        assert_eq!(status.short, Short::Failed);
        assert_eq!(
            status.messages,
            ["Unable to start, out of quota for cpu, memory"]
        );
        assert_eq!(one(&job(&json!([])), &[], &[]).short, Short::Unknown);
    }

    #[test]
    fn scheduled_jobs_wait_for_their_time_or_report_their_latest_run() {
        let cron_job: CronJob = serde_json::from_value(json!({
            "metadata": {"name": "nightly", "uid": "cron-uid", "creationTimestamp": "2026-11-29T00:00:00Z"},
            "spec": {"schedule": "17 3 * * *", "jobTemplate": {}},
            "status": {"lastScheduleTime": "2026-11-30T03:17:00Z"}
        }))
        .unwrap();
        let object = LiveObject::CronJob(cron_job);
        let waiting = of(
            &object,
            Related {
                jobs: &[],
                pods: &[],
                events: &[],
            },
            now(),
        );
        assert_eq!(waiting.short, Short::Pending);
        assert_eq!(waiting.messages, ["Waiting for scheduled time"]);
        assert_eq!(
            waiting
                .previous_schedule
                .map(|time| time.to_string())
                .as_deref(),
            Some("2026-11-30T03:17:00Z")
        );
        assert_eq!(
            waiting
                .next_schedule
                .map(|time| time.to_string())
                .as_deref(),
            Some("2026-12-01T03:17:00Z")
        );
        let mut run = job(&json!([{"type": "Complete", "status": "True"}]));
        run.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "cron-uid"}))
            .unwrap(),
        ]);
        let ran = of(
            &object,
            Related {
                jobs: &[run.into()],
                pods: &[],
                events: &[],
            },
            now(),
        );
        assert_eq!(ran.short, Short::Succeeded);
    }

    #[test]
    fn continuous_jobs_fail_on_quota_and_after_the_grace_period() {
        let deployment = |status: serde_json::Value| -> LiveObject {
            LiveObject::Deployment(serde_json::from_value(json!({
                "metadata": {"name": "bot", "creationTimestamp": "2026-11-30T11:00:00Z"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bot"}}, "template": {}},
                "status": status
            }))
            .unwrap())
        };
        let none = Related {
            jobs: &[],
            pods: &[],
            events: &[],
        };
        let quota = deployment(
            json!({"conditions": [{"type": "ReplicaFailure", "status": "True",
            "reason": "FailedCreate", "message": "pods \"bot-1\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=4, limited: pods=4"}]}),
        );
        assert_eq!(
            of(&quota, none, now()).messages,
            ["Unable to start, out of quota for pods"]
        );
        let stuck = deployment(json!({"unavailableReplicas": 1}));
        assert_eq!(
            of(&stuck, none, now()).short,
            Short::Failed,
            "unavailable for an hour"
        );
        let ready = deployment(json!({"readyReplicas": 1}));
        assert_eq!(of(&ready, none, now()).short, Short::Running);
        let running = pod(
            "rs",
            "Running",
            &json!([{"name": "job", "image": "i", "ready": true,
            "restartCount": 0, "state": {"running": {"startedAt": "2026-11-30T11:00:00Z"}}}]),
        );
        let pods = [running];
        let with_pod = Related {
            jobs: &[],
            pods: &pods,
            events: &[],
        };
        assert_eq!(
            of(&stuck, with_pod, now()).short,
            Short::Running,
            "a running pod wins"
        );
    }
}
