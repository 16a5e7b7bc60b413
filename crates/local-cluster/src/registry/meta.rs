//! Small helpers over objects held as JSON: reading and writing `metadata` fields, timestamps, UIDs and
//! generated names. Everything here is pure except the clock and the random source, which are isolated in
//! [`now`] (which reads the cluster's [`Clock`]), [`new_uid`] and [`random_suffix`].

use serde_json::{Map, Value};

use crate::clock::Clock;

/// The cluster's current time as Kubernetes writes it: RFC 3339, second precision, UTC.
pub(crate) fn now(clock: Clock) -> String {
    format_time(clock.now())
}

pub(crate) fn format_time(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses a timestamp written by [`now`] (or any RFC 3339 text).
pub(crate) fn parse_time(text: &str) -> Option<jiff::Timestamp> {
    text.parse().ok()
}

/// A random UUID in its text form, as `metadata.uid` holds it.
pub(crate) fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Five random characters from the alphabet of the API server's name generator (no vowels, no 0/1/3).
pub(crate) fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// `generateName` prefix truncated to 58 characters, plus the random suffix.
pub(crate) fn generate_name(prefix: &str) -> String {
    let truncated: String = prefix.chars().take(58).collect();
    format!("{truncated}{}", random_suffix())
}

/// The string at a path of object keys, if every step exists and the leaf is a string.
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path)?.as_str()
}

/// The value at a path of object keys.
pub(crate) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// The object map at a path, created (replacing non-objects) when missing.
pub(crate) fn map_at<'a>(value: &'a mut Value, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut current = value;
    for key in path {
        current = ensure_object(current)
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    ensure_object(current)
}

fn ensure_object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    // Invariant: the line above made `value` an object.
    value
        .as_object_mut()
        .expect("value was just made an object")
}

/// Sets a value at a path of object keys, creating intermediate objects.
pub(crate) fn set_at(value: &mut Value, path: &[&str], new: Value) {
    if let Some((last, parents)) = path.split_last() {
        map_at(value, parents).insert((*last).to_owned(), new);
    }
}

/// Removes the value at a path of object keys.
pub(crate) fn remove_at(value: &mut Value, path: &[&str]) -> Option<Value> {
    let (last, parents) = path.split_last()?;
    let mut current = value;
    for key in parents {
        current = current.get_mut(key)?;
    }
    current.as_object_mut()?.remove(*last)
}

pub(crate) fn name(object: &Value) -> &str {
    str_at(object, &["metadata", "name"]).unwrap_or_default()
}

pub(crate) fn namespace(object: &Value) -> &str {
    str_at(object, &["metadata", "namespace"]).unwrap_or_default()
}

pub(crate) fn uid(object: &Value) -> &str {
    str_at(object, &["metadata", "uid"]).unwrap_or_default()
}

pub(crate) fn resource_version(object: &Value) -> Option<&str> {
    str_at(object, &["metadata", "resourceVersion"]).filter(|rv| !rv.is_empty())
}

pub(crate) fn is_deleting(object: &Value) -> bool {
    at(object, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null())
}

pub(crate) fn finalizers(object: &Value) -> Vec<String> {
    at(object, &["metadata", "finalizers"])
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    if finalizers.is_empty() {
        remove_at(object, &["metadata", "finalizers"]);
    } else {
        set_at(
            object,
            &["metadata", "finalizers"],
            Value::from(finalizers.to_vec()),
        );
    }
}

pub(crate) fn labels(object: &Value) -> Option<&Map<String, Value>> {
    at(object, &["metadata", "labels"])?.as_object()
}

pub(crate) fn owner_references(object: &Value) -> &[Value] {
    at(object, &["metadata", "ownerReferences"])
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn generated_names_keep_58_prefix_characters_and_add_five_from_the_alphabet() {
        let name = generate_name(&"a".repeat(70));
        assert_eq!(name.len(), 63);
        assert!(
            name[58..]
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
        assert!(generate_name("job-").starts_with("job-"));
    }

    #[test]
    fn timestamps_have_second_precision_in_utc() {
        let text = now(Clock::default());
        assert_eq!(text.len(), 20, "{text}");
        assert!(text.ends_with('Z'));
        assert!(parse_time(&text).is_some());
    }

    #[test]
    fn set_at_creates_parents_and_remove_at_removes() {
        let mut v = json!({"a": 1});
        set_at(&mut v, &["metadata", "labels", "x"], json!("y"));
        assert_eq!(v, json!({"a": 1, "metadata": {"labels": {"x": "y"}}}));
        assert_eq!(
            remove_at(&mut v, &["metadata", "labels", "x"]),
            Some(json!("y"))
        );
        assert_eq!(remove_at(&mut v, &["nope", "x"]), None);
    }
}
