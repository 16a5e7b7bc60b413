//! `watch`: the loop of the per-tool daemon that keeps the cluster equal to the jobs file (SPEC §8).
//!
//! This module decides *when* to reconcile, not *how*: a [`Reconciler`] (the CLI's, which runs the apply
//! pipeline) is called on start, after the jobs file (or a trigger file) changed and stayed quiet for the
//! debounce time, after one of our objects changed in the cluster (drift), on a periodic resync, and after a
//! failure, with exponential back-off and jitter. Nothing here polls the API: file changes come from the file
//! system (or from polling the file itself, where notifications do not work), cluster changes from kube-runtime
//! watchers, which relist after a 410 and resume dropped streams by themselves. SIGTERM and SIGINT end the loop
//! once the reconcile in flight has finished its writes.
//!
//! - `files`: the jobs file's directory, watched with notify, filtered to the files that matter;
//! - `drift`: watches of our labelled objects, reduced to "something we own changed" and "a one-off finished";
//! - `prune`: the daemon's pruning rule (only what the file dropped while watched);
//! - `logging`: human or JSON log lines;
//! - `memory`: giving the memory a reconcile freed back to the system.

mod daemon;
mod drift;
pub(crate) mod files;
pub mod logging;
mod memory;
mod prune;

use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::time::Duration;

use futures::StreamExt as _;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::cluster::retry::backoff_between;
use crate::model::inventory::RunOutcome;

pub use daemon::{Daemon, DaemonSettings};
pub use prune::restrict_prunes;

/// The first delay after a failed reconcile; it doubles up to [`Settings::max_backoff`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// How long the daemon must have been quiet (no reconcile, no watch event) before it gives the memory it freed
/// back to the system. A reconcile's own writes come back as watch events for a while after it ends, and they
/// free memory too: trimming right after the reconcile left 38 MB resident with 300 jobs, once quiet 28 MB.
const QUIET_BEFORE_TRIM: Duration = Duration::from_secs(2);

/// What set a reconcile off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The daemon started.
    Start,
    /// The jobs file or a trigger file changed.
    File,
    /// One of our objects changed in the cluster.
    Drift,
    /// The periodic resync.
    Resync,
    /// The last reconcile failed.
    Retry,
}

impl Trigger {
    /// The trigger's name, as logged and recorded.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Start => "start",
            Trigger::File => "file",
            Trigger::Drift => "drift",
            Trigger::Resync => "resync",
            Trigger::Retry => "retry",
        }
    }
}

/// How a reconcile ended, as far as the loop cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Done (applied, nothing to do, or nothing doable until the file changes).
    Done,
    /// Failed in a way time may fix (the API): try again after a back-off.
    Retry,
    /// Somebody else holds the lock now: stop.
    LockLost,
}

/// What the loop drives: one reconcile at a time.
pub trait Reconciler {
    /// Makes the cluster equal to the file once. `stop` turns true when a signal asks the daemon to end: start
    /// no new write then.
    fn reconcile(
        &mut self,
        trigger: Trigger,
        stop: watch::Receiver<bool>,
    ) -> impl Future<Output = Verdict>;

    /// Records that the Job `uid` of one-off `job` finished with `outcome` (if it is the job's last run).
    fn finished(&mut self, job: &str, uid: &str, outcome: RunOutcome) -> impl Future<Output = ()>;

    /// The `trigger-files` patterns of the file last loaded, relative to its directory: changes to matching
    /// files set off a reconcile too.
    fn trigger_patterns(&self) -> Vec<String>;
}

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The jobs file.
    pub file: PathBuf,
    /// How long the file must stay quiet before it is read (editors write in several steps).
    pub debounce: Duration,
    /// How often to reconcile when nothing happens.
    pub resync: Duration,
    /// The longest back-off after failures.
    pub max_backoff: Duration,
    /// Poll the file at this interval instead of relying on file-system notifications (NFS).
    pub poll: Option<Duration>,
    /// How long a reconcile in flight may go on after SIGTERM (it finishes its writes, not its waits).
    pub grace: Duration,
}

/// Why the loop could not run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot watch `{}`", .path.display())]
    Files {
        path: PathBuf,
        #[source]
        source: notify::Error,
    },
    #[error("cannot listen for signals")]
    Signals(#[source] std::io::Error),
    #[error(
        "the lock was taken over by somebody else (renewing it failed for longer than it lasts); stopping"
    )]
    LockLost,
}

/// Runs `reconciler` until SIGTERM or SIGINT (see the module documentation).
pub async fn run<R: Reconciler>(
    settings: &Settings,
    client: &kube::Client,
    namespace: &str,
    reconciler: &mut R,
) -> Result<(), WatchError> {
    let mut files = files::FileEvents::start(&settings.file, settings.poll).map_err(|source| {
        WatchError::Files {
            path: settings.file.clone(),
            source,
        }
    })?;
    memory::keep_large_buffers_apart();
    let mut drift = drift::watch(client, namespace);
    let mut shutdown = pin!(shutdown_signal()?);
    let mut schedule = Schedule::new(settings);
    // When to trim the allocator: a while after the last activity, once (an idle daemon never wakes up).
    let mut trim_due: Option<Instant> = None;
    loop {
        let (due, trigger) = schedule.next();
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            Some(path) = files.changed() => {
                tracing::debug!(path = %path.display(), "file changed");
                schedule.file_changed();
            }
            Some(change) = drift.next() => {
                trim_due = Some(Instant::now() + QUIET_BEFORE_TRIM);
                match change {
                    drift::Change::Drift(what) => {
                        tracing::info!(%what, "drift: reconciling");
                        schedule.drifted();
                    }
                    drift::Change::Finished { job, uid, outcome } => {
                        reconciler.finished(&job, &uid, outcome).await;
                    }
                    drift::Change::Nothing => {}
                }
            }
            () = tokio::time::sleep_until(trim_due.unwrap_or(due)), if trim_due.is_some() => {
                trim_due = None;
                memory::release_freed();
            }
            () = tokio::time::sleep_until(due) => {
                let verdict = {
                    let (stop, stopped) = watch::channel(false);
                    let mut reconcile = pin!(reconciler.reconcile(trigger, stopped));
                    tokio::select! {
                        verdict = &mut reconcile => verdict,
                        () = &mut shutdown => {
                            tracing::info!("stopping: letting the writes in flight finish");
                            let _ = stop.send(true);
                            if tokio::time::timeout(settings.grace, reconcile).await.is_err() {
                                tracing::warn!(grace = ?settings.grace, "the reconcile in flight did not finish in time");
                            }
                            return Ok(());
                        }
                    }
                };
                if verdict == Verdict::LockLost {
                    return Err(WatchError::LockLost);
                }
                schedule.reconciled(verdict);
                files.set_patterns(&reconciler.trigger_patterns());
                trim_due = Some(Instant::now() + QUIET_BEFORE_TRIM);
            }
        }
    }
}

/// Resolves on SIGTERM or SIGINT.
fn shutdown_signal() -> Result<impl Future<Output = ()>, WatchError> {
    let mut terminate = signal(SignalKind::terminate()).map_err(WatchError::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(WatchError::Signals)?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM received"),
            _ = interrupt.recv() => tracing::info!("SIGINT received"),
        }
    })
}

/// When the next reconcile is due, and why.
#[derive(Debug)]
struct Schedule {
    debounce: Duration,
    resync: Duration,
    max_backoff: Duration,
    /// A reconcile asked for (sooner than the resync).
    pending: Option<(Instant, Trigger)>,
    next_resync: Instant,
    /// Failed reconciles in a row.
    failures: u32,
}

impl Schedule {
    fn new(settings: &Settings) -> Self {
        let now = Instant::now();
        Self {
            debounce: settings.debounce,
            resync: settings.resync,
            max_backoff: settings.max_backoff,
            pending: Some((now, Trigger::Start)),
            next_resync: now + settings.resync,
            failures: 0,
        }
    }

    fn next(&self) -> (Instant, Trigger) {
        self.pending.unwrap_or((self.next_resync, Trigger::Resync))
    }

    /// The file is read once it stayed quiet for the debounce time: every change pushes the deadline back.
    fn file_changed(&mut self) {
        self.pending = Some((Instant::now() + self.debounce, Trigger::File));
    }

    /// Drift is repaired after the debounce time (a burst of events makes one reconcile); a pending file change
    /// or back-off keeps its own deadline.
    fn drifted(&mut self) {
        match self.pending {
            Some((_, Trigger::File | Trigger::Retry | Trigger::Start)) => {}
            Some((due, Trigger::Drift | Trigger::Resync)) => {
                self.pending = Some((due.min(Instant::now() + self.debounce), Trigger::Drift));
            }
            None => self.pending = Some((Instant::now() + self.debounce, Trigger::Drift)),
        }
    }

    fn reconciled(&mut self, verdict: Verdict) {
        let now = Instant::now();
        self.next_resync = now + self.resync;
        match verdict {
            Verdict::Done | Verdict::LockLost => {
                self.failures = 0;
                // Events are taken in between reconciles: what was pending is what just ran.
                self.pending = None;
            }
            Verdict::Retry => {
                self.failures = self.failures.saturating_add(1);
                let delay = backoff_between(self.failures, FIRST_BACKOFF, self.max_backoff);
                tracing::info!(
                    ?delay,
                    failures = self.failures,
                    "trying again after a back-off"
                );
                self.pending = Some((now + delay, Trigger::Retry));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule() -> Schedule {
        Schedule::new(&Settings {
            file: PathBuf::from("jobs.yaml"),
            debounce: Duration::from_millis(200),
            resync: Duration::from_secs(600),
            max_backoff: Duration::from_secs(60),
            poll: None,
            grace: Duration::from_secs(20),
        })
    }

    #[test]
    fn starts_at_once_then_resyncs_after_the_period() {
        let mut schedule = schedule();
        assert_eq!(schedule.next().1, Trigger::Start);
        schedule.reconciled(Verdict::Done);
        let (due, trigger) = schedule.next();
        assert_eq!(trigger, Trigger::Resync);
        assert!(due - Instant::now() > Duration::from_secs(590));
    }

    #[test]
    fn every_file_change_pushes_the_deadline_back() {
        let mut schedule = schedule();
        schedule.reconciled(Verdict::Done);
        schedule.file_changed();
        let (first, _) = schedule.next();
        std::thread::sleep(Duration::from_millis(20));
        schedule.file_changed();
        let (due, trigger) = schedule.next();
        assert_eq!(trigger, Trigger::File);
        assert!(due >= first + Duration::from_millis(20));
        schedule.drifted();
        assert_eq!(
            schedule.next(),
            (due, Trigger::File),
            "drift waits for the file"
        );
    }

    #[test]
    fn failures_back_off_and_a_success_resets_them() {
        let mut schedule = schedule();
        let mut delays = Vec::new();
        for _ in 0..10 {
            // Measured from before the failure is noted: the delay starts then, and a bound it may meet exactly
            // (the jitter's lowest) is not missed by the nanoseconds that pass before it is read.
            let failed = Instant::now();
            schedule.reconciled(Verdict::Retry);
            let (due, trigger) = schedule.next();
            assert_eq!(trigger, Trigger::Retry);
            delays.push(due - failed);
        }
        assert!(delays[0] <= Duration::from_millis(1500), "{delays:?}");
        assert!(delays[9] >= Duration::from_secs(30), "{delays:?}");
        assert!(
            delays.iter().all(|delay| *delay <= Duration::from_secs(90)),
            "capped: {delays:?}"
        );
        schedule.drifted();
        assert_eq!(
            schedule.next().1,
            Trigger::Retry,
            "drift does not skip the back-off"
        );
        schedule.reconciled(Verdict::Done);
        assert_eq!(schedule.failures, 0);
        assert_eq!(schedule.next().1, Trigger::Resync);
    }
}
