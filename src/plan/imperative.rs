//! The plans of the imperative commands: `run` creates one job outside any file, `delete` and `flush` delete jobs,
//! `restart` starts one afresh. Each is an ordinary [`Plan`] of the actions `apply` plans, so that the executor
//! carries them out as it carries out a file's plan: the same retries, UID and resourceVersion preconditions,
//! waits for a replaced object to be gone, suspended one-off Jobs, and progress events. Pure, like the rest of
//! `plan`: the caller has read the live objects and rendered the job.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::decide::{kind_of_object, workload_kind};
use super::{
    Action, Delete, LiveState, ObjectKind, ObjectRef, Plan, PlannedAction, Propagation,
    RecordUpdate, Write, WriteVerb,
};
use crate::model::{Kind, labels};
use crate::render::{LiveObject, Rendered};

/// The annotation a rolling restart sets on the pod template (what `kubectl rollout restart` sets).
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// Labels the Job controller adds to a Job's selector and pod template; a Job created again gets its own.
const CONTROLLER_LABELS: [&str; 4] = [
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];

/// `run`: creates the rendered job without inventory labels. It belongs to no file, so `apply` lists it as
/// `ignored` and never prunes it; the executor records nothing for it.
pub fn create(job: &str, rendered: &Rendered) -> Plan {
    let kind = rendered.canonical.kind;
    let mut action = PlannedAction::new(job, kind, Action::Create, "`run`");
    let workload = (
        workload_kind(kind),
        serde_json::to_value(&rendered.workload),
    );
    let service = rendered
        .service
        .as_ref()
        .map(|service| (ObjectKind::Service, serde_json::to_value(service)));
    for (object, manifest) in std::iter::once(workload).chain(service) {
        // Kubernetes objects always serialise.
        let mut manifest = manifest.expect("a rendered object serialises");
        if let Some(labels) = manifest["metadata"]["labels"].as_object_mut() {
            labels.remove(labels::INVENTORY);
            labels.remove(labels::APPLYSET_PART_OF);
        }
        action.writes.push(Write {
            object: reference(object, job, None),
            verb: WriteVerb::Create,
            manifest,
        });
    }
    Plan::new(vec![action], Vec::new())
}

/// `delete`/`flush`: deletes each job's workload and its Service (when it carries the managed-by label), by UID
/// with Background propagation, and drops the job's record from the inventory without a tombstone.
pub fn delete<'a>(
    jobs: impl IntoIterator<Item = (&'a str, &'a LiveObject)>,
    live: &LiveState,
) -> Plan {
    let actions = jobs
        .into_iter()
        .map(|(job, workload)| {
            let object = workload_reference(job, workload);
            let kind = kind_of_object(object.kind);
            let mut action = PlannedAction::new(job, kind, Action::Delete, "`delete`");
            action.deletes.push(background(object));
            let service = live.services.iter().find(|service| {
                service.metadata.name.as_deref() == Some(job)
                    && labels::is_framework(service.metadata.labels.as_ref())
            });
            if let Some(service) = service {
                let object = reference(ObjectKind::Service, job, service.metadata.uid.clone());
                action.deletes.push(background(object));
            }
            action.records = Some(RecordUpdate::Forget);
            action
        })
        .collect();
    Plan::new(actions, Vec::new())
}

/// `restart`: a continuous job's Deployment gets [`RESTARTED_AT`] set to `now` on its pod template by a merge
/// patch naming its UID (a rolling restart; the controller's status updates in between do not conflict with it); a scheduled job's running runs are deleted and a run is started from
/// its CronJob now; a one-off's Job is deleted and created again from the same spec (its pods go first).
pub fn restart(job: &str, workload: &LiveObject, live: &LiveState, now: &str) -> Plan {
    let object = workload_reference(job, workload);
    let action = match workload {
        LiveObject::Deployment(deployment) => {
            let mut action = PlannedAction::new(
                job,
                Kind::Continuous,
                Action::Update,
                "`restart`: a rolling restart",
            );
            let manifest = restarted(deployment, now);
            action.writes.push(Write {
                object,
                verb: WriteVerb::Patch,
                manifest,
            });
            action
        }
        LiveObject::CronJob(cron_job) => {
            let mut action =
                PlannedAction::new(job, Kind::Scheduled, Action::Rerun, "`restart`: runs now");
            action.deletes = running_runs(cron_job, live).map(background).collect();
            action.runs_now = true;
            action
        }
        LiveObject::Job(one_off) => {
            let mut action =
                PlannedAction::new(job, Kind::OneOff, Action::Replace, "`restart`: runs again");
            action.deletes.push(background(object.clone()));
            action.writes.push(Write {
                object: reference(ObjectKind::Job, job, None),
                verb: WriteVerb::Create,
                manifest: again(one_off),
            });
            action
        }
    };
    Plan::new(vec![action], Vec::new())
}

/// The merge patch of a rolling restart: the restart annotation on the pod template, for this UID only.
fn restarted(deployment: &Deployment, now: &str) -> Value {
    json!({
        "metadata": {"uid": deployment.metadata.uid},
        "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}},
    })
}

/// The Jobs of a CronJob that are still running.
fn running_runs<'a>(
    cron_job: &'a CronJob,
    live: &'a LiveState,
) -> impl Iterator<Item = ObjectRef> + 'a {
    let cron_uid = cron_job.metadata.uid.as_deref();
    live.jobs
        .iter()
        .filter(move |job| {
            let owned = job
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| Some(owner.uid.as_str()) == cron_uid);
            let active = job.status.as_ref().and_then(|status| status.active);
            owned && active.unwrap_or(0) > 0
        })
        .map(|job| {
            let name = job.metadata.name.as_deref().unwrap_or_default();
            reference(ObjectKind::Job, name, job.metadata.uid.clone())
        })
}

/// A one-off's Job as it is created again: its name, labels, annotations and spec, without what the server and
/// the Job controller added to the old one (selector, controller labels).
fn again(job: &KubeJob) -> Value {
    let mut spec = job.spec.clone().unwrap_or_default();
    spec.selector = None;
    spec.manual_selector = None;
    if let Some(labels) = spec
        .template
        .metadata
        .as_mut()
        .and_then(|metadata| metadata.labels.as_mut())
    {
        for label in CONTROLLER_LABELS {
            labels.remove(label);
        }
    }
    let again = KubeJob {
        metadata: ObjectMeta {
            name: job.metadata.name.clone(),
            labels: job.metadata.labels.clone(),
            annotations: job.metadata.annotations.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    };
    // Kubernetes objects always serialise.
    serde_json::to_value(again).expect("a Job serialises")
}

fn workload_reference(job: &str, workload: &LiveObject) -> ObjectRef {
    let (kind, metadata) = match workload {
        LiveObject::Job(object) => (ObjectKind::Job, &object.metadata),
        LiveObject::CronJob(object) => (ObjectKind::CronJob, &object.metadata),
        LiveObject::Deployment(object) => (ObjectKind::Deployment, &object.metadata),
    };
    reference(kind, job, metadata.uid.clone())
}

fn reference(kind: ObjectKind, name: &str, uid: Option<String>) -> ObjectRef {
    ObjectRef {
        kind,
        name: name.to_owned(),
        uid,
    }
}

fn background(object: ObjectRef) -> Delete {
    Delete {
        object,
        propagation: Propagation::Background,
    }
}
