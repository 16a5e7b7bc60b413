//! `toolforge-jobs delete NAME` and `flush`: delete one job, or every job, of the tool.
//!
//! Only jobs-framework objects are jobs here (SPEC §2.3): objects without the managed-by label are never
//! touched, whatever their name. A job's workload is deleted by UID precondition (never a newer object of the
//! same name) with Background propagation, so the garbage collector removes its Jobs and pods (a Job is never
//! orphaned); its Service goes with it. The job's record leaves its inventory, so that `apply` creates the job
//! again (a one-off runs again) when the file still has it. Both hold the tool's lock while they delete, so they
//! never cut into an `apply` or the `watch` daemon (exit 6 when it is held).

use std::collections::BTreeMap;

use clap::Args;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, Preconditions};
use serde::de::DeserializeOwned;

use crate::cli::live_jobs::{self, LiveJob, LiveNamespace};
use crate::cli::{Error, GlobalArgs};
use crate::cluster;
use crate::cluster::inventory::InventoryStore;
use crate::cluster::lock;
use crate::output::{ExitStatus, Printer};
use crate::render::context::DEFAULT_SET_NAME;
use crate::render::{LiveObject, labels};

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The job's name
    #[arg(value_parser = crate::cli::job_name)]
    pub name: String,
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &DeleteArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let job = live.job(&args.name)?;
    delete(&live, &[job], printer).await
}

/// `flush`: every job of the tool.
pub(crate) async fn flush(global: &GlobalArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let jobs = live.jobs();
    if jobs.is_empty() {
        printer.message("No jobs to delete.\n")?;
        return Ok(ExitStatus::Success);
    }
    delete(&live, &jobs, printer).await
}

/// Deletes `jobs` under the tool's lock.
async fn delete(
    live: &LiveNamespace,
    jobs: &[LiveJob],
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let lock = lock::acquire(
        &live.connection.client,
        &live.namespace,
        &lock::identity("delete"),
        None,
    )
    .await?;
    let result = delete_locked(live, jobs, printer).await;
    if let Err(error) = lock.release().await {
        tracing::warn!(%error, "cannot release the lock; it expires by itself");
    }
    result
}

async fn delete_locked(
    live: &LiveNamespace,
    jobs: &[LiveJob],
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let client = &live.connection.client;
    for job in jobs {
        let name = job.name();
        let mut deleted = match &job.workload {
            LiveObject::Job(object) => {
                delete_object::<KubeJob>(client, &live.namespace, &object.metadata).await?
            }
            LiveObject::CronJob(object) => {
                delete_object::<CronJob>(client, &live.namespace, &object.metadata).await?
            }
            LiveObject::Deployment(object) => {
                delete_object::<Deployment>(client, &live.namespace, &object.metadata).await?
            }
        };
        let service = live.snapshot.live.services.iter().find(|service| {
            service.metadata.name.as_deref() == Some(name)
                && service
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get(labels::MANAGED_BY))
                    .is_some_and(|value| value == labels::MANAGED_BY_VALUE)
        });
        if let Some(service) = service {
            deleted.extend(
                delete_object::<Service>(client, &live.namespace, &service.metadata).await?,
            );
        }
        if !deleted.is_empty() {
            printer.message(&format!("Deleted job '{name}' ({}).\n", deleted.join(", ")))?;
        }
    }
    forget(live, jobs).await?;
    Ok(ExitStatus::Success)
}

/// Deletes one object by name and UID; `["Kind"]` when deleted, nothing when it was already gone.
async fn delete_object<K>(
    client: &kube::Client,
    namespace: &str,
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Result<Vec<&'static str>, Error>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + k8s_openapi::Resource
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let name = metadata.name.clone().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(&name, &params).await {
        Ok(_) => Ok(vec![<K as k8s_openapi::Resource>::KIND]),
        // Already gone, or replaced by a newer object since we listed: not ours to delete now.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(Vec::new()),
        Err(source) => Err(Error::Delete {
            kind: <K as k8s_openapi::Resource>::KIND,
            name,
            source,
        }),
    }
}

/// Drops the deleted jobs' records from the inventories that have them.
async fn forget(live: &LiveNamespace, jobs: &[LiveJob]) -> Result<(), Error> {
    let mut by_set: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for job in jobs {
        let set = job
            .read_back
            .ownership
            .inventory
            .as_deref()
            .unwrap_or(DEFAULT_SET_NAME);
        by_set.entry(set).or_default().push(job.name());
    }
    let client = &live.connection.client;
    for (set, names) in by_set {
        let stored = if set == DEFAULT_SET_NAME {
            live.snapshot.inventory.clone()
        } else {
            cluster::inventory::read(
                &Api::namespaced(client.clone(), &live.namespace),
                &live.namespace,
                set,
            )
            .await?
        };
        let Some(stored) = stored.filter(|stored| {
            names
                .iter()
                .any(|name| stored.inventory.jobs.contains_key(*name))
        }) else {
            continue;
        };
        InventoryStore::new(client, &live.namespace, set, Some(stored))
            .update(|inventory| {
                inventory
                    .jobs
                    .retain(|name, _| !names.contains(&name.as_str()));
            })
            .await?;
    }
    Ok(())
}
