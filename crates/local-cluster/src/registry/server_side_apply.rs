//! Server-side apply (`application/apply-patch+yaml`): parsing the applied configuration, and the apply itself
//! on a missing object (which it creates, 201) or an existing one. Merging, ownership, conflicts and the
//! removal of fields an applier stopped applying are field management's (`managed_fields`).

use serde_json::{Value, json};

use crate::registry::api_error::ApiError;
use crate::registry::decode;
use crate::registry::managed_fields;
use crate::registry::meta;
use crate::registry::ops::{Part, WriteOptions, Written, insert_new};
use crate::registry::resources::ResourceType;
use crate::registry::store::Inner;

/// The apply body: JSON (what kube-rs and kubectl send) or YAML.
pub(crate) fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return Ok(value);
    }
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("apply patch body is not UTF-8"))?;
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// Creates the object an apply names from the applied configuration.
pub(crate) fn create(
    s: &mut Inner,
    resource: &'static ResourceType,
    namespace: &str,
    name: &str,
    applied: &Value,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let object = apply(s, resource, &json!({}), applied, Part::Main, options)?;
    let decoded = decode::decode(resource, object, options.field_validation)?;
    if meta::name(&decoded.object) != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta::name(&decoded.object)
        )));
    }
    let object = insert_new(s, resource, Some(namespace), decoded.object, options)?;
    Ok(Written {
        object,
        warnings: decoded.warnings,
        created: true,
    })
}

/// The live object (as presented) with the applied configuration merged in and the managed fields updated, or
/// the 409 of a conflict. The status is the status subresource's to write, not the main resource's.
pub(crate) fn apply(
    s: &Inner,
    resource: &ResourceType,
    live: &Value,
    applied: &Value,
    part: Part,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let mut applied = applied.clone();
    if let Some(map) = applied.as_object_mut()
        && part == Part::Main
        && (resource.has_status || !resource.is_custom())
    {
        map.remove("status");
    }
    managed_fields::apply(
        resource,
        live,
        &applied,
        part,
        options.field_manager.as_deref().unwrap_or_default(),
        options.force == Some(true),
        meta::now(s.clock()),
    )
}
