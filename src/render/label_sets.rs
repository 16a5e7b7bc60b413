//! The label sets of the rendered objects: upstream's labels of a job's workload, pod template and Service, and
//! our inventory membership labels on the top-level objects (reference/toolforge.md §3.2, SPEC §4, §6).

use crate::model::labels::{
    APPLYSET_PART_OF, EMAILS, FILELOG, INVENTORY, Labels, MOUNT_STORAGE, VERSION, VERSION_VALUE,
    selector,
};
use crate::render::canonical::CanonicalJob;
use crate::render::context::RenderContext;

/// Labels of a Service and its selector: the selector labels plus the format version.
pub fn service(tool: &str, job: &CanonicalJob) -> Labels {
    let mut labels = selector(tool, &job.name, job.kind);
    labels.insert(VERSION.to_owned(), VERSION_VALUE.to_owned());
    labels
}

/// Every upstream label of a workload and its pod template.
pub fn workload(tool: &str, job: &CanonicalJob) -> Labels {
    let mut labels = service(tool, job);
    if job.filelog {
        labels.insert(FILELOG.to_owned(), "yes".to_owned());
    }
    labels.insert(EMAILS.to_owned(), job.emails.clone());
    labels.insert(MOUNT_STORAGE.to_owned(), job.mount.clone());
    labels
}

/// `base` plus our inventory membership labels, for the top-level objects (never pod templates).
pub fn with_membership(mut base: Labels, context: &RenderContext) -> Labels {
    base.insert(INVENTORY.to_owned(), context.membership.set_name.clone());
    base.insert(
        APPLYSET_PART_OF.to_owned(),
        context.membership.applyset_id.clone(),
    );
    base
}
