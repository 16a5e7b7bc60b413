//! `apply`: carries out a [`Plan`] against the cluster (SPEC §7).
//!
//! The fourth stage of the pipeline. Order: the file's jobs in file order, cut into stages after every one-off
//! with `wait` (a barrier: the next stage starts only after it succeeded; an unchanged one whose Job an earlier
//! apply started and that is still running is waited for by its live UID; the plan holds the jobs after one whose
//! current definition failed); inside a stage, actions run concurrently (bounded); prunes come last. Per action:
//! deletes first (never with the Job default `Orphan` propagation, guarded by the UID we planned against), and
//! when the same object is written again, we wait until that UID is gone before creating it; then the writes
//! (POST, PUT guarded by the listed resourceVersion, or a merge patch of our labels for an adoption). A one-off's
//! run is recorded in the inventory **before** its Job is created, so a crash can leave "outcome unknown" but
//! never a second run. Transient API errors are retried ([`crate::cluster::retry`]); any other error stops the
//! apply and names the job. A stop (Ctrl-C, the daemon's SIGTERM) ends every wait at once and starts no new
//! action; the writes in flight finish. Each apply that wrote records in the inventory what it did
//! ([`ApplyRecord`]), for `status` and `wait --file`.

mod event;
mod records;
mod run_now;
mod waiting;
mod write;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use tokio::sync::{Mutex, watch as channel};

use crate::cluster::inventory::{InventoryStore, InventoryWriteError};
use crate::model::inventory::{ApplyResult, Inventory};
use crate::plan::{Action, LiveState, ObjectRef, Plan, PlannedAction, RecordUpdate, Wait};

pub use event::{Event, EventKind, Progress};
pub use records::RenderedJob;
pub use waiting::{Target, outcome_event, run_outcome};
pub use write::WriteError;

/// Writes in flight at once inside a stage, unless told otherwise: enough to hide a remote API server's latency
/// (100 changed jobs at 5 ms: 5× faster than one at a time), few enough for an API server's priority and
/// fairness to take in.
pub const DEFAULT_CONCURRENCY: u16 = 32;

/// How `apply` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Writes in flight at once inside a stage.
    pub concurrency: usize,
    /// How long to wait for a deleted object to be gone before re-creating it.
    pub deletion_timeout: Duration,
    /// How long each `wait` one-off may take before the jobs after it are given up (its `wait: SECONDS`).
    pub barrier_timeouts: BTreeMap<String, Duration>,
    /// Who applies which file content, for the inventory's [`ApplyRecord`]; `None` records nothing.
    pub origin: Option<Origin>,
}

/// Who carries out a plan, and made from which content of the jobs file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The lock holder's identity.
    pub by: String,
    /// [`crate::model::inventory::content_hash`] of the file.
    pub file_hash: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            concurrency: usize::from(DEFAULT_CONCURRENCY),
            deletion_timeout: Duration::from_secs(300),
            barrier_timeouts: BTreeMap::new(),
            origin: None,
        }
    }
}

/// How long a barrier waits when `Options::barrier_timeouts` does not say.
const DEFAULT_BARRIER_TIMEOUT: Duration = Duration::from_secs(600);

/// What was done: the jobs changed, and the one-off Jobs created (job name → Job UID).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// The jobs whose action changed something (an unchanged job whose record was rewritten is not one).
    pub changed: Vec<String>,
    pub started_jobs: BTreeMap<String, String>,
    /// Deployments written: job name → (UID, generation of our write), for the rollout wait.
    pub deployments: BTreeMap<String, (String, i64)>,
    /// Set when a stop (Ctrl-C) ended the apply before every action ran or every barrier was waited for.
    pub interrupted: bool,
    /// A barrier one-off that did not succeed (the later stages were not applied), and how its wait ended.
    pub failed_barrier: Option<(String, crate::wait::Outcome)>,
    /// The barrier one-offs waited for.
    pub barriers: Vec<String>,
    /// The jobs a stop ended the wait for (they go on).
    pub not_waited_for: Vec<String>,
    /// The objects each job's deletes removed (not those that were gone already), in the order deleted.
    pub deleted: BTreeMap<String, Vec<ObjectRef>>,
    /// The Jobs started from a scheduled job's CronJob now: job name → Job name.
    pub ran_now: BTreeMap<String, String>,
}

/// Why an apply stopped.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("job `{job}` ({action})")]
    Action {
        job: String,
        action: &'static str,
        #[source]
        source: Box<WriteError>,
    },
    #[error(transparent)]
    Inventory(#[from] InventoryWriteError),
    #[error("cannot wait for job `{job}`")]
    Wait {
        job: String,
        #[source]
        source: crate::wait::WaitError,
    },
}

impl ApplyError {
    /// Whether a write's precondition failed (409 Conflict: a stale resourceVersion or UID, a name taken): what
    /// the plan was made from changed since it was read.
    pub fn is_conflict(&self) -> bool {
        match self {
            ApplyError::Action { source, .. } => matches!(
                source.as_ref(),
                WriteError::Api { source, .. } if crate::cluster::is_conflict(source)
            ),
            ApplyError::Inventory(_) | ApplyError::Wait { .. } => false,
        }
    }
}

/// Everything an apply needs besides the plan.
pub struct Executor {
    client: kube::Client,
    namespace: String,
    live: Arc<LiveState>,
    rendered: BTreeMap<String, RenderedJob>,
    inventory: Mutex<InventoryStore>,
    progress: Arc<dyn Progress>,
    /// Any of them becoming `true` stops (see the module documentation).
    stops: Vec<channel::Receiver<bool>>,
    options: Options,
}

impl Executor {
    pub fn new(
        client: kube::Client,
        namespace: &str,
        live: Arc<LiveState>,
        rendered: BTreeMap<String, RenderedJob>,
        inventory: InventoryStore,
        progress: Arc<dyn Progress>,
        options: Options,
    ) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            live,
            rendered,
            inventory: Mutex::new(inventory),
            progress,
            stops: Vec::new(),
            options,
        }
    }

    /// Stops also when `stop` becomes `true` (Ctrl-C, the daemon's SIGTERM, a lost lock): no new action starts
    /// and every wait ends at once.
    #[must_use]
    pub fn stopped_by(mut self, stop: channel::Receiver<bool>) -> Self {
        self.stops.push(stop);
        self
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.stops.iter().any(|stop| *stop.borrow())
    }

    /// Returns once a stop is asked for; never when nobody can ask.
    async fn stop_requested(&self) {
        let waits = self.stops.iter().map(|stop| {
            let mut stop = stop.clone();
            Box::pin(async move {
                if stop.wait_for(|stop| *stop).await.is_err() {
                    std::future::pending::<()>().await;
                }
            })
        });
        let waits: Vec<_> = waits.collect();
        if waits.is_empty() {
            std::future::pending::<()>().await;
        }
        futures::future::select_all(waits).await;
    }

    /// The inventory as last written.
    pub async fn inventory(&self) -> Inventory {
        self.inventory.lock().await.current().clone()
    }

    /// Carries out `plan` and returns what it did. After each stage whose last job is a `wait` one-off that was
    /// started (or is still running, unchanged), it waits for that Job (the outcome is recorded in the inventory);
    /// the next stage starts only when it succeeded.
    pub async fn execute(&self, plan: &Plan) -> Result<Applied, ApplyError> {
        let mut applied = Applied::default();
        let (prunes, main): (Vec<&PlannedAction>, Vec<&PlannedAction>) = plan
            .actions
            .iter()
            .filter(|action| action.action.changes() || needs_record(action))
            .partition(|action| action.action == Action::Delete);
        let stages = stages(&main);
        for (index, stage) in stages.iter().enumerate() {
            if self.stopped(&mut applied) {
                self.record_apply(&applied, ApplyResult::Interrupted)
                    .await?;
                return Ok(applied);
            }
            self.run_stage(stage, &mut applied).await?;
            if let Some(last) = stage.last()
                && is_barrier(last)
                && let Some(uid) = self.barrier_uid(&applied, last)
            {
                let timeout = self
                    .options
                    .barrier_timeouts
                    .get(&last.job)
                    .copied()
                    .unwrap_or(DEFAULT_BARRIER_TIMEOUT);
                let target = self.job_target(&last.job, &uid);
                let mut outcomes =
                    Box::pin(self.wait_for(vec![target], tokio::time::Instant::now() + timeout))
                        .await?;
                applied.barriers.push(last.job.clone());
                match outcomes.remove(&last.job) {
                    Some(outcome) if outcome.is_success() => {}
                    Some(outcome) => {
                        let barrier = last.job.clone();
                        let held = stages[index + 1..].iter().flatten().chain(&prunes);
                        for action in held {
                            self.progress.event(Event::new(
                                &action.job,
                                EventKind::Held,
                                format!("held: not applied, `{barrier}` did not succeed"),
                            ));
                        }
                        applied.failed_barrier = Some((barrier.clone(), outcome));
                        self.record_apply(&applied, ApplyResult::Held { barrier })
                            .await?;
                        return Ok(applied);
                    }
                    None => applied.not_waited_for.push(last.job.clone()),
                }
            }
        }
        if self.stopped(&mut applied) {
            self.record_apply(&applied, ApplyResult::Interrupted)
                .await?;
            return Ok(applied);
        }
        self.run_prunes(&prunes, applied).await
    }

    /// Carries out the prunes (all at once, bounded), then records in one inventory write what they removed and,
    /// when everything succeeded, the complete apply.
    async fn run_prunes(
        &self,
        prunes: &[&PlannedAction],
        mut applied: Applied,
    ) -> Result<Applied, ApplyError> {
        let results: Vec<_> = futures::stream::iter(prunes.iter().copied())
            .map(|action| self.run_action(action))
            .buffer_unordered(self.options.concurrency.max(1))
            .collect()
            .await;
        // What was deleted is recorded also when another delete failed.
        let mut first_error = None;
        let mut removed = Vec::new();
        for result in results {
            match result {
                Ok(outcome) => removed.push(outcome),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        for outcome in &removed {
            applied.note(outcome);
        }
        let record = first_error
            .is_none()
            .then(|| self.apply_record(&applied, ApplyResult::Complete))
            .flatten();
        let now = jiff::Timestamp::now();
        let mut inventory = self.inventory.lock().await;
        // Without a record to keep or drop and nothing to note, no inventory is written (nor created where there
        // is none: `delete` of a job no inventory has).
        let recorded =
            |outcome: &ActionOutcome| inventory.current().jobs.contains_key(&outcome.job);
        if record.is_none() && !removed.iter().any(recorded) {
            return first_error.map_or(Ok(applied), Err);
        }
        inventory
            .update(|inventory| {
                for outcome in &removed {
                    if outcome.records == Some(RecordUpdate::Forget) {
                        inventory.jobs.remove(&outcome.job);
                    } else {
                        inventory.prune(&outcome.job, now);
                    }
                }
                if let Some(record) = &record {
                    inventory.last_apply = Some(record.clone());
                }
            })
            .await?;
        first_error.map_or(Ok(applied), Err)
    }

    /// Carries out one stage: its runs recorded first, its actions concurrently, then what they did recorded.
    async fn run_stage(
        &self,
        stage: &[&PlannedAction],
        applied: &mut Applied,
    ) -> Result<(), ApplyError> {
        self.record_runs(stage).await?;
        // A stop starts no new action, also inside the stage; the runs recorded for them are runs not started,
        // which the next apply starts.
        let results: Vec<_> = futures::stream::iter(stage.iter().copied())
            .filter(|_| std::future::ready(!self.is_stopped()))
            .map(|action| self.run_action(action))
            .buffer_unordered(self.options.concurrency.max(1))
            .collect()
            .await;
        let mut first_error = None;
        let mut succeeded = Vec::new();
        for result in results {
            match result {
                Ok(outcome) => succeeded.push(outcome),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        self.record_jobs(&succeeded).await?;
        // Recorded by UID: now the runs may happen. The resumed Jobs as answered are not kept (thousands of them
        // were most of the memory of a large apply).
        let resumed: Vec<_> =
            futures::stream::iter(succeeded.iter().filter(|outcome| outcome.suspended))
                .map(|outcome| async move {
                    write::resume(self, &outcome.job)
                        .await
                        .map(drop)
                        .map_err(|source| ApplyError::Action {
                            job: outcome.job.clone(),
                            action: "resume",
                            source: Box::new(WriteError::Api {
                                verb: "resume",
                                kind: crate::plan::ObjectKind::Job,
                                name: outcome.job.clone(),
                                source,
                            }),
                        })
                })
                .buffer_unordered(self.options.concurrency.max(1))
                .collect()
                .await;
        for result in resumed {
            if let Err(error) = result {
                first_error.get_or_insert(error);
            }
        }
        for outcome in &succeeded {
            applied.note(outcome);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The Job a barrier waits for: the one this apply started, else the live Job of an unchanged `wait` one-off
    /// that is still running (started by an earlier apply).
    fn barrier_uid(&self, applied: &Applied, barrier: &PlannedAction) -> Option<String> {
        if let Some(uid) = applied.started_jobs.get(&barrier.job) {
            return Some(uid.clone());
        }
        if barrier.action != Action::Unchanged {
            return None;
        }
        self.live
            .jobs
            .iter()
            .find(|job| job.metadata.name.as_deref() == Some(barrier.job.as_str()))
            .and_then(|job| job.metadata.uid.clone())
    }

    fn stopped(&self, applied: &mut Applied) -> bool {
        applied.interrupted = self.is_stopped();
        applied.interrupted
    }

    async fn run_action(&self, action: &PlannedAction) -> Result<ActionOutcome, ApplyError> {
        let name = action.action.name();
        self.progress.event(Event::new(
            &action.job,
            EventKind::Started,
            format!("{name}: {}", action.reason),
        ));
        let result = write::carry_out(self, action).await;
        match result {
            Ok(outcome) => {
                self.progress
                    .event(Event::new(&action.job, EventKind::Applied, name.to_owned()));
                Ok(outcome)
            }
            Err(source) => {
                self.progress.event(Event::new(
                    &action.job,
                    EventKind::Failed,
                    format!("{name} failed: {source}"),
                ));
                Err(ApplyError::Action {
                    job: action.job.clone(),
                    action: name,
                    source: Box::new(source),
                })
            }
        }
    }
}

impl Applied {
    /// Adds what one action did.
    fn note(&mut self, outcome: &ActionOutcome) {
        if let Some(uid) = &outcome.job_uid {
            self.started_jobs.insert(outcome.job.clone(), uid.clone());
        }
        if let Some(written) = outcome.deployment.clone() {
            self.deployments.insert(outcome.job.clone(), written);
        }
        if !outcome.deleted.is_empty() {
            self.deleted
                .insert(outcome.job.clone(), outcome.deleted.clone());
        }
        if let Some(job) = &outcome.ran_now {
            self.ran_now.insert(outcome.job.clone(), job.clone());
        }
        if outcome.changed {
            self.changed.push(outcome.job.clone());
        }
    }
}

/// What one action left behind.
#[derive(Debug)]
struct ActionOutcome {
    job: String,
    /// Whether the action changed something (not only rewrote the job's inventory record).
    changed: bool,
    /// The UID of the one-off Job it created (or took over).
    job_uid: Option<String>,
    /// Whether that Job was created suspended: it is resumed once its UID is recorded.
    suspended: bool,
    /// The UID and generation of the Deployment it wrote.
    deployment: Option<(String, i64)>,
    /// What the job's record learns besides.
    records: Option<RecordUpdate>,
    /// The objects its deletes removed.
    deleted: Vec<ObjectRef>,
    /// The Job it started from the job's CronJob.
    ran_now: Option<String>,
}

/// Actions that write nothing but whose job's inventory record is written (an `unchanged` job whose record was
/// lost, a run whose end the record does not know, a pruned one-off put back).
fn needs_record(action: &PlannedAction) -> bool {
    action.action == Action::Unchanged || action.records.is_some()
}

fn is_barrier(action: &PlannedAction) -> bool {
    action
        .waits
        .iter()
        .any(|wait| matches!(wait, Wait::Completed { barrier: true }))
}

/// The actions cut after every barrier.
fn stages<'a>(actions: &[&'a PlannedAction]) -> Vec<Vec<&'a PlannedAction>> {
    let mut stages = vec![Vec::new()];
    for action in actions {
        if let Some(stage) = stages.last_mut() {
            stage.push(*action);
        }
        if is_barrier(action) {
            stages.push(Vec::new());
        }
    }
    stages.retain(|stage| !stage.is_empty());
    stages
}
