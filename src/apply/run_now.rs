//! A scheduled job's run started now, as `kubectl create job --from=cronjob/NAME` does: when its triggers changed
//! (`apply`), or by `restart`.

use k8s_openapi::api::batch::v1::Job as KubeJob;
use kube::api::{Api, DynamicObject};
use serde_json::json;

use super::Executor;
use super::write::{WriteError, params};
use crate::cluster::retry;
use crate::plan::ObjectKind;

/// The listed CronJob of `job`.
pub(super) fn live_cron_job(executor: &Executor, job: &str) -> Result<DynamicObject, WriteError> {
    let manifest = executor
        .live
        .manifest(ObjectKind::CronJob, job)
        .ok_or_else(|| WriteError::NotListed {
            kind: ObjectKind::CronJob,
            name: job.to_owned(),
        })?;
    serde_json::from_value(manifest).map_err(|source| WriteError::Manifest {
        kind: ObjectKind::CronJob,
        name: job.to_owned(),
        source,
    })
}

/// Starts a Job from a CronJob's template now, as `kubectl create job --from=cronjob/NAME` does, named as
/// upstream's `restart` names it: `<cronjob>-<unix time>`.
pub(super) async fn run_now(
    executor: &Executor,
    cron_job: &DynamicObject,
) -> Result<String, WriteError> {
    let cron_name = cron_job.metadata.name.clone().unwrap_or_default();
    let seconds = jiff::Timestamp::now().as_second();
    let name = format!("{cron_name}-{seconds}");
    let template = &cron_job.data["spec"]["jobTemplate"];
    let mut annotations = template["metadata"]["annotations"].clone();
    if !annotations.is_object() {
        annotations = json!({});
    }
    annotations["cronjob.kubernetes.io/instantiate"] = json!("manual");
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": template["metadata"]["labels"],
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": cron_name,
                "uid": cron_job.metadata.uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": template["spec"],
    });
    let api_error = |source| WriteError::Api {
        verb: "create",
        kind: ObjectKind::Job,
        name: name.clone(),
        source,
    };
    let job: KubeJob = serde_json::from_value(job).map_err(|source| WriteError::Manifest {
        kind: ObjectKind::Job,
        name: name.clone(),
        source,
    })?;
    let jobs: Api<KubeJob> = Api::namespaced(executor.client.clone(), &executor.namespace);
    let params = params();
    retry::transient("create", || jobs.create(&params, &job))
        .await
        .map_err(api_error)?;
    Ok(name)
}
