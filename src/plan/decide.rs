//! The rules: for each job name, which action, and what it writes, deletes and waits for (SPEC §5).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::Job;
use crate::config::job::{JobKind, Rerun};
use crate::plan::LiveState;
use crate::plan::guards;
use crate::plan::immutable;
use crate::plan::live::{self, Live, Owner};
use crate::plan::{
    Action, Delete, FORMAT_VERSION, FieldChange, ObjectKind, ObjectRef, Plan, PlanOptions,
    PlannedAction, Propagation, Wait, Write, WriteVerb,
};
use crate::render::inventory::{Inventory, JobRecord, Outcome};
use crate::render::limits::violations;
use crate::render::{Kind, RenderContext, Rendered, desired_hash, labels, read_back};

/// Computes the plan: `desired` is the file's jobs in file order with their rendered objects, `live` what the
/// cluster lists, `inventory` what the set recorded, `context` the rendering context (for read-back).
pub fn compute(
    desired: &[(Job, Rendered)],
    live: &LiveState,
    inventory: &Inventory,
    context: &RenderContext,
    options: &PlanOptions,
) -> Plan {
    let index = live::index(live, &context.membership);
    let none = BTreeMap::new();
    let in_file: BTreeSet<&str> = desired.iter().map(|(job, _)| job.name.as_str()).collect();
    let mut actions = Vec::new();
    for (job, rendered) in desired {
        if !options.only_jobs.is_empty() && !options.only_jobs.contains(&job.name) {
            continue;
        }
        let objects = index.get(&job.name).unwrap_or(&none);
        let record = inventory.jobs.get(&job.name);
        actions.push(
            Desired {
                job,
                rendered,
                objects,
                record,
                context,
                options,
            }
            .decide(),
        );
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
                undesired(name, objects, inventory.jobs.get(name), context, options)
            {
                actions.push(action);
            }
        }
    }
    let refusals = guards::check(&actions, desired, inventory, options);
    let mut counts = BTreeMap::new();
    for action in &actions {
        *counts.entry(action.action.name().to_owned()).or_insert(0) += 1;
    }
    Plan {
        version: FORMAT_VERSION,
        actions,
        refusals,
        counts,
    }
}

/// The object kind a job kind renders to.
pub(crate) fn workload_kind(kind: Kind) -> ObjectKind {
    match kind {
        Kind::OneOff => ObjectKind::Job,
        Kind::Scheduled => ObjectKind::CronJob,
        Kind::Continuous | Kind::Webservice => ObjectKind::Deployment,
    }
}

fn kind_of_object(kind: ObjectKind) -> Kind {
    match kind {
        ObjectKind::Job => Kind::OneOff,
        ObjectKind::CronJob => Kind::Scheduled,
        ObjectKind::Deployment | ObjectKind::Service => Kind::Continuous,
    }
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::OneOff => "one-off",
        Kind::Scheduled => "scheduled",
        Kind::Continuous => "continuous",
        Kind::Webservice => "webservice",
    }
}

fn row(job: &str, kind: Kind, action: Action, reason: impl Into<String>) -> PlannedAction {
    PlannedAction {
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
        errors: Vec::new(),
        dry_run: None,
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

fn delete(live: &Live) -> Delete {
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
    objects: &'a BTreeMap<ObjectKind, Live>,
    record: Option<&'a JobRecord>,
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
                .any(|write| write.verb != WriteVerb::Label)
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
        let kind = workload_kind(self.kind());
        let recorded_kind = self.record.map(|record| workload_kind(record.kind));
        if let Some(recorded) = recorded_kind
            && recorded != kind
        {
            return self.kind_changed(recorded);
        }
        let same = self.objects.get(&kind);
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
        for (object_kind, live) in self.objects {
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
                        kind_word(self.record.map_or(self.kind(), |record| record.kind))
                    )
                }
                Owner::Framework
                    if *object_kind != kind
                        && *object_kind != ObjectKind::Service
                        && Some(*object_kind) != recorded_kind =>
                {
                    format!(
                        "a {object_kind:?} `{}` outside this inventory exists: the job is {} in the file",
                        self.name(),
                        kind_word(self.kind())
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

    fn workload_manifest(&self) -> serde_json::Value {
        // Kubernetes objects always serialise.
        serde_json::to_value(&self.rendered.workload).expect("a rendered object serialises")
    }

    fn write(&self, object: ObjectKind, verb: WriteVerb, uid: Option<String>) -> Write {
        let manifest = if object == ObjectKind::Service {
            serde_json::to_value(&self.rendered.service).expect("a rendered Service serialises")
        } else {
            self.workload_manifest()
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
            WriteVerb::Update | WriteVerb::Label => self
                .objects
                .get(&kind)
                .and_then(|live| live.reference.uid.clone()),
        };
        action.writes.push(self.write(kind, verb, uid));
        let service = self.objects.get(&ObjectKind::Service);
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
        action.waits.push(match kind {
            ObjectKind::Job => Wait::Completed {
                barrier: matches!(self.job.kind, JobKind::OneOff { wait: Some(_), .. }),
            },
            ObjectKind::CronJob => Wait::Accepted,
            ObjectKind::Deployment | ObjectKind::Service => Wait::RolledOut,
        });
    }

    /// Deletes the live `live` first, waits for its UID to be gone, then creates.
    fn replace_object(&self, action: &mut PlannedAction, live: &Live) {
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
        let reason = format!(
            "kind changed: {} → {}",
            kind_word(old),
            kind_word(self.kind())
        );
        let old_live = self
            .objects
            .get(&recorded)
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
        let verb = if self.objects.contains_key(&workload_kind(self.kind())) {
            WriteVerb::Update
        } else {
            WriteVerb::Create
        };
        self.writes(&mut action, verb);
        action
    }

    /// A jobs-framework object outside the inventory: adopted when it already is what the file says.
    fn adopt(&self, live: &Live) -> PlannedAction {
        if let Some(reason) = self.requested_rerun(None) {
            let mut action = self.row(Action::Replace, reason);
            action.records_run = self.is_one_off();
            self.replace_object(&mut action, live);
            return action;
        }
        let Some(workload) = &live.workload else {
            return self.row(Action::Conflict, "not a workload");
        };
        match read_back(workload, self.context) {
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
    fn requested_rerun(&self, last: Option<Outcome>) -> Option<String> {
        if self.options.replace.iter().any(|name| name == self.name()) {
            return Some("`--replace` asked for it".to_owned());
        }
        if !self.is_one_off() {
            return None;
        }
        if matches!(
            self.job.kind,
            JobKind::OneOff {
                rerun: Some(Rerun::Always),
                ..
            }
        ) {
            return Some("`rerun: always`".to_owned());
        }
        (self.options.retry_failed && last == Some(Outcome::Failed))
            .then(|| "`--retry-failed`: the last run failed".to_owned())
    }

    fn managed(&self, record: &JobRecord, live: Option<&Live>) -> PlannedAction {
        if self.is_one_off() {
            self.one_off(record, live)
        } else {
            self.long_running(live)
        }
    }

    /// How the last run with the desired fingerprint ended; a live Job's conditions tell what the record may not.
    fn last_run(&self, record: &JobRecord, live: Option<&Live>) -> Option<Outcome> {
        let fingerprint = &self.rendered.fingerprint;
        let run = record
            .runs
            .iter()
            .rev()
            .find(|run| run.fingerprint == *fingerprint);
        let live_outcome = live
            .filter(|live| {
                live.fingerprint.as_deref().unwrap_or(&record.fingerprint) == fingerprint.as_str()
            })
            .and_then(|live| live.finished);
        match (run, live_outcome) {
            (Some(run), Some(outcome)) if run.outcome == Outcome::Unknown => Some(outcome),
            (Some(run), _) => Some(run.outcome),
            (None, Some(outcome)) => Some(outcome),
            (None, None) if record.fingerprint == *fingerprint => Some(Outcome::Unknown),
            (None, None) => None,
        }
    }

    fn one_off(&self, record: &JobRecord, live: Option<&Live>) -> PlannedAction {
        let last = self.last_run(record, live);
        let requested = self.requested_rerun(last);
        let Some(live) = live else {
            return match (requested, last) {
                (Some(reason), _) => self.rerun(reason),
                (None, Some(outcome)) => self.done(outcome),
                (None, None) => {
                    let reason = if record.desired_hash == self.rendered.desired_hash {
                        "triggers changed since the last run"
                    } else {
                        "definition changed since the last run"
                    };
                    self.rerun(reason.to_owned())
                }
            };
        };
        let live_fingerprint = live.fingerprint.as_deref().unwrap_or(&record.fingerprint);
        let ran = record
            .runs
            .iter()
            .any(|run| run.fingerprint == self.rendered.fingerprint);
        if requested.is_none()
            && live_fingerprint != self.rendered.fingerprint
            && ran
            && let Some(outcome) = last
        {
            // Back to a definition that already ran: at most one run per fingerprint; the live Job of the other
            // definition is left to finish and be cleaned up.
            return self.done(outcome);
        }
        if requested.is_none() && live_fingerprint == self.rendered.fingerprint {
            let reason = match live.finished {
                None => "the Job of this definition is running",
                Some(outcome) => run_reason(Some(outcome)),
            };
            let mut action = self.row(Action::Unchanged, reason);
            if last == Some(Outcome::Failed) {
                action.hint = Some(self.retry_hint());
            }
            return action;
        }
        let changes = live
            .workload
            .as_ref()
            .and_then(|workload| read_back(workload, self.context).ok())
            .map(|back| self.changes(&back.job))
            .unwrap_or_default();
        let reason = requested.unwrap_or_else(|| {
            if changes.is_empty() {
                "triggers changed".to_owned()
            } else if changes.iter().any(|change| change.immutable.is_some()) {
                format!(
                    "{} changed (immutable: {})",
                    ticked(&changes),
                    immutable::JOB_TEMPLATE
                )
            } else {
                format!("{} changed", ticked(&changes))
            }
        });
        let mut action = self.row(Action::Replace, reason);
        action.changes = changes;
        action.records_run = true;
        self.replace_object(&mut action, live);
        action
    }

    fn retry_hint(&self) -> String {
        format!(
            "run it again with `--retry-failed` or `--replace {}`",
            self.name()
        )
    }

    fn rerun(&self, reason: String) -> PlannedAction {
        let mut action = self.row(Action::Rerun, reason);
        action.records_run = true;
        self.writes(&mut action, WriteVerb::Create);
        action
    }

    fn done(&self, outcome: Outcome) -> PlannedAction {
        let mut action = self.row(Action::Done { outcome }, run_reason(Some(outcome)));
        if outcome == Outcome::Failed {
            action.hint = Some(self.retry_hint());
        }
        action
    }

    /// Scheduled and continuous jobs of the inventory.
    fn long_running(&self, live: Option<&Live>) -> PlannedAction {
        let object = workload_kind(self.kind());
        let Some(live) = live else {
            let mut action = self.row(
                Action::Repair,
                format!("the {object:?} was deleted by hand"),
            );
            self.writes(&mut action, WriteVerb::Create);
            return action;
        };
        if let Some(reason) = self.requested_rerun(None) {
            let mut action = self.row(Action::Replace, reason);
            self.replace_object(&mut action, live);
            return action;
        }
        let Some(Ok(back)) = live
            .workload
            .as_ref()
            .map(|workload| read_back(workload, self.context))
        else {
            let mut action = self.row(
                Action::Repair,
                format!("the {object:?} was edited by hand and cannot be read back"),
            );
            self.writes(&mut action, WriteVerb::Update);
            return action;
        };
        let content_hash = desired_hash(&back.job);
        let live_hash = live
            .desired_hash
            .clone()
            .unwrap_or_else(|| content_hash.clone());
        let drift = content_hash != live_hash;
        let changes = self.changes(&back.job);
        let fingerprint_changed = live
            .fingerprint
            .as_deref()
            .is_some_and(|fingerprint| fingerprint != self.rendered.fingerprint);
        let service_missing =
            self.rendered.service.is_some() && !self.objects.contains_key(&ObjectKind::Service);

        let mut runs_now = false;
        let (action, reason) = if live_hash == self.rendered.desired_hash {
            if drift {
                (
                    Action::Repair,
                    format!("edited by hand: {}", ticked(&changes)),
                )
            } else if fingerprint_changed {
                let effect = if object == ObjectKind::CronJob {
                    "runs once now"
                } else {
                    "the pods restart"
                };
                runs_now = object == ObjectKind::CronJob;
                (Action::Update, format!("triggers changed: {effect}"))
            } else if service_missing {
                (Action::Repair, "the Service was deleted by hand".to_owned())
            } else {
                return self.row(Action::Unchanged, "up to date");
            }
        } else {
            let what = if changes.is_empty() {
                "rendering changed".to_owned()
            } else {
                format!("{} changed", ticked(&changes))
            };
            let also = if drift {
                "; it was also edited by hand"
            } else {
                ""
            };
            (Action::Update, format!("{what}{also}"))
        };
        if back.legacy_selector && action == Action::Update {
            let mut replace = self.row(
                Action::Replace,
                format!(
                    "{reason}; immutable: {} (legacy full-label selector)",
                    immutable::SELECTOR
                ),
            );
            replace.changes = changes;
            self.replace_object(&mut replace, live);
            return replace;
        }
        let mut planned = self.row(action, reason);
        planned.changes = changes;
        planned.runs_now = runs_now;
        self.writes(&mut planned, WriteVerb::Update);
        planned
    }
}

/// What the run record says, for humans.
fn run_reason(outcome: Option<Outcome>) -> &'static str {
    match outcome {
        Some(Outcome::Succeeded) => "ran with this definition: succeeded",
        Some(Outcome::Failed) => "ran with this definition: failed",
        Some(Outcome::Unknown) | None => "ran with this definition: outcome unknown",
    }
}

/// A name that is not in the file: prune it if the inventory has it, list it if it is a jobs-framework object,
/// say nothing about foreign objects.
fn undesired(
    name: &str,
    objects: &BTreeMap<ObjectKind, Live>,
    record: Option<&JobRecord>,
    context: &RenderContext,
    options: &PlanOptions,
) -> Option<PlannedAction> {
    if let Some(record) = record {
        let workload = workload_kind(record.kind);
        let deletes: Vec<Delete> = objects
            .iter()
            .filter(|(kind, live)| {
                live.owner == Owner::Framework
                    && (**kind == workload || **kind == ObjectKind::Service)
            })
            .map(|(_, live)| delete(live))
            .collect();
        if !options.prune {
            return Some(row(
                name,
                record.kind,
                Action::Ignored,
                "absent from the file; pruning is off",
            ));
        }
        let reason = if deletes.is_empty() {
            "absent from the file; nothing is live, the record is dropped"
        } else {
            "absent from the file"
        };
        let mut action = row(name, record.kind, Action::Delete, reason);
        action.waits = deletes
            .iter()
            .map(|delete| Wait::Deleted {
                object: delete.object.clone(),
            })
            .collect();
        action.deletes = deletes;
        return Some(action);
    }
    let (object_kind, live) = objects
        .iter()
        .find(|(_, live)| live.owner != Owner::Foreign)?;
    let kind = live
        .workload
        .as_ref()
        .and_then(|workload| read_back(workload, context).ok())
        .map_or_else(|| kind_of_object(*object_kind), |back| back.job.kind);
    let reason = match live.owner {
        Owner::OtherInventory => format!(
            "belongs to inventory `{}`: left alone",
            live.other_inventory.as_deref().unwrap_or_default()
        ),
        _ => "in neither the file nor the inventory (created by `run` or upstream): left alone"
            .to_owned(),
    };
    Some(row(name, kind, Action::Ignored, reason))
}
