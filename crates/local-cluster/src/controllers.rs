//! Which controllers a local cluster runs and how they are tuned ([`Controllers`]), and starting them. Each
//! controller is a [`crate::controller::Reconciler`] on its own task, stopped by the cluster's shutdown.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::controller;
use crate::cronjob::CronJobController;
use crate::deployment::DeploymentController;
use crate::job::{Backoff, JobController};
use crate::kubelet::{ProcessKubelet, ScriptedKubelet};
use crate::replicaset::ReplicaSetController;
use crate::script::Kubelet;
use crate::store::Store;
use crate::ttl::TtlController;

/// The controllers of a local cluster: Job, TTL-after-finished, CronJob, ReplicaSet, Deployment and, when given,
/// a kubelet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controllers {
    /// Delay before recreating a Job's pod after one failure (10 s on Kubernetes); it doubles per consecutive
    /// failure. Tests shorten it, or speed up the cluster's clock (`Options::clock_speed`).
    pub job_backoff_base: Duration,
    /// The longest such delay (documented as 6 minutes).
    pub job_backoff_cap: Duration,
    /// The node's kubelet; `None` leaves pods Pending, as on a cluster without nodes.
    pub kubelet: Option<Kubelet>,
}

impl Default for Controllers {
    fn default() -> Self {
        Controllers {
            job_backoff_base: Duration::from_secs(10),
            job_backoff_cap: Duration::from_secs(6 * 60),
            kubelet: None,
        }
    }
}

/// Spawns every configured controller; they stop when `shutdown` is cancelled. A process kubelet records its
/// processes in `pid_file` when given.
pub(crate) fn start(
    controllers: &Controllers,
    store: &Store,
    shutdown: &CancellationToken,
    pid_file: Option<PathBuf>,
) {
    let backoff = Backoff {
        base: controllers.job_backoff_base,
        cap: controllers.job_backoff_cap,
    };
    controller::spawn(JobController { backoff }, store, shutdown);
    controller::spawn(TtlController, store, shutdown);
    controller::spawn(CronJobController, store, shutdown);
    controller::spawn(ReplicaSetController, store, shutdown);
    controller::spawn(DeploymentController, store, shutdown);
    match &controllers.kubelet {
        Some(Kubelet::Scripted(script)) => {
            controller::spawn(ScriptedKubelet::new(script.clone()), store, shutdown);
        }
        Some(Kubelet::Process(options)) => {
            let kubelet = ProcessKubelet::new(options.clone(), store.clock(), pid_file);
            controller::spawn(kubelet, store, shutdown);
        }
        None => {}
    }
}
