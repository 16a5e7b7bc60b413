//! The pipeline as a library: from a loaded jobs file to a plan — read the live state, validate again against the
//! cluster's image table, render, plan, check the quota, let the server dry-run the writes — and from a plan to
//! the [`Executor`] that carries it out. It prints nothing: `diff`, `apply`, `watch` and `wait` show what it
//! returns. The settings are built once from the command line ([`PlanSettings`]).

pub mod carry_out;
pub mod imperative;
pub mod live;
pub mod pod_logs;
pub mod source;
pub mod trigger_files;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use carry_out::{CarriedOut, CarryOut, carry_out};
pub use source::Source;

use crate::apply::{Executor, Options, Origin, Progress, RenderedJob};
use crate::cluster::inventory::InventoryStore;
use crate::cluster::{self, Connection, ContextInputs, Coverage, Passwd, Snapshot};
use crate::config::diagnostic::render as render_problems;
use crate::config::{Job, JobKind, JobsFile};
use crate::model::ToolName;
use crate::model::inventory::{self, RunOutcome};
use crate::plan::{self, Action, ObjectKind, Plan, PlanOptions};
use crate::render::{self, Rendered};
use trigger_files::read_trigger_files;

/// What shapes a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanSettings {
    /// The inventory's name.
    pub set_name: String,
    pub options: PlanOptions,
    /// Whether the server checks the planned writes with a dry run.
    pub server_dry_run: bool,
}

impl PlanSettings {
    /// A plain plan of set `set_name`: pruning, no server dry run.
    pub fn of_set(set_name: &str) -> Self {
        Self {
            set_name: set_name.to_owned(),
            options: PlanOptions::pruning(),
            server_dry_run: false,
        }
    }
}

/// Why no plan could be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Read(#[from] cluster::ReadError),
    #[error("cannot read the trigger files")]
    TriggerFiles(#[from] trigger_files::TriggerFilesError),
    #[error(transparent)]
    Context(#[from] render::context::ContextError),
    #[error(transparent)]
    Render(#[from] render::RenderError),
    #[error(transparent)]
    DryRun(#[from] cluster::dry_run::DryRunError),
    #[error("writing to the cluster stopped")]
    Apply(#[source] Box<crate::apply::ApplyError>),
    #[error(transparent)]
    Lock(#[from] cluster::lock::LockError),
    #[error(
        "the lock was taken over by another writer: stopped writing; run the command again once it is done"
    )]
    LockTakenOver,
    #[error("the cluster did not answer the lock's renewals, so the lock expired: stopped writing")]
    LockExpired,
    #[error("cannot create the namespace `{namespace}` on the local cluster")]
    Namespace {
        namespace: String,
        #[source]
        source: kube::Error,
    },
}

impl From<crate::apply::ApplyError> for Error {
    fn from(error: crate::apply::ApplyError) -> Self {
        Error::Apply(Box::new(error))
    }
}

impl Error {
    /// Whether the jobs file is at fault (it cannot be rendered), not the cluster.
    pub fn is_invalid_file(&self) -> bool {
        matches!(self, Error::Render(_))
    }

    /// Whether a write found that what the plan was made from changed since it was read (see
    /// [`crate::apply::ApplyError::is_conflict`]).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Apply(error) if error.is_conflict())
    }

    /// Whether another writer holds the tool's lock, or took it over.
    pub fn is_lock_held(&self) -> bool {
        matches!(
            self,
            Error::Lock(cluster::lock::LockError::Held { .. }) | Error::LockTakenOver
        )
    }
}

/// How far [`plan`] got.
pub enum Prepared {
    Planned(Box<Planned>),
    /// The file is invalid with the cluster's image table: its problems, rendered.
    Invalid(String),
}

/// A plan and everything it was made from, for `diff` to show and `apply` to carry out.
pub struct Planned {
    pub connection: Connection,
    pub namespace: String,
    pub set_name: String,
    tool: ToolName,
    directory: PathBuf,
    file: JobsFile,
    /// [`inventory::content_hash`] of the file's content.
    file_hash: String,
    /// What carrying the plan out needs of the file's rendered jobs.
    desired: Desired,
    pub snapshot: Snapshot,
    pub plan: Plan,
    /// The file's warnings, rendered, for the caller to show.
    pub warnings: Option<String>,
}

impl Planned {
    /// Reads the live state again and plans again: `apply` does so once it holds the lock, so that it carries
    /// out a plan nobody else can invalidate.
    pub async fn refresh(&mut self, settings: &PlanSettings) -> Result<(), Error> {
        self.snapshot = Box::pin(cluster::read(
            &self.connection.client,
            &self.namespace,
            &self.set_name,
        ))
        .await?;
        let (desired, mut plan) = render_and_plan(
            &self.file,
            &self.snapshot,
            settings,
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
    /// Makes sure the plan still stands once `apply` holds the lock: when the inventory is the version the plan
    /// was made from, no apply wrote since (every one writes it), and the plan is carried out as it is — what
    /// anybody else changed meanwhile fails the write it touches, by its precondition (the listed
    /// resourceVersion of an update, the UID of a delete, a create's name). Otherwise, or with no inventory yet,
    /// it reads and plans again ([`Planned::refresh`]).
    pub async fn confirm(&mut self, settings: &PlanSettings) -> Result<(), Error> {
        let api = kube::Api::namespaced(self.connection.client.clone(), &self.namespace);
        let now = cluster::inventory::version(&api, &self.namespace, &self.set_name).await?;
        let read = self
            .snapshot
            .inventory
            .as_ref()
            .and_then(|stored| stored.resource_version.as_ref());
        if now.is_some() && now.as_ref() == read {
            return Ok(());
        }
        self.refresh(settings).await
    }
}

impl Planned {
    /// Whether the cluster is not yet what the file says ([`differs`]).
    pub fn differs(&self) -> bool {
        differs(&self.plan, &self.snapshot)
    }

    /// Whether carrying out the plan writes anything: what [`Planned::differs`], or what the inventory learns
    /// (a run's end, a pruned one-off's record taken back).
    pub fn needs_writes(&self) -> bool {
        needs_writes(&self.plan, &self.snapshot)
    }

    /// The executor that carries out this plan for the lock holder `by`: the rendered objects, each `wait`
    /// one-off's timeout as its barrier's, the inventory as read, progress to `progress`.
    fn executor(&self, by: &str, progress: Arc<dyn Progress>, concurrency: usize) -> Executor {
        let inventory = InventoryStore::new(
            &self.connection.client,
            &self.namespace,
            &self.set_name,
            self.snapshot.inventory.clone(),
        );
        Executor::new(
            self.connection.client.clone(),
            &self.namespace,
            Arc::clone(&self.snapshot.live),
            self.desired.rendered.clone(),
            inventory,
            progress,
            Options {
                concurrency,
                barrier_timeouts: self.desired.barrier_timeouts.clone(),
                origin: Some(Origin {
                    by: by.to_owned(),
                    file_hash: self.file_hash.clone(),
                }),
                ..Options::default()
            },
        )
    }
}

/// What carrying a plan out needs of the file's jobs once they are planned: the plan's writes hold their objects,
/// so each job's rendered objects are dropped once it is planned.
#[derive(Default)]
struct Desired {
    /// What the inventory records of each job, by name.
    rendered: BTreeMap<String, RenderedJob>,
    /// Each `wait` one-off's timeout, as its barrier's.
    barrier_timeouts: BTreeMap<String, Duration>,
}

impl Desired {
    fn add(&mut self, job: &Job, rendered: &Rendered) {
        self.rendered
            .insert(job.name.clone(), RenderedJob::from(rendered));
        if let JobKind::OneOff {
            wait: Some(seconds),
            ..
        } = job.kind
        {
            self.barrier_timeouts
                .insert(job.name.clone(), Duration::from_secs(seconds));
        }
    }
}

/// Makes sure the namespace can be written to: on the embedded local cluster there is no admin to create it, so
/// it is created when missing. Elsewhere the namespace is the cluster's business.
pub async fn writable_namespace(connection: &Connection, namespace: &str) -> Result<(), Error> {
    if connection.embedded.is_none() {
        return Ok(());
    }
    cluster::embedded::ensure_namespace(&connection.client, namespace)
        .await
        .map_err(|source| Error::Namespace {
            namespace: namespace.to_owned(),
            source,
        })
}

/// From a file loaded with the bundled image table to a plan, over an open connection: read the live state,
/// validate again when the cluster has its own image table, render, plan, check the quota, dry-run. The `watch`
/// daemon calls it for every reconcile with its one connection. Problems and warnings are rendered in colour
/// when `color`.
///
/// Reading costs what the plan needs (docs/apply.md, "Reading the live state"): first the inventory and the
/// kinds the file's jobs are made of, at once (Jobs once the inventory shows they are needed, [`needs_jobs`]). A
/// plan made from them stands when it is [`settled`] (a no-op, or one that only records a run's end); any other
/// plan, and any plan of an inventory holding jobs the file no longer has, is made from everything — the other
/// kinds, the cluster's image table, its identity and limits, and the quotas when it writes.
pub async fn plan(
    connection: Connection,
    source: Source,
    bytes: &[u8],
    file: JobsFile,
    settings: &PlanSettings,
    color: bool,
) -> Result<Prepared, Error> {
    // `--namespace` names the tool (`tool-<tool>`); the tool names the namespace.
    let namespace = source.tool.namespace();
    let client = &connection.client;
    // Jobs only once the inventory shows a one-off that may need its Job.
    let in_file = Coverage {
        kinds: file
            .jobs
            .iter()
            .flat_map(|located| ObjectKind::of_job(&located.job))
            .filter(|kind| *kind != ObjectKind::Job)
            .collect(),
        ..Coverage::default()
    };
    let mut snapshot = Box::pin(cluster::read_covering(
        client,
        &namespace,
        &settings.set_name,
        &in_file,
        |inventory| {
            needs_jobs(&file, inventory)
                .then_some(ObjectKind::Job)
                .into_iter()
                .collect()
        },
    ))
    .await?;
    // Jobs that left the file are pruned (or listed): their objects may be of any kind.
    let narrow = if holds_others(&snapshot, &file) {
        None
    } else {
        Some(render_and_plan(
            &file,
            &snapshot,
            settings,
            &source.tool,
            &source.directory,
        ))
    };
    let (file, desired, mut plan) = match narrow {
        Some(Ok((desired, plan))) if settled(&plan, &snapshot) => (file, desired, plan),
        narrow => {
            // A plan that writes needs the quotas too: read them in the same round.
            let writes = !matches!(&narrow, Some(Ok((_, plan))) if !plan.has_changes());
            // Not kept while the plan is made again: at thousands of jobs it is much of the memory.
            drop(narrow);
            let everything = Coverage {
                quotas: writes,
                ..Coverage::everything()
            };
            Box::pin(snapshot.complete(client, &namespace, &everything)).await?;
            // The cluster's image table decides; validate again only when it has its own.
            let file = if snapshot.image_config.is_some() {
                let images = cluster::context::image_table(&snapshot);
                match source.load(bytes, &images, settings.options.allow_empty, color) {
                    Ok(file) => file,
                    Err(problems) => return Ok(Prepared::Invalid(problems)),
                }
            } else {
                file
            };
            let (desired, mut plan) =
                render_and_plan(&file, &snapshot, settings, &source.tool, &source.directory)?;
            if plan.has_changes() {
                let quotas = Coverage {
                    quotas: true,
                    ..Coverage::default()
                };
                Box::pin(snapshot.complete(client, &namespace, &quotas)).await?;
                plan::quota::check(&mut plan, &snapshot.live, &snapshot.quotas);
            }
            (file, desired, plan)
        }
    };
    if settings.server_dry_run {
        cluster::dry_run::confirm(client, &namespace, &mut plan).await?;
    }
    let warnings =
        (!file.warnings.is_empty()).then(|| render_problems(&file.source, &file.warnings, color));
    let Source {
        tool, directory, ..
    } = source;
    Ok(Prepared::Planned(Box::new(Planned {
        connection,
        namespace,
        set_name: settings.set_name.clone(),
        tool,
        directory,
        file,
        file_hash: inventory::content_hash(bytes),
        desired,
        snapshot,
        plan,
        warnings,
    })))
}

/// Whether the snapshot's inventory holds a job the file does not.
fn holds_others(snapshot: &Snapshot, file: &JobsFile) -> bool {
    let in_file: BTreeSet<&str> = file
        .jobs
        .iter()
        .map(|located| located.job.name.as_str())
        .collect();
    snapshot.inventory.as_ref().is_some_and(|stored| {
        stored
            .inventory
            .jobs
            .keys()
            .any(|job| !in_file.contains(job.as_str()))
    })
}

/// Whether the first read lists the namespace's Jobs, once it sees the inventory: unless the last recorded run of
/// every one-off of the file is over (its end is known, or its Job was seen gone). Such a one-off is `done`
/// without its Job; any other may be running, or its Job may say how its run ended. (A one-off whose definition
/// changed since is planned from everything; an earlier definition's runs are over, their Jobs replaced.)
fn needs_jobs(file: &JobsFile, inventory: Option<&inventory::Inventory>) -> bool {
    file.jobs.iter().map(|located| &located.job).any(|job| {
        matches!(job.kind, JobKind::OneOff { .. }) && !last_run_over(inventory, &job.name)
    })
}

/// Whether the last recorded run of `job` is over: its end is known, or its Job was seen gone.
fn last_run_over(inventory: Option<&inventory::Inventory>, job: &str) -> bool {
    inventory
        .and_then(|inventory| inventory.jobs.get(job))
        .and_then(|record| record.runs.last())
        .is_some_and(|run| run.outcome != RunOutcome::Unknown || run.finished.is_some())
}

/// Whether a plan made from a partial read stands as it is: every job unchanged or a one-off done, nothing to
/// write to the cluster, nothing to write to the inventory but the end of a run that its Job shows, nothing to
/// refuse, note or report. What the unread kinds, image table, identity and limits could change is a write or a
/// row of another action, so such a plan is made again from everything. A run's end goes to the inventory
/// alone, and nothing unread bears on it. Without the Jobs listed ([`needs_jobs`]), a `done` one-off of unknown
/// outcome stands only when its last run is recorded as over (an earlier definition's runs are over, their Jobs
/// replaced).
fn settled(plan: &Plan, snapshot: &Snapshot) -> bool {
    let jobs_listed = snapshot.live.jobs_listed;
    let inventory = snapshot.inventory.as_ref().map(|stored| &stored.inventory);
    let learns_only_ends = plan.actions.iter().all(|action| {
        matches!(
            action.records,
            None | Some(plan::RecordUpdate::Outcome { .. })
        )
    });
    !differs(plan, snapshot)
        && learns_only_ends
        && plan.refusals.is_empty()
        && plan.notes.is_empty()
        && !plan.has_errors()
        && plan.actions.iter().all(|action| match action.action {
            Action::Unchanged => true,
            Action::Done { outcome } => {
                jobs_listed
                    || outcome != RunOutcome::Unknown
                    || last_run_over(inventory, &action.job)
            }
            _ => false,
        })
}

/// Whether the cluster is not yet what the file says: a change, or an unchanged job whose inventory record is
/// missing (the inventory was deleted by hand; the objects still carry our labels).
fn differs(plan: &Plan, snapshot: &Snapshot) -> bool {
    let recorded = |job: &str| {
        snapshot
            .inventory
            .as_ref()
            .is_some_and(|stored| stored.inventory.jobs.contains_key(job))
    };
    plan.has_changes()
        || plan
            .actions
            .iter()
            .any(|action| action.action == Action::Unchanged && !recorded(&action.job))
}

/// Whether carrying out `plan` writes anything: what [`differs`], or what the inventory learns (a run's end, a
/// pruned one-off's record taken back).
fn needs_writes(plan: &Plan, snapshot: &Snapshot) -> bool {
    differs(plan, snapshot) || plan.actions.iter().any(|action| action.records.is_some())
}

/// Renders the file's jobs for the snapshot's cluster and plans them; the rendered objects go once planned.
fn render_and_plan(
    file: &JobsFile,
    snapshot: &Snapshot,
    settings: &PlanSettings,
    tool: &ToolName,
    directory: &Path,
) -> Result<(Desired, Plan), Error> {
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
            set_name: &settings.set_name,
            file_directory: directory,
            trigger_files,
            uids: &Passwd,
        },
    )?;
    let mut desired = Desired::default();
    let plan = plan::compute_rendering(
        file.jobs.iter().map(|located| &located.job),
        |job| render::objects(job, &context),
        |job, rendered| desired.add(job, rendered),
        &snapshot.live,
        &snapshot.inventory(),
        &context,
        &settings.options,
    )?;
    Ok((desired, plan))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::image::ImageTable;
    use crate::config::{Context, SourceFile};
    use crate::model::Kind;
    use crate::model::inventory::{Inventory, JobRecord, RunRecord};
    use crate::plan::PlannedAction;

    const ONE_OFF_AND_SCHEDULED: &str = "\
- name: migrate
  command: ./migrate.sh
  image: bookworm
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
";

    fn file(text: &str) -> JobsFile {
        let images = ImageTable::bundled();
        let context = Context {
            tool: "mytool",
            images: &images,
            count_trigger_files: None,
        };
        crate::config::load(SourceFile::new("jobs.yaml", text), &context).unwrap()
    }

    /// An inventory recording `migrate`'s runs, oldest first, with these outcomes.
    fn migrate_ran(outcomes: &[RunOutcome]) -> Inventory {
        let runs = outcomes
            .iter()
            .enumerate()
            .map(|(index, outcome)| RunRecord {
                fingerprint: format!("definition-{index}"),
                job_uid: Some(format!("uid-{index}")),
                started: jiff::Timestamp::UNIX_EPOCH,
                finished: None,
                outcome: *outcome,
            })
            .collect();
        let record = JobRecord {
            kind: Kind::OneOff,
            desired_hash: "hash".to_owned(),
            fingerprint: format!("definition-{}", outcomes.len().saturating_sub(1)),
            runs,
        };
        let mut inventory = Inventory::default();
        inventory.jobs.insert("migrate".to_owned(), record);
        inventory
    }

    #[test]
    fn jobs_are_listed_first_unless_the_last_run_of_every_one_off_ended() {
        let both = file(ONE_OFF_AND_SCHEDULED);
        assert!(needs_jobs(&both, None), "nothing recorded yet");
        assert!(needs_jobs(&both, Some(&Inventory::default())));
        assert!(needs_jobs(&both, Some(&migrate_ran(&[]))), "no run");
        assert!(needs_jobs(
            &both,
            Some(&migrate_ran(&[RunOutcome::Unknown]))
        ));
        assert!(
            needs_jobs(
                &both,
                Some(&migrate_ran(&[RunOutcome::Succeeded, RunOutcome::Unknown]))
            ),
            "the last run may be going"
        );
        for ended in [RunOutcome::Succeeded, RunOutcome::Failed] {
            assert!(!needs_jobs(
                &both,
                Some(&migrate_ran(&[RunOutcome::Unknown, ended]))
            ));
        }
        let scheduled = file(
            &ONE_OFF_AND_SCHEDULED
                .replace("- name: migrate", "- name: other\n  schedule: '1 2 * * *'"),
        );
        assert!(!needs_jobs(&scheduled, None), "no one-off");
    }

    /// `migrate`'s record with one run of unknown end, seen over (its Job gone) when `over`.
    fn migrate_ran_unseen(over: bool) -> Inventory {
        let mut inventory = migrate_ran(&[RunOutcome::Unknown]);
        if over && let Some(record) = inventory.jobs.get_mut("migrate") {
            record.runs[0].finished = Some(jiff::Timestamp::UNIX_EPOCH);
        }
        inventory
    }

    #[test]
    fn a_run_seen_over_needs_no_jobs_though_its_end_is_unknown() {
        let both = file(ONE_OFF_AND_SCHEDULED);
        assert!(needs_jobs(&both, Some(&migrate_ran_unseen(false))));
        assert!(!needs_jobs(&both, Some(&migrate_ran_unseen(true))));
    }

    #[test]
    fn a_run_of_unknown_end_settles_a_plan_only_when_the_jobs_were_listed_or_it_is_over() {
        let plan = Plan::new(
            vec![PlannedAction::new(
                "migrate",
                Kind::OneOff,
                Action::Done {
                    outcome: RunOutcome::Unknown,
                },
                "ran with this definition: outcome unknown",
            )],
            Vec::new(),
        );
        let snapshot = |inventory: Inventory, jobs_listed: bool| {
            let mut snapshot = Snapshot {
                inventory: Some(cluster::StoredInventory {
                    inventory,
                    ..cluster::StoredInventory::default()
                }),
                ..Snapshot::default()
            };
            std::sync::Arc::make_mut(&mut snapshot.live).jobs_listed = jobs_listed;
            snapshot
        };
        assert!(!settled(&plan, &snapshot(migrate_ran_unseen(false), false)));
        assert!(settled(&plan, &snapshot(migrate_ran_unseen(false), true)));
        assert!(settled(&plan, &snapshot(migrate_ran_unseen(true), false)));
    }
}
