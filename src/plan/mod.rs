//! `plan`: desired jobs + live objects + the inventory → one [`PlannedAction`] per job name (SPEC §5).
//!
//! The third stage of the pipeline (config → render → plan → apply/wait). [`compute`] is a pure function of
//! values: it never talks to the cluster, reads the clock or the environment. The caller lists the live objects
//! (one LIST per kind, [`LiveState`]), reads the inventory, renders the file, and gets back a [`Plan`] that says
//! everything `apply` will do: for every job the action and why, the field changes, the objects to write and to
//! delete and what to wait for, plus the safety guards that refuse the plan ([`Refusal`]). `diff` renders the same
//! value as a table or as JSON (`docs/plan.md` describes the JSON form, versioned by [`FORMAT_VERSION`]).
//!
//! Start at [`compute`]. The rules per action are in `decide`; which Kubernetes fields are immutable in
//! `immutable`; the guards in `guards`.

mod decide;
mod guards;
mod immutable;
pub mod imperative;
mod listed;
mod live;
mod manifest;
pub mod quota;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::{Job, JobKind};
use crate::model::Kind;
use crate::model::inventory::RunOutcome;
use crate::render::record::RecordKind;

pub use decide::{compute, compute_rendering};
pub use listed::{Listed, ListedWorkload};
pub use live::{LiveRecord, LiveState};
pub use manifest::Manifest;

/// The version of the plan's JSON form; bumped on every incompatible change.
pub const FORMAT_VERSION: u32 = 1;

/// What the user asked for besides the file (command-line flags).
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent command-line flags, each named after its flag"
)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// `--job NAME` (upstream `load --job`): plan only these jobs; nothing else is touched or pruned.
    pub only_jobs: Vec<String>,
    /// `--replace NAME`: delete and re-create (one-off: run again) these jobs even when unchanged.
    pub replace: Vec<String>,
    /// `--retry-failed`: run again every one-off whose last recorded run failed.
    pub retry_failed: bool,
    /// Delete jobs that are in the inventory but no longer in the file.
    pub prune: bool,
    /// `--allow-mass-delete`: accept deleting more than half of the inventory, or all of it.
    pub allow_mass_delete: bool,
    /// `--allow-empty`: accept an empty file (which deletes every job of the inventory).
    pub allow_empty: bool,
    /// A plan nobody asked for (the daemon's drift repair, resync or retry): `rerun: always` one-offs are planned
    /// like the others, so they run once per apply the user asked for, not once per reconcile.
    pub ignore_rerun_always: bool,
}

impl PlanOptions {
    /// The options of a plain `apply`/`diff`: prune on, every guard armed.
    pub fn pruning() -> Self {
        Self {
            prune: true,
            ..Self::default()
        }
    }
}

/// Everything `apply` will do, and why. Deterministic: the same inputs give an equal value and the same JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// One action per job name: first the jobs of the file in file order, then the others sorted by name.
    pub actions: Vec<PlannedAction>,
    /// Safety guards that refuse this plan (exit 7); `apply` must not execute a refused plan.
    pub refusals: Vec<Refusal>,
    /// How many actions of each kind, by action name; only non-zero counts.
    pub counts: BTreeMap<String, usize>,
    /// The namespace's quota and what the plan adds to it ([`quota::check`]); empty until checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quota: Vec<quota::QuotaUse>,
    /// What the user should know about the plan as a whole (the cluster keeps no records upstream lists).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Plan {
    /// A plan of `actions`, counted, with no refusal.
    pub fn new(actions: Vec<PlannedAction>, refusals: Vec<Refusal>) -> Self {
        let mut counts = BTreeMap::new();
        for action in &actions {
            *counts.entry(action.action.name().to_owned()).or_insert(0) += 1;
        }
        Self {
            version: FORMAT_VERSION,
            actions,
            refusals,
            counts,
            quota: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Whether applying the plan would change anything in the cluster or the inventory.
    pub fn has_changes(&self) -> bool {
        self.actions.iter().any(|action| action.action.changes())
    }

    /// Whether some job is in conflict (an error: the plan cannot be applied as a whole).
    pub fn has_conflicts(&self) -> bool {
        self.actions
            .iter()
            .any(|action| matches!(action.action, Action::Conflict))
    }

    /// Whether some action cannot be carried out: a conflict, a write the namespace's limits refuse, more than
    /// the quota allows, or a write the server's dry run refused.
    pub fn has_errors(&self) -> bool {
        self.has_conflicts()
            || self.actions.iter().any(|action| !action.errors.is_empty())
            || self.quota.iter().any(|quota| quota.exceeded)
            || self.actions.iter().any(|action| {
                matches!(
                    action.dry_run,
                    Some(DryRun::Rejected { .. } | DryRun::Immutable { .. })
                )
            })
    }

    /// Whether a safety guard refuses the plan.
    pub fn is_refused(&self) -> bool {
        !self.refusals.is_empty()
    }

    /// The `wait` one-off that holds back the jobs after it: its last run with its current definition failed
    /// (SPEC §7: later jobs are applied only after it succeeded). `None` when nothing is held.
    pub fn held_by(&self) -> Option<&str> {
        self.actions
            .iter()
            .filter(|action| action.action == Action::Held)
            .flat_map(|action| &action.waits)
            .find_map(|wait| match wait {
                Wait::Barrier { job } => Some(job.as_str()),
                _ => None,
            })
    }

    /// The action planned for job `name`.
    pub fn action(&self, name: &str) -> Option<&PlannedAction> {
        self.actions.iter().find(|action| action.job == name)
    }

    /// The stable JSON form (pretty-printed), see docs/plan.md.
    pub fn to_json(&self) -> String {
        // Strings, integers, enums, maps with string keys and JSON values always serialise.
        serde_json::to_string_pretty(self).expect("a plan serialises to JSON")
    }
}

/// The action for one job and everything needed to carry it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedAction {
    /// The job's name (also the name of its objects).
    pub job: String,
    /// The job's kind: desired, else recorded in the inventory, else read from the live object.
    pub kind: Kind,
    #[serde(flatten)]
    pub action: Action,
    /// Why, for humans: "`schedule` changed", "immutable: spec.template".
    pub reason: String,
    /// A suggestion for the user (e.g. how to run a failed one-off again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Field by field, live → desired, sorted by field (`update`, `replace`, `repair`, and re-runs of a live Job).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<FieldChange>,
    /// Objects to delete, in order, before anything is written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<Delete>,
    /// Objects to write, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<Write>,
    /// What `apply` waits for, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waits: Vec<Wait>,
    /// A new run of a one-off is recorded in the inventory before its Job is created.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub records_run: bool,
    /// A scheduled job whose triggers changed runs once now: `apply` creates a Job from the CronJob's template.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub runs_now: bool,
    /// What `apply` writes to the job's inventory record although its objects stay as they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<RecordUpdate>,
    /// Problems that make the writes fail, found before anything is touched (the namespace's `LimitRange`), in
    /// upstream's words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The server-side dry run's verdict on the writes, when one was made (filled in by the shell; `None` here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<DryRun>,
}

impl PlannedAction {
    /// Job `job`'s `action`, for `reason`, with nothing to write, delete or wait for yet.
    pub fn new(job: &str, kind: Kind, action: Action, reason: impl Into<String>) -> Self {
        Self {
            job: job.to_owned(),
            kind,
            action,
            reason: reason.into(),
            hint: None,
            changes: Vec::new(),
            deletes: Vec::new(),
            writes: Vec::new(),
            waits: Vec::new(),
            records_run: false,
            runs_now: false,
            records: None,
            errors: Vec::new(),
            dry_run: None,
        }
    }
}

/// What the inventory learns about a job besides what its writes record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "update", rename_all = "kebab-case")]
pub enum RecordUpdate {
    /// The live Job of the recorded run finished, and the record does not say so yet: once its TTL removes the
    /// Job, the record is all that tells a success from a run nobody saw end.
    Outcome { outcome: RunOutcome },
    /// A one-off pruned within the retention is back in the file: its record, with its runs, is taken back.
    Restore,
    /// A deleted job's record is dropped without a tombstone (`delete`, `flush`): a file that still has the job
    /// creates it again, and a one-off runs again.
    Forget,
}

/// What happens to a job (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Desired, no live object, not in the inventory (one-off: run it).
    Create,
    /// Live and desired agree.
    Unchanged,
    /// Scheduled or continuous, every changed field mutable: written in place.
    Update,
    /// An immutable field changed, the kind changed, or a live one-off must run again: delete (Background
    /// propagation), wait until the old UID is gone, create.
    Replace,
    /// A job runs again: a one-off with no live Job, or a scheduled job started now (`restart`).
    Rerun,
    /// A one-off already ran with this fingerprint; nothing to do.
    Done {
        /// How the last run with this fingerprint ended.
        outcome: RunOutcome,
    },
    /// A live object drifted from what we applied (edited or deleted by hand): written again.
    Repair,
    /// In the inventory, absent from the file: deleted (prune).
    Delete,
    /// An object upstream created that equals the desired job: recorded in the inventory, not restarted.
    Adopt,
    /// An object of that name is not ours to touch: an error.
    Conflict,
    /// A jobs-framework object outside the inventory and the file: listed, left alone.
    Ignored,
    /// A change after a `wait` one-off whose last run with its current definition failed: not written until
    /// that one-off succeeds (SPEC §7); its [`Wait::Barrier`] names the one-off, the reason what would be done.
    Held,
}

impl Action {
    /// The action's name, as in the table and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Unchanged => "unchanged",
            Action::Update => "update",
            Action::Replace => "replace",
            Action::Rerun => "rerun",
            Action::Done { .. } => "done",
            Action::Repair => "repair",
            Action::Delete => "delete",
            Action::Adopt => "adopt",
            Action::Conflict => "conflict",
            Action::Ignored => "ignored",
            Action::Held => "held",
        }
    }

    /// Whether the action changes the cluster or the inventory.
    pub fn changes(self) -> bool {
        !matches!(
            self,
            Action::Unchanged
                | Action::Done { .. }
                | Action::Ignored
                | Action::Conflict
                | Action::Held
        )
    }
}

/// One field of the canonical job that differs between the live object and the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// The field's name in jobs.yaml terms (`mem`, `schedule`, `filelog-stdout`).
    pub field: String,
    /// `None` when the live job does not have the field.
    pub live: Option<serde_json::Value>,
    pub desired: Option<serde_json::Value>,
    /// The immutable Kubernetes field this change touches (`spec.template`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immutable: Option<String>,
}

/// A Kubernetes object kind the plan writes or deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ObjectKind {
    Job,
    CronJob,
    Deployment,
    Service,
    /// Upstream's stored record of a continuous job ([`crate::render::record`]).
    ContinuousJob,
    /// Upstream's stored record of a scheduled job.
    ScheduledJob,
}

impl ObjectKind {
    pub const ALL: [ObjectKind; 6] = [
        ObjectKind::Job,
        ObjectKind::CronJob,
        ObjectKind::Deployment,
        ObjectKind::Service,
        ObjectKind::ContinuousJob,
        ObjectKind::ScheduledJob,
    ];

    /// The kinds a job of the file is made of: its workload, its stored record, its Service when it has a port.
    pub fn of_job(job: &Job) -> Vec<ObjectKind> {
        match &job.kind {
            JobKind::OneOff { .. } => vec![ObjectKind::Job],
            JobKind::Scheduled { .. } => vec![ObjectKind::CronJob, ObjectKind::ScheduledJob],
            JobKind::Continuous(service) | JobKind::Webservice(service) => {
                let mut kinds = vec![ObjectKind::Deployment, ObjectKind::ContinuousJob];
                if service.port.is_some() {
                    kinds.push(ObjectKind::Service);
                }
                kinds
            }
        }
    }

    /// Whether this is one of upstream's stored records.
    pub fn is_record(self) -> bool {
        record_kind(self).is_some()
    }

    /// Whether this is what a job runs as (a Job, CronJob or Deployment).
    pub fn is_workload(self) -> bool {
        matches!(
            self,
            ObjectKind::Job | ObjectKind::CronJob | ObjectKind::Deployment
        )
    }
}

/// The record kind an object kind is, if it is one.
pub(crate) fn record_kind(kind: ObjectKind) -> Option<RecordKind> {
    match kind {
        ObjectKind::ContinuousJob => Some(RecordKind::Continuous),
        ObjectKind::ScheduledJob => Some(RecordKind::Scheduled),
        ObjectKind::Job | ObjectKind::CronJob | ObjectKind::Deployment | ObjectKind::Service => {
            None
        }
    }
}

/// The object kind of a record kind.
pub(crate) fn record_object(kind: RecordKind) -> ObjectKind {
    match kind {
        RecordKind::Continuous => ObjectKind::ContinuousJob,
        RecordKind::Scheduled => ObjectKind::ScheduledJob,
    }
}

/// Which object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub kind: ObjectKind,
    pub name: String,
    /// The live object's UID (deletes and updates use it as a precondition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// How a write is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteVerb {
    /// POST a new object.
    Create,
    /// PUT the whole object over the live one (same UID).
    Update,
    /// Add our annotations and inventory labels to the live object, nothing else (adopt).
    Label,
    /// Let a suspended one-off Job of ours run (`spec.suspend: false`) once its UID is recorded.
    Resume,
    /// A JSON merge patch: the manifest is the patch, naming the live object's UID (`restart`'s annotation).
    Patch,
}

/// One object to write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Write {
    pub object: ObjectRef,
    pub verb: WriteVerb,
    /// The rendered object (for `label`: the object whose metadata is taken).
    pub manifest: Manifest,
}

/// One object to delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delete {
    pub object: ObjectRef,
    /// Never Kubernetes' Orphan default for Jobs: their pods go too.
    pub propagation: Propagation,
}

/// `propagationPolicy` of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Propagation {
    Background,
    Foreground,
}

/// Something `apply` waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "for", rename_all = "kebab-case")]
pub enum Wait {
    /// The deleted object (by UID) is gone, before its replacement is created.
    Deleted { object: ObjectRef },
    /// A one-off's Job finished; `barrier`: later jobs of the file wait for it to succeed (`wait`), also when it
    /// is the live Job of an unchanged one-off that is still running.
    Completed { barrier: bool },
    /// A Deployment's rollout of our write is complete.
    RolledOut,
    /// A CronJob was accepted by the controller.
    Accepted,
    /// A held action: the `wait` one-off `job` before it must succeed first (on a later apply).
    Barrier { job: String },
}

/// The server-side dry run's verdict on a planned action (filled in by the shell).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum DryRun {
    /// The server accepted the writes as planned.
    Confirmed,
    /// The server refused an update as immutable: the action must become a replace.
    Immutable { field: String },
    /// The server refused the writes for another reason.
    Rejected { message: String },
}

/// A safety guard that refuses the plan (SPEC §5), overridable only by its flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub guard: Guard,
    pub message: String,
    /// The flag that overrides this guard, or `None` when nothing can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub override_flag: Option<String>,
    /// The jobs concerned, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
}

/// The safety guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guard {
    /// The file has no jobs but the inventory has some.
    EmptyFile,
    /// The plan deletes every job of the inventory.
    DeletesEverything,
    /// The plan deletes more than half of the inventory's jobs.
    MassDelete,
    /// `--job` or `--replace` names a job the file does not have.
    UnknownJob,
}
