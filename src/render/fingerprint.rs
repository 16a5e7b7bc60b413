//! The fingerprint of a job: its canonical form plus its triggers (SPEC §3, §5).
//!
//! A one-off job runs again exactly when its fingerprint changes, so the fingerprint must be stable across runs
//! and machines: it hashes only the canonical job's hash, the `trigger` value and, for `trigger-files`, the
//! matched files' paths relative to the jobs file's directory (with `/` separators) and their bytes, sorted by
//! path. File times, permissions and absolute paths never enter it.
//!
//! The hashing is pure ([`fingerprint`], [`trigger_digest`]): the files come in as [`TriggerFiles`], read by the
//! pipeline (`crate::pipeline::trigger_files`) before rendering.

use std::collections::BTreeMap;

use crate::model::digest::sha256_hex;

const FINGERPRINT_FORMAT: &[u8] = b"toolforge-jobs fingerprint v1\n";
const TRIGGER_FORMAT: &[u8] = b"toolforge-jobs triggers v1\n";

/// One file matched by a `trigger-files` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerFile {
    /// Relative to the jobs file's directory, components separated by `/`.
    pub path: String,
    pub contents: Vec<u8>,
}

/// The files each `trigger-files` pattern of a jobs file matched, read once for the whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriggerFiles {
    by_pattern: BTreeMap<String, Vec<TriggerFile>>,
}

impl TriggerFiles {
    /// Records what `pattern` matched.
    pub fn insert(&mut self, pattern: &str, files: Vec<TriggerFile>) {
        self.by_pattern.insert(pattern.to_owned(), files);
    }

    /// What `pattern` matched, or `None` when it was never read.
    pub fn matched_by(&self, pattern: &str) -> Option<&[TriggerFile]> {
        self.by_pattern.get(pattern).map(Vec::as_slice)
    }
}

/// The hash of a job's triggers, or `None` when the job has neither `trigger` nor `trigger-files`.
///
/// Files matched by several patterns count once.
pub fn trigger_digest(trigger: Option<&str>, files: &[&TriggerFile]) -> Option<String> {
    if trigger.is_none() && files.is_empty() {
        return None;
    }
    let unique: BTreeMap<&str, &[u8]> = files
        .iter()
        .map(|file| (file.path.as_str(), file.contents.as_slice()))
        .collect();
    let mut input = TRIGGER_FORMAT.to_vec();
    // JSON strings quote and escape, so no value can be mistaken for the text around it.
    input.extend_from_slice(format!("trigger {}\n", json_string(trigger)).as_bytes());
    for (path, contents) in unique {
        input.extend_from_slice(
            format!("file {} {}\n", json_string(Some(path)), contents.len()).as_bytes(),
        );
        input.extend_from_slice(contents);
        input.push(b'\n');
    }
    Some(sha256_hex(&[&input]))
}

/// The fingerprint of a job: its desired hash and its trigger digest, hashed together.
pub fn fingerprint(desired_hash: &str, trigger_digest: Option<&str>) -> String {
    sha256_hex(&[
        FINGERPRINT_FORMAT,
        b"job ",
        desired_hash.as_bytes(),
        b"\ntriggers ",
        trigger_digest.unwrap_or("-").as_bytes(),
        b"\n",
    ])
}

fn json_string(text: Option<&str>) -> String {
    // Serialising a string or null to JSON cannot fail.
    serde_json::to_string(&text).expect("a string serialises to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, contents: &str) -> TriggerFile {
        TriggerFile {
            path: path.to_owned(),
            contents: contents.as_bytes().to_vec(),
        }
    }

    #[test]
    fn no_triggers_means_no_trigger_digest() {
        assert_eq!(trigger_digest(None, &[]), None);
    }

    #[test]
    fn trigger_digests_are_fixed_vectors() {
        // Fixed vectors, computed independently with Python's hashlib from the format in docs/rendering.md. A
        // change here changes every fingerprint in every inventory, i.e. re-runs every one-off job.
        assert_eq!(
            trigger_digest(Some("v1"), &[]).unwrap(),
            "f172a48a81f0a78c83a6bae8e1ebc57c5ed54607ac988e537cdcc05be3d50bd0"
        );
        let requirements = file("requirements.txt", "requests==2.32\n");
        assert_eq!(
            trigger_digest(None, &[&requirements]).unwrap(),
            "79d18717406125cb165afe410c98a0667f072415c452e7f2438e3db8aa0acc26"
        );
        assert_eq!(
            fingerprint("abc", None),
            "4b1cd632a72f390752aeec93dbe38b32e345c11379a98c5ee7b6bb2fc110cde7"
        );
    }

    #[test]
    fn file_order_and_duplicates_do_not_matter() {
        let a = file("a.py", "print(1)\n");
        let b = file("lib/b.py", "print(2)\n");
        assert_eq!(
            trigger_digest(None, &[&a, &b]),
            trigger_digest(None, &[&b, &a, &b])
        );
    }

    #[test]
    fn contents_names_and_boundaries_all_count() {
        let base = trigger_digest(None, &[&file("a", "xy")]);
        assert_ne!(base, trigger_digest(None, &[&file("a", "xz")]));
        assert_ne!(base, trigger_digest(None, &[&file("b", "xy")]));
        assert_ne!(
            base,
            trigger_digest(None, &[&file("a", "x"), &file("b", "y")])
        );
        assert_ne!(base, trigger_digest(Some(""), &[&file("a", "xy")]));
    }

    #[test]
    fn the_fingerprint_follows_the_job_and_the_triggers() {
        let plain = fingerprint("hash-1", None);
        assert_ne!(plain, fingerprint("hash-2", None));
        assert_ne!(plain, fingerprint("hash-1", Some("digest")));
    }
}
