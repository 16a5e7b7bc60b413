//! The `watch` daemon's reconciler (SPEC §8, docs/watch.md): `apply`'s pipeline with the daemon's rules. An
//! invalid file is logged (with `validate`'s diagnostics) and ignored, the last valid file staying in force for
//! drift repair; drift, resyncs and retries apply that last valid file; a failed one-off is never retried and
//! `rerun: always` runs once per change of the file, not per reconcile; only jobs dropped from the file while a
//! daemon watched are pruned ([`restrict_prunes`]), and only once the file that drops them has stopped changing;
//! API errors are retried with back-off by the loop. Every reconcile, and how each one-off it started ended, is
//! recorded in the inventory for `status`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch as channel;

use super::{Reconciler, Trigger, Verdict, restrict_prunes};
use crate::cluster::inventory::InventoryStore;
use crate::cluster::lock::Lock;
use crate::cluster::{Connection, StoredInventory};
use crate::config::JobsFile;
use crate::config::diagnostic::render as render_problems;
use crate::config::image::ImageTable;
use crate::model::inventory::{self, DaemonStatus, Reconcile, ReconcileResult, RunOutcome};
use crate::output::Printer;
use crate::output::errors::one_line;
use crate::output::progress::LogProgress;
use crate::pipeline::{self, CarryOut, PlanSettings, Planned, Prepared, Source};
use crate::plan::Action;

/// How the daemon plans and carries out.
pub struct DaemonSettings {
    pub plan: PlanSettings,
    /// Writes in flight at once.
    pub concurrency: usize,
    /// How long a file whose plan deletes must stay unchanged first.
    pub prune_settle: Duration,
    /// Whether the log is for people (diagnostics drawn below the line) rather than JSON lines.
    pub human_log: bool,
}

/// The reconciler: `apply`'s pipeline, with the daemon's rules for invalid files and pruning.
pub struct Daemon {
    connection: Connection,
    /// Held from start to stop.
    lock: Lock,
    source: Source,
    settings: PlanSettings,
    printer: Printer,
    /// Whether the log is for people: diagnostics are drawn below the line instead of escaped into a field.
    human_log: bool,
    concurrency: usize,
    /// How long a file whose plan deletes must stay unchanged first (see `settled`).
    prune_settle: Duration,
    /// The content of the last valid file: what drift repair and resyncs apply.
    last_good: Option<Vec<u8>>,
    /// The file content whose warnings were logged (they are logged once, not at every reconcile).
    warned: Option<Vec<u8>>,
    patterns: Vec<String>,
    /// The jobs of the last valid file carried out; `None` until known (a first daemon knows none).
    baseline: Option<BTreeSet<String>>,
    /// Whether the baseline was looked up in the inventory's daemon status.
    baseline_read: bool,
    status: DaemonStatus,
}

/// What one reconcile came to.
struct Attempt {
    result: ReconcileResult,
    message: String,
    /// The inventory as read by the plan, for writing the status after it.
    stored: Option<Box<StoredInventory>>,
    /// The content hash of the file it read.
    file_hash: Option<String>,
}

impl Attempt {
    fn new(result: ReconcileResult, message: impl Into<String>) -> Self {
        Self {
            result,
            message: message.into(),
            stored: None,
            file_hash: None,
        }
    }

    fn of_file(mut self, content: &[u8]) -> Self {
        self.file_hash = Some(inventory::content_hash(content));
        self
    }

    fn stored(mut self, stored: Option<StoredInventory>) -> Self {
        self.stored = stored.map(Box::new);
        self
    }
}

impl Reconciler for Daemon {
    async fn reconcile(&mut self, trigger: Trigger, stop: channel::Receiver<bool>) -> Verdict {
        tracing::debug!(trigger = trigger.name(), "reconciling");
        if self.lock.is_lost() {
            return Verdict::LockLost;
        }
        let attempt = self.attempt(trigger, stop).await;
        if self.lock.is_lost() {
            // Stopped writing when the lock went; the status is the new holder's to write.
            return Verdict::LockLost;
        }
        let verdict = if attempt.result == ReconcileResult::Failed {
            Verdict::Retry
        } else {
            Verdict::Done
        };
        let record = Reconcile {
            at: jiff::Timestamp::now(),
            trigger: trigger.name().to_owned(),
            file_hash: attempt.file_hash,
            result: attempt.result,
            message: attempt.message,
        };
        if !record.result.succeeded() {
            self.status.last_error = Some(record.clone());
        }
        self.status.last_reconcile = Some(record);
        self.status.jobs = self
            .baseline
            .as_ref()
            .map(|jobs| jobs.iter().cloned().collect())
            .unwrap_or_default();
        self.write_status(attempt.stored.map(|stored| *stored))
            .await;
        verdict
    }

    async fn finished(&mut self, job: &str, uid: &str, outcome: RunOutcome) {
        tracing::info!(job, outcome = outcome.name(), "one-off finished");
        let at = jiff::Timestamp::now();
        let mut store = self.inventory_store(None);
        let recorded = store
            .update(|inventory| {
                if let Some(run) = inventory
                    .jobs
                    .get_mut(job)
                    .and_then(|record| record.runs.last_mut())
                    && run.job_uid.as_deref() == Some(uid)
                    && run.outcome == RunOutcome::Unknown
                {
                    run.outcome = outcome;
                    run.finished = Some(at);
                }
            })
            .await;
        if let Err(error) = recorded {
            tracing::warn!(job, error = %one_line(&error), "cannot record how the one-off ended");
        }
    }

    fn trigger_patterns(&self) -> Vec<String> {
        self.patterns.clone()
    }
}

impl Daemon {
    /// The daemon of `source`, holding `lock` as `identity`; diagnostics for people go to `printer`.
    pub fn new(
        connection: Connection,
        source: Source,
        settings: DaemonSettings,
        identity: String,
        lock: Lock,
        printer: Printer,
    ) -> Self {
        Self {
            connection,
            lock,
            source,
            settings: settings.plan,
            printer,
            human_log: settings.human_log,
            concurrency: settings.concurrency,
            prune_settle: settings.prune_settle,
            last_good: None,
            warned: None,
            patterns: Vec::new(),
            baseline: None,
            baseline_read: false,
            status: DaemonStatus {
                holder: identity,
                started: jiff::Timestamp::now(),
                stopped: None,
                last_reconcile: None,
                last_error: None,
                jobs: Vec::new(),
            },
        }
    }

    async fn attempt(&mut self, trigger: Trigger, stop: channel::Receiver<bool>) -> Attempt {
        // The content whose deletes waited out the settle period.
        let mut settled: Option<Vec<u8>> = None;
        loop {
            let (bytes, file) = match self.load(trigger) {
                Ok(loaded) => loaded,
                Err(attempt) => return attempt,
            };
            match self
                .attempt_once(trigger, bytes, file, settled.as_deref(), &stop)
                .await
            {
                Once::Done(attempt) => return attempt,
                // The plan was made before the wait: plan again from a fresh read of the file and the cluster.
                Once::Settled(bytes) => settled = Some(bytes),
            }
        }
    }

    /// Plans `file` (read as `bytes`) and carries it out, unless its plan deletes and the file has not been seen
    /// unchanged for the settle period: then it waits that out and gives `bytes` back to be planned again
    /// (`settled` is content that waited it out already).
    async fn attempt_once(
        &mut self,
        trigger: Trigger,
        bytes: Vec<u8>,
        file: JobsFile,
        settled: Option<&[u8]>,
        stop: &channel::Receiver<bool>,
    ) -> Once {
        let names: BTreeSet<String> = file
            .jobs
            .iter()
            .map(|located| located.job.name.clone())
            .collect();
        // `rerun: always` is once per apply the user asked for: the start and each change of the file. Drift
        // (our own writes among it), resyncs and retries must not run those jobs again.
        self.settings.options.ignore_rerun_always =
            !matches!(trigger, Trigger::Start | Trigger::File);
        let color = self.human_log && self.printer.color();
        let prepared = pipeline::plan(
            self.connection.clone(),
            self.source.clone(),
            &bytes,
            file,
            &self.settings,
            color,
        )
        .await;
        let mut planned = match prepared {
            Ok(Prepared::Planned(planned)) => planned,
            Ok(Prepared::Invalid(problems)) => {
                self.warn_with(
                    "the jobs file is invalid with the cluster's image table: ignored",
                    &problems,
                );
                return Once::Done(
                    Attempt::new(
                        ReconcileResult::InvalidFile,
                        "the jobs file is invalid with the cluster's image table",
                    )
                    .of_file(&bytes),
                );
            }
            Err(error) => return Once::Done(failed(&error).of_file(&bytes)),
        };
        self.restrict_prunes(&mut planned, &names);
        let deletes = planned
            .plan
            .actions
            .iter()
            .any(|action| action.action == Action::Delete);
        if deletes
            && matches!(trigger, Trigger::File | Trigger::Start)
            && settled != Some(bytes.as_slice())
        {
            tracing::info!(
                settle = ?self.prune_settle,
                "the plan deletes: the deletes wait until the jobs file has not changed for the settle period"
            );
            if self.settled(&bytes).await {
                return Once::Settled(bytes);
            }
            tracing::info!("the jobs file changed again: its deletes wait until it stops changing");
            return Once::Done(Attempt::new(
                ReconcileResult::Unchanged,
                "the jobs file is still changing; nothing was deleted",
            ));
        }
        let stored = planned.snapshot.inventory.clone();
        Once::Done(
            self.carry_out(&planned, trigger, names, stop.clone())
                .await
                .stored(stored)
                .of_file(&bytes),
        )
    }

    /// The file to apply, loaded: a change reads it, drift, resyncs and retries apply the last valid one. An
    /// unreadable or invalid file is logged and ignored.
    fn load(&mut self, trigger: Trigger) -> Result<(Vec<u8>, JobsFile), Attempt> {
        let bytes = match (&self.last_good, trigger) {
            (Some(bytes), Trigger::Drift | Trigger::Resync | Trigger::Retry) => bytes.clone(),
            _ => match self.source.read() {
                Ok(bytes) => bytes,
                Err(error) => {
                    let message = one_line(&error);
                    tracing::warn!(
                        error = message,
                        "cannot read the jobs file; the last valid state stays applied"
                    );
                    return Err(Attempt::new(ReconcileResult::InvalidFile, message));
                }
            },
        };
        let color = self.human_log && self.printer.color();
        let mut file = match self
            .source
            .load(&bytes, &ImageTable::bundled(), false, color)
        {
            Ok(file) => file,
            Err(problems) => {
                self.warn_with(
                    "the jobs file is invalid: ignored, the last valid state stays applied",
                    &problems,
                );
                return Err(Attempt::new(
                    ReconcileResult::InvalidFile,
                    "the jobs file is invalid; see `toolforge-jobs validate`",
                )
                .of_file(&bytes));
            }
        };
        if !file.warnings.is_empty() && self.warned.as_ref() != Some(&bytes) {
            let warnings = render_problems(&file.source, &file.warnings, color);
            self.warn_with("the jobs file has warnings", &warnings);
        }
        self.warned = Some(bytes.clone());
        // Logged once, not at every reconcile.
        file.warnings.clear();
        self.patterns = file
            .jobs
            .iter()
            .flat_map(|located| located.job.trigger_files.iter().cloned())
            .collect();
        self.last_good = Some(bytes.clone());
        Ok((bytes, file))
    }

    /// Logs a warning with `validate`'s report: drawn below the line for people, a field of the JSON line.
    fn warn_with(&self, message: &str, diagnostics: &str) {
        if self.human_log {
            tracing::warn!("{message}:");
            if let Err(error) = self.printer.message(diagnostics) {
                tracing::debug!(%error, "cannot write the diagnostics");
            }
        } else {
            tracing::warn!(diagnostics, "{message}");
        }
    }

    /// Whether the file held `bytes` all through the prune settle period (looked at every 250 ms): a delete is
    /// carried out only when the file that asks for it has stopped changing, because a file cut at a job boundary
    /// is valid, and a writer that pauses in the middle of it would otherwise prune the jobs after the pause.
    async fn settled(&self, bytes: &[u8]) -> bool {
        let until = tokio::time::Instant::now() + self.prune_settle;
        loop {
            let now = tokio::time::Instant::now();
            if now >= until {
                return true;
            }
            tokio::time::sleep((until - now).min(Duration::from_millis(250))).await;
            if !self.source.read().is_ok_and(|now| now == bytes) {
                return false;
            }
        }
    }

    /// Leaves alone the deletes of jobs the file did not drop while a daemon watched (see `restrict_prunes`).
    fn restrict_prunes(&mut self, planned: &mut Planned, names: &BTreeSet<String>) {
        if !self.baseline_read {
            self.baseline_read = true;
            self.baseline = planned
                .snapshot
                .inventory
                .as_ref()
                .and_then(|stored| stored.inventory.daemon.as_ref())
                .map(|daemon| daemon.jobs.iter().cloned().collect());
        }
        let allowed: BTreeSet<String> = self
            .baseline
            .as_ref()
            .map(|baseline| baseline.difference(names).cloned().collect())
            .unwrap_or_default();
        let left = restrict_prunes(&mut planned.plan, &allowed);
        if !left.is_empty() {
            tracing::info!(
                jobs = ?left,
                "in the inventory but not in the file, and not dropped from it while a daemon watched: left alone (stop the daemon and run `apply` to delete them)"
            );
        }
    }

    /// Carries out a plan the daemon may carry out: not refused, without errors, with writes.
    async fn carry_out(
        &mut self,
        planned: &Planned,
        trigger: Trigger,
        names: BTreeSet<String>,
        stop: channel::Receiver<bool>,
    ) -> Attempt {
        let plan = &planned.plan;
        if plan.is_refused() {
            let message = plan
                .refusals
                .iter()
                .map(|refusal| refusal.message.clone())
                .collect::<Vec<_>>()
                .join("; ");
            tracing::error!(
                refusals = message,
                "a safety guard refuses the plan: nothing was changed"
            );
            return Attempt::new(ReconcileResult::Refused, message);
        }
        if plan.has_errors() {
            let message = cannot_apply(plan);
            tracing::error!(
                problems = message,
                "the plan cannot be applied: nothing was changed"
            );
            return Attempt::new(ReconcileResult::Refused, message);
        }
        if !planned.needs_writes() {
            tracing::debug!(trigger = trigger.name(), "nothing to change");
            self.baseline = Some(names);
            return Attempt::new(ReconcileResult::Unchanged, "nothing to change");
        }

        let how = CarryOut {
            by: &self.status.holder,
            progress: Arc::new(LogProgress {
                failures_as_errors: true,
            }),
            concurrency: self.concurrency,
            stops: vec![stop, self.lock.lost()],
            wait: None,
        };
        let applied = match Box::pin(pipeline::carry_out(planned, how)).await {
            Ok(carried) => carried.applied,
            Err(error) => return failed(&error),
        };
        let mut message = format!(
            "{} of {} jobs changed",
            applied.changed.len(),
            plan.actions.len()
        );
        if let Some((job, _)) = &applied.failed_barrier {
            // Its wait already logged how it failed.
            tracing::error!(
                job,
                "a `wait` one-off did not succeed: the jobs after it were not applied"
            );
            message = format!(
                "`{job}` has `wait` and did not succeed; the jobs after it were not applied"
            );
        } else if applied.interrupted {
            message.push_str(" (interrupted)");
        } else {
            // Every planned prune ran: the file's jobs are the baseline from now on.
            self.baseline = Some(names);
        }
        tracing::info!(trigger = trigger.name(), "{message}");
        Attempt::new(ReconcileResult::Applied, message)
    }

    /// Records the status in the inventory (optimistic concurrency: a stale read costs one more round trip).
    /// The inventory, from `stored` as read (`None`: read on the first conflict).
    fn inventory_store(&self, stored: Option<StoredInventory>) -> InventoryStore {
        InventoryStore::new(
            &self.connection.client,
            &self.source.tool.namespace(),
            &self.settings.set_name,
            stored,
        )
    }

    async fn write_status(&self, stored: Option<StoredInventory>) {
        let mut store = self.inventory_store(stored);
        let status = &self.status;
        if let Err(error) = store
            .update(|inventory| inventory.daemon = Some(status.clone()))
            .await
        {
            tracing::warn!(error = %one_line(&error), "cannot record the daemon's status in the inventory");
        }
    }

    /// Records that the daemon stopped; the lock, to release.
    pub async fn stopped(mut self) -> Lock {
        self.status.stopped = Some(jiff::Timestamp::now());
        self.write_status(None).await;
        self.lock
    }
}

/// How one planning of the file ended.
enum Once {
    /// Carried out, or given up.
    Done(Attempt),
    /// Its deletes waited out the settle period for this content: plan it again before carrying it out.
    Settled(Vec<u8>),
}

fn failed(error: &dyn std::error::Error) -> Attempt {
    let message = one_line(error);
    tracing::error!(
        error = message,
        "the reconcile failed; trying again after a back-off"
    );
    Attempt::new(ReconcileResult::Failed, message)
}

/// Why a plan cannot be applied, in one line: the conflicts, the rejected writes, the exceeded quota.
fn cannot_apply(plan: &crate::plan::Plan) -> String {
    let mut problems: Vec<String> = plan
        .actions
        .iter()
        .filter(|action| {
            action.action == Action::Conflict
                || !action.errors.is_empty()
                || action.dry_run.is_some()
        })
        .map(|action| format!("`{}`: {}", action.job, action.reason))
        .collect();
    problems.extend(
        plan.quota
            .iter()
            .filter(|quota| quota.exceeded)
            .map(|quota| format!("quota `{}` exceeded", quota.resource)),
    );
    problems.join("; ")
}
