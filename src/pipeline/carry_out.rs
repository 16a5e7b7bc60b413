//! Carrying a plan out: the one implementation `apply` and the `watch` daemon use. It builds the executor for
//! the plan, carries the plan out (stages, barriers, the inventory), and with a wait asked for, waits for what it
//! started. A stop (Ctrl-C, the lock lost, the daemon stopping) ends it early; what was done and what was not is
//! in the result, for the caller to word.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch as channel;

use super::{Error, Planned};
use crate::apply::{Applied, Progress};
use crate::wait::Outcome;

/// How to carry a plan out.
pub struct CarryOut<'a> {
    /// Who carries it out, as the Lease's holder names it: `apply by tools.mytool@host (pid 7)`.
    pub by: &'a str,
    pub progress: Arc<dyn Progress>,
    /// How many writes are in flight at once.
    pub concurrency: usize,
    /// It stops once any of these is `true`.
    pub stops: Vec<channel::Receiver<bool>>,
    /// Waits at most this long for what it started (`apply --wait`); `None`: does not wait.
    pub wait: Option<Duration>,
}

/// What carrying a plan out did.
#[derive(Debug)]
pub struct CarriedOut {
    pub applied: Applied,
    /// Whether it waited for what it started (a wait was asked for, and nothing stopped or held it first).
    pub waited: bool,
    /// How what it waited for ended, by job; a job whose end it did not see (stopped) is missing.
    pub outcomes: BTreeMap<String, Outcome>,
}

impl CarriedOut {
    /// The jobs it waited for that did not succeed, in name order.
    pub fn unsuccessful(&self) -> Vec<String> {
        self.outcomes
            .iter()
            .filter(|(_, outcome)| !outcome.is_success())
            .map(|(job, _)| job.clone())
            .collect()
    }
}

/// Carries `planned` out as `how` says.
pub async fn carry_out(planned: &Planned, how: CarryOut<'_>) -> Result<CarriedOut, Error> {
    let mut executor = planned.executor(how.by, how.progress, how.concurrency);
    for stop in how.stops {
        executor = executor.stopped_by(stop);
    }
    let mut applied = Box::pin(executor.execute(&planned.plan)).await?;
    let mut outcomes = BTreeMap::new();
    let waited = match how.wait {
        Some(wait) if !applied.interrupted && applied.failed_barrier.is_none() => {
            let targets = executor.targets(&applied, &applied.barriers);
            let jobs: Vec<String> = targets
                .iter()
                .map(|target| target.job().to_owned())
                .collect();
            let deadline = tokio::time::Instant::now() + wait;
            outcomes = Box::pin(executor.wait_for(targets, deadline)).await?;
            if executor.is_stopped() {
                applied.interrupted = true;
                applied
                    .not_waited_for
                    .extend(jobs.into_iter().filter(|job| !outcomes.contains_key(job)));
            }
            true
        }
        _ => false,
    };
    Ok(CarriedOut {
        applied,
        waited,
        outcomes,
    })
}
