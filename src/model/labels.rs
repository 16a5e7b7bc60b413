//! Label and annotation keys and values, and the labels upstream selects a job's objects by (reference/toolforge.md
//! §3.2, SPEC §4, §6). The full label sets of rendered objects are `render::label_sets`.
//!
//! Upstream's labels are what the emailer, the volume-admission webhook and `toolforge jobs list` look for, so
//! they are reproduced exactly; ours live under `jobs.toolforge.org/` and `applyset.kubernetes.io/`.

use std::collections::BTreeMap;

use crate::model::Kind;

pub const TOOLFORGE: &str = "toolforge";
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const CREATED_BY: &str = "app.kubernetes.io/created-by";
pub const NAME: &str = "app.kubernetes.io/name";
pub const COMPONENT: &str = "app.kubernetes.io/component";
pub const VERSION: &str = "app.kubernetes.io/version";
pub const FILELOG: &str = "jobs.toolforge.org/filelog";
pub const EMAILS: &str = "jobs.toolforge.org/emails";
pub const MOUNT_STORAGE: &str = "toolforge.org/mount-storage";
/// Only on legacy v1 objects: the command is in the `exec 1>>…;exec 2>>…;cmd` format.
pub const COMMAND_NEW_FORMAT: &str = "jobs.toolforge.org/command-new-format";

/// The value of [`MANAGED_BY`] on every jobs-framework object, ours and upstream's.
pub const MANAGED_BY_VALUE: &str = "toolforge-jobs-framework";
/// The object format upstream writes today.
pub const VERSION_VALUE: &str = "2";

/// Annotation with the schedule as the user wrote it.
pub const CRON_EXPRESSION: &str = "jobs.toolforge.org/cron-expression";
/// Our annotation: SHA-256 of the canonical desired job.
pub const DESIRED_HASH: &str = "jobs.toolforge.org/desired-hash";
/// Our annotation: the job's fingerprint (canonical job plus triggers).
pub const FINGERPRINT: &str = "jobs.toolforge.org/fingerprint";
/// Our pod-template annotation on Deployments with triggers: changing a trigger rolls the pods.
pub const TRIGGERS: &str = "jobs.toolforge.org/triggers";
/// Our annotation marking a Deployment as a webservice job (Kubernetes-wise it is a continuous job).
pub const JOB_TYPE: &str = "jobs.toolforge.org/type";
/// The value of [`JOB_TYPE`] on webservices.
pub const WEBSERVICE: &str = "webservice";
/// Our label: the name of the inventory (set) the object belongs to.
pub const INVENTORY: &str = "jobs.toolforge.org/inventory";
/// The `ApplySet` KEP's member label, whose value is the parent's `ApplySet` id.
pub const APPLYSET_PART_OF: &str = "applyset.kubernetes.io/part-of";

/// A label set.
pub type Labels = BTreeMap<String, String>;

/// Whether labels mark a jobs-framework object (ours, upstream's, `run`'s): the only objects we may touch.
pub fn is_framework(labels: Option<&Labels>) -> bool {
    labels
        .and_then(|labels| labels.get(MANAGED_BY))
        .is_some_and(|value| value == MANAGED_BY_VALUE)
}

/// The label selector of every jobs-framework object.
pub fn framework_selector() -> String {
    format!("{MANAGED_BY}={MANAGED_BY_VALUE}")
}

/// Labels as a label selector: `key=value,key=value`.
pub fn selector_text(labels: &Labels) -> String {
    labels
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `app.kubernetes.io/component` of each kind.
pub fn component(kind: Kind) -> &'static str {
    match kind {
        Kind::OneOff => "jobs",
        Kind::Scheduled => "cronjobs",
        Kind::Continuous | Kind::Webservice => "deployments",
    }
}

/// The labels upstream selects a job's objects by (get, delete).
pub fn selector(tool: &str, job: &str, kind: Kind) -> Labels {
    let mut labels = deployment_selector(tool, job);
    labels.insert(COMPONENT.to_owned(), component(kind).to_owned());
    labels
}

/// The reduced Deployment selector (upstream T409007): only labels a user can never change. Upstream's pod
/// topology spread selects the same labels.
pub fn deployment_selector(tool: &str, job: &str) -> Labels {
    labels([
        (TOOLFORGE, "tool"),
        (MANAGED_BY, MANAGED_BY_VALUE),
        (CREATED_BY, tool),
        (NAME, job),
    ])
}

fn labels<const N: usize>(pairs: [(&str, &str); N]) -> Labels {
    pairs
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}
