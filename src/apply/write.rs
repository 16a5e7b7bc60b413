//! One action's requests: its deletes (waiting for a replaced object's UID to be gone), its writes, and the
//! immediate run of a scheduled job (`run_now`).

use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
    PropagationPolicy,
};
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::wait::{await_condition, conditions};
use serde::Deserialize as _;
use serde_json::{Value, json};

use super::{ActionOutcome, Event, EventKind, Executor, run_now};
use crate::cluster::{FIELD_MANAGER, api_resource, is_conflict, is_forbidden, retry};
use crate::model::labels::DESIRED_HASH;
use crate::plan::{Delete, ObjectKind, PlannedAction, Propagation, Write, WriteVerb};

/// Why one action failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot {verb} {kind:?} `{name}`")]
    Api {
        verb: &'static str,
        kind: ObjectKind,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "{kind:?} `{name}` was not gone {seconds} s after it was deleted; is a finalizer holding it?"
    )]
    NotGone {
        kind: ObjectKind,
        name: String,
        seconds: u64,
    },
    #[error("{kind:?} `{name}` was not listed: there is nothing to start a run from")]
    NotListed { kind: ObjectKind, name: String },
    #[error("the rendered {kind:?} `{name}` is not a Kubernetes object")]
    Manifest {
        kind: ObjectKind,
        name: String,
        #[source]
        source: serde_json::Error,
    },
}

pub(super) async fn carry_out(
    executor: &Executor,
    action: &PlannedAction,
) -> Result<ActionOutcome, WriteError> {
    let mut outcome = ActionOutcome {
        job: action.job.clone(),
        changed: action.action.changes(),
        job_uid: None,
        suspended: false,
        deployment: None,
        records: action.records,
        deleted: Vec::new(),
        ran_now: None,
    };
    for delete in &action.deletes {
        let written_again = action.writes.iter().any(|write| {
            write.object.kind == delete.object.kind && write.object.name == delete.object.name
        });
        if remove(executor, action, delete, written_again).await? {
            outcome.deleted.push(delete.object.clone());
        }
    }
    let mut cron_job = None;
    for write in &action.writes {
        let written = match put(executor, write).await {
            Err(WriteError::Api { source, .. })
                if write.object.kind.is_record() && is_forbidden(&source) =>
            {
                // The tool may read upstream's records but not write them: the job works without its record.
                executor.progress.event(Event::new(
                    &action.job,
                    EventKind::Step,
                    format!(
                        "may not write the stored record {:?} `{}`: upstream's `toolforge jobs list` will not \
                         show the job",
                        write.object.kind, write.object.name
                    ),
                ));
                continue;
            }
            written => written?,
        };
        match write.object.kind {
            ObjectKind::Job => {
                outcome.job_uid.clone_from(&written.metadata.uid);
                outcome.suspended = write.verb == WriteVerb::Create;
            }
            ObjectKind::Deployment => {
                outcome.deployment = written
                    .metadata
                    .uid
                    .clone()
                    .zip(written.metadata.generation);
            }
            ObjectKind::CronJob => cron_job = Some(written.clone()),
            ObjectKind::Service | ObjectKind::ContinuousJob | ObjectKind::ScheduledJob => {}
        }
        executor.progress.event(Event::new(
            &action.job,
            EventKind::Step,
            format!(
                "{} {:?} `{}`",
                verb_done(write.verb),
                write.object.kind,
                write.object.name
            ),
        ));
    }
    if action.runs_now {
        // Written by this action (its triggers changed), else as listed (`restart`).
        let cron_job = match cron_job {
            Some(written) => written,
            None => run_now::live_cron_job(executor, &action.job)?,
        };
        let job = run_now::run_now(executor, &cron_job).await?;
        executor.progress.event(Event::new(
            &action.job,
            EventKind::Step,
            format!("started Job `{job}` from the CronJob"),
        ));
        outcome.ran_now = Some(job);
    }
    Ok(outcome)
}

fn api(executor: &Executor, kind: ObjectKind) -> Api<DynamicObject> {
    Api::namespaced_with(
        executor.client.clone(),
        &executor.namespace,
        &api_resource(kind),
    )
}

pub(super) fn params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    }
}

/// Deletes the object planned against (by UID); when it is written again, waits until that UID is gone. The
/// watch is opened before the object is looked at, so a deletion that completes in between is not missed.
/// Whether this delete removed it (`false`: it was gone already, or replaced by another object since).
async fn remove(
    executor: &Executor,
    action: &PlannedAction,
    delete: &Delete,
    written_again: bool,
) -> Result<bool, WriteError> {
    let object = &delete.object;
    let api = api(executor, object.kind);
    let params = DeleteParams {
        propagation_policy: Some(match delete.propagation {
            Propagation::Background => PropagationPolicy::Background,
            Propagation::Foreground => PropagationPolicy::Foreground,
        }),
        preconditions: object.uid.clone().map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let api_error = |source| WriteError::Api {
        verb: "delete",
        kind: object.kind,
        name: object.name.clone(),
        source,
    };
    let deleted = match retry::transient("delete", || api.delete(&object.name, &params)).await {
        Ok(_) => true,
        // Gone already, or replaced by somebody else since we listed it (UID precondition): nothing of ours to
        // delete any more.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => false,
        // A stored record the tool may not delete stays; the job's own objects are what matters.
        Err(error) if object.kind.is_record() && is_forbidden(&error) => {
            executor.progress.event(Event::new(
                &action.job,
                EventKind::Step,
                format!(
                    "may not delete the stored record {:?} `{}`: left as it is",
                    object.kind, object.name
                ),
            ));
            return Ok(false);
        }
        Err(source) => return Err(api_error(source)),
    };
    let step = if deleted {
        format!("deleted {:?} `{}`", object.kind, object.name)
    } else {
        format!("{:?} `{}` was gone already", object.kind, object.name)
    };
    executor
        .progress
        .event(Event::new(&action.job, EventKind::Step, step));
    if !written_again {
        return Ok(deleted);
    }
    let Some(uid) = &object.uid else {
        return Ok(deleted);
    };
    executor.progress.event(Event::new(
        &action.job,
        EventKind::Waiting,
        format!(
            "waiting for the old {:?} `{}` to be gone",
            object.kind, object.name
        ),
    ));
    let gone = await_condition(api.clone(), &object.name, conditions::is_deleted(uid));
    match tokio::time::timeout(executor.options.deletion_timeout, gone).await {
        Ok(Ok(_)) => Ok(deleted),
        Ok(Err(error)) => Err(api_error(kube::Error::Service(Box::new(error)))),
        Err(_) => Err(WriteError::NotGone {
            kind: object.kind,
            name: object.name.clone(),
            seconds: executor.options.deletion_timeout.as_secs(),
        }),
    }
}

/// Writes one object and returns it as the server stored it.
async fn put(executor: &Executor, write: &Write) -> Result<DynamicObject, WriteError> {
    let object = &write.object;
    let api = api(executor, object.kind);
    let api_error = |verb, source| WriteError::Api {
        verb,
        kind: object.kind,
        name: object.name.clone(),
        source,
    };
    let planned_against = match write.verb {
        WriteVerb::Update => executor.live.manifest(object.kind, &object.name),
        _ => None,
    };
    let manifest = match write.verb {
        WriteVerb::Update => guarded(write, planned_against.as_ref()),
        WriteVerb::Create => suspended_if_one_off(write),
        WriteVerb::Label | WriteVerb::Resume | WriteVerb::Patch => write.manifest.value(),
    };
    let typed: DynamicObject =
        serde_json::from_value(manifest.clone()).map_err(|source| WriteError::Manifest {
            kind: object.kind,
            name: object.name.clone(),
            source,
        })?;
    let params = params();
    match write.verb {
        WriteVerb::Create => match retry::transient("create", || api.create(&params, &typed)).await
        {
            Ok(created) => Ok(created),
            // A create whose response was lost and that was tried again, or one of an apply that died after it:
            // the object is there, and when it is the one we render it is our write, done.
            Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => {
                match retry::transient("get", || api.get_opt(&object.name)).await {
                    Ok(Some(existing)) if is_this_write(&existing, &typed) => Ok(existing),
                    Ok(_) => Err(api_error("create", kube::Error::Api(status))),
                    Err(source) => Err(api_error("create", source)),
                }
            }
            Err(source) => Err(api_error("create", source)),
        },
        WriteVerb::Update => update(&api, &object.name, planned_against.as_ref(), typed)
            .await
            .map_err(|source| api_error("update", source)),
        WriteVerb::Label => {
            let patch = Patch::Merge(json!({"metadata": {
                "labels": manifest["metadata"]["labels"],
                "annotations": manifest["metadata"]["annotations"],
            }}));
            let patch_params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_owned()),
                ..PatchParams::default()
            };
            retry::transient("label", || api.patch(&object.name, &patch_params, &patch))
                .await
                .map_err(|source| api_error("label", source))
        }
        WriteVerb::Patch => {
            // The patch names the UID: a newer object of that name is not ours to change (409).
            let patch = Patch::Merge(manifest);
            let patch_params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_owned()),
                ..PatchParams::default()
            };
            retry::transient("patch", || api.patch(&object.name, &patch_params, &patch))
                .await
                .map_err(|source| api_error("patch", source))
        }
        WriteVerb::Resume => resume(executor, &object.name)
            .await
            .map_err(|source| api_error("resume", source)),
    }
}

/// A one-off's Job is created suspended (see [`resume`]); everything else as rendered.
fn suspended_if_one_off(write: &Write) -> Value {
    let mut manifest = write.manifest.value();
    if write.object.kind == ObjectKind::Job {
        manifest["spec"]["suspend"] = json!(true);
    }
    manifest
}

/// Lets a one-off's Job run. It was created suspended so that its run cannot happen before its UID is in the
/// inventory: an apply that dies in between leaves a Job that never ran, which the next apply resumes (a Job
/// that ran and was removed by its TTL is always recorded by UID).
pub(super) async fn resume(executor: &Executor, name: &str) -> Result<DynamicObject, kube::Error> {
    let api = api(executor, ObjectKind::Job);
    let patch = Patch::Merge(json!({"spec": {"suspend": false}}));
    let patch_params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    retry::transient("resume", || api.patch(name, &patch_params, &patch)).await
}

/// Whether `existing` is the object `written` renders: not being deleted, with the same desired hash (which
/// covers every rendered field and our labels).
fn is_this_write(existing: &DynamicObject, written: &DynamicObject) -> bool {
    let hash = |object: &DynamicObject| {
        object
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(DESIRED_HASH))
            .cloned()
    };
    existing.metadata.deletion_timestamp.is_none()
        && hash(written).is_some()
        && hash(existing) == hash(written)
}

/// How many times an update is sent while only the cluster's controllers change the object in between (a
/// Deployment rolling out writes its status a few times a second).
const UPDATE_ATTEMPTS: u32 = 6;

/// Replaces the object planned against. A conflict where the object changed only as the cluster's controllers
/// change it (its status, the Deployment controller's revision annotation) is no change the plan did not see:
/// the update is sent again against the new resourceVersion. Any other change is returned as the conflict, for
/// the caller to read the live state and plan again.
async fn update(
    api: &Api<DynamicObject>,
    name: &str,
    planned_against: Option<&Value>,
    mut object: DynamicObject,
) -> Result<DynamicObject, kube::Error> {
    let params = params();
    let mut attempt = 1;
    loop {
        let conflict =
            match retry::transient("update", || api.replace(name, &params, &object)).await {
                Err(error) if is_conflict(&error) && attempt < UPDATE_ATTEMPTS => error,
                result => return result,
            };
        let Some(planned_against) = planned_against else {
            return Err(conflict);
        };
        match retry::transient("get", || api.get_opt(name)).await? {
            Some(current) if changed_only_by_controllers(planned_against, &current) => {
                tracing::debug!(
                    name,
                    attempt,
                    "only the status changed since the read; updating again"
                );
                object.metadata.resource_version = current.metadata.resource_version;
                attempt += 1;
            }
            _ => return Err(conflict),
        }
    }
}

/// Whether `current` differs from `planned_against` only where Kubernetes' controllers write: the status, the
/// resourceVersion, the `deployment.kubernetes.io/` annotations. The UID, the deletion, the labels, every other
/// annotation and the generation are as planned; the generation stands for the spec, as the API server moves it
/// on every spec change. Without a generation (a Service) nothing tells that the spec is unchanged.
fn changed_only_by_controllers(planned_against: &Value, current: &DynamicObject) -> bool {
    /// The Deployment controller writes its revision there; the other annotations are the object's owners'.
    const CONTROLLER_ANNOTATIONS: &str = "deployment.kubernetes.io/";
    /// What the object's owners write in its metadata.
    type Owned<'a> = (
        Option<&'a String>,
        bool,
        Option<i64>,
        Option<&'a BTreeMap<String, String>>,
        BTreeMap<&'a String, &'a String>,
    );
    fn owned(metadata: &ObjectMeta) -> Owned<'_> {
        let annotations = metadata
            .annotations
            .iter()
            .flatten()
            .filter(|(key, _)| !key.starts_with(CONTROLLER_ANNOTATIONS))
            .collect();
        (
            metadata.uid.as_ref(),
            metadata.deletion_timestamp.is_some(),
            metadata.generation,
            metadata.labels.as_ref(),
            annotations,
        )
    }
    let Ok(planned_against) = ObjectMeta::deserialize(&planned_against["metadata"]) else {
        return false;
    };
    planned_against.generation.is_some() && owned(&planned_against) == owned(&current.metadata)
}

/// The manifest of an update, guarded by the UID and resourceVersion we planned against (a concurrent change
/// fails with a conflict instead of being overwritten). A Service keeps the cluster IPs the server assigned.
fn guarded(write: &Write, planned_against: Option<&Value>) -> Value {
    let mut manifest = write.manifest.value();
    let Some(live) = planned_against else {
        return manifest;
    };
    for field in ["uid", "resourceVersion"] {
        manifest["metadata"][field] = live["metadata"][field].clone();
    }
    if write.object.kind == ObjectKind::Service {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if !live["spec"][field].is_null() {
                manifest["spec"][field] = live["spec"][field].clone();
            }
        }
    }
    manifest
}

fn verb_done(verb: WriteVerb) -> &'static str {
    match verb {
        WriteVerb::Create => "created",
        WriteVerb::Update => "updated",
        WriteVerb::Label => "labelled",
        WriteVerb::Resume => "resumed",
        WriteVerb::Patch => "patched",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(metadata: &Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {}})
    }

    fn changed_only_by_controllers_to(planned_against: &Value, current: &Value) -> bool {
        let current: DynamicObject = serde_json::from_value(deployment(current)).unwrap();
        changed_only_by_controllers(&deployment(planned_against), &current)
    }

    #[test]
    fn a_status_or_a_revision_is_the_controllers_and_anything_else_the_owners() {
        let planned_against = json!({
            "name": "bot", "uid": "u1", "resourceVersion": "10", "generation": 2,
            "labels": {"app.kubernetes.io/managed-by": "toolforge-jobs-framework"},
            "annotations": {"jobs.toolforge.org/desired-hash": "h1"},
        });
        // The metadata planned against with each field of `change` set (a map's keys added to it).
        let with = |change: &Value| {
            let mut current = planned_against.clone();
            for (field, value) in change.as_object().unwrap() {
                match (&mut current[field], value) {
                    (Value::Object(map), Value::Object(added)) => map.extend(added.clone()),
                    (slot, value) => *slot = value.clone(),
                }
            }
            current
        };
        let controllers = with(&json!({
            "resourceVersion": "11",
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        }));
        assert!(changed_only_by_controllers_to(
            &planned_against,
            &controllers
        ));
        for owners in [
            json!({"generation": 3}),
            json!({"uid": "u2"}),
            json!({"labels": {"edited": "by-hand"}}),
            json!({"annotations": {"jobs.toolforge.org/desired-hash": "h2"}}),
            json!({"deletionTimestamp": "2026-12-07T00:00:00Z"}),
        ] {
            assert!(
                !changed_only_by_controllers_to(&planned_against, &with(&owners)),
                "{owners}"
            );
        }
        // Without a generation nothing says the spec is unchanged.
        let mut service = planned_against.clone();
        service.as_object_mut().unwrap().remove("generation");
        assert!(!changed_only_by_controllers_to(&service, &service));
    }
}
