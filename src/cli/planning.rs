//! What `diff` and `apply` share: the plan's flags, and the road from the jobs file to a plan — load and validate
//! the file, connect, read the live state, render, plan, check the quota, and let the server dry-run the writes.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::{Error, GlobalArgs, connection, jobs_file, tool_name};
use crate::cluster::{self, Connection, ContextInputs, Passwd, Snapshot};
use crate::config::diagnostic::render as render_problems;
use crate::config::image::ImageTable;
use crate::config::{self, Context, Job, JobsFile};
use crate::output::Printer;
use crate::plan::{self, Plan, PlanOptions};
use crate::render::context::DEFAULT_SET_NAME;
use crate::render::{self, Rendered, read_trigger_files};

/// The flags that shape a plan.
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent command-line flags, each named after its flag"
)]
#[derive(Debug, Args)]
#[command(next_help_heading = "Plan options")]
pub struct PlanArgs {
    /// Only these jobs (repeatable); nothing else is touched or pruned (upstream `load --job`)
    #[arg(long = "job", value_name = "NAME")]
    pub jobs: Vec<String>,

    /// Delete and re-create this job even when unchanged; a one-off runs again (repeatable)
    #[arg(long, value_name = "NAME")]
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
    #[arg(long = "set", value_name = "NAME", default_value = DEFAULT_SET_NAME)]
    pub set_name: String,

    /// Skip the server-side dry run of the planned writes (`diff`, `apply --dry-run`)
    #[arg(long)]
    pub no_server_dry_run: bool,
}

impl PlanArgs {
    fn options(&self) -> PlanOptions {
        PlanOptions {
            only_jobs: self.jobs.clone(),
            replace: self.replace.clone(),
            retry_failed: self.retry_failed,
            prune: !self.no_prune,
            allow_mass_delete: self.allow_mass_delete,
            allow_empty: self.allow_empty,
        }
    }
}

/// A plan and everything it was made from, for `diff` to show and `apply` to carry out.
pub(crate) struct Planned {
    pub(crate) connection: Connection,
    pub(crate) namespace: String,
    pub(crate) set_name: String,
    tool: String,
    directory: PathBuf,
    file: JobsFile,
    /// The file's jobs, rendered, in file order.
    pub(crate) desired: Vec<(Job, Rendered)>,
    pub(crate) snapshot: Snapshot,
    pub(crate) plan: Plan,
}

impl Planned {
    /// Reads the live state again and plans again: `apply` does so once it holds the lock, so that it carries
    /// out a plan nobody else can invalidate.
    pub(crate) async fn refresh(&mut self, args: &PlanArgs) -> Result<(), Error> {
        self.snapshot = Box::pin(cluster::read(
            &self.connection.client,
            &self.namespace,
            &self.set_name,
        ))
        .await?;
        let (desired, mut plan) = render_and_plan(
            &self.file,
            &self.snapshot,
            args,
            &self.tool,
            &self.directory,
        )?;
        plan::quota::check(&mut plan, &self.snapshot.live, &self.snapshot.quotas);
        self.desired = desired;
        self.plan = plan;
        Ok(())
    }
}

/// How far `prepare` got.
pub(crate) enum Prepared {
    Planned(Box<Planned>),
    /// The file is invalid; its problems were printed.
    Invalid,
}

/// From the jobs file to a plan (see the module documentation). Invalid files are reported before any
/// connection is made, so a typo is caught even without a cluster.
pub(crate) async fn prepare(
    global: &GlobalArgs,
    args: &PlanArgs,
    server_dry_run: bool,
    printer: Printer,
) -> Result<Prepared, Error> {
    let path = jobs_file::locate(global)?;
    let bytes = jobs_file::read(&path)?;
    let tool = tool_name(global).ok_or(Error::NoTool)?;
    let directory = absolute(&jobs_file::directory_of(&path));

    let bundled = ImageTable::bundled();
    let load = |images: &ImageTable| {
        load(
            &path,
            &bytes,
            &tool,
            images,
            &directory,
            args.allow_empty,
            printer,
        )
    };
    let Some(file) = load(&bundled)? else {
        return Ok(Prepared::Invalid);
    };

    let connection = connection::connect(global).await?;
    // `--namespace` names the tool (`tool-<tool>`); the tool names the namespace.
    let namespace = format!("tool-{tool}");
    // Nine requests in flight make a large future: keep it on the heap.
    let snapshot = Box::pin(cluster::read(
        &connection.client,
        &namespace,
        &args.set_name,
    ))
    .await?;

    // The cluster's image table decides; validate again only when it has its own.
    let file = if snapshot.image_config.is_some() {
        let images = cluster::context::image_table(&snapshot);
        match load(&images)? {
            Some(file) => file,
            None => return Ok(Prepared::Invalid),
        }
    } else {
        file
    };
    if !file.warnings.is_empty() {
        printer.message(&render_problems(
            &file.source,
            &file.warnings,
            printer.color(),
        ))?;
    }

    let (desired, mut plan) = render_and_plan(&file, &snapshot, args, &tool, &directory)?;
    plan::quota::check(&mut plan, &snapshot.live, &snapshot.quotas);
    if server_dry_run && !args.no_server_dry_run {
        cluster::dry_run::confirm(&connection.client, &namespace, &mut plan).await?;
    }
    Ok(Prepared::Planned(Box::new(Planned {
        connection,
        namespace,
        set_name: args.set_name.clone(),
        tool,
        directory,
        file,
        desired,
        snapshot,
        plan,
    })))
}

/// Renders the file's jobs for the snapshot's cluster and plans them.
fn render_and_plan(
    file: &JobsFile,
    snapshot: &Snapshot,
    args: &PlanArgs,
    tool: &str,
    directory: &Path,
) -> Result<(Vec<(Job, Rendered)>, Plan), Error> {
    let patterns = file
        .jobs
        .iter()
        .flat_map(|located| &located.job.trigger_files)
        .map(String::as_str);
    let trigger_files = read_trigger_files(directory, patterns)?;
    let context = cluster::render_context(
        snapshot,
        ContextInputs {
            tool,
            set_name: &args.set_name,
            file_directory: directory,
            trigger_files,
            uids: &Passwd,
        },
    )?;
    let desired = file
        .jobs
        .iter()
        .map(|located| {
            Ok((
                located.job.clone(),
                render::objects(&located.job, &context)?,
            ))
        })
        .collect::<Result<Vec<_>, render::RenderError>>()?;
    let plan = plan::compute(
        &desired,
        &snapshot.live,
        &snapshot.inventory(),
        &context,
        &args.options(),
    );
    Ok((desired, plan))
}

/// Loads the file with `images`; `None` (after printing every problem) when it is invalid. With `allow_empty`
/// an empty list (`[]`) is a file without jobs.
fn load(
    path: &Path,
    bytes: &[u8],
    tool: &str,
    images: &ImageTable,
    directory: &Path,
    allow_empty: bool,
    printer: Printer,
) -> Result<Option<JobsFile>, Error> {
    let count_trigger_files = |pattern: &str| jobs_file::count_matches(directory, pattern);
    let context = Context {
        tool,
        images,
        count_trigger_files: Some(&count_trigger_files),
    };
    let loaded = config::decode(path.display().to_string(), bytes.to_vec())
        .and_then(|source| config::load(source, &context));
    match loaded {
        Ok(file) => Ok(Some(file)),
        Err(invalid)
            if allow_empty
                && invalid
                    .problems
                    .iter()
                    .all(|problem| !problem.is_error() || problem.code == config::EMPTY_LIST) =>
        {
            Ok(Some(JobsFile {
                source: invalid.source,
                jobs: Vec::new(),
                warnings: invalid
                    .problems
                    .into_iter()
                    .filter(|problem| !problem.is_error())
                    .collect(),
            }))
        }
        Err(invalid) => {
            printer.message(&render_problems(
                &invalid.source,
                &invalid.problems,
                printer.color(),
            ))?;
            Ok(None)
        }
    }
}

/// `directory` made absolute (the local cluster's pods run there), as written when that fails.
fn absolute(directory: &Path) -> PathBuf {
    std::path::absolute(directory).unwrap_or_else(|_| directory.to_owned())
}
