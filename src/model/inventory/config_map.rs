//! The inventory as `ConfigMap`s. The record is JSON under the data key [`DATA_KEY`] of a ConfigMap shaped like an
//! `ApplySet` parent (KEP-3659), with a `version` field so a newer format is refused instead of misread.
//!
//! A ConfigMap holds at most 1 MiB, and a record of 10 000 jobs is a few MB. A record over [`PART_LIMIT`] is
//! therefore stored in parts: its compact JSON text is cut into pieces, each in a ConfigMap of its own named
//! after its content, and the set's ConfigMap holds a [`PartsIndex`] (format [`PARTS_VERSION`]) listing them with
//! the hash of the whole text. Writing the index is the one atomic step that switches to a new record, so
//! readers see the old record or the new one, never a mix.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::{FORMAT_VERSION, Inventory};
use crate::model::digest::{base64_url, sha256, sha256_hex};

/// The ConfigMap data key holding the inventory record.
pub const DATA_KEY: &str = "inventory.json";

/// `ApplySet` parent label: the set's id.
pub const APPLYSET_ID: &str = "applyset.kubernetes.io/id";
/// `ApplySet` parent annotation: the tool managing the set, `<name>/<version>`.
pub const APPLYSET_TOOLING: &str = "applyset.kubernetes.io/tooling";
/// `ApplySet` parent annotation: the group-kinds members may have.
pub const APPLYSET_CONTAINS_GROUP_KINDS: &str = "applyset.kubernetes.io/contains-group-kinds";
/// Every group-kind a job can render to, sorted as the KEP asks; a superset of the members is allowed.
pub const CONTAINS_GROUP_KINDS: &str = "CronJob.batch,Deployment.apps,Job.batch,Service";
pub const TOOLING: &str = concat!("toolforge-jobs/v", env!("CARGO_PKG_VERSION"));
/// The format of the set ConfigMap's record when the inventory is stored in parts: a [`PartsIndex`]. Older
/// programs, which read format 1 only, refuse it with a clear message instead of misreading it.
pub const PARTS_VERSION: u32 = 2;
/// The most record text one ConfigMap holds: Kubernetes refuses a ConfigMap whose data passes 1 MiB
/// (1 048 576 bytes), and the rest is room for keys.
pub const PART_LIMIT: usize = 1_000_000;
/// The data key of a part's piece of the record text.
pub const PART_KEY: &str = "inventory.part";
/// Label on each part ConfigMap: the set it belongs to, so that parts left by a crashed writer can be found.
pub const PART_OF: &str = "jobs.toolforge.org/inventory-part-of";

/// The `ApplySet` id of the inventory ConfigMap `set_name` in `namespace`, as the KEP defines it:
/// `applyset-<base64url(sha256("<name>.<namespace>.ConfigMap."))>-v1` (the core group is empty).
pub fn applyset_id(set_name: &str, namespace: &str) -> String {
    let digest = sha256(&[format!("{set_name}.{namespace}.ConfigMap.").as_bytes()]);
    format!("applyset-{}-v1", base64_url(&digest))
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
    #[error("ConfigMap `{name}` is not a part of the inventory `{set}`, or it is damaged")]
    DamagedPart { name: String, set: String },
    #[error("the parts of inventory `{name}` do not add up to the record it names")]
    PartsMismatch { name: String },
}

/// What the set ConfigMap holds: the record itself, or the index of the parts that hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    Whole(Box<Inventory>),
    Parts(PartsIndex),
}

/// The set ConfigMap's record when the inventory is stored in parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PartsIndex {
    pub version: u32,
    /// The part `ConfigMap`s, in the order their pieces join.
    pub parts: Vec<String>,
    /// SHA-256 (hex) of the joined text: a part replaced or damaged is noticed, not misread.
    pub sha256: String,
}

/// The `ConfigMap`s an inventory is written as: the set ConfigMap, and the parts it names (none when the record
/// fits the set ConfigMap).
#[derive(Debug, Clone)]
pub struct Encoded {
    pub head: ConfigMap,
    pub parts: Vec<ConfigMap>,
}

impl Encoded {
    /// The names of the parts, in order.
    pub fn part_names(&self) -> Vec<String> {
        names_of(&self.parts)
    }
}

fn names_of(config_maps: &[ConfigMap]) -> Vec<String> {
    config_maps
        .iter()
        .filter_map(|config_map| config_map.metadata.name.clone())
        .collect()
}

/// The `ConfigMap`s holding `inventory` for set `set_name`: the readable pretty record when it fits one ConfigMap
/// (`limit` bytes), else the compact one, else the compact text cut into parts of at most `limit` bytes.
pub fn encode(inventory: &Inventory, set_name: &str, namespace: &str, limit: usize) -> Encoded {
    // Maps of strings, integers and enums always serialise.
    let pretty = serde_json::to_string_pretty(inventory).expect("an inventory serialises to JSON");
    if pretty.len() <= limit {
        return Encoded {
            head: set_config_map(set_name, namespace, pretty),
            parts: Vec::new(),
        };
    }
    let compact = serde_json::to_string(inventory).expect("an inventory serialises to JSON");
    if compact.len() <= limit {
        return Encoded {
            head: set_config_map(set_name, namespace, compact),
            parts: Vec::new(),
        };
    }
    let pieces = pieces(inventory, limit);
    let parts: Vec<ConfigMap> = pieces
        .iter()
        .map(|piece| part_config_map(piece, set_name, namespace))
        .collect();
    let texts: Vec<&[u8]> = pieces.iter().map(String::as_bytes).collect();
    let index = PartsIndex {
        version: PARTS_VERSION,
        parts: names_of(&parts),
        sha256: sha256_hex(&texts),
    };
    let index = serde_json::to_string_pretty(&index).expect("an index serialises to JSON");
    Encoded {
        head: set_config_map(set_name, namespace, index),
        parts,
    }
}

/// One in this many jobs starts a new piece (about 300 KB of records at 300 bytes a job).
const CUT_EVERY: u16 = 1024;

/// The compact JSON text of `inventory` cut into pieces of at most `limit` bytes. Cuts fall before the records of
/// jobs whose name hashes to a chosen value, so that where the text is cut depends on the names there and not
/// on the length of what comes before: a change to one job changes the piece holding it, and the others keep
/// their content and so their names. A piece that would pass `limit` is cut earlier.
fn pieces(inventory: &Inventory, limit: usize) -> Vec<String> {
    let rest = Inventory {
        jobs: BTreeMap::new(),
        ..inventory.clone()
    };
    let rest = serde_json::to_string(&rest).expect("an inventory serialises to JSON");
    // `version` is a number and comes first, so the first `"jobs":{}` is the field.
    let jobs_at = rest
        .find(r#""jobs":{}"#)
        .map_or(0, |at| at + r#""jobs":{"#.len());
    let (head, tail) = rest.split_at(jobs_at);
    let mut pieces = Pieces::new(limit);
    pieces.push(head, false);
    for (position, (name, record)) in inventory.jobs.iter().enumerate() {
        let comma = if position == 0 { "" } else { "," };
        let key = serde_json::to_string(name).expect("a string serialises to JSON");
        let value = serde_json::to_string(record).expect("a record serialises to JSON");
        let digest = sha256(&[name.as_bytes()]);
        let starts_piece = u16::from_le_bytes([digest[0], digest[1]]).is_multiple_of(CUT_EVERY);
        pieces.push(&format!("{comma}{key}:{value}"), starts_piece);
    }
    pieces.push(tail, false);
    pieces.finish()
}

/// Pieces of text being cut.
struct Pieces {
    limit: usize,
    done: Vec<String>,
    current: String,
}

impl Pieces {
    fn new(limit: usize) -> Self {
        Self {
            // A piece holds at least one character.
            limit: limit.max(4),
            done: Vec::new(),
            current: String::new(),
        }
    }

    /// Adds `segment`, in a new piece if `starts_piece` or if the current piece has no room for it.
    fn push(&mut self, segment: &str, starts_piece: bool) {
        if starts_piece || self.current.len() + segment.len() > self.limit {
            self.cut();
        }
        let mut rest = segment;
        while self.current.len() + rest.len() > self.limit {
            let mut end = self.limit - self.current.len();
            while !rest.is_char_boundary(end) {
                end -= 1;
            }
            let (piece, after) = rest.split_at(end);
            self.current.push_str(piece);
            self.cut();
            rest = after;
        }
        self.current.push_str(rest);
    }

    fn cut(&mut self) {
        if !self.current.is_empty() {
            self.done.push(std::mem::take(&mut self.current));
        }
    }

    fn finish(mut self) -> Vec<String> {
        self.cut();
        self.done
    }
}

/// A part ConfigMap, named after its content so that an unchanged piece keeps its name and is not written again.
fn part_config_map(piece: &str, set_name: &str, namespace: &str) -> ConfigMap {
    let digest = sha256_hex(&[piece.as_bytes()]);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{set_name}-part-{}", &digest[..16])),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([(PART_OF.to_owned(), set_name.to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(PART_KEY.to_owned(), piece.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Joins the parts `index` names (given in any order) into the record; `set_name` is for messages.
pub fn assemble(
    set_name: &str,
    index: &PartsIndex,
    parts: &[ConfigMap],
) -> Result<Inventory, InventoryError> {
    let mut text = String::new();
    for name in &index.parts {
        let piece = parts
            .iter()
            .find(|part| part.metadata.name.as_ref() == Some(name))
            .and_then(|part| part.data.as_ref()?.get(PART_KEY))
            .ok_or_else(|| InventoryError::DamagedPart {
                name: name.clone(),
                set: set_name.to_owned(),
            })?;
        text.push_str(piece);
    }
    if sha256_hex(&[text.as_bytes()]) != index.sha256 {
        return Err(InventoryError::PartsMismatch {
            name: set_name.to_owned(),
        });
    }
    let inventory: Inventory =
        serde_json::from_str(&text).map_err(|source| InventoryError::Invalid {
            name: set_name.to_owned(),
            source,
        })?;
    if inventory.version != FORMAT_VERSION {
        return Err(InventoryError::UnsupportedVersion {
            name: set_name.to_owned(),
            found: u64::from(inventory.version),
        });
    }
    Ok(inventory)
}

/// The set ConfigMap `set_name` in `namespace` holding `record` (a whole record or a parts index).
fn set_config_map(set_name: &str, namespace: &str, record: String) -> ConfigMap {
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

/// What the set ConfigMap holds: the record, or the index of its parts.
pub fn from_config_map(config_map: &ConfigMap) -> Result<Stored, InventoryError> {
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
    if version == u64::from(FORMAT_VERSION) {
        serde_json::from_str(text)
            .map(|inventory| Stored::Whole(Box::new(inventory)))
            .map_err(invalid)
    } else if version == u64::from(PARTS_VERSION) {
        serde_json::from_str(text)
            .map(Stored::Parts)
            .map_err(invalid)
    } else {
        Err(InventoryError::UnsupportedVersion {
            name,
            found: version,
        })
    }
}

/// Just the version of a record, read before the rest.
#[derive(Deserialize)]
struct Versioned {
    version: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;
    use crate::model::inventory::*;

    /// The set ConfigMap of an inventory that fits it.
    fn whole(inventory: &Inventory, set_name: &str, namespace: &str) -> ConfigMap {
        let encoded = encode(inventory, set_name, namespace, PART_LIMIT);
        assert!(encoded.parts.is_empty());
        encoded.head
    }

    /// `count` one-off jobs with a run each, a record of about 300 bytes per job.
    fn many(count: usize) -> Inventory {
        let mut inventory = Inventory::default();
        let run = sample().jobs["migrate"].runs[0].clone();
        for index in 0..count {
            inventory.jobs.insert(
                format!("job-{index:05}"),
                JobRecord {
                    kind: Kind::OneOff,
                    desired_hash: sha256_hex(&[b"d", &index.to_le_bytes()]),
                    fingerprint: sha256_hex(&[b"f", &index.to_le_bytes()]),
                    runs: vec![run.clone()],
                },
            );
        }
        inventory
    }

    fn index_of(encoded: &Encoded) -> PartsIndex {
        match from_config_map(&encoded.head).unwrap() {
            Stored::Parts(index) => index,
            Stored::Whole(_) => panic!("stored whole"),
        }
    }

    #[test]
    fn a_record_too_big_for_one_config_map_is_stored_in_parts_that_join_again() {
        let inventory = many(10_000);
        let encoded = encode(&inventory, "toolforge-jobs", "tool-t", PART_LIMIT);
        assert!(encoded.parts.len() >= 2, "{} parts", encoded.parts.len());
        for config_map in std::iter::once(&encoded.head).chain(&encoded.parts) {
            let size: usize = config_map
                .data
                .as_ref()
                .unwrap()
                .values()
                .map(String::len)
                .sum();
            assert!(size <= 1_048_576, "{size} bytes");
        }
        let index = index_of(&encoded);
        assert_eq!(index.parts, encoded.part_names());
        let mut shuffled = encoded.parts.clone();
        shuffled.reverse();
        assert_eq!(
            assemble("toolforge-jobs", &index, &shuffled).unwrap(),
            inventory
        );
    }

    #[test]
    fn a_small_record_stays_readable_in_the_set_config_map() {
        let inventory = sample();
        let pretty = serde_json::to_string_pretty(&inventory).unwrap();
        let encoded = encode(&inventory, "s", "tool-t", PART_LIMIT);
        assert_eq!(encoded.head.data.unwrap()[DATA_KEY], pretty);
        // Too big to be pretty, small enough to be compact: still one ConfigMap.
        let encoded = encode(&inventory, "s", "tool-t", pretty.len() - 1);
        assert!(encoded.parts.is_empty());
        assert_eq!(
            from_config_map(&encoded.head).unwrap(),
            Stored::Whole(Box::new(inventory))
        );
    }

    #[test]
    fn pruned_one_offs_that_ran_are_remembered_for_the_retention_and_taken_back() {
        let mut inventory = sample();
        let at: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        let migrate = inventory.jobs["migrate"].clone();
        inventory.prune("bot", at);
        inventory.prune("migrate", at);
        assert!(inventory.jobs.is_empty());
        assert_eq!(
            inventory.pruned.keys().collect::<Vec<_>>(),
            ["migrate"],
            "only runs"
        );
        let fresh = |kind| JobRecord {
            kind,
            desired_hash: String::new(),
            fingerprint: String::new(),
            runs: Vec::new(),
        };
        assert_eq!(
            *inventory
                .clone()
                .record_mut("migrate", || fresh(Kind::OneOff)),
            migrate
        );

        // Another prune a day after the retention forgets it.
        inventory
            .jobs
            .insert("other".to_owned(), fresh(Kind::OneOff));
        inventory.prune(
            "other",
            at + TOMBSTONE_RETENTION + jiff::SignedDuration::from_hours(24),
        );
        assert!(inventory.pruned.is_empty());
    }

    #[test]
    fn the_newest_tombstones_are_kept() {
        let mut inventory = Inventory::default();
        let at: jiff::Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        let record = sample().jobs["migrate"].clone();
        for index in 0..=MAX_TOMBSTONES {
            let name = format!("job-{index}");
            inventory.jobs.insert(name.clone(), record.clone());
            inventory.prune(
                &name,
                at + jiff::SignedDuration::from_secs(i64::try_from(index).unwrap()),
            );
        }
        assert_eq!(inventory.pruned.len(), MAX_TOMBSTONES);
        assert!(!inventory.pruned.contains_key("job-0"), "the oldest goes");
    }

    #[test]
    fn the_pieces_join_to_the_compact_record() {
        for count in [0, 1, 2, 5_000] {
            let inventory = many(count);
            let compact = serde_json::to_string(&inventory).unwrap();
            for limit in [7, 300, 100_000] {
                let pieces = pieces(&inventory, limit);
                assert!(pieces.iter().all(|piece| piece.len() <= limit));
                assert_eq!(pieces.concat(), compact, "{count} jobs, limit {limit}");
            }
        }
    }

    #[test]
    fn a_change_to_one_job_rewrites_only_the_part_holding_it() {
        let mut inventory = many(10_000);
        let before = encode(&inventory, "s", "tool-t", PART_LIMIT).part_names();
        // A change of length early in the record does not move the cuts after it.
        let run = inventory.jobs["job-00042"].runs[0].clone();
        inventory.jobs.get_mut("job-00042").unwrap().runs.push(run);
        let after = encode(&inventory, "s", "tool-t", PART_LIMIT).part_names();
        let rewritten = after.iter().filter(|name| !before.contains(name)).count();
        assert!(before.len() > 5, "{} parts", before.len());
        assert_eq!(rewritten, 1, "{before:?} → {after:?}");
    }

    #[test]
    fn parts_that_are_missing_damaged_or_swapped_are_errors_not_records() {
        let encoded = encode(&many(100), "s", "tool-t", 4_000);
        let index = index_of(&encoded);
        let missing = assemble("s", &index, &encoded.parts[1..]).unwrap_err();
        assert_eq!(
            missing.to_string(),
            format!(
                "ConfigMap `{}` is not a part of the inventory `s`, or it is damaged",
                index.parts[0]
            )
        );
        let mut damaged = encoded.parts.clone();
        damaged[2]
            .data
            .as_mut()
            .unwrap()
            .insert(PART_KEY.to_owned(), "{}".to_owned());
        assert!(matches!(
            assemble("s", &index, &damaged),
            Err(InventoryError::PartsMismatch { .. })
        ));
    }

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
                        outcome: RunOutcome::Failed,
                    },
                    RunRecord {
                        fingerprint: "d".repeat(64),
                        job_uid: None,
                        started: "2026-11-30T13:00:00Z".parse().unwrap(),
                        finished: None,
                        outcome: RunOutcome::Unknown,
                    },
                ],
            },
        );
        inventory
    }

    #[test]
    fn round_trips_through_its_config_map() {
        let inventory = sample();
        let config_map = whole(&inventory, "toolforge-jobs", "tool-mytool");
        assert_eq!(
            from_config_map(&config_map).unwrap(),
            Stored::Whole(Box::new(inventory))
        );
    }

    #[test]
    fn the_config_map_is_an_applyset_parent() {
        let config_map = whole(&sample(), "toolforge-jobs", "tool-mytool");
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
        let mut config_map = whole(&Inventory::default(), "s", "tool-t");
        config_map.data = Some(BTreeMap::from([(
            DATA_KEY.to_owned(),
            r#"{"version": 1, "jobs": {}}"#.to_owned(),
        )]));
        assert_eq!(
            from_config_map(&config_map).unwrap(),
            Stored::Whole(Box::default())
        );

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
        let config_map = whole(&inventory, "s", "tool-t");
        assert_eq!(
            from_config_map(&config_map).unwrap(),
            Stored::Whole(Box::new(inventory))
        );
    }

    #[test]
    fn newer_formats_are_refused_not_misread() {
        let mut config_map = whole(&Inventory::default(), "s", "tool-t");
        config_map.data = Some(BTreeMap::from([(
            DATA_KEY.to_owned(),
            r#"{"version": 3, "jobs": {}, "lease": {}}"#.to_owned(),
        )]));
        let error = from_config_map(&config_map).unwrap_err();
        assert_eq!(
            error.to_string(),
            "ConfigMap `s` holds an inventory of format 3; this program reads format 1"
        );
    }

    #[test]
    fn damaged_records_are_errors() {
        let mut config_map = whole(&Inventory::default(), "s", "tool-t");
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
