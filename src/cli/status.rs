//! `toolforge-jobs status`: the state of `apply` and the `watch` daemon for the tool — who holds the lock (the
//! Lease, SPEC §6), and what the inventory records: its jobs, when it was last written, and the last run of every
//! one-off with its outcome. Two GETs; nothing is written.

use std::collections::BTreeMap;

use clap::Args;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde::Serialize;

use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat, tool_name};
use crate::cluster::ReadError;
use crate::cluster::lock::LEASE_NAME;
use crate::output::{ExitStatus, Printer};
use crate::render::context::DEFAULT_SET_NAME;
use crate::render::inventory::{self, Inventory};
use crate::status::duration;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The inventory's name, to keep several files apart in one tool
    #[arg(
        long = "set",
        value_name = "NAME",
        default_value = DEFAULT_SET_NAME,
        value_parser = crate::cli::set_name
    )]
    pub set_name: String,
}

#[derive(Serialize)]
struct Report {
    lock: Option<LockState>,
    inventory: Option<InventoryState>,
}

#[derive(Serialize)]
struct LockState {
    holder: String,
    acquired: Option<String>,
    renewed: Option<String>,
    /// Whether the holder stopped renewing long enough ago that anyone may take the lock.
    expired: bool,
}

#[derive(Serialize)]
struct InventoryState {
    name: String,
    /// Jobs by type.
    jobs: BTreeMap<&'static str, usize>,
    last_written: Option<String>,
    runs: Vec<RunState>,
}

#[derive(Serialize)]
struct RunState {
    job: String,
    outcome: &'static str,
    started: String,
    finished: Option<String>,
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &StatusArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let namespace = tool_name(global)?.namespace();
    let connection = crate::cli::connection::connect(global).await?;
    let client = &connection.client;
    let get_error = |name: &str| {
        let (namespace, name) = (namespace.clone(), name.to_owned());
        move |source| ReadError::Get {
            namespace,
            name,
            source,
        }
    };
    let (lease, config_map) = tokio::try_join!(
        async {
            Api::<Lease>::namespaced(client.clone(), &namespace)
                .get_opt(LEASE_NAME)
                .await
                .map_err(get_error(LEASE_NAME))
        },
        async {
            Api::<ConfigMap>::namespaced(client.clone(), &namespace)
                .get_opt(&args.set_name)
                .await
                .map_err(get_error(&args.set_name))
        },
    )?;
    let now = Timestamp::now();
    let inventory = config_map
        .map(|config_map| {
            let stored =
                inventory::from_config_map(&config_map).map_err(|source| ReadError::Inventory {
                    namespace: namespace.clone(),
                    name: args.set_name.clone(),
                    source,
                })?;
            Ok::<_, Error>(inventory_state(&args.set_name, &stored, &config_map))
        })
        .transpose()?;
    let report = Report {
        lock: lease.map(|lease| lock_state(&lease, now)),
        inventory,
    };
    let text = if global.output == OutputFormat::Json {
        json_line(&report)?
    } else {
        render(&report, now)
    };
    printer.data(&text)?;
    Ok(ExitStatus::Success)
}

fn lock_state(lease: &Lease, now: Timestamp) -> LockState {
    let spec = lease.spec.clone().unwrap_or_default();
    let renewed = spec
        .renew_time
        .or(spec.acquire_time.clone())
        .map(|time| time.0);
    let lasts =
        jiff::SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    LockState {
        holder: spec.holder_identity.unwrap_or_else(|| "nobody".to_owned()),
        acquired: spec.acquire_time.map(|time| time.0.to_string()),
        renewed: renewed.map(|time| time.to_string()),
        expired: renewed
            .is_none_or(|renewed| renewed.checked_add(lasts).is_ok_and(|end| end < now)),
    }
}

fn inventory_state(name: &str, inventory: &Inventory, config_map: &ConfigMap) -> InventoryState {
    let mut jobs = BTreeMap::new();
    for record in inventory.jobs.values() {
        *jobs.entry(record.kind.name()).or_default() += 1;
    }
    let last_written = config_map
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.time.as_ref().map(|time| time.0))
        .max()
        .or_else(|| {
            config_map
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| time.0)
        });
    let runs = inventory
        .jobs
        .iter()
        .filter_map(|(job, record)| {
            let run = record.runs.last()?;
            Some(RunState {
                job: job.clone(),
                outcome: run.outcome.name(),
                started: run.started.to_string(),
                finished: run.finished.map(|time| time.to_string()),
            })
        })
        .collect();
    InventoryState {
        name: name.to_owned(),
        jobs,
        last_written: last_written.map(|time| time.to_string()),
        runs,
    }
}

fn render(report: &Report, now: Timestamp) -> String {
    let lock = match &report.lock {
        None => "free".to_owned(),
        Some(lock) if lock.expired => format!("free (the lease of {} expired)", lock.holder),
        Some(lock) => {
            let since = lock
                .acquired
                .as_deref()
                .and_then(|time| time.parse::<Timestamp>().ok())
                .map_or_else(String::new, |time| format!(" for {}", duration(time, now)));
            format!("held by {}{since}", lock.holder)
        }
    };
    let mut rows = vec![vec!["Lock:".to_owned(), lock]];
    let Some(inventory) = &report.inventory else {
        rows.push(vec![
            "Inventory:".to_owned(),
            "none yet (nothing was applied with this set)".to_owned(),
        ]);
        return aligned(&rows);
    };
    let total: usize = inventory.jobs.values().sum();
    let kinds: Vec<String> = inventory
        .jobs
        .iter()
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    rows.push(vec![
        "Inventory:".to_owned(),
        format!("{}, {total} job(s) ({})", inventory.name, kinds.join(", ")),
    ]);
    rows.push(vec![
        "Last applied:".to_owned(),
        inventory
            .last_written
            .clone()
            .unwrap_or_else(|| "N/A".to_owned()),
    ]);
    let mut text = aligned(&rows);
    if !inventory.runs.is_empty() {
        let cells: Vec<Vec<String>> = inventory
            .runs
            .iter()
            .map(|run| {
                vec![
                    run.job.clone(),
                    run.outcome.to_owned(),
                    run.started.clone(),
                    run.finished.clone().unwrap_or_else(|| "N/A".to_owned()),
                ]
            })
            .collect();
        text.push('\n');
        text.push_str(&table::columns(
            &["Last run of:", "Outcome:", "Started:", "Finished:"],
            &cells,
        ));
    }
    text
}

/// Rows of label and value, aligned (the first row sets the columns like a header).
fn aligned(rows: &[Vec<String>]) -> String {
    let (first, rest) = rows
        .split_first()
        .map_or((None, &[][..]), |(first, rest)| (Some(first), rest));
    let header: Vec<&str> =
        first.map_or_else(Vec::new, |row| row.iter().map(String::as_str).collect());
    table::columns(&header, rest)
}
