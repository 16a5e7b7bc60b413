//! etcd's limit on what it stores, checked on every create and update that would be stored, so that a client
//! which writes big objects (an inventory of 10 000 jobs) meets here the refusal it would meet on Kubernetes: etcd
//! refuses a request over its `--max-request-bytes` (1.5 MiB by default), and the API server passes the error on
//! as a 500 without a reason: `etcdserver: request is too large`.
//!
//! The other size limits live where Kubernetes checks them: the request body (3 MiB, 413) in the HTTP layer
//! (`api::resource::MAX_BODY`), a ConfigMap's data (1 MiB, 422) and annotations (256 KiB) in `validation`.

use serde_json::{Map, Value};

use crate::registry::api_error::ApiError;
use crate::registry::resources::ResourceType;

/// etcd's default `--max-request-bytes` (1.5 MiB), the most a stored object (with its key) may take.
const MAX_STORED: usize = 3 << 19;
/// What the key and the transaction around a stored value add to etcd's request, roughly.
const REQUEST_OVERHEAD: usize = 256;

/// Refuses `object`, about to be stored as `resource`, when it is too big for etcd. A dry run stores nothing and
/// is not refused.
pub(crate) fn check(
    resource: &ResourceType,
    object: &Value,
    dry_run: bool,
) -> Result<(), ApiError> {
    if dry_run || stored_size(resource, object) + REQUEST_OVERHEAD <= MAX_STORED {
        return Ok(());
    }
    Err(ApiError {
        code: 500,
        // The API server does not translate etcd's error: the Status has no reason (`Unknown`).
        reason: "",
        message: "etcdserver: request is too large".to_owned(),
        details: Map::new(),
    })
}

/// About how many bytes `object` takes in etcd. Custom resources are stored as JSON; built-in kinds as protobuf,
/// which holds strings unescaped with a few bytes of framing per field, estimated here.
fn stored_size(resource: &ResourceType, object: &Value) -> usize {
    if resource.is_custom() {
        return serde_json::to_vec(object).map_or(0, |bytes| bytes.len());
    }
    protobuf_estimate(object)
}

fn protobuf_estimate(value: &Value) -> usize {
    /// A field's tag and length prefix.
    const FRAMING: usize = 4;
    match value {
        Value::Null => 0,
        Value::Bool(_) => 2,
        Value::Number(_) => 9,
        Value::String(text) => text.len() + FRAMING,
        Value::Array(items) => items.iter().map(protobuf_estimate).sum::<usize>() + FRAMING,
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| key.len() + FRAMING + protobuf_estimate(value))
            .sum(),
    }
}
