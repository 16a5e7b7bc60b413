//! Names that are not in the file: pruned when the inventory has them, otherwise listed or left out.

use std::collections::BTreeMap;

use crate::plan::decide::{delete, kind_of_object, row, workload_kind};
use crate::plan::live::{Live, Owner};
use crate::plan::{Action, Delete, ObjectKind, PlanOptions, PlannedAction, Wait};
use crate::render::inventory::JobRecord;
use crate::render::{RenderContext, read_back_ref};

/// A name that is not in the file: prune it if the inventory has it, list it if it is a jobs-framework object,
/// say nothing about foreign objects.
pub(super) fn undesired(
    name: &str,
    objects: &BTreeMap<ObjectKind, Live<'_>>,
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
        .and_then(|workload| read_back_ref(*workload, context).ok())
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
