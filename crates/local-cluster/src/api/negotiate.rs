//! The representation a client asks for in its `Accept` header: the object itself, a `Table` (kubectl get), or
//! `PartialObjectMetadata` (kube-rs' `*_metadata` calls), and the conversions into each.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::table::{self, RowObject};
use crate::registry::api_error::ApiError;
use crate::registry::resources::ResourceType;

/// How objects are rendered in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Representation {
    Object,
    Table(RowObject),
    Metadata,
}

impl Representation {
    /// Chooses from the client's first preference, the one kubectl and kube-rs rely on, and for a Table what its
    /// rows carry (the `includeObject` query parameter, validated only when a Table is asked for, as the API
    /// server does).
    pub(crate) fn negotiate(accept: &str, include_object: Option<&str>) -> Result<Self, ApiError> {
        Ok(match Self::from_accept(accept) {
            Representation::Table(_) => Representation::Table(RowObject::parse(include_object)?),
            other => other,
        })
    }

    fn from_accept(accept: &str) -> Self {
        let first = accept.split(',').next().unwrap_or_default();
        if first.contains("as=Table") {
            Representation::Table(RowObject::Metadata)
        } else if first.contains("as=PartialObjectMetadata") {
            Representation::Metadata
        } else {
            Representation::Object
        }
    }

    /// One object (a GET or a watch event); a Table's ages are as of the cluster time `now`.
    pub(crate) fn single(self, resource: &ResourceType, object: &Value, now: Timestamp) -> Value {
        match self {
            Representation::Object => resource.present(object.clone()),
            Representation::Table(rows) => {
                table::table(resource, std::slice::from_ref(object), None, now, rows)
            }
            Representation::Metadata => partial(object),
        }
    }

    /// A list response built by [`crate::registry::ops::list`]; a Table's ages are as of the cluster time `now`.
    pub(crate) fn list(self, resource: &ResourceType, list: Value, now: Timestamp) -> Value {
        let items = || list["items"].as_array().cloned().unwrap_or_default();
        let resource_version = list["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned);
        match self {
            Representation::Object if resource.is_custom() => {
                // Items of custom resources keep their kind and apiVersion, as unstructured lists do.
                let mut list = list;
                if let Some(items) = list["items"].as_array_mut() {
                    for item in items {
                        if let Some(map) = item.as_object_mut() {
                            map.insert("apiVersion".into(), Value::from(resource.api_version()));
                            map.insert("kind".into(), Value::from(resource.kind));
                        }
                    }
                }
                list
            }
            Representation::Object if resource.view.is_some() => {
                let mut list = list;
                if let Some(items) = list["items"].as_array_mut() {
                    for item in items {
                        let mut presented = resource.present(item.take());
                        if let Some(map) = presented.as_object_mut() {
                            map.remove("apiVersion");
                            map.remove("kind");
                        }
                        *item = presented;
                    }
                }
                list
            }
            Representation::Object => list,
            Representation::Table(rows) => {
                let mut table = table::table(resource, &items(), resource_version, now, rows);
                table["metadata"] = list["metadata"].clone();
                table
            }
            Representation::Metadata => json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": list["metadata"],
                "items": items().iter().map(partial).collect::<Vec<_>>(),
            }),
        }
    }
}

fn partial(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resources::find;

    #[test]
    fn first_accept_entry_decides() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            Representation::from_accept(table),
            Representation::Table(RowObject::Metadata)
        );
        assert_eq!(
            Representation::from_accept(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
            ),
            Representation::Metadata
        );
        assert_eq!(
            Representation::from_accept("application/vnd.kubernetes.protobuf,application/json"),
            Representation::Object
        );
        assert_eq!(Representation::from_accept(""), Representation::Object);
    }

    #[test]
    fn table_rows_carry_what_include_object_asks_for() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
        let jobs = find("batch", "v1", "jobs").expect("served");
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a"}, "status": {"startTime": "2026-01-01T00:00:00Z"}});
        let row = |include: Option<&str>| {
            let representation = Representation::negotiate(table, include).expect("valid");
            representation.single(jobs, &job, Timestamp::now())["rows"][0]["object"].clone()
        };
        assert_eq!(row(None)["kind"], "PartialObjectMetadata");
        assert_eq!(row(Some("Metadata"))["metadata"]["name"], "a");
        assert_eq!(row(Some("Object")), job);
        assert_eq!(row(Some("None")), Value::Null);
        let invalid = Representation::negotiate(table, Some("All")).expect_err("unsupported");
        assert_eq!(invalid.code, 422);
        assert!(
            invalid
                .message
                .starts_with("TableOptions.meta.k8s.io \"\" is invalid: includeObject: Unsupported value: \"All\""),
            "{}",
            invalid.message
        );
        assert_eq!(
            Representation::negotiate("application/json", Some("All")).expect("not a Table"),
            Representation::Object
        );
    }

    #[test]
    fn metadata_lists_keep_only_metadata() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let list = json!({"kind": "JobList", "metadata": {"resourceVersion": "7"}, "items": [{"metadata": {"name": "a"}, "spec": {}}]});
        let partial = Representation::Metadata.list(jobs, list, Timestamp::now());
        assert_eq!(partial["kind"], "PartialObjectMetadataList");
        assert_eq!(partial["metadata"]["resourceVersion"], "7");
        assert_eq!(
            partial["items"][0],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}})
        );
    }
}
