//! Structural schemas of custom resources: the `openAPIV3Schema` of a `CustomResourceDefinition` version compiled
//! into a node tree, and the three things the apiextensions-apiserver of Kubernetes 1.33 does with it to every
//! custom resource written — apply `default`s, prune the fields the schema does not specify, and validate what
//! is left. Pure functions of JSON values: the custom-resource registry decides what to do with the pruned paths
//! (warnings or Strict errors) and the field errors (422 Invalid).
//!
//! Knowingly not enforced: `pattern` (the crate has no regular-expression engine), `x-kubernetes-validations`
//! (CEL) and the string formats other than `date-time`, `date` and `byte`.

mod compile;
mod prune;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::registry::api_error::FieldError;

/// A compiled structural schema.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    root: Node,
}

impl Schema {
    /// Checks that an openAPIV3Schema is structural and supported; errors carry paths relative to the schema
    /// root (e.g. `properties[spec].type`); the caller prefixes them with `spec.versions[i].schema.openAPIV3Schema`.
    pub(crate) fn compile(open_api_v3_schema: &Value) -> Result<Schema, Vec<FieldError>> {
        compile::compile(open_api_v3_schema).map(|root| Schema { root })
    }

    /// Applies `default`s, then drops the fields the schema does not specify, returning their dotted paths
    /// (sorted). `apiVersion`, `kind` and `metadata` of the resource (and of embedded resources) are kept whole:
    /// metadata is the caller's to prune.
    pub(crate) fn default_and_prune(&self, object: &mut Value) -> Vec<String> {
        prune::default(object, &self.root);
        prune::prune(object, &self.root, true)
    }

    /// Validates a defaulted and pruned object, with the field paths and messages of a 1.33 API server.
    pub(crate) fn validate(&self, object: &Value) -> Vec<FieldError> {
        validate::validate(object, &self.root, "")
    }
}

/// The JSON types a schema can require.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl JsonType {
    fn parse(name: &str) -> Option<JsonType> {
        Some(match name {
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            "string" => JsonType::String,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "boolean" => JsonType::Boolean,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
        }
    }
}

/// A `minimum` or `maximum`.
#[derive(Debug, Clone, Copy)]
struct Bound {
    limit: f64,
    exclusive: bool,
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Default, PartialEq)]
enum ListType {
    #[default]
    Atomic,
    Set,
    /// The item properties that identify an entry.
    Map(Vec<String>),
}

/// The `x-kubernetes-*` flags that change how a node is pruned and typed.
#[derive(Debug, Clone, Copy, Default)]
struct Extensions {
    preserve_unknown: bool,
    int_or_string: bool,
    embedded: bool,
}

/// One schema node. Structural nodes carry the shape (type, properties, items, extensions); the nodes of
/// `anyOf`/`allOf`/`oneOf`/`not` carry value validations only, which compilation guarantees.
#[derive(Debug, Clone, Default)]
struct Node {
    kind: Option<JsonType>,
    format: Option<String>,
    nullable: bool,
    ext: Extensions,
    default: Option<Value>,
    properties: BTreeMap<String, Node>,
    additional: Option<Box<Node>>,
    /// `additionalProperties: true`: any key, with nothing below it specified.
    additional_any: bool,
    items: Option<Box<Node>>,
    list: ListType,
    required: Vec<String>,
    enumeration: Option<Vec<Value>>,
    minimum: Option<Bound>,
    maximum: Option<Bound>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    any_of: Vec<Node>,
    all_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Box<Node>>,
}

/// The fields of a resource that are never pruned: the type and the object metadata.
const RESOURCE_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// `parent.name` for object paths, with the root as the empty path.
fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

/// `parent[i]` for array paths.
fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}
