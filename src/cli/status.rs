//! `toolforge-jobs status`: the state of `apply` and the `watch` daemon for the tool — who holds the lock (the
//! Lease, SPEC §6), and what the inventory records: its jobs, the last apply that wrote (when, by whom, what it
//! changed, how it ended) and the last run of every one-off with its outcome. Two GETs; nothing is written.
//!
//! A run the inventory has no outcome for (still running, or nobody waited for it) gets the outcome of its live
//! Job, judged as `list` judges it ([`crate::status`]), so that the two agree: one more round of LISTs (Jobs,
//! Pods, Events), only when there is such a run. With `--wait`, `status` first waits for the jobs file as `wait`
//! without a name does ([`crate::cli::wait_file`]) and exits as that wait does.

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Args;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::api::{Api, ListParams};
use serde::Serialize;

use crate::cli::apply::parse_duration;
use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat, tool_name, wait_file};
use crate::cluster::lock::LEASE_NAME;
use crate::cluster::{self, ReadError};
use crate::model::inventory::{ApplyRecord, ApplyResult, Inventory, RunOutcome};
use crate::model::labels;
use crate::output::{ExitStatus, Printer};
use crate::plan::Listed;
use crate::render::LiveObject;
use crate::render::context::DEFAULT_SET_NAME;
use crate::status::{self, Related, Short, duration};

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

    /// First wait until the jobs file's current content is applied and its jobs are done, as `wait` without a
    /// name does (at most DURATION: `600`, `90s`, `10m`; default 10 minutes); exits as that wait
    #[arg(long, value_name = "DURATION", num_args = 0..=1, default_missing_value = "10m", value_parser = parse_duration)]
    pub wait: Option<Duration>,
}

#[derive(Serialize)]
struct Report {
    lock: Option<LockState>,
    inventory: Option<InventoryState>,
}

/// The Lease as `status` shows it; `wait` without a name asks it who applies.
#[derive(Serialize)]
pub(crate) struct LockState {
    pub(crate) holder: String,
    acquired: Option<String>,
    renewed: Option<String>,
    /// Whether the holder stopped renewing long enough ago that anyone may take the lock.
    pub(crate) expired: bool,
}

#[derive(Serialize)]
struct InventoryState {
    name: String,
    /// Jobs by type.
    jobs: BTreeMap<&'static str, usize>,
    last_apply: Option<LastApply>,
    runs: Vec<RunState>,
}

/// The inventory's record of the last apply that wrote.
#[derive(Serialize)]
struct LastApply {
    at: String,
    by: String,
    /// The jobs it changed.
    changed: Vec<String>,
    /// `complete`, `interrupted`, or `held` (with the `wait` one-off that held the jobs after it back).
    result: ApplyResult,
}

#[derive(Serialize)]
struct RunState {
    job: String,
    /// `succeeded`, `failed` or `unknown` as recorded; a run recorded `unknown` has its live Job's status as
    /// `list` shows it: `pending`, `running`, `succeeded`, `failed` (`unknown` when it is gone).
    outcome: &'static str,
    started: String,
    finished: Option<String>,
    /// The run's Job, to look it up when the outcome is not recorded.
    #[serde(skip)]
    uid: Option<String>,
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &StatusArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let waited = match args.wait {
        Some(timeout) => Box::pin(wait_file::run(global, &args.set_name, timeout, printer)).await?,
        None => ExitStatus::Success,
    };
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
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    let inventory = cluster::inventory::load(&config_maps, &namespace, &args.set_name, config_map)
        .await?
        .map(|stored| inventory_state(&args.set_name, &stored.inventory));
    let inventory = match inventory {
        Some(mut state) => {
            Box::pin(live_outcomes(client, &namespace, &mut state, now)).await?;
            Some(state)
        }
        None => None,
    };
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
    Ok(waited)
}

pub(crate) fn lock_state(lease: &Lease, now: Timestamp) -> LockState {
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

fn inventory_state(name: &str, inventory: &Inventory) -> InventoryState {
    let mut jobs = BTreeMap::new();
    for record in inventory.jobs.values() {
        *jobs.entry(record.kind.name()).or_default() += 1;
    }
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
                uid: run.job_uid.clone(),
            })
        })
        .collect();
    InventoryState {
        name: name.to_owned(),
        jobs,
        last_apply: inventory.last_apply.as_ref().map(last_apply),
        runs,
    }
}

fn last_apply(record: &ApplyRecord) -> LastApply {
    LastApply {
        at: record.at.to_string(),
        by: record.by.clone(),
        changed: record.changed.clone(),
        result: record.result.clone(),
    }
}

/// Gives the runs recorded `unknown` the status of their live Job (by UID), as `list` computes it.
async fn live_outcomes(
    client: &kube::Client,
    namespace: &str,
    state: &mut InventoryState,
    now: Timestamp,
) -> Result<(), Error> {
    if state
        .runs
        .iter()
        .all(|run| run.outcome != RunOutcome::Unknown.name())
    {
        return Ok(());
    }
    let list_error = |what| {
        let namespace = namespace.to_owned();
        move |source| ReadError::List {
            what,
            namespace,
            source,
        }
    };
    let framework = ListParams::default().labels(&labels::framework_selector());
    let (jobs, pods, events) = tokio::try_join!(
        async {
            Api::<KubeJob>::namespaced(client.clone(), namespace)
                .list(&framework)
                .await
                .map_err(list_error("Jobs"))
        },
        async {
            Api::<Pod>::namespaced(client.clone(), namespace)
                .list(&framework)
                .await
                .map_err(list_error("Pods"))
        },
        async {
            Api::<Event>::namespaced(client.clone(), namespace)
                .list(&ListParams::default())
                .await
                .map_err(list_error("Events"))
        },
    )?;
    let listed: Vec<Listed<KubeJob>> = jobs.items.iter().cloned().map(Listed::new).collect();
    let related = Related {
        jobs: &listed,
        pods: &pods.items,
        events: &events.items,
    };
    let uids: BTreeMap<&str, &KubeJob> = jobs
        .items
        .iter()
        .filter_map(|job| Some((job.metadata.uid.as_deref()?, job)))
        .collect();
    for run in &mut state.runs {
        if run.outcome != RunOutcome::Unknown.name() {
            continue;
        }
        let Some(job) = run.uid.as_deref().and_then(|uid| uids.get(uid)) else {
            continue;
        };
        let object = LiveObject::Job((*job).clone());
        run.outcome = match status::of(&object, related, now).short {
            Short::Pending => "pending",
            Short::Running => "running",
            Short::Succeeded => RunOutcome::Succeeded.name(),
            Short::Failed => RunOutcome::Failed.name(),
            Short::Unknown => RunOutcome::Unknown.name(),
        };
    }
    Ok(())
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
            .last_apply
            .as_ref()
            .map_or_else(|| "N/A".to_owned(), |last| last_apply_line(last, now)),
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

/// `2026-12-02T10:00:00Z (5m ago) by apply by me@host (pid 7): 2 job(s) changed, complete`.
fn last_apply_line(last: &LastApply, now: Timestamp) -> String {
    let ago = last.at.parse::<Timestamp>().map_or_else(
        |_| String::new(),
        |at| format!(" ({} ago)", duration(at, now)),
    );
    let result = match &last.result {
        ApplyResult::Complete => "complete".to_owned(),
        ApplyResult::Interrupted => "interrupted".to_owned(),
        ApplyResult::Held { barrier } => format!("held back by `{barrier}`"),
    };
    format!(
        "{}{ago} by {}: {} job(s) changed, {result}",
        last.at,
        last.by,
        last.changed.len()
    )
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
