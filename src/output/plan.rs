//! The plan for people: a table of actions with counts (like kapp's), the field changes and a unified diff of the
//! YAML of the fields we own for every object we would overwrite, the quota headroom and the guards' refusals.
//!
//! Pure: a function of the plan and the live state, deterministic to the byte. Colours (ANSI) only when asked.

use std::fmt::Write as _;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::config::quantity::Quantity;
use crate::plan::{Action, DryRun, LiveState, Plan, PlannedAction, WriteVerb};

/// Lines of context around each change in the diffs.
const DIFF_CONTEXT: usize = 3;

/// The plan as text; `color` adds ANSI colours.
pub fn render(plan: &Plan, live: &LiveState, color: bool) -> String {
    let paint = Paint { color };
    let mut out = String::new();
    table(&mut out, plan, paint);
    for action in plan.actions.iter().filter(|action| shows_diff(action)) {
        diffs(&mut out, action, live, paint);
    }
    quota(&mut out, plan, paint);
    for note in &plan.notes {
        let _ = writeln!(out, "\n{} {note}", paint.bold("note:"));
    }
    for refusal in &plan.refusals {
        let flag = refusal
            .override_flag
            .as_ref()
            .map_or_else(String::new, |flag| format!(" (override with `{flag}`)"));
        let _ = writeln!(out, "\n{} {}{flag}", paint.red("refused:"), refusal.message);
    }
    let _ = writeln!(out, "\n{}", summary(plan));
    out
}

/// `Plan: 1 create, 2 unchanged` in the table's action order; `Plan: nothing to do` when empty.
pub fn summary(plan: &Plan) -> String {
    if plan.actions.is_empty() {
        return "Plan: no jobs".to_owned();
    }
    let counts: Vec<String> = ACTION_ORDER
        .iter()
        .filter_map(|name| {
            plan.counts
                .get(*name)
                .map(|count| format!("{count} {name}"))
        })
        .collect();
    let held = plan
        .held_by()
        .map(|barrier| format!("; held back by `{barrier}` (wait), which failed"));
    let verdict = if plan.is_refused() {
        "; refused by a safety guard"
    } else if plan.has_errors() {
        "; has errors"
    } else if let Some(held) = &held {
        held
    } else if plan.has_changes() {
        ""
    } else {
        "; nothing to change"
    };
    format!("Plan: {}{verdict}", counts.join(", "))
}

/// The order of the counts in the summary: writes first, then what stays.
const ACTION_ORDER: &[&str] = &[
    "create",
    "update",
    "replace",
    "rerun",
    "repair",
    "adopt",
    "delete",
    "conflict",
    "held",
    "unchanged",
    "done",
    "ignored",
];

fn table(out: &mut String, plan: &Plan, paint: Paint) {
    if plan.actions.is_empty() {
        return;
    }
    let rows: Vec<[String; 4]> = plan
        .actions
        .iter()
        .map(|action| {
            [
                action_label(action),
                action.kind.name().to_owned(),
                action.job.clone(),
                action.reason.clone(),
            ]
        })
        .collect();
    let header = ["ACTION", "KIND", "JOB", "REASON"];
    let width = |column: usize| {
        rows.iter()
            .map(|row| row[column].len())
            .chain([header[column].len()])
            .max()
            .unwrap_or(0)
    };
    let (action_width, kind_width, job_width) = (width(0), width(1), width(2));
    let _ = writeln!(
        out,
        "{:<action_width$}  {:<kind_width$}  {:<job_width$}  {}",
        header[0], header[1], header[2], header[3]
    );
    for (action, row) in plan.actions.iter().zip(&rows) {
        // Pad before painting: escape codes have no width on screen.
        let label = paint.action(action.action, &format!("{:<action_width$}", row[0]));
        let _ = writeln!(
            out,
            "{label}  {:<kind_width$}  {:<job_width$}  {}",
            row[1], row[2], row[3]
        );
        let indent = " ".repeat(action_width + 2);
        let schedule = action
            .changes
            .iter()
            .find(|change| change.field == "schedule");
        for change in &action.changes {
            // The expanded schedule only says something when it differs from the written one.
            if change.field == "schedule-actual"
                && schedule.is_some_and(|written| {
                    written.live == change.live && written.desired == change.desired
                })
            {
                continue;
            }
            let immutable = change
                .immutable
                .as_ref()
                .map_or_else(String::new, |field| format!(" (immutable: {field})"));
            let _ = writeln!(
                out,
                "{indent}{}: {} → {}{immutable}",
                change.field,
                shown(change.live.as_ref()),
                shown(change.desired.as_ref())
            );
        }
        for error in &action.errors {
            let _ = writeln!(out, "{indent}{} {error}", paint.red("error:"));
        }
        match &action.dry_run {
            Some(DryRun::Immutable { field }) => {
                let _ = writeln!(
                    out,
                    "{indent}{} the server refuses the update: `{field}` is immutable",
                    paint.red("error:")
                );
            }
            Some(DryRun::Rejected { message }) => {
                let _ = writeln!(
                    out,
                    "{indent}{} the server refuses the write: {message}",
                    paint.red("error:")
                );
            }
            Some(DryRun::Confirmed) | None => {}
        }
        if let Some(hint) = &action.hint {
            let _ = writeln!(out, "{indent}hint: {hint}");
        }
    }
}

/// `done` shows its outcome: `done (failed)`.
fn action_label(action: &PlannedAction) -> String {
    match action.action {
        Action::Done { outcome } => format!("done ({})", outcome.name()),
        other => other.name().to_owned(),
    }
}

/// A field value in a change line: strings bare, others as JSON, absence as `(none)`.
fn shown(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "(none)".to_owned(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// Overwrites of a live object get a diff; creations of new objects and deletions do not (the table says it).
fn shows_diff(action: &PlannedAction) -> bool {
    matches!(
        action.action,
        Action::Update | Action::Replace | Action::Repair
    )
}

fn diffs(out: &mut String, action: &PlannedAction, live: &LiveState, paint: Paint) {
    for write in &action.writes {
        if matches!(
            write.verb,
            WriteVerb::Label | WriteVerb::Resume | WriteVerb::Patch
        ) {
            continue;
        }
        let Some(live_object) = live.manifest(write.object.kind, &write.object.name) else {
            continue;
        };
        let manifest = write.manifest.value();
        let before = yaml(&owned(&live_object, &manifest, false));
        let after = yaml(&manifest);
        if before == after {
            continue;
        }
        let title = format!("{:?}/{}", write.object.kind, write.object.name);
        let diff = TextDiff::from_lines(&before, &after);
        let _ = writeln!(
            out,
            "\n{}\n{}",
            paint.bold(&format!("--- {title} (live)")),
            paint.bold(&format!("+++ {title} (jobs.yaml)"))
        );
        for group in diff.grouped_ops(DIFF_CONTEXT) {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            let old = first.old_range().start..last.old_range().end;
            let new = first.new_range().start..last.new_range().end;
            let _ = writeln!(
                out,
                "{}",
                paint.cyan(&format!(
                    "@@ -{},{} +{},{} @@",
                    old.start + 1,
                    old.len(),
                    new.start + 1,
                    new.len()
                ))
            );
            for op in &group {
                for change in diff.iter_changes(op) {
                    let text = change.value().trim_end_matches('\n');
                    let _ = writeln!(
                        out,
                        "{}",
                        match change.tag() {
                            ChangeTag::Equal => format!(" {text}"),
                            ChangeTag::Delete => paint.red(&format!("-{text}")),
                            ChangeTag::Insert => paint.green(&format!("+{text}")),
                        }
                    );
                }
            }
        }
    }
}

/// The part of a live object we own: the fields the desired manifest sets, nothing the server added (defaults,
/// status, uid, managedFields). List items are compared by position; live items beyond the desired ones are kept
/// whole. Quantities equal in value read as the desired text (the server rewrites `0.5Gi` as `512Mi`).
fn owned(live: &Value, desired: &Value, in_resources: bool) -> Value {
    match (live, desired) {
        (Value::Object(live), Value::Object(desired)) => Value::Object(
            desired
                .iter()
                .filter_map(|(key, desired)| {
                    let live = live.get(key)?;
                    let in_resources = in_resources || key == "resources";
                    Some((key.clone(), owned(live, desired, in_resources)))
                })
                .collect(),
        ),
        (Value::Array(live), Value::Array(desired)) => Value::Array(
            live.iter()
                .enumerate()
                .map(|(index, item)| {
                    desired.get(index).map_or_else(
                        || item.clone(),
                        |desired| owned(item, desired, in_resources),
                    )
                })
                .collect(),
        ),
        (Value::String(live_text), Value::String(desired_text))
            if in_resources && same_quantity(live_text, desired_text) =>
        {
            desired.clone()
        }
        _ => live.clone(),
    }
}

fn same_quantity(a: &str, b: &str) -> bool {
    matches!((Quantity::parse(a), Quantity::parse(b)), (Ok(a), Ok(b)) if a.nanos() == b.nanos())
}

fn yaml(value: &Value) -> String {
    // A JSON value always serialises to YAML.
    serde_saphyr::to_string(value).unwrap_or_else(|error| format!("# cannot show: {error}\n"))
}

fn quota(out: &mut String, plan: &Plan, paint: Paint) {
    if plan.quota.is_empty() {
        return;
    }
    let header = ["QUOTA", "RESOURCE", "USED", "HARD", "CHANGE"];
    let rows: Vec<[&str; 5]> = plan
        .quota
        .iter()
        .map(|quota| {
            [
                quota.quota.as_str(),
                quota.resource.as_str(),
                quota.used.as_str(),
                quota.hard.as_str(),
                quota.change.as_str(),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].len())
                .chain([header[column].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 5]| {
        let mut text = String::new();
        for (cell, width) in cells.iter().zip(&widths) {
            let _ = write!(text, "{cell:<width$}  ");
        }
        text.trim_end().to_owned()
    };
    let _ = writeln!(out, "\n{}", line(header));
    for (quota, row) in plan.quota.iter().zip(rows) {
        if quota.exceeded {
            let _ = writeln!(out, "{}", paint.red(&format!("{}  over quota", line(row))));
        } else {
            let _ = writeln!(out, "{}", line(row));
        }
    }
}

/// ANSI styling, or none.
#[derive(Debug, Clone, Copy)]
struct Paint {
    color: bool,
}

impl Paint {
    fn style(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn red(self, text: &str) -> String {
        self.style("31", text)
    }

    fn green(self, text: &str) -> String {
        self.style("32", text)
    }

    fn cyan(self, text: &str) -> String {
        self.style("36", text)
    }

    fn bold(self, text: &str) -> String {
        self.style("1", text)
    }

    /// Writes green, overwrites yellow, deletes and conflicts red, the rest plain.
    fn action(self, action: Action, text: &str) -> String {
        match action {
            Action::Create | Action::Rerun | Action::Adopt => self.green(text),
            Action::Update | Action::Replace | Action::Repair => self.style("33", text),
            Action::Delete | Action::Conflict | Action::Held => self.red(text),
            Action::Unchanged | Action::Done { .. } | Action::Ignored => text.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn owned_fields_leave_out_what_the_server_added() {
        let live = json!({
            "metadata": {"name": "bot", "uid": "1", "labels": {"a": "b"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "job", "image": "old", "imagePullPolicy": "Always",
                 "resources": {"limits": {"memory": "512Mi"}}}
            ]}}},
            "status": {"replicas": 1},
        });
        let desired = json!({
            "metadata": {"name": "bot", "labels": {"a": "b"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "job", "image": "new", "resources": {"limits": {"memory": "0.5Gi"}}}
            ]}}},
        });
        assert_eq!(
            owned(&live, &desired, false),
            json!({
                "metadata": {"name": "bot", "labels": {"a": "b"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "job", "image": "old", "resources": {"limits": {"memory": "0.5Gi"}}}
                ]}}},
            })
        );
    }

    #[test]
    fn extra_live_list_items_are_shown() {
        let live = json!({"env": [{"name": "A"}, {"name": "B", "value": "x"}]});
        let desired = json!({"env": [{"name": "A"}]});
        assert_eq!(owned(&live, &desired, false), live);
    }

    #[test]
    fn colours_only_when_asked() {
        assert_eq!(Paint { color: false }.red("x"), "x");
        assert_eq!(Paint { color: true }.red("x"), "\x1b[31mx\x1b[0m");
    }
}
