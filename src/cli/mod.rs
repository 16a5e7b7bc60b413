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
mod serve;
mod show;
mod status;
mod table;
mod validate;
mod wait;
mod wait_file;
mod watch;

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};
use kube::config::Kubeconfig;

use crate::config::{JobNameError, check_job_name};
use crate::model::ToolName;
use crate::model::tool::{NamespaceError, ToolNameError};
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
    ///
    /// Must be `tool-<tool>` with a valid tool name (see `--tool`).
    #[arg(
        long,
        global = true,
        value_name = "NAMESPACE",
        conflicts_with = "tool",
        value_parser = ToolName::from_namespace
    )]
    pub namespace: Option<ToolName>,

    /// The tool whose jobs these are (default: from the namespace)
    ///
    /// Lower-case letters, digits and `-`, starting and ending with a letter or digit, at most 58 characters, so
    /// that `tool-<tool>` is a valid namespace.
    #[arg(long, global = true, value_name = "TOOL", value_parser = ToolName::new)]
    pub tool: Option<ToolName>,

    /// Use the embedded local cluster, started in the background if needed (the default when no kubeconfig
    /// exists)
    #[arg(long, global = true, conflicts_with_all = ["kubeconfig", "context"])]
    pub local: bool,

    /// How long one API request may take, from sending it to the end of the answer (default: 60s)
    ///
    /// Also shortens the connect timeout (10 s) and the longest pause within an answer (30 s) when shorter.
    /// Watches are exempt: they last minutes by design. See docs/commands.md.
    #[arg(long, global = true, value_name = "DURATION", value_parser = connection::request_timeout)]
    pub request_timeout: Option<std::time::Duration>,

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
    ///
    /// Without NAME: waits until the current content of the jobs file (`-f FILE`) has been applied by `apply` or
    /// the `watch` daemon holding the lock — matched by its hash, so a record from before an edit does not count —
    /// and then for what that apply started, as `apply --wait` does. Exit codes as `apply`'s; 1 when nobody
    /// applies the file. See docs/commands.md.
    Wait(wait::WaitArgs),

    /// Write the live jobs as a jobs file that applies as a no-op
    ///
    /// To `--to-file FILE` or `-f FILE` (created or overwritten), else to stdout. `wait`, `trigger` and
    /// `trigger-files` cannot be read from live objects and are not in the dump.
    Dump(dump::DumpArgs),

    /// List the stable pre-built images a job may use
    Images,

    /// Show the tool's quota: running jobs, per-job limits, job definitions
    Quota,

    /// Restart a job: roll its pods, run it now, or run a one-off again
    Restart(restart::RestartArgs),

    /// Show the lock's holder and the inventory: jobs, last apply, last runs
    ///
    /// `--wait` first waits for the jobs file to be applied, as `wait` without a job name does.
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

    /// Serve the Toolforge jobs API, so that the upstream CLI (`toolforge jobs …`) works against this engine
    ///
    /// One server for every tool: the path names the tool, and the caller proves it is that tool with a client
    /// certificate (CN = tool, O=toolforge), a trusted proxy's `X-Toolforge-Tool` header, or a bearer token.
    /// `--local` serves the embedded local cluster and writes a kubeconfig for the upstream CLI. See
    /// docs/serve.md.
    Serve(Box<serve::ServeArgs>),
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
        Command::LocalCluster(args) => {
            let tool = cli.global.tool.as_ref().or(cli.global.namespace.as_ref());
            local_cluster::run(args, tool, printer).await
        }
        Command::List(args) => Box::pin(list::run(&cli.global, args, printer)).await,
        Command::Show(args) => Box::pin(show::run(&cli.global, args, printer)).await,
        Command::Logs(args) => Box::pin(logs::run(&cli.global, args, printer)).await,
        Command::Delete(args) => Box::pin(delete::run(&cli.global, args, printer)).await,
        Command::Flush => Box::pin(delete::flush(&cli.global, printer)).await,
        Command::Run(args) => Box::pin(run::run(&cli.global, args, printer)).await,
        Command::Wait(args) => Box::pin(wait::run(&cli.global, args, printer)).await,
        Command::Dump(args) => Box::pin(dump::run(&cli.global, args, printer)).await,
        Command::Images => Box::pin(images::run(&cli.global, printer)).await,
        Command::Restart(args) => Box::pin(restart::run(&cli.global, args, printer)).await,
        Command::Status(args) => Box::pin(status::run(&cli.global, args, printer)).await,
        Command::Quota => Box::pin(quota::run(&cli.global, printer)).await,
        Command::Serve(args) => Box::pin(serve::run(&cli.global, args, printer)).await,
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
    #[error("{0}")]
    Serve(String),
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
    #[error("the namespace of kubeconfig context `{context}` does not name a tool")]
    ContextNamespace {
        context: String,
        #[source]
        problem: NamespaceError,
    },
    #[error("`$USER` is `{user}`, which does not name a tool; pass `--tool NAME`")]
    UserTool {
        user: String,
        #[source]
        problem: ToolNameError,
    },
    #[error(transparent)]
    Connect(#[from] crate::cluster::ConnectError),
    #[error(transparent)]
    Read(#[from] crate::cluster::ReadError),
    #[error(transparent)]
    Context(#[from] crate::render::context::ContextError),
    #[error(transparent)]
    Render(#[from] crate::render::RenderError),
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::Error),
    #[error(transparent)]
    Lock(#[from] crate::cluster::lock::LockError),
    #[error(transparent)]
    Inventory(#[from] crate::cluster::inventory::InventoryWriteError),
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
    #[error("the daemon stopped")]
    Watch(#[from] crate::watch::WatchError),
}

impl Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            // A file named with `-f` that does not exist, or is no regular file, is a usage error, as no jobs
            // file at all is.
            Error::ReadFile { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidInput
                ) =>
            {
                ExitStatus::Invalid
            }
            Error::NoJobsFile { .. }
            | Error::NoTool
            | Error::ContextNamespace { .. }
            | Error::UserTool { .. }
            | Error::Render(_)
            | Error::NotScheduled { .. } => ExitStatus::Invalid,
            Error::Pipeline(error) if error.is_invalid_file() => ExitStatus::Invalid,
            Error::Pipeline(error) if error.is_lock_held() => ExitStatus::LockHeld,
            Error::Lock(crate::cluster::lock::LockError::Held { .. })
            | Error::Watch(crate::watch::WatchError::LockLost) => ExitStatus::LockHeld,
            Error::ReadFile { .. }
            | Error::Output(_)
            | Error::LocalCluster(_)
            | Error::Connect(_)
            | Error::Read(_)
            | Error::Context(_)
            | Error::Pipeline(_)
            | Error::Inventory(_)
            | Error::NoSuchJob { .. }
            | Error::NoLogs { .. }
            | Error::PodLog { .. }
            | Error::JobExists { .. }
            | Error::NotRunYet { .. }
            | Error::Wait(_)
            | Error::WriteFile { .. }
            | Error::Watch(_)
            | Error::Serve(_)
            | Error::Lock(_) => ExitStatus::Failure,
        }
    }
}

/// The tool named by `--tool`, `--namespace tool-<tool>`, the kubeconfig context's namespace, or the Toolforge
/// account running us (`tools.<tool>`), in that order; each checked as a [`ToolName`] (the flags when the
/// command line is parsed), so that no request is sent for a namespace built from an unchecked name.
fn tool_name(global: &GlobalArgs) -> Result<ToolName, Error> {
    if let Some(tool) = global.tool.as_ref().or(global.namespace.as_ref()) {
        return Ok(tool.clone());
    }
    if let Some((context, namespace)) = kubeconfig_namespace(global) {
        return ToolName::from_namespace(&namespace)
            .map_err(|problem| Error::ContextNamespace { context, problem });
    }
    let user = std::env::var("USER").ok();
    if let Some(tool) = user.as_deref().and_then(|user| user.strip_prefix("tools.")) {
        return ToolName::new(tool).map_err(|problem| Error::UserTool {
            user: user.clone().unwrap_or_default(),
            problem,
        });
    }
    // On the embedded local cluster the tool is the user's own: their name, as a DNS label.
    if connection::target(global).is_embedded() {
        Ok(local_tool_name(user.as_deref().unwrap_or_default()))
    } else {
        Err(Error::NoTool)
    }
}

/// Creates `directory` private to the user (0700), as a directory of credentials must be.
fn private_directory(directory: &Path) -> Result<(), Error> {
    toolforge_local_cluster::private_files::create_directory(directory).map_err(|source| {
        Error::WriteFile {
            path: directory.to_owned(),
            source,
        }
    })
}

/// Writes `contents` to `path`, readable by the user only (0600), as credentials must be.
fn write_private(path: &Path, contents: &str) -> Result<(), Error> {
    toolforge_local_cluster::private_files::write(path, contents).map_err(|source| {
        Error::WriteFile {
            path: path.to_owned(),
            source,
        }
    })
}

/// The longest tool name made from `$USER`.
const MAX_LOCAL_TOOL_LENGTH: usize = 40;

/// `$USER` made a valid tool name (lower-case letters, digits, `-`, starting with a letter), or `tool` when
/// nothing is left.
fn local_tool_name(user: &str) -> ToolName {
    let name: String = user
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(MAX_LOCAL_TOOL_LENGTH)
        .collect();
    let name = name.trim_matches('-');
    let name = if name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name
    } else {
        "tool"
    };
    ToolName::new(name)
        .or_else(|_| ToolName::new("tool"))
        .expect("`tool` is a valid tool name")
}

/// A job's name from the command line (`show NAME`, …), checked by the rules of jobs.yaml names, so that it is
/// safe in a request path; clap's `value_parser`.
fn job_name(text: &str) -> Result<String, JobNameError> {
    check_job_name(text).map(|()| text.to_owned())
}

/// The longest inventory name: it is a label value as well as the ConfigMap's name.
const MAX_SET_NAME_LENGTH: usize = 63;

/// An inventory's name (`--set NAME`): the name of a ConfigMap and the value of a label, so an RFC 1123
/// subdomain of at most 63 characters; clap's `value_parser`.
fn set_name(text: &str) -> Result<String, String> {
    if text.chars().count() <= MAX_SET_NAME_LENGTH && crate::config::is_dns_subdomain(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not a valid set name: use at most {MAX_SET_NAME_LENGTH} lowercase letters, digits, `-` and \
             `.`, starting and ending with a letter or digit, e.g. `toolforge-jobs-web`"
        ))
    }
}

/// The kubeconfig context in use (`--context`, else the current one) and its namespace, if there is a kubeconfig
/// and the context has one.
fn kubeconfig_namespace(global: &GlobalArgs) -> Option<(String, String)> {
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
    let namespace = config
        .contexts
        .iter()
        .find(|context| &context.name == context_name)?
        .context
        .as_ref()?
        .namespace
        .clone()?;
    Some((context_name.clone(), namespace))
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
    lines.extend(
        crate::output::errors::causes(error)
            .iter()
            .map(|cause| format!("  caused by: {cause}")),
    );
    lines.push(String::new());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn the_local_tool_is_the_user_as_a_tool_name() {
        assert_eq!(local_tool_name("Jane.Doe").as_str(), "jane-doe");
        assert_eq!(local_tool_name("_me_").as_str(), "me");
        for user in ["", "-", "42", "__", "ü"] {
            assert_eq!(local_tool_name(user).as_str(), "tool", "{user:?}");
        }
        // Cut to its length limit, a name does not end with `-`.
        let user = format!("{}.b", "a".repeat(MAX_LOCAL_TOOL_LENGTH - 1));
        assert_eq!(
            local_tool_name(&user).as_str(),
            "a".repeat(MAX_LOCAL_TOOL_LENGTH - 1)
        );
    }

    #[test]
    fn names_on_the_command_line_are_checked_when_it_is_parsed() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("toolforge-jobs").chain(args.iter().copied()))
        };
        let cli = parse(&["--namespace", "tool-mytool", "list"]).unwrap();
        assert_eq!(cli.global.namespace.unwrap().as_str(), "mytool");
        let cli = parse(&["--tool", "mytool", "show", "task1.1"]).unwrap();
        assert_eq!(cli.global.tool.unwrap().namespace(), "tool-mytool");
        for args in [
            &["--tool", "a/b", "list"][..],
            &["--tool", "", "list"],
            &["--namespace", "default", "list"],
            &["--namespace", "tool-", "list"],
            &["show", "../x"],
            &["apply", "--job", "a/b"],
            &["diff", "--replace", "A"],
            &["status", "--set", "a/b"],
            &["watch", "--set", &"a".repeat(64)],
        ] {
            let error = parse(args).map(|_| ()).unwrap_err();
            assert_eq!(
                error.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{args:?}"
            );
            assert_eq!(error.exit_code(), 2, "{args:?}");
        }
    }
}
