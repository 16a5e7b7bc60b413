//! The self-reviews: `SelfSubjectAccessReview` (`kubectl auth can-i`) and `SelfSubjectRulesReview` (`kubectl
//! auth can-i --list`), answered by the same policy that authorizes requests, and `SelfSubjectReview` (`kubectl auth whoami`), which tells the caller who the server
//! thinks it is. kubectl's typed clients send protobuf bodies, decoded as every other body is. Answers are JSON, which
//! every client accepts.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::policy;
use super::request_info::{RequestInfo, ResourceAttributes};
use super::{ClusterState, json};
use crate::auth::Identity;
use crate::registry::api_error::ApiError;
use crate::registry::resources::RESOURCES;

fn text(attributes: &Value, key: &str) -> String {
    attributes
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn non_empty(attributes: &Value, key: &str) -> Option<String> {
    Some(text(attributes, key)).filter(|value| !value.is_empty())
}

/// The request a review asks about, in the form the policy reads.
fn reviewed_request(spec: &Value) -> Result<RequestInfo, ApiError> {
    if let Some(attributes) = spec.get("resourceAttributes") {
        let group = text(attributes, "group");
        let resource = text(attributes, "resource");
        let name = non_empty(attributes, "name");
        // kubectl sends its context's namespace even for cluster-scoped kinds; a real request for them never
        // carries one (a namespace object is scoped to itself), so neither does the question.
        let cluster_scoped = RESOURCES
            .iter()
            .any(|r| r.group == group && r.plural == resource && !r.namespaced);
        let namespace = if group.is_empty() && resource == "namespaces" {
            name.clone()
        } else {
            non_empty(attributes, "namespace").filter(|_| !cluster_scoped)
        };
        let resource = ResourceAttributes {
            namespace,
            group,
            resource,
            subresource: non_empty(attributes, "subresource"),
            name,
        };
        return Ok(RequestInfo {
            verb: text(attributes, "verb"),
            resource: Some(resource),
            path: String::new(),
        });
    }
    if let Some(attributes) = spec.get("nonResourceAttributes") {
        return Ok(RequestInfo {
            verb: text(attributes, "verb"),
            resource: None,
            path: text(attributes, "path"),
        });
    }
    Err(ApiError::bad_request(
        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
    ))
}

/// The `spec` of a posted review (`{}` when it has none).
fn review_spec(headers: &HeaderMap, body: &Bytes) -> Result<Value, ApiError> {
    let review = super::resource::parse_body(headers, body)?;
    Ok(review.get("spec").cloned().unwrap_or_else(|| json!({})))
}

fn created(body: &Value) -> Response {
    let mut response = json(body);
    *response.status_mut() = StatusCode::CREATED;
    response
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
pub(super) async fn access_review(
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let spec = match review_spec(&headers, &body) {
        Ok(spec) => spec,
        Err(error) => return error.into_response(),
    };
    let request = match reviewed_request(&spec) {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let allowed = policy::allows(&identity, &request);
    created(&json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": {"allowed": allowed},
    }))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`.
pub(super) async fn rules_review(
    State(state): State<ClusterState>,
    Extension(identity): Extension<Identity>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let spec = match review_spec(&headers, &body) {
        Ok(spec) => spec,
        Err(error) => return error.into_response(),
    };
    let Some(namespace) = non_empty(&spec, "namespace") else {
        return ApiError::bad_request("no namespace on request").into_response();
    };
    created(&json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": policy::rules(&identity, &namespace, &state.served()),
    }))
}

/// `POST /apis/authentication.k8s.io/{v1,v1beta1,v1alpha1}/selfsubjectreviews`.
pub(super) async fn self_subject_review(
    Extension(identity): Extension<Identity>,
    Path(version): Path<String>,
) -> Response {
    if !matches!(version.as_str(), "v1" | "v1beta1" | "v1alpha1") {
        return ApiError::path_not_found().into_response();
    }
    created(&json!({
        "kind": "SelfSubjectReview",
        "apiVersion": format!("authentication.k8s.io/{version}"),
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": {
            "username": identity.user,
            "groups": identity.groups_with_authenticated(),
        }},
    }))
}
