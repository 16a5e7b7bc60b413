//! `toolforge-jobs quota`: the tool's quota as upstream's `toolforge jobs quota` shows it, in three tables —
//! running jobs (pods, Jobs, CPU, memory: used and limit, from the namespace's `ResourceQuota`), per-job limits
//! (the `LimitRange`'s container maximum) and job definitions (CronJobs, Deployments: used and limit).

use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
use serde::Serialize;

use crate::cli::live_jobs;
use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat};
use crate::output::{ExitStatus, Printer};

/// One table: its title, and rows of label, used (none for limits), limit.
#[derive(Serialize)]
struct Table {
    title: &'static str,
    rows: Vec<Row>,
}

#[derive(Serialize)]
struct Row {
    name: &'static str,
    /// The quota's resource name, or the limit's.
    resource: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    used: Option<String>,
    limit: String,
}

/// The quota resources of the running-jobs and job-definitions tables, upstream's labels first.
const RUNNING: [(&str, &str); 4] = [
    ("Total running jobs at once (Kubernetes pods)", "pods"),
    ("Running one-off and cron jobs", "count/jobs.batch"),
    ("CPU", "limits.cpu"),
    ("Memory", "limits.memory"),
];
const DEFINITIONS: [(&str, &str); 2] = [
    ("Cron jobs", "count/cronjobs.batch"),
    (
        "Continuous jobs (including web services)",
        "count/deployments.apps",
    ),
];

pub(crate) async fn run(global: &GlobalArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let (_, namespace, snapshot) = live_jobs::snapshot(global).await?;
    let tables = tables(&snapshot.quotas, &snapshot.limit_ranges);
    // JSON is always one document, its tables empty when the namespace has no quota and no limits.
    let text = if global.output == OutputFormat::Json {
        json_line(&tables)?
    } else if snapshot.quotas.is_empty() && snapshot.limit_ranges.is_empty() {
        printer.message(&format!(
            "Namespace `{namespace}` has no quota and no limits.\n"
        ))?;
        return Ok(ExitStatus::Success);
    } else {
        render(&tables)
    };
    printer.data(&text)?;
    Ok(ExitStatus::Success)
}

/// The three tables.
fn tables(quotas: &[ResourceQuota], limit_ranges: &[LimitRange]) -> [Table; 3] {
    [
        Table {
            title: "Running jobs",
            rows: quota_rows(quotas, &RUNNING),
        },
        Table {
            title: "Per-job limits",
            rows: limit_rows(limit_ranges),
        },
        Table {
            title: "Job definitions",
            rows: quota_rows(quotas, &DEFINITIONS),
        },
    ]
}

/// The tables with rows, one after the other with a blank line between; a table of limits only has no "Used".
fn render(tables: &[Table]) -> String {
    tables
        .iter()
        .filter(|table| !table.rows.is_empty())
        .map(|table| {
            let limits_only = table.rows.iter().all(|row| row.used.is_none());
            let header: &[&str] = if limits_only {
                &[table.title, "Limit"]
            } else {
                &[table.title, "Used", "Limit"]
            };
            let cells: Vec<Vec<String>> = table
                .rows
                .iter()
                .map(|row| {
                    [
                        Some(row.name.to_owned()),
                        row.used.clone(),
                        Some(row.limit.clone()),
                    ]
                    .into_iter()
                    .flatten()
                    .collect()
                })
                .collect();
            table::columns(header, &cells)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rows of `resources` that some quota limits (the first quota naming a resource wins).
fn quota_rows(quotas: &[ResourceQuota], resources: &[(&'static str, &'static str)]) -> Vec<Row> {
    resources
        .iter()
        .filter_map(|(name, resource)| {
            quotas.iter().find_map(|quota| {
                let status = quota.status.as_ref();
                let hard = status
                    .and_then(|status| status.hard.as_ref())
                    .or_else(|| quota.spec.as_ref().and_then(|spec| spec.hard.as_ref()))?
                    .get(*resource)?;
                let used = status
                    .and_then(|status| status.used.as_ref())
                    .and_then(|used| used.get(*resource))
                    .map_or_else(|| "0".to_owned(), |used| used.0.clone());
                Some(Row {
                    name,
                    resource,
                    used: Some(used),
                    limit: hard.0.clone(),
                })
            })
        })
        .collect()
}

/// CPU and memory maximum per container, from the `LimitRange`s.
fn limit_rows(limit_ranges: &[LimitRange]) -> Vec<Row> {
    [("CPU", "cpu"), ("Memory", "memory")]
        .into_iter()
        .filter_map(|(name, resource)| {
            limit_ranges
                .iter()
                .filter_map(|range| range.spec.as_ref())
                .flat_map(|spec| &spec.limits)
                .filter(|item| item.type_ == "Container")
                .find_map(|item| item.max.as_ref()?.get(resource))
                .map(|max| Row {
                    name,
                    resource,
                    used: None,
                    limit: max.0.clone(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn three_tables_from_the_quota_and_the_limit_range() {
        let quota: ResourceQuota = serde_json::from_value(json!({
            "metadata": {"name": "tool-mytool"},
            "spec": {"hard": {"pods": "16", "count/jobs.batch": "15", "limits.cpu": "8",
                "limits.memory": "8Gi", "count/cronjobs.batch": "50", "count/deployments.apps": "16"}},
            "status": {"used": {"pods": "2", "limits.cpu": "1500m", "count/cronjobs.batch": "1"}}
        }))
        .unwrap();
        let limits: LimitRange = serde_json::from_value(json!({
            "metadata": {"name": "tool-mytool"},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "3", "memory": "6Gi"}}]}
        }))
        .unwrap();
        assert_eq!(
            render(&tables(&[quota], &[limits])),
            "\
Running jobs                                  Used   Limit
Total running jobs at once (Kubernetes pods)  2      16
Running one-off and cron jobs                 0      15
CPU                                           1500m  8
Memory                                        0      8Gi

Per-job limits  Limit
CPU             3
Memory          6Gi

Job definitions                           Used  Limit
Cron jobs                                 1     50
Continuous jobs (including web services)  0     16
"
        );
    }
}
