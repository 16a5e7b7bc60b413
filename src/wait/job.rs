//! Waiting for a one-off's Job ([`job`]): success on `Complete`/`SuccessCriteriaMet`, failure on
//! `Failed`/`FailureTarget` with any reason, early failure on a pod that cannot start or keeps crashing and on
//! `FailedCreate` Events while the Job has no pod; a Job that vanishes is "finished and cleaned up" only when it
//! was last seen succeeded.
//!
//! The judge ([`judge`]) is a pure function of what the watches saw, tested below without a cluster.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::{Client, ResourceExt};
use tokio::time::Instant;

use super::observe::{Decision, LogRequest, Observed, Selectors, Step, Watches, last_seen};
use super::pods;
use super::report::{self, Cause, FailureReport, MAX_PODS, TargetKind};
use super::{JobTarget, Outcome, Phase, WaitError, WaitProgress};

/// Waits until the Job `target` (by UID) finished, failed, vanished, or `deadline` passed; `progress` gets each
/// change of phase or message. A failure's report includes the last lines of the failing pod's log (or of
/// `target.file_log`).
pub async fn job(
    client: &Client,
    target: &JobTarget,
    deadline: Instant,
    progress: &mut (dyn FnMut(&WaitProgress) + Send),
) -> Result<Outcome, WaitError> {
    let started = Instant::now();
    let watches = Watches::open(
        client,
        &target.namespace,
        &Selectors {
            jobs: Some(format!("metadata.name={}", target.name)),
            pods: Some(format!("batch.kubernetes.io/controller-uid={}", target.uid)),
            ..Selectors::default()
        },
    );
    let finish = watches
        // A Job's verdict is its controller's condition: nothing to settle.
        .drive(started, deadline, Duration::ZERO, progress, |observed| {
            judge(observed, target)
        })
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &target.namespace);
    Ok(report::conclude(finish, &pods, target.file_log.as_deref(), deadline).await)
}

/// Where the Job stands, or the verdict.
fn judge(observed: &Observed, target: &JobTarget) -> Step {
    let Some(job) = observed.jobs.get(&target.uid) else {
        let replaced = observed
            .jobs
            .current()
            .any(|other| other.name_any() == target.name);
        let last = observed.jobs.gone(&target.uid);
        return Step::Done(match last.and_then(terminal) {
            Some(Terminal::Succeeded) => Decision::CleanedUp,
            Some(Terminal::Failed(cause)) => failed(observed, target, cause),
            None => failed(observed, target, Cause::Deleted { replaced }),
        });
    };
    match terminal(job) {
        Some(Terminal::Succeeded) => return Step::Done(Decision::Succeeded),
        Some(Terminal::Failed(cause)) => return Step::Done(failed(observed, target, cause)),
        None => {}
    }
    if job.metadata.deletion_timestamp.is_some() {
        return Step::Done(failed(observed, target, Cause::Deleted { replaced: false }));
    }
    let live: Vec<&Pod> = observed
        .pods
        .current()
        .filter(|pod| !pods::deleting(pod))
        .collect();
    if let Some(problem) = live
        .iter()
        .filter_map(|pod| pods::problem(pod, false))
        .find(pods::is_fatal)
    {
        let cause = Cause::Pod {
            pod: problem.pod.clone(),
            reason: problem.reason().to_owned(),
        };
        return Step::Done(failed(observed, target, cause));
    }
    // A refusal counts while the Job has no pod, and only when no pod was created after it (a retry since).
    let newest_pod = observed
        .pods
        .all()
        .filter_map(|pod| Some(pod.metadata.creation_timestamp.as_ref()?.0))
        .max();
    let status = job.status.clone().unwrap_or_default();
    if status.active.unwrap_or(0) == 0
        && let Some(event) = observed
            .warnings_about(&[target.uid.as_str()])
            .into_iter()
            .rev()
            .find(|event| event.reason.as_deref() == Some("FailedCreate"))
        && newest_pod.is_none_or(|created| last_seen(event).is_none_or(|seen| seen >= created))
    {
        let cause = Cause::FailedCreate {
            message: event.message.clone().unwrap_or_default(),
        };
        return Step::Done(failed(observed, target, cause));
    }
    let (phase, message) = where_it_stands(job, &live);
    Step::Wait(phase, message)
}

fn where_it_stands(job: &Job, live: &[&Pod]) -> (Phase, String) {
    let spec = job.spec.clone().unwrap_or_default();
    let status = job.status.clone().unwrap_or_default();
    let failures = status.failed.unwrap_or(0);
    let so_far = match failures {
        0 => String::new(),
        1 => " (1 pod failed so far)".to_owned(),
        n => format!(" ({n} pods failed so far)"),
    };
    if spec.suspend == Some(true) {
        return (Phase::Starting, "the Job is suspended".to_owned());
    }
    if let Some(pod) = live.iter().find(|pod| pods::phase(pod) == "Running") {
        let restarts = pods::problem(pod, false)
            .filter(|problem| problem.restarts > 0)
            .map(|problem| match problem.restarts {
                1 => ", restarted once".to_owned(),
                n => format!(", restarted {n} times"),
            })
            .unwrap_or_default();
        return (
            Phase::Running,
            format!("pod `{}` is running{restarts}{so_far}", pod.name_any()),
        );
    }
    if let Some(pod) = live.iter().find(|pod| pods::phase(pod) == "Pending") {
        return (Phase::Starting, format!("{}{so_far}", pods::pending(pod)));
    }
    // A pod ended and the Job controller has not counted it yet: its verdict is a moment away.
    let failed_pods = live
        .iter()
        .filter(|pod| pods::phase(pod) == "Failed")
        .count();
    let uncounted = live
        .iter()
        .find(|pod| pods::phase(pod) == "Succeeded")
        .or_else(|| {
            (i64::try_from(failed_pods).unwrap_or(i64::MAX) > i64::from(failures))
                .then(|| live.iter().find(|pod| pods::phase(pod) == "Failed"))
                .flatten()
        });
    if let Some(pod) = uncounted {
        return (
            Phase::Running,
            format!(
                "pod `{}` {}; waiting for the Job controller to count it{so_far}",
                pod.name_any(),
                pods::phase(pod).to_lowercase()
            ),
        );
    }
    if failures > 0 {
        let limit = spec.backoff_limit.unwrap_or(6);
        return (
            Phase::Retrying,
            format!(
                "{failures} of at most {} pods failed, waiting to retry",
                limit + 1
            ),
        );
    }
    (
        Phase::Starting,
        "waiting for the Job controller to create a pod".to_owned(),
    )
}

/// How a Job ended, in the inventory's terms; `None` while it runs. The `watch` daemon records it.
pub fn finished(job: &Job) -> Option<crate::model::inventory::RunOutcome> {
    terminal(job).map(|terminal| match terminal {
        Terminal::Succeeded => crate::model::inventory::RunOutcome::Succeeded,
        Terminal::Failed(_) => crate::model::inventory::RunOutcome::Failed,
    })
}

/// A Job's terminal state, from its conditions.
enum Terminal {
    Succeeded,
    Failed(Cause),
}

fn terminal(job: &Job) -> Option<Terminal> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let holds = |types: [&str; 2]| {
        conditions
            .iter()
            .find(|c| types.contains(&c.type_.as_str()) && c.status == "True")
    };
    if holds(["Complete", "SuccessCriteriaMet"]).is_some() {
        return Some(Terminal::Succeeded);
    }
    holds(["Failed", "FailureTarget"]).map(|condition| {
        Terminal::Failed(Cause::Condition {
            type_: condition.type_.clone(),
            reason: condition.reason.clone().unwrap_or_default(),
            message: condition.message.clone().unwrap_or_default(),
        })
    })
}

/// The failure report for `cause`: every pod of the Job that failed (newest first), the Warning Events about the
/// Job and those pods, and which log to read.
fn failed(observed: &Observed, target: &JobTarget, cause: Cause) -> Decision {
    let mut failing: Vec<(&Pod, report::PodProblem)> = observed
        .pods
        .all()
        .filter_map(|pod| Some((pod, pods::problem(pod, false)?)))
        .collect();
    failing.sort_by_key(|(pod, problem)| {
        let caused = matches!(&cause, Cause::Pod { pod, .. } if *pod == problem.pod);
        (
            !caused,
            std::cmp::Reverse(pod.metadata.creation_timestamp.clone()),
        )
    });
    let more_pods = failing.len().saturating_sub(MAX_PODS);
    let problems: Vec<report::PodProblem> = failing
        .into_iter()
        .take(MAX_PODS)
        .map(|(_, problem)| problem)
        .collect();
    let request: Option<LogRequest> = problems.first().and_then(pods::log_request);
    let mut uids: Vec<&str> = vec![target.uid.as_str()];
    uids.extend(
        observed
            .pods
            .all()
            .filter(|pod| problems.iter().any(|p| p.pod == pod.name_any()))
            .filter_map(|pod| pod.metadata.uid.as_deref()),
    );
    let events = report::relevant_events(observed, &uids, &cause, &problems);
    Decision::Failed(
        Box::new(FailureReport {
            job: target.job.clone(),
            workload: TargetKind::Job,
            object: target.name.clone(),
            cause,
            pods: problems,
            more_pods,
            events,
            log: None,
            full_log: None,
        }),
        request,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::runtime::watcher::Event::{Apply, Delete};

    use crate::wait::observe::tests::{event, observed};
    use crate::wait::pods::tests::pod;

    fn target() -> JobTarget {
        JobTarget {
            job: "backup".to_owned(),
            namespace: "tool-x".to_owned(),
            name: "backup".to_owned(),
            uid: "u1".to_owned(),
            file_log: None,
        }
    }

    fn job(uid: &str, status: &Value) -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": "backup", "uid": uid},
            "spec": {"backoffLimit": 2, "template": {}},
            "status": status,
        }))
        .expect("valid job")
    }

    fn condition(type_: &str, reason: &str) -> Value {
        json!({"conditions": [{"type": type_, "status": "True", "reason": reason, "message": "m"}]})
    }

    #[test]
    fn complete_or_success_criteria_met_succeeds() {
        for type_ in ["Complete", "SuccessCriteriaMet"] {
            let mut seen = observed();
            seen.jobs
                .apply(Apply(job("u1", &condition(type_, "CompletionsReached"))));
            assert_eq!(
                judge(&seen, &target()),
                Step::Done(Decision::Succeeded),
                "{type_}"
            );
        }
    }

    #[test]
    fn failed_or_failure_target_fails_with_its_reason() {
        for type_ in ["Failed", "FailureTarget"] {
            let mut seen = observed();
            seen.jobs
                .apply(Apply(job("u1", &condition(type_, "DeadlineExceeded"))));
            let Step::Done(Decision::Failed(report, _)) = judge(&seen, &target()) else {
                panic!("not failed");
            };
            assert_eq!(report.cause.reason(), "DeadlineExceeded");
        }
    }

    #[test]
    fn a_job_with_another_uid_is_not_ours() {
        let mut seen = observed();
        seen.jobs
            .apply(Apply(job("u2", &condition("Complete", ""))));
        let Step::Done(Decision::Failed(report, _)) = judge(&seen, &target()) else {
            panic!("not failed");
        };
        assert_eq!(report.cause, Cause::Deleted { replaced: true });
    }

    #[test]
    fn a_vanished_job_last_seen_succeeded_was_cleaned_up_and_otherwise_failed() {
        let mut seen = observed();
        seen.jobs.apply(Apply(job("u1", &json!({"active": 1}))));
        seen.jobs
            .apply(Delete(job("u1", &condition("Complete", ""))));
        assert_eq!(judge(&seen, &target()), Step::Done(Decision::CleanedUp));

        let mut seen = observed();
        seen.jobs.apply(Apply(job("u1", &json!({"active": 1}))));
        seen.jobs.apply(Delete(job("u1", &json!({"active": 1}))));
        let Step::Done(Decision::Failed(report, _)) = judge(&seen, &target()) else {
            panic!("not failed");
        };
        assert_eq!(report.cause, Cause::Deleted { replaced: false });
    }

    #[test]
    fn a_pod_that_ended_before_the_controller_counted_it_is_not_waiting_for_a_pod() {
        for (phase, counted, message) in [
            (
                "Succeeded",
                json!({}),
                "pod `backup-a` succeeded; waiting for the Job controller to count it",
            ),
            (
                "Failed",
                json!({}),
                "pod `backup-a` failed; waiting for the Job controller to count it",
            ),
            (
                "Failed",
                json!({"failed": 1}),
                "1 of at most 3 pods failed, waiting to retry",
            ),
        ] {
            let mut seen = observed();
            seen.jobs.apply(Apply(job("u1", &counted)));
            let mut ended = pod(
                "backup-a",
                &json!({"terminated": {"exitCode": 0}}),
                &json!({}),
                0,
            );
            if let Some(status) = ended.status.as_mut() {
                status.phase = Some(phase.to_owned());
            }
            seen.pods.apply(Apply(ended));
            let Step::Wait(_, said) = judge(&seen, &target()) else {
                panic!("{phase}: not waiting");
            };
            assert_eq!(said, message, "{phase} {counted}");
        }
    }

    #[test]
    fn an_image_pull_error_fails_early_and_a_running_pod_waits() {
        let mut seen = observed();
        seen.jobs.apply(Apply(job("u1", &json!({"active": 1}))));
        seen.pods.apply(Apply(pod(
            "backup-a",
            &json!({"running": {}}),
            &json!({}),
            0,
        )));
        assert_eq!(
            judge(&seen, &target()),
            Step::Wait(Phase::Running, "pod `backup-a` is running".to_owned())
        );
        seen.pods.apply(Apply(pod(
            "backup-a",
            &json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}),
            &json!({}),
            0,
        )));
        let Step::Done(Decision::Failed(report, log)) = judge(&seen, &target()) else {
            panic!("not failed");
        };
        assert_eq!(
            report.cause,
            Cause::Pod {
                pod: "backup-a".to_owned(),
                reason: "ImagePullBackOff".to_owned()
            }
        );
        assert_eq!(log, None);
    }

    #[test]
    fn failed_create_fails_only_while_the_job_has_no_active_pod() {
        let quota = event(
            "u1",
            "Job",
            "FailedCreate",
            "Error creating: exceeded quota",
        );
        let mut seen = observed();
        seen.jobs.apply(Apply(job("u1", &json!({"active": 1}))));
        seen.events.apply(Apply(quota.clone()));
        assert!(matches!(judge(&seen, &target()), Step::Wait(..)));
        seen.jobs.apply(Apply(job("u1", &json!({}))));
        let Step::Done(Decision::Failed(report, _)) = judge(&seen, &target()) else {
            panic!("not failed");
        };
        assert_eq!(
            report.cause,
            Cause::FailedCreate {
                message: "Error creating: exceeded quota".to_owned()
            }
        );
        assert!(
            report.events.is_empty(),
            "the cause is not repeated: {:?}",
            report.events
        );
    }

    #[test]
    fn a_failed_create_older_than_the_newest_pod_is_not_a_failure() {
        let mut refused = event(
            "u1",
            "Job",
            "FailedCreate",
            "Internal error occurred: webhook timed out",
        );
        refused.last_timestamp = Some(Time("2026-01-01T10:00:00Z".parse().expect("time")));
        let mut retried = pod(
            "backup-b",
            &json!({"terminated": {"exitCode": 1, "reason": "Error"}}),
            &json!({}),
            0,
        );
        retried.metadata.creation_timestamp =
            Some(Time("2026-01-01T10:00:05Z".parse().expect("time")));
        retried.status.as_mut().expect("status").phase = Some("Failed".to_owned());
        let mut seen = observed();
        seen.jobs.apply(Apply(job("u1", &json!({"failed": 1}))));
        seen.events.apply(Apply(refused));
        seen.pods.apply(Apply(retried));
        assert!(matches!(
            judge(&seen, &target()),
            Step::Wait(Phase::Retrying, _)
        ));
    }

    #[test]
    fn progress_counts_failures_while_retrying() {
        let mut seen = observed();
        seen.jobs.apply(Apply(job("u1", &json!({"failed": 1}))));
        assert_eq!(
            judge(&seen, &target()),
            Step::Wait(
                Phase::Retrying,
                "1 of at most 3 pods failed, waiting to retry".to_owned()
            )
        );
    }
}
