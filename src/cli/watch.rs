//! `toolforge-jobs watch`: the per-tool daemon (SPEC §8, docs/watch.md). It turns the flags into the daemon's
//! settings, takes the tool's lock for its whole life and runs the [`crate::watch`] loop with the reconciler
//! [`crate::watch::Daemon`] (`apply`'s pipeline with the daemon's rules).
//!
//! Exit codes: 0 after SIGTERM or SIGINT, 6 when another apply or daemon holds the lock (or took it over), 1 when
//! it cannot start.

use std::io::IsTerminal as _;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::cli::apply::parse_duration;
use crate::cli::planning;
use crate::cli::{Error, GlobalArgs};
use crate::cluster::lock::{self, Lock, LockError};
use crate::cluster::retry::backoff_between;
use crate::output::errors::one_line;
use crate::output::{ExitStatus, Printer};
use crate::pipeline::PlanSettings;
use crate::plan::PlanOptions;
use crate::render::context::DEFAULT_SET_NAME;
use crate::watch::{self, Daemon, DaemonSettings, Settings};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The inventory's name, to keep several files apart in one tool
    #[arg(
        long = "set",
        value_name = "NAME",
        default_value = DEFAULT_SET_NAME,
        value_parser = crate::cli::set_name
    )]
    pub set_name: String,

    /// Never delete jobs, not even those dropped from the file
    #[arg(long)]
    pub no_prune: bool,

    /// How to write the log
    #[arg(long, value_enum, default_value_t = LogFormat::Auto)]
    pub log_format: LogFormat,

    /// Poll the jobs file every DURATION instead of relying on file-system notifications; needed where the
    /// file is changed from another machine (NFS: the daemon running as a Toolforge job)
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub poll: Option<Duration>,

    /// Reconcile at least this often, even when nothing seems to have changed
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub resync: Duration,

    /// How many writes may be in flight at once (inside a stage)
    #[arg(long, value_name = "N", default_value_t = crate::apply::DEFAULT_CONCURRENCY, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,

    /// How long the file must stay unchanged before it is read
    #[arg(long, hide = true, default_value = "300ms", value_parser = parse_duration)]
    pub debounce: Duration,

    /// How long a file that drops jobs must stay unchanged before they are deleted
    #[arg(long, hide = true, default_value = "5s", value_parser = parse_duration)]
    pub prune_settle: Duration,

    /// The longest wait between attempts while the API fails
    #[arg(long, hide = true, default_value = "5m", value_parser = parse_duration)]
    pub max_backoff: Duration,
}

/// The daemon's log format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human lines on a terminal, JSON lines otherwise
    Auto,
    /// Lines for people
    Human,
    /// One JSON object per line
    Json,
}

/// How long a reconcile in flight may go on after SIGTERM; Kubernetes kills after 30 s.
const GRACE: Duration = Duration::from_secs(20);

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &WatchArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let json = match args.log_format {
        LogFormat::Auto => !std::io::stderr().is_terminal(),
        LogFormat::Human => false,
        LogFormat::Json => true,
    };
    watch::logging::init(json, global.verbose, printer.color() && !json);

    let source = planning::locate(global)?;
    let connection = crate::cli::connection::connect(global).await?;
    let namespace = source.tool.namespace();
    let identity = lock::identity("watch");
    let lock = take_lock(&connection.client, &namespace, &identity, args.max_backoff).await?;
    tracing::info!(
        file = %source.path.display(),
        namespace,
        holder = identity,
        "watching: the lock is ours until we stop"
    );

    let settings = Settings {
        file: source.path.clone(),
        debounce: args.debounce,
        resync: args.resync,
        max_backoff: args.max_backoff,
        poll: args.poll,
        grace: GRACE,
    };
    let client = connection.client.clone();
    let daemon_settings = DaemonSettings {
        plan: PlanSettings {
            set_name: args.set_name.clone(),
            options: PlanOptions {
                prune: !args.no_prune,
                ..PlanOptions::default()
            },
            server_dry_run: false,
        },
        concurrency: usize::from(args.concurrency),
        prune_settle: args.prune_settle,
        human_log: !json,
    };
    let mut daemon = Daemon::new(connection, source, daemon_settings, identity, lock, printer);
    let result = watch::run(&settings, &client, &namespace, &mut daemon).await;
    let lock = daemon.stopped().await;
    if let Err(error) = lock.release().await {
        tracing::warn!(%error, "cannot release the lock; it expires by itself");
    } else {
        tracing::info!("stopped: the lock is released");
    }
    result?;
    Ok(ExitStatus::Success)
}

/// Takes the lock; another holder is an error (exit 6), an API error is tried again after a back-off.
async fn take_lock(
    client: &kube::Client,
    namespace: &str,
    identity: &str,
    max_backoff: Duration,
) -> Result<Lock, Error> {
    let mut failures = 0;
    loop {
        match lock::acquire(client, namespace, identity, None).await {
            Err(LockError::Api { source, .. }) => {
                failures += 1;
                let delay = backoff_between(failures, Duration::from_secs(1), max_backoff);
                tracing::warn!(error = %one_line(&source), ?delay, "cannot take the lock; trying again");
                tokio::time::sleep(delay).await;
            }
            result => return Ok(result?),
        }
    }
}
