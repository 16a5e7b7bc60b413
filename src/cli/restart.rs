//! `toolforge-jobs restart NAME`: start a job afresh, as upstream's `toolforge jobs restart` does.
//!
//! - continuous: a rolling restart — the pod template gets the annotation `kubectl.kubernetes.io/restartedAt`
//!   (what `kubectl rollout restart` sets), so the Deployment replaces its pods one by one;
//! - scheduled: "run now" — the running runs are deleted, and a Job is created from the CronJob's template,
//!   named `<cronjob>-<unixtime>`, annotated `cronjob.kubernetes.io/instantiate: manual` and owned by the CronJob
//!   (as `kubectl create job --from=cronjob/…` does);
//! - one-off: its Job is deleted (Background propagation, by UID) and created again from the same spec.
//!
//! Only jobs-framework objects are jobs, so foreign objects are never touched.

use std::time::Duration;

use clap::Args;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};

use crate::cli::live_jobs::{self, LiveNamespace};
use crate::cli::{Error, GlobalArgs};
use crate::cluster::FIELD_MANAGER;
use crate::output::{ExitStatus, Printer};
use crate::render::LiveObject;

/// The annotation a rolling restart sets on the pod template.
const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";
/// The annotation of a Job created by hand from a CronJob.
const INSTANTIATE: &str = "cronjob.kubernetes.io/instantiate";
/// Labels the Job controller adds to a Job's selector and pod template; a new Job gets its own.
const CONTROLLER_LABELS: [&str; 4] = [
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];
/// How often, and how long apart, a re-created one-off's create is tried while the old Job is still going away.
const CREATE_ATTEMPTS: u32 = 25;
const CREATE_PAUSE: Duration = Duration::from_millis(200);

#[derive(Debug, Args)]
pub struct RestartArgs {
    /// The job's name
    #[arg(value_parser = crate::cli::job_name)]
    pub name: String,
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &RestartArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let job = live.job(&args.name)?;
    let message = match &job.workload {
        LiveObject::Deployment(deployment) => {
            rolling_restart(&live, deployment).await?;
            format!(
                "Restarted job '{}': its pods are being replaced.\n",
                args.name
            )
        }
        LiveObject::CronJob(cron_job) => {
            let name = run_now(&live, cron_job).await?;
            format!("Started job '{}' now, as Job `{name}`.\n", args.name)
        }
        LiveObject::Job(object) => {
            rerun(&live, object).await?;
            format!(
                "Restarted job '{}': its Job was created again.\n",
                args.name
            )
        }
    };
    printer.message(&message)?;
    Ok(ExitStatus::Success)
}

fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

fn post_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    }
}

async fn rolling_restart(live: &LiveNamespace, deployment: &Deployment) -> Result<(), Error> {
    let name = deployment.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({"spec": {"template": {"metadata": {"annotations": {
        RESTARTED_AT: jiff::Timestamp::now().to_string()
    }}}}});
    Api::<Deployment>::namespaced(live.connection.client.clone(), &live.namespace)
        .patch(&name, &params(), &Patch::Merge(patch))
        .await
        .map_err(|source| Error::Restart {
            kind: "Deployment",
            name,
            source,
        })?;
    Ok(())
}

/// Deletes the CronJob's running runs and creates a run from its template; the new Job's name.
async fn run_now(live: &LiveNamespace, cron_job: &CronJob) -> Result<String, Error> {
    let cron_name = cron_job.metadata.name.clone().unwrap_or_default();
    let cron_uid = cron_job.metadata.uid.clone().unwrap_or_default();
    let jobs: Api<KubeJob> = Api::namespaced(live.connection.client.clone(), &live.namespace);
    let running = live.snapshot.live.jobs.iter().filter(|job| {
        job.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|owner| owner.uid == cron_uid)
            && job
                .status
                .as_ref()
                .and_then(|status| status.active)
                .unwrap_or(0)
                > 0
    });
    for job in running {
        delete_job(&jobs, &job.metadata).await?;
    }
    let template = cron_job
        .spec
        .as_ref()
        .map(|spec| spec.job_template.clone())
        .unwrap_or_default();
    let name = format!("{cron_name}-{}", jiff::Timestamp::now().as_second());
    let mut annotations = template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(INSTANTIATE.to_owned(), "manual".to_owned());
    let job = KubeJob {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".to_owned(),
                kind: "CronJob".to_owned(),
                name: cron_name,
                uid: cron_uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    };
    jobs.create(&post_params(), &job)
        .await
        .map_err(|source| Error::Create {
            kind: "Job",
            name: name.clone(),
            source,
        })?;
    Ok(name)
}

/// Deletes the one-off's Job and creates it again from the same spec.
async fn rerun(live: &LiveNamespace, job: &KubeJob) -> Result<(), Error> {
    let jobs: Api<KubeJob> = Api::namespaced(live.connection.client.clone(), &live.namespace);
    delete_job(&jobs, &job.metadata).await?;
    let mut spec = job.spec.clone().unwrap_or_default();
    spec.selector = None;
    spec.manual_selector = None;
    if let Some(labels) = spec
        .template
        .metadata
        .as_mut()
        .and_then(|m| m.labels.as_mut())
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
    let name = job.metadata.name.clone().unwrap_or_default();
    let mut attempt = 1;
    loop {
        match jobs.create(&post_params(), &again).await {
            // The old Job is still being deleted.
            Err(kube::Error::Api(status)) if status.code == 409 && attempt < CREATE_ATTEMPTS => {
                attempt += 1;
                tokio::time::sleep(CREATE_PAUSE).await;
            }
            result => {
                return result.map(|_| ()).map_err(|source| Error::Create {
                    kind: "Job",
                    name,
                    source,
                });
            }
        }
    }
}

/// Deletes a Job by UID with Background propagation (its pods go with it); gone already is fine.
async fn delete_job(jobs: &Api<KubeJob>, metadata: &ObjectMeta) -> Result<(), Error> {
    let name = metadata.name.clone().unwrap_or_default();
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match jobs.delete(&name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(Error::Delete {
            kind: "Job",
            name,
            source,
        }),
    }
}
