//! LIST responses decoded into what the client keeps of each object, without `metadata.managedFields`.
//!
//! The API server records on every object which writer set which field (`managedFields`): a tree as big as the
//! object itself or bigger, which nothing here reads (the plan compares specs, labels and annotations; the diff
//! shows only the fields we write). Parsed into the k8s-openapi types it would be a `serde_json::Value` per
//! object, the largest part of the client's memory at thousands of jobs; here it is skipped while the response is
//! parsed and never built. The metadata is decoded into the usual type; the spec and status are kept as the JSON
//! text they were sent as (checked once to decode, then dropped), and decoded into the k8s-openapi types when the
//! plan reads them.

use std::collections::BTreeMap;

use k8s_openapi::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::plan::Listed;

/// One page of a LIST: its items, and where the next page starts.
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
pub(super) struct Page<T> {
    #[serde(default)]
    pub(super) metadata: PageMeta,
    /// Some API servers answer an empty list with `"items": null`, which kube's own list type accepts too.
    #[serde(default = "Vec::new", deserialize_with = "null_as_empty")]
    pub(super) items: Vec<T>,
}

fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct PageMeta {
    /// The token of the next page; empty or absent on the last.
    #[serde(default, rename = "continue")]
    pub(super) continue_token: Option<String>,
}

/// An object's metadata, every field of [`ObjectMeta`] but `managedFields` (left unparsed).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

impl From<Metadata> for ObjectMeta {
    fn from(metadata: Metadata) -> Self {
        ObjectMeta {
            annotations: metadata.annotations,
            creation_timestamp: metadata.creation_timestamp,
            deletion_grace_period_seconds: metadata.deletion_grace_period_seconds,
            deletion_timestamp: metadata.deletion_timestamp,
            finalizers: metadata.finalizers,
            generate_name: metadata.generate_name,
            generation: metadata.generation,
            labels: metadata.labels,
            managed_fields: None,
            name: metadata.name,
            namespace: metadata.namespace,
            owner_references: metadata.owner_references,
            resource_version: metadata.resource_version,
            self_link: metadata.self_link,
            uid: metadata.uid,
        }
    }
}

/// A listed object as sent: metadata, and its spec and status left as JSON text (`apiVersion` and `kind` are the
/// list's). They are decoded only when the plan reads the object (see [`Listed`]).
#[derive(Debug, Deserialize)]
pub(super) struct Item {
    metadata: Metadata,
    spec: Option<Box<RawValue>>,
    status: Option<Box<RawValue>>,
}

impl Item {
    /// The object, kept as listed; an error when its spec or status is not of the kind.
    pub(super) fn into_listed<K>(self) -> Result<Listed<K>, serde_json::Error>
    where
        K: Resource + k8s_openapi::Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned,
    {
        Listed::from_parts(
            self.metadata.into(),
            self.spec.as_deref(),
            self.status.as_deref(),
        )
    }
}

/// A listed custom resource (a stored record) as JSON, without `metadata.managedFields`.
#[derive(Debug, Deserialize)]
pub(super) struct RawItem(serde_json::Map<String, serde_json::Value>);

impl RawItem {
    /// The object, and its metadata parsed.
    pub(super) fn into_parts(self) -> Result<(ObjectMeta, serde_json::Value), serde_json::Error> {
        let mut object = self.0;
        let metadata = match object.get_mut("metadata") {
            Some(serde_json::Value::Object(metadata)) => {
                metadata.remove("managedFields");
                serde_json::from_value::<Metadata>(serde_json::Value::Object(metadata.clone()))?
                    .into()
            }
            _ => ObjectMeta::default(),
        };
        Ok((metadata, serde_json::Value::Object(object)))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::Job;

    use super::*;

    #[test]
    fn a_listed_object_keeps_everything_but_its_managed_fields() {
        let job = serde_json::json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "once", "namespace": "tool-x", "uid": "u-1", "resourceVersion": "7",
                "labels": {"app.kubernetes.io/managed-by": "toolforge-jobs-framework"},
                "annotations": {"jobs.toolforge.org/desired-hash": "h"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "c", "uid": "u-0"}],
                "creationTimestamp": "2026-12-06T10:00:00Z",
                "managedFields": [{"manager": "toolforge-jobs", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {}}}}],
            },
            "spec": {"template": {"spec": {"containers": [{"name": "once", "image": "img"}]}}},
            "status": {"conditions": [{"type": "Complete", "status": "True"}]},
        });
        let mut expected: Job = serde_json::from_value(job.clone()).unwrap();
        // Spec and status are kept as text, which is read from a response's text.
        let body = serde_json::json!({"metadata": {"continue": "next"}, "items": [job]});
        let page: Page<Item> = serde_json::from_str(&body.to_string()).unwrap();
        assert_eq!(page.metadata.continue_token.as_deref(), Some("next"));
        let listed: Vec<Job> = page
            .items
            .into_iter()
            .map(|item| item.into_listed::<Job>().unwrap().decode())
            .collect();
        assert!(expected.metadata.managed_fields.take().is_some());
        assert_eq!(listed, vec![expected]);
    }

    #[test]
    fn an_empty_list_may_come_as_null_or_without_items() {
        for body in [
            serde_json::json!({"metadata": {}, "items": null}),
            serde_json::json!({"metadata": {}}),
        ] {
            let page: Page<Item> = serde_json::from_str(&body.to_string()).unwrap();
            assert!(page.items.is_empty());
        }
    }

    #[test]
    fn a_listed_record_keeps_everything_but_its_managed_fields() {
        let record = serde_json::json!({
            "apiVersion": "jobs-api.toolforge.org/v1", "kind": "ScheduledJob",
            "metadata": {"name": "c", "labels": {"a": "b"}, "managedFields": [{"manager": "m"}]},
            "spec": {"schedule": "* * * * *"},
        });
        let (metadata, object) = serde_json::from_value::<RawItem>(record.clone())
            .unwrap()
            .into_parts()
            .unwrap();
        assert_eq!(metadata.name.as_deref(), Some("c"));
        assert!(metadata.managed_fields.is_none());
        let mut expected = record;
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(object, expected);
    }
}
