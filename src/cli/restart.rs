//! `toolforge-jobs restart NAME`: start a job afresh, as upstream's `toolforge jobs restart` does.
//!
//! - continuous: a rolling restart — the pod template gets the annotation `kubectl.kubernetes.io/restartedAt`
//!   (what `kubectl rollout restart` sets), so the Deployment replaces its pods one by one;
//! - scheduled: "run now" — the running runs are deleted, and a Job is created from the CronJob's template,
//!   named `<cronjob>-<unixtime>`, annotated `cronjob.kubernetes.io/instantiate: manual` and owned by the CronJob
//!   (as `kubectl create job --from=cronjob/…` does);
//! - one-off: its Job is deleted (Background propagation, by UID) and, once it is gone, created again from the
//!   same spec.
//!
//! The plan ([`plan::imperative::restart`]) is carried out as `apply` carries out its plans, under the tool's
//! lock. Only jobs-framework objects are jobs, so foreign objects are never touched.

use clap::Args;

use crate::cli::live_jobs;
use crate::cli::{Error, GlobalArgs};
use crate::output::{ExitStatus, Printer};
use crate::plan;
use crate::render::LiveObject;

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
    let job = live_jobs::job(&live, &args.name)?;
    let now = jiff::Timestamp::now().to_string();
    let plan = plan::imperative::restart(job.name(), &job.workload, &live.snapshot.live, &now);
    let applied = live_jobs::carry_out(&live, "restart", vec![live.in_default_set(plan)]).await?;
    let message = match &job.workload {
        LiveObject::Deployment(_) => format!(
            "Restarted job '{}': its pods are being replaced.\n",
            args.name
        ),
        LiveObject::CronJob(_) => {
            let started = applied
                .iter()
                .find_map(|applied| applied.ran_now.get(job.name()))
                .map_or_else(String::new, |name| format!(", as Job `{name}`"));
            format!("Started job '{}' now{started}.\n", args.name)
        }
        LiveObject::Job(_) => format!(
            "Restarted job '{}': its Job was created again.\n",
            args.name
        ),
    };
    printer.message(&message)?;
    Ok(ExitStatus::Success)
}
