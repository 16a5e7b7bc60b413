//! The controllers of the local cluster, and starting them: Job, TTL-after-finished, CronJob, ReplicaSet,
//! Deployment and the root CA publisher ([`start`]), and the Event TTL that the API server itself runs ([`start_event_ttl`]). Each is a
//! [`framework::Reconciler`] on its own task, stopped by the cluster's shutdown; [`recorder`] writes their Events.
//!
//! This layer imports the registry (and the crate's foundations: `clock`, `schedule`), never the HTTP layer
//! (`api`) or the kubelet. The kubelet builds on [`framework`] and [`recorder`], not the other way round.

mod cronjob;
mod deployment;
mod event_ttl;
pub(crate) mod framework;
mod job;
pub(crate) mod recorder;
mod replicaset;
mod root_ca;
mod ttl;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::registry::store::Store;
use cronjob::CronJobController;
use deployment::DeploymentController;
use event_ttl::EventTtl;
pub(crate) use job::Backoff;
use job::JobController;
use replicaset::ReplicaSetController;
use root_ca::RootCaPublisher;
use ttl::TtlController;

/// Spawns the workload controllers and the root CA publisher (which publishes `ca_pem`); they stop when `shutdown`
/// is cancelled. Failed Job pods are recreated after `job_backoff`.
pub(crate) fn start(
    job_backoff: Backoff,
    ca_pem: &str,
    store: &Store,
    shutdown: &CancellationToken,
) {
    framework::spawn(
        JobController {
            backoff: job_backoff,
        },
        store,
        shutdown,
    );
    framework::spawn(TtlController, store, shutdown);
    framework::spawn(CronJobController, store, shutdown);
    framework::spawn(ReplicaSetController, store, shutdown);
    framework::spawn(DeploymentController, store, shutdown);
    framework::spawn(
        RootCaPublisher {
            ca_pem: ca_pem.to_owned(),
        },
        store,
        shutdown,
    );
}

/// Spawns the collector of Events older than `ttl` since their last write (the API server's `--event-ttl`);
/// every cluster runs it, with or without the workload controllers.
pub(crate) fn start_event_ttl(ttl: Duration, store: &Store, shutdown: &CancellationToken) {
    framework::spawn(EventTtl::new(ttl), store, shutdown);
}
