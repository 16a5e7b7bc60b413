//! Waiting for a continuous job's Deployment to roll out our write ([`deployment`]): rolled out once
//! `observedGeneration` reached our generation, every replica is updated and available with no old replica left,
//! and every pod of the new `ReplicaSet` has stayed Ready without a restart for the settle period
//! ([`super::ROLLOUT_SETTLE`]); failure on `Progressing=False` `ProgressDeadlineExceeded` or `ReplicaFailure`;
//! early failure when a pod of the new `ReplicaSet` cannot start or crashes — any restart seen during the wait, a
//! container waiting in `CrashLoopBackOff`, an exited container, or one restarted before that is not running Ready
//! — or the new `ReplicaSet`'s pods cannot be created (`FailedCreate`). Pods of older `ReplicaSet`s never fail the
//! wait: a rollout often replaces crashing pods.
//!
//! The judge ([`judge`]) is a pure function of what the watches saw, tested below without a cluster; the settle
//! period is timed by [`Watches::drive`].

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::{Client, Resource, ResourceExt};
use tokio::time::Instant;

use super::observe::{Decision, LogRequest, Observed, Selectors, Step, Watches};
use super::pods;
use super::report::{self, Cause, ContainerState, FailureReport, MAX_PODS, TargetKind};
use super::{DeploymentTarget, Outcome, Phase, ROLLOUT_SETTLE, WaitError, WaitProgress};

/// The annotation with which the Deployment controller numbers a Deployment's and its `ReplicaSet`s' revisions.
const REVISION: &str = "deployment.kubernetes.io/revision";
/// The reason of a crash seen by its restart rather than by the kubelet's waiting state.
const CRASH_LOOP: &str = "CrashLoopBackOff";

/// Waits until the Deployment `target` rolled out generation `target.generation` (or later) and its new pods stayed
/// up for [`ROLLOUT_SETTLE`], failed, vanished, or `deadline` passed; `progress` gets each change of phase or
/// message.
pub async fn deployment(
    client: &Client,
    target: &DeploymentTarget,
    deadline: Instant,
    progress: &mut (dyn FnMut(&WaitProgress) + Send),
) -> Result<Outcome, WaitError> {
    deployment_settling(client, target, ROLLOUT_SETTLE, deadline, progress).await
}

/// [`deployment`] with another settle period: how long the new pods must stay Ready without a restart.
pub async fn deployment_settling(
    client: &Client,
    target: &DeploymentTarget,
    settle: Duration,
    deadline: Instant,
    progress: &mut (dyn FnMut(&WaitProgress) + Send),
) -> Result<Outcome, WaitError> {
    let started = Instant::now();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &target.namespace);
    // One read for the pod selector; the verdict comes only from the watches opened after it.
    let found = match read(&deployments, &target.name, deadline).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Ok(Outcome::TimedOut(WaitProgress {
                phase: Phase::Watching,
                message: format!("reading Deployment `{}`", target.name),
                elapsed: started.elapsed(),
            }));
        }
        Err(source) => {
            return Err(WaitError::Read {
                name: target.name.clone(),
                namespace: target.namespace.clone(),
                source,
            });
        }
    };
    let Some(current) = found
        .as_ref()
        .filter(|d| d.uid().as_deref() == Some(target.uid.as_str()))
    else {
        let replaced = found.is_some();
        return Ok(Outcome::Failed(Box::new(report(
            target,
            Cause::Deleted { replaced },
        ))));
    };
    let selector = match_labels(current);
    let watches = Watches::open(
        client,
        &target.namespace,
        &Selectors {
            deployments: Some(format!("metadata.name={}", target.name)),
            replica_sets: Some(selector.clone()),
            pods: Some(selector),
            ..Selectors::default()
        },
    );
    let finish = watches
        .drive(started, deadline, settle, progress, |observed| {
            judge(observed, target, settle)
        })
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &target.namespace);
    Ok(report::conclude(finish, &pods, target.file_log.as_deref(), deadline).await)
}

/// Reads the Deployment (`Some(None)`: it does not exist), retrying transient errors (5xx, 429, no connection)
/// with back-off; `None` when `deadline` passed first.
async fn read(
    deployments: &Api<Deployment>,
    name: &str,
    deadline: Instant,
) -> Result<Option<Option<Deployment>>, kube::Error> {
    let mut pause = Duration::from_millis(100);
    loop {
        match tokio::time::timeout_at(deadline, deployments.get_opt(name)).await {
            Err(_) => return Ok(None),
            Ok(Ok(found)) => return Ok(Some(found)),
            Ok(Err(error)) if is_transient(&error) && Instant::now() + pause < deadline => {
                tracing::debug!(%error, "reading the Deployment failed, retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            Ok(Err(error)) => return Err(error),
        }
    }
}

fn is_transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// The Deployment's `matchLabels` as a label selector (empty: none; pods are matched by owner anyway).
fn match_labels(deployment: &Deployment) -> String {
    deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.selector.match_labels.as_ref())
        .map_or_else(String::new, crate::model::labels::selector_text)
}

/// Where the rollout stands, or the verdict; [`Step::Settle`] once it looks rolled out (the driver waits `settle`).
fn judge(observed: &Observed, target: &DeploymentTarget, settle: Duration) -> Step {
    let Some(deployment) = observed.deployments.get(&target.uid) else {
        let replaced = observed
            .deployments
            .current()
            .any(|other| other.name_any() == target.name);
        return Step::Done(failed(observed, target, None, Cause::Deleted { replaced }));
    };
    if deployment.metadata.deletion_timestamp.is_some() {
        return Step::Done(failed(
            observed,
            target,
            None,
            Cause::Deleted { replaced: false },
        ));
    }
    let status = deployment.status.clone().unwrap_or_default();
    if status.observed_generation.unwrap_or(0) < target.generation {
        return Step::Wait(
            Phase::Observing,
            format!(
                "waiting for the Deployment controller to observe generation {}",
                target.generation
            ),
        );
    }
    let new_set = new_replica_set(observed, deployment);
    let new_pods: Vec<&Pod> = new_set
        .map(|set| {
            observed
                .pods
                .current()
                .filter(|pod| owned_by(*pod, set.uid().as_deref()) && !pods::deleting(pod))
                .collect()
        })
        .unwrap_or_default();
    if let Some(cause) = gave_up(deployment)
        .or_else(|| crash_loop(observed, &new_pods))
        .or_else(|| early_failure(observed, new_set, &new_pods))
    {
        return Step::Done(failed(observed, target, new_set, cause));
    }
    let want = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let updated = status.updated_replicas.unwrap_or(0);
    let replicas = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let old: i32 = observed
        .replica_sets
        .current()
        .filter(|set| owned_by(*set, Some(&target.uid)))
        .filter(|set| new_set.is_none_or(|new| new.uid() != set.uid()))
        .map(|set| set.status.as_ref().map_or(0, |s| s.replicas))
        .sum();
    let message = if updated < want {
        format!("{updated} of {want} new replicas updated")
    } else if replicas > updated {
        format!(
            "{} old replicas are pending termination",
            replicas - updated
        )
    } else if available < updated {
        format!("{available} of {updated} updated replicas are available")
    } else if old > 0 {
        format!("{old} old replicas are stopping")
    } else if let Some(pod) = new_pods.iter().find(|pod| !pods::ready(pod)) {
        format!("pod `{}` is not ready", pod.name_any())
    } else if new_pods.len() < usize::try_from(want).unwrap_or(0) {
        format!("{} of {want} new pods seen", new_pods.len())
    } else {
        let mut uids: Vec<String> = new_pods.iter().filter_map(|pod| pod.uid()).collect();
        uids.sort();
        return Step::Settle(
            uids,
            format!(
                "{want} of {want} new replicas are available; checking that they stay up without a restart \
                 for {settle:?}"
            ),
        );
    };
    let detail = new_pods.iter().find_map(|pod| {
        if pods::phase(pod) == "Pending" {
            Some(pods::pending(pod))
        } else {
            pods::problem(pod, false).map(|problem| problem.to_string())
        }
    });
    Step::Wait(
        Phase::RollingOut,
        match detail {
            Some(detail) => format!("{message}; {detail}"),
            None => message,
        },
    )
}

/// The controller's own failure: `Progressing=False` `ProgressDeadlineExceeded`, or `ReplicaFailure=True`.
fn gave_up(deployment: &Deployment) -> Option<Cause> {
    let conditions = deployment.status.as_ref()?.conditions.as_ref()?;
    let condition = conditions.iter().find(|condition| {
        (condition.type_ == "Progressing"
            && condition.status == "False"
            && condition.reason.as_deref() == Some("ProgressDeadlineExceeded"))
            || (condition.type_ == "ReplicaFailure" && condition.status == "True")
    })?;
    Some(Cause::Condition {
        type_: condition.type_.clone(),
        reason: condition.reason.clone().unwrap_or_default(),
        message: condition.message.clone().unwrap_or_default(),
    })
}

/// A crash of a new pod ([`pods::crash`]): a crash loop however long each run lives and whatever its exit code.
fn crash_loop(observed: &Observed, new_pods: &[&Pod]) -> Option<Cause> {
    new_pods.iter().find_map(|pod| {
        let uid = pod.uid().unwrap_or_default();
        let problem = pods::crash(pod, |container| observed.first_restarts(&uid, container))?;
        let reason = match &problem.state {
            ContainerState::Waiting { reason, .. } if report::is_crash(reason) => reason.clone(),
            _ => CRASH_LOOP.to_owned(),
        };
        Some(Cause::Pod {
            pod: problem.pod,
            reason,
        })
    })
}

/// A failure the controller would retry forever: a new pod that cannot start or keeps crashing, or a
/// `FailedCreate` Event about the new `ReplicaSet` while it lacks pods.
fn early_failure(
    observed: &Observed,
    new_set: Option<&ReplicaSet>,
    new_pods: &[&Pod],
) -> Option<Cause> {
    if let Some(problem) = new_pods
        .iter()
        .filter_map(|pod| pods::problem(pod, false))
        .find(pods::is_fatal)
    {
        return Some(Cause::Pod {
            pod: problem.pod.clone(),
            reason: problem.reason().to_owned(),
        });
    }
    let set = new_set?;
    let lacking = set.status.as_ref().map_or(0, |s| s.replicas)
        < set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let uid = set.uid()?;
    let event = observed
        .warnings_about(&[uid.as_str()])
        .into_iter()
        .rev()
        .find(|event| event.reason.as_deref() == Some("FailedCreate"))
        .filter(|_| lacking)?;
    Some(Cause::FailedCreate {
        message: event.message.clone().unwrap_or_default(),
    })
}

/// The `ReplicaSet` of the Deployment's current revision.
fn new_replica_set<'a>(observed: &'a Observed, deployment: &Deployment) -> Option<&'a ReplicaSet> {
    let revision = deployment.annotations().get(REVISION)?;
    observed.replica_sets.current().find(|set| {
        owned_by(*set, deployment.uid().as_deref())
            && set.annotations().get(REVISION) == Some(revision)
    })
}

fn owned_by<K: Resource>(object: &K, owner: Option<&str>) -> bool {
    owner.is_some_and(|owner| {
        object
            .meta()
            .owner_references
            .iter()
            .flatten()
            .any(|reference| reference.uid == owner)
    })
}

/// The failure report for `cause`: the new `ReplicaSet`'s failing or unready pods, the Warning Events about the
/// Deployment, that `ReplicaSet` and those pods, and which log to read.
fn failed(
    observed: &Observed,
    target: &DeploymentTarget,
    new_set: Option<&ReplicaSet>,
    cause: Cause,
) -> Decision {
    let set_uid = new_set.and_then(ResourceExt::uid);
    let mut failing: Vec<(&Pod, report::PodProblem)> = observed
        .pods
        .current()
        .filter(|pod| owned_by(*pod, set_uid.as_deref()))
        .filter_map(|pod| {
            let uid = pod.uid().unwrap_or_default();
            let crash = pods::crash(pod, |container| observed.first_restarts(&uid, container));
            Some((pod, crash.or_else(|| pods::problem(pod, true))?))
        })
        .collect();
    let cause_pod = match &cause {
        Cause::Pod { pod, .. } => Some(pod.clone()),
        _ => None,
    };
    failing.sort_by_key(|(pod, problem)| {
        (
            cause_pod.as_ref() != Some(&problem.pod),
            !pods::is_fatal(problem),
            std::cmp::Reverse(pod.metadata.creation_timestamp.clone()),
        )
    });
    let more_pods = failing.len().saturating_sub(MAX_PODS);
    let mut uids: Vec<String> = vec![target.uid.clone()];
    uids.extend(set_uid);
    let problems: Vec<report::PodProblem> = failing
        .into_iter()
        .take(MAX_PODS)
        .map(|(pod, problem)| {
            uids.extend(pod.uid());
            problem
        })
        .collect();
    let request: Option<LogRequest> = problems.first().and_then(pods::log_request);
    let uids: Vec<&str> = uids.iter().map(String::as_str).collect();
    let mut report = report(target, cause);
    report.events = report::relevant_events(observed, &uids, &report.cause, &problems);
    report.pods = problems;
    report.more_pods = more_pods;
    Decision::Failed(Box::new(report), request)
}

/// A report of `cause` with nothing else yet.
fn report(target: &DeploymentTarget, cause: Cause) -> FailureReport {
    FailureReport {
        job: target.job.clone(),
        workload: TargetKind::Deployment,
        object: target.name.clone(),
        cause,
        pods: Vec::new(),
        more_pods: 0,
        events: Vec::new(),
        log: None,
        full_log: None,
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::watcher::Event::Apply;
    use serde_json::{Value, json};

    use super::*;
    use crate::wait::observe::tests::{event, observed};

    const SETTLE: Duration = Duration::from_secs(5);

    fn target() -> DeploymentTarget {
        DeploymentTarget {
            job: "web".to_owned(),
            namespace: "tool-x".to_owned(),
            name: "web".to_owned(),
            uid: "d1".to_owned(),
            generation: 2,
            file_log: None,
        }
    }

    fn deployment(generation: i64, status: &Value) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "uid": "d1", "generation": generation,
                "annotations": {REVISION: "2"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {}},
            "status": status,
        }))
        .expect("valid deployment")
    }

    fn replica_set(uid: &str, revision: &str, replicas: i32, spec_replicas: i32) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": format!("web-{uid}"), "uid": uid, "annotations": {REVISION: revision},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d1"}]},
            "spec": {"replicas": spec_replicas, "selector": {}},
            "status": {"replicas": replicas},
        }))
        .expect("valid replicaset")
    }

    fn pod_of(set: &str, name: &str, state: &Value, restarts: i32) -> Pod {
        let mut pod = crate::wait::pods::tests::pod(name, state, &json!({}), restarts);
        pod.metadata.owner_references = Some(vec![
            serde_json::from_value(
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": set, "uid": set}),
            )
            .expect("valid reference"),
        ]);
        pod
    }

    fn rolled_out() -> Value {
        json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2})
    }

    #[test]
    fn a_status_older_than_our_write_is_not_believed() {
        let mut seen = observed();
        let mut stale = rolled_out();
        stale["observedGeneration"] = json!(1);
        seen.deployments.apply(Apply(deployment(2, &stale)));
        assert!(matches!(
            judge(&seen, &target(), SETTLE),
            Step::Wait(Phase::Observing, _)
        ));
        seen.deployments.apply(Apply(deployment(2, &rolled_out())));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-a", 0)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-b", 0)));
        assert_eq!(
            judge(&seen, &target(), SETTLE),
            Step::Settle(
                vec!["uid-web-new-a".to_owned(), "uid-web-new-b".to_owned()],
                "2 of 2 new replicas are available; checking that they stay up without a restart for 5s"
                    .to_owned()
            )
        );
    }

    /// A pod of `set` whose container `main` runs Ready after `restarts` restarts (the last one exited 1).
    fn ready_pod(set: &str, name: &str, restarts: i32) -> Pod {
        let last = if restarts > 0 {
            json!({"terminated": {"exitCode": 1, "reason": "Error"}})
        } else {
            json!({})
        };
        let mut pod = pod_of(set, name, &json!({"running": {}}), restarts);
        let status = pod.status.as_mut().expect("status");
        let container = &mut status.container_statuses.as_mut().expect("containers")[0];
        container.ready = true;
        container.last_state = serde_json::from_value(last).expect("valid state");
        pod
    }

    fn crashing(seen: &Observed) -> FailureReport {
        let Step::Done(Decision::Failed(report, _)) = judge(seen, &target(), SETTLE) else {
            panic!("not failed: {:?}", judge(seen, &target(), SETTLE));
        };
        *report
    }

    #[test]
    fn a_new_pod_not_ready_or_missing_keeps_the_rollout_from_settling() {
        let mut seen = observed();
        seen.deployments.apply(Apply(deployment(2, &rolled_out())));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-a", 0)));
        assert_eq!(
            judge(&seen, &target(), SETTLE),
            Step::Wait(Phase::RollingOut, "1 of 2 new pods seen".to_owned())
        );
        seen.pods.apply(Apply(pod_of(
            "new",
            "web-new-b",
            &json!({"running": {}}),
            0,
        )));
        assert!(
            matches!(judge(&seen, &target(), SETTLE), Step::Wait(Phase::RollingOut, m) if m.starts_with("pod `web-new-b` is not ready")),
        );
    }

    #[test]
    fn a_restart_during_the_wait_is_a_crash_loop_even_when_the_pod_is_ready_again() {
        let mut seen = observed();
        seen.deployments.apply(Apply(deployment(2, &rolled_out())));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-a", 0)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-b", 0)));
        seen.remember_restarts();
        assert!(matches!(judge(&seen, &target(), SETTLE), Step::Settle(..)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-b", 1)));
        seen.remember_restarts();
        let report = crashing(&seen);
        assert_eq!(
            report.cause,
            Cause::Pod {
                pod: "web-new-b".to_owned(),
                reason: "CrashLoopBackOff".to_owned()
            }
        );
        assert_eq!(report.pods[0].pod, "web-new-b");
        assert!(
            report.to_string().starts_with(
                "job `web` did not roll out: pod `web-new-b` keeps crashing (CrashLoopBackOff)\n  \
                 pod `web-new-b`, container `main`: running; restarted 1 time; last run exited with code 1 (Error)"
            ),
            "{report}"
        );
    }

    #[test]
    fn a_crash_loop_back_off_or_an_exit_fails_at_once_whatever_the_exit_code() {
        let mut seen = observed();
        let mut status = rolled_out();
        status["availableReplicas"] = json!(1);
        seen.deployments.apply(Apply(deployment(2, &status)));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-a", 0)));
        let crash = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        seen.pods
            .apply(Apply(pod_of("new", "web-new-b", &crash, 1)));
        seen.remember_restarts();
        assert_eq!(crashing(&seen).cause.reason(), "CrashLoopBackOff");
        let exited = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
        seen.pods
            .apply(Apply(pod_of("new", "web-new-b", &exited, 0)));
        let report = crashing(&seen);
        assert_eq!(report.cause.reason(), "CrashLoopBackOff");
        assert!(
            report
                .to_string()
                .contains("container `main`: exited with code 0 (Completed)"),
            "{report}"
        );
    }

    #[test]
    fn restarts_before_the_wait_count_only_while_the_container_is_not_running_ready() {
        let mut seen = observed();
        seen.deployments.apply(Apply(deployment(2, &rolled_out())));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-a", 3)));
        seen.pods.apply(Apply(ready_pod("new", "web-new-b", 0)));
        seen.remember_restarts();
        assert!(
            matches!(judge(&seen, &target(), SETTLE), Step::Settle(..)),
            "a pod that restarted long ago must only stay up"
        );
        let mut unready = ready_pod("new", "web-new-a", 3);
        unready
            .status
            .as_mut()
            .unwrap()
            .container_statuses
            .as_mut()
            .unwrap()[0]
            .ready = false;
        seen.pods.apply(Apply(unready));
        assert_eq!(crashing(&seen).cause.reason(), "CrashLoopBackOff");
    }

    #[test]
    fn old_replicas_keep_the_rollout_going() {
        let mut seen = observed();
        let mut status = rolled_out();
        status["replicas"] = json!(3);
        seen.deployments.apply(Apply(deployment(2, &status)));
        assert_eq!(
            judge(&seen, &target(), SETTLE),
            Step::Wait(
                Phase::RollingOut,
                "1 old replicas are pending termination".to_owned()
            )
        );
        seen.deployments.apply(Apply(deployment(2, &rolled_out())));
        seen.replica_sets
            .apply(Apply(replica_set("old", "1", 1, 0)));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        assert_eq!(
            judge(&seen, &target(), SETTLE),
            Step::Wait(Phase::RollingOut, "1 old replicas are stopping".to_owned())
        );
    }

    #[test]
    fn progress_deadline_exceeded_fails_with_the_unready_new_pods() {
        let mut seen = observed();
        let status = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
            "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet \"web-new\" has timed out progressing."}]});
        seen.deployments.apply(Apply(deployment(2, &status)));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        seen.pods.apply(Apply(pod_of(
            "new",
            "web-new-a",
            &json!({"running": {}}),
            0,
        )));
        let Step::Done(Decision::Failed(report, log)) = judge(&seen, &target(), SETTLE) else {
            panic!("not failed");
        };
        assert_eq!(report.cause.reason(), "ProgressDeadlineExceeded");
        assert_eq!(report.pods.len(), 1);
        assert_eq!(report.pods[0].reason(), "NotReady");
        assert_eq!(log.map(|l| l.pod), Some("web-new-a".to_owned()));
    }

    #[test]
    fn only_pods_of_the_new_replicaset_fail_the_rollout_early() {
        let mut seen = observed();
        let mut status = rolled_out();
        status["availableReplicas"] = json!(0);
        seen.deployments.apply(Apply(deployment(2, &status)));
        seen.replica_sets
            .apply(Apply(replica_set("old", "1", 1, 0)));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 2, 2)));
        let crash = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        seen.pods
            .apply(Apply(pod_of("old", "web-old-a", &crash, 9)));
        assert!(matches!(
            judge(&seen, &target(), SETTLE),
            Step::Wait(Phase::RollingOut, _)
        ));
        seen.pods
            .apply(Apply(pod_of("new", "web-new-a", &crash, 2)));
        let Step::Done(Decision::Failed(report, _)) = judge(&seen, &target(), SETTLE) else {
            panic!("not failed");
        };
        assert_eq!(
            report.cause,
            Cause::Pod {
                pod: "web-new-a".to_owned(),
                reason: "CrashLoopBackOff".to_owned()
            }
        );
    }

    #[test]
    fn failed_create_on_the_new_replicaset_fails_while_it_lacks_pods() {
        let mut seen = observed();
        let mut status = rolled_out();
        status["availableReplicas"] = json!(0);
        seen.deployments.apply(Apply(deployment(2, &status)));
        seen.replica_sets
            .apply(Apply(replica_set("new", "2", 1, 2)));
        seen.events.apply(Apply(event(
            "new",
            "ReplicaSet",
            "FailedCreate",
            "exceeded quota",
        )));
        let Step::Done(Decision::Failed(report, _)) = judge(&seen, &target(), SETTLE) else {
            panic!("not failed");
        };
        assert_eq!(
            report.cause,
            Cause::FailedCreate {
                message: "exceeded quota".to_owned()
            }
        );
    }
}
