//! Decoding request bodies into stored objects: the typed round trip through the k8s-openapi type (see
//! [`typed_json`]: Go's errors, canonical quantities, `omitempty`, unknown fields dropped as the real server's
//! typed decoding drops them) and the `fieldValidation` handling that decides whether dropped fields are an
//! error, a warning or silently ignored.

use serde_json::Value;

use crate::registry::api_error::ApiError;
use crate::registry::resources::ResourceType;
use crate::registry::typed_json::{self, Typed};

/// Deserialises into the type and serialises back, or says why the body does not fit the type.
pub(crate) type RoundTrip = fn(&Value) -> Result<Typed, String>;

pub(crate) use typed_json::roundtrip;

/// The round trip of a type that has no Rust type (custom resources, decoded by their schema instead).
#[expect(
    clippy::unnecessary_wraps,
    reason = "it fills the RoundTrip slot, whose other functions can fail"
)]
pub(crate) fn untyped(value: &Value) -> Result<Typed, String> {
    Ok(Typed {
        object: value.clone(),
        unknown: Vec::new(),
    })
}

/// The `fieldValidation` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    Strict,
    /// The server default when the parameter is absent.
    #[default]
    Warn,
    Ignore,
}

impl FieldValidation {
    pub(crate) fn parse(text: Option<&str>) -> Result<Self, ApiError> {
        match text {
            None | Some("" | "Warn") => Ok(Self::Warn),
            Some("Strict") => Ok(Self::Strict),
            Some("Ignore") => Ok(Self::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "invalid fieldValidation directive: {other}"
            ))),
        }
    }
}

/// A decoded object and the warnings to send back (`Warning` headers).
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) object: Value,
    pub(crate) warnings: Vec<String>,
}

/// Decodes a body (already parsed as JSON) as an object of the type.
pub(crate) fn decode(
    resource: &ResourceType,
    mut value: Value,
    validation: FieldValidation,
) -> Result<Decoded, ApiError> {
    let cannot_handle = |why: &str| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {why}",
            kind = resource.kind,
            version = resource.version
        ))
    };
    let Some(map) = value.as_object_mut() else {
        return Err(cannot_handle("the body is not a JSON object"));
    };
    let api_version = resource.api_version();
    if let Some(sent) = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        && sent != api_version
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({sent}) does not match the expected API version ({api_version})"
        )));
    }
    if let Some(sent) = map
        .get("kind")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        && sent != resource.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({sent}) does not match the expected kind ({})",
            resource.kind
        )));
    }
    map.insert("apiVersion".into(), Value::from(api_version));
    map.insert("kind".into(), Value::from(resource.kind));
    // Custom resources stay plain JSON: their schema, not a Rust type, says what they may hold.
    let (mut decoded, unknown) = if let Some(custom) = resource.custom {
        let pruned = crate::registry::custom::decode(custom, &mut value);
        (value, pruned)
    } else {
        let typed = (resource.roundtrip)(&value).map_err(|e| cannot_handle(&e))?;
        (typed.object, typed.unknown)
    };
    if let Some(view) = resource.view {
        decoded = (view.to_storage)(decoded);
    }
    let messages: Vec<String> = unknown
        .iter()
        .map(|path| format!("unknown field \"{path}\""))
        .collect();
    match validation {
        FieldValidation::Strict if !messages.is_empty() => Err(cannot_handle(&format!(
            "strict decoding error: {}",
            messages.join(", ")
        ))),
        FieldValidation::Warn => Ok(Decoded {
            object: decoded,
            warnings: messages,
        }),
        _ => Ok(Decoded {
            object: decoded,
            warnings: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::resources::find;

    fn jobs() -> &'static ResourceType {
        find("batch", "v1", "jobs").expect("served")
    }

    #[test]
    fn strict_rejects_unknown_fields_with_their_paths() {
        let body = json!({"metadata": {"name": "x"}, "spec": {"foo": 1, "template": {"spec": {"containers": [{"name": "c", "bar": true}]}}}});
        let error = decode(jobs(), body, FieldValidation::Strict).expect_err("unknown fields");
        assert_eq!(error.code, 400);
        assert_eq!(
            error.message,
            "Job in version \"v1\" cannot be handled as a Job: strict decoding error: unknown field \"spec.foo\", unknown field \"spec.template.spec.containers[0].bar\""
        );
    }

    #[test]
    fn warn_drops_unknown_fields_and_reports_them() {
        let body = json!({"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {"foo": 1}});
        let decoded = decode(jobs(), body, FieldValidation::Warn).expect("decodes");
        assert_eq!(
            decoded.warnings,
            vec!["unknown field \"spec.foo\"".to_owned()]
        );
        assert!(decoded.object["spec"].get("foo").is_none());
        assert_eq!(decoded.object["metadata"]["labels"]["a"], "b");
        assert_eq!(decoded.object["kind"], "Job");
    }

    #[test]
    fn wrong_types_and_kinds_are_bad_requests() {
        let wrong_type = decode(
            jobs(),
            json!({"spec": {"parallelism": "two"}}),
            FieldValidation::Ignore,
        );
        assert_eq!(wrong_type.expect_err("type").code, 400);
        let wrong_kind = decode(jobs(), json!({"kind": "Pod"}), FieldValidation::Ignore);
        assert_eq!(wrong_kind.expect_err("kind").code, 400);
    }
}
