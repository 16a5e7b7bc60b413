//! The rules: for each job name, which action, and what it writes, deletes and waits for (SPEC §5).

mod long_running;
mod one_off;
mod prune;

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::convert::Infallible;

use crate::config::Job;
use crate::config::job::{JobKind, Rerun};
use crate::model::inventory::{Inventory, JobRecord, RunOutcome, Tombstone};
use crate::model::{Kind, labels};
use crate::plan::LiveState;
use crate::plan::guards;
use crate::plan::immutable;
use crate::plan::live::{self, Live, Objects, Owner};
use crate::plan::record_object;
use crate::plan::{
    Action, Delete, FieldChange, Manifest, ObjectKind, ObjectRef, Plan, PlanOptions, PlannedAction,
    Propagation, RecordUpdate, Wait, Write, WriteVerb,
};
use crate::render::limits::violations;
use crate::render::record::{self, RecordKind};
use crate::render::{RenderContext, Rendered};
use one_off::Barrier;

/// Computes the plan: `desired` is the file's jobs in file order with their rendered objects, `live` what the
/// cluster lists, `inventory` what the set recorded, `context` the rendering context (for read-back).
pub fn compute(
    desired: &[(Job, Rendered)],
    live: &LiveState,
    inventory: &Inventory,
    context: &RenderContext,
    options: &PlanOptions,
) -> Plan {
    let rendered = desired
        .iter()
        .map(|(job, rendered)| Ok::<_, Infallible>((job, rendered)));
    let Ok(plan) = plan_all(rendered, live, inventory, context, options);
    plan
}

/// The same plan as [`compute`] of the rendered `jobs`, rendering each job only when it is planned and dropping
/// its objects once decided: what the plan writes is in its actions, so a file of thousands of jobs is never
/// held rendered as a whole. `rendered` sees each job's objects before they go; the first error of `render`
/// (in file order) wins, as when rendering everything first.
pub fn compute_rendering<'a, E>(
    jobs: impl IntoIterator<Item = &'a Job>,
    mut render: impl FnMut(&Job) -> Result<Rendered, E>,
    mut rendered: impl FnMut(&Job, &Rendered),
    live: &LiveState,
    inventory: &Inventory,
    context: &RenderContext,
    options: &PlanOptions,
) -> Result<Plan, E> {
    let each = jobs.into_iter().map(|job| {
        let objects = render(job)?;
        rendered(job, &objects);
        Ok((job, objects))
    });
    plan_all(each, live, inventory, context, options)
}

/// [`compute`] over jobs rendered one at a time.
fn plan_all<'a, R: Borrow<Rendered>, E>(
    desired: impl Iterator<Item = Result<(&'a Job, R), E>>,
    live: &LiveState,
    inventory: &Inventory,
    context: &RenderContext,
    options: &PlanOptions,
) -> Result<Plan, E> {
    let index = live::index(live, &context.membership);
    let records_served = live.records.is_some();
    let jobs_listed = live.jobs_listed;
    let none = Objects::default();
    let mut in_file: BTreeSet<&str> = BTreeSet::new();
    let mut any_record = false;
    let mut actions = Vec::new();
    // The first `wait` one-off whose current definition failed: everything after it is held (SPEC §7).
    let mut failed_barrier = None;
    for each in desired {
        let (job, rendered) = each?;
        let rendered = rendered.borrow();
        in_file.insert(job.name.as_str());
        any_record |= rendered.record.is_some();
        if !options.only_jobs.is_empty() && !options.only_jobs.contains(&job.name) {
            continue;
        }
        let objects = index.get(&job.name).unwrap_or(&none);
        // A one-off pruned a while ago and put back: its runs still count (at most once per definition).
        let tombstone = inventory
            .pruned
            .get(&job.name)
            .filter(|tombstone| tombstone.record.kind == rendered.canonical.kind);
        let record = inventory
            .jobs
            .get(&job.name)
            .or(tombstone.map(|tombstone| &tombstone.record));
        let desired = Desired {
            job,
            rendered,
            objects,
            record,
            records_served,
            jobs_listed,
            context,
            options,
        };
        let mut action = desired.decide();
        if let Some(tombstone) = tombstone
            && !inventory.jobs.contains_key(&job.name)
        {
            restored(&mut action, tombstone);
        }
        if failed_barrier.is_none() {
            match desired.barrier(&action) {
                Some(Barrier::Failed) => failed_barrier = Some(actions.len()),
                Some(Barrier::Running) => one_off::awaited(&mut action),
                None => {}
            }
        }
        actions.push(action);
    }
    if options.only_jobs.is_empty() {
        let others: BTreeSet<&String> = inventory
            .jobs
            .keys()
            .chain(index.keys())
            .filter(|name| !in_file.contains(name.as_str()))
            .collect();
        for name in others {
            let objects = index.get(name).unwrap_or(&none);
            if let Some(action) =
                prune::undesired(name, objects, inventory.jobs.get(name), context, options)
            {
                actions.push(action);
            }
        }
    }
    let refusals = guards::check(&actions, &in_file, inventory, options);
    if let Some(index) = failed_barrier {
        let (before, later) = actions.split_at_mut(index + 1);
        if let Some(barrier) = before.last_mut() {
            one_off::hold(barrier, later);
        }
    }
    let mut plan = Plan::new(actions, refusals);
    if !records_served && any_record {
        plan.notes.push(NO_RECORDS.to_owned());
    }
    Ok(plan)
}

/// Said once when the cluster keeps no stored records, or the tool may not read them.
const NO_RECORDS: &str = "the cluster serves no stored job records (`continuous-jobs` and `scheduled-jobs` of \
    jobs-api.toolforge.org), or this account may not list them: the jobs are created as before, but upstream's \
    `toolforge jobs list` will not show the scheduled and continuous ones";

/// The object kind a job kind renders to.
pub(crate) fn workload_kind(kind: Kind) -> ObjectKind {
    match kind {
        Kind::OneOff => ObjectKind::Job,
        Kind::Scheduled => ObjectKind::CronJob,
        Kind::Continuous | Kind::Webservice => ObjectKind::Deployment,
    }
}

/// The job kind an object kind stands for (a Deployment: continuous).
pub(crate) fn kind_of_object(kind: ObjectKind) -> Kind {
    match kind {
        ObjectKind::Job => Kind::OneOff,
        ObjectKind::CronJob | ObjectKind::ScheduledJob => Kind::Scheduled,
        ObjectKind::Deployment | ObjectKind::Service | ObjectKind::ContinuousJob => {
            Kind::Continuous
        }
    }
}

fn row(job: &str, kind: Kind, action: Action, reason: impl Into<String>) -> PlannedAction {
    PlannedAction::new(job, kind, action, reason)
}

/// A job decided from its tombstone: a run it needs is recorded on the restored record, and a definition that ran
/// already has its record taken back without running.
fn restored(action: &mut PlannedAction, tombstone: &Tombstone) {
    if action.records_run {
        return;
    }
    action.records = Some(RecordUpdate::Restore);
    if matches!(action.action, Action::Done { .. }) {
        action.reason = format!(
            "ran before it was removed from the file ({}): {}",
            tombstone.at.strftime("%Y-%m-%d %H:%M UTC"),
            action.reason
        );
    }
}

/// `a`, `b` and `c` in backticks.
/// The expanded schedule is shown only when the written one did not change (a new `@daily` randomisation).
fn ticked(fields: &[FieldChange]) -> String {
    let schedule = fields.iter().any(|change| change.field == "schedule");
    let names: Vec<String> = fields
        .iter()
        .filter(|change| !(schedule && change.field == "schedule-actual"))
        .map(|change| format!("`{}`", change.field))
        .collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn delete(live: &Live<'_>) -> Delete {
    Delete {
        object: live.reference.clone(),
        propagation: Propagation::Background,
    }
}

/// One job of the file and what is known about it.
struct Desired<'a> {
    job: &'a Job,
    rendered: &'a Rendered,
    /// Live objects of the job's name, by kind.
    objects: &'a Objects<'a>,
    record: Option<&'a JobRecord>,
    /// Whether the cluster keeps upstream's stored records (and we may read them).
    records_served: bool,
    /// Whether the Jobs were listed (else a one-off's missing Job says nothing).
    jobs_listed: bool,
    context: &'a RenderContext,
    options: &'a PlanOptions,
}

impl Desired<'_> {
    fn kind(&self) -> Kind {
        self.rendered.canonical.kind
    }

    fn name(&self) -> &str {
        &self.job.name
    }

    fn row(&self, action: Action, reason: impl Into<String>) -> PlannedAction {
        row(self.name(), self.kind(), action, reason)
    }

    fn decide(&self) -> PlannedAction {
        let mut action = self.action();
        if let Some(limits) = &self.context.container_limits
            && action
                .writes
                .iter()
                .any(|write| write.verb != WriteVerb::Label && !write.object.kind.is_record())
        {
            action.errors = violations(&self.rendered.canonical, limits)
                .iter()
                .map(ToString::to_string)
                .collect();
        }
        action
    }

    fn action(&self) -> PlannedAction {
        if let Some(conflict) = self.conflict() {
            return conflict;
        }
        let mut action = self.own_action();
        self.remove_leftovers(&mut action);
        action
    }

    /// Workloads of ours (labelled as members of this inventory) of a kind neither the file nor the inventory
    /// gives the job: an apply changing the job's kind was killed after it created the new kind and before it
    /// recorded it. Nobody else makes such an object, so it is deleted, not reported as a conflict.
    fn leftovers(&self) -> impl Iterator<Item = &Live<'_>> {
        let kind = workload_kind(self.kind());
        let recorded_kind = self.record.map(|record| workload_kind(record.kind));
        self.objects.iter().filter_map(move |(object_kind, live)| {
            let leftover = live.member
                && live.owner == Owner::Framework
                && *object_kind != kind
                && Some(*object_kind) != recorded_kind
                && object_kind.is_workload();
            leftover.then_some(live)
        })
    }

    /// Deletes [`Self::leftovers`] before the action's own writes; an action that holds or refuses its writes
    /// deletes nothing either.
    fn remove_leftovers(&self, action: &mut PlannedAction) {
        if matches!(
            action.action,
            Action::Conflict | Action::Held | Action::Ignored
        ) {
            return;
        }
        for live in self.leftovers() {
            if action.action == Action::Unchanged {
                action.action = Action::Repair;
            }
            action.reason = format!(
                "{}; the {:?} an interrupted apply left is deleted",
                action.reason, live.reference.kind
            );
            action.deletes.push(delete(live));
            action.waits.push(Wait::Deleted {
                object: live.reference.clone(),
            });
        }
    }

    /// The action for the job's own kind, leftovers of another kind aside.
    fn own_action(&self) -> PlannedAction {
        let kind = workload_kind(self.kind());
        let recorded_kind = self.record.map(|record| workload_kind(record.kind));
        if let Some(recorded) = recorded_kind
            && recorded != kind
        {
            return self.kind_changed(recorded);
        }
        let same = self.objects.get(kind);
        match (self.record, same) {
            (Some(record), _) => self.managed(record, same),
            (None, Some(live)) if live.member => {
                // Ours by its labels, but the inventory lost it (a crash between write and record).
                let record = JobRecord {
                    kind: self.kind(),
                    desired_hash: live.desired_hash.clone().unwrap_or_default(),
                    fingerprint: live.fingerprint.clone().unwrap_or_default(),
                    runs: Vec::new(),
                };
                self.managed(&record, Some(live))
            }
            (None, Some(live)) => self.adopt(live),
            (None, None) => self.create(),
        }
    }

    /// A live object of this name that is not ours to write, or a leftover of another kind outside the inventory.
    fn conflict(&self) -> Option<PlannedAction> {
        let kind = workload_kind(self.kind());
        let recorded_kind = self.record.map(|record| workload_kind(record.kind));
        // A stored record goes with its workload: it never decides a conflict ([`Self::record_writes`]).
        for (object_kind, live) in self.objects.iter().filter(|(kind, _)| !kind.is_record()) {
            let clashes = *object_kind == kind
                || (*object_kind == ObjectKind::Service && self.rendered.service.is_some());
            let reason = match live.owner {
                Owner::Foreign if clashes => format!(
                    "a {object_kind:?} `{}` exists without the `{}: {}` label",
                    self.name(),
                    labels::MANAGED_BY,
                    labels::MANAGED_BY_VALUE
                ),
                Owner::OtherInventory => format!(
                    "the {object_kind:?} `{}` belongs to inventory `{}`",
                    self.name(),
                    live.other_inventory.as_deref().unwrap_or_default()
                ),
                Owner::Framework
                    if *object_kind == kind
                        && recorded_kind.is_some_and(|recorded| recorded != kind)
                        && !live.member =>
                {
                    format!(
                        "a {object_kind:?} `{}` outside this inventory exists: the inventory knows the job as {}",
                        self.name(),
                        self.record.map_or(self.kind(), |record| record.kind).name()
                    )
                }
                Owner::Framework
                    if *object_kind != kind
                        && *object_kind != ObjectKind::Service
                        && Some(*object_kind) != recorded_kind
                        && !live.member =>
                {
                    format!(
                        "a {object_kind:?} `{}` outside this inventory exists: the job is {} in the file",
                        self.name(),
                        self.kind().name()
                    )
                }
                _ => continue,
            };
            let mut conflict = self.row(Action::Conflict, reason);
            conflict.hint = Some(format!(
                "rename the job, or delete the {object_kind:?} yourself if it is no longer needed"
            ));
            return Some(conflict);
        }
        None
    }

    fn write(&self, object: ObjectKind, verb: WriteVerb, uid: Option<String>) -> Write {
        let manifest = if object == ObjectKind::Service {
            Manifest::of(&self.rendered.service)
        } else if object.is_record() {
            Manifest::of(&self.rendered.record)
        } else {
            Manifest::of(&self.rendered.workload)
        };
        Write {
            object: ObjectRef {
                kind: object,
                name: self.name().to_owned(),
                uid,
            },
            verb,
            manifest,
        }
    }

    /// Writes the workload with `verb`, then the Service (created, updated, or deleted when no longer wanted).
    fn writes(&self, action: &mut PlannedAction, verb: WriteVerb) {
        let kind = workload_kind(self.kind());
        let uid = match verb {
            WriteVerb::Create => None,
            WriteVerb::Update | WriteVerb::Label | WriteVerb::Resume | WriteVerb::Patch => self
                .objects
                .get(kind)
                .and_then(|live| live.reference.uid.clone()),
        };
        action.writes.push(self.write(kind, verb, uid));
        let service = self.objects.get(ObjectKind::Service);
        match (&self.rendered.service, service) {
            (Some(_), Some(live)) => {
                action.writes.push(self.write(
                    ObjectKind::Service,
                    if verb == WriteVerb::Label {
                        WriteVerb::Label
                    } else {
                        WriteVerb::Update
                    },
                    live.reference.uid.clone(),
                ));
            }
            (Some(_), None) => {
                action
                    .writes
                    .push(self.write(ObjectKind::Service, WriteVerb::Create, None));
            }
            (None, Some(live)) if live.owner == Owner::Framework && self.record.is_some() => {
                action.deletes.push(delete(live));
            }
            (None, _) => {}
        }
        self.record_writes(action);
        action.waits.push(match kind {
            ObjectKind::Job => Wait::Completed {
                barrier: matches!(self.job.kind, JobKind::OneOff { wait: Some(_), .. }),
            },
            ObjectKind::CronJob | ObjectKind::ScheduledJob => Wait::Accepted,
            ObjectKind::Deployment | ObjectKind::Service | ObjectKind::ContinuousJob => {
                Wait::RolledOut
            }
        });
    }

    /// The job's stored record: created when missing, written over when it is not the file's (adopting a job
    /// makes its record ours too), and a record of the other kind of ours (the kind changed) deleted. A record
    /// of another inventory is never touched; nothing at all when the cluster keeps no records. Says why, when
    /// it writes or deletes something.
    fn record_writes(&self, action: &mut PlannedAction) -> Option<&'static str> {
        if !self.records_served {
            return None;
        }
        let wanted = self.rendered.record.as_ref().map(|record| {
            let kind = record["kind"]
                .as_str()
                .and_then(RecordKind::from_kind)
                .map(record_object);
            (kind, record)
        });
        let mut why = None;
        for kind in [ObjectKind::ContinuousJob, ObjectKind::ScheduledJob] {
            let live = self.objects.get(kind);
            match (wanted, live) {
                (Some((Some(wanted_kind), record)), live) if wanted_kind == kind => match live {
                    None => {
                        action
                            .writes
                            .push(self.write(kind, WriteVerb::Create, None));
                        why = Some("the stored record upstream lists is missing");
                    }
                    Some(live)
                        if live.owner == Owner::Framework
                            && !live.record.is_some_and(|object| {
                                record::is_current(&object.value(), record)
                            }) =>
                    {
                        action.writes.push(self.write(
                            kind,
                            WriteVerb::Update,
                            live.reference.uid.clone(),
                        ));
                        why = Some("the stored record upstream lists differs from the file");
                    }
                    Some(_) => {}
                },
                (_, Some(live))
                    if live.owner == Owner::Framework && (live.member || self.record.is_some()) =>
                {
                    action.deletes.push(delete(live));
                    why = Some("the stored record of the job's old kind is left");
                }
                _ => {}
            }
        }
        why
    }

    /// Deletes the live `live` first, waits for its UID to be gone, then creates.
    fn replace_object(&self, action: &mut PlannedAction, live: &Live<'_>) {
        action.deletes.push(delete(live));
        action.waits.push(Wait::Deleted {
            object: live.reference.clone(),
        });
        self.writes(action, WriteVerb::Create);
    }

    fn is_one_off(&self) -> bool {
        self.kind() == Kind::OneOff
    }

    fn create(&self) -> PlannedAction {
        let reason = if self.is_one_off() {
            "new job: runs once"
        } else {
            "new job"
        };
        let mut action = self.row(Action::Create, reason);
        action.records_run = self.is_one_off();
        self.writes(&mut action, WriteVerb::Create);
        action
    }

    /// The file changed the job's kind: the old object goes, the new one is created.
    fn kind_changed(&self, recorded: ObjectKind) -> PlannedAction {
        let old = self.record.map_or(Kind::OneOff, |record| record.kind);
        let reason = format!("kind changed: {} → {}", old.name(), self.kind().name());
        let old_live = self
            .objects
            .get(recorded)
            .filter(|live| live.owner == Owner::Framework);
        let mut action = match old_live {
            Some(live) => {
                let mut action = self.row(Action::Replace, reason);
                action.deletes.push(delete(live));
                action.waits.push(Wait::Deleted {
                    object: live.reference.clone(),
                });
                action
            }
            None => self.row(Action::Create, reason),
        };
        action.records_run = self.is_one_off();
        // A live object of the new kind can only be ours here (anything else is a conflict): written over.
        let verb = if self.objects.contains_key(workload_kind(self.kind())) {
            WriteVerb::Update
        } else {
            WriteVerb::Create
        };
        self.writes(&mut action, verb);
        action
    }

    /// A jobs-framework object outside the inventory: adopted when it already is what the file says.
    fn adopt(&self, live: &Live<'_>) -> PlannedAction {
        if let Some(reason) = self.requested_rerun(None) {
            let mut action = self.row(Action::Replace, reason);
            action.records_run = self.is_one_off();
            self.replace_object(&mut action, live);
            return action;
        }
        let Some(back) = live.read_back(self.context) else {
            return self.row(Action::Conflict, "not a workload");
        };
        match back {
            Err(error) => {
                let mut action = self.row(
                    Action::Conflict,
                    format!("created outside this inventory and cannot be read back: {error}"),
                );
                action.hint = Some(self.adopt_hint());
                action
            }
            Ok(back) => {
                let changes = self.changes(&back.job);
                if changes.is_empty() {
                    let mut action = self.row(
                        Action::Adopt,
                        "created outside this inventory, equal to the file: recorded, not restarted",
                    );
                    self.writes(&mut action, WriteVerb::Label);
                    action.waits.clear();
                    action
                } else {
                    let mut action = self.row(
                        Action::Conflict,
                        format!(
                            "created outside this inventory and differs from the file in {}",
                            ticked(&changes)
                        ),
                    );
                    action.changes = changes;
                    action.hint = Some(self.adopt_hint());
                    action
                }
            }
        }
    }

    fn adopt_hint(&self) -> String {
        format!(
            "make the file match the live job to adopt it, or delete it first (`toolforge jobs delete {}`)",
            self.name()
        )
    }

    /// The live job's differences from the file, each with the immutable field it touches.
    fn changes(&self, live: &crate::render::CanonicalJob) -> Vec<FieldChange> {
        let kind = workload_kind(self.kind());
        live.differences(&self.rendered.canonical)
            .into_iter()
            .map(|difference| FieldChange {
                immutable: immutable::path(kind, &difference.field).map(str::to_owned),
                field: difference.field,
                live: difference.live,
                desired: difference.desired,
            })
            .collect()
    }

    /// Why the user asked for this job to run again, if they did.
    fn requested_rerun(&self, last: Option<RunOutcome>) -> Option<String> {
        if self.options.replace.iter().any(|name| name == self.name()) {
            return Some("`--replace` asked for it".to_owned());
        }
        if !self.is_one_off() {
            return None;
        }
        if !self.options.ignore_rerun_always
            && matches!(
                self.job.kind,
                JobKind::OneOff {
                    rerun: Some(Rerun::Always),
                    ..
                }
            )
        {
            return Some("`rerun: always`".to_owned());
        }
        (self.options.retry_failed && last == Some(RunOutcome::Failed))
            .then(|| "`--retry-failed`: the last run failed".to_owned())
    }

    fn managed(&self, record: &JobRecord, live: Option<&Live<'_>>) -> PlannedAction {
        if self.is_one_off() {
            self.one_off(record, live)
        } else {
            self.long_running(live)
        }
    }
}
