//! The handler for every resource URL: dispatches (method, name, subresource) to the registry operations and
//! shapes responses (status codes, Table conversion, `Warning` headers, the delete response rules).

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::ClusterState;
use super::negotiate::Representation;
use super::path::{self, Target};
use super::query::Query;
use super::{scale, watch};
use crate::api::protobuf::{self, ProtobufError};
use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::delete::{self, DeleteOptions, Deleted};
use crate::registry::meta;
use crate::registry::ops::{self, Part, WriteOptions, Written};
use crate::registry::patch::PatchType;
use crate::registry::resources::ResourceType;

/// The largest request body the API server reads (its `MaxRequestBodyBytes`, 3 MiB).
pub(crate) const MAX_BODY: usize = 3 << 20;

/// Entry point for all resource paths (the router's fallback). A write is answered only once it is durable.
pub(crate) async fn handle(
    State(state): State<ClusterState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let target = state
        .store
        .read(|s| path::parse(uri.path(), |g, v, p| s.find(g, v, p)));
    let Some(target) = target else {
        return ApiError::path_not_found().into_response();
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::request_entity_too_large(MAX_BODY).into_response();
        }
        Err(rejection) => return ApiError::bad_request(rejection.body_text()).into_response(),
    };
    let query = Query::parse(uri.query());
    if super::log::addressed(&target) {
        return super::log::serve(&state, &method, &target, &query)
            .unwrap_or_else(IntoResponse::into_response);
    }
    let response = dispatch(&state, &method, &target, &query, &headers, &body)
        .unwrap_or_else(IntoResponse::into_response);
    if matches!(
        method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) && let Err(error) = state.store.durable().await
    {
        return error.into_response();
    }
    response
}

fn dispatch(
    state: &ClusterState,
    method: &Method,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let resource = target.resource;
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    check_acceptable(accept)?;
    let representation = Representation::negotiate(accept, query.get("includeObject"))?;
    let namespace = target.namespace.as_deref().unwrap_or_default();
    let part = match target.subresource.as_deref() {
        None => Part::Main,
        Some("status") if resource.has_status => Part::Status,
        Some("scale") if resource.has_scale => {
            return scale::serve(state, method, target, query, headers, body);
        }
        Some(subresource) => return Err(unserved_subresource(target, subresource)),
    };
    match (method, &target.name) {
        (&Method::GET, None) if part == Part::Main => {
            if query.flag("watch") {
                return watch::serve(
                    state,
                    resource,
                    target.namespace.clone(),
                    query,
                    representation,
                );
            }
            list(
                state,
                resource,
                target.namespace.as_deref(),
                query,
                representation,
            )
        }
        (&Method::GET, Some(name)) => {
            get_one(state, resource, namespace, name, query, representation)
        }
        (&Method::POST, None) if part == Part::Main => {
            let body = parse_body(headers, body)?;
            let written = ops::create(
                &state.store,
                resource,
                target.namespace.as_deref(),
                body,
                &write_options(query, headers)?,
            )?;
            Ok(written_response(resource, written))
        }
        (&Method::PUT, Some(name)) => {
            let body = parse_body(headers, body)?;
            let written = ops::replace(
                &state.store,
                resource,
                namespace,
                name,
                body,
                part,
                &write_options(query, headers)?,
            )?;
            Ok(written_response(resource, written))
        }
        (&Method::PATCH, Some(name)) => {
            let patch_type = patch_type(headers)?;
            let written = ops::patch(
                &state.store,
                resource,
                namespace,
                name,
                patch_type,
                body,
                part,
                &write_options(query, headers)?,
            )?;
            Ok(written_response(resource, written))
        }
        (&Method::DELETE, Some(name)) if part == Part::Main => {
            let options = DeleteOptions::parse(body, &query.0)?;
            let deleted = delete::delete(&state.store, resource, namespace, name, &options)?;
            Ok(delete_response(resource, deleted, &options))
        }
        (&Method::DELETE, None) if part == Part::Main && resource.namespaced => {
            let options = DeleteOptions::parse(body, &query.0)?;
            let filter = query.filter(resource)?;
            let list = delete::delete_collection(
                &state.store,
                resource,
                target.namespace.as_deref(),
                &filter,
                &options,
            )?;
            Ok(ok(&list, &[]))
        }
        _ => Err(ApiError::method_not_allowed(
            &method.as_str().to_lowercase(),
            resource,
        )),
    }
}

/// The write options of a request: its query, and its `User-Agent`, which names the field manager when the
/// query does not.
pub(crate) fn write_options(query: &Query, headers: &HeaderMap) -> Result<WriteOptions, ApiError> {
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    Ok(WriteOptions {
        user_agent: Some(user_agent.to_owned()),
        ..query.write_options()?
    })
}

/// A subresource that is not served: the pods' streaming ones say so, others are not found.
fn unserved_subresource(target: &Target, subresource: &str) -> ApiError {
    let name = target.name.as_deref().unwrap_or_default();
    target
        .resource
        .builtin("pods")
        .then(|| super::streams::unsupported(subresource, name))
        .flatten()
        .unwrap_or_else(ApiError::path_not_found)
}

fn get_one(
    state: &ClusterState,
    resource: &'static ResourceType,
    namespace: &str,
    name: &str,
    query: &Query,
    representation: Representation,
) -> Result<Response, ApiError> {
    // A version newer than the store's cannot be served (a real server waits a moment first).
    if let Some(requested) = query
        .get("resourceVersion")
        .and_then(|rv| rv.parse::<u64>().ok())
    {
        let current = state.store.resource_version();
        if requested > current {
            return Err(ApiError::too_large_resource_version(requested, current));
        }
    }
    let object = ops::get(&state.store, resource, namespace, name)?;
    Ok(ok(
        &representation.single(resource, &object, state.store.clock().now()),
        &[],
    ))
}

fn check_acceptable(accept: &str) -> Result<(), ApiError> {
    if accept.is_empty()
        || accept.contains("json")
        || accept.contains("*/*")
        || accept.contains("application/*")
    {
        return Ok(());
    }
    Err(ApiError {
        code: 406,
        reason: "NotAcceptable",
        message: "only the following media types are accepted: application/json, application/yaml"
            .into(),
        details: serde_json::Map::new(),
    })
}

fn list(
    state: &ClusterState,
    resource: &'static ResourceType,
    namespace: Option<&str>,
    query: &Query,
    representation: Representation,
) -> Result<Response, ApiError> {
    let filter = query.filter(resource)?;
    let rv = query.get("resourceVersion").filter(|v| !v.is_empty());
    let rv_match = query.get("resourceVersionMatch").filter(|v| !v.is_empty());
    let mut errors = Vec::new();
    match (rv, rv_match) {
        (None, Some(_)) => errors.push(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        )),
        (Some("0"), Some("Exact")) => errors.push(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )),
        (_, Some(m)) if m != "Exact" && m != "NotOlderThan" => {
            errors.push(FieldError::not_supported(
                "resourceVersionMatch",
                &json!(m),
                &["Exact", "NotOlderThan", ""],
            ));
        }
        _ => {}
    }
    if query.get("sendInitialEvents").is_some() {
        errors.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_options("ListOptions", &errors));
    }
    let limit = match query.get("limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(text) => Some(
            text.parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {text}")))?,
        ),
    };
    if let Some(token) = query.get("continue").filter(|c| !c.is_empty()) {
        let page = state.pages.next(token, limit)?;
        return Ok(ok(
            &representation.list(resource, page, state.store.clock().now()),
            &[],
        ));
    }
    let current = state.store.resource_version();
    if let Some(requested) = rv.filter(|v| *v != "0") {
        let requested: u64 = requested.parse().map_err(|_| {
            ApiError::invalid_options(
                "ListOptions",
                &[FieldError::invalid(
                    "resourceVersion",
                    &json!(requested),
                    "must be a number",
                )],
            )
        })?;
        if requested > current {
            return Err(ApiError::too_large_resource_version(requested, current));
        }
        if rv_match == Some("Exact") && requested != current {
            return Err(ApiError::expired(format!(
                "too old resource version: {requested} ({current})"
            )));
        }
    }
    if limit.is_none_or(|limit| limit == 0)
        && representation == Representation::Object
        && resource.view.is_none()
        && !resource.is_custom()
    {
        // Sent as stored: no page to keep and no conversion, so the objects need not be parsed.
        return Ok(respond_json(
            StatusCode::OK,
            ops::list_json(&state.store, resource, namespace, &filter),
            &[],
        ));
    }
    let list = state
        .pages
        .first(ops::list(&state.store, resource, namespace, &filter), limit);
    Ok(ok(
        &representation.list(resource, list, state.store.clock().now()),
        &[],
    ))
}

pub(super) fn parse_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = content_type.split(';').next().unwrap_or_default().trim();
    match media {
        "application/json" | "" => serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        }),
        "application/yaml" => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the body is not UTF-8"))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))
        }
        protobuf::MEDIA_TYPE => protobuf::decode(body).map_err(|e| match e {
            ProtobufError::Unsupported(why) => ApiError {
                code: 415,
                reason: "UnsupportedMediaType",
                message: why,
                details: serde_json::Map::new(),
            },
            ProtobufError::Malformed(why) => {
                ApiError::bad_request(format!("error decoding protobuf: {why}"))
            }
        }),
        _ => Err(ApiError::unsupported_media_type(&[
            "application/json",
            "application/yaml",
        ])),
    }
}

pub(super) fn patch_type(headers: &HeaderMap) -> Result<PatchType, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    PatchType::from_content_type(content_type)
        .ok_or_else(|| ApiError::unsupported_media_type(&PatchType::ACCEPTED))
}

pub(super) fn ok(body: &Value, warnings: &[String]) -> Response {
    respond(StatusCode::OK, body, warnings)
}

fn respond(code: StatusCode, body: &Value, warnings: &[String]) -> Response {
    respond_json(code, body.to_string(), warnings)
}

fn respond_json(code: StatusCode, body: String, warnings: &[String]) -> Response {
    let mut response = (code, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for warning in warnings {
        let text = format!(
            "299 - \"{}\"",
            warning.replace('\\', "\\\\").replace('"', "\\\"")
        );
        if let Ok(value) = HeaderValue::from_str(&text) {
            headers.append(header::WARNING, value);
        }
    }
    response
}

fn written_response(resource: &ResourceType, written: Written) -> Response {
    let code = if written.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    respond(code, &resource.present(written.object), &written.warnings)
}

fn delete_response(resource: &ResourceType, deleted: Deleted, options: &DeleteOptions) -> Response {
    match deleted {
        Deleted::Gone(object) if !resource.returns_deleted_object() => {
            let mut details = json!({"name": meta::name(&object), "kind": resource.plural, "uid": meta::uid(&object)});
            if !resource.group.is_empty() {
                details["group"] = json!(resource.group);
            }
            ok(
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
                &[],
            )
        }
        Deleted::Pending(object) if options.accepted_status => {
            respond(StatusCode::ACCEPTED, &resource.present(object), &[])
        }
        Deleted::Gone(object) | Deleted::Pending(object) => ok(&resource.present(object), &[]),
    }
}
