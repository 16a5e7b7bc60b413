//! What the executor records in the inventory, and when: a one-off's run before its Job is created, each job's
//! kind, hash and fingerprint (and the started Job's UID) once its stage is applied, how runs ended, and the
//! apply itself ([`ApplyRecord`]) for `status` and `wait --file`. A run is recorded once however often an update
//! is retried, and only the last run of each of the newest definitions is kept.

use std::collections::BTreeMap;

use super::{ActionOutcome, Applied, ApplyError, Executor};
use crate::cluster::inventory::InventoryWriteError;
use crate::model::Kind;
use crate::model::inventory::{
    ApplyRecord, ApplyResult, JobRecord, Rollout, RunOutcome, RunRecord,
};
use crate::plan::{PlannedAction, RecordUpdate};
use crate::render::Rendered;

/// Definitions of one job whose last run the inventory remembers: coming back to one of them does not run it
/// again. Older ones are forgotten, so that the record stays small (the inventory is one ConfigMap, at most 1 MiB).
const REMEMBERED_DEFINITIONS: usize = 20;

/// What the executor keeps of a job's rendering: what it records in the inventory, and where the job's stderr
/// goes. The rendered objects themselves are in the plan's writes; keeping them twice would double the memory of
/// a large apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedJob {
    pub kind: Kind,
    pub desired_hash: String,
    pub fingerprint: String,
    /// The file the job's stderr goes to, when it logs to files.
    pub filelog_stderr: Option<String>,
}

impl From<&Rendered> for RenderedJob {
    fn from(rendered: &Rendered) -> Self {
        Self {
            kind: rendered.canonical.kind,
            desired_hash: rendered.desired_hash.clone(),
            fingerprint: rendered.fingerprint.clone(),
            filelog_stderr: rendered.canonical.filelog_stderr.clone(),
        }
    }
}

impl Executor {
    /// The inventory's record of what `applied` did, when the options name its origin.
    pub(super) fn apply_record(
        &self,
        applied: &Applied,
        result: ApplyResult,
    ) -> Option<ApplyRecord> {
        let origin = self.options.origin.as_ref()?;
        Some(ApplyRecord {
            at: jiff::Timestamp::now(),
            by: origin.by.clone(),
            file_hash: origin.file_hash.clone(),
            changed: applied.changed.clone(),
            started: applied.started_jobs.clone(),
            rollouts: applied
                .deployments
                .iter()
                .map(|(job, (uid, generation))| {
                    let rollout = Rollout {
                        uid: uid.clone(),
                        generation: *generation,
                    };
                    (job.clone(), rollout)
                })
                .collect(),
            result,
        })
    }

    /// Records an apply that ended before the end of the plan (the complete one is recorded with the prunes).
    pub(super) async fn record_apply(
        &self,
        applied: &Applied,
        result: ApplyResult,
    ) -> Result<(), InventoryWriteError> {
        let Some(record) = self.apply_record(applied, result) else {
            return Ok(());
        };
        self.inventory
            .lock()
            .await
            .update(|inventory| inventory.last_apply = Some(record.clone()))
            .await
    }

    /// Records the outcome of one-off runs once they are known.
    pub async fn record_outcomes(
        &self,
        outcomes: &BTreeMap<String, RunOutcome>,
    ) -> Result<(), InventoryWriteError> {
        if outcomes.is_empty() {
            return Ok(());
        }
        let finished = jiff::Timestamp::now();
        self.inventory
            .lock()
            .await
            .update(|inventory| {
                for (job, outcome) in outcomes {
                    if let Some(run) = inventory
                        .jobs
                        .get_mut(job)
                        .and_then(|record| record.runs.last_mut())
                    {
                        run.outcome = *outcome;
                        run.finished = Some(finished);
                    }
                }
            })
            .await
    }

    /// Writes a run record for every one-off of the stage that runs, in one inventory write, before any Job.
    pub(super) async fn record_runs(&self, stage: &[&PlannedAction]) -> Result<(), ApplyError> {
        let runs: Vec<(&str, &RenderedJob)> = stage
            .iter()
            .filter(|action| action.records_run)
            .filter_map(|action| {
                let rendered = self.rendered.get(&action.job)?;
                Some((action.job.as_str(), rendered))
            })
            .collect();
        if runs.is_empty() {
            return Ok(());
        }
        let started = jiff::Timestamp::now();
        self.inventory
            .lock()
            .await
            .update(|inventory| {
                for (job, rendered) in &runs {
                    let record = inventory.record_mut(job, || job_record(rendered, Vec::new()));
                    let run = RunRecord {
                        fingerprint: rendered.fingerprint.clone(),
                        job_uid: None,
                        started,
                        finished: None,
                        outcome: RunOutcome::Unknown,
                    };
                    match record.runs.last_mut() {
                        // The update runs again on a conflict, also when our own first write went through (a
                        // lost response): the run is recorded once.
                        Some(last) if *last == run => {}
                        // A run of this definition recorded by an apply that stopped before creating its Job
                        // never started: this is that run.
                        Some(last)
                            if last.fingerprint == run.fingerprint
                                && last.job_uid.is_none()
                                && last.outcome == RunOutcome::Unknown =>
                        {
                            *last = run;
                        }
                        _ => record.runs.push(run),
                    }
                    trim_runs(&mut record.runs);
                }
            })
            .await?;
        Ok(())
    }

    /// Records what the stage applied: each job's kind, hash and fingerprint, and the UIDs of the Jobs started.
    pub(super) async fn record_jobs(&self, done: &[ActionOutcome]) -> Result<(), ApplyError> {
        let now = jiff::Timestamp::now();
        let records: Vec<(&ActionOutcome, &RenderedJob)> = done
            .iter()
            .filter_map(|outcome| Some((outcome, self.rendered.get(&outcome.job)?)))
            .collect();
        if records.is_empty() {
            return Ok(());
        }
        self.inventory
            .lock()
            .await
            .update(|inventory| {
                for (outcome, rendered) in &records {
                    let record =
                        inventory.record_mut(&outcome.job, || job_record(rendered, Vec::new()));
                    let runs = std::mem::take(&mut record.runs);
                    *record = job_record(rendered, runs);
                    if let (Some(uid), Some(run)) = (&outcome.job_uid, record.runs.last_mut()) {
                        run.job_uid = Some(uid.clone());
                    }
                    if let Some(RecordUpdate::Outcome { outcome }) = outcome.records
                        && let Some(run) = record
                            .runs
                            .iter_mut()
                            .rev()
                            .find(|run| run.fingerprint == rendered.fingerprint)
                    {
                        run.outcome = outcome;
                        run.finished.get_or_insert(now);
                    }
                }
            })
            .await?;
        Ok(())
    }
}

/// Keeps what running at most once per definition needs: the last run of each of the newest
/// [`REMEMBERED_DEFINITIONS`] definitions, oldest first.
fn trim_runs(runs: &mut Vec<RunRecord>) {
    let mut seen = std::collections::BTreeSet::new();
    let mut kept: Vec<RunRecord> = runs
        .drain(..)
        .rev()
        .filter(|run| seen.insert(run.fingerprint.clone()))
        .take(REMEMBERED_DEFINITIONS)
        .collect();
    kept.reverse();
    *runs = kept;
}

fn job_record(rendered: &RenderedJob, runs: Vec<RunRecord>) -> JobRecord {
    JobRecord {
        kind: rendered.kind,
        desired_hash: rendered.desired_hash.clone(),
        fingerprint: rendered.fingerprint.clone(),
        runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fingerprint: usize, second: i64) -> RunRecord {
        RunRecord {
            fingerprint: format!("f{fingerprint}"),
            job_uid: Some(format!("u{second}")),
            started: jiff::Timestamp::from_second(1_700_000_000 + second).unwrap(),
            finished: None,
            outcome: RunOutcome::Succeeded,
        }
    }

    #[test]
    fn runs_are_trimmed_to_the_last_of_each_recent_definition() {
        // Definition 0 ran twice (a `--replace`), then 29 others ran once each.
        let mut runs = vec![run(0, 0), run(0, 1)];
        runs.extend((1..30).map(|index| run(index, 10 + i64::try_from(index).unwrap())));
        trim_runs(&mut runs);
        assert_eq!(runs.len(), REMEMBERED_DEFINITIONS);
        assert_eq!(
            runs.first().unwrap().fingerprint,
            "f10",
            "the oldest definitions go first"
        );
        assert_eq!(runs.last().unwrap().fingerprint, "f29");

        let mut replaced = vec![run(0, 0), run(1, 1), run(0, 2)];
        trim_runs(&mut replaced);
        assert_eq!(
            replaced,
            vec![run(1, 1), run(0, 2)],
            "the last run of each definition, in order"
        );
    }
}
