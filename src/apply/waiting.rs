//! Waiting for what an apply started (`apply --wait`, and `wait` one-offs acting as barriers): the awaiters of
//! [`crate::wait`] run concurrently, their progress goes to the apply's event stream, and their outcomes are
//! recorded for one-offs in the inventory.

use std::collections::BTreeMap;
use std::path::PathBuf;

use futures::StreamExt as _;
use tokio::time::Instant;

use super::{Applied, ApplyError, Event, EventKind, Executor};
use crate::model::inventory::RunOutcome;
use crate::wait::{self, DeploymentTarget, JobTarget, Outcome};

/// Awaiters in flight at once; each holds a few watches.
const CONCURRENT_WAITS: usize = 16;

/// One thing to wait for.
#[derive(Debug, Clone)]
pub enum Target {
    Job(JobTarget),
    Deployment(DeploymentTarget),
}

impl Target {
    /// The job's name in the jobs file.
    pub fn job(&self) -> &str {
        match self {
            Target::Job(target) => &target.job,
            Target::Deployment(target) => &target.job,
        }
    }
}

impl Executor {
    /// The Job `uid` of one-off `job` that this apply created.
    pub fn job_target(&self, job: &str, uid: &str) -> Target {
        Target::Job(JobTarget {
            job: job.to_owned(),
            namespace: self.namespace.clone(),
            name: job.to_owned(),
            uid: uid.to_owned(),
            file_log: self.file_log(job),
        })
    }

    /// Everything `applied` started that `apply --wait` waits for: the one-offs' Jobs (barriers were waited for
    /// already) and the Deployments' rollouts. CronJobs are accepted once written.
    pub fn targets(&self, applied: &Applied, barriers: &[String]) -> Vec<Target> {
        let jobs = applied
            .started_jobs
            .iter()
            .filter(|(job, _)| !barriers.contains(job))
            .map(|(job, uid)| self.job_target(job, uid));
        let deployments = applied.deployments.iter().map(|(job, (uid, generation))| {
            Target::Deployment(DeploymentTarget {
                job: job.clone(),
                namespace: self.namespace.clone(),
                name: job.clone(),
                uid: uid.clone(),
                generation: *generation,
                file_log: self.file_log(job),
            })
        });
        jobs.chain(deployments).collect()
    }

    /// Waits for every target until `deadline`, reporting progress; records the one-offs' outcomes. Returns the
    /// outcome per job name; a stop ends every wait at once, and the jobs not waited for to the end have none.
    pub async fn wait_for(
        &self,
        targets: Vec<Target>,
        deadline: Instant,
    ) -> Result<BTreeMap<String, Outcome>, ApplyError> {
        let results: Vec<(Target, Result<Outcome, wait::WaitError>)> =
            futures::stream::iter(targets)
                .map(|target| async move {
                    let outcome = tokio::select! {
                        outcome = self.wait_one(&target, deadline) => Some(outcome),
                        () = self.stop_requested() => None,
                    };
                    (target, outcome)
                })
                .buffer_unordered(CONCURRENT_WAITS)
                .filter_map(|(target, outcome)| async move {
                    if outcome.is_none() {
                        self.progress.event(Event::new(
                            target.job(),
                            EventKind::Interrupted,
                            "not waited for: interrupted".to_owned(),
                        ));
                    }
                    Some((target, outcome?))
                })
                .collect()
                .await;
        let mut outcomes = BTreeMap::new();
        let mut runs = BTreeMap::new();
        for (target, outcome) in results {
            let outcome = outcome.map_err(|source| ApplyError::Wait {
                job: target.job().to_owned(),
                source,
            })?;
            if let Target::Job(job) = &target {
                runs.insert(job.job.clone(), run_outcome(&outcome));
            }
            outcomes.insert(target.job().to_owned(), outcome);
        }
        if let Err(error) = self.record_outcomes(&runs).await {
            tracing::warn!(%error, "cannot record the outcomes of the runs");
        }
        Ok(outcomes)
    }

    async fn wait_one(
        &self,
        target: &Target,
        deadline: Instant,
    ) -> Result<Outcome, wait::WaitError> {
        let job = target.job().to_owned();
        let mut progress = |progress: &wait::WaitProgress| {
            self.progress
                .event(Event::new(&job, EventKind::Waiting, progress.summary()));
        };
        let outcome = match target {
            Target::Job(target) => {
                Box::pin(wait::job(&self.client, target, deadline, &mut progress)).await?
            }
            Target::Deployment(target) => {
                Box::pin(wait::deployment(
                    &self.client,
                    target,
                    deadline,
                    &mut progress,
                ))
                .await?
            }
        };
        let (kind, message) = outcome_event(target, &outcome);
        self.progress.event(Event::new(target.job(), kind, message));
        Ok(outcome)
    }

    /// The file the job's stderr goes to, when it logs to files.
    fn file_log(&self, job: &str) -> Option<PathBuf> {
        self.rendered
            .get(job)
            .and_then(|rendered| rendered.filelog_stderr.clone())
            .map(PathBuf::from)
    }
}

/// The progress event that ends the wait for `target`.
pub fn outcome_event(target: &Target, outcome: &Outcome) -> (EventKind, String) {
    match outcome {
        Outcome::Succeeded => match target {
            Target::Job(_) => (EventKind::Succeeded, "succeeded".to_owned()),
            // A continuous job does not finish: it rolled out and is running (docs/waiting.md).
            Target::Deployment(_) => (EventKind::Succeeded, "rolled out, running".to_owned()),
        },
        Outcome::CleanedUp => (EventKind::Succeeded, "finished and cleaned up".to_owned()),
        Outcome::Failed(report) => (EventKind::Failed, report.under_its_job()),
        Outcome::TimedOut(last) => (EventKind::Failed, format!("timed out; last: {last}")),
    }
}

/// What the inventory records of a run's wait.
pub fn run_outcome(outcome: &Outcome) -> RunOutcome {
    match outcome {
        Outcome::Succeeded | Outcome::CleanedUp => RunOutcome::Succeeded,
        Outcome::Failed(_) => RunOutcome::Failed,
        Outcome::TimedOut(_) => RunOutcome::Unknown,
    }
}
