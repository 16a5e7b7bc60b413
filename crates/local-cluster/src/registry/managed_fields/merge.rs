//! The merge of server-side apply: an applied configuration laid over the live object. Objects merge field by
//! field, keyed lists element by element (live elements first, new ones after), sets by value; atomic values
//! are replaced. A `null` in the configuration removes the field, as decoding into the typed object does.

use serde_json::{Map, Value};

use crate::registry::managed_fields::schema::{Shape, Types, shape};

/// `config` merged into `live`.
pub(crate) fn merge(types: Types, live: &Value, config: &Value) -> Value {
    merge_at(types, None, Some(live), config)
}

fn merge_at(types: Types, field: Option<&str>, live: Option<&Value>, config: &Value) -> Value {
    match shape(types, field, config) {
        Shape::Atomic => without_nulls(config),
        Shape::Object(fields) => {
            let mut merged = match live {
                Some(Value::Object(live)) => live.clone(),
                _ => Map::new(),
            };
            for (name, value) in fields {
                if value.is_null() {
                    merged.remove(name);
                    continue;
                }
                let merged_value = merge_at(types, Some(name), merged.get(name), value);
                merged.insert(name.clone(), merged_value);
            }
            Value::Object(merged)
        }
        Shape::List(config_items) => {
            let live_items = match live.map(|live| shape(types, field, live)) {
                Some(Shape::List(items)) => items,
                _ => Vec::new(),
            };
            let mut merged: Vec<(_, Value)> = live_items
                .into_iter()
                .map(|(element, item)| (element, item.clone()))
                .collect();
            for (element, item) in config_items {
                match merged.iter_mut().find(|(e, _)| *e == element) {
                    Some((_, existing)) => *existing = merge_at(types, None, Some(existing), item),
                    None => merged.push((element, merge_at(types, None, None, item))),
                }
            }
            Value::Array(merged.into_iter().map(|(_, item)| item).collect())
        }
    }
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keyed_elements_merge_sets_union_and_atomic_values_are_replaced() {
        let live = json!({"metadata": {"finalizers": ["a"], "labels": {"x": "1"}},
            "spec": {"selector": {"matchLabels": {"old": "1"}}, "containers": [
                {"name": "c", "image": "i", "args": ["1", "2"]}, {"name": "d", "image": "j"}]}});
        let config = json!({"metadata": {"finalizers": ["b"], "labels": {"y": "2", "x": null}},
            "spec": {"selector": {"matchLabels": {"new": "1"}}, "containers": [
                {"name": "e", "image": "k"}, {"name": "c", "args": ["3"]}]}});
        assert_eq!(
            merge(Types::BuiltIn, &live, &config),
            json!({"metadata": {"finalizers": ["a", "b"], "labels": {"y": "2"}},
                "spec": {"selector": {"matchLabels": {"new": "1"}}, "containers": [
                    {"name": "c", "image": "i", "args": ["3"]}, {"name": "d", "image": "j"},
                    {"name": "e", "image": "k"}]}})
        );
    }
}
