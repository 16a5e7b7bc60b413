//! The stored record of a scheduled or continuous job: the custom resource (`ScheduledJob` or `ContinuousJob`,
//! group `jobs-api.toolforge.org`) in which upstream's jobs-api keeps each job's definition, and which it lists
//! as its source of truth (reference/toolforge.md §3.8, SPEC §13). One-offs have none.
//!
//! The `spec` is upstream's job model with only the fields the user set: always `job_name`, `tool_name`,
//! `job_type`, `cmd` and `image.short_name`, then each key the file (or the API request) gave, under upstream's
//! name (`memory`, `filelog_stdout`, `health_check`, …) and with the value as written. Our own extensions
//! (`trigger`, `timezone`, …) are not upstream's and are not stored. The record carries the workload's labels,
//! so ownership is read from it as from any other object.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};

use crate::config::Job;
use crate::config::job::{HealthCheck, JobKind, Protocol, Service};
use crate::model::labels::{APPLYSET_PART_OF, INVENTORY};
use crate::render::canonical::CanonicalJob;
use crate::render::context::RenderContext;
use crate::render::label_sets;

const MEMBERSHIP: [&str; 2] = [INVENTORY, APPLYSET_PART_OF];

/// The API group of upstream's stored records.
pub const GROUP: &str = "jobs-api.toolforge.org";
/// Its only version.
pub const VERSION: &str = "v1";

/// The two kinds of record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordKind {
    Scheduled,
    Continuous,
}

impl RecordKind {
    pub const ALL: [RecordKind; 2] = [RecordKind::Continuous, RecordKind::Scheduled];

    /// The custom resource's kind.
    pub fn kind(self) -> &'static str {
        match self {
            RecordKind::Scheduled => "ScheduledJob",
            RecordKind::Continuous => "ContinuousJob",
        }
    }

    /// The custom resource's plural name, as in its URL.
    pub fn plural(self) -> &'static str {
        match self {
            RecordKind::Scheduled => "scheduled-jobs",
            RecordKind::Continuous => "continuous-jobs",
        }
    }

    /// The record kind of a custom resource kind.
    pub fn from_kind(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|record| record.kind() == kind)
    }
}

/// `jobs-api.toolforge.org/v1`.
pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

/// The record of `job`, or `None` for a one-off. `annotations` are the workload's own (our hash and fingerprint:
/// a create whose answer was lost recognises its record by them).
pub fn record(
    job: &Job,
    canonical: &CanonicalJob,
    context: &RenderContext,
    annotations: &BTreeMap<String, String>,
) -> Option<Value> {
    let kind = match job.kind {
        JobKind::OneOff { .. } => return None,
        JobKind::Scheduled { .. } => RecordKind::Scheduled,
        JobKind::Continuous(_) | JobKind::Webservice(_) => RecordKind::Continuous,
    };
    let metadata = ObjectMeta {
        name: Some(job.name.clone()),
        namespace: Some(context.namespace.clone()),
        labels: Some(label_sets::with_membership(
            label_sets::workload(context.tool.as_str(), canonical),
            context,
        )),
        annotations: Some(annotations.clone()),
        ..ObjectMeta::default()
    };
    Some(json!({
        "apiVersion": api_version(),
        "kind": kind.kind(),
        // Plain metadata always serialises.
        "metadata": serde_json::to_value(metadata).expect("metadata serialises"),
        "spec": spec(job, context.tool.as_str()),
    }))
}

/// Upstream's sparse job model of `job`: its identity, then what the user set.
fn spec(job: &Job, tool: &str) -> Value {
    let mut spec = Map::new();
    let mut set = |key: &str, value: Value| {
        spec.insert(key.to_owned(), value);
    };
    set("job_name", json!(job.name));
    set("tool_name", json!(tool));
    set(
        "job_type",
        json!(match job.kind {
            JobKind::Scheduled { .. } => "scheduled",
            // Upstream's newest API turns a webservice into a continuous job (jobs-api.md §2).
            _ => "continuous",
        }),
    );
    if let Some(command) = &job.command {
        set("cmd", json!(command));
    }
    set("image", json!({"short_name": job.image}));
    if let Some(enabled) = job.file_log.enabled {
        set("filelog", json!(enabled));
    }
    if let Some(stdout) = &job.file_log.stdout {
        set("filelog_stdout", json!(stdout));
    }
    if let Some(stderr) = &job.file_log.stderr {
        set("filelog_stderr", json!(stderr));
    }
    if let Some(emails) = job.emails {
        set("emails", json!(emails.name()));
    }
    if let Some(mount) = job.mount {
        set("mount", json!(mount.name()));
    }
    if let Some(mem) = &job.mem {
        set("memory", json!(mem.as_str()));
    }
    if let Some(cpu) = &job.cpu {
        set("cpu", json!(cpu.as_str()));
    }
    match &job.kind {
        JobKind::OneOff { .. } => {}
        JobKind::Scheduled {
            schedule,
            retry,
            timeout,
            timezone: _,
        } => {
            set("schedule", json!(schedule.expression));
            if let Some(retry) = retry {
                set("retry", json!(retry));
            }
            if let Some(timeout) = timeout {
                set("timeout", json!(timeout));
            }
        }
        JobKind::Continuous(service) | JobKind::Webservice(service) => {
            set("continuous", json!(true));
            long_running(service, &mut set);
        }
    }
    Value::Object(spec)
}

fn long_running(service: &Service, set: &mut impl FnMut(&str, Value)) {
    if let Some(replicas) = service.replicas {
        set("replicas", json!(replicas));
    }
    if let Some(port) = service.port {
        set("port", json!(port.number));
        if port.protocol == Protocol::Udp {
            set("port_protocol", json!("udp"));
        }
    }
    match &service.health_check {
        Some(HealthCheck::Script(script)) => {
            set("health_check", json!({"type": "script", "script": script}));
        }
        Some(HealthCheck::Http(path)) => set("health_check", json!({"type": "http", "path": path})),
        None => {}
    }
    if let Some(publish) = &service.publish {
        set("publish", json!(publish));
    }
}

/// Whether the live record already is `rendered`: the same spec, and upstream's labels on it. Our membership
/// labels do not count (a record goes with its workload, which says whose it is), nor do labels and annotations
/// somebody else added.
pub fn is_current(live: &Value, rendered: &Value) -> bool {
    let labels = |object: &Value| -> BTreeMap<String, Value> {
        object["metadata"]["labels"]
            .as_object()
            .map(|labels| labels.clone().into_iter().collect())
            .unwrap_or_default()
    };
    let live_labels = labels(live);
    live["spec"] == rendered["spec"]
        && labels(rendered)
            .iter()
            .filter(|(key, _)| !MEMBERSHIP.contains(&key.as_str()))
            .all(|(key, value)| live_labels.get(key) == Some(value))
}
