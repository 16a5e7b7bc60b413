//! Reading pods for the awaiters: a pod's most telling container problem ([`problem`]), whether it is an early
//! failure ([`is_fatal`]), which log to show for it, and a short description for progress lines.

use k8s_openapi::api::core::v1::{
    ContainerState as KubeState, ContainerStateTerminated, ContainerStatus, Pod,
};
use kube::ResourceExt;

use super::CRASH_LOOP_RESTARTS;
use super::observe::LogRequest;
use super::report::{ContainerState, PodProblem, Termination, is_crash};

/// Waiting reasons that mean the container will not start without a change (reference §3.6).
const CANNOT_START: [&str; 6] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
];

/// The pod's most telling container problem: a container that cannot start or crash-loops, else one that exited
/// non-zero or was restarted after a failure, else (with `not_ready`) one running but not ready.
pub(crate) fn problem(pod: &Pod, not_ready: bool) -> Option<PodProblem> {
    let problems: Vec<PodProblem> = containers(pod)
        .filter_map(|(container, _)| container_problem(pod, container, not_ready))
        .collect();
    let rank = |problem: &PodProblem| match &problem.state {
        _ if is_fatal(problem) => 0,
        ContainerState::Terminated(_) | ContainerState::Waiting { .. } => 1,
        ContainerState::Running { .. } => 2,
    };
    problems.into_iter().min_by_key(rank)
}

/// The pod's container statuses, init containers first, each with whether it is an init container.
fn containers(pod: &Pod) -> impl Iterator<Item = (&ContainerStatus, bool)> {
    let status = pod.status.as_ref();
    let init = status
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|c| (c, true));
    let main = status
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|c| (c, false));
    init.chain(main)
}

/// How the container's previous run ended, if it ran before.
fn last_termination(container: &ContainerStatus) -> Option<Termination> {
    container
        .last_state
        .as_ref()
        .and_then(|last| last.terminated.as_ref())
        .map(termination)
}

impl PodProblem {
    fn of(
        pod: &Pod,
        container: &ContainerStatus,
        state: ContainerState,
        last_termination: Option<Termination>,
    ) -> PodProblem {
        PodProblem {
            pod: pod.name_any(),
            container: container.name.clone(),
            restarts: container.restart_count,
            state,
            last_termination,
        }
    }
}

fn container_problem(
    pod: &Pod,
    container: &ContainerStatus,
    not_ready: bool,
) -> Option<PodProblem> {
    let state = container.state.as_ref()?;
    let last_termination = last_termination(container);
    let failed_before = last_termination.as_ref().is_some_and(|t| t.exit_code != 0);
    let state = match state {
        KubeState {
            waiting: Some(waiting),
            ..
        } => {
            let reason = waiting.reason.clone().unwrap_or_default();
            if matches!(reason.as_str(), "ContainerCreating" | "PodInitializing") && !failed_before
            {
                return None;
            }
            ContainerState::Waiting {
                reason,
                message: waiting.message.clone(),
            }
        }
        KubeState {
            terminated: Some(terminated),
            ..
        } if terminated.exit_code != 0 => ContainerState::Terminated(termination(terminated)),
        KubeState {
            running: Some(_), ..
        } if failed_before || (not_ready && !container.ready) => ContainerState::Running {
            ready: container.ready,
        },
        _ => return None,
    };
    Some(PodProblem::of(pod, container, state, last_termination))
}

fn termination(terminated: &ContainerStateTerminated) -> Termination {
    Termination {
        reason: terminated.reason.clone().unwrap_or_default(),
        exit_code: terminated.exit_code,
        message: terminated.message.clone(),
    }
}

/// The crash of a Deployment pod's container, whose restart policy is `Always`, as a problem: it waits in
/// `CrashLoopBackOff` or `RunContainerError`; it exited (with any code; an init container: a non-zero one) and is
/// about to be restarted; its `restartCount` rose above `first_restarts(container)`, the count when the wait first
/// saw it; or it was restarted before and is not running Ready now.
pub(crate) fn crash(pod: &Pod, first_restarts: impl Fn(&str) -> Option<i32>) -> Option<PodProblem> {
    containers(pod).find_map(|(container, init)| {
        let state = container.state.as_ref()?;
        let last_termination = last_termination(container);
        let rose =
            first_restarts(&container.name).is_some_and(|first| container.restart_count > first);
        let restarted = container.restart_count > 0 && last_termination.is_some();
        let state = match state {
            KubeState {
                waiting: Some(waiting),
                ..
            } => {
                let reason = waiting.reason.clone().unwrap_or_default();
                if !(is_crash(&reason) || rose || (restarted && !init)) {
                    return None;
                }
                ContainerState::Waiting {
                    reason,
                    message: waiting.message.clone(),
                }
            }
            KubeState {
                terminated: Some(terminated),
                ..
            } => {
                if init && terminated.exit_code == 0 && !rose {
                    return None;
                }
                ContainerState::Terminated(termination(terminated))
            }
            KubeState {
                running: Some(_), ..
            } => {
                if !(rose || (restarted && !container.ready)) {
                    return None;
                }
                ContainerState::Running {
                    ready: container.ready,
                }
            }
            KubeState { .. } => return None,
        };
        Some(PodProblem::of(pod, container, state, last_termination))
    })
}

/// Whether the pod is Ready: its `Ready` condition, else (none yet) every container's readiness.
pub(crate) fn ready(pod: &Pod) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    if let Some(condition) = status
        .conditions
        .iter()
        .flatten()
        .find(|condition| condition.type_ == "Ready")
    {
        return condition.status == "True";
    }
    let containers = status.container_statuses.as_deref().unwrap_or_default();
    !containers.is_empty() && containers.iter().all(|container| container.ready)
}

/// Whether the problem fails the wait now: the container cannot start, or it keeps crashing past the grace.
pub(crate) fn is_fatal(problem: &PodProblem) -> bool {
    match &problem.state {
        ContainerState::Waiting { reason, .. } => {
            CANNOT_START.contains(&reason.as_str())
                || (is_crash(reason) && problem.restarts >= CRASH_LOOP_RESTARTS)
        }
        ContainerState::Running { .. } | ContainerState::Terminated(_) => false,
    }
}

/// Which log shows the problem: the last run that ended, or the current one; none for a container that never
/// started.
pub(crate) fn log_request(problem: &PodProblem) -> Option<LogRequest> {
    let ran = match &problem.state {
        ContainerState::Terminated(_) | ContainerState::Running { .. } => true,
        ContainerState::Waiting { .. } => problem.restarts > 0,
    };
    ran.then(|| LogRequest {
        pod: problem.pod.clone(),
        container: problem.container.clone(),
        previous: problem.restarts > 0 && !matches!(problem.state, ContainerState::Terminated(_)),
    })
}

/// A short description of a pod that has not started: its waiting reason, or why it is not scheduled.
pub(crate) fn pending(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let waiting = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .find_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone());
    if let Some(reason) = waiting {
        return format!("pod `{}` is waiting: {reason}", pod.name_any());
    }
    let unscheduled = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    match unscheduled {
        Some(condition) => format!(
            "pod `{}` is not scheduled: {}",
            pod.name_any(),
            condition
                .message
                .clone()
                .or_else(|| condition.reason.clone())
                .unwrap_or_default()
        ),
        None => format!("pod `{}` is pending", pod.name_any()),
    }
}

/// The pod's phase (`Pending` when it has none yet).
pub(crate) fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

/// Whether the pod is being deleted.
pub(crate) fn deleting(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A pod named `name` whose one container `main` has this `state`, `lastState` and `restartCount`.
    pub(crate) fn pod(name: &str, state: &Value, last: &Value, restarts: i32) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "uid": format!("uid-{name}")},
            "status": {"phase": "Running", "containerStatuses": [{
                "name": "main", "image": "i", "imageID": "", "ready": false,
                "restartCount": restarts, "state": state, "lastState": last}]}
        }))
        .expect("valid pod")
    }

    #[test]
    fn image_pull_and_config_errors_are_fatal_at_once() {
        for reason in [
            "ErrImagePull",
            "ImagePullBackOff",
            "CreateContainerConfigError",
        ] {
            let pod = pod("p", &json!({"waiting": {"reason": reason}}), &json!({}), 0);
            let problem = problem(&pod, false).expect("a problem");
            assert!(is_fatal(&problem), "{reason}");
            assert_eq!(log_request(&problem), None, "never started: no log");
        }
    }

    #[test]
    fn a_crash_loop_is_fatal_only_after_the_grace_restarts() {
        let crash = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        let last = json!({"terminated": {"exitCode": 1, "reason": "Error"}});
        let young = problem(&pod("p", &crash, &last, 1), false).expect("a problem");
        assert!(!is_fatal(&young));
        let old = problem(&pod("p", &crash, &last, CRASH_LOOP_RESTARTS), false).expect("a problem");
        assert!(is_fatal(&old));
        assert_eq!(
            log_request(&old),
            Some(LogRequest {
                pod: "p".to_owned(),
                container: "main".to_owned(),
                previous: true
            })
        );
    }

    #[test]
    fn a_normal_start_and_a_clean_exit_are_no_problem() {
        let creating = pod(
            "p",
            &json!({"waiting": {"reason": "ContainerCreating"}}),
            &json!({}),
            0,
        );
        assert_eq!(problem(&creating, true), None);
        let done = pod(
            "p",
            &json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
            &json!({}),
            0,
        );
        assert_eq!(problem(&done, true), None);
        let running = pod("p", &json!({"running": {}}), &json!({}), 0);
        assert_eq!(problem(&running, false), None);
        assert!(
            problem(&running, true).is_some(),
            "not ready counts when asked"
        );
    }

    #[test]
    fn a_failed_run_reports_its_exit_code_and_reads_the_current_log() {
        let failed = pod(
            "p",
            &json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
            &json!({}),
            0,
        );
        let problem = problem(&failed, false).expect("a problem");
        assert!(!is_fatal(&problem), "the Job controller decides");
        assert_eq!(
            problem.state,
            ContainerState::Terminated(Termination {
                reason: "OOMKilled".to_owned(),
                exit_code: 137,
                message: None
            })
        );
        assert_eq!(log_request(&problem).map(|r| r.previous), Some(false));
    }
}
