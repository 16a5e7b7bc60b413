//! `toolforge-local-cluster`: a Kubernetes-API-compatible cluster that runs in-process, for tests, as the
//! embedded default of toolforge-jobs, and as a development cluster that real kubectl can use (SPEC §10).
//!
//! The crate is layered; each folder imports only the ones below it:
//!
//! - `registry` is the API machinery under one object [`Store`] with a global resourceVersion: the write
//!   operations (`registry::ops`, `registry::server_side_apply`, `registry::delete`) with their validation,
//!   defaulting and admission (LimitRanger and ResourceQuota, `registry::admission`), watches, the garbage
//!   collector (`registry::gc`), the resource table with the custom types of custom resource definitions
//!   (`registry::crd`, `registry::custom`) and the state file.
//! - `api` is the HTTP server over the registry: routing, discovery, negotiation, tables, watch streams, the
//!   authentication middleware and the fault injection of tests.
//! - `controllers` are the Job, TTL-after-finished, CronJob, ReplicaSet and Deployment controllers on a small
//!   reconciler framework (`controllers::framework`), opted into with [`Options::controllers`].
//! - `kubelet` is the node: scripted, or running processes with probes. What the scripted containers print
//!   ([`Script::output`]) is kept in `registry::logs` and served by `pods/{name}/log` (`api::log`).
//!
//! Around them sit the wiring (`cluster`: start and serve, `bootstrap`), the identities and the CA (`auth`),
//! the TLS server, kubeconfigs, the cluster's `clock` and the cron `schedule`. `docs/local-cluster.md` lists
//! what is served and the known divergences.
//!
//! Start with [`LocalCluster::start`] (tests) or [`serve`] (the `local-cluster` command).

mod api;
pub mod auth;
mod bootstrap;
mod clock;
mod cluster;
mod controllers;
pub mod kubeconfig;
mod kubelet;
pub mod private_files;
mod registry;
mod schedule;
mod tls_server;

pub use api::faults::{Fault, Hold};
pub use bootstrap::NODE_NAME;
pub use clock::Clock;
pub use cluster::{
    ClusterError, Controllers, IDENTITY_NAME, IDENTITY_NAMESPACE, LocalCluster, Options,
    ServeOptions, credentials_directory, serve,
};
pub use kubelet::{ContainerOutcome, ImagePolicy, Kubelet, ProcessOptions, Script};
pub use registry::api_error::{ApiError, FieldError, FieldErrorKind};
pub use registry::resources::{Propagation, RESOURCES, ResourceType, by_kind, find};
pub use registry::selector::{FieldSelector, LabelSelector};
pub use registry::store::{Change, EventType, Store};
