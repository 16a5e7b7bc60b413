//! The tool's jobs as they run, read from the cluster in one round of requests (one LIST per workload kind, one
//! of the pods, one of the events), each read back into the job it runs and given its status
//! ([`crate::status`]); and the imperative plans (`run`, `delete`, `restart`) carried out there. What the
//! imperative commands and `serve` share.
//!
//! Only objects with the jobs framework's managed-by label are jobs here (ours, upstream's, `run`'s); Jobs a
//! CronJob spawned are runs of that scheduled job, not jobs of their own.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams};

use super::Error;
use super::imperative::{self, Imperative, InventoryPlan};
use crate::apply::{Applied, Progress};
use crate::cluster::{self, Connection, ContextInputs, Passwd, ReadError, Snapshot};
use crate::model::ToolName;
use crate::model::labels;
use crate::plan::{self, Listed, Plan};
use crate::render::context::DEFAULT_SET_NAME;
use crate::render::{LiveObject, ReadBack, RenderContext, TriggerFiles, read_back};
use crate::status::{self, Related, Status};

/// The tool's namespace as read, with the context to read its objects back.
pub struct LiveNamespace {
    pub connection: Connection,
    pub namespace: String,
    pub snapshot: Snapshot,
    pub pods: Vec<Pod>,
    pub events: Vec<Event>,
    pub context: RenderContext,
    pub now: Timestamp,
}

/// One job as it runs.
pub struct LiveJob {
    pub read_back: ReadBack,
    pub workload: LiveObject,
    pub status: Status,
}

/// Reads `tool`'s namespace (see the module documentation). `file_directory` is the tool's home on a local
/// cluster that announces none (the jobs file's directory, as for `diff`).
pub async fn read(
    connection: Connection,
    tool: &ToolName,
    file_directory: &Path,
) -> Result<LiveNamespace, Error> {
    let namespace = tool.namespace();
    let client = &connection.client;
    let framework = ListParams::default().labels(&labels::framework_selector());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
    let list_error = |what| {
        let namespace = namespace.clone();
        move |source| ReadError::List {
            what,
            namespace,
            source,
        }
    };
    let (snapshot, pods, events) = tokio::try_join!(
        Box::pin(cluster::read(client, &namespace, DEFAULT_SET_NAME)),
        async { pods.list(&framework).await.map_err(list_error("Pods")) },
        async {
            events
                .list(&ListParams::default())
                .await
                .map_err(list_error("Events"))
        },
    )?;
    let context = cluster::render_context(
        &snapshot,
        ContextInputs {
            tool,
            set_name: DEFAULT_SET_NAME,
            file_directory,
            trigger_files: TriggerFiles::default(),
            uids: &Passwd,
        },
    )?;
    Ok(LiveNamespace {
        connection,
        namespace,
        snapshot,
        pods: pods.items,
        events: events.items,
        context,
        now: Timestamp::now(),
    })
}

impl LiveNamespace {
    /// Carries out an imperative command's plans under the tool's lock ([`imperative::carry_out`]), waiting up
    /// to `lock_wait` for another writer's; what each plan did.
    pub async fn carry_out(
        &self,
        purpose: &str,
        plans: Vec<InventoryPlan>,
        progress: Arc<dyn Progress>,
        lock_wait: Option<std::time::Duration>,
    ) -> Result<Vec<Applied>, Error> {
        let target = Imperative {
            connection: &self.connection,
            namespace: &self.namespace,
            live: &self.snapshot.live,
            purpose,
            progress,
            lock_wait,
        };
        imperative::carry_out(target, plans).await
    }

    /// Carries out plans while the caller holds the tool's `lock` ([`imperative::carry_out_holding`]): for
    /// writes decided from a namespace read under the lock.
    pub async fn carry_out_holding(
        &self,
        plans: Vec<InventoryPlan>,
        progress: Arc<dyn Progress>,
        lock: &crate::cluster::lock::Lock,
    ) -> Result<Vec<Applied>, Error> {
        let target = Imperative {
            connection: &self.connection,
            namespace: &self.namespace,
            live: &self.snapshot.live,
            purpose: "",
            progress,
            lock_wait: None,
        };
        imperative::carry_out_holding(&target, plans, lock).await
    }

    /// `plan` for jobs of the default inventory, as read.
    pub fn in_default_set(&self, plan: Plan) -> InventoryPlan {
        InventoryPlan {
            set_name: DEFAULT_SET_NAME.to_owned(),
            stored: self.snapshot.inventory.clone(),
            plan,
        }
    }

    /// The plans that delete `jobs`: one per inventory they belong to (their `jobs.toolforge.org/inventory`
    /// label, else the default set), each with its inventory as stored, so that their records go too.
    pub async fn delete_plans(&self, jobs: &[&LiveJob]) -> Result<Vec<InventoryPlan>, Error> {
        let mut by_set: BTreeMap<&str, Vec<&LiveJob>> = BTreeMap::new();
        for job in jobs {
            by_set.entry(job.inventory()).or_default().push(job);
        }
        let mut plans = Vec::new();
        for (set, jobs) in by_set {
            let stored = if set == DEFAULT_SET_NAME {
                self.snapshot.inventory.clone()
            } else {
                let config_maps = Api::namespaced(self.connection.client.clone(), &self.namespace);
                cluster::inventory::read(&config_maps, &self.namespace, set).await?
            };
            let plan = plan::imperative::delete(
                jobs.iter().map(|job| (job.name(), &job.workload)),
                &self.snapshot.live,
            );
            plans.push(InventoryPlan {
                set_name: set.to_owned(),
                stored,
                plan,
            });
        }
        Ok(plans)
    }

    /// The jobs, sorted by name. An object that cannot be read back is reported in the log and left out.
    pub fn jobs(&self) -> Vec<LiveJob> {
        let live = &self.snapshot.live;
        let spawned = |job: &&Listed<KubeJob>| {
            job.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.kind == "CronJob")
        };
        let workloads = live
            .jobs
            .iter()
            .filter(|job| !spawned(job))
            .map(|job| LiveObject::Job(job.decode()))
            .chain(
                live.cron_jobs
                    .iter()
                    .map(|cron_job| LiveObject::CronJob(cron_job.decode())),
            )
            .chain(
                live.deployments
                    .iter()
                    .map(|deployment| LiveObject::Deployment(deployment.decode())),
            );
        let related = Related {
            jobs: &live.jobs,
            pods: &self.pods,
            events: &self.events,
        };
        let mut jobs: Vec<LiveJob> = workloads
            .filter_map(|workload| match read_back(&workload, &self.context) {
                Ok(read_back) if read_back.ownership.is_jobs_framework() => Some(LiveJob {
                    status: status::of(&workload, related, self.now),
                    read_back,
                    workload,
                }),
                Ok(_) => None,
                Err(error) => {
                    tracing::warn!(%error, "cannot read this object back into a job; leaving it out");
                    None
                }
            })
            .collect();
        jobs.sort_by(|a, b| a.read_back.job.name.cmp(&b.read_back.job.name));
        jobs
    }

    /// The job `name`, when the tool has it.
    pub fn job(&self, name: &str) -> Option<LiveJob> {
        self.jobs()
            .into_iter()
            .find(|job| job.read_back.job.name == name)
    }

    /// Whether any object a job named `name` would create has that name already (ours or not).
    pub fn name_taken(&self, name: &str) -> bool {
        let live = &self.snapshot.live;
        let named = |metadata: &ObjectMeta| metadata.name.as_deref() == Some(name);
        live.jobs.iter().any(|object| named(&object.metadata))
            || live.cron_jobs.iter().any(|object| named(&object.metadata))
            || live
                .deployments
                .iter()
                .any(|object| named(&object.metadata))
            || live.services.iter().any(|object| named(&object.metadata))
    }
}

impl LiveJob {
    pub fn name(&self) -> &str {
        &self.read_back.job.name
    }

    /// The inventory the job belongs to: its `jobs.toolforge.org/inventory` label, else the default set.
    pub fn inventory(&self) -> &str {
        self.read_back
            .ownership
            .inventory
            .as_deref()
            .unwrap_or(DEFAULT_SET_NAME)
    }
}
