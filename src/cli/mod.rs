//! The command line: clap definitions, and the dispatch from a parsed command to the code that runs it.
//!
//! One file per subcommand. Each turns its arguments into inputs for the pipeline stages and reports through
//! the [`Printer`]; none of them prints directly or exits the process.

mod completions;
mod jobs_file;
mod schema;
mod validate;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
#[derive(Debug, Args)]
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
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a jobs file without contacting any cluster
    ///
    /// Reports every problem of the file at once, with file, line and column, and exits with 2 when the file is
    /// invalid. Warnings (legacy forms, deprecated images) do not make it invalid.
    Validate,

    /// Print the JSON Schema of jobs.yaml, for editors
    ///
    /// Add `# yaml-language-server: $schema=<path or URL of the schema>` to the top of jobs.yaml to have
    /// editors with a YAML language server check it as you type.
    Schema,

    /// Print a shell completion script
    ///
    /// For example: `toolforge-jobs completions bash > ~/.local/share/bash-completion/completions/toolforge-jobs`.
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },
}

/// Runs a parsed command line.
pub fn run(cli: &Cli) -> ExitStatus {
    let printer = Printer::new(cli.global.no_color);
    crate::output::logging::init(cli.global.verbose, printer.color());
    let result = match &cli.command {
        Command::Validate => validate::run(&cli.global, printer),
        Command::Schema => schema::run(printer),
        Command::Completions { shell } => completions::run(*shell, printer),
    };
    match result {
        Ok(status) => status,
        Err(error) => {
            // If stderr itself is gone there is nobody left to tell.
            let _ = printer.message(&format!("error: {error}\n"));
            error.exit_status()
        }
    }
}

/// Errors of the command-line layer that end a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no jobs file given, and neither `{}` nor `{}` exists; pass one with `-f FILE`", .searched[0].display(), .searched.get(1).map_or(String::new(), |path| path.display().to_string()))]
    NoJobsFile { searched: Vec<PathBuf> },
    #[error("cannot read `{}`: {source}", .path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{}` is {size} bytes; jobs files may be at most {max}", .path.display())]
    FileTooLarge {
        path: PathBuf,
        size: u64,
        max: usize,
    },
    #[error("`{}` is not UTF-8 text (invalid byte at offset {offset})", .path.display())]
    NotUtf8 { path: PathBuf, offset: usize },
    #[error("cannot write the output")]
    Output(#[from] std::io::Error),
}

impl Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::NoJobsFile { .. } | Error::FileTooLarge { .. } | Error::NotUtf8 { .. } => {
                ExitStatus::Invalid
            }
            Error::ReadFile { .. } | Error::Output(_) => ExitStatus::Failure,
        }
    }
}

/// The tool named by `--tool`, `--namespace tool-<tool>`, or the Toolforge account running us (`tools.<tool>`).
fn tool_name(global: &GlobalArgs) -> Option<String> {
    if let Some(tool) = &global.tool {
        return Some(tool.clone());
    }
    if let Some(namespace) = &global.namespace {
        return namespace.strip_prefix("tool-").map(str::to_owned);
    }
    std::env::var("USER")
        .ok()
        .and_then(|user| user.strip_prefix("tools.").map(str::to_owned))
}
