//! Scheduled and continuous jobs of the inventory: unchanged, updated in place, repaired or replaced.

use crate::plan::decide::{Desired, ticked, workload_kind};
use crate::plan::immutable;
use crate::plan::live::Live;
use crate::plan::{Action, ObjectKind, PlannedAction, WriteVerb};
use crate::render::desired_hash;

impl Desired<'_> {
    /// Scheduled and continuous jobs of the inventory.
    pub(super) fn long_running(&self, live: Option<&Live<'_>>) -> PlannedAction {
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
        let Some(Ok(back)) = live.read_back(self.context) else {
            let mut action = self.row(
                Action::Repair,
                format!("the {object:?} was edited by hand and cannot be read back"),
            );
            self.writes(&mut action, WriteVerb::Update);
            return action;
        };
        // An equal job hashes equally: an unchanged job, the usual case, is not serialised and hashed again.
        let content_hash = if back.job == self.rendered.canonical {
            self.rendered.desired_hash.clone()
        } else {
            desired_hash(&back.job)
        };
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
            self.rendered.service.is_some() && !self.objects.contains_key(ObjectKind::Service);

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
                let mut action = self.row(Action::Unchanged, "up to date");
                if let Some(why) = self.record_writes(&mut action) {
                    action.action = Action::Repair;
                    why.clone_into(&mut action.reason);
                }
                return action;
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
