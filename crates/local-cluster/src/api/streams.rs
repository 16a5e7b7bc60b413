//! The pods' streaming subresources (`exec`, `attach`, `portforward`, and so `kubectl cp`, which runs `tar`
//! through exec), which the local cluster does not serve: its pods are local processes started by its kubelet,
//! with no container runtime to stream into. They are answered with a Status saying so, rather than a bare 404
//! that reads like a typo in the pod's name.
//!
//! The code is 405 `MethodNotAllowed`, Kubernetes' answer for a verb a resource does not support: client-go's
//! WebSocket and SPDY dialers decode the Status from the refused upgrade, so kubectl prints
//! `Error from server (MethodNotAllowed): <message>` and does not retry (it would retry a 5xx or a 429).

use crate::registry::api_error::ApiError;

/// The Status for a streaming subresource of pod `name`, or `None` when `subresource` is not one.
pub(crate) fn unsupported(subresource: &str, name: &str) -> Option<ApiError> {
    let what = match subresource {
        "exec" => "kubectl exec and kubectl cp are",
        "attach" => "kubectl attach is",
        "portforward" => "kubectl port-forward is",
        _ => return None,
    };
    let advice = if subresource == "portforward" {
        "its pods run as processes on this machine: connect to the port they listen on directly"
    } else {
        "its pods run as processes on this machine without a container to enter: read their output with kubectl logs, or run the command yourself"
    };
    Some(ApiError {
        code: 405,
        reason: "MethodNotAllowed",
        message: format!(
            "pods \"{name}\": {what} not supported by the toolforge local cluster ({subresource} is not served); {advice}"
        ),
        details: serde_json::Map::from_iter([
            ("name".to_owned(), serde_json::json!(name)),
            ("kind".to_owned(), serde_json::json!("pods")),
        ]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_subresources_are_refused_with_a_reason() {
        let exec = unsupported("exec", "p").expect("exec is a stream");
        assert_eq!((exec.code, exec.reason), (405, "MethodNotAllowed"));
        assert!(
            exec.message
                .contains("not supported by the toolforge local cluster"),
            "{}",
            exec.message
        );
        assert!(unsupported("portforward", "p").is_some());
        assert!(unsupported("attach", "p").is_some());
        assert!(unsupported("status", "p").is_none());
    }
}
