//! `toolforge-jobs wait NAME [--timeout DURATION] [--next]`: wait for a job's current run, and the waiting
//! `run --wait` shares with it. Without NAME, `wait` waits for the jobs file instead (`-f FILE`, else the one
//! `apply` finds): see [`crate::cli::wait_file`].
//!
//! A one-off's Job and a scheduled job's latest run are awaited by UID until they complete or fail; a continuous
//! job's Deployment until it has rolled out its current generation (src/wait). With `--next` a scheduled job's
//! next run is awaited instead: a watch on the namespace's Jobs (opened after the runs that exist were listed)
//! waits for a new Job owned by the CronJob, which is then awaited by UID. Progress goes to stderr, one line
//! per change; the end is upstream's "job 'NAME' completed" or the failure report. Exit codes (SPEC §7): 0 success,
//! 4 failed, 5 timed out.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use futures::TryStreamExt as _;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::{WatchStreamExt as _, watcher};

use crate::cli::apply::parse_duration;
use crate::cli::live_jobs::{self, LiveJob, LiveNamespace};
use crate::cli::{Error, GlobalArgs, wait_file};
use crate::output::{ExitStatus, Printer};
use crate::render::LiveObject;
use crate::render::context::DEFAULT_SET_NAME;
use crate::wait::{self, DeploymentTarget, JobTarget, Outcome};

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The job's name; without it, wait until the jobs file's current content is applied (by `apply` or
    /// `watch`) and its jobs are done
    #[arg(value_parser = crate::cli::job_name)]
    pub name: Option<String>,

    /// Give up after DURATION (`600`, `90s`, `10m`)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub timeout: Duration,

    /// A scheduled job: wait for its next run (one that starts after this command) instead of the latest one
    #[arg(long, requires = "name")]
    pub next: bool,

    /// Without NAME: the inventory's name, to keep several files apart in one tool
    #[arg(
        long = "set",
        value_name = "NAME",
        conflicts_with = "name",
        default_value = DEFAULT_SET_NAME,
        value_parser = crate::cli::set_name
    )]
    pub set_name: String,
}

/// What to wait for.
pub(crate) enum Awaited {
    Job(JobTarget),
    Deployment(DeploymentTarget),
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &WaitArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let Some(name) = &args.name else {
        return Box::pin(wait_file::run(
            global,
            &args.set_name,
            args.timeout,
            printer,
        ))
        .await;
    };
    let live = live_jobs::read(global).await?;
    let job = live_jobs::job(&live, name)?;
    let deadline = tokio::time::Instant::now() + args.timeout;
    let awaited = match &job.workload {
        LiveObject::CronJob(cron_job) if args.next => {
            printer.message(&format!("job '{name}': waiting for its next run\n"))?;
            let Some(run) = next_run(&live, cron_job, deadline).await? else {
                printer.message(&format!(
                    "timed out {} seconds waiting for the next run of job '{name}'\n",
                    args.timeout.as_secs(),
                ))?;
                return Ok(ExitStatus::TimedOut);
            };
            job_target(&job, &live.namespace, &run.metadata)
        }
        _ if args.next => {
            return Err(Error::NotScheduled { name: name.clone() });
        }
        LiveObject::Job(object) => job_target(&job, &live.namespace, &object.metadata),
        LiveObject::CronJob(cron_job) => {
            let uid = cron_job.metadata.uid.as_deref().unwrap_or_default();
            let latest = live
                .snapshot
                .live
                .jobs
                .iter()
                .filter(|run| {
                    run.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|owner| owner.uid == uid)
                })
                .max_by_key(|run| run.metadata.creation_timestamp.clone());
            let Some(latest) = latest else {
                return Err(Error::NotRunYet { name: name.clone() });
            };
            job_target(&job, &live.namespace, &latest.metadata)
        }
        LiveObject::Deployment(deployment) => Awaited::Deployment(DeploymentTarget {
            job: job.name().to_owned(),
            namespace: live.namespace.clone(),
            name: job.name().to_owned(),
            uid: deployment.metadata.uid.clone().unwrap_or_default(),
            generation: deployment.metadata.generation.unwrap_or(0),
            file_log: file_log(&job),
        }),
    };
    await_one(
        &live.connection.client,
        &awaited,
        deadline,
        args.timeout,
        printer,
    )
    .await
}

/// The first Job owned by `cron_job` that was not among the listed ones; `None` when `deadline` passes first.
async fn next_run(
    live: &LiveNamespace,
    cron_job: &CronJob,
    deadline: tokio::time::Instant,
) -> Result<Option<KubeJob>, Error> {
    let uid = cron_job.metadata.uid.clone().unwrap_or_default();
    let known: Vec<&str> = live
        .snapshot
        .live
        .jobs
        .iter()
        .filter_map(|job| job.metadata.uid.as_deref())
        .collect();
    let api: Api<KubeJob> = Api::namespaced(live.connection.client.clone(), &live.namespace);
    let runs = watcher(api, watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .try_filter(|job| {
            let new = job
                .metadata
                .uid
                .as_deref()
                .is_some_and(|run| !known.contains(&run));
            let owned = job
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.uid == uid);
            futures::future::ready(new && owned)
        });
    let mut runs = std::pin::pin!(runs);
    match tokio::time::timeout_at(deadline, runs.try_next()).await {
        Ok(Ok(run)) => Ok(run),
        Ok(Err(source)) => Err(Error::Wait(wait::WaitError::Watch {
            resource: "jobs",
            namespace: live.namespace.clone(),
            source,
        })),
        Err(_) => Ok(None),
    }
}

fn job_target(job: &LiveJob, namespace: &str, metadata: &ObjectMeta) -> Awaited {
    Awaited::Job(JobTarget {
        job: job.name().to_owned(),
        namespace: namespace.to_owned(),
        name: metadata.name.clone().unwrap_or_default(),
        uid: metadata.uid.clone().unwrap_or_default(),
        file_log: file_log(job),
    })
}

/// Where the job's errors go when it logs to files.
pub(crate) fn file_log(job: &LiveJob) -> Option<PathBuf> {
    job.read_back.job.filelog_stderr.clone().map(PathBuf::from)
}

/// Waits for `awaited` until `deadline` (which is `timeout` after the command began, for the message), printing
/// progress and the end; the exit status of SPEC §7.
pub(crate) async fn await_one(
    client: &kube::Client,
    awaited: &Awaited,
    deadline: tokio::time::Instant,
    timeout: Duration,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    // A continuous job does not finish: it rolls out and keeps running.
    let (name, what, done) = match awaited {
        Awaited::Job(target) => (&target.job, "complete", "completed"),
        Awaited::Deployment(target) => (&target.job, "roll out", "rolled out (running)"),
    };
    let mut progress = |progress: &wait::WaitProgress| {
        // Progress is a courtesy: a closed stderr must not stop the wait.
        let _ = printer.message(&format!("job '{name}': {progress}\n"));
    };
    let outcome = match awaited {
        Awaited::Job(target) => {
            Box::pin(wait::job(client, target, deadline, &mut progress)).await?
        }
        Awaited::Deployment(target) => {
            Box::pin(wait::deployment(client, target, deadline, &mut progress)).await?
        }
    };
    let message = match &outcome {
        Outcome::Succeeded => format!("job '{name}' {done}\n"),
        Outcome::CleanedUp => format!("job '{name}' {done} (and already deleted)\n"),
        Outcome::Failed(report) => format!("job '{name}' failed:\n{report}\n"),
        Outcome::TimedOut(last) => format!(
            "timed out {} seconds waiting for job '{name}' to {what}; last: {last}\n",
            timeout.as_secs()
        ),
    };
    printer.message(&message)?;
    Ok(outcomes_status([&outcome]))
}

/// Exit 4 when a job failed, else 5 when one timed out, else 0 (SPEC §7).
pub(crate) fn outcomes_status<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> ExitStatus {
    let mut status = ExitStatus::Success;
    for outcome in outcomes {
        match outcome {
            Outcome::Failed(_) => return ExitStatus::JobFailed,
            Outcome::TimedOut(_) => status = ExitStatus::TimedOut,
            Outcome::Succeeded | Outcome::CleanedUp => {}
        }
    }
    status
}
