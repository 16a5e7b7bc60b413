//! The representation a client asks for in its `Accept` header: the object itself, a `Table` (kubectl get), or
//! `PartialObjectMetadata` (kube-rs' `*_metadata` calls), and the conversions into each.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::table;
use crate::registry::resources::ResourceType;

/// How objects are rendered in a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Representation {
    Object,
    Table,
    Metadata,
}

impl Representation {
    /// Chooses from the client's first preference, the one kubectl and kube-rs rely on.
    pub(crate) fn from_accept(accept: &str) -> Self {
        let first = accept.split(',').next().unwrap_or_default();
        if first.contains("as=Table") {
            Representation::Table
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
            Representation::Table => {
                table::table(resource, std::slice::from_ref(object), None, now)
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
            Representation::Table => {
                let mut table = table::table(resource, &items(), resource_version, now);
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
        assert_eq!(Representation::from_accept(table), Representation::Table);
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
