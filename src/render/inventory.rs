//! The inventory: which jobs a jobs file owns and which one-off runs happened (SPEC §6), as a ConfigMap shaped
//! like an `ApplySet` parent (KEP-3659) so that `kubectl` users see the set.
//!
//! This module is the model and its (de)serialisation only; reading and writing it with optimistic concurrency
//! belongs to the shell. The record is JSON under the ConfigMap data key [`DATA_KEY`], with a `version` field so a
//! newer format is refused instead of misread.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::render::canonical::Kind;
use crate::render::digest::{base64_url, sha256};

/// The ConfigMap data key holding the inventory record.
pub const DATA_KEY: &str = "inventory.json";
/// The record format this program reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// `ApplySet` parent label: the set's id.
pub const APPLYSET_ID: &str = "applyset.kubernetes.io/id";
/// `ApplySet` parent annotation: the tool managing the set, `<name>/<version>`.
pub const APPLYSET_TOOLING: &str = "applyset.kubernetes.io/tooling";
/// `ApplySet` parent annotation: the group-kinds members may have.
pub const APPLYSET_CONTAINS_GROUP_KINDS: &str = "applyset.kubernetes.io/contains-group-kinds";
/// Every group-kind a job can render to, sorted as the KEP asks; a superset of the members is allowed.
pub const CONTAINS_GROUP_KINDS: &str = "CronJob.batch,Deployment.apps,Job.batch,Service";
pub const TOOLING: &str = concat!("toolforge-jobs/v", env!("CARGO_PKG_VERSION"));

/// The `ApplySet` id of the inventory ConfigMap `set_name` in `namespace`, as the KEP defines it:
/// `applyset-<base64url(sha256("<name>.<namespace>.ConfigMap."))>-v1` (the core group is empty).
pub fn applyset_id(set_name: &str, namespace: &str) -> String {
    let digest = sha256(&[format!("{set_name}.{namespace}.ConfigMap.").as_bytes()]);
    format!("applyset-{}-v1", base64_url(&digest))
}

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
}

impl Default for Inventory {
    fn default() -> Self {
        Self {
            version: FORMAT_VERSION,
            jobs: BTreeMap::new(),
            daemon: None,
            last_apply: None,
        }
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
    pub outcome: Outcome,
}

/// How a run ended, as far as we know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Succeeded,
    Failed,
    /// Still running, or nobody saw the end (the Job was cleaned up before we looked).
    Unknown,
}

impl Outcome {
    /// The outcome's name, as the JSON forms write it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        }
    }
}

/// Why an inventory ConfigMap cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("ConfigMap `{name}` has no `{DATA_KEY}` key")]
    MissingData { name: String },
    #[error(
        "ConfigMap `{name}` holds an inventory of format {found}; this program reads format {FORMAT_VERSION}"
    )]
    UnsupportedVersion { name: String, found: u64 },
    #[error("ConfigMap `{name}` does not hold a valid inventory")]
    Invalid {
        name: String,
        #[source]
        source: serde_json::Error,
    },
}

/// The inventory ConfigMap of set `set_name` in `namespace`, holding `inventory`.
pub fn to_config_map(inventory: &Inventory, set_name: &str, namespace: &str) -> ConfigMap {
    // Maps of strings, integers and enums always serialise.
    let record = serde_json::to_string_pretty(inventory).expect("an inventory serialises to JSON");
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(set_name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([(
                APPLYSET_ID.to_owned(),
                applyset_id(set_name, namespace),
            )])),
            annotations: Some(BTreeMap::from([
                (APPLYSET_TOOLING.to_owned(), TOOLING.to_owned()),
                (
                    APPLYSET_CONTAINS_GROUP_KINDS.to_owned(),
                    CONTAINS_GROUP_KINDS.to_owned(),
                ),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(DATA_KEY.to_owned(), record)])),
        ..ConfigMap::default()
    }
}

/// Reads the inventory out of its ConfigMap.
pub fn from_config_map(config_map: &ConfigMap) -> Result<Inventory, InventoryError> {
    let name = config_map.metadata.name.clone().unwrap_or_default();
    let text = config_map
        .data
        .as_ref()
        .and_then(|data| data.get(DATA_KEY))
        .ok_or_else(|| InventoryError::MissingData { name: name.clone() })?;
    let invalid = |source| InventoryError::Invalid {
        name: name.clone(),
        source,
    };
    // Look at the version first: a newer format may have fields this one would reject.
    let Versioned { version } = serde_json::from_str(text).map_err(invalid)?;
    if version != u64::from(FORMAT_VERSION) {
        return Err(InventoryError::UnsupportedVersion {
            name,
            found: version,
        });
    }
    serde_json::from_str(text).map_err(invalid)
}

/// Just the version of a record, read before the rest.
#[derive(Deserialize)]
struct Versioned {
    version: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Inventory {
        let mut inventory = Inventory::default();
        inventory.jobs.insert(
            "bot".to_owned(),
            JobRecord {
                kind: Kind::Continuous,
                desired_hash: "a".repeat(64),
                fingerprint: "b".repeat(64),
                runs: Vec::new(),
            },
        );
        inventory.jobs.insert(
            "migrate".to_owned(),
            JobRecord {
                kind: Kind::OneOff,
                desired_hash: "c".repeat(64),
                fingerprint: "d".repeat(64),
                runs: vec![
                    RunRecord {
                        fingerprint: "e".repeat(64),
                        job_uid: Some("0b9c6a3e-5d2f-4c1e-9a7b-2f1d3c4b5a69".to_owned()),
                        started: "2026-11-30T12:00:00Z".parse().unwrap(),
                        finished: Some("2026-11-30T12:01:30Z".parse().unwrap()),
                        outcome: Outcome::Failed,
                    },
                    RunRecord {
                        fingerprint: "d".repeat(64),
                        job_uid: None,
                        started: "2026-11-30T13:00:00Z".parse().unwrap(),
                        finished: None,
                        outcome: Outcome::Unknown,
                    },
                ],
            },
        );
        inventory
    }

    #[test]
    fn round_trips_through_its_config_map() {
        let inventory = sample();
        let config_map = to_config_map(&inventory, "toolforge-jobs", "tool-mytool");
        assert_eq!(from_config_map(&config_map).unwrap(), inventory);
    }

    #[test]
    fn the_config_map_is_an_applyset_parent() {
        let config_map = to_config_map(&sample(), "toolforge-jobs", "tool-mytool");
        insta::assert_yaml_snapshot!(config_map);
    }

    #[test]
    fn applyset_ids_follow_the_kep() {
        // base64url(sha256("toolforge-jobs.tool-mytool.ConfigMap.")), computed independently with Python's
        // hashlib and base64.urlsafe_b64encode.
        assert_eq!(
            applyset_id("toolforge-jobs", "tool-mytool"),
            "applyset-AVKWRhibEG1HT4w2qqjDKqVlQpeLkrshK2MRQaSTyxU-v1"
        );
        assert_ne!(
            applyset_id("other", "tool-mytool"),
            applyset_id("toolforge-jobs", "tool-mytool")
        );
    }

    #[test]
    fn records_without_a_daemon_status_still_read_and_one_round_trips() {
        let mut config_map = to_config_map(&Inventory::default(), "s", "tool-t");
        config_map.data = Some(BTreeMap::from([(
            DATA_KEY.to_owned(),
            r#"{"version": 1, "jobs": {}}"#.to_owned(),
        )]));
        assert_eq!(from_config_map(&config_map).unwrap(), Inventory::default());

        let mut inventory = sample();
        let at: jiff::Timestamp = "2026-11-30T12:00:00Z".parse().unwrap();
        inventory.daemon = Some(DaemonStatus {
            holder: "watch by tools.mytool@host (pid 7)".to_owned(),
            started: at,
            stopped: None,
            last_reconcile: Some(Reconcile {
                at,
                trigger: "file".to_owned(),
                file_hash: None,
                result: ReconcileResult::Applied,
                message: "1 job changed".to_owned(),
            }),
            last_error: None,
            jobs: vec!["bot".to_owned()],
        });
        let config_map = to_config_map(&inventory, "s", "tool-t");
        assert_eq!(from_config_map(&config_map).unwrap(), inventory);
    }

    #[test]
    fn newer_formats_are_refused_not_misread() {
        let mut config_map = to_config_map(&Inventory::default(), "s", "tool-t");
        config_map.data = Some(BTreeMap::from([(
            DATA_KEY.to_owned(),
            r#"{"version": 2, "jobs": {}, "lease": {}}"#.to_owned(),
        )]));
        let error = from_config_map(&config_map).unwrap_err();
        assert_eq!(
            error.to_string(),
            "ConfigMap `s` holds an inventory of format 2; this program reads format 1"
        );
    }

    #[test]
    fn damaged_records_are_errors() {
        let mut config_map = to_config_map(&Inventory::default(), "s", "tool-t");
        for text in [
            "",
            "{",
            r#"{"version": 1, "jobs": {"x": {"kind": "daily"}}}"#,
        ] {
            config_map.data = Some(BTreeMap::from([(DATA_KEY.to_owned(), text.to_owned())]));
            assert!(matches!(
                from_config_map(&config_map),
                Err(InventoryError::Invalid { .. })
            ));
        }
        config_map.data = None;
        assert!(matches!(
            from_config_map(&config_map),
            Err(InventoryError::MissingData { .. })
        ));
    }
}
