//! `toolforge-jobs delete NAME` and `flush`: delete one job, or every job, of the tool.
//!
//! Only jobs-framework objects are jobs here (SPEC §2.3): objects without the managed-by label are never
//! touched, whatever their name. The plan ([`plan::imperative::delete`]) deletes a job's workload by UID
//! precondition (never a newer object of the same name) with Background propagation, so the garbage collector
//! removes its Jobs and pods (a Job is never orphaned), and its Service with it; the job's record leaves its
//! inventory, so that `apply` creates the job again (a one-off runs again) when the file still has it. It is
//! carried out as `apply` carries out its plans, under the tool's lock, so it never cuts into an `apply` or the
//! `watch` daemon (exit 6 when the lock is held).

use std::collections::BTreeMap;

use clap::Args;
use kube::api::Api;

use crate::cli::live_jobs::{self, LiveJob, LiveNamespace};
use crate::cli::{Error, GlobalArgs};
use crate::cluster;
use crate::output::{ExitStatus, Printer};
use crate::pipeline::imperative::InventoryPlan;
use crate::plan;
use crate::render::context::DEFAULT_SET_NAME;

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

/// Deletes `jobs`: one plan per inventory they belong to (their `jobs.toolforge.org/inventory` label, else the
/// default set), carried out under the tool's lock.
async fn delete(
    live: &LiveNamespace,
    jobs: &[LiveJob],
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let mut by_set: BTreeMap<&str, Vec<&LiveJob>> = BTreeMap::new();
    for job in jobs {
        let set = job
            .read_back
            .ownership
            .inventory
            .as_deref()
            .unwrap_or(DEFAULT_SET_NAME);
        by_set.entry(set).or_default().push(job);
    }
    let mut plans = Vec::new();
    for (set, jobs) in by_set {
        let stored = if set == DEFAULT_SET_NAME {
            live.snapshot.inventory.clone()
        } else {
            let config_maps = Api::namespaced(live.connection.client.clone(), &live.namespace);
            cluster::inventory::read(&config_maps, &live.namespace, set).await?
        };
        let plan = plan::imperative::delete(
            jobs.iter().map(|job| (job.name(), &job.workload)),
            &live.snapshot.live,
        );
        plans.push(InventoryPlan {
            set_name: set.to_owned(),
            stored,
            plan,
        });
    }
    let applied = live.carry_out("delete", plans).await?;
    let deleted: BTreeMap<&str, _> = applied
        .iter()
        .flat_map(|applied| &applied.deleted)
        .map(|(job, objects)| (job.as_str(), objects))
        .collect();
    for job in jobs {
        let Some(objects) = deleted.get(job.name()) else {
            continue;
        };
        let kinds: Vec<String> = objects
            .iter()
            .map(|object| format!("{:?}", object.kind))
            .collect();
        printer.message(&format!(
            "Deleted job '{}' ({}).\n",
            job.name(),
            kinds.join(", ")
        ))?;
    }
    Ok(ExitStatus::Success)
}
