//! One-off jobs of the inventory: run at most once per fingerprint, again only when asked.

use crate::config::job::JobKind;
use crate::model::inventory::{JobRecord, RunOutcome, RunRecord};
use crate::plan::Action;
use crate::plan::ObjectKind;
use crate::plan::PlannedAction;
use crate::plan::RecordUpdate;
use crate::plan::Wait;
use crate::plan::WriteVerb;
use crate::plan::decide::{Desired, ticked};
use crate::plan::immutable;
use crate::plan::live::Live;

/// What a `wait` one-off that does not run now means for the jobs after it (SPEC §7: they are applied only
/// after it succeeded).
pub(super) enum Barrier {
    /// Its last run with the current definition failed: the jobs after it are held.
    Failed,
    /// Its Job of the current definition is still running: `apply` waits for it before the jobs after it.
    Running,
}

impl Desired<'_> {
    /// Whether this job is a `wait` one-off that, planned as `action`, holds back or delays the jobs after it.
    pub(super) fn barrier(&self, action: &PlannedAction) -> Option<Barrier> {
        if !matches!(self.job.kind, JobKind::OneOff { wait: Some(_), .. }) {
            return None;
        }
        match action.action {
            // Nobody saw how its run ended (an apply died while it ran): not a success, so it holds too.
            Action::Done {
                outcome: RunOutcome::Failed | RunOutcome::Unknown,
            } => Some(Barrier::Failed),
            Action::Unchanged => {
                let live = self.objects.get(ObjectKind::Job)?;
                let last = match self.record {
                    Some(record) => self.last_run(record, Some(live)),
                    None => live.finished,
                };
                match (live.finished, last) {
                    (_, Some(RunOutcome::Failed)) => Some(Barrier::Failed),
                    (None, _) => Some(Barrier::Running),
                    (Some(_), _) => None,
                }
            }
            _ => None,
        }
    }

    /// How the last run with the desired fingerprint ended; a live Job's conditions tell what the record may not.
    fn last_run(&self, record: &JobRecord, live: Option<&Live<'_>>) -> Option<RunOutcome> {
        let fingerprint = &self.rendered.fingerprint;
        let run = self.recorded_run(record);
        let live_outcome = live
            .filter(|live| {
                live.fingerprint.as_deref().unwrap_or(&record.fingerprint) == fingerprint.as_str()
            })
            .and_then(|live| live.finished);
        match (run, live_outcome) {
            (Some(run), Some(outcome)) if run.outcome == RunOutcome::Unknown => Some(outcome),
            (Some(run), _) => Some(run.outcome),
            (None, Some(outcome)) => Some(outcome),
            (None, None) if record.fingerprint == *fingerprint => Some(RunOutcome::Unknown),
            (None, None) => None,
        }
    }

    pub(super) fn one_off(&self, record: &JobRecord, live: Option<&Live<'_>>) -> PlannedAction {
        let last = self.last_run(record, live);
        let requested = self.requested_rerun(last);
        let Some(live) = live else {
            return self.without_job(record, requested, last);
        };
        let live_fingerprint = live.fingerprint.as_deref().unwrap_or(&record.fingerprint);
        if requested.is_none()
            && live_fingerprint == self.rendered.fingerprint
            && let Some(outcome) = self.recorded_outcome(record)
        {
            // A run whose end is recorded is over, whether or not the TTL controller has removed its Job yet: the
            // row does not change when it does, and a plan needs no Job to tell (a no-op does not list them).
            return self.done(outcome);
        }
        let ran = record
            .runs
            .iter()
            .any(|run| run.fingerprint == self.rendered.fingerprint);
        if requested.is_none()
            && live_fingerprint != self.rendered.fingerprint
            && ran
            && let Some(outcome) = last
        {
            // Back to a definition that already ran: at most one run per fingerprint; the live Job of the other
            // definition is left to finish and be cleaned up.
            return self.done(outcome);
        }
        if requested.is_none()
            && live_fingerprint == self.rendered.fingerprint
            && (self.unconfirmed(record) || live.suspended)
        {
            // The Job an apply created before it died: take it over and let it run (it is suspended until its
            // UID is recorded).
            let mut action = self.row(
                Action::Adopt,
                "its Job was created by an apply that stopped before recording it: recorded and started",
            );
            let write = self.write(
                ObjectKind::Job,
                WriteVerb::Resume,
                live.reference.uid.clone(),
            );
            action.writes.push(write);
            action.waits.push(Wait::Completed {
                barrier: matches!(self.job.kind, JobKind::OneOff { wait: Some(_), .. }),
            });
            return action;
        }
        if requested.is_none() && live_fingerprint == self.rendered.fingerprint {
            let reason = match live.finished {
                None => "the Job of this definition is running",
                Some(outcome) => run_reason(Some(outcome)),
            };
            let mut action = self.row(Action::Unchanged, reason);
            if last == Some(RunOutcome::Failed) {
                action.hint = Some(self.retry_hint());
            }
            if let Some(outcome) = live.finished
                && self
                    .recorded_run(record)
                    .is_some_and(|run| run.outcome == RunOutcome::Unknown)
            {
                action.records = Some(RecordUpdate::Outcome { outcome });
            }
            return action;
        }
        let changes = live
            .read_back(self.context)
            .and_then(Result::ok)
            .map(|back| self.changes(&back.job))
            .unwrap_or_default();
        let reason = requested.unwrap_or_else(|| {
            if changes.is_empty() {
                "triggers changed".to_owned()
            } else if changes.iter().any(|change| change.immutable.is_some()) {
                format!(
                    "{} changed (immutable: {})",
                    ticked(&changes),
                    immutable::JOB_TEMPLATE
                )
            } else {
                format!("{} changed", ticked(&changes))
            }
        });
        let mut action = self.row(Action::Replace, reason);
        action.changes = changes;
        action.records_run = true;
        self.replace_object(&mut action, live);
        action
    }

    /// A one-off of the inventory whose Job is not live (or the Jobs were not listed).
    fn without_job(
        &self,
        record: &JobRecord,
        requested: Option<String>,
        last: Option<RunOutcome>,
    ) -> PlannedAction {
        match (requested, last) {
            (Some(reason), _) => self.rerun(reason),
            // Its Job is created suspended and only resumed once its UID is recorded: a run without a UID
            // and without a live Job never started (an apply died between the two), whatever the TTL did.
            (None, Some(RunOutcome::Unknown)) if self.unconfirmed(record) => self.rerun(
                "its run was recorded but its Job never created (an apply stopped): runs now"
                    .to_owned(),
            ),
            (None, Some(outcome)) => {
                let mut action = self.done(outcome);
                if self.ended_unseen(record) {
                    // Its Job is gone (the TTL controller removes it 30 s after it ends): the run is over, and
                    // saying so spares later plans listing the Jobs to find out (docs/apply.md).
                    action.records = Some(RecordUpdate::Outcome {
                        outcome: RunOutcome::Unknown,
                    });
                }
                action
            }
            (None, None) => {
                let reason = if record.desired_hash == self.rendered.desired_hash {
                    "triggers changed since the last run"
                } else {
                    "definition changed since the last run"
                };
                self.rerun(reason.to_owned())
            }
        }
    }

    /// The record's last run with the desired fingerprint.
    fn recorded_run<'r>(&self, record: &'r JobRecord) -> Option<&'r RunRecord> {
        record
            .runs
            .iter()
            .rev()
            .find(|run| run.fingerprint == self.rendered.fingerprint)
    }

    /// Whether the last run with the desired fingerprint has a Job that is gone, though the record neither says how
    /// it ended nor that it is over: the Jobs were listed, and its Job, created (its UID is recorded), is not there.
    fn ended_unseen(&self, record: &JobRecord) -> bool {
        self.jobs_listed
            && self.recorded_run(record).is_some_and(|run| {
                run.outcome == RunOutcome::Unknown
                    && run.finished.is_none()
                    && run.job_uid.is_some()
            })
    }

    /// How the last run with the desired fingerprint ended, when the record knows.
    fn recorded_outcome(&self, record: &JobRecord) -> Option<RunOutcome> {
        self.recorded_run(record)
            .map(|run| run.outcome)
            .filter(|outcome| *outcome != RunOutcome::Unknown)
    }

    /// Whether the last run with the desired fingerprint was recorded without the UID of its Job.
    fn unconfirmed(&self, record: &JobRecord) -> bool {
        self.recorded_run(record)
            .is_some_and(|run| run.job_uid.is_none() && run.outcome == RunOutcome::Unknown)
    }

    fn retry_hint(&self) -> String {
        format!(
            "run it again with `--retry-failed` or `--replace {}`",
            self.name()
        )
    }

    fn rerun(&self, reason: String) -> PlannedAction {
        let mut action = self.row(Action::Rerun, reason);
        action.records_run = true;
        self.writes(&mut action, WriteVerb::Create);
        action
    }

    fn done(&self, outcome: RunOutcome) -> PlannedAction {
        let mut action = self.row(Action::Done { outcome }, run_reason(Some(outcome)));
        if outcome == RunOutcome::Failed {
            action.hint = Some(self.retry_hint());
        }
        action
    }
}

/// What the run record says, for humans.
fn run_reason(outcome: Option<RunOutcome>) -> &'static str {
    match outcome {
        Some(RunOutcome::Succeeded) => "ran with this definition: succeeded",
        Some(RunOutcome::Failed) => "ran with this definition: failed",
        Some(RunOutcome::Unknown) | None => "ran with this definition: outcome unknown",
    }
}

/// The unchanged `wait` one-off whose Job is still running: `apply` waits for that Job (by its live UID) before
/// the jobs after it.
pub(super) fn awaited(action: &mut PlannedAction) {
    action.reason = format!("{}; the jobs after it wait for it", action.reason);
    action.waits.push(Wait::Completed { barrier: true });
}

/// Holds every change of `later` (the jobs after the failed `wait` one-off `barrier`, and the prunes): nothing is
/// written, the reason says why and what would be done.
pub(super) fn hold(barrier: &mut PlannedAction, later: &mut [PlannedAction]) {
    let name = barrier.job.clone();
    barrier.hint = Some(format!(
        "the jobs after it are held until it succeeds: fix it (a changed definition runs again), or run it again \
         with `--retry-failed` or `--replace {name}`"
    ));
    for action in later.iter_mut().filter(|action| action.action.changes()) {
        action.reason = format!(
            "held: `{name}` (wait) failed; then {}: {}",
            action.action.name(),
            action.reason
        );
        action.action = Action::Held;
        action.deletes.clear();
        action.writes.clear();
        action.waits = vec![Wait::Barrier { job: name.clone() }];
        action.records_run = false;
        action.runs_now = false;
        action.errors.clear();
    }
}
