//! `toolforge-jobs quota`: the tool's quota as upstream's `toolforge jobs quota` shows it, in three tables —
//! running jobs (pods, Jobs, CPU, memory: used and limit, from the namespace's `ResourceQuota`), per-job limits
//! (the `LimitRange`'s container maximum) and job definitions (CronJobs, Deployments: used and limit).

use crate::cli::live_jobs;
use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat};
use crate::output::{ExitStatus, Printer};
use crate::status::quota::{self, Category};

pub(crate) async fn run(global: &GlobalArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let (_, namespace, snapshot) = live_jobs::snapshot(global).await?;
    let categories = quota::categories(&snapshot.quotas, &snapshot.limit_ranges);
    // JSON is always one document, with every item; unlimited ones have no limit.
    let text = if global.output == OutputFormat::Json {
        json_line(&categories)?
    } else if snapshot.quotas.is_empty() && snapshot.limit_ranges.is_empty() {
        printer.message(&format!(
            "Namespace `{namespace}` has no quota and no limits.\n"
        ))?;
        return Ok(ExitStatus::Success);
    } else {
        render(&categories)
    };
    printer.data(&text)?;
    Ok(ExitStatus::Success)
}

/// The categories as upstream prints them: tabulate's `simple`, always with a "Used" column (blank for
/// limits), one after the other with a blank line between. Items nothing limits are left out.
fn render(categories: &[Category]) -> String {
    categories
        .iter()
        .filter_map(|category| {
            let cells: Vec<Vec<Option<String>>> = category
                .items
                .iter()
                .filter(|item| item.limit.is_some())
                .map(|item| {
                    vec![
                        Some(item.name.to_owned()),
                        item.used.clone(),
                        item.limit.clone(),
                    ]
                })
                .collect();
            (!cells.is_empty()).then(|| table::simple(&[category.name, "Used", "Limit"], &cells))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
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
            render(&quota::categories(&[quota], &[limits])),
            // tabulate's output for the jobs API's answer.
            "\
Running jobs                                  Used    Limit
--------------------------------------------  ------  -------
Total running jobs at once (Kubernetes pods)  2       16
Running one-off and cron jobs                 0       15
CPU                                           1.5     8.0
Memory                                        0.0Gi   8.0Gi

Per-job limits    Used    Limit
----------------  ------  -------
CPU                       3.0
Memory                    6.0Gi

Job definitions                             Used    Limit
----------------------------------------  ------  -------
Cron jobs                                      1       50
Continuous jobs (including web services)       0       16
"
        );
    }
}
