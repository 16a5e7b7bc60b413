//! The form the store keeps an object in: its JSON text, parsed again when read. A `serde_json::Value` costs
//! about ten times its text (every JSON object is a B-tree whose nodes take ~630 bytes even for one entry, and a
//! stored object's managedFields mirror its whole tree), so 50 000 CronJobs of 3 KB took 1.4 GB as trees
//! (issue 19). Reads copied the tree anyway; parsing instead costs a little more, and watches and the state file
//! send the text as it is.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

/// `serde_json` refuses to parse JSON nested deeper than 128; an object that deep (its managedFields nest a few
/// levels deeper than the object itself) is kept as a tree, so parsing the stored text can never fail.
const MAX_TEXT_DEPTH: usize = 100;

/// One stored object, cheap to clone (the text is shared by the store and the watch history).
#[derive(Debug, Clone)]
pub(crate) struct Stored(Form);

#[derive(Debug, Clone)]
enum Form {
    Text(Arc<str>),
    Tree(Arc<Value>),
}

impl Stored {
    /// The stored form of `object`.
    pub(crate) fn new(object: &Value) -> Self {
        if depth(object) > MAX_TEXT_DEPTH {
            Stored(Form::Tree(Arc::new(object.clone())))
        } else {
            Stored(Form::Text(Arc::from(object.to_string())))
        }
    }

    /// The object, as a fresh tree the caller owns.
    pub(crate) fn value(&self) -> Value {
        match &self.0 {
            Form::Text(text) => serde_json::from_str(text)
                // The text was written by serde_json from a Value no deeper than MAX_TEXT_DEPTH, so it is
                // valid JSON within the parser's depth limit.
                .expect("stored JSON text parses"),
            Form::Tree(tree) => Value::clone(tree),
        }
    }

    /// Whether the object's JSON text may contain `text` verbatim: a cheap test that rules an object out before
    /// parsing it (an object stored as a tree always may).
    pub(crate) fn may_contain(&self, text: &str) -> bool {
        match &self.0 {
            Form::Text(json) => json.contains(text),
            Form::Tree(_) => true,
        }
    }

    /// Whether the object's JSON text may contain every one of `texts` ([`Self::may_contain`]).
    pub(crate) fn may_contain_all(&self, texts: &[impl AsRef<str>]) -> bool {
        texts.iter().all(|text| self.may_contain(text.as_ref()))
    }

    /// The object as JSON text (shared, not copied, when it is stored as text).
    pub(crate) fn json(&self) -> Arc<str> {
        match &self.0 {
            Form::Text(text) => Arc::clone(text),
            Form::Tree(tree) => Arc::from(tree.to_string()),
        }
    }

    /// The object as JSON text without its `apiVersion` and `kind`, as the items of a list carry it: its other
    /// members are copied as they are written, not parsed.
    pub(crate) fn item_json(&self) -> String {
        let text = self.json();
        // Stored objects are JSON objects written by serde_json (sorted keys, which the map keeps), so this
        // parses; the map serialises back to the same text without the two members.
        let mut members: BTreeMap<String, &RawValue> =
            serde_json::from_str(&text).expect("a stored object is a JSON object");
        members.remove("apiVersion");
        members.remove("kind");
        serde_json::to_string(&members).expect("raw JSON members serialise")
    }
}

/// How deeply arrays and objects nest in `value` (0 for a scalar).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_reads_back_as_it_was_stored() {
        let object = json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"replicas": 3,
            "ratio": 0.25, "big": u64::MAX, "negative": -7, "items": [null, true, "s"]}});
        let stored = Stored::new(&object);
        assert_eq!(stored.value(), object);
        assert_eq!(&*stored.json(), object.to_string());
    }

    #[test]
    fn a_list_item_is_the_object_without_its_api_version_and_kind() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "binaryData": {},
            "data": {"kind": "x", "q\"}": "\\\"],{", "é": "ü,}"}, "immutable": false,
            "metadata": {"name": "a", "labels": {"apiVersion": "k"}}});
        let mut item = object.clone();
        if let Some(map) = item.as_object_mut() {
            map.remove("apiVersion");
            map.remove("kind");
        }
        assert_eq!(Stored::new(&object).item_json(), item.to_string());
        assert_eq!(Stored::new(&json!({"kind": "Empty"})).item_json(), "{}");
    }

    #[test]
    fn an_object_nested_deeper_than_the_parser_allows_still_reads_back() {
        let mut object = json!("leaf");
        for _ in 0..200 {
            object = json!({ "f:nested": object });
        }
        let stored = Stored::new(&object);
        assert_eq!(stored.value(), object);
        assert_eq!(&*stored.json(), object.to_string());
        assert_eq!(stored.item_json(), object.to_string());
        assert!(stored.may_contain("not in it"), "a tree is never ruled out");
    }

    #[test]
    fn an_object_may_contain_only_text_its_json_contains() {
        let stored = Stored::new(&json!({"metadata": {"name": "bot-1", "uid": "6f1c"}}));
        assert!(stored.may_contain("6f1c"));
        assert!(stored.may_contain("bot-1"));
        assert!(!stored.may_contain("bot-2"));
    }
}
