//! `toolforge-jobs diff`: what `apply` would do, before anything is touched (SPEC §5).
//!
//! Prints the plan — a table of actions with reasons, field changes and a YAML diff of what we own in every
//! object we would overwrite, the quota headroom, the guards' refusals — or, with `-o json`, the plan's stable
//! JSON form (docs/plan.md). Exit 0 when nothing would change, 3 when something would, 7 when a safety guard
//! refuses the plan, 1 when it cannot be carried out (a conflict, the namespace's limits or quota, the server's
//! dry run) or on API errors, 2 on an invalid file.

use crate::cli::planning::{PlanArgs, prepare};
use crate::cli::{Error, GlobalArgs, OutputFormat};
use crate::output::{ExitStatus, Printer, plan as plan_view};
use crate::pipeline::Prepared;
use crate::plan::Plan;

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &PlanArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let planned = match prepare(global, args, true, printer).await? {
        Prepared::Planned(planned) => planned,
        Prepared::Invalid(_) => return Ok(ExitStatus::Invalid),
    };
    let plan = &planned.plan;
    match global.output {
        OutputFormat::Json => {
            let mut text = plan.to_json();
            text.push('\n');
            printer.data(&text)?;
        }
        OutputFormat::Text | OutputFormat::Long | OutputFormat::Name => {
            printer.data(&plan_view::render(
                plan,
                &planned.snapshot.live,
                printer.data_color(),
            ))?;
        }
    }
    let status = exit_status(plan);
    // The process exits right after this: freeing the live state and the rendered objects one by one would only
    // delay the exit (a quarter of a 1 000-job plan's time), and the system takes the memory back anyway.
    std::mem::forget(planned);
    Ok(status)
}

/// The exit status of `diff` for `plan` (see the module documentation).
pub(crate) fn exit_status(plan: &Plan) -> ExitStatus {
    if plan.is_refused() {
        ExitStatus::Refused
    } else if plan.has_errors() {
        ExitStatus::Failure
    } else if plan.has_changes() {
        ExitStatus::Changes
    } else {
        ExitStatus::Success
    }
}
