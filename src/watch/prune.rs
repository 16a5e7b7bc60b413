//! The daemon's pruning rule: it deletes only the jobs that were in the last valid file it carried out and that a
//! newer valid file dropped. A job the inventory holds but the file never had while the daemon watched (it was
//! removed while no daemon ran, before this daemon's first run) is left alone: deleting it takes an `apply`.
//!
//! The plan's own guards stay armed: a plan refused for deleting too much stays refused, unless every delete it
//! counted is one the daemon leaves alone anyway.

use std::collections::BTreeSet;

use crate::plan::{Action, Guard, Plan};

/// Turns the plan's deletes of jobs outside `allowed` into `ignored` rows; returns those jobs, sorted.
pub fn restrict_prunes(plan: &mut Plan, allowed: &BTreeSet<String>) -> Vec<String> {
    let mut kept = Vec::new();
    for action in &mut plan.actions {
        if action.action == Action::Delete && !allowed.contains(&action.job) {
            action.action = Action::Ignored;
            "absent from the file, but not dropped from it while the daemon watched: left alone"
                .clone_into(&mut action.reason);
            action.deletes.clear();
            action.waits.clear();
            kept.push(action.job.clone());
        }
    }
    if kept.is_empty() {
        return kept;
    }
    let deletes_left = plan
        .actions
        .iter()
        .any(|action| action.action == Action::Delete);
    if !deletes_left {
        plan.refusals.retain(|refusal| {
            !matches!(
                refusal.guard,
                Guard::EmptyFile | Guard::DeletesEverything | Guard::MassDelete
            )
        });
    }
    plan.counts.clear();
    for action in &plan.actions {
        *plan
            .counts
            .entry(action.action.name().to_owned())
            .or_insert(0) += 1;
    }
    kept.sort();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Kind;
    use crate::plan::{PlannedAction, Refusal};

    fn action(job: &str, action: Action) -> PlannedAction {
        PlannedAction::new(job, Kind::Continuous, action, "absent from the file")
    }

    fn plan(actions: Vec<PlannedAction>, refusals: Vec<Refusal>) -> Plan {
        Plan::new(actions, refusals)
    }

    fn mass_delete() -> Refusal {
        Refusal {
            guard: Guard::MassDelete,
            message: "refusing".to_owned(),
            override_flag: Some("--allow-mass-delete".to_owned()),
            jobs: vec!["a".to_owned(), "b".to_owned()],
        }
    }

    #[test]
    fn only_jobs_the_file_dropped_while_watched_are_deleted() {
        let mut plan = plan(
            vec![
                action("keep", Action::Unchanged),
                action("dropped", Action::Delete),
                action("old", Action::Delete),
            ],
            Vec::new(),
        );
        let allowed = BTreeSet::from(["dropped".to_owned()]);
        assert_eq!(restrict_prunes(&mut plan, &allowed), vec!["old".to_owned()]);
        assert_eq!(plan.action("dropped").unwrap().action, Action::Delete);
        assert_eq!(plan.action("old").unwrap().action, Action::Ignored);
        assert_eq!(plan.counts["ignored"], 1);
        assert_eq!(plan.counts["delete"], 1);
    }

    #[test]
    fn guards_stay_armed_unless_no_delete_is_left() {
        let mut refused = plan(
            vec![action("a", Action::Delete), action("b", Action::Delete)],
            vec![mass_delete()],
        );
        restrict_prunes(&mut refused, &BTreeSet::from(["a".to_owned()]));
        assert!(refused.is_refused(), "one delete is left: still refused");

        let mut nothing_left = plan(
            vec![action("a", Action::Delete), action("b", Action::Delete)],
            vec![mass_delete()],
        );
        restrict_prunes(&mut nothing_left, &BTreeSet::new());
        assert!(!nothing_left.is_refused());
        assert!(!nothing_left.has_changes());
    }
}
