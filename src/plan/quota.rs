//! Quota headroom: how much of the namespace's `ResourceQuota` is used, and what the plan would add or free.
//!
//! Toolforge tools run into their quotas daily (15 Jobs, 50 CronJobs, 3 Deployments, CPU and memory), and
//! upstream only said so after the fact. For every resource a quota limits and the plan touches — object counts
//! of the kinds we write, pods, CPU and memory requests and limits — the plan shows `used`, `hard` and the change:
//! objects created minus objects deleted, and for pods, CPU and memory what the written pods request minus what
//! the deleted or overwritten ones did. Pods of one-off Jobs count while they run, so a run needs room too;
//! CronJobs add no pods until they fire. A change that would go over `hard` is an error of the plan: the server
//! would refuse the write.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceQuota;
use serde::Serialize;
use serde_json::Value;

use crate::config::quantity::Quantity;
use crate::plan::{LiveState, ObjectKind, Plan, WriteVerb};

/// One quota'd resource and the plan's effect on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaUse {
    /// The `ResourceQuota`'s name.
    pub quota: String,
    /// The resource as the quota names it (`count/jobs.batch`, `limits.memory`).
    pub resource: String,
    pub used: String,
    pub hard: String,
    /// What applying the plan adds (negative: frees), in the resource's unit; `0` when unchanged.
    pub change: String,
    /// Applying the plan would go over `hard`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exceeded: bool,
}

/// Fills `plan.quota` from the namespace's quotas, for the resources the plan can change.
pub fn check(plan: &mut Plan, live: &LiveState, quotas: &[ResourceQuota]) {
    let changes = changes(plan, live);
    let mut uses = Vec::new();
    for quota in quotas {
        let name = quota.metadata.name.clone().unwrap_or_default();
        let status = quota.status.as_ref();
        let hard_map = status
            .and_then(|status| status.hard.clone())
            .or_else(|| quota.spec.as_ref().and_then(|spec| spec.hard.clone()))
            .unwrap_or_default();
        let used_map = status
            .and_then(|status| status.used.clone())
            .unwrap_or_default();
        for (resource, hard) in &hard_map {
            let Some(unit) = Unit::of(resource) else {
                continue;
            };
            let Ok(hard) = Quantity::parse(&hard.0) else {
                continue;
            };
            let in_use = used_map
                .get(resource)
                .and_then(|amount| Quantity::parse(&amount.0).ok())
                .map_or(0, |amount| amount.nanos());
            let change = changes
                .get(canonical_resource(resource))
                .copied()
                .unwrap_or(0);
            uses.push(QuotaUse {
                quota: name.clone(),
                resource: resource.clone(),
                used: unit.format(in_use),
                hard: unit.format(hard.nanos()),
                change: unit.format_change(change),
                exceeded: change > 0 && in_use + change > hard.nanos(),
            });
        }
    }
    uses.sort_by(|a, b| (&a.quota, &a.resource).cmp(&(&b.quota, &b.resource)));
    plan.quota = uses;
}

/// How a resource's amounts read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Count,
    Cpu,
    Memory,
}

const NANOS: i128 = 1_000_000_000;

impl Unit {
    fn of(resource: &str) -> Option<Self> {
        match canonical_resource(resource) {
            "requests.cpu" | "limits.cpu" => Some(Unit::Cpu),
            "requests.memory" | "limits.memory" => Some(Unit::Memory),
            "pods"
            | "services"
            | "count/jobs.batch"
            | "count/cronjobs.batch"
            | "count/deployments.apps" => Some(Unit::Count),
            _ => None,
        }
    }

    fn format(self, nanos: i128) -> String {
        match self {
            Unit::Count => (nanos / NANOS).to_string(),
            Unit::Cpu if nanos % NANOS == 0 => (nanos / NANOS).to_string(),
            Unit::Cpu => format!("{}m", ceil_div(nanos, NANOS / 1000)),
            Unit::Memory => {
                let bytes = ceil_div(nanos, NANOS);
                let (gibi, mebi) = (1 << 30, 1 << 20);
                if bytes % gibi == 0 {
                    format!("{}Gi", bytes / gibi)
                } else if bytes % mebi == 0 {
                    format!("{}Mi", bytes / mebi)
                } else {
                    bytes.to_string()
                }
            }
        }
    }

    fn format_change(self, nanos: i128) -> String {
        match nanos {
            0 => "0".to_owned(),
            n if n > 0 => format!("+{}", self.format(n)),
            n => format!("-{}", self.format(-n)),
        }
    }
}

/// `a / b` rounded up, for non-negative `a` and positive `b` (`i128::div_ceil` is not stable).
fn ceil_div(a: i128, b: i128) -> i128 {
    (a + b - 1) / b
}

/// The name a quota resource is counted under: `cpu` is `requests.cpu`, `count/services` is `services`, ….
fn canonical_resource(resource: &str) -> &str {
    match resource {
        "cpu" => "requests.cpu",
        "memory" => "requests.memory",
        "count/pods" => "pods",
        "count/services" => "services",
        other => other,
    }
}

/// The plan's net change per canonical resource, in nano-units.
fn changes(plan: &Plan, live: &LiveState) -> BTreeMap<&'static str, i128> {
    let mut changes = BTreeMap::new();
    let mut add = |object: &Value, kind: ObjectKind, sign: i128| {
        *changes.entry(count_resource(kind)).or_insert(0) += sign * NANOS;
        for (resource, amount) in pod_resources(object, kind) {
            *changes.entry(resource).or_insert(0) += sign * amount;
        }
    };
    for action in &plan.actions {
        for delete in &action.deletes {
            if let Some(object) = live.manifest(delete.object.kind, &delete.object.name) {
                add(&object, delete.object.kind, -1);
            }
        }
        for write in &action.writes {
            match write.verb {
                WriteVerb::Create => add(&write.manifest.value(), write.object.kind, 1),
                WriteVerb::Update => {
                    // Overwritten in place: the count stays, the pods' resources change.
                    if let Some(object) = live.manifest(write.object.kind, &write.object.name) {
                        add(&object, write.object.kind, -1);
                    }
                    add(&write.manifest.value(), write.object.kind, 1);
                }
                // The Job and its pod count already; resuming lets the pod start.
                WriteVerb::Label | WriteVerb::Resume | WriteVerb::Patch => {}
            }
        }
    }
    changes
}

fn count_resource(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Job => "count/jobs.batch",
        ObjectKind::CronJob => "count/cronjobs.batch",
        ObjectKind::Deployment => "count/deployments.apps",
        ObjectKind::Service => "services",
        ObjectKind::ContinuousJob => "count/continuous-jobs.jobs-api.toolforge.org",
        ObjectKind::ScheduledJob => "count/scheduled-jobs.jobs-api.toolforge.org",
    }
}

/// Pods and their requests and limits that a workload keeps running (CronJobs: none until they fire).
fn pod_resources(object: &Value, kind: ObjectKind) -> Vec<(&'static str, i128)> {
    let pods = match kind {
        ObjectKind::Job => object["spec"]["parallelism"].as_i64().unwrap_or(1),
        ObjectKind::Deployment => object["spec"]["replicas"].as_i64().unwrap_or(1),
        ObjectKind::CronJob
        | ObjectKind::Service
        | ObjectKind::ContinuousJob
        | ObjectKind::ScheduledJob => return Vec::new(),
    };
    let pods = i128::from(pods);
    let mut resources = vec![("pods", pods * NANOS)];
    let containers = object["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (resource, section, name) in [
        ("requests.cpu", "requests", "cpu"),
        ("requests.memory", "requests", "memory"),
        ("limits.cpu", "limits", "cpu"),
        ("limits.memory", "limits", "memory"),
    ] {
        let per_pod: i128 = containers
            .iter()
            .filter_map(|container| container["resources"][section][name].as_str())
            .filter_map(|text| Quantity::parse(text).ok())
            .map(|quantity| quantity.nanos())
            .sum();
        resources.push((resource, pods * per_pod));
    }
    resources
}
