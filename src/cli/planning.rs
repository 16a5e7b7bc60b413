//! What `diff` and `apply` share: the plan's flags, and the road from the jobs file to a plan — load and validate
//! the file, connect, read the live state, render, plan, check the quota, and let the server dry-run the writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::apply::{Executor, Options, Origin, Progress};
use crate::cli::{Error, GlobalArgs, connection, jobs_file, tool_name};
use crate::cluster::inventory::InventoryStore;
use crate::cluster::{self, Connection, ContextInputs, Passwd, Snapshot};
use crate::config::diagnostic::render as render_problems;
use crate::config::image::ImageTable;
use crate::config::{self, Context, Job, JobKind, JobsFile, ToolName};
use crate::output::Printer;
use crate::plan::{self, Action, Plan, PlanOptions};
use crate::render::context::DEFAULT_SET_NAME;
use crate::render::inventory;
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

/// A plan and everything it was made from, for `diff` to show and `apply` to carry out.
pub(crate) struct Planned {
    pub(crate) connection: Connection,
    pub(crate) namespace: String,
    pub(crate) set_name: String,
    tool: ToolName,
    directory: PathBuf,
    file: JobsFile,
    /// [`inventory::content_hash`] of the file's content.
    file_hash: String,
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

impl Planned {
    /// Whether the cluster is not yet what the file says: a change, or an unchanged job whose inventory record is
    /// missing (the inventory was deleted by hand; the objects still carry our labels).
    pub(crate) fn differs(&self) -> bool {
        let inventory = self.snapshot.inventory();
        self.plan.has_changes()
            || self.plan.actions.iter().any(|action| {
                action.action == Action::Unchanged && !inventory.jobs.contains_key(&action.job)
            })
    }

    /// Whether carrying out the plan writes anything: what [`Planned::differs`], or what the inventory learns
    /// (a run's end, a pruned one-off's record taken back).
    pub(crate) fn needs_writes(&self) -> bool {
        self.differs()
            || self
                .plan
                .actions
                .iter()
                .any(|action| action.records.is_some())
    }

    /// The executor that carries out this plan for the lock holder `by`: the rendered objects, each `wait`
    /// one-off's timeout as its barrier's, the inventory as read, progress to `progress`.
    pub(crate) fn executor(
        &self,
        by: &str,
        progress: Arc<dyn Progress>,
        concurrency: usize,
    ) -> Executor {
        let rendered = self
            .desired
            .iter()
            .map(|(job, rendered)| (job.name.clone(), rendered.clone()))
            .collect();
        let barrier_timeouts = self
            .desired
            .iter()
            .filter_map(|(job, _)| match job.kind {
                JobKind::OneOff {
                    wait: Some(seconds),
                    ..
                } => Some((job.name.clone(), Duration::from_secs(seconds))),
                _ => None,
            })
            .collect();
        let inventory = InventoryStore::new(
            &self.connection.client,
            &self.namespace,
            &self.set_name,
            self.snapshot.inventory.clone(),
        );
        Executor::new(
            self.connection.client.clone(),
            &self.namespace,
            self.snapshot.live.clone(),
            rendered,
            inventory,
            progress,
            Options {
                concurrency,
                barrier_timeouts,
                origin: Some(Origin {
                    by: by.to_owned(),
                    file_hash: self.file_hash.clone(),
                }),
                ..Options::default()
            },
        )
    }
}

/// How far `prepare` got.
pub(crate) enum Prepared {
    Planned(Box<Planned>),
    /// The file is invalid; its problems were printed.
    Invalid,
}

/// Where the jobs come from: the file, the tool they belong to, and the directory the file's relative paths
/// start from.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) path: PathBuf,
    pub(crate) tool: ToolName,
    /// The file's directory, absolute.
    pub(crate) directory: PathBuf,
}

impl Source {
    /// The jobs file and tool the command line names.
    pub(crate) fn locate(global: &GlobalArgs) -> Result<Self, Error> {
        let path = jobs_file::locate(global)?;
        let tool = tool_name(global)?;
        let directory = absolute(&jobs_file::directory_of(&path));
        Ok(Self {
            path,
            tool,
            directory,
        })
    }

    /// Loads `bytes` (the file's content) with `images`. An invalid file gives every problem, rendered. With
    /// `allow_empty` an empty list (`[]`) is a file without jobs.
    pub(crate) fn load(
        &self,
        bytes: &[u8],
        images: &ImageTable,
        allow_empty: bool,
        color: bool,
    ) -> Result<JobsFile, String> {
        let count_trigger_files =
            |pattern: &str| jobs_file::count_matches(&self.directory, pattern);
        let context = Context {
            tool: self.tool.as_str(),
            images,
            count_trigger_files: Some(&count_trigger_files),
        };
        let loaded = config::decode(self.path.display().to_string(), bytes.to_vec())
            .and_then(|source| config::load(source, &context));
        match loaded {
            Ok(file) => Ok(file),
            Err(invalid)
                if allow_empty
                    && invalid.problems.iter().all(|problem| {
                        !problem.is_error() || problem.code == config::EMPTY_LIST
                    }) =>
            {
                Ok(JobsFile {
                    source: invalid.source,
                    jobs: Vec::new(),
                    warnings: invalid
                        .problems
                        .into_iter()
                        .filter(|problem| !problem.is_error())
                        .collect(),
                })
            }
            Err(invalid) => Err(render_problems(&invalid.source, &invalid.problems, color)),
        }
    }
}

/// From the jobs file to a plan (see the module documentation). Invalid files are reported before any
/// connection is made, so a typo is caught even without a cluster.
pub(crate) async fn prepare(
    global: &GlobalArgs,
    args: &PlanArgs,
    server_dry_run: bool,
    printer: Printer,
) -> Result<Prepared, Error> {
    let source = Source::locate(global)?;
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
            return Ok(Prepared::Invalid);
        }
    };
    let connection = connection::connect(global).await?;
    plan_loaded(
        connection,
        source,
        &bytes,
        file,
        args,
        server_dry_run,
        printer,
    )
    .await
}

/// From a file loaded with the bundled image table to a plan, over an open connection: read the live state,
/// validate again when the cluster has its own image table, render, plan, check the quota, dry-run. The `watch`
/// daemon calls it for every reconcile with its one connection. The file's warnings are printed.
pub(crate) async fn plan_loaded(
    connection: Connection,
    source: Source,
    bytes: &[u8],
    file: JobsFile,
    args: &PlanArgs,
    server_dry_run: bool,
    printer: Printer,
) -> Result<Prepared, Error> {
    // `--namespace` names the tool (`tool-<tool>`); the tool names the namespace.
    let namespace = source.tool.namespace();
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
        match source.load(bytes, &images, args.allow_empty, printer.color()) {
            Ok(file) => file,
            Err(problems) => {
                printer.message(&problems)?;
                return Ok(Prepared::Invalid);
            }
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

    let Source {
        tool, directory, ..
    } = source;
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
        file_hash: inventory::content_hash(bytes),
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
    tool: &ToolName,
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
    let jobs: Vec<Job> = file
        .jobs
        .iter()
        .map(|located| located.job.clone())
        .collect();
    let desired = render::all(&jobs, &context)?;
    let plan = plan::compute(
        &desired,
        &snapshot.live,
        &snapshot.inventory(),
        &context,
        &args.options(),
    );
    Ok((desired, plan))
}

/// `directory` made absolute (the local cluster's pods run there), as written when that fails.
fn absolute(directory: &Path) -> PathBuf {
    std::path::absolute(directory).unwrap_or_else(|_| directory.to_owned())
}
