//! `toolforge-local-cluster`: a Kubernetes-API-compatible cluster that runs in-process, for tests, as the
//! embedded default of toolforge-jobs, and as a development cluster that real kubectl can use (SPEC §10).
//!
//! Part 1 is the API machinery: an HTTP server (module `api`) over one object [`Store`] with a global
//! resourceVersion, the registry operations (`ops`, `apply`, `delete`) with their validation, defaulting and
//! admission (LimitRanger and ResourceQuota, module `admission`), watches, and the garbage collector (`gc`).
//! Part 2 adds controllers on a small reconciler framework (`controller`): Job, TTL-after-finished, CronJob,
//! ReplicaSet and Deployment controllers and a kubelet (scripted, or running processes with probes), opted into
//! with [`Options::controllers`]; what the scripted containers print ([`Script::output`]) is served by
//! `pods/{name}/log` (module `logs` and `api::log`). `docs/local-cluster.md` lists what is served and the known
//! divergences.
//!
//! Start with [`LocalCluster::start`] (tests) or [`serve`] (the `local-cluster` command).

mod admission;
mod api;
mod apply;
pub mod auth;
mod bootstrap;
mod clock;
mod cluster;
mod controller;
mod controllers;
mod cronjob;
mod decode;
mod defaults;
mod delete;
mod deployment;
mod event_ttl;
mod events_view;
mod faults;
mod gc;
mod job;
pub mod kubeconfig;
mod kubelet;
mod logs;
mod meta;
mod ops;
mod patch;
mod persist;
mod pod_status;
pub mod private_files;
mod protobuf;
mod quantity;
mod recorder;
mod replicaset;
mod resources;
mod schedule;
mod script;
mod selector;
mod status;
mod store;
mod tls_server;
mod ttl;
mod validation;

pub use bootstrap::NODE_NAME;
pub use clock::Clock;
pub use cluster::{
    ClusterError, IDENTITY_NAME, IDENTITY_NAMESPACE, LocalCluster, Options, ServeOptions,
    credentials_directory, serve,
};
pub use controllers::Controllers;
pub use faults::{Fault, Hold};
pub use resources::{Propagation, RESOURCES, ResourceType, by_kind, find};
pub use script::{Kubelet, Outcome, ProcessOptions, Script};
pub use selector::{FieldSelector, LabelSelector};
pub use status::{ApiError, FieldError, FieldErrorKind};
pub use store::{Change, EventType, Store};
