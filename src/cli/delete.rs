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

use crate::cli::live_jobs::{self, LiveJob, LiveNamespace};
use crate::cli::{Error, GlobalArgs};
use crate::output::{ExitStatus, Printer};

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
    let job = live_jobs::job(&live, &args.name)?;
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

/// Deletes `jobs` ([`LiveNamespace::delete_plans`]), under the tool's lock.
async fn delete(
    live: &LiveNamespace,
    jobs: &[LiveJob],
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let plans = live.delete_plans(&jobs.iter().collect::<Vec<_>>()).await?;
    let applied = live_jobs::carry_out(live, "delete", plans).await?;
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
