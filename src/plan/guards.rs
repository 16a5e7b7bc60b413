//! The safety guards (SPEC §5): a plan that would prune everything, or most of the inventory, or that names jobs
//! the file does not have, is refused as a whole (exit 7) unless the loudly named flag overrides it.
//!
//! - An empty file refuses to prune (`--allow-empty`); a file that is empty on purpose deletes everything, so
//!   `--allow-empty` also accepts that.
//! - A plan deleting every job of the inventory is refused (`--allow-mass-delete`).
//! - A plan deleting more than half of the inventory's jobs is refused (`--allow-mass-delete`).
//! - `--job NAME` or `--replace NAME` with a name the file does not have is refused (no override: it is a typo).

use std::collections::BTreeSet;

use crate::model::inventory::Inventory;
use crate::plan::{Action, Guard, PlanOptions, PlannedAction, Refusal};

/// The refusals of `actions`, planned for the jobs `in_file` (the names of the file's jobs).
pub(crate) fn check(
    actions: &[PlannedAction],
    in_file: &BTreeSet<&str>,
    inventory: &Inventory,
    options: &PlanOptions,
) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    let unknown: BTreeSet<&String> = options
        .only_jobs
        .iter()
        .chain(&options.replace)
        .filter(|name| !in_file.contains(name.as_str()))
        .collect();
    if !unknown.is_empty() {
        refusals.push(Refusal {
            guard: Guard::UnknownJob,
            message: format!(
                "the file has no job {}",
                unknown
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            override_flag: None,
            jobs: unknown.into_iter().cloned().collect(),
        });
    }

    let deleted: Vec<String> = actions
        .iter()
        .filter(|action| action.action == Action::Delete)
        .map(|action| action.job.clone())
        .collect();
    let total = inventory.jobs.len();
    if deleted.is_empty() || total == 0 {
        return refusals;
    }
    let empty_file = in_file.is_empty();
    if empty_file {
        if !options.allow_empty {
            refusals.push(Refusal {
                guard: Guard::EmptyFile,
                message: format!(
                    "the file has no jobs: refusing to delete all {total} jobs of the inventory"
                ),
                override_flag: Some("--allow-empty".to_owned()),
                jobs: deleted,
            });
        }
        return refusals;
    }
    if options.allow_mass_delete {
        return refusals;
    }
    if deleted.len() == total {
        refusals.push(Refusal {
            guard: Guard::DeletesEverything,
            message: format!("refusing to delete every job of the inventory ({total})"),
            override_flag: Some("--allow-mass-delete".to_owned()),
            jobs: deleted,
        });
    } else if deleted.len() * 2 > total {
        refusals.push(Refusal {
            guard: Guard::MassDelete,
            message: format!(
                "refusing to delete {} of the inventory's {total} jobs (more than half)",
                deleted.len()
            ),
            override_flag: Some("--allow-mass-delete".to_owned()),
            jobs: deleted,
        });
    }
    refusals
}
