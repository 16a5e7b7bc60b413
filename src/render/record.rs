//! The stored record of a scheduled or continuous job: the custom resource (`ScheduledJob` or `ContinuousJob`,
//! group `jobs-api.toolforge.org`) in which upstream's jobs-api keeps each job's definition, and which it lists
//! as its source of truth (reference/toolforge.md §3.8, SPEC §13). One-offs have none.
//!
//! The `spec` is upstream's job model with only the fields that are set: always `job_name`, `tool_name`,
//! `job_type`, `cmd` and `image.short_name`, then each field whose value is not upstream's default, under
//! upstream's name (`memory`, `filelog_stdout`, `health_check`, …). Our own extensions (`trigger`, `timezone`, …)
//! are not upstream's and are not stored. The record carries the workload's labels, so ownership is read from it as from any other
//! object.

use serde_json::{Map, Value, json};

use crate::config::Job;
use crate::config::job::JobKind;
use crate::model::Kind;
use crate::model::labels::{APPLYSET_PART_OF, INVENTORY};
use crate::render::canonical::{CanonicalJob, DEFAULT_CPU_TEXT, DEFAULT_MEMORY_TEXT};
use crate::render::context::RenderContext;
use crate::render::workloads::Metadata;

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

/// The record of `job`, or `None` for a one-off. It carries the workload's labels and annotations (our hash and fingerprint:
/// a create whose answer was lost recognises its record by them).
pub(crate) fn record(
    job: &Job,
    canonical: &CanonicalJob,
    context: &RenderContext,
    metadata: &Metadata,
) -> Option<Value> {
    let kind = match job.kind {
        JobKind::OneOff { .. } => return None,
        JobKind::Scheduled { .. } => RecordKind::Scheduled,
        JobKind::Continuous(_) | JobKind::Webservice(_) => RecordKind::Continuous,
    };
    Some(json!({
        "apiVersion": api_version(),
        "kind": kind.kind(),
        // As an `ObjectMeta` of these four fields serialises, without building one first.
        "metadata": {
            "name": job.name,
            "namespace": context.namespace,
            "labels": metadata.member_labels,
            "annotations": metadata.annotations,
        },
        "spec": spec(job, canonical, context),
    }))
}

/// Upstream's sparse job model of `job`: its identity, then each field whose value is not the default, in the
/// normalised form upstream's API shows (`memory: 1.0Gi`, `cpu: "0.5"`, absolute log paths). Leaving defaults out
/// instead of keeping what the file happened to spell out makes equal definitions equal records: a file written
/// with every default (`dump`'s) and the same file without them store the same record.
fn spec(job: &Job, canonical: &CanonicalJob, context: &RenderContext) -> Value {
    let mut spec = Map::new();
    let mut set = |key: &str, value: Value| {
        spec.insert(key.to_owned(), value);
    };
    let build_service = job.image_name.is_build_service();
    set("job_name", json!(job.name));
    set("tool_name", json!(context.tool.as_str()));
    set(
        "job_type",
        json!(match canonical.kind {
            Kind::Scheduled => "scheduled",
            // Upstream's newest API turns a webservice into a continuous job (jobs-api.md §2).
            _ => "continuous",
        }),
    );
    if let Some(command) = &canonical.command {
        set("cmd", json!(command));
    }
    set("image", json!({"short_name": job.image}));
    let default_filelog = !build_service && canonical.kind != Kind::Webservice;
    if canonical.filelog != default_filelog {
        set("filelog", json!(canonical.filelog));
    }
    for (key, path, extension) in [
        ("filelog_stdout", &canonical.filelog_stdout, "out"),
        ("filelog_stderr", &canonical.filelog_stderr, "err"),
    ] {
        let default = format!("{}/{}.{extension}", context.home, job.name);
        if let Some(path) = path.as_ref().filter(|path| **path != default) {
            set(key, json!(path));
        }
    }
    let defaults = [
        ("emails", canonical.emails.as_str(), "none"),
        (
            "mount",
            canonical.mount.as_str(),
            if build_service { "none" } else { "all" },
        ),
        ("memory", canonical.mem.as_str(), DEFAULT_MEMORY_TEXT),
        ("cpu", canonical.cpu.as_str(), DEFAULT_CPU_TEXT),
    ];
    for (key, value, default) in defaults {
        if value != default {
            set(key, json!(value));
        }
    }
    if let Some(schedule) = &canonical.schedule {
        set("schedule", json!(schedule));
    }
    if let Some(retry) = canonical.retry.filter(|retry| *retry > 0) {
        set("retry", json!(retry));
    }
    if let Some(timeout) = canonical.timeout {
        set("timeout", json!(timeout));
    }
    if matches!(canonical.kind, Kind::Continuous | Kind::Webservice) {
        set("continuous", json!(true));
        long_running(canonical, &mut set);
    }
    Value::Object(spec)
}

fn long_running(canonical: &CanonicalJob, set: &mut impl FnMut(&str, Value)) {
    if let Some(replicas) = canonical.replicas.filter(|replicas| *replicas != 1) {
        set("replicas", json!(replicas));
    }
    if let Some(port) = canonical.port {
        set("port", json!(port));
    }
    if let Some(protocol) = canonical
        .port_protocol
        .as_ref()
        .filter(|protocol| *protocol != "tcp")
    {
        set("port_protocol", json!(protocol));
    }
    match (&canonical.health_check_script, &canonical.health_check_http) {
        (Some(script), _) => set("health_check", json!({"type": "script", "script": script})),
        (None, Some(path)) => set("health_check", json!({"type": "http", "path": path})),
        (None, None) => {}
    }
    if let Some(publish) = &canonical.publish {
        set("publish", json!(publish));
    }
}

/// Whether the live record already is `rendered`: the same spec, and upstream's labels on it. Our membership
/// labels do not count (a record goes with its workload, which says whose it is), nor do labels and annotations
/// somebody else added.
pub fn is_current(live: &Value, rendered: &Value) -> bool {
    let live_labels = &live["metadata"]["labels"];
    live["spec"] == rendered["spec"]
        && rendered["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| !MEMBERSHIP.contains(&key.as_str()))
            .all(|(key, value)| live_labels.get(key) == Some(value))
}
