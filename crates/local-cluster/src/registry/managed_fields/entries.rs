//! `metadata.managedFields`: reading the entries of an object (or of a request body) into field sets, and
//! writing them back in the order the API server sorts them (Apply before Update, then oldest first, then by
//! manager, apiVersion and subresource).

use serde_json::{Map, Value, json};

use crate::registry::managed_fields::set::FieldSet;
use crate::registry::meta;

/// The operation an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum Operation {
    Apply,
    #[default]
    Update,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One manager's fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: Operation,
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
    /// `status` for writes to the status subresource, else empty.
    pub(crate) subresource: String,
    pub(crate) fields: FieldSet,
}

impl Entry {
    /// Whether two entries are the same manager: appliers are one manager whatever apiVersion they applied
    /// with; updaters are one per apiVersion.
    pub(crate) fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// How conflict messages name the manager: appliers by name, updaters with the apiVersion they used.
    pub(crate) fn describe(&self) -> String {
        let subresource = if self.subresource.is_empty() {
            String::new()
        } else {
            format!(" with subresource {:?}", self.subresource)
        };
        let version = if self.operation == Operation::Update {
            format!(" using {}", self.api_version)
        } else {
            String::new()
        };
        format!("{:?}{subresource}{version}", self.manager)
    }

    fn decode(value: &Value) -> Result<Entry, String> {
        let text = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default();
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            other => return Err(format!("operation {other:?} is neither Apply nor Update")),
        };
        if text("fieldsType") != "FieldsV1" {
            return Err(format!(
                "fieldsType {:?} is not FieldsV1",
                text("fieldsType")
            ));
        }
        let fields = match value.get("fieldsV1") {
            Some(fields) => FieldSet::from_fields_v1(fields)?,
            None => FieldSet::default(),
        };
        Ok(Entry {
            manager: text("manager").to_owned(),
            operation,
            api_version: text("apiVersion").to_owned(),
            time: value.get("time").and_then(Value::as_str).map(str::to_owned),
            subresource: text("subresource").to_owned(),
            fields,
        })
    }

    fn encode(&self) -> Value {
        let mut map = Map::new();
        if !self.manager.is_empty() {
            map.insert("manager".into(), json!(self.manager));
        }
        map.insert("operation".into(), json!(self.operation.name()));
        map.insert("apiVersion".into(), json!(self.api_version));
        if let Some(time) = &self.time {
            map.insert("time".into(), json!(time));
        }
        map.insert("fieldsType".into(), json!("FieldsV1"));
        map.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            map.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(map)
    }
}

/// Reads a `managedFields` list; any entry that does not decode makes the whole list unusable, as for the API
/// server.
pub(crate) fn decode(list: &Value) -> Result<Vec<Entry>, String> {
    let Some(items) = list.as_array() else {
        return Err("managedFields must be a list".into());
    };
    items.iter().map(Entry::decode).collect()
}

/// The entries of a stored object; objects written before this server kept managed fields have none.
pub(crate) fn of_object(object: &Value) -> Vec<Entry> {
    meta::at(object, &["metadata", "managedFields"])
        .and_then(|list| decode(list).ok())
        .unwrap_or_default()
}

/// Whether a request's `managedFields` asks for a reset: a list of one empty entry.
pub(crate) fn is_reset(list: &Value) -> bool {
    list.as_array()
        .is_some_and(|items| items.len() == 1 && items[0].as_object().is_some_and(Map::is_empty))
}

/// Writes the entries into the object (removing the field when there are none), sorted.
pub(crate) fn store(object: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|entry| !entry.fields.is_empty());
    if entries.is_empty() {
        meta::remove_at(object, &["metadata", "managedFields"]);
        return;
    }
    entries.sort_by(|a, b| {
        (
            a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let encoded = entries.iter().map(Entry::encode).collect();
    meta::set_at(
        object,
        &["metadata", "managedFields"],
        Value::Array(encoded),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_sort_appliers_first_then_by_time() {
        let list = json!([
            {"manager": "kubectl-edit", "operation": "Update", "apiVersion": "apps/v1",
             "time": "2026-01-01T00:00:02Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}},
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}, "subresource": "status"},
            {"manager": "alice", "operation": "Apply", "apiVersion": "apps/v1", "time": "2026-01-01T00:00:03Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ]);
        let entries = decode(&list).expect("valid");
        assert_eq!(
            entries[1].describe(),
            r#""kubelet" with subresource "status" using v1"#
        );
        assert_eq!(entries[2].describe(), r#""alice""#);
        let mut object = json!({"metadata": {}});
        store(&mut object, entries);
        let managers: Vec<&str> = object["metadata"]["managedFields"]
            .as_array()
            .expect("list")
            .iter()
            .map(|e| e["manager"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(managers, ["alice", "kubelet", "kubectl-edit"]);
        assert!(decode(&json!([{"operation": "Patch", "fieldsType": "FieldsV1"}])).is_err());
        assert!(is_reset(&json!([{}])));
        assert!(!is_reset(&json!([])));
    }
}
