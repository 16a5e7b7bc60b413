//! The progress of an apply as one stream of events; the CLI renders it for a terminal, as plain lines or as
//! NDJSON (SPEC §7).

use serde::Serialize;

/// Receives the events of an apply, from any task.
pub trait Progress: Send + Sync {
    fn event(&self, event: Event);
}

/// One step of one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub job: String,
    pub kind: EventKind,
    pub message: String,
}

impl Event {
    pub fn new(job: &str, kind: EventKind, message: String) -> Self {
        Self {
            job: job.to_owned(),
            kind,
            message,
        }
    }
}

/// What the event says about the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// Its action started.
    Started,
    /// A step of its action (a delete, waiting for the old object to go, a write).
    Step,
    /// Its action is done.
    Applied,
    /// Waiting for it: the message says what it is doing.
    Waiting,
    /// It did what it should: a one-off succeeded, or a continuous job rolled out (its new pods stayed up for the
    /// settle period) and is running.
    Succeeded,
    /// It failed; the message says how, for a row that names the job: `failed: …`, `did not roll out: …`,
    /// `timed out; …`, `create failed: …`.
    Failed,
    /// Waiting for it was given up by a stop (Ctrl-C); the job itself goes on.
    Interrupted,
    /// Not applied: a `wait` one-off before it did not succeed.
    Held,
}
