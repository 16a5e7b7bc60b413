//! The minimal OpenAPI documents kubectl needs before `create`/`apply` with its default `--validate=strict`
//! (reference §5.2): per kind, a PATCH operation tagged with the group-version-kind that lists the
//! `fieldValidation` query parameter, which tells kubectl to leave validation to the server. kubectl ≥ 1.29 reads
//! the JSON v3 documents; 1.27 and 1.28 read only the protobuf v2 document, encoded here by hand.
//!
//! The documents deliberately do not advertise strategic merge patch, so kubectl computes patches from its
//! compiled-in types rather than from these schema-less documents, and falls back to merge patches for custom
//! resources, as it does on a real cluster. A custom type with a schema also gets its schema as a component,
//! which is what `kubectl explain` reads.

use serde_json::{Map, Value, json};

use crate::registry::resources::{self, ResourceType};

fn group_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn item_path(resource: &ResourceType) -> String {
    let namespace = if resource.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    format!(
        "{}{namespace}/{}/{{name}}",
        resource.group_version_path(),
        resource.plural
    )
}

fn collection_path(resource: &ResourceType) -> String {
    let namespace = if resource.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    format!(
        "{}{namespace}/{}",
        resource.group_version_path(),
        resource.plural
    )
}

const HASH: &str = "local";

/// `GET /openapi/v3`.
pub(crate) fn v3_root(types: &[&'static ResourceType]) -> Value {
    let mut paths = Map::new();
    for (group, version) in resources::group_versions(types) {
        let path = group_path(group, version);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={HASH}")}),
        );
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/{api/v1 | apis/group/version}`.
pub(crate) fn v3_group(types: &[&'static ResourceType], path: &str) -> Option<Value> {
    let (group, version) = resources::group_versions(types)
        .into_iter()
        .find(|(g, v)| group_path(g, v) == path)?;
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for resource in types
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        if let Some(schema) = resource.custom.and_then(|c| c.schema_source.as_ref()) {
            let (name, schema) = component(resource, schema);
            schemas.insert(name, schema);
        }
        let gvk =
            json!({"group": resource.group, "version": resource.version, "kind": resource.kind});
        let parameters = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "force", "in": "query", "schema": {"type": "boolean"}},
        ]);
        let patch_operation = json!({
            "operationId": format!("patch{}", resource.kind),
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
            "parameters": parameters,
            "requestBody": {"content": {
                "application/json-patch+json": {"schema": {"type": "object"}},
                "application/merge-patch+json": {"schema": {"type": "object"}},
                "application/apply-patch+yaml": {"schema": {"type": "object"}},
            }},
            "responses": {"200": {"description": "OK"}, "201": {"description": "Created"}},
        });
        let create_operation = json!({
            "operationId": format!("create{}", resource.kind),
            "x-kubernetes-action": "post",
            "x-kubernetes-group-version-kind": gvk,
            "parameters": parameters,
            "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
            "responses": {"201": {"description": "Created"}},
        });
        paths.insert(item_path(resource), json!({"patch": patch_operation}));
        paths.insert(collection_path(resource), json!({"post": create_operation}));
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// A custom type's schema as an OpenAPI component, named and tagged the way the API server names CRD schemas.
fn component(resource: &ResourceType, schema: &Value) -> (String, Value) {
    let mut reversed: Vec<&str> = resource.group.split('.').collect();
    reversed.reverse();
    let name = format!(
        "{}.{}.{}",
        reversed.join("."),
        resource.version,
        resource.kind
    );
    let mut schema = schema.clone();
    if let Some(map) = schema.as_object_mut() {
        map.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": resource.group, "version": resource.version, "kind": resource.kind}]),
        );
        let properties = map.entry("properties").or_insert_with(|| json!({}));
        if let Some(properties) = properties.as_object_mut() {
            properties
                .entry("apiVersion")
                .or_insert_with(|| json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
            properties
                .entry("kind")
                .or_insert_with(|| json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
            properties
                .entry("metadata")
                .or_insert_with(|| json!({"type": "object"}));
        }
    }
    (name, schema)
}

/// Appends a length-delimited protobuf field.
fn field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    varint(out, u64::from(number << 3 | 2));
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn message(build: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    build(&mut out);
    out
}

/// `GET /openapi/v2` as the gnostic `openapi_v2.Document` protobuf (field numbers from `OpenAPIv2.proto`).
pub(crate) fn v2_protobuf(types: &[&'static ResourceType]) -> Vec<u8> {
    message(|doc| {
        field(doc, 1, b"2.0");
        field(
            doc,
            2,
            &message(|info| {
                field(info, 1, b"Kubernetes");
                field(info, 2, b"v1.33.0");
            }),
        );
        field(
            doc,
            8,
            &message(|paths| {
                for resource in types {
                    let gvk = format!(
                        "group: \"{}\"\nkind: {}\nversion: {}\n",
                        resource.group, resource.kind, resource.version
                    );
                    let query_parameter = message(|q| {
                        field(q, 2, b"query");
                        field(q, 4, b"fieldValidation");
                        field(q, 6, b"string");
                    });
                    let operation = message(|op| {
                        // parameters → ParametersItem{parameter: Parameter{non_body_parameter: NonBodyParameter{query_parameter_sub_schema}}}
                        let non_body = message(|nb| field(nb, 3, &query_parameter));
                        let parameter = message(|p| field(p, 2, &non_body));
                        field(op, 8, &message(|item| field(item, 1, &parameter)));
                        field(
                            op,
                            13,
                            &message(|named| {
                                field(named, 1, b"x-kubernetes-group-version-kind");
                                field(named, 2, &message(|any| field(any, 2, gvk.as_bytes())));
                            }),
                        );
                    });
                    let path_item = message(|item| field(item, 8, &operation));
                    field(
                        paths,
                        2,
                        &message(|named| {
                            field(named, 1, item_path(resource).as_bytes());
                            field(named, 2, &path_item);
                        }),
                    );
                }
            }),
        );
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_documents_declare_field_validation_per_kind() {
        let types: Vec<&'static ResourceType> = resources::RESOURCES.iter().collect();
        let root = v3_root(&types);
        assert_eq!(
            root["paths"]["apis/batch/v1"]["serverRelativeURL"],
            "/openapi/v3/apis/batch/v1?hash=local"
        );
        let batch = v3_group(&types, "apis/batch/v1").expect("served");
        let patch = &batch["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Job");
        assert!(
            patch["parameters"]
                .as_array()
                .expect("list")
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(v3_group(&types, "apis/nope/v1").is_none());
    }

    #[test]
    fn protobuf_encoding_uses_length_delimited_fields() {
        let mut out = Vec::new();
        field(&mut out, 1, b"2.0");
        assert_eq!(out, [0x0a, 3, b'2', b'.', b'0']);
        let mut long = Vec::new();
        varint(&mut long, 300);
        assert_eq!(long, [0xac, 0x02]);
        let types: Vec<&'static ResourceType> = resources::RESOURCES.iter().collect();
        let doc = v2_protobuf(&types);
        assert!(doc.windows(15).any(|w| w == b"fieldValidation"));
    }
}
