//! Names that are not in the file: pruned when the inventory has them, otherwise listed or left out.

use crate::model::inventory::JobRecord;
use crate::plan::decide::{delete, kind_of_object, row, workload_kind};
use crate::plan::live::{Live, Objects, Owner};
use crate::plan::{Action, Delete, ObjectKind, PlanOptions, PlannedAction, Wait};
use crate::render::RenderContext;

/// A name that is not in the file: prune it if the inventory has it, list it if it is a jobs-framework object,
/// say nothing about foreign objects.
pub(super) fn undesired(
    name: &str,
    objects: &Objects<'_>,
    record: Option<&JobRecord>,
    context: &RenderContext,
    options: &PlanOptions,
) -> Option<PlannedAction> {
    if let Some(record) = record {
        let workload = workload_kind(record.kind);
        // The inventory alone is not enough: an object is ours to delete only when it also carries our
        // inventory's labels (one made by `run` or upstream under a recorded name is not).
        let (ours, others): (Vec<&Live<'_>>, Vec<&Live<'_>>) = objects
            .iter()
            .filter(|(kind, live)| {
                // A member workload of another kind was left by an apply killed while changing the job's kind.
                live.owner == Owner::Framework
                    && (**kind == workload
                        || **kind == ObjectKind::Service
                        || (live.member && kind.is_workload()))
            })
            .map(|(_, live)| live)
            .partition(|live| live.member);
        // The job's stored record goes with its workload (upstream may have written it without our labels); with
        // a workload that is not ours it stays, whatever its labels say: upstream lists the job by it.
        let workload_goes = ours.iter().any(|live| live.reference.kind == workload);
        let no_workload = !objects.contains_key(workload);
        let records = objects.iter().filter(|(kind, live)| {
            kind.is_record()
                && live.owner == Owner::Framework
                && (workload_goes || (no_workload && live.member))
        });
        let ours: Vec<&Live<'_>> = ours
            .iter()
            .copied()
            .chain(records.map(|(_, live)| live))
            .collect();
        let deletes: Vec<Delete> = ours.into_iter().map(delete).collect();
        if !options.prune {
            return Some(row(
                name,
                record.kind,
                Action::Ignored,
                "absent from the file; pruning is off",
            ));
        }
        let reason = match (deletes.is_empty(), others.is_empty()) {
            (true, true) => "absent from the file; nothing is live, the record is dropped",
            (true, false) => {
                "absent from the file; the live object is not ours (no labels of this inventory: made by `run` \
                 or upstream): left alone, the record is dropped"
            }
            (false, _) => "absent from the file",
        };
        let mut action = row(name, record.kind, Action::Delete, reason);
        // A record has no pods to wait for.
        action.waits = deletes
            .iter()
            .filter(|delete| !delete.object.kind.is_record())
            .map(|delete| Wait::Deleted {
                object: delete.object.clone(),
            })
            .collect();
        action.deletes = deletes;
        return Some(action);
    }
    if let Some(action) = unrecorded_members(name, objects, options) {
        return Some(action);
    }
    let (object_kind, live) = objects
        .iter()
        .find(|(_, live)| live.owner != Owner::Foreign)?;
    let kind = live
        .read_back(context)
        .and_then(Result::ok)
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

/// Objects labelled as members of this inventory under a name it has no record of: an apply was killed after
/// it created them and before it recorded them, and the job has left the file since. Our labels make them ours,
/// so pruning deletes them like any other job of ours.
fn unrecorded_members(
    name: &str,
    objects: &Objects<'_>,
    options: &PlanOptions,
) -> Option<PlannedAction> {
    let members: Vec<&Live<'_>> = objects
        .values()
        .filter(|live| live.owner == Owner::Framework && live.member)
        .collect();
    let workload = members
        .iter()
        .find(|live| live.reference.kind.is_workload())?;
    let kind = kind_of_object(workload.reference.kind);
    if !options.prune {
        return Some(row(
            name,
            kind,
            Action::Ignored,
            "absent from the file, left unrecorded by an interrupted apply; pruning is off",
        ));
    }
    let mut action = row(
        name,
        kind,
        Action::Delete,
        "absent from the file, left unrecorded by an interrupted apply",
    );
    action.waits = members
        .iter()
        .filter(|live| !live.reference.kind.is_record())
        .map(|live| Wait::Deleted {
            object: live.reference.clone(),
        })
        .collect();
    action.deletes = members.into_iter().map(delete).collect();
    Some(action)
}
