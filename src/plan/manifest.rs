//! A planned write's object, kept as its JSON text until it is sent.
//!
//! A plan of 10 000 new jobs holds some 18 000 objects to write. As `serde_json::Value` trees (a `BTreeMap` node
//! for every JSON object in them) they took about 20 KB each, most of the client's memory; as text, 1–3 KB. Each is
//! parsed again only where it is used: once when it is sent, and for the diff, the quota check and the dry run.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// An object to write, as JSON text. It serialises as the object (its keys sorted, indented as the rest of a
/// pretty-printed plan), not as a string.
#[derive(Debug, Clone)]
pub struct Manifest(Box<RawValue>);

impl Manifest {
    /// `object` as JSON.
    pub fn of(object: &impl Serialize) -> Self {
        // Only maps with non-string keys or failing `Serialize` impls fail to serialise; Kubernetes objects and
        // JSON values have neither.
        Self(serde_json::value::to_raw_value(object).expect("a manifest serialises to JSON"))
    }

    /// The object as a JSON value, to read or to change before it is sent.
    pub fn value(&self) -> serde_json::Value {
        // The text is JSON that `of` wrote, nested far less deep than the parser's limit (Kubernetes objects are).
        serde_json::from_str(self.0.get()).expect("a manifest is the JSON it was made from")
    }

    /// The object decoded into `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

impl From<serde_json::Value> for Manifest {
    fn from(value: serde_json::Value) -> Self {
        Self::of(&value)
    }
}

impl PartialEq for Manifest {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
    }
}

impl Eq for Manifest {}

impl Serialize for Manifest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_as_the_object_it_was_made_from() {
        let object =
            serde_json::json!({"kind": "Job", "metadata": {"name": "once", "labels": {"a": "b"}}});
        let manifest = Manifest::of(&object);
        assert_eq!(manifest.value(), object);
        assert_eq!(
            serde_json::to_value(&manifest).unwrap(),
            object,
            "serialised as the object itself"
        );
    }

    #[test]
    fn manifests_are_equal_when_their_objects_are() {
        let one = Manifest::from(serde_json::json!({"a": 1, "b": 2}));
        let same = Manifest::of(&serde_json::json!({"b": 2, "a": 1}));
        assert_eq!(one, same);
        assert_ne!(one, Manifest::from(serde_json::json!({"a": 1})));
    }
}
