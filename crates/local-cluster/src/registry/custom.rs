//! Custom resources: the types custom resource definitions define, and what their writes go through instead of the
//! typed round trip of the built-in types — plain JSON, the version's structural schema (defaulting, pruning of
//! unknown fields, validation; `registry::structural`, used here only), generation tracking of everything but
//! metadata (and status, with a status subresource), and the storage version.
//!
//! Each distinct version of a definition becomes one `&'static ResourceType`, interned process-wide
//! ([`intern`]): the API machinery passes `&'static ResourceType` everywhere, and interning lets re-creating the
//! same definition (a restart, a test re-running) reuse the entry instead of leaking another. What leaks is one
//! small entry per distinct definition version a process ever serves, which stays small: definitions change by
//! hand, rarely. Which types a cluster serves right now is per store ([`Types`], kept by `registry::crd`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::registry::api_error::FieldError;
use crate::registry::resources::{Propagation, ResourceType};
use crate::registry::structural::Schema;

/// What a custom resource definition says about one of its versions beyond the fields of [`ResourceType`].
#[derive(Debug)]
pub(crate) struct Custom {
    /// The name of the definition (`<plural>.<group>`).
    pub(crate) definition: &'static str,
    /// `spec.names.listKind`.
    pub(crate) list_kind: &'static str,
    /// Whether the version is served (a storage version need not be).
    pub(crate) served: bool,
    /// The version objects are stored in; the others convert with strategy None.
    pub(crate) storage_version: &'static str,
    /// The compiled `openAPIV3Schema`, if the version has one that compiles.
    schema: Option<Schema>,
    /// The source of the schema, for OpenAPI documents.
    pub(crate) schema_source: Option<Value>,
    /// `additionalPrinterColumns`, for tables.
    pub(crate) columns: Vec<PrinterColumn>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PrinterColumn {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) format: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) priority: u8,
    pub(crate) json_path: String,
}

/// One served (or stored) version of a definition, as `registry::crd` derives it from the definition; the
/// interner's key.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Description {
    pub(crate) definition: String,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) kind: String,
    pub(crate) list_kind: String,
    pub(crate) namespaced: bool,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) served: bool,
    pub(crate) storage_version: String,
    pub(crate) status: bool,
    pub(crate) schema: Option<Value>,
    pub(crate) columns: Vec<PrinterColumn>,
}

fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

fn leak_all(texts: Vec<String>) -> &'static [&'static str] {
    Box::leak(
        texts
            .into_iter()
            .map(leak)
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    )
}

/// The type of one version of a definition: the same entry for the same description, for the whole process.
pub(crate) fn intern(version: Description) -> &'static ResourceType {
    static INTERNED: OnceLock<Mutex<HashMap<String, &'static ResourceType>>> = OnceLock::new();
    // Serialising plain strings, booleans and JSON values cannot fail; an empty key would only share an entry
    // between descriptions that all failed, which cannot happen.
    let key = serde_json::to_string(&version).unwrap_or_default();
    // A panic while holding the lock cannot leave a half-inserted entry, so a poisoned lock is consistent.
    let mut interned = INTERNED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(resource) = interned.get(&key) {
        return resource;
    }
    let schema = version
        .schema
        .as_ref()
        .and_then(|source| Schema::compile(source).ok());
    let custom: &'static Custom = Box::leak(Box::new(Custom {
        definition: leak(version.definition),
        list_kind: leak(version.list_kind),
        served: version.served,
        storage_version: leak(version.storage_version),
        schema,
        schema_source: version.schema,
        columns: version.columns,
    }));
    let resource: &'static ResourceType = Box::leak(Box::new(ResourceType {
        group: leak(version.group),
        version: leak(version.version),
        plural: leak(version.plural),
        singular: leak(version.singular),
        kind: leak(version.kind),
        namespaced: version.namespaced,
        short_names: leak_all(version.short_names),
        categories: leak_all(version.categories),
        has_status: version.status,
        has_scale: false,
        tracks_generation: true,
        default_propagation: Propagation::Background,
        roundtrip: crate::registry::decode::untyped,
        view: None,
        custom: Some(custom),
    }));
    interned.insert(key, resource);
    resource
}

/// Checks a version's `openAPIV3Schema` as the definition's validation does; paths are relative to the schema.
pub(crate) fn check_schema(source: &Value) -> Vec<FieldError> {
    Schema::compile(source).err().unwrap_or_default()
}

/// Decodes a custom resource's body: applies the schema's defaults and drops the fields it does not know,
/// returning them (for `fieldValidation`).
pub(crate) fn decode(custom: &Custom, object: &mut Value) -> Vec<String> {
    custom
        .schema
        .as_ref()
        .map(|schema| schema.default_and_prune(object))
        .unwrap_or_default()
}

/// The schema's verdict on a custom resource about to be stored.
pub(crate) fn validate(resource: &ResourceType, object: &Value) -> Vec<FieldError> {
    resource
        .custom
        .and_then(|custom| custom.schema.as_ref())
        .map(|schema| schema.validate(object))
        .unwrap_or_default()
}

/// Whether an update changes what `metadata.generation` counts: everything but metadata and, for a type with
/// a status subresource, status.
pub(crate) fn changes_generation(resource: &ResourceType, old: &Value, new: &Value) -> bool {
    let counted = |object: &Value| {
        let mut object = object.clone();
        if let Some(map) = object.as_object_mut() {
            for field in ["metadata", "apiVersion", "kind"] {
                map.remove(field);
            }
            if resource.has_status {
                map.remove("status");
            }
        }
        object
    };
    counted(old) != counted(new)
}

/// The object in its storage version: with conversion strategy None only `apiVersion` changes.
pub(crate) fn to_storage(resource: &ResourceType, object: &mut Value) {
    if let Some(custom) = resource.custom
        && custom.storage_version != resource.version
        && let Some(map) = object.as_object_mut()
    {
        map.insert(
            "apiVersion".into(),
            Value::from(format!("{}/{}", resource.group, custom.storage_version)),
        );
    }
}

/// The custom types one store serves: every version of every established definition.
#[derive(Debug, Default)]
pub(crate) struct Types {
    versions: Vec<&'static ResourceType>,
}

impl Types {
    /// Replaces the served types.
    pub(crate) fn set(&mut self, versions: Vec<&'static ResourceType>) {
        self.versions = versions;
    }

    /// Every version, served or only stored.
    pub(crate) fn all(&self) -> impl Iterator<Item = &'static ResourceType> + '_ {
        self.versions.iter().copied()
    }

    /// The served versions.
    pub(crate) fn served(&self) -> impl Iterator<Item = &'static ResourceType> + '_ {
        self.all().filter(|r| r.custom.is_some_and(|c| c.served))
    }

    /// The served version at `group`/`version`/`plural`.
    pub(crate) fn find(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&'static ResourceType> {
        self.served()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// The version an object names in `apiVersion` and `kind`, served or not.
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<&'static ResourceType> {
        self.all()
            .find(|r| r.kind == kind && r.api_version() == api_version)
    }

    /// The storage version of `group` and `plural`.
    pub(crate) fn storage(&self, group: &str, plural: &str) -> Option<&'static ResourceType> {
        self.all().find(|r| {
            r.group == group
                && r.plural == plural
                && r.custom.is_some_and(|c| c.storage_version == r.version)
        })
    }

    /// The storage version of each definition.
    pub(crate) fn stored(&self) -> impl Iterator<Item = &'static ResourceType> + '_ {
        self.all()
            .filter(|r| r.custom.is_some_and(|c| c.storage_version == r.version))
    }
}
