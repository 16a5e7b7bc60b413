//! Reading the live state: every request `diff` and `apply` make before deciding anything, issued at once.
//!
//! The cost does not depend on the number of jobs: one LIST each of Jobs, CronJobs, Deployments, Services,
//! upstream's two kinds of stored record, `LimitRange`s and (unless [`Quotas::Later`]) `ResourceQuota`s in the
//! tool's namespace, one GET of the inventory (and of its parts, when it has them), one GET of Toolforge's image
//! table and one GET of the local cluster's identity. All of them run concurrently, so reading costs one round
//! trip. The workload LISTs are not filtered by label: an object of a job's name that is not ours must be
//! seen to be reported as a conflict instead of failing the create.

use std::path::PathBuf;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::core::v1::{ConfigMap, LimitRange, ResourceQuota, Service};
use kube::api::{Api, DynamicObject, ListParams};
use serde::de::DeserializeOwned;

use crate::cluster::{inventory, record_resource};
use crate::cluster::{is_forbidden, is_not_found, retry};
use crate::model::inventory::{Inventory, InventoryError};
use crate::plan::{LiveRecord, LiveState};
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

/// Whether a read lists the namespace's quotas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quotas {
    Read,
    /// Not now: only a plan that writes needs them ([`quotas`] reads them then); the snapshot holds none.
    Later,
}

/// Reads the live state of `namespace` and the inventory `set_name` in it.
pub async fn read(
    client: &kube::Client,
    namespace: &str,
    set_name: &str,
) -> Result<Snapshot, ReadError> {
    // Ten requests in flight make a large future: keep it on the heap.
    Box::pin(read_with(client, namespace, set_name, Quotas::Read)).await
}

/// Reads the live state of `namespace` and the inventory `set_name` in it, its quotas as `quotas` says.
pub async fn read_with(
    client: &kube::Client,
    namespace: &str,
    set_name: &str,
    quotas: Quotas,
) -> Result<Snapshot, ReadError> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let image_configs: Api<ConfigMap> = Api::namespaced(client.clone(), IMAGE_CONFIG_NAMESPACE);
    let identities: Api<ConfigMap> =
        Api::namespaced(client.clone(), toolforge_local_cluster::IDENTITY_NAMESPACE);
    let (
        jobs,
        cron_jobs,
        deployments,
        services,
        limit_ranges,
        quotas,
        inventory,
        image_config,
        identity,
        records,
    ) = tokio::try_join!(
        list::<KubeJob>(client, namespace, "Jobs", false),
        list::<CronJob>(client, namespace, "CronJobs", false),
        list::<Deployment>(client, namespace, "Deployments", false),
        list::<Service>(client, namespace, "Services", false),
        list::<LimitRange>(client, namespace, "LimitRanges", true),
        async {
            match quotas {
                Quotas::Read => self::quotas(client, namespace).await,
                Quotas::Later => Ok(Vec::new()),
            }
        },
        config_map(&config_maps, namespace, set_name, Unreadable::Error),
        config_map(
            &image_configs,
            IMAGE_CONFIG_NAMESPACE,
            IMAGE_CONFIG_NAME,
            Unreadable::Missing,
        ),
        config_map(
            &identities,
            toolforge_local_cluster::IDENTITY_NAMESPACE,
            toolforge_local_cluster::IDENTITY_NAME,
            Unreadable::Missing,
        ),
        records(client, namespace),
    )?;
    let inventory = inventory::load(&config_maps, namespace, set_name, inventory).await?;
    Ok(Snapshot {
        live: LiveState {
            jobs,
            cron_jobs,
            deployments,
            services,
            records,
        },
        inventory,
        image_config,
        limit_ranges,
        quotas,
        local: identity.map(|config_map| local_identity(&config_map)),
    })
}

/// The `ResourceQuota`s of `namespace`; none when the server does not serve them or the tool may not list them.
pub async fn quotas(
    client: &kube::Client,
    namespace: &str,
) -> Result<Vec<ResourceQuota>, ReadError> {
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

/// Upstream's stored records of both kinds, `None` when the cluster does not serve them (404) or the tool may not
/// list them (403): the plan then writes none.
pub(crate) async fn records(
    client: &kube::Client,
    namespace: &str,
) -> Result<Option<Vec<LiveRecord>>, ReadError> {
    let list = |kind: RecordKind| async move {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), namespace, &record_resource(kind));
        let params = ListParams::default();
        match retry::transient("list", || api.list(&params)).await {
            Ok(list) => Ok(Some(list.items)),
            Err(error) if is_not_found(&error) || is_forbidden(&error) => {
                tracing::debug!(%error, kind = kind.kind(), "no stored records; going on without");
                Ok(None)
            }
            Err(source) => Err(ReadError::List {
                what: kind.plural(),
                namespace: namespace.to_owned(),
                source,
            }),
        }
    };
    let (continuous, scheduled) =
        tokio::try_join!(list(RecordKind::Continuous), list(RecordKind::Scheduled))?;
    let (Some(continuous), Some(scheduled)) = (continuous, scheduled) else {
        return Ok(None);
    };
    let mut records = Vec::with_capacity(continuous.len() + scheduled.len());
    for (kind, object) in continuous
        .into_iter()
        .map(|object| (RecordKind::Continuous, object))
        .chain(
            scheduled
                .into_iter()
                .map(|object| (RecordKind::Scheduled, object)),
        )
    {
        // A listed DynamicObject always serialises back; its kind is the one its list was of.
        let mut value = serde_json::to_value(&object).unwrap_or_default();
        value["apiVersion"] = record::api_version().into();
        value["kind"] = kind.kind().into();
        records.push(LiveRecord {
            kind,
            metadata: object.metadata,
            object: value,
        });
    }
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
