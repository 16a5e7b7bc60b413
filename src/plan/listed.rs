//! A listed object kept as JSON text, its metadata parsed, and decoded when it is read.
//!
//! k8s-openapi's structs hold every optional field inline: a listed CronJob decodes to about 10 KB of memory,
//! where its JSON is under 3 KB. A live state of 10 000 jobs kept decoded was most of `diff`'s memory. The plan
//! reads an object's metadata for every object, and decodes its whole only while it decides that object's job.

use std::marker::PhantomData;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{Metadata, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::render::LiveObject;

/// A listed object of type `K`: its metadata, and the rest as JSON (the metadata is kept once, parsed).
#[derive(Debug, Clone)]
pub struct Listed<K> {
    pub metadata: ObjectMeta,
    /// The object with an empty `metadata`.
    text: Box<RawValue>,
    object: PhantomData<fn() -> K>,
}

impl<K> Listed<K>
where
    K: Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned,
{
    /// Keeps `object` as JSON.
    pub fn new(mut object: K) -> Self {
        let metadata = std::mem::take(object.metadata_mut());
        Self {
            metadata,
            // Kubernetes objects always serialise (string keys only, no failing `Serialize` impl).
            text: serde_json::value::to_raw_value(&object).expect("a Kubernetes object serialises"),
            object: PhantomData,
        }
    }

    /// The object listed with `metadata`, and its `spec` and `status` as sent, kept as they are; an error when
    /// they do not decode as a `K` (a server's answer is not trusted to). It is decoded once here, so that
    /// [`Self::decode`] and [`Self::part`] cannot fail later, and a malformed object is an error of the LIST that
    /// returned it.
    pub fn from_parts(
        metadata: ObjectMeta,
        spec: Option<&RawValue>,
        status: Option<&RawValue>,
    ) -> Result<Self, serde_json::Error>
    where
        K: Resource,
    {
        let parts = Parts {
            api_version: K::API_VERSION,
            kind: K::KIND,
            metadata: NoMetadata {},
            spec,
            status,
        };
        // Strings and JSON text serialise.
        let text = serde_json::value::to_raw_value(&parts).expect("listed parts serialise");
        serde_json::from_str::<K>(text.get())?;
        Ok(Self {
            metadata,
            text,
            object: PhantomData,
        })
    }

    /// The object.
    pub fn decode(&self) -> K {
        let mut object: K = self.part();
        *object.metadata_mut() = self.metadata.clone();
        object
    }

    /// The fields of the object (but its metadata) that `T` has, decoded: cheaper than [`Self::decode`] when
    /// only a few are read.
    pub fn part<T: DeserializeOwned>(&self) -> T {
        // The text decodes as a `K` (`new` wrote it from one, `from_parts` checked it), and `T` is a projection of
        // `K`: each of its fields is one of `K`'s, of the same type, or optional.
        serde_json::from_str(self.text.get()).expect("a listed object decodes as it was encoded")
    }

    /// The object as JSON (with `apiVersion` and `kind`).
    pub fn value(&self) -> serde_json::Value {
        // The same text, read as any JSON.
        let mut value: serde_json::Value =
            serde_json::from_str(self.text.get()).expect("a listed object is JSON");
        // ObjectMeta serialises with string keys only.
        value["metadata"] = serde_json::to_value(&self.metadata).expect("metadata serialises");
        value
    }
}

/// A listed object's text as [`Listed::new`] writes it: an empty metadata, then the spec and status as sent.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Parts<'a> {
    api_version: &'a str,
    kind: &'a str,
    metadata: NoMetadata,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a RawValue>,
}

/// `{}`.
#[derive(Serialize)]
struct NoMetadata {}

impl<K> From<K> for Listed<K>
where
    K: Metadata<Ty = ObjectMeta> + Serialize + DeserializeOwned,
{
    fn from(object: K) -> Self {
        Self::new(object)
    }
}

impl<K> PartialEq for Listed<K> {
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata && self.text.get() == other.text.get()
    }
}

/// A listed workload object, borrowed.
#[derive(Debug, Clone, Copy)]
pub enum ListedWorkload<'a> {
    Job(&'a Listed<KubeJob>),
    CronJob(&'a Listed<CronJob>),
    Deployment(&'a Listed<Deployment>),
}

impl ListedWorkload<'_> {
    /// The object, decoded.
    pub fn decode(self) -> LiveObject {
        match self {
            Self::Job(job) => LiveObject::Job(job.decode()),
            Self::CronJob(cron_job) => LiveObject::CronJob(cron_job.decode()),
            Self::Deployment(deployment) => LiveObject::Deployment(deployment.decode()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_object_decodes_to_the_object_it_was_made_from() {
        let cron_job: CronJob = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "nightly", "labels": {"a": "b"}},
            "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "job", "image": "img", "command": ["./run.sh"]}]}}}}},
        }))
        .unwrap();
        let listed = Listed::new(cron_job.clone());
        assert_eq!(listed.metadata, cron_job.metadata);
        assert_eq!(listed.decode(), cron_job);
        assert_eq!(listed.value(), serde_json::to_value(&cron_job).unwrap());
        assert_eq!(listed.value()["kind"], "CronJob");
    }

    #[test]
    fn an_object_kept_from_its_parts_as_sent_is_the_object() {
        let sent = serde_json::json!({
            "metadata": {"name": "bot", "uid": "u-1"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bot"}}, "template": {"spec": {
                "containers": [{"name": "bot", "image": "img"}]}}},
            "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]},
        });
        let expected: Deployment = serde_json::from_value(sent.clone()).unwrap();
        let part = |key: &str| serde_json::value::to_raw_value(&sent[key]).unwrap();
        let (spec, status) = (part("spec"), part("status"));
        let listed =
            Listed::<Deployment>::from_parts(expected.metadata.clone(), Some(&spec), Some(&status))
                .unwrap();
        assert_eq!(listed.decode(), expected);
        let bare = Listed::<Deployment>::from_parts(ObjectMeta::default(), None, None).unwrap();
        assert_eq!(bare.decode(), Deployment::default());
    }

    #[test]
    fn parts_that_are_not_the_kind_are_an_error_not_a_later_panic() {
        let spec =
            serde_json::value::to_raw_value(&serde_json::json!({"replicas": "many"})).unwrap();
        let error =
            Listed::<Deployment>::from_parts(ObjectMeta::default(), Some(&spec), None).unwrap_err();
        assert!(error.to_string().contains("invalid type"), "{error}");
    }
}
