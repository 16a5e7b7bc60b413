//! Server-side apply, minimal but honest (reference §1.8): an apply creates a missing object (201), merges into an
//! existing one with the strategic-merge list keys, and removes the fields the same field manager applied before
//! and no longer applies. The last configuration of each manager is kept per object, in memory. Conflicts
//! between managers are not detected.

use serde_json::Value;

use crate::registry::api_error::ApiError;
use crate::registry::decode;
use crate::registry::meta;
use crate::registry::ops::{WriteOptions, Written, insert_new};
use crate::registry::patch;
use crate::registry::resources::ResourceType;
use crate::registry::store::{Inner, ObjectKey};

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

pub(crate) fn create(
    s: &mut Inner,
    resource: &'static ResourceType,
    namespace: &str,
    name: &str,
    applied: Value,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let decoded = decode::decode(resource, applied.clone(), options.field_validation)?;
    if meta::name(&decoded.object) != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta::name(&decoded.object)
        )));
    }
    let object = insert_new(s, resource, Some(namespace), decoded.object, options)?;
    if !options.dry_run {
        let manager = options.field_manager.clone().unwrap_or_default();
        s.applied
            .insert((ObjectKey::of(resource, &object), manager), applied);
    }
    Ok(Written {
        object,
        warnings: decoded.warnings,
        created: true,
    })
}

/// Merges an applied configuration into the live object and removes what the same manager applied before
/// and no longer applies.
pub(crate) fn merge(
    s: &Inner,
    resource: &ResourceType,
    key: &ObjectKey,
    target: &mut Value,
    applied: &Value,
    options: &WriteOptions,
) -> Result<(), ApiError> {
    let manager = options.field_manager.clone().unwrap_or_default();
    if let Some(previous) = s.applied.get(&(key.clone(), manager)) {
        for path in patch::removed_fields(previous, applied) {
            patch::remove_path(target, &path);
        }
    }
    let mut applied = applied.clone();
    if let Some(map) = applied.as_object_mut()
        && (resource.has_status || !resource.is_custom())
    {
        map.remove("status");
    }
    if resource.is_custom() {
        // Without list-type markers in a schema every list of a custom resource is atomic, as a merge patch
        // treats it.
        patch::merge_patch(target, &applied);
        return Ok(());
    }
    patch::strategic_merge(target, &applied)
}
