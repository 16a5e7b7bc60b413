//! The `/scale` subresource of Deployments and ReplicaSets: an `autoscaling/v1` Scale view whose writes change
//! `spec.replicas` of the object (what `kubectl scale` and HPA-style clients use).

use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde_json::{Value, json};

use super::ClusterState;
use super::path::Target;
use super::query::Query;
use super::resource::{ok, parse_body, patch_type};
use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::meta;
use crate::registry::ops::{self, Part, WriteOptions};
use crate::registry::patch::PatchType;

/// `autoscaling/v1` Scale view of a Deployment or ReplicaSet.
fn scale_of(object: &Value) -> Value {
    let selector = crate::registry::selector::LabelSelector::from_object(
        meta::at(object, &["spec", "selector"]).unwrap_or(&Value::Null),
    );
    let selector_text: Vec<String> = meta::at(object, &["spec", "selector", "matchLabels"])
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    let mut metadata = json!({});
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = meta::at(object, &["metadata", field]) {
            metadata[field] = value.clone();
        }
    }
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata,
        "spec": {"replicas": meta::at(object, &["spec", "replicas"]).cloned().unwrap_or(json!(0))},
        "status": {"replicas": meta::at(object, &["status", "replicas"]).cloned().unwrap_or(json!(0)),
            "selector": if selector.is_some() { selector_text.join(",") } else { String::new() }},
    })
}

pub(super) fn serve(
    state: &ClusterState,
    method: &Method,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let resource = target.resource;
    let namespace = target.namespace.as_deref().unwrap_or_default();
    let Some(name) = target.name.as_deref() else {
        return Err(ApiError::path_not_found());
    };
    let current = ops::get(&state.store, resource, namespace, name)?;
    let desired = match *method {
        Method::GET => return Ok(ok(&scale_of(&current), &[])),
        Method::PUT => parse_body(headers, body)?,
        Method::PATCH => {
            let mut scale = scale_of(&current);
            match patch_type(headers)? {
                PatchType::Json => crate::registry::patch::json_patch(&mut scale, body)?,
                PatchType::Merge => crate::registry::patch::merge_patch(
                    &mut scale,
                    &serde_json::from_slice(body)
                        .map_err(|e| ApiError::bad_request(e.to_string()))?,
                ),
                PatchType::Strategic | PatchType::Apply => {
                    crate::registry::patch::strategic_merge(
                        &mut scale,
                        &serde_json::from_slice(body)
                            .map_err(|e| ApiError::bad_request(e.to_string()))?,
                    )?;
                }
            }
            scale
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                &method.as_str().to_lowercase(),
                resource,
            ));
        }
    };
    let Some(replicas) = meta::at(&desired, &["spec", "replicas"]).and_then(Value::as_i64) else {
        return Err(ApiError::invalid(
            resource,
            name,
            &[FieldError::required("spec.replicas", "")],
        ));
    };
    let mut merge = json!({"spec": {"replicas": replicas}});
    if let Some(rv) = meta::resource_version(&desired) {
        merge["metadata"] = json!({"resourceVersion": rv});
    }
    let options = WriteOptions {
        field_validation: crate::registry::decode::FieldValidation::Ignore,
        ..super::resource::write_options(query, headers)?
    };
    let written = ops::patch(
        &state.store,
        resource,
        namespace,
        name,
        PatchType::Merge,
        merge.to_string().as_bytes(),
        Part::Main,
        &options,
    )?;
    Ok(ok(&scale_of(&written.object), &[]))
}
