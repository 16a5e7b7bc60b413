//! The user a container's process runs as, from its `securityContext` and its pod's, and the kubelet's refusal
//! of a container whose `runAsNonRoot` it would break (`CreateContainerConfigError`, with the kubelet's
//! messages).
//!
//! A container has no image user here: without `runAsUser` its process runs as the cluster's own user. A
//! cluster running as root runs a container with a non-zero `runAsUser` as that uid (and `runAsGroup`, else
//! group 0, as a runtime does for a uid its image does not name); a cluster running as another user cannot
//! change users, so every process runs as that user whatever `runAsUser` says.
//!
//! One deliberate divergence: a cluster running as root starts a container with `runAsNonRoot: true` and an
//! explicit `runAsUser: 0` instead of refusing it, because toolforge-jobs renders the current uid as the tool's
//! (SPEC §10) and a root user's jobs would otherwise never run; `docs/local-cluster.md` says so.

use serde_json::Value;

use crate::registry::meta;

/// Who runs a container's process: `None` is the cluster's own user, `Some((uid, gid))` another one.
pub(super) type RunAs = Option<(u32, u32)>;

/// The `securityContext` field of the container, else of its pod.
fn field<'a>(pod: &'a Value, container: &'a Value, name: &str) -> Option<&'a Value> {
    meta::at(container, &["securityContext", name])
        .or_else(|| meta::at(pod, &["spec", "securityContext", name]))
        .filter(|v| !v.is_null())
}

fn id(pod: &Value, container: &Value, name: &str) -> Option<u32> {
    field(pod, container, name)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

/// Whom the container's process runs as, or the kubelet's message refusing to start it. `cluster_is_root`:
/// the cluster's own user is root.
pub(super) fn run_as(
    pod: &Value,
    container: &Value,
    cluster_is_root: bool,
) -> Result<RunAs, String> {
    let user = id(pod, container, "runAsUser");
    let non_root = field(pod, container, "runAsNonRoot").and_then(Value::as_bool) == Some(true);
    let who = || {
        format!(
            "(pod: \"{}_{}({})\", container: {})",
            meta::name(pod),
            meta::namespace(pod),
            meta::uid(pod),
            container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
        )
    };
    if non_root {
        match user {
            Some(0) if !cluster_is_root => {
                return Err(format!(
                    "container's runAsUser breaks non-root policy {}",
                    who()
                ));
            }
            None if cluster_is_root => {
                return Err(format!(
                    "container has runAsNonRoot and image will run as root {}",
                    who()
                ));
            }
            _ => {}
        }
    }
    Ok(match user {
        Some(uid) if cluster_is_root && uid != 0 => {
            Some((uid, id(pod, container, "runAsGroup").unwrap_or(0)))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(pod_context: &Value, container_context: &Value) -> (Value, Value) {
        let container = json!({"name": "main", "securityContext": container_context});
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"securityContext": pod_context, "containers": [container.clone()]}});
        (pod, container)
    }

    #[test]
    fn run_as_non_root_refuses_uid_0_with_the_kubelet_messages() {
        let (p, c) = pod(&json!({"runAsNonRoot": true}), &json!({"runAsUser": 0}));
        assert_eq!(
            run_as(&p, &c, false),
            Err(
                "container's runAsUser breaks non-root policy (pod: \"p_ns(u)\", container: main)"
                    .to_owned()
            )
        );
        let (p, c) = pod(&json!({"runAsNonRoot": true}), &json!({}));
        assert_eq!(
            run_as(&p, &c, true),
            Err(
                "container has runAsNonRoot and image will run as root (pod: \"p_ns(u)\", container: main)"
                    .to_owned()
            )
        );
        assert_eq!(run_as(&p, &c, false), Ok(None));
    }

    #[test]
    fn a_root_cluster_runs_the_container_as_its_run_as_user_and_group() {
        let (p, c) = pod(
            &json!({"runAsUser": 1000, "runAsGroup": 1001}),
            &json!({"runAsUser": 1002, "runAsNonRoot": true}),
        );
        assert_eq!(run_as(&p, &c, true), Ok(Some((1002, 1001))));
        assert_eq!(run_as(&p, &c, false), Ok(None));
        let (p, c) = pod(&json!({"runAsUser": 0, "runAsNonRoot": true}), &json!({}));
        assert_eq!(run_as(&p, &c, true), Ok(None), "the documented divergence");
    }
}
