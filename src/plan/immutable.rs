//! Which changes Kubernetes refuses to make in place (reference k8s-semantics.md §2.3–2.5).
//!
//! - Job: `spec.template` and `spec.selector` are immutable; `spec.backoffLimit` (our `retry`) is mutable, but every
//!   other field of a job lives in the pod template (command, image, resources, labels such as `emails`).
//! - CronJob: everything is mutable; a new template applies to Jobs created afterwards.
//! - Deployment: only `spec.selector` is immutable, and we never change it, except when the live object has a
//!   legacy full-label selector (objects before upstream T409007).
//! - Service: every field we set is mutable (ports, selector).
//!
//! A server-side dry run can confirm this later ([`crate::plan::DryRun`]).

use crate::plan::ObjectKind;

/// Job `spec.template`.
pub(crate) const JOB_TEMPLATE: &str = "spec.template";
/// Deployment `spec.selector`.
pub(crate) const SELECTOR: &str = "spec.selector";

/// The immutable field of an object of `kind` that a change of the canonical `field` touches, if any.
pub(crate) fn path(kind: ObjectKind, field: &str) -> Option<&'static str> {
    (kind == ObjectKind::Job && field != "retry").then_some(JOB_TEMPLATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_job_templates_are_immutable_among_job_fields() {
        let cases = [
            (ObjectKind::Job, "command", Some(JOB_TEMPLATE)),
            (ObjectKind::Job, "mem", Some(JOB_TEMPLATE)),
            (ObjectKind::Job, "emails", Some(JOB_TEMPLATE)),
            (ObjectKind::Job, "retry", None),
            (ObjectKind::CronJob, "command", None),
            (ObjectKind::CronJob, "schedule", None),
            (ObjectKind::Deployment, "image", None),
            (ObjectKind::Deployment, "port", None),
            (ObjectKind::Service, "port", None),
        ];
        for (kind, field, expected) in cases {
            assert_eq!(path(kind, field), expected, "{kind:?} {field}");
        }
    }
}
