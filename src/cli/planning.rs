//! What `diff` and `apply` share: the plan's flags, turned into the pipeline's [`PlanSettings`], and the command
//! line's road to a plan — find and load the jobs file, print its problems, connect, and hand it to the pipeline.

use clap::Args;

use crate::cli::{Error, GlobalArgs, connection, jobs_file, tool_name};
use crate::config::image::ImageTable;
use crate::output::Printer;
use crate::pipeline::{self, PlanSettings, Prepared, Source};
use crate::plan::PlanOptions;
use crate::render::context::DEFAULT_SET_NAME;

/// The flags that shape a plan.
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent command-line flags, each named after its flag"
)]
#[derive(Debug, Args)]
#[command(next_help_heading = "Plan options")]
pub struct PlanArgs {
    /// Only these jobs (repeatable); nothing else is touched or pruned (upstream `load --job`)
    #[arg(long = "job", value_name = "NAME", value_parser = crate::cli::job_name)]
    pub jobs: Vec<String>,

    /// Delete and re-create this job even when unchanged; a one-off runs again (repeatable)
    #[arg(long, value_name = "NAME", value_parser = crate::cli::job_name)]
    pub replace: Vec<String>,

    /// Run again every one-off whose last run with its current definition failed
    #[arg(long)]
    pub retry_failed: bool,

    /// Do not delete jobs that are in the inventory but no longer in the file
    #[arg(long)]
    pub no_prune: bool,

    /// Accept deleting more than half of the inventory's jobs, or all of them
    #[arg(long)]
    pub allow_mass_delete: bool,

    /// Accept a file that is an empty list, `[]`: every job of the inventory is deleted
    #[arg(long)]
    pub allow_empty: bool,

    /// The inventory's name, to keep several files apart in one tool
    #[arg(
        long = "set",
        value_name = "NAME",
        default_value = DEFAULT_SET_NAME,
        value_parser = crate::cli::set_name
    )]
    pub set_name: String,

    /// Skip the server-side dry run of the planned writes (`diff`, `apply --dry-run`)
    #[arg(long)]
    pub no_server_dry_run: bool,

    /// Set by the daemon for reconciles the user did not ask for ([`PlanOptions::ignore_rerun_always`]).
    #[arg(skip)]
    pub ignore_rerun_always: bool,
}

impl PlanArgs {
    /// The pipeline's settings; the server dry-runs the writes when the command does (`server_dry_run`) and
    /// `--no-server-dry-run` was not given.
    pub(crate) fn settings(&self, server_dry_run: bool) -> PlanSettings {
        PlanSettings {
            set_name: self.set_name.clone(),
            options: self.options(),
            server_dry_run: server_dry_run && !self.no_server_dry_run,
        }
    }

    fn options(&self) -> PlanOptions {
        PlanOptions {
            only_jobs: self.jobs.clone(),
            replace: self.replace.clone(),
            retry_failed: self.retry_failed,
            prune: !self.no_prune,
            allow_mass_delete: self.allow_mass_delete,
            allow_empty: self.allow_empty,
            ignore_rerun_always: self.ignore_rerun_always,
        }
    }
}

/// The jobs file and tool the command line names.
pub(crate) fn locate(global: &GlobalArgs) -> Result<Source, Error> {
    Ok(Source::new(jobs_file::locate(global)?, tool_name(global)?))
}

/// From the jobs file to a plan. Invalid files are reported before any connection is made, so a typo is caught
/// even without a cluster; the problems and warnings are printed.
pub(crate) async fn prepare(
    global: &GlobalArgs,
    args: &PlanArgs,
    server_dry_run: bool,
    printer: Printer,
) -> Result<Prepared, Error> {
    let source = locate(global)?;
    let bytes = jobs_file::read(&source.path)?;
    let file = match source.load(
        &bytes,
        &ImageTable::bundled(),
        args.allow_empty,
        printer.color(),
    ) {
        Ok(file) => file,
        Err(problems) => {
            printer.message(&problems)?;
            return Ok(Prepared::Invalid(problems));
        }
    };
    let connection = connection::connect(global).await?;
    let settings = args.settings(server_dry_run);
    let prepared =
        pipeline::plan(connection, source, &bytes, file, &settings, printer.color()).await?;
    match &prepared {
        Prepared::Invalid(problems) => printer.message(problems)?,
        Prepared::Planned(planned) => {
            if let Some(warnings) = &planned.warnings {
                printer.message(warnings)?;
            }
        }
    }
    Ok(prepared)
}
