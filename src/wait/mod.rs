//! `wait`: the awaiters of `apply --wait` — until a one-off's Job finished, or a continuous job's Deployment rolled
//! out our write (SPEC §7, docs/waiting.md).
//!
//! [`job`] and [`deployment`] open watches (never polling GETs) on the object, its pods and the namespace's Warning
//! Events, wait until every watch has listed its current state, and then judge after every change: success, the
//! controller's own failure (`Failed`/`FailureTarget`, `ProgressDeadlineExceeded`), or an early failure the
//! controller would retry forever (image pull errors, container config errors, crash loops past
//! [`CRASH_LOOP_RESTARTS`], `FailedCreate` Events from quota or admission). A Job is ours only by UID; a
//! Deployment's status counts only once its `observedGeneration` reached our write, and its rollout only once the
//! new pods stayed Ready without a restart for [`ROLLOUT_SETTLE`] (any restart of a new pod is a crash loop). On
//! failure the [`FailureReport`] says why, for a person: the condition, the failing pods' container states, the
//! Warning Events, the last [`LOG_TAIL_LINES`] lines of the log and where the full log is.
//!
//! This module decides nothing about what to apply and prints nothing: progress goes to the caller's callback as
//! [`WaitProgress`] values, and the outcome is returned. Inside: `observe` keeps what the watches saw and drives the
//! loop, `job` and `deployment` judge it (pure), `pods` reads container states, `report` builds the failure report.

mod deployment;
mod job;
mod observe;
mod pods;
mod report;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use deployment::{deployment, deployment_settling};
pub use job::{finished, job};
pub use report::{
    Cause, ContainerState, FailureReport, LogLocation, LogSource, LogTail, PodProblem, TargetKind,
    Termination, WarningEvent,
};

/// A Job's container waiting in `CrashLoopBackOff` (or `RunContainerError`) after this many restarts fails the wait
/// (a Deployment's new pods get no such grace: any restart fails its wait).
pub const CRASH_LOOP_RESTARTS: i32 = 2;

/// How long every pod of a Deployment's new `ReplicaSet` must stay Ready, without a container restart, after the
/// rollout looked complete before [`deployment`] reports it rolled out (docs/waiting.md). Pulumi's and kapp's
/// awaiters accept the first status in which the controller counts the new pods available, so a process that
/// crashes a moment after it was seen Ready passes them; 5 s is what `minReadySeconds: 5` would ask of the
/// controller, and covers a process that dies right after starting, however the kubelet reports it.
pub const ROLLOUT_SETTLE: Duration = Duration::from_secs(5);

/// How many log lines a failure report shows.
pub const LOG_TAIL_LINES: usize = 20;

/// A Job that `apply` created: what [`job`] waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTarget {
    /// The job's name in jobs.yaml, for messages and `toolforge-jobs logs NAME`.
    pub job: String,
    /// The Job's namespace.
    pub namespace: String,
    /// The Job object's name (the job's name, or a run's name for a scheduled job run now).
    pub name: String,
    /// The UID of the Job we created: a Job of the same name with another UID is not ours.
    pub uid: String,
    /// The job's file log in the tool home (e.g. `/data/project/tool/backup.err`), when it has one; its last lines
    /// go into a failure report when this process can read it.
    pub file_log: Option<PathBuf>,
}

/// A Deployment that `apply` wrote: what [`deployment`] waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentTarget {
    /// The job's name in jobs.yaml, for messages and `toolforge-jobs logs NAME`.
    pub job: String,
    /// The Deployment's namespace.
    pub namespace: String,
    /// The Deployment's name.
    pub name: String,
    /// The Deployment's UID, from our write's response: a Deployment of the same name with another UID is not ours.
    pub uid: String,
    /// `metadata.generation` from our write's response: status older than this is about an earlier spec.
    pub generation: i64,
    /// The job's file log in the tool home, as in [`JobTarget::file_log`].
    pub file_log: Option<PathBuf>,
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The Job completed (`Complete` or `SuccessCriteriaMet`), or the Deployment rolled out our write: every pod of
    /// its new `ReplicaSet` available and Ready, without a restart, for [`ROLLOUT_SETTLE`].
    Succeeded,
    /// The Job was deleted (its TTL, say) after it had been seen succeeding: finished and cleaned up.
    CleanedUp,
    /// It failed, or it cannot succeed without a change (an early failure), or it was deleted before it finished.
    Failed(Box<FailureReport>),
    /// The deadline passed first; the last progress says what it was still waiting for.
    TimedOut(WaitProgress),
}

impl Outcome {
    /// Whether the job did what it should: [`Outcome::Succeeded`] or [`Outcome::CleanedUp`].
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Succeeded | Outcome::CleanedUp)
    }
}

/// Where a wait stands, given to the progress callback whenever the phase or the message changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitProgress {
    /// The coarse state, for a table column.
    pub phase: Phase,
    /// What is happening, for a person: "pod `backup-x7k2` is running", "1 of 2 updated replicas are available".
    pub message: String,
    /// Time since the wait started.
    pub elapsed: Duration,
}

impl WaitProgress {
    /// The phase and the message, without the time: for a row whose time is shown beside it.
    pub fn summary(&self) -> String {
        format!("{}: {}", self.phase, self.message)
    }
}

impl fmt::Display for WaitProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({}s)",
            self.phase,
            self.message,
            self.elapsed.as_secs()
        )
    }
}

/// The coarse state of a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Listing the current state; nothing judged yet.
    Watching,
    /// The Job has no running pod yet: the controller is creating one, or it is being scheduled or started.
    Starting,
    /// A pod of the Job is running.
    Running,
    /// A pod of the Job failed; the controller starts another after its back-off.
    Retrying,
    /// The Deployment controller has not yet observed our write (`observedGeneration` is older).
    Observing,
    /// The Deployment's new pods are starting, or its old pods are stopping.
    RollingOut,
    /// Every new pod of the Deployment is available: watching that they stay up without a restart.
    Settling,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Watching => "watching",
            Phase::Starting => "starting",
            Phase::Running => "running",
            Phase::Retrying => "retrying",
            Phase::Observing => "waiting for the controller",
            Phase::RollingOut => "rolling out",
            Phase::Settling => "settling",
        })
    }
}

/// Why a wait could not watch (a transient watch error is retried with back-off until the deadline instead).
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The API refused to list or watch (permissions, a bad selector): waiting cannot work.
    #[error("failed to watch {resource} in namespace `{namespace}`")]
    Watch {
        /// The resource, e.g. `pods`.
        resource: &'static str,
        /// The namespace watched.
        namespace: String,
        /// The watcher's error.
        #[source]
        source: kube::runtime::watcher::Error,
    },
    /// The API server could not be reached, or did not answer, for [`observe::UNREACHABLE_LIMIT`] in a row.
    #[error(
        "the cluster at {server} has not answered for {} s; is it running? Check the connection and try again",
        observe::UNREACHABLE_LIMIT.as_secs()
    )]
    Unreachable {
        /// The API server's URL.
        server: String,
        /// The last request's error.
        #[source]
        source: kube::Error,
    },
    /// The Deployment could not be read to learn its pod selector.
    #[error("failed to read Deployment `{name}` in namespace `{namespace}`")]
    Read {
        /// The Deployment's name.
        name: String,
        /// Its namespace.
        namespace: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}
