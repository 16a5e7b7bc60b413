//! The inventory: which jobs a jobs file owns and which one-off runs happened (SPEC §6), as a ConfigMap shaped
//! like an `ApplySet` parent (KEP-3659) so that `kubectl` users see the set.
//!
//! This module is the model; `config_map` its encoding (one `ConfigMap`, or parts and an index when the record
//! passes [`PART_LIMIT`]). Reading and writing it with optimistic concurrency belongs to the shell
//! (`cluster::inventory`).

mod config_map;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::Kind;
use crate::model::digest::{base64_url, sha256};

pub use config_map::{
    APPLYSET_CONTAINS_GROUP_KINDS, APPLYSET_ID, APPLYSET_TOOLING, CONTAINS_GROUP_KINDS, DATA_KEY,
    Encoded, InventoryError, PART_KEY, PART_LIMIT, PART_OF, PARTS_VERSION, PartsIndex, Stored,
    TOOLING, applyset_id, assemble, encode, from_config_map,
};

/// The record format this program reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Everything recorded about the jobs of one set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Inventory {
    pub version: u32,
    pub jobs: BTreeMap<String, JobRecord>,
    /// What the `watch` daemon of this set last did; absent until one ran (older records do not have it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<DaemonStatus>,
    /// The last apply (or daemon reconcile) that wrote to the cluster; absent until one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_apply: Option<ApplyRecord>,
    /// One-off jobs pruned from the set, whose runs are remembered for [`TOMBSTONE_RETENTION`]: a job put back
    /// into the file with a definition that ran already does not run again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pruned: BTreeMap<String, Tombstone>,
}

impl Default for Inventory {
    fn default() -> Self {
        Self {
            version: FORMAT_VERSION,
            jobs: BTreeMap::new(),
            daemon: None,
            last_apply: None,
            pruned: BTreeMap::new(),
        }
    }
}

/// How long a pruned one-off's runs are remembered.
pub const TOMBSTONE_RETENTION: jiff::SignedDuration = jiff::SignedDuration::from_hours(30 * 24);
/// The most pruned one-offs remembered (the newest are kept), so that the record stays bounded.
pub const MAX_TOMBSTONES: usize = 10_000;

/// The record of a one-off job pruned from the set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tombstone {
    /// When it was pruned.
    #[serde(with = "timestamp")]
    pub at: jiff::Timestamp,
    pub record: JobRecord,
}

impl Inventory {
    /// Drops `job` from the set at `now`; a one-off that ran is remembered as a tombstone. Tombstones past their
    /// retention are forgotten.
    pub fn prune(&mut self, job: &str, now: jiff::Timestamp) {
        if let Some(record) = self.jobs.remove(job)
            && record.kind == Kind::OneOff
            && !record.runs.is_empty()
        {
            self.pruned
                .insert(job.to_owned(), Tombstone { at: now, record });
        }
        self.pruned
            .retain(|_, tombstone| now.duration_since(tombstone.at) < TOMBSTONE_RETENTION);
        if self.pruned.len() > MAX_TOMBSTONES {
            let mut ages: Vec<jiff::Timestamp> = self.pruned.values().map(|t| t.at).collect();
            ages.sort_unstable();
            let oldest_kept = ages[ages.len() - MAX_TOMBSTONES];
            self.pruned
                .retain(|_, tombstone| tombstone.at >= oldest_kept);
        }
    }

    /// The record of `job`: as recorded, else taken back from its tombstone, else `new()` added to the set.
    pub fn record_mut(&mut self, job: &str, new: impl FnOnce() -> JobRecord) -> &mut JobRecord {
        let restored = self.pruned.remove(job).map(|tombstone| tombstone.record);
        self.jobs
            .entry(job.to_owned())
            .or_insert_with(|| restored.unwrap_or_else(new))
    }
}

/// What one apply that wrote did, for `status` and for `wait --file`: which content of the file it carried out
/// (matched by [`content_hash`], so that a record from before an edit never stands for the edited file), what
/// it started, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyRecord {
    /// When it finished carrying out (not when its jobs finished).
    #[serde(with = "timestamp")]
    pub at: jiff::Timestamp,
    /// Who applied, as in the Lease's holder: `apply by tools.mytool@host (pid 7)`.
    pub by: String,
    /// [`content_hash`] of the jobs file it applied.
    pub file_hash: String,
    /// The jobs it changed (created, updated, replaced, deleted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
    /// The one-off Jobs it created: job name → Job UID.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub started: BTreeMap<String, String>,
    /// The Deployments it wrote, whose rollouts follow.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rollouts: BTreeMap<String, Rollout>,
    pub result: ApplyResult,
}

/// A Deployment write: the object and the generation whose rollout shows that it took effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    pub uid: String,
    pub generation: i64,
}

/// How an apply ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum ApplyResult {
    /// Every planned action was carried out.
    Complete,
    /// Ctrl-C (or the daemon's stop) ended it early: the actions not started were not carried out.
    Interrupted,
    /// A `wait` one-off did not succeed: the jobs after it were not applied.
    Held { barrier: String },
}

/// The hash of a jobs file's content that [`ApplyRecord::file_hash`] and the daemon's reconciles record.
pub fn content_hash(content: &[u8]) -> String {
    base64_url(&sha256(&[content]))
}

/// The `watch` daemon's record of itself, for `status`: who runs it, since when, what it last did and what last
/// failed. Whether it still runs is the Lease's business (a crashed daemon cannot say it stopped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonStatus {
    /// The daemon's identity, as in the Lease's holder: `watch by tools.mytool@host (pid 7)`.
    pub holder: String,
    #[serde(with = "timestamp")]
    pub started: jiff::Timestamp,
    /// When it exited cleanly (released the lock); absent while it runs.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "optional_timestamp"
    )]
    pub stopped: Option<jiff::Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconcile: Option<Reconcile>,
    /// The last reconcile that did not succeed; kept after later successes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Reconcile>,
    /// The jobs of the last valid file it carried out: the only jobs it prunes once the file drops them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
}

/// One reconcile of the daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reconcile {
    #[serde(with = "timestamp")]
    pub at: jiff::Timestamp,
    /// What set it off: `start`, `file`, `drift`, `resync` or `retry`.
    pub trigger: String,
    /// [`content_hash`] of the file content it read; absent when the file could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_hash: Option<String>,
    pub result: ReconcileResult,
    /// For people: what was changed, or why it failed.
    pub message: String,
}

/// How a reconcile ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReconcileResult {
    /// Changes were carried out.
    Applied,
    /// Nothing to change.
    Unchanged,
    /// The file is invalid; the last valid one stays applied.
    InvalidFile,
    /// A safety guard refused the plan, or it cannot be applied (conflict, quota); nothing was changed.
    Refused,
    /// An API error; retried with back-off.
    Failed,
}

impl ReconcileResult {
    /// Whether the reconcile did what it should.
    pub fn succeeded(self) -> bool {
        matches!(self, Self::Applied | Self::Unchanged)
    }
}

/// What the set last applied for one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobRecord {
    pub kind: Kind,
    pub desired_hash: String,
    pub fingerprint: String,
    /// One-off jobs only: every run, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunRecord>,
}

/// One run of a one-off job. It is recorded before its Job is created, so a crash leaves `unknown`, never a
/// second run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunRecord {
    pub fingerprint: String,
    /// The Job's UID, once it was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_uid: Option<String>,
    /// RFC 3339 time the run was recorded.
    #[serde(with = "timestamp")]
    pub started: jiff::Timestamp,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "optional_timestamp"
    )]
    pub finished: Option<jiff::Timestamp>,
    pub outcome: RunOutcome,
}

/// How a run ended, as far as we know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    Succeeded,
    Failed,
    /// Still running, or nobody saw the end (the Job was cleaned up before we looked).
    Unknown,
}

impl RunOutcome {
    /// The outcome's name, as the JSON forms write it.
    pub fn name(self) -> &'static str {
        match self {
            RunOutcome::Succeeded => "succeeded",
            RunOutcome::Failed => "failed",
            RunOutcome::Unknown => "unknown",
        }
    }
}

mod timestamp {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        time: &jiff::Timestamp,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(time)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<jiff::Timestamp, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

mod optional_timestamp {
    use serde::{Deserialize, Deserializer, Serializer};

    #[expect(
        clippy::ref_option,
        reason = "serde's `with` passes the field by reference"
    )]
    pub(super) fn serialize<S: Serializer>(
        time: &Option<jiff::Timestamp>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match time {
            Some(time) => serializer.collect_str(time),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<jiff::Timestamp>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| text.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}
