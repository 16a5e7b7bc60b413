//! `meta.k8s.io/v1` Table responses, so that `kubectl get` prints the columns a real server's printers give
//! (reference §5.3). Columns with priority 1 show only with `-o wide`.

use serde_json::{Value, json};

use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::custom::Custom;
use crate::registry::meta;
use crate::registry::resources::ResourceType;

/// What each row carries besides its cells (`includeObject`): kubectl asks for the whole object when it sorts
/// (`--sort-by`) or prints with a template, and for none with `--no-headers`-style custom columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowObject {
    None,
    /// The default: `PartialObjectMetadata`.
    Metadata,
    Object,
}

impl RowObject {
    /// Reads the `includeObject` query parameter as the API server validates it.
    pub(crate) fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(RowObject::Metadata),
            "None" => Ok(RowObject::None),
            "Object" => Ok(RowObject::Object),
            other => Err(ApiError::invalid_options(
                "TableOptions",
                &[FieldError::not_supported(
                    "includeObject",
                    &json!(other),
                    &["Metadata", "None", "Object"],
                )],
            )),
        }
    }

    fn render(self, resource: &ResourceType, object: &Value) -> Value {
        match self {
            RowObject::None => Value::Null,
            RowObject::Metadata => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
            }),
            RowObject::Object => {
                let mut full = resource.present(object.clone());
                if let Some(map) = full.as_object_mut() {
                    map.insert("apiVersion".into(), Value::from(resource.api_version()));
                    map.insert("kind".into(), Value::from(resource.kind));
                }
                full
            }
        }
    }
}

/// A Table of `objects` (one row each, carrying `row_object`), with ages as of the cluster time `now`.
pub(crate) fn table(
    resource: &ResourceType,
    objects: &[Value],
    resource_version: Option<String>,
    now: jiff::Timestamp,
    row_object: RowObject,
) -> Value {
    let columns: Vec<Value> = columns(resource)
        .iter()
        .map(|(name, kind, priority)| {
            json!({"name": name, "type": kind, "format": if *name == "Name" { "name" } else { "" },
                "description": "", "priority": priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            json!({
                "cells": cells(resource, object, now),
                "object": row_object.render(resource, object),
            })
        })
        .collect();
    let mut metadata = json!({});
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = Value::from(rv);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": columns, "rows": rows})
}

pub(super) type Column = (&'static str, &'static str, u8);

#[expect(
    clippy::too_many_lines,
    reason = "one short arm per served type; splitting by type would scatter one table"
)]
fn columns(resource: &ResourceType) -> Vec<Column> {
    if let Some(custom) = resource.custom {
        return custom_columns(custom);
    }
    let workload: [Column; 3] = [
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    ];
    let mut out: Vec<Column> = match resource.plural {
        "pods" => vec![
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        "jobs" => vec![
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            ("Age", "string", 0),
        ],
        "cronjobs" => vec![
            ("Name", "string", 0),
            ("Schedule", "string", 0),
            ("Timezone", "string", 0),
            ("Suspend", "boolean", 0),
            ("Active", "integer", 0),
            ("Last Schedule", "string", 0),
            ("Age", "string", 0),
        ],
        "deployments" => vec![
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Up-to-date", "string", 0),
            ("Available", "string", 0),
            ("Age", "string", 0),
        ],
        "replicasets" => vec![
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
        ],
        "events" => vec![
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
        ],
        "namespaces" => vec![
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Age", "string", 0),
        ],
        "nodes" => vec![
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ],
        "configmaps" => vec![
            ("Name", "string", 0),
            ("Data", "integer", 0),
            ("Age", "string", 0),
        ],
        "services" => vec![
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            ("Age", "string", 0),
            ("Selector", "string", 1),
        ],
        "leases" => vec![
            ("Name", "string", 0),
            ("Holder", "string", 0),
            ("Age", "string", 0),
        ],
        "resourcequotas" => vec![
            ("Name", "string", 0),
            ("Age", "string", 0),
            ("Request", "string", 0),
            ("Limit", "string", 0),
        ],
        "limitranges" => vec![("Name", "string", 0), ("Created At", "date", 0)],
        other => super::stored_table::columns(other)
            .unwrap_or_else(|| vec![("Name", "string", 0), ("Age", "string", 0)]),
    };
    if matches!(
        resource.plural,
        "jobs" | "cronjobs" | "deployments" | "replicasets"
    ) {
        out.extend(workload);
    }
    out
}

pub(super) fn int(object: &Value, path: &[&str]) -> i64 {
    meta::at(object, path).and_then(Value::as_i64).unwrap_or(0)
}

pub(super) fn text(object: &Value, path: &[&str]) -> String {
    meta::str_at(object, path).unwrap_or_default().to_owned()
}

fn age(object: &Value, path: &[&str], now: jiff::Timestamp) -> String {
    meta::str_at(object, path)
        .and_then(meta::parse_time)
        .map_or_else(
            || "<unknown>".to_owned(),
            |t| human_duration(now.duration_since(t)),
        )
}

/// The cells of `object`'s row, in the order of [`columns`].
fn cells(resource: &ResourceType, object: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let name = Value::from(meta::name(object));
    if let Some(custom) = resource.custom {
        return custom_cells(custom, object, name, now);
    }
    let created = age(object, &["metadata", "creationTimestamp"], now);
    match resource.plural {
        "pods" => pod_cells(object, name, &created, now),
        "jobs" => job_cells(object, name, &created, now),
        "cronjobs" => cronjob_cells(object, name, &created, now),
        "deployments" => deployment_cells(object, name, &created),
        "replicasets" => replicaset_cells(object, name, &created),
        "events" => event_cells(object, &created, now),
        "namespaces" => vec![
            name,
            json!(text(object, &["status", "phase"])),
            json!(created),
        ],
        "nodes" => node_cells(object, name, &created),
        "configmaps" => {
            let data = ["data", "binaryData"]
                .iter()
                .map(|f| {
                    object
                        .get(f)
                        .and_then(Value::as_object)
                        .map_or(0, serde_json::Map::len)
                })
                .sum::<usize>();
            vec![name, json!(data), json!(created)]
        }
        "services" => service_cells(object, name, &created),
        "leases" => vec![
            name,
            json!(meta::str_at(object, &["spec", "holderIdentity"]).unwrap_or("<none>")),
            json!(created),
        ],
        "resourcequotas" => {
            let [request, limit] = quota_columns(object);
            vec![name, json!(created), json!(request), json!(limit)]
        }
        "limitranges" => vec![
            name,
            json!(text(object, &["metadata", "creationTimestamp"])),
        ],
        other => super::stored_table::cells(other, object, name.clone(), &created)
            .unwrap_or_else(|| vec![name, json!(created)]),
    }
}

/// A custom resource's columns: Name, then its `additionalPrinterColumns`, or Age when it declares none.
fn custom_columns(custom: &'static Custom) -> Vec<Column> {
    let mut out = vec![("Name", "string", 0)];
    if custom.columns.is_empty() {
        out.push(("Age", "date", 0));
    }
    out.extend(
        custom
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.kind.as_str(), c.priority)),
    );
    out
}

fn custom_cells(custom: &Custom, object: &Value, name: Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut out = vec![name];
    if custom.columns.is_empty() {
        out.push(json!(age(object, &["metadata", "creationTimestamp"], now)));
    }
    for column in &custom.columns {
        let cell = match (json_path(object, &column.json_path), column.kind.as_str()) {
            (None | Some(Value::Null), _) => Value::Null,
            (Some(Value::String(at)), "date") => meta::parse_time(at).map_or(Value::Null, |t| {
                json!(human_duration(now.duration_since(t)))
            }),
            (Some(Value::String(text)), _) => json!(text),
            (Some(value), "string") => json!(value.to_string()),
            (Some(value), _) => value.clone(),
        };
        out.push(cell);
    }
    out
}

/// The value at a simple JSON path (`.status.phase`, `.spec.ports[0].port`, with or without braces).
fn json_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut value = object;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (field, indices) = segment.split_once('[').unwrap_or((segment, ""));
        if !field.is_empty() {
            value = value.get(field)?;
        }
        for index in indices.split('[').filter(|i| !i.is_empty()) {
            value = value.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(value)
}

/// The container names and images of the pod template under `spec_path`, comma-separated.
pub(super) fn template_columns(object: &Value, spec_path: &[&str]) -> [Value; 2] {
    let mut path = spec_path.to_vec();
    path.extend(["template", "spec", "containers"]);
    let containers = meta::at(object, &path)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    let images: Vec<&str> = containers
        .iter()
        .filter_map(|c| c.get("image").and_then(Value::as_str))
        .collect();
    [Value::from(names.join(",")), Value::from(images.join(","))]
}

/// The label selector at `path`, as kubectl prints it.
pub(super) fn selector_column(object: &Value, path: &[&str]) -> Value {
    Value::from(selector_text(meta::at(object, path)))
}

/// A pod row: ready containers, status, restarts, age, IP and node.
fn pod_cells(object: &Value, name: Value, created: &str, now: jiff::Timestamp) -> Vec<Value> {
    let statuses = meta::at(object, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let total = meta::at(object, &["spec", "containers"])
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let ready = statuses
        .iter()
        .filter(|s| s.get("ready") == Some(&Value::Bool(true)))
        .count();
    let restarts: i64 = statuses
        .iter()
        .map(|s| s.get("restartCount").and_then(Value::as_i64).unwrap_or(0))
        .sum();
    // As the API server's pod printer: with restarts, how long ago the latest previous run ended.
    let last_restart = statuses
        .iter()
        .filter_map(|s| meta::str_at(s, &["lastState", "terminated", "finishedAt"]))
        .filter_map(meta::parse_time)
        .max();
    let restarts = match last_restart {
        Some(at) if restarts != 0 => {
            format!(
                "{restarts} ({} ago)",
                human_duration(now.duration_since(at))
            )
        }
        _ => restarts.to_string(),
    };
    vec![
        name,
        json!(format!("{ready}/{total}")),
        json!(pod_status(object, &statuses)),
        json!(restarts),
        json!(created),
        json!(meta::str_at(object, &["status", "podIP"]).unwrap_or("<none>")),
        json!(meta::str_at(object, &["spec", "nodeName"]).unwrap_or("<none>")),
        json!("<none>"),
        json!("<none>"),
    ]
}

/// A Job row: status, completions, duration, age, containers, images and selector.
fn job_cells(object: &Value, name: Value, created: &str, now: jiff::Timestamp) -> Vec<Value> {
    let succeeded = int(object, &["status", "succeeded"]);
    let completions = match meta::at(object, &["spec", "completions"]).and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(object, &["spec", "parallelism"]) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = meta::str_at(object, &["status", "startTime"]).and_then(meta::parse_time);
    let end = meta::str_at(object, &["status", "completionTime"])
        .and_then(meta::parse_time)
        .unwrap_or(now);
    let duration = start
        .map(|s| human_duration(end.duration_since(s)))
        .unwrap_or_default();
    let [containers, images] = template_columns(object, &["spec"]);
    vec![
        name,
        json!(job_status(object)),
        json!(completions),
        json!(duration),
        json!(created),
        containers,
        images,
        selector_column(object, &["spec", "selector"]),
    ]
}

/// A CronJob row: schedule, time zone, suspend, active Jobs, last schedule, age, containers, images and selector.
fn cronjob_cells(object: &Value, name: Value, created: &str, now: jiff::Timestamp) -> Vec<Value> {
    let active = meta::at(object, &["status", "active"])
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let last = if meta::at(object, &["status", "lastScheduleTime"]).is_some() {
        age(object, &["status", "lastScheduleTime"], now)
    } else {
        "<none>".to_owned()
    };
    let [containers, images] = template_columns(object, &["spec", "jobTemplate", "spec"]);
    vec![
        name,
        json!(text(object, &["spec", "schedule"])),
        json!(meta::str_at(object, &["spec", "timeZone"]).unwrap_or("<none>")),
        json!(
            meta::at(object, &["spec", "suspend"])
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        json!(active),
        json!(last),
        json!(created),
        containers,
        images,
        selector_column(object, &["spec", "jobTemplate", "spec", "selector"]),
    ]
}

/// A Deployment row: ready/wanted, up-to-date, available, age, containers, images and selector.
fn deployment_cells(object: &Value, name: Value, created: &str) -> Vec<Value> {
    let [containers, images] = template_columns(object, &["spec"]);
    vec![
        name,
        json!(format!(
            "{}/{}",
            int(object, &["status", "readyReplicas"]),
            int(object, &["spec", "replicas"])
        )),
        json!(int(object, &["status", "updatedReplicas"])),
        json!(int(object, &["status", "availableReplicas"])),
        json!(created),
        containers,
        images,
        selector_column(object, &["spec", "selector"]),
    ]
}

/// A ReplicaSet row: desired, current, ready, age, containers, images and selector.
fn replicaset_cells(object: &Value, name: Value, created: &str) -> Vec<Value> {
    let [containers, images] = template_columns(object, &["spec"]);
    vec![
        name,
        json!(int(object, &["spec", "replicas"])),
        json!(int(object, &["status", "replicas"])),
        json!(int(object, &["status", "readyReplicas"])),
        json!(created),
        containers,
        images,
        selector_column(object, &["spec", "selector"]),
    ]
}

/// An Event row: last seen, type, reason, object and message.
fn event_cells(object: &Value, created: &str, now: jiff::Timestamp) -> Vec<Value> {
    let last_seen = ["lastTimestamp", "eventTime", "firstTimestamp"]
        .iter()
        .find(|f| meta::at(object, &[f]).is_some_and(|v| !v.is_null()))
        .map_or_else(|| created.to_owned(), |f| age(object, &[f], now));
    let involved = format!(
        "{}/{}",
        text(object, &["involvedObject", "kind"]).to_lowercase(),
        text(object, &["involvedObject", "name"])
    );
    vec![
        json!(last_seen),
        json!(text(object, &["type"])),
        json!(text(object, &["reason"])),
        json!(involved),
        json!(text(object, &["message"])),
    ]
}

/// A node row: status, roles, age, version, addresses, OS image, kernel and container runtime.
fn node_cells(object: &Value, name: Value, created: &str) -> Vec<Value> {
    let ready = conditions(object)
        .iter()
        .any(|(t, s)| t == "Ready" && s == "True");
    let roles: Vec<&str> = meta::labels(object)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    let address = |kind: &str| {
        meta::at(object, &["status", "addresses"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(kind))
            .and_then(|a| a.get("address").and_then(Value::as_str))
            .unwrap_or("<none>")
            .to_owned()
    };
    vec![
        name,
        json!(if ready { "Ready" } else { "NotReady" }),
        json!(if roles.is_empty() {
            "<none>".to_owned()
        } else {
            roles.join(",")
        }),
        json!(created),
        json!(text(object, &["status", "nodeInfo", "kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(text(object, &["status", "nodeInfo", "osImage"])),
        json!(text(object, &["status", "nodeInfo", "kernelVersion"])),
        json!(text(
            object,
            &["status", "nodeInfo", "containerRuntimeVersion"]
        )),
    ]
}

/// A Service row: type, cluster IP, external IP, ports, age and selector.
fn service_cells(object: &Value, name: Value, created: &str) -> Vec<Value> {
    let ports: Vec<String> = meta::at(object, &["spec", "ports"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "{}/{}",
                p.get("port").and_then(Value::as_i64).unwrap_or(0),
                p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
            )
        })
        .collect();
    let service_selector = meta::at(object, &["spec", "selector"])
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        });
    vec![
        name,
        json!(text(object, &["spec", "type"])),
        json!(meta::str_at(object, &["spec", "clusterIP"]).unwrap_or("<none>")),
        json!("<none>"),
        json!(if ports.is_empty() {
            "<none>".to_owned()
        } else {
            ports.join(",")
        }),
        json!(created),
        json!(service_selector.unwrap_or_else(|| "<none>".to_owned())),
    ]
}

/// `name: used/hard` for each resource of `spec.hard`, sorted by name; `limits.*` go to the second column.
fn quota_columns(quota: &Value) -> [String; 2] {
    let mut columns: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    let hard = meta::at(quota, &["spec", "hard"]).and_then(Value::as_object);
    for name in hard.into_iter().flat_map(serde_json::Map::keys) {
        let value = |field: &str| meta::str_at(quota, &["status", field, name]).unwrap_or("0");
        let column = usize::from(name.split('.').next() == Some("limits") && name.contains('.'));
        columns[column].push(format!("{name}: {}/{}", value("used"), value("hard")));
    }
    columns.map(|parts| parts.join(", "))
}

fn conditions(object: &Value) -> Vec<(String, String)> {
    meta::at(object, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| (text(c, &["type"]), text(c, &["status"])))
        .collect()
}

fn job_status(object: &Value) -> &'static str {
    let conditions = conditions(object);
    let has = |kind: &str| conditions.iter().any(|(t, s)| t == kind && s == "True");
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if meta::is_deleting(object) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

fn pod_status(pod: &Value, statuses: &[Value]) -> String {
    let mut reason = meta::str_at(pod, &["status", "reason"])
        .or_else(|| meta::str_at(pod, &["status", "phase"]))
        .unwrap_or("Pending")
        .to_owned();
    for status in statuses.iter().rev() {
        if let Some(waiting) =
            meta::str_at(status, &["state", "waiting", "reason"]).filter(|r| !r.is_empty())
        {
            waiting.clone_into(&mut reason);
        } else if let Some(terminated) = meta::at(status, &["state", "terminated"]) {
            reason = match terminated.get("reason").and_then(Value::as_str) {
                Some(r) if !r.is_empty() => r.to_owned(),
                _ => match terminated.get("signal").and_then(Value::as_i64) {
                    Some(signal) if signal != 0 => format!("Signal:{signal}"),
                    _ => format!(
                        "ExitCode:{}",
                        terminated
                            .get("exitCode")
                            .and_then(Value::as_i64)
                            .unwrap_or(0)
                    ),
                },
            };
        }
    }
    if meta::is_deleting(pod) && !matches!(reason.as_str(), "Completed" | "Succeeded" | "Failed") {
        return "Terminating".to_owned();
    }
    reason
}

fn selector_text(selector: Option<&Value>) -> String {
    let Some(selector) = selector else {
        return "<none>".to_owned();
    };
    let mut parts: Vec<String> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let key = text(expression, &["key"]);
        parts.push(match meta::str_at(expression, &["operator"]) {
            Some("In") => format!("{key} in ({})", values.join(",")),
            Some("NotIn") => format!("{key} notin ({})", values.join(",")),
            Some("Exists") => key,
            _ => format!("!{key}"),
        });
    }
    if parts.is_empty() {
        "<none>".to_owned()
    } else {
        parts.join(",")
    }
}

/// kubectl's "human duration": `<invalid>` if more than a second in the future, then `Ns`, `XmYs`, `Xm`, `XhYm`,
/// `Xh`, `XdYh`, `Xd`, `XyYd`, `Xy`.
pub(crate) fn human_duration(duration: jiff::SignedDuration) -> String {
    let seconds = duration.as_secs();
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    let seconds = seconds.max(0);
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86400);
    let years = days / 365;
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if minutes < 10 => match s % 60 {
            0 => format!("{minutes}m"),
            rest => format!("{minutes}m{rest}s"),
        },
        _ if hours < 3 => format!("{minutes}m"),
        _ if hours < 8 => match minutes % 60 {
            0 => format!("{hours}h"),
            rest => format!("{hours}h{rest}m"),
        },
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 192 => match hours % 24 {
            0 => format!("{days}d"),
            rest => format!("{days}d{rest}h"),
        },
        _ if years < 2 => format!("{days}d"),
        _ if years < 8 => match days % 365 {
            0 => format!("{years}y"),
            rest => format!("{years}y{rest}d"),
        },
        _ => format!("{years}y"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resources::find;

    #[test]
    fn human_durations_follow_kubectl() {
        let d = jiff::SignedDuration::from_secs;
        assert_eq!(human_duration(d(5)), "5s");
        assert_eq!(human_duration(d(125)), "2m5s");
        assert_eq!(human_duration(d(600)), "10m");
        assert_eq!(human_duration(d(4 * 3600 + 120)), "4h2m");
        assert_eq!(human_duration(d(30 * 3600)), "30h");
        assert_eq!(human_duration(d(3 * 86400 + 3600)), "3d1h");
        assert_eq!(human_duration(d(-10)), "<invalid>");
    }

    #[test]
    fn job_rows_show_status_and_completions() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let job = json!({"metadata": {"name": "j", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"completions": 2, "selector": {"matchLabels": {"a": "b"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
            "status": {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}],
                "startTime": "2020-01-01T00:00:00Z", "completionTime": "2020-01-01T00:00:07Z"}});
        let table = table(
            jobs,
            &[job],
            Some("5".into()),
            jiff::Timestamp::now(),
            RowObject::Metadata,
        );
        assert_eq!(
            table["rows"][0]["cells"],
            json!([
                "j",
                "Complete",
                "2/2",
                "7s",
                table["rows"][0]["cells"][4],
                "c",
                "busybox",
                "a=b"
            ])
        );
        assert_eq!(table["columnDefinitions"][1]["name"], "Status");
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["metadata"]["resourceVersion"], "5");
    }
}
