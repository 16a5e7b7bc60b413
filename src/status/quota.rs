//! The tool's quota as upstream's jobs-api shows it (`GET /quotas`, `toolforge jobs quota`): three categories —
//! running jobs (pods, Jobs, CPU, memory: used and limit, from the namespace's `ResourceQuota`), per-job limits
//! (the `LimitRange`'s container maximum; no "used") and job definitions (CronJobs, Deployments). Values are
//! written as upstream writes them: CPU as a decimal number of cores (`4.0`), memory in GiB (`8.0Gi`), counts as
//! integers.

use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
use serde::Serialize;

use crate::config::quantity::Quantity;
use crate::render::quantities::{Memory, cpu_text};

/// One category: its name and items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Category {
    pub name: &'static str,
    pub items: Vec<Item>,
}

/// One item: upstream's label, the Kubernetes resource it reads, used (none for per-job limits) and limit
/// (none when nothing limits it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    pub name: &'static str,
    pub resource: &'static str,
    pub used: Option<String>,
    pub limit: Option<String>,
}

/// What a resource counts, for formatting.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Count,
    Cores,
    Bytes,
}

const RUNNING: [(&str, &str, Unit); 4] = [
    (
        "Total running jobs at once (Kubernetes pods)",
        "pods",
        Unit::Count,
    ),
    (
        "Running one-off and cron jobs",
        "count/jobs.batch",
        Unit::Count,
    ),
    ("CPU", "limits.cpu", Unit::Cores),
    ("Memory", "limits.memory", Unit::Bytes),
];
const PER_JOB: [(&str, &str, Unit); 2] = [
    ("CPU", "cpu", Unit::Cores),
    ("Memory", "memory", Unit::Bytes),
];
const DEFINITIONS: [(&str, &str, Unit); 2] = [
    ("Cron jobs", "count/cronjobs.batch", Unit::Count),
    (
        "Continuous jobs (including web services)",
        "count/deployments.apps",
        Unit::Count,
    ),
];

/// The three categories, every item in each.
pub fn categories(quotas: &[ResourceQuota], limit_ranges: &[LimitRange]) -> [Category; 3] {
    [
        Category {
            name: "Running jobs",
            items: quota_items(quotas, &RUNNING),
        },
        Category {
            name: "Per-job limits",
            items: PER_JOB
                .iter()
                .map(|&(name, resource, unit)| Item {
                    name,
                    resource,
                    used: None,
                    limit: container_max(limit_ranges, resource).map(|max| format(max, unit)),
                })
                .collect(),
        },
        Category {
            name: "Job definitions",
            items: quota_items(quotas, &DEFINITIONS),
        },
    ]
}

/// Used and hard limit of each resource, from the first quota that limits it.
fn quota_items(
    quotas: &[ResourceQuota],
    resources: &[(&'static str, &'static str, Unit)],
) -> Vec<Item> {
    resources
        .iter()
        .map(|&(name, resource, unit)| {
            let limited = quotas.iter().find_map(|quota| {
                let status = quota.status.as_ref();
                let hard = status
                    .and_then(|status| status.hard.as_ref())
                    .or_else(|| quota.spec.as_ref().and_then(|spec| spec.hard.as_ref()))?
                    .get(resource)?;
                let used = status
                    .and_then(|status| status.used.as_ref())
                    .and_then(|used| used.get(resource))
                    .map_or("0", |used| used.0.as_str());
                Some((used, hard.0.as_str()))
            });
            Item {
                name,
                resource,
                used: Some(format(limited.map_or("0", |(used, _)| used), unit)),
                limit: limited.map(|(_, hard)| format(hard, unit)),
            }
        })
        .collect()
}

/// The `Container` maximum of `resource` in the first `LimitRange` that has one.
fn container_max<'a>(limit_ranges: &'a [LimitRange], resource: &str) -> Option<&'a str> {
    limit_ranges
        .iter()
        .filter_map(|range| range.spec.as_ref())
        .flat_map(|spec| &spec.limits)
        .filter(|item| item.type_ == "Container")
        .find_map(|item| item.max.as_ref()?.get(resource))
        .map(|max| max.0.as_str())
}

/// A quantity as upstream writes it; a text that is not a quantity is shown as it is.
fn format(text: &str, unit: Unit) -> String {
    let Ok(quantity) = Quantity::parse(text) else {
        return text.to_owned();
    };
    match unit {
        Unit::Count => quantity
            .nanos()
            .checked_div(1_000_000_000)
            .map_or_else(|| text.to_owned(), |count| count.to_string()),
        Unit::Cores => cpu_text(&quantity),
        Unit::Bytes => Memory::of(&quantity).limit_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_values_from_the_quota_and_the_limit_range() {
        let quota: ResourceQuota = serde_json::from_value(json!({
            "metadata": {"name": "tool-mytool"},
            "spec": {"hard": {"pods": "16", "count/jobs.batch": "15", "limits.cpu": "8",
                "limits.memory": "8Gi", "count/cronjobs.batch": "50", "count/deployments.apps": "16"}},
            "status": {"used": {"pods": "2", "limits.cpu": "1500m", "limits.memory": "512Mi",
                "count/cronjobs.batch": "1"}}
        }))
        .unwrap();
        let limits: LimitRange = serde_json::from_value(json!({
            "metadata": {"name": "tool-mytool"},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "3", "memory": "6Gi"}}]}
        }))
        .unwrap();
        let [running, per_job, definitions] = categories(&[quota], &[limits]);
        let values = |category: &Category| -> Vec<(Option<String>, Option<String>)> {
            category
                .items
                .iter()
                .map(|item| (item.used.clone(), item.limit.clone()))
                .collect()
        };
        let some = |text: &str| Some(text.to_owned());
        assert_eq!(
            values(&running),
            [
                (some("2"), some("16")),
                (some("0"), some("15")),
                (some("1.5"), some("8.0")),
                (some("0.5Gi"), some("8.0Gi")),
            ]
        );
        assert_eq!(
            values(&per_job),
            [(None, some("3.0")), (None, some("6.0Gi"))]
        );
        assert_eq!(
            values(&definitions),
            [(some("1"), some("50")), (some("0"), some("16"))]
        );
    }

    #[test]
    fn without_a_quota_every_item_is_there_unlimited() {
        let [running, per_job, definitions] = categories(&[], &[]);
        assert_eq!(running.items.len(), 4);
        assert!(running.items.iter().all(|item| item.limit.is_none()));
        assert_eq!(per_job.items.len(), 2);
        assert_eq!(definitions.items.len(), 2);
    }
}
