//! `cluster`: the I/O shell around the pure core — connecting to the Kubernetes API and reading, in rounds of
//! concurrent requests, what rendering and planning need (SPEC §5).
//!
//! [`connect`] turns `--kubeconfig`/`--context` into a client; [`read`] fetches a [`Snapshot`]: one LIST per
//! workload kind and the Services of the tool's namespace, the inventory ConfigMap, the `LimitRange` and
//! `ResourceQuota` of the namespace, Toolforge's image table, and the local cluster's identity when it is one
//! ([`read_covering`] only the part a plan needs).
//! [`context`] turns a snapshot into the [`crate::render::RenderContext`]; [`dry_run`] asks the server to check
//! the plan's writes; [`lock`] holds the per-tool Lease and [`inventory`] writes the inventory with optimistic
//! concurrency; [`retry`] retries transient errors. Nothing here decides anything: the plan does.

pub mod connect;
pub mod context;
pub mod dry_run;
pub mod embedded;
pub mod inventory;
mod listing;
pub mod lock;
pub mod retry;
pub mod snapshot;

use kube::api::{ApiResource, GroupVersionKind};

use crate::plan::ObjectKind;
use crate::render::record::{self, RecordKind};

/// Our name in `managedFields`, on every write.
pub const FIELD_MANAGER: &str = "toolforge-jobs";

pub use connect::{ConnectError, Connection, Target, connect};
pub use context::{ContextInputs, Passwd, render_context};
pub use snapshot::{
    Coverage, LocalIdentity, ReadError, Snapshot, StoredInventory, read, read_covering,
};

/// Whether a kube error is the API's 404.
fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

/// Whether a kube error is the API's 409 (a resourceVersion or UID precondition failed, or the name is taken).
pub(crate) fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// Whether a kube error is the API's 403 (RBAC: a tool may not read some object).
pub(crate) fn is_forbidden(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403)
}

/// The API coordinates of an object kind the plan writes.
pub(crate) fn api_resource(kind: ObjectKind) -> ApiResource {
    let (group, version, kind, plural) = match kind {
        ObjectKind::Job => ("batch", "v1", "Job", "jobs"),
        ObjectKind::CronJob => ("batch", "v1", "CronJob", "cronjobs"),
        ObjectKind::Deployment => ("apps", "v1", "Deployment", "deployments"),
        ObjectKind::Service => ("", "v1", "Service", "services"),
        ObjectKind::ContinuousJob => return record_resource(RecordKind::Continuous),
        ObjectKind::ScheduledJob => return record_resource(RecordKind::Scheduled),
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// The API coordinates of upstream's stored records of `kind`.
pub(crate) fn record_resource(kind: RecordKind) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(record::GROUP, record::VERSION, kind.kind()),
        kind.plural(),
    )
}
