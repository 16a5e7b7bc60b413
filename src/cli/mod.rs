//! The command line: clap definitions, and the dispatch from a parsed command to the code that runs it.
//!
//! One file per subcommand. Each turns its arguments into inputs for the pipeline stages and reports through
//! the [`Printer`]; none of them prints directly or exits the process.

mod apply;
mod completions;
mod connection;
mod delete;
mod diff;
mod dump;
mod images;
mod jobs_file;
mod list;
mod live_jobs;
mod local_cluster;
mod logs;
mod man;
mod planning;
mod quota;
mod restart;
mod run;
mod schema;
mod show;
mod status;
mod table;
mod validate;
mod wait;
mod watch;
mod yaml_entry;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use kube::config::Kubeconfig;

use crate::output::{EXIT_CODES_HELP, ExitStatus, Printer};

/// Declarative jobs for Wikimedia Toolforge: validate jobs.yaml, plan, apply and watch.
#[derive(Debug, Parser)]
#[command(name = "toolforge-jobs", version, after_help = EXIT_CODES_HELP, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Kubeconfig file to use (default: `$KUBECONFIG`, then `~/.kube/config`)
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use (default: the current context)
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// Kubernetes namespace of the tool, `tool-<tool>` (default: the context's namespace)
    #[arg(long, global = true, value_name = "NAMESPACE", conflicts_with = "tool")]
    pub namespace: Option<String>,

    /// The tool whose jobs these are (default: from the namespace)
    #[arg(long, global = true, value_name = "TOOL")]
    pub tool: Option<String>,

    /// Use the embedded local cluster, started in the background if needed (the default when no kubeconfig
    /// exists)
    #[arg(long, global = true, conflicts_with_all = ["kubeconfig", "context"])]
    pub local: bool,

    /// The jobs file (default: `./jobs.yaml`, then `$HOME/jobs.yaml`)
    #[arg(short = 'f', long, global = true, value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Output format
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,

    /// Never use colours (also: a non-empty `NO_COLOR` environment variable)
    #[arg(long, global = true)]
    pub no_color: bool,

    /// More log output; repeat for more (also: `RUST_LOG`)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// How results are written to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Text for people
    Text,
    /// One JSON document, stable across versions
    Json,
    /// `list`: every field of every job (other commands: as `text`)
    Long,
    /// `list`: the job names only (other commands: as `text`)
    Name,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a jobs file without contacting any cluster
    ///
    /// Reports every problem of the file at once, with file, line and column, and exits with 2 when the file is
    /// invalid. Warnings (legacy forms, deprecated images) do not make it invalid.
    Validate,

    /// Make the cluster equal to the jobs file (alias: `load`)
    ///
    /// Validates the file, takes the tool's lock, plans (as `diff`), prints the plan and carries it out: creates,
    /// updates, replaces and re-runs in file order — a one-off with `wait` holds back the jobs after it until it
    /// succeeded — then deletes the jobs no longer in the file (with `--yes`, or after asking on a terminal).
    #[command(alias = "load")]
    Apply(apply::ApplyArgs),

    /// Show what `apply` would change, without changing anything
    ///
    /// Reads the live objects, the inventory and the namespace's quota, and prints one row per job — create,
    /// update, replace, rerun, repair, delete, adopt, unchanged, done, conflict or ignored, with the reason —,
    /// the field changes and a YAML diff of every object that would be overwritten. The server checks every
    /// write with a dry run. `-o json` prints the plan as JSON (docs/plan.md). Exit 0: nothing to change; 3:
    /// changes; 7: refused by a safety guard; 1: the plan cannot be applied (conflict, quota, limits).
    Diff(planning::PlanArgs),

    /// Keep the cluster equal to the jobs file, as a daemon
    ///
    /// Takes the tool's lock for as long as it runs and applies the file (as `apply`) when it starts, when the
    /// file changes, when one of the tool's jobs is changed or deleted in the cluster, and every `--resync`. An
    /// invalid file is reported and ignored: the last valid one stays applied. Failed one-offs are not run
    /// again, and only jobs dropped from the file while it watches are deleted. Stops on SIGTERM or SIGINT,
    /// after the writes in flight, and releases the lock. See docs/watch.md.
    Watch(watch::WatchArgs),

    /// Print the JSON Schema of jobs.yaml, for editors
    ///
    /// Add `# yaml-language-server: $schema=<path or URL of the schema>` to the top of jobs.yaml to have
    /// editors with a YAML language server check it as you type.
    Schema,

    /// Run the local Kubernetes-compatible cluster in the foreground
    ///
    /// Serves the Kubernetes API on 127.0.0.1 for development and tests; real kubectl can use it through the
    /// kubeconfig written with `--kubeconfig-out`. See docs/local-cluster.md.
    LocalCluster(local_cluster::LocalClusterArgs),

    /// List the tool's jobs with their type and status (`-o long|name|json`)
    ///
    /// Reads every jobs-framework job of the tool's namespace — ours, upstream's and `run`'s — with one LIST per
    /// kind, and computes each status as upstream does: pending, running, succeeded, failed or unknown, for how
    /// long, and why (`restarted (N)`, `exitcode X`, out of quota).
    List(list::ListArgs),

    /// Show every field of one job, its status, and hints (why, previous and next run)
    Show(show::ShowArgs),

    /// Print a job's output: its log files in the tool's home, or its pods' logs
    ///
    /// With file logging (the default for pre-built images) prints the job's `.out` and `.err` files; else the
    /// logs of every pod of the job through the Kubernetes API, as `<time> [<pod>] [<container>] <message>`.
    Logs(logs::LogsArgs),

    /// Delete a job's objects and its inventory record
    ///
    /// Deletes its Job, CronJob or Deployment (with their pods) and its Service.
    ///
    /// Only objects with the jobs framework's managed-by label are deleted; a job still in the jobs file comes
    /// back with the next `apply`.
    Delete(delete::DeleteArgs),

    /// Delete every job of the tool (as `delete` does for each)
    Flush,

    /// Run a job from flags instead of a file (upstream's `toolforge jobs run`)
    ///
    /// The flags are jobs.yaml keys and are checked as a jobs file is. The job belongs to no jobs file: `apply`
    /// shows it as `ignored` and never deletes it. `--wait` waits for a one-off to complete (exit 4 failed, 5 timed
    /// out).
    Run(Box<run::RunArgs>),

    /// Wait for a job's current run to complete, or a continuous job to be rolled out
    ///
    /// Exit 0: it succeeded; 4: it failed (with the reasons, events and log tail); 5: timed out.
    Wait(wait::WaitArgs),

    /// Write the live jobs as a jobs file that applies as a no-op
    ///
    /// To `-f FILE` (created or overwritten), else to stdout. `wait`, `trigger` and `trigger-files` cannot be
    /// read from live objects and are not in the dump.
    Dump,

    /// List the stable pre-built images a job may use
    Images,

    /// Show the tool's quota: running jobs, per-job limits, job definitions
    Quota,

    /// Restart a job: roll its pods, run it now, or run a one-off again
    Restart(restart::RestartArgs),

    /// Show the lock's holder and the inventory: jobs, last apply, last runs
    Status(status::StatusArgs),

    /// Print a shell completion script
    ///
    /// For example: `toolforge-jobs completions bash > ~/.local/share/bash-completion/completions/toolforge-jobs`.
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },

    /// Print the manual page (roff)
    ///
    /// For example: `toolforge-jobs man > ~/.local/share/man/man1/toolforge-jobs.1`, then `man toolforge-jobs`.
    Man,
}

/// Runs a parsed command line.
pub async fn run(cli: &Cli) -> ExitStatus {
    let printer = Printer::new(cli.global.no_color);
    // The daemon's log is its output: it sets up its own.
    if !matches!(cli.command, Command::Watch(_)) {
        crate::output::logging::init(cli.global.verbose, printer.color());
    }
    let result = match &cli.command {
        Command::Validate => validate::run(&cli.global, printer),
        Command::Diff(args) => Box::pin(diff::run(&cli.global, args, printer)).await,
        Command::Apply(args) => Box::pin(apply::run(&cli.global, args, printer)).await,
        Command::Watch(args) => Box::pin(watch::run(&cli.global, args, printer)).await,
        Command::Schema => schema::run(printer),
        Command::Completions { shell } => completions::run(*shell, printer),
        Command::Man => man::run(printer),
        Command::LocalCluster(args) => local_cluster::run(args, printer).await,
        Command::List(args) => Box::pin(list::run(&cli.global, args, printer)).await,
        Command::Show(args) => Box::pin(show::run(&cli.global, args, printer)).await,
        Command::Logs(args) => Box::pin(logs::run(&cli.global, args, printer)).await,
        Command::Delete(args) => Box::pin(delete::run(&cli.global, args, printer)).await,
        Command::Flush => Box::pin(delete::flush(&cli.global, printer)).await,
        Command::Run(args) => Box::pin(run::run(&cli.global, args, printer)).await,
        Command::Wait(args) => Box::pin(wait::run(&cli.global, args, printer)).await,
        Command::Dump => Box::pin(dump::run(&cli.global, printer)).await,
        Command::Images => Box::pin(images::run(&cli.global, printer)).await,
        Command::Restart(args) => Box::pin(restart::run(&cli.global, args, printer)).await,
        Command::Status(args) => Box::pin(status::run(&cli.global, args, printer)).await,
        Command::Quota => Box::pin(quota::run(&cli.global, printer)).await,
    };
    match result {
        Ok(status) => status,
        Err(error) => {
            // If stderr itself is gone there is nobody left to tell.
            let _ = printer.message(&error_chain(&error));
            error.exit_status()
        }
    }
}

/// Errors of the command-line layer that end a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no jobs file given, and {} does not exist; pass one with `-f FILE`", listed(.searched))]
    NoJobsFile { searched: Vec<PathBuf> },
    #[error("cannot read `{}`", .path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the output")]
    Output(#[from] std::io::Error),
    #[error("the local cluster failed")]
    LocalCluster(#[from] toolforge_local_cluster::ClusterError),
    #[error(
        "cannot tell which tool this is: pass `--tool NAME` (or use a kubeconfig context whose namespace is `tool-NAME`)"
    )]
    NoTool,
    #[error(transparent)]
    Connect(#[from] crate::cluster::ConnectError),
    #[error(transparent)]
    Read(#[from] crate::cluster::ReadError),
    #[error("cannot read the trigger files")]
    TriggerFiles(#[from] crate::render::fingerprint::TriggerFilesError),
    #[error(transparent)]
    Context(#[from] crate::render::context::ContextError),
    #[error(transparent)]
    Render(#[from] crate::render::RenderError),
    #[error(transparent)]
    DryRun(#[from] crate::cluster::dry_run::DryRunError),
    #[error(transparent)]
    Lock(#[from] crate::cluster::lock::LockError),
    #[error("the apply stopped")]
    Apply(#[source] Box<crate::apply::ApplyError>),
    #[error(transparent)]
    Inventory(#[from] crate::cluster::inventory::InventoryWriteError),
    #[error("cannot create the namespace `{namespace}` on the local cluster")]
    Namespace {
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("Job '{name}' does not exist; `toolforge-jobs list` shows the tool's jobs")]
    NoSuchJob { name: String },
    #[error("Job '{name}' does not have any logs available: it has no file log and no pods")]
    NoLogs { name: String },
    #[error("cannot read the log of pod `{pod}`")]
    PodLog {
        pod: String,
        #[source]
        source: kube::Error,
    },
    #[error("a job or object named '{name}' already exists; delete it first, or pick another name")]
    JobExists { name: String },
    #[error("cannot create {kind} `{name}`")]
    Create {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "`--next` waits for the next run of a scheduled job, and job '{name}' is not scheduled"
    )]
    NotScheduled { name: String },
    #[error(
        "Job '{name}' has not run yet: there is no run to wait for (`--next` waits for its next run)"
    )]
    NotRunYet { name: String },
    #[error("cannot wait")]
    Wait(#[from] crate::wait::WaitError),
    #[error("cannot write `{}`", .path.display())]
    WriteFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot restart {kind} `{name}`")]
    Restart {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot delete {kind} `{name}`")]
    Delete {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("the daemon stopped")]
    Watch(#[from] crate::watch::WatchError),
}

impl From<crate::apply::ApplyError> for Error {
    fn from(error: crate::apply::ApplyError) -> Self {
        Error::Apply(Box::new(error))
    }
}

impl Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::NoJobsFile { .. }
            | Error::NoTool
            | Error::Render(_)
            | Error::NotScheduled { .. } => ExitStatus::Invalid,
            Error::Lock(crate::cluster::lock::LockError::Held { .. })
            | Error::Watch(crate::watch::WatchError::LockLost) => ExitStatus::LockHeld,
            Error::ReadFile { .. }
            | Error::Output(_)
            | Error::LocalCluster(_)
            | Error::Connect(_)
            | Error::Read(_)
            | Error::TriggerFiles(_)
            | Error::Context(_)
            | Error::DryRun(_)
            | Error::Apply(_)
            | Error::Inventory(_)
            | Error::Namespace { .. }
            | Error::NoSuchJob { .. }
            | Error::NoLogs { .. }
            | Error::PodLog { .. }
            | Error::Delete { .. }
            | Error::JobExists { .. }
            | Error::Create { .. }
            | Error::NotRunYet { .. }
            | Error::Wait(_)
            | Error::WriteFile { .. }
            | Error::Restart { .. }
            | Error::Watch(_)
            | Error::Lock(_) => ExitStatus::Failure,
        }
    }
}

/// The tool named by `--tool`, `--namespace tool-<tool>`, the kubeconfig context's namespace, or the Toolforge
/// account running us (`tools.<tool>`), in that order.
fn tool_name(global: &GlobalArgs) -> Option<String> {
    if let Some(tool) = &global.tool {
        return Some(tool.clone());
    }
    let namespace = global
        .namespace
        .clone()
        .or_else(|| kubeconfig_namespace(global));
    if let Some(namespace) = namespace {
        return namespace.strip_prefix("tool-").map(str::to_owned);
    }
    let user = std::env::var("USER").ok();
    if let Some(tool) = user.as_deref().and_then(|user| user.strip_prefix("tools.")) {
        return Some(tool.to_owned());
    }
    // On the embedded local cluster the tool is the user's own: their name, as a DNS label.
    connection::target(global)
        .is_embedded()
        .then(|| local_tool_name(user.as_deref().unwrap_or_default()))
}

/// `$USER` made a valid tool name (lower-case letters, digits, `-`), or `tool` when nothing is left.
fn local_tool_name(user: &str) -> String {
    let name: String = user
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = name.trim_matches('-');
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        "tool".to_owned()
    } else {
        name.chars().take(40).collect()
    }
}

/// The namespace of the kubeconfig context in use (`--context`, else the current one), if there is a kubeconfig.
fn kubeconfig_namespace(global: &GlobalArgs) -> Option<String> {
    let config = match &global.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    };
    let config = config
        .inspect_err(|error| tracing::debug!(%error, "no kubeconfig to take the namespace from"))
        .ok()?;
    let context_name = global
        .context
        .as_ref()
        .or(config.current_context.as_ref())?;
    config
        .contexts
        .iter()
        .find(|context| &context.name == context_name)?
        .context
        .as_ref()?
        .namespace
        .clone()
}

/// The paths as "`a` or `b`", for messages.
fn listed(paths: &[PathBuf]) -> String {
    let quoted: Vec<String> = paths
        .iter()
        .map(|path| format!("`{}`", path.display()))
        .collect();
    quoted.join(" or ")
}

/// `error: …` followed by one `caused by: …` line per source, as the style guide asks.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut lines = vec![format!("error: {error}")];
    let mut source = error.source();
    while let Some(cause) = source {
        // The API's own words, not kube-rs' dump of the Status object.
        if let Some(kube::Error::Api(status)) = cause.downcast_ref::<kube::Error>() {
            lines.push(format!(
                "  caused by: the API server answered {} {}: {}",
                status.code, status.reason, status.message
            ));
            break;
        }
        lines.push(format!("  caused by: {cause}"));
        source = cause.source();
    }
    lines.push(String::new());
    lines.join("\n")
}
