//! The OpenAPI documents: kubectl reads them before `create`/`apply` with its default `--validate=strict`
//! (reference §5.2), and `kubectl explain` prints their schemas.
//!
//! Per kind, a PATCH operation tagged with the group-version-kind lists the `fieldValidation` query parameter,
//! which tells kubectl to leave validation to the server. kubectl ≥ 1.29 reads the JSON v3 documents; 1.27 and 1.28
//! read only the protobuf v2 document, encoded here by hand. The v3 group-version documents carry Kubernetes 1.33's
//! schemas of the built-in kinds ([`super::openapi_schemas`]) and each custom type's schema; they are named by the
//! hash of their content in the `/openapi/v3` index and cached by clients as the API server lets them be.
//!
//! The documents deliberately do not advertise strategic merge patch, so kubectl computes patches from its
//! compiled-in types rather than from these documents, and falls back to merge patches for custom resources, as
//! it does on a real cluster.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::openapi_schemas;
use crate::registry::api_error::ApiError;
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

/// `GET /openapi/v3`: each group-version's document, named by the hash of its content.
pub(crate) fn v3_root(types: &[&'static ResourceType]) -> Value {
    let mut paths = Map::new();
    for (group, version) in resources::group_versions(types) {
        let path = group_path(group, version);
        if let Some(document) = v3_document(types, &path) {
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": server_relative_url(&path, &document.hash)}),
            );
        }
    }
    json!({"paths": paths})
}

fn server_relative_url(path: &str, hash: &str) -> String {
    format!("/openapi/v3/{path}?hash={hash}")
}

/// A group-version document as served: its JSON, and the hash that names this content (the API server's: SHA-512
/// in upper-case hex), which is also its entity tag.
struct V3Document {
    body: Bytes,
    hash: String,
}

/// The document at `path`, built once per set of served types: the built-in schemas make it a few hundred KB,
/// and kubectl asks for the index (which names every document by its hash) before every `apply`.
fn v3_document(types: &[&'static ResourceType], path: &str) -> Option<Arc<V3Document>> {
    type Cache = Mutex<HashMap<String, (Vec<usize>, Arc<V3Document>)>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    // Types are never freed and a changed custom type is a new one, so their addresses identify the content.
    let key: Vec<usize> = types
        .iter()
        .filter(|resource| group_path(resource.group, resource.version) == path)
        .map(|resource| std::ptr::from_ref::<ResourceType>(resource) as usize)
        .collect();
    let cache = CACHE.get_or_init(Cache::default);
    let cached = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(path)
        .filter(|(cached_key, _)| *cached_key == key)
        .map(|(_, document)| Arc::clone(document));
    if cached.is_some() {
        return cached;
    }
    let body = Bytes::from(v3_group(types, path)?.to_string());
    let digest = ring::digest::digest(&ring::digest::SHA512, &body);
    let hash = digest
        .as_ref()
        .iter()
        .fold(String::with_capacity(128), |mut text, byte| {
            // Writing to a String cannot fail.
            let _ = write!(text, "{byte:02X}");
            text
        });
    let document = Arc::new(V3Document { body, hash });
    cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(path.to_owned(), (key, Arc::clone(&document)));
    Some(document)
}

/// `GET /openapi/v3/{path}[?hash=H]` with the API server's caching: the entity tag is the hash (a matching
/// `If-None-Match` gets 304); asked by a hash, the document is immutable and cacheable for a year, and a stale hash
/// is redirected (301) to the current one.
pub(crate) fn serve_v3_group(
    types: &[&'static ResourceType],
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let Some(document) = v3_document(types, path) else {
        return ApiError::path_not_found().into_response();
    };
    let hash_asked = query.and_then(|query| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(name, _)| name == "hash")
            .map(|(_, value)| value.into_owned())
    });
    if let Some(asked) = &hash_asked
        && *asked != document.hash
    {
        let mut response = StatusCode::MOVED_PERMANENTLY.into_response();
        if let Ok(location) = HeaderValue::from_str(&server_relative_url(path, &document.hash)) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return response;
    }
    let etag = format!("\"{}\"", document.hash);
    let not_modified = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| tag.trim() == etag || tag.trim() == "*");
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        document.body.clone().into_response()
    };
    let response_headers = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        response_headers.insert(header::ETAG, etag);
    }
    if !not_modified {
        response_headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    if hash_asked.is_some() {
        // The body differs by Accept (JSON or protobuf) on a real server, so caches must key on it.
        response_headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        response_headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
        if let Some(expires) = a_year_from_now() {
            response_headers.insert(header::EXPIRES, expires);
        }
    }
    response
}

/// The `Expires` value the API server sets on hashed documents: a year from now, the most HTTP allows.
fn a_year_from_now() -> Option<HeaderValue> {
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    let then = now.checked_add(jiff::Span::new().years(1)).ok()?;
    HeaderValue::from_str(&then.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()).ok()
}

/// `GET /openapi/v3/{api/v1 | apis/group/version}`.
pub(crate) fn v3_group(types: &[&'static ResourceType], path: &str) -> Option<Value> {
    let (group, version) = resources::group_versions(types)
        .into_iter()
        .find(|(g, v)| group_path(g, v) == path)?;
    let in_group_version = || {
        types
            .iter()
            .filter(move |r| r.group == group && r.version == version)
    };
    let built_in_kinds = in_group_version()
        .filter(|r| r.custom.is_none())
        .map(|r| (r.group, r.version, r.kind));
    // A `/scale` subresource's path names autoscaling/v1 Scale, so the API server includes its schema too.
    let scale = in_group_version()
        .any(|r| r.has_scale)
        .then_some(("autoscaling", "v1", "Scale"));
    let mut schemas = openapi_schemas::for_kinds(built_in_kinds.chain(scale));
    let mut paths = Map::new();
    for resource in in_group_version() {
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
        let url = root["paths"]["apis/batch/v1"]["serverRelativeURL"]
            .as_str()
            .expect("a URL");
        let hash = url
            .strip_prefix("/openapi/v3/apis/batch/v1?hash=")
            .expect("hashed");
        assert_eq!(hash.len(), 128, "SHA-512 in hex: {hash}");
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
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
    fn group_documents_are_named_by_hash_and_cacheable_as_the_api_server_makes_them() {
        let types: Vec<&'static ResourceType> = resources::RESOURCES.iter().collect();
        let url = v3_root(&types)["paths"]["apis/batch/v1"]["serverRelativeURL"]
            .as_str()
            .expect("a URL")
            .to_owned();
        let (_, query) = url.split_once('?').expect("a query");
        let hash = query.strip_prefix("hash=").expect("a hash");
        let none = HeaderMap::new();

        let hashed = serve_v3_group(&types, "apis/batch/v1", Some(query), &none);
        assert_eq!(hashed.status(), StatusCode::OK);
        let headers = hashed.headers();
        assert_eq!(headers[header::ETAG], format!("\"{hash}\"").as_str());
        assert_eq!(headers[header::CACHE_CONTROL], "public, immutable");
        assert_eq!(headers[header::VARY], "Accept");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        let expires = headers[header::EXPIRES].to_str().expect("ASCII");
        let next_year = (jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .year()
            + 1)
        .to_string();
        assert!(
            expires.ends_with(" GMT") && expires.contains(&next_year),
            "{expires}"
        );

        let unhashed = serve_v3_group(&types, "apis/batch/v1", None, &none);
        assert_eq!(unhashed.status(), StatusCode::OK);
        assert!(unhashed.headers().get(header::CACHE_CONTROL).is_none());

        let stale = serve_v3_group(&types, "apis/batch/v1", Some("hash=0123"), &none);
        assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(stale.headers()[header::LOCATION], url.as_str());

        let mut revalidating = HeaderMap::new();
        revalidating.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&format!("\"{hash}\"")).expect("ASCII"),
        );
        let unchanged = serve_v3_group(&types, "apis/batch/v1", None, &revalidating);
        assert_eq!(unchanged.status(), StatusCode::NOT_MODIFIED);

        let other = serve_v3_group(&types, "apis/nope/v1", Some(query), &none);
        assert_eq!(other.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn group_documents_hold_the_schemas_of_their_kinds_only() {
        let types: Vec<&'static ResourceType> = resources::RESOURCES.iter().collect();
        let apps = v3_group(&types, "apis/apps/v1").expect("served");
        let schemas = apps["components"]["schemas"].as_object().expect("schemas");
        assert!(schemas.contains_key("io.k8s.api.apps.v1.Deployment"));
        assert!(
            schemas.contains_key("io.k8s.api.core.v1.PodSpec"),
            "referenced"
        );
        assert!(
            schemas.contains_key("io.k8s.api.autoscaling.v1.Scale"),
            "deployments/scale"
        );
        assert!(!schemas.contains_key("io.k8s.api.batch.v1.Job"));
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
