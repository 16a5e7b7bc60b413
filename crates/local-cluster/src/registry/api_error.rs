//! API errors and the Kubernetes `Status` bodies they become.
//!
//! Every non-2xx response of the API is built here, so that `reason`, `code`, `message` and `details` match what
//! a 1.33 API server sends (clients branch on `reason`, kube-rs first of all).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::registry::resources::ResourceType;

/// An error answered with a `Status` body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code, also the body's `code`.
    pub code: u16,
    /// The `reason` of the Status (`NotFound`, `Conflict`, ...).
    pub reason: &'static str,
    /// The `message` of the Status.
    pub message: String,
    /// The `details` of the Status (name, group, kind, causes).
    pub details: Map<String, Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: Map::new(),
        }
    }

    fn with_object(mut self, resource: &ResourceType, name: &str, kind: &str) -> Self {
        self.details.insert("name".into(), json!(name));
        if !resource.group.is_empty() {
            self.details.insert("group".into(), json!(resource.group));
        }
        self.details.insert("kind".into(), json!(kind));
        self
    }

    /// 404 for a request path that names nothing served.
    #[must_use]
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 404 for a missing object.
    #[must_use]
    pub fn not_found(resource: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", resource.qualified_resource()),
        )
        .with_object(resource, name, resource.plural)
    }

    /// 409 on create of a name that exists; `being_deleted` adds the prefix a terminating object gets.
    #[must_use]
    pub fn already_exists(resource: &ResourceType, name: &str, being_deleted: bool) -> Self {
        let prefix = if being_deleted {
            "object is being deleted: "
        } else {
            ""
        };
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{prefix}{} \"{name}\" already exists",
                resource.qualified_resource()
            ),
        )
        .with_object(resource, name, resource.plural)
    }

    /// 409 Conflict with the standard prefix and the given explanation.
    #[must_use]
    pub fn conflict(resource: &ResourceType, name: &str, explanation: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {explanation}",
                resource.qualified_resource()
            ),
        )
        .with_object(resource, name, resource.plural)
    }

    /// 409 Conflict for a stale `resourceVersion`.
    #[must_use]
    pub fn stale(resource: &ResourceType, name: &str) -> Self {
        Self::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid listing every field error.
    #[must_use]
    pub fn invalid(resource: &ResourceType, name: &str, errors: &[FieldError]) -> Self {
        Self::invalid_kind(&resource.qualified_kind(), resource, name, errors)
    }

    fn invalid_kind(
        qualified_kind: &str,
        resource: &ResourceType,
        name: &str,
        errors: &[FieldError],
    ) -> Self {
        let mut error = Self::new(
            422,
            "Invalid",
            format!(
                "{qualified_kind} \"{name}\" is invalid: {}",
                aggregate(errors)
            ),
        )
        .with_object(resource, name, resource.kind);
        error.details.insert("causes".into(), causes(errors));
        error
    }

    /// 422 Invalid about request options (`DeleteOptions`, `ListOptions`, `PatchOptions`).
    #[must_use]
    pub fn invalid_options(options_kind: &str, errors: &[FieldError]) -> Self {
        let mut error = Self::new(
            422,
            "Invalid",
            format!(
                "{options_kind}.meta.k8s.io \"\" is invalid: {}",
                aggregate(errors)
            ),
        );
        error.details.insert("group".into(), json!("meta.k8s.io"));
        error.details.insert("kind".into(), json!(options_kind));
        error.details.insert("causes".into(), causes(errors));
        error
    }

    /// 422 Invalid about the options of `pods/{name}/log`, as the API server words it.
    pub(crate) fn invalid_log_options(name: &str, errors: &[FieldError]) -> Self {
        let mut error = Self::new(
            422,
            "Invalid",
            format!("PodLogOptions \"{name}\" is invalid: {}", aggregate(errors)),
        );
        error.details.insert("name".into(), json!(name));
        error.details.insert("kind".into(), json!("PodLogOptions"));
        error.details.insert("causes".into(), causes(errors));
        error
    }

    /// 400 BadRequest.
    #[must_use]
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 for a request without valid credentials.
    #[must_use]
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden.
    #[must_use]
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 403 Forbidden from an admission plugin: `pods "x" is forbidden: <reason>`.
    #[must_use]
    pub fn forbidden_object(resource: &ResourceType, name: &str, reason: &str) -> Self {
        Self::forbidden(format!(
            "{} \"{name}\" is forbidden: {reason}",
            resource.qualified_resource()
        ))
        .with_object(resource, name, resource.plural)
    }

    /// 405 for a verb a resource does not support.
    #[must_use]
    pub fn method_not_allowed(verb: &str, resource: &ResourceType) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                resource.qualified_resource()
            ),
        )
    }

    /// 410 Expired, e.g. a resourceVersion older than the retained history.
    #[must_use]
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 for a request body over the API server's limit (`limit` bytes).
    #[must_use]
    pub fn request_entity_too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 415 for a body in a media type the endpoint does not accept.
    #[must_use]
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 504 for a resourceVersion newer than the store's.
    #[must_use]
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut error = Self::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        );
        error.details.insert(
            "causes".into(),
            json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]),
        );
        error.details.insert("retryAfterSeconds".into(), json!(1));
        error
    }

    /// 500 for a failure of the server itself.
    #[must_use]
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// An error with a status code chosen by a test (fault injection); the reason follows the code.
    #[must_use]
    pub fn injected(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        Self::new(code, reason, format!("injected fault: {reason}"))
    }

    /// The `Status` object.
    #[must_use]
    pub fn status_body(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": self.details,
            "code": self.code,
        })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (code, self.status_body().to_string()).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// The type of a field validation error (`causes[].reason`).
#[derive(Debug, Clone, PartialEq)]
pub enum FieldErrorKind {
    /// `Required value`.
    Required,
    /// `Invalid value: <value>`; holds the rendered value.
    Invalid(String),
    /// `Unsupported value: <value>: supported values: ...`; owned because custom resources list their own values.
    NotSupported(String, Vec<String>),
    /// `Forbidden`.
    Forbidden,
    /// `Too long: may not be more than N bytes`.
    TooLong(usize),
    /// `Too many: <count>: must have at most N items`; holds the count.
    TooMany(usize),
    /// `Duplicate value: <value>`.
    Duplicate(String),
}

/// One validation error on one field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What went wrong.
    pub kind: FieldErrorKind,
    /// Path of the field, e.g. `spec.template.spec.restartPolicy`.
    pub field: String,
    /// Explanation appended to the body.
    pub detail: String,
}

impl FieldError {
    pub(crate) fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Required,
            field: field.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn invalid(
        field: impl Into<String>,
        value: &Value,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind: FieldErrorKind::Invalid(render_value(value)),
            field: field.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn not_supported(
        field: impl Into<String>,
        value: &Value,
        supported: &[&'static str],
    ) -> Self {
        Self {
            kind: FieldErrorKind::NotSupported(
                render_value(value),
                supported.iter().map(|s| (*s).to_owned()).collect(),
            ),
            field: field.into(),
            detail: String::new(),
        }
    }

    pub(crate) fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Forbidden,
            field: field.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Self {
            kind: FieldErrorKind::Duplicate(render_value(value)),
            field: field.into(),
            detail: String::new(),
        }
    }

    /// The `causes[].reason` string.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self.kind {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid(_) => "FieldValueInvalid",
            FieldErrorKind::NotSupported(..) => "FieldValueNotSupported",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TooLong(_) => "FieldValueTooLong",
            FieldErrorKind::TooMany(_) => "FieldValueTooMany",
            FieldErrorKind::Duplicate(_) => "FieldValueDuplicate",
        }
    }

    /// The error body without the field path (`Required value: ...`).
    #[must_use]
    pub fn body(&self) -> String {
        let head = match &self.kind {
            FieldErrorKind::Required => "Required value".to_owned(),
            FieldErrorKind::Invalid(value) => format!("Invalid value: {value}"),
            FieldErrorKind::NotSupported(value, supported) => {
                let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
                format!(
                    "Unsupported value: {value}: supported values: {}",
                    list.join(", ")
                )
            }
            FieldErrorKind::Forbidden => "Forbidden".to_owned(),
            FieldErrorKind::TooLong(limit) => {
                format!("Too long: may not be more than {limit} bytes")
            }
            FieldErrorKind::TooMany(count) => format!("Too many: {count}"),
            FieldErrorKind::Duplicate(value) => format!("Duplicate value: {value}"),
        };
        if self.detail.is_empty() {
            head
        } else {
            format!("{head}: {}", self.detail)
        }
    }
}

/// Renders a value the way Go's validation errors quote it: strings quoted, numbers plain, structures as compact
/// JSON (a real server prints a Go struct dump there, which cannot be reproduced).
pub(crate) fn render_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

fn aggregate(errors: &[FieldError]) -> String {
    aggregate_messages(errors.iter().map(|e| format!("{}: {}", e.field, e.body())))
}

/// Several error messages as apimachinery's `Aggregate` prints them: duplicates dropped, one message alone,
/// several in brackets.
pub(crate) fn aggregate_messages(messages: impl IntoIterator<Item = String>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for text in messages {
        if !parts.contains(&text) {
            parts.push(text);
        }
    }
    match parts.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", parts.join(", ")),
    }
}

fn causes(errors: &[FieldError]) -> Value {
    Value::Array(
        errors
            .iter()
            .map(|e| json!({"reason": e.reason(), "message": e.body(), "field": e.field}))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resources::find;

    #[test]
    fn not_found_names_the_plural_in_details_kind() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let body = ApiError::not_found(jobs, "x").status_body();
        assert_eq!(
            body,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"jobs.batch \"x\" not found","reason":"NotFound",
                "details":{"name":"x","group":"batch","kind":"jobs"},"code":404})
        );
    }

    #[test]
    fn core_group_is_omitted_from_details() {
        let pods = find("", "v1", "pods").expect("served");
        let body = ApiError::already_exists(pods, "p", true).status_body();
        assert_eq!(
            body["message"],
            "object is being deleted: pods \"p\" already exists"
        );
        assert!(body["details"].get("group").is_none());
    }

    #[test]
    fn invalid_aggregates_messages_and_lists_causes() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let one = ApiError::invalid(
            jobs,
            "x",
            &[FieldError::required(
                "spec.template.spec.restartPolicy",
                "valid values: \"OnFailure\", \"Never\"",
            )],
        );
        assert_eq!(
            one.message,
            "Job.batch \"x\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
        );
        assert_eq!(one.details["kind"], "Job");
        assert_eq!(one.details["causes"][0]["reason"], "FieldValueRequired");
        let two = ApiError::invalid(
            jobs,
            "x",
            &[
                FieldError::invalid("metadata.name", &json!("A"), "bad"),
                FieldError::not_supported("spec.x", &json!("y"), &["a", "b"]),
            ],
        );
        assert_eq!(
            two.message,
            "Job.batch \"x\" is invalid: [metadata.name: Invalid value: \"A\": bad, spec.x: Unsupported value: \"y\": supported values: \"a\", \"b\"]"
        );
    }
}
