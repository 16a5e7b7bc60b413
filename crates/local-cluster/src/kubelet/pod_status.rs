//! Renders a pod's `status` the way a kubelet writes it (reference §3.6): phase, the five conditions with their
//! reasons and stable transition times, IPs, and one `containerStatuses` entry per container with
//! `waiting`/`running`/`terminated` state, `lastState`, `restartCount`, IDs and readiness.
//!
//! Pure: the kubelet decides *which* state a pod is in; this module only says what that looks like.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::registry::meta;

/// The address of the local cluster's one node (see [`crate::bootstrap`]).
const HOST_IP: &str = "127.0.0.1";

/// What all containers of a pod are doing, as one kubelet status write shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PodView {
    /// `Pending`, `Running`, `Succeeded` or `Failed`.
    pub(crate) phase: &'static str,
    /// The `state` object of each container, e.g. `{"running": {"startedAt": …}}`.
    pub(crate) state: Value,
    /// The previous run after a restart (`lastState`), or `{}`.
    pub(crate) last_state: Value,
    pub(crate) restart_count: u32,
    pub(crate) ready: bool,
    /// Whether a running container counts as `started` (false while its startup probe has not succeeded).
    pub(crate) started: bool,
}

/// The `(name, image)` of each container.
pub(crate) fn containers(pod: &Value) -> Vec<(String, String)> {
    meta::at(pod, &["spec", "containers"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let text = |f: &str| {
                c.get(f)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (text("name"), text("image"))
        })
        .collect()
}

/// A stable hex digest of some text (not cryptographic; IDs only need to look real and stay put).
fn digest(text: &str) -> String {
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    let mut hex = String::with_capacity(64);
    for round in 0..4_u64 {
        for byte in text.bytes().chain(round.to_le_bytes()) {
            state = (state ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        // Writing to a String cannot fail.
        let _ = write!(hex, "{state:016x}");
    }
    hex
}

/// The size an image is reported to have when pulled: stable per image and of a plausible order (20 to 220 MB).
pub(crate) fn image_size(image: &str) -> u64 {
    let hex = digest(image);
    let seed = u64::from_str_radix(hex.get(..8).unwrap_or("0"), 16).unwrap_or(0);
    20_000_000 + seed % 200_000_000
}

/// `docker.io/library/busybox` for `busybox`, as containerd reports image names.
fn qualified_image(image: &str) -> String {
    let repository = image.split(['@', ':']).next().unwrap_or(image);
    match repository.split('/').collect::<Vec<_>>().as_slice() {
        [single] => format!("docker.io/library/{single}"),
        [first, ..] if !first.contains('.') && !first.contains(':') && *first != "localhost" => {
            format!("docker.io/{repository}")
        }
        _ => repository.to_owned(),
    }
}

fn condition(
    old: &Value,
    type_: &str,
    status: bool,
    reason: Option<(&str, String)>,
    now: &str,
) -> Value {
    let status = if status { "True" } else { "False" };
    let previous = meta::at(old, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|list| {
            list.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        });
    // The transition time moves only when the status does.
    let since = previous
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut condition = json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": since});
    if let Some((reason, message)) = reason {
        meta::set_at(&mut condition, &["reason"], json!(reason));
        if !message.is_empty() {
            meta::set_at(&mut condition, &["message"], json!(message));
        }
    }
    condition
}

/// The full `status` of `pod` in the given view, at `now`.
pub(crate) fn render(pod: &Value, view: &PodView, now: &str) -> Value {
    let names: Vec<(String, String)> = containers(pod);
    let terminal = matches!(view.phase, "Succeeded" | "Failed");
    let not_ready = if terminal {
        let reason = if view.phase == "Succeeded" {
            "PodCompleted"
        } else {
            "PodFailed"
        };
        Some((reason, String::new()))
    } else if view.ready {
        None
    } else {
        let list: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        Some((
            "ContainersNotReady",
            format!("containers with unready status: [{}]", list.join(" ")),
        ))
    };
    let initialized_reason = (view.phase == "Succeeded").then(|| ("PodCompleted", String::new()));
    let conditions = vec![
        condition(pod, "PodReadyToStartContainers", !terminal, None, now),
        condition(pod, "Initialized", true, initialized_reason, now),
        condition(pod, "Ready", view.ready, not_ready.clone(), now),
        condition(pod, "ContainersReady", view.ready, not_ready, now),
        condition(pod, "PodScheduled", true, None, now),
    ];
    let created = !view.state.get("waiting").is_some_and(|w| {
        matches!(
            meta::str_at(w, &["reason"]),
            Some(
                "ContainerCreating"
                    | "ErrImagePull"
                    | "ImagePullBackOff"
                    | "CreateContainerConfigError"
            )
        )
    }) || view.restart_count > 0;
    let statuses: Vec<Value> = names
        .iter()
        .map(|(name, image)| {
            let mut status = json!({
                "name": name,
                "image": image,
                "imageID": "",
                "ready": view.ready,
                "started": view.started,
                "restartCount": view.restart_count,
                "state": view.state,
                "lastState": view.last_state,
            });
            if created {
                let id = format!(
                    "containerd://{}",
                    digest(&format!("{}/{name}/{}", meta::uid(pod), view.restart_count))
                );
                let image_id = format!("{}@sha256:{}", qualified_image(image), digest(image));
                meta::set_at(&mut status, &["containerID"], json!(id));
                meta::set_at(&mut status, &["imageID"], json!(image_id));
                if let Some(terminated) = status
                    .get_mut("state")
                    .and_then(|s| s.get_mut("terminated"))
                {
                    meta::set_at(terminated, &["containerID"], json!(id));
                }
            }
            status
        })
        .collect();
    let pod_ip = format!(
        "10.244.0.{}",
        digest(meta::uid(pod))
            .bytes()
            .take(2)
            .map(u32::from)
            .sum::<u32>()
            % 250
            + 2
    );
    let start = meta::at(pod, &["status", "startTime"])
        .cloned()
        .unwrap_or_else(|| json!(now));
    let mut status = json!({
        "phase": view.phase,
        "conditions": conditions,
        "hostIP": HOST_IP,
        "hostIPs": [{"ip": HOST_IP}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": start,
        "containerStatuses": statuses,
    });
    if let Some(qos) = meta::at(pod, &["status", "qosClass"]) {
        meta::set_at(&mut status, &["qosClass"], qos.clone());
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Value {
        json!({"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}})
    }

    #[test]
    fn a_creating_pod_is_pending_and_not_ready_with_the_kubelet_reasons() {
        let view = PodView {
            phase: "Pending",
            state: json!({"waiting": {"reason": "ContainerCreating"}}),
            last_state: json!({}),
            restart_count: 0,
            ready: false,
            started: false,
        };
        let status = render(&pod(), &view, "2026-01-01T00:00:00Z");
        assert_eq!(status["conditions"][2]["type"], "Ready");
        assert_eq!(status["conditions"][2]["reason"], "ContainersNotReady");
        assert_eq!(
            status["conditions"][2]["message"],
            "containers with unready status: [main]"
        );
        assert_eq!(
            status["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ContainerCreating"
        );
        assert!(status["containerStatuses"][0].get("containerID").is_none());
        assert_eq!(status["qosClass"], "BestEffort");
    }

    #[test]
    fn a_finished_pod_keeps_transition_times_that_did_not_change_and_gets_ids() {
        let mut old = pod();
        let running = PodView {
            phase: "Running",
            state: json!({"running": {"startedAt": "2026-01-01T00:00:01Z"}}),
            last_state: json!({}),
            restart_count: 0,
            ready: true,
            started: true,
        };
        let status = render(&old, &running, "2026-01-01T00:00:01Z");
        meta::set_at(&mut old, &["status"], status);
        let done = PodView {
            phase: "Succeeded",
            state: json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
            ready: false,
            started: false,
            ..running
        };
        let status = render(&old, &done, "2026-01-01T00:00:05Z");
        assert_eq!(
            status["conditions"][1]["lastTransitionTime"],
            "2026-01-01T00:00:01Z"
        );
        assert_eq!(status["conditions"][1]["reason"], "PodCompleted");
        assert_eq!(
            status["conditions"][2]["lastTransitionTime"],
            "2026-01-01T00:00:05Z"
        );
        assert_eq!(status["conditions"][2]["reason"], "PodCompleted");
        let container = &status["containerStatuses"][0];
        assert!(
            container["imageID"]
                .as_str()
                .is_some_and(|i| i.starts_with("docker.io/library/busybox@sha256:"))
        );
        assert_eq!(
            container["state"]["terminated"]["containerID"],
            container["containerID"]
        );
    }
}
