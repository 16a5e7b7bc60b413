//! The form the store keeps an object in: its JSON text, parsed again when read. A `serde_json::Value` costs
//! about ten times its text (every JSON object is a B-tree whose nodes take ~630 bytes even for one entry, and a
//! stored object's managedFields mirror its whole tree), so 50 000 CronJobs of 3 KB took 1.4 GB as trees
//! (issue 19). Reads copied the tree anyway; parsing instead costs a little more, and watches and the state file
//! send the text as it is.

use std::sync::Arc;

use serde_json::Value;

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

    /// The object as JSON text (shared, not copied, when it is stored as text).
    pub(crate) fn json(&self) -> Arc<str> {
        match &self.0 {
            Form::Text(text) => Arc::clone(text),
            Form::Tree(tree) => Arc::from(tree.to_string()),
        }
    }

    /// The object as JSON text without its `apiVersion` and `kind`, as the items of a list carry it.
    pub(crate) fn item_json(&self) -> String {
        let text = self.json();
        let kept: Vec<&str> = members(&text)
            .into_iter()
            .filter(|member| {
                !member.starts_with("\"apiVersion\":") && !member.starts_with("\"kind\":")
            })
            .collect();
        format!("{{{}}}", kept.join(","))
    }
}

/// The top-level members (`"key":value`) of a JSON object as `serde_json` writes it (no whitespace). Splitting
/// only at ASCII bytes keeps every slice on a character boundary.
fn members(text: &str) -> Vec<&str> {
    let mut members = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0_usize, false, false);
    let mut start = 1;
    for (at, byte) in text.bytes().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && at > start {
                    members.extend(text.get(start..at));
                }
            }
            b',' if depth == 1 => {
                members.extend(text.get(start..at));
                start = at + 1;
            }
            _ => {}
        }
    }
    members
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
    }
}
