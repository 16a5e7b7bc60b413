//! The plans of the imperative commands: `run` creates one job outside any file (and the jobs API's `PATCH`
//! updates one), `delete` and `flush` delete jobs, `restart` starts one afresh. Each is an ordinary [`Plan`] of the actions `apply` plans, so that the executor
//! carries them out as it carries out a file's plan: the same retries, UID and resourceVersion preconditions,
//! waits for a replaced object to be gone, suspended one-off Jobs, and progress events. Pure, like the rest of
//! `plan`: the caller has read the live objects and rendered the job.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::decide::{kind_of_object, workload_kind};
use super::{
    Action, Delete, Listed, LiveRecord, LiveState, Manifest, ObjectKind, ObjectRef, Plan,
    PlannedAction, Propagation, RecordUpdate, Write, WriteVerb, record_object,
};
use crate::model::{Kind, labels};
use crate::render::record::{self, RecordKind};
use crate::render::{LiveObject, ReadBack, Rendered};

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
/// `ignored` and never prunes it; the executor records nothing for it. Its stored record is written too (over a
/// record left behind without its workload).
pub fn create(job: &str, rendered: &Rendered, live: &LiveState) -> Plan {
    let kind = rendered.canonical.kind;
    let mut action = PlannedAction::new(job, kind, Action::Create, "`run`");
    let workload = (workload_kind(kind), workload_manifest(rendered));
    let service = rendered
        .service
        .as_ref()
        .map(|service| (ObjectKind::Service, service_manifest(service)));
    for (object, manifest) in std::iter::once(workload).chain(service) {
        action.writes.push(Write {
            object: reference(object, job, None),
            verb: WriteVerb::Create,
            manifest,
        });
    }
    stored_record(&mut action, rendered, live);
    Plan::new(vec![action], Vec::new())
}

/// The jobs API's new definition of a job outside any file (`PATCH`, or `POST` of a one-off that completed):
/// its workload is written over the live one (by UID), or, when the kind changes, the live Deployment has a
/// legacy selector (immutable) or the job is a one-off (which then runs again), the live workload is deleted
/// and the new one created once it is gone; its Service is created, updated or deleted to match. No inventory
/// labels, as for [`create`].
pub fn update(
    job: &str,
    rendered: &Rendered,
    live_job: &ReadBack,
    workload: &LiveObject,
    live: &LiveState,
) -> Plan {
    let kind = rendered.canonical.kind;
    let old = workload_reference(job, workload);
    let new_kind = workload_kind(kind);
    let replace = old.kind != new_kind || live_job.legacy_selector || kind == Kind::OneOff;
    let mut action = if replace {
        let mut action = PlannedAction::new(job, kind, Action::Replace, "the jobs API's `PATCH`");
        action.deletes.push(background(old));
        action.writes.push(Write {
            object: reference(new_kind, job, None),
            verb: WriteVerb::Create,
            manifest: workload_manifest(rendered),
        });
        action
    } else {
        let mut action = PlannedAction::new(job, kind, Action::Update, "the jobs API's `PATCH`");
        action.writes.push(Write {
            object: old,
            verb: WriteVerb::Update,
            manifest: workload_manifest(rendered),
        });
        action
    };
    let live_service = framework_service(job, live);
    match (&rendered.service, live_service) {
        (Some(service), Some(live_service)) => action.writes.push(Write {
            object: reference(ObjectKind::Service, job, live_service.metadata.uid.clone()),
            verb: WriteVerb::Update,
            manifest: service_manifest(service),
        }),
        (Some(service), None) => action.writes.push(Write {
            object: reference(ObjectKind::Service, job, None),
            verb: WriteVerb::Create,
            manifest: service_manifest(service),
        }),
        (None, Some(live_service)) => action.deletes.push(background(reference(
            ObjectKind::Service,
            job,
            live_service.metadata.uid.clone(),
        ))),
        (None, None) => {}
    }
    stored_record(&mut action, rendered, live);
    Plan::new(vec![action], Vec::new())
}

/// The jobs API's `PATCH` of a job that is up to date: only its stored record, when it is missing or differs.
pub fn stored_record_only(job: &str, rendered: &Rendered, live: &LiveState) -> Option<Plan> {
    let kind = rendered.canonical.kind;
    let mut action = PlannedAction::new(job, kind, Action::Repair, "the stored record");
    stored_record(&mut action, rendered, live);
    (!action.writes.is_empty() || !action.deletes.is_empty())
        .then(|| Plan::new(vec![action], Vec::new()))
}

/// The job's stored record written to match `rendered` (created, or written over when it differs), and a record
/// of the other kind deleted; only records of the jobs framework, and only when the cluster serves them.
fn stored_record(action: &mut PlannedAction, rendered: &Rendered, live: &LiveState) {
    if live.records.is_none() {
        return;
    }
    let wanted = rendered.record.as_ref();
    for kind in RecordKind::ALL {
        let object = record_object(kind);
        let existing = framework_record(&action.job, kind, live);
        let wanted = wanted.filter(|record| record["kind"] == kind.kind());
        match (wanted, existing) {
            (Some(record), Some(existing))
                if !record::is_current(&existing.object.value(), record) =>
            {
                action.writes.push(Write {
                    object: reference(object, &action.job, existing.metadata.uid.clone()),
                    verb: WriteVerb::Update,
                    manifest: unlabelled(record.clone()),
                });
            }
            (Some(record), None) if live.record(kind, &action.job).is_none() => {
                action.writes.push(Write {
                    object: reference(object, &action.job, None),
                    verb: WriteVerb::Create,
                    manifest: unlabelled(record.clone()),
                });
            }
            (None, Some(existing)) => action.deletes.push(background(reference(
                object,
                &action.job,
                existing.metadata.uid.clone(),
            ))),
            _ => {}
        }
    }
}

/// The stored record `job` of `kind`, when it is the jobs framework's (labelled so, or not labelled at all, as
/// upstream's storage may write it).
fn framework_record<'a>(
    job: &str,
    kind: RecordKind,
    live: &'a LiveState,
) -> Option<&'a LiveRecord> {
    live.record(kind, job).filter(|record| {
        let labels = record.metadata.labels.as_ref();
        labels::is_framework(labels)
            || !labels.is_some_and(|labels| labels.contains_key(labels::MANAGED_BY))
    })
}

/// A rendered workload without inventory labels: a job outside any file.
fn workload_manifest(rendered: &Rendered) -> Manifest {
    // Kubernetes objects always serialise.
    unlabelled(serde_json::to_value(&rendered.workload).expect("a rendered object serialises"))
}

fn service_manifest(service: &Service) -> Manifest {
    // Kubernetes objects always serialise.
    unlabelled(serde_json::to_value(service).expect("a rendered Service serialises"))
}

fn unlabelled(mut manifest: Value) -> Manifest {
    if let Some(labels) = manifest["metadata"]["labels"].as_object_mut() {
        labels.remove(labels::INVENTORY);
        labels.remove(labels::APPLYSET_PART_OF);
    }
    Manifest::from(manifest)
}

/// The job's Service, when it carries the managed-by label.
fn framework_service<'a>(job: &str, live: &'a LiveState) -> Option<&'a Listed<Service>> {
    live.services.iter().find(|service| {
        service.metadata.name.as_deref() == Some(job)
            && labels::is_framework(service.metadata.labels.as_ref())
    })
}

/// `delete`/`flush`: deletes each job's workload, its Service (when it carries the managed-by label) and its stored
/// record, by UID
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
            if let Some(service) = framework_service(job, live) {
                let object = reference(ObjectKind::Service, job, service.metadata.uid.clone());
                action.deletes.push(background(object));
            }
            for kind in RecordKind::ALL {
                if let Some(record) = framework_record(job, kind, live) {
                    let object = reference(record_object(kind), job, record.metadata.uid.clone());
                    action.deletes.push(background(object));
                }
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
            let manifest = Manifest::from(restarted(deployment, now));
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
                manifest: Manifest::from(again(one_off)),
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
            owned
                && job
                    .decode()
                    .status
                    .and_then(|status| status.active)
                    .unwrap_or(0)
                    > 0
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
