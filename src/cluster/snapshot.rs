//! Reading the live state: the requests `diff` and `apply` make before deciding anything.
//!
//! A read names what it wants ([`Coverage`]): one LIST per object kind (Jobs, CronJobs, Deployments, Services,
//! upstream's two kinds of stored record), the rendering context (one GET of Toolforge's image table, one of the
//! local cluster's identity, one LIST of the namespace's `LimitRange`s), the namespace's `ResourceQuota`s; the
//! inventory (one GET, and one per part when it has them) is always read. What a read asks for is issued at once,
//! so it costs one round trip whatever its number of requests; [`Snapshot::complete`] adds what a first read left
//! out. The workload LISTs are not filtered by label: an object of a job's name that is not ours must be seen to
//! be reported as a conflict instead of failing the create. Which reads a plan needs is the pipeline's business
//! (docs/apply.md, "Reading the live state").

use std::collections::BTreeSet;
use std::path::PathBuf;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::core::v1::{ConfigMap, LimitRange, ResourceQuota, Service};
use kube::api::{Api, DynamicObject, ListParams};
use serde::de::DeserializeOwned;

use crate::cluster::{inventory, record_resource};
use crate::cluster::{is_forbidden, is_not_found, retry};
use crate::model::inventory::{Inventory, InventoryError};
use crate::plan::{LiveRecord, LiveState, ObjectKind};
use crate::render::context::{IMAGE_CONFIG_NAME, IMAGE_CONFIG_NAMESPACE};
use crate::render::record::{self, RecordKind};

/// Everything read from the cluster for one plan.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub live: LiveState,
    /// The inventory ConfigMap's record, `None` when it does not exist yet.
    pub inventory: Option<StoredInventory>,
    /// Toolforge's `image-config` ConfigMap, when the cluster has one and we may read it.
    pub image_config: Option<ConfigMap>,
    pub limit_ranges: Vec<LimitRange>,
    pub quotas: Vec<ResourceQuota>,
    /// Set when the cluster is the project's local cluster.
    pub local: Option<LocalIdentity>,
    /// What was read: what was not is empty above.
    pub coverage: Coverage,
}

impl Snapshot {
    /// The inventory, empty when none is stored.
    pub fn inventory(&self) -> Inventory {
        self.inventory
            .as_ref()
            .map(|stored| stored.inventory.clone())
            .unwrap_or_default()
    }
}

/// The inventory as stored, with the resourceVersion a write must name (optimistic concurrency).
#[derive(Debug, Clone, Default)]
pub struct StoredInventory {
    pub inventory: Inventory,
    pub resource_version: Option<String>,
    /// The part `ConfigMap`s holding the record, when it is too big for the set ConfigMap.
    pub parts: Vec<String>,
}

/// What the local cluster says about itself (its identity ConfigMap, SPEC §10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalIdentity {
    /// The directory holding the tools' home directories on this machine, when the cluster was given one.
    pub tools_home: Option<PathBuf>,
}

/// Why the live state could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot list the {what} of namespace `{namespace}`")]
    List {
        what: &'static str,
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot read ConfigMap `{namespace}/{name}`")]
    Get {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the inventory `{namespace}/{name}` was rewritten while its parts were read, again and again; is another \
         program writing it? Try again"
    )]
    InventoryChanging { namespace: String, name: String },
    #[error("the inventory is unreadable; fix or delete ConfigMap `{namespace}/{name}`")]
    Inventory {
        namespace: String,
        name: String,
        #[source]
        source: InventoryError,
    },
}

/// What a snapshot holds, or a read is asked to fetch: the object kinds listed, whether the rendering context (the
/// image table, the local cluster's identity, the `LimitRange`s) and the `ResourceQuota`s were read. The inventory
/// is always read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    pub kinds: BTreeSet<ObjectKind>,
    pub context: bool,
    pub quotas: bool,
}

impl Coverage {
    /// Everything `diff` and `apply` could need.
    pub fn everything() -> Self {
        Self {
            kinds: ObjectKind::ALL.into_iter().collect(),
            context: true,
            quotas: true,
        }
    }
}

/// Reads the live state of `namespace` and the inventory `set_name` in it: everything ([`Coverage::everything`]).
pub async fn read(
    client: &kube::Client,
    namespace: &str,
    set_name: &str,
) -> Result<Snapshot, ReadError> {
    read_covering(client, namespace, set_name, &Coverage::everything()).await
}

/// Reads the inventory `set_name` of `namespace` and what `coverage` names, concurrently: one round trip.
pub async fn read_covering(
    client: &kube::Client,
    namespace: &str,
    set_name: &str,
    coverage: &Coverage,
) -> Result<Snapshot, ReadError> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut snapshot = Snapshot::default();
    // Nothing listed yet shows the stored records unserved.
    snapshot.live.records = Some(Vec::new());
    // Up to eleven requests in flight make a large future: keep it on the heap.
    let (inventory, ()) = Box::pin(async {
        tokio::try_join!(
            config_map(&config_maps, namespace, set_name, Unreadable::Error),
            snapshot.complete(client, namespace, coverage),
        )
    })
    .await?;
    snapshot.inventory = inventory::load(&config_maps, namespace, set_name, inventory).await?;
    Ok(snapshot)
}

impl Snapshot {
    /// Reads what `wanted` asks for and this snapshot does not hold yet, concurrently, and adds it.
    pub async fn complete(
        &mut self,
        client: &kube::Client,
        namespace: &str,
        wanted: &Coverage,
    ) -> Result<(), ReadError> {
        let kinds: Vec<ObjectKind> = wanted
            .kinds
            .difference(&self.coverage.kinds)
            .copied()
            .collect();
        let context = wanted.context && !self.coverage.context;
        let quotas = wanted.quotas && !self.coverage.quotas;
        let (lists, context_read, quotas_read) = tokio::try_join!(
            futures::future::try_join_all(
                kinds.iter().map(|kind| list_kind(client, namespace, *kind))
            ),
            async {
                if context {
                    read_context(client, namespace).await.map(Some)
                } else {
                    Ok(None)
                }
            },
            async {
                if quotas {
                    self::quotas(client, namespace).await.map(Some)
                } else {
                    Ok(None)
                }
            },
        )?;
        for listed in lists {
            self.add(listed);
        }
        if let Some(read) = context_read {
            self.image_config = read.image_config;
            self.limit_ranges = read.limit_ranges;
            self.local = read.local;
        }
        if let Some(quotas) = quotas_read {
            self.quotas = quotas;
        }
        self.coverage.kinds.extend(kinds);
        self.coverage.context |= context;
        self.coverage.quotas |= quotas;
        Ok(())
    }

    fn add(&mut self, listed: Listed) {
        let live = &mut self.live;
        match listed {
            Listed::Jobs(items) => live.jobs.extend(items),
            Listed::CronJobs(items) => live.cron_jobs.extend(items),
            Listed::Deployments(items) => live.deployments.extend(items),
            Listed::Services(items) => live.services.extend(items),
            // Records are written only where both kinds are served (as when they are listed together).
            Listed::Records(None) => live.records = None,
            Listed::Records(Some(records)) => {
                if let Some(all) = &mut live.records {
                    all.extend(records);
                }
            }
        }
    }
}

/// What one LIST returned.
enum Listed {
    Jobs(Vec<KubeJob>),
    CronJobs(Vec<CronJob>),
    Deployments(Vec<Deployment>),
    Services(Vec<Service>),
    /// `None`: the cluster does not serve that kind of record, or the tool may not list it.
    Records(Option<Vec<LiveRecord>>),
}

/// The items of one kind in `namespace`.
async fn list_kind(
    client: &kube::Client,
    namespace: &str,
    kind: ObjectKind,
) -> Result<Listed, ReadError> {
    Ok(match kind {
        ObjectKind::Job => Listed::Jobs(list(client, namespace, "Jobs", false).await?),
        ObjectKind::CronJob => Listed::CronJobs(list(client, namespace, "CronJobs", false).await?),
        ObjectKind::Deployment => {
            Listed::Deployments(list(client, namespace, "Deployments", false).await?)
        }
        ObjectKind::Service => Listed::Services(list(client, namespace, "Services", false).await?),
        ObjectKind::ContinuousJob => {
            Listed::Records(records(client, namespace, RecordKind::Continuous).await?)
        }
        ObjectKind::ScheduledJob => {
            Listed::Records(records(client, namespace, RecordKind::Scheduled).await?)
        }
    })
}

/// The rendering context's part of a snapshot.
struct ContextRead {
    image_config: Option<ConfigMap>,
    limit_ranges: Vec<LimitRange>,
    local: Option<LocalIdentity>,
}

/// Toolforge's image table, the namespace's `LimitRange`s and the local cluster's identity, concurrently.
async fn read_context(client: &kube::Client, namespace: &str) -> Result<ContextRead, ReadError> {
    let image_configs: Api<ConfigMap> = Api::namespaced(client.clone(), IMAGE_CONFIG_NAMESPACE);
    let identities: Api<ConfigMap> =
        Api::namespaced(client.clone(), toolforge_local_cluster::IDENTITY_NAMESPACE);
    let (image_config, limit_ranges, identity) = tokio::try_join!(
        config_map(
            &image_configs,
            IMAGE_CONFIG_NAMESPACE,
            IMAGE_CONFIG_NAME,
            Unreadable::Missing,
        ),
        list::<LimitRange>(client, namespace, "LimitRanges", true),
        config_map(
            &identities,
            toolforge_local_cluster::IDENTITY_NAMESPACE,
            toolforge_local_cluster::IDENTITY_NAME,
            Unreadable::Missing,
        ),
    )?;
    Ok(ContextRead {
        image_config,
        limit_ranges,
        local: identity.map(|config_map| local_identity(&config_map)),
    })
}

/// The `ResourceQuota`s of `namespace`; none when the server does not serve them or the tool may not list them.
async fn quotas(client: &kube::Client, namespace: &str) -> Result<Vec<ResourceQuota>, ReadError> {
    list::<ResourceQuota>(client, namespace, "ResourceQuotas", true).await
}

/// The items of one LIST. `optional` types (the namespace's limits) read as empty when the server does not serve
/// them or the tool may not list them: the plan then just cannot check them.
async fn list<K>(
    client: &kube::Client,
    namespace: &str,
    what: &'static str,
    optional: bool,
) -> Result<Vec<K>, ReadError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default();
    match retry::transient("list", || api.list(&params)).await {
        Ok(list) => Ok(list.items),
        Err(error) if optional && (is_not_found(&error) || is_forbidden(&error)) => {
            tracing::debug!(%error, what, "cannot list; going on without");
            Ok(Vec::new())
        }
        Err(source) => Err(ReadError::List {
            what,
            namespace: namespace.to_owned(),
            source,
        }),
    }
}

/// Upstream's stored records of one kind, `None` when the cluster does not serve them (404) or the tool may not
/// list them (403): the plan then writes none.
async fn records(
    client: &kube::Client,
    namespace: &str,
    kind: RecordKind,
) -> Result<Option<Vec<LiveRecord>>, ReadError> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &record_resource(kind));
    let params = ListParams::default();
    let listed = match retry::transient("list", || api.list(&params)).await {
        Ok(list) => list.items,
        Err(error) if is_not_found(&error) || is_forbidden(&error) => {
            tracing::debug!(%error, kind = kind.kind(), "no stored records; going on without");
            return Ok(None);
        }
        Err(source) => {
            return Err(ReadError::List {
                what: kind.plural(),
                namespace: namespace.to_owned(),
                source,
            });
        }
    };
    let records = listed
        .into_iter()
        .map(|object| {
            // A listed DynamicObject always serialises back; its kind is the one its list was of.
            let mut value = serde_json::to_value(&object).unwrap_or_default();
            value["apiVersion"] = record::api_version().into();
            value["kind"] = kind.kind().into();
            LiveRecord {
                kind,
                metadata: object.metadata,
                object: value,
            }
        })
        .collect();
    Ok(Some(records))
}

/// What a 403 on a ConfigMap means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unreadable {
    /// We must be able to read it (the inventory): an error.
    Error,
    /// Somebody else's, nice to have: as if it did not exist.
    Missing,
}

/// A ConfigMap, `None` when it does not exist.
pub(super) async fn config_map(
    api: &Api<ConfigMap>,
    namespace: &str,
    name: &str,
    unreadable: Unreadable,
) -> Result<Option<ConfigMap>, ReadError> {
    match retry::transient("get", || api.get(name)).await {
        Ok(config_map) => Ok(Some(config_map)),
        Err(error)
            if is_not_found(&error)
                || (unreadable == Unreadable::Missing && is_forbidden(&error)) =>
        {
            Ok(None)
        }
        Err(source) => Err(ReadError::Get {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        }),
    }
}

fn local_identity(config_map: &ConfigMap) -> LocalIdentity {
    let tools_home = config_map
        .data
        .as_ref()
        .and_then(|data| data.get("toolsHome"))
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    LocalIdentity { tools_home }
}
