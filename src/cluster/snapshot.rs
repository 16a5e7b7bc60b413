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

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::core::v1::{ConfigMap, LimitRange, ResourceQuota, Service};
use kube::Resource as _;
use kube::api::{Api, DynamicObject, ListParams};
use serde::de::DeserializeOwned;

use crate::cluster::listing::{Item, Page, RawItem};
use crate::cluster::{api_resource, inventory};
use crate::cluster::{is_forbidden, is_not_found, retry};
use crate::model::inventory::{Inventory, InventoryError};
use crate::plan::{Listed, LiveRecord, LiveState, Manifest, ObjectKind};
use crate::render::context::{IMAGE_CONFIG_NAME, IMAGE_CONFIG_NAMESPACE};
use crate::render::record::{self, RecordKind};

/// How many objects one LIST response holds at most (kubectl's `--chunk-size` default).
const PAGE_SIZE: u32 = 500;

/// Everything read from the cluster for one plan.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Shared with the executor that carries out a plan made from it, not copied.
    pub live: Arc<LiveState>,
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
    /// The inventory, empty when none is stored (borrowed: at 10 000 jobs a copy is megabytes).
    pub fn inventory(&self) -> Cow<'_, Inventory> {
        self.inventory
            .as_ref()
            .map_or_else(Cow::default, |stored| Cow::Borrowed(&stored.inventory))
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
    read_covering(client, namespace, set_name, &Coverage::everything(), |_| {
        BTreeSet::new()
    })
    .await
}

/// Reads the inventory `set_name` of `namespace` and what `coverage` names, concurrently: one round trip. The
/// kinds `then` names once it sees the inventory are listed as soon as it is read, while the rest is in flight.
pub async fn read_covering(
    client: &kube::Client,
    namespace: &str,
    set_name: &str,
    coverage: &Coverage,
    then: impl FnOnce(Option<&Inventory>) -> BTreeSet<ObjectKind>,
) -> Result<Snapshot, ReadError> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut snapshot = Snapshot::default();
    // Nothing listed yet shows the stored records unserved.
    Arc::make_mut(&mut snapshot.live).records = Some(Vec::new());
    let inventory_and_then = async {
        let found = config_map(&config_maps, namespace, set_name, Unreadable::Error).await?;
        let stored = inventory::load(&config_maps, namespace, set_name, found).await?;
        let kinds: Vec<ObjectKind> = then(stored.as_ref().map(|stored| &stored.inventory))
            .difference(&coverage.kinds)
            .copied()
            .collect();
        let lists = list_kinds(client, namespace, &kinds).await?;
        Ok::<_, ReadError>((stored, kinds, lists))
    };
    // Up to eleven requests in flight make a large future: keep it on the heap.
    let ((stored, kinds, lists), ()) = Box::pin(async {
        tokio::try_join!(
            inventory_and_then,
            snapshot.complete(client, namespace, coverage),
        )
    })
    .await?;
    snapshot.inventory = stored;
    for listed in lists {
        snapshot.add(listed);
    }
    snapshot.coverage.kinds.extend(kinds);
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
            list_kinds(client, namespace, &kinds),
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

    fn add(&mut self, listed: KindList) {
        let live = Arc::make_mut(&mut self.live);
        match listed {
            KindList::Jobs(items) => {
                live.jobs.extend(items);
                live.jobs_listed = true;
            }
            KindList::CronJobs(items) => live.cron_jobs.extend(items),
            KindList::Deployments(items) => live.deployments.extend(items),
            KindList::Services(items) => live.services.extend(items),
            // Records are written only where both kinds are served (as when they are listed together).
            KindList::Records(None) => live.records = None,
            KindList::Records(Some(records)) => {
                if let Some(all) = &mut live.records {
                    all.extend(records);
                }
            }
        }
    }
}

/// What one LIST returned.
enum KindList {
    Jobs(Vec<Listed<KubeJob>>),
    CronJobs(Vec<Listed<CronJob>>),
    Deployments(Vec<Listed<Deployment>>),
    Services(Vec<Listed<Service>>),
    /// `None`: the cluster does not serve that kind of record, or the tool may not list it.
    Records(Option<Vec<LiveRecord>>),
}

/// The items of each of `kinds` in `namespace`, concurrently.
async fn list_kinds(
    client: &kube::Client,
    namespace: &str,
    kinds: &[ObjectKind],
) -> Result<Vec<KindList>, ReadError> {
    futures::future::try_join_all(kinds.iter().map(|kind| list_kind(client, namespace, *kind)))
        .await
}

/// The items of one kind in `namespace`.
async fn list_kind(
    client: &kube::Client,
    namespace: &str,
    kind: ObjectKind,
) -> Result<KindList, ReadError> {
    let url = DynamicObject::url_path(&api_resource(kind), Some(namespace));
    Ok(match kind {
        ObjectKind::Job => KindList::Jobs(workloads(client, namespace, &url, "Jobs").await?),
        ObjectKind::CronJob => {
            KindList::CronJobs(workloads(client, namespace, &url, "CronJobs").await?)
        }
        ObjectKind::Deployment => {
            KindList::Deployments(workloads(client, namespace, &url, "Deployments").await?)
        }
        ObjectKind::Service => {
            KindList::Services(workloads(client, namespace, &url, "Services").await?)
        }
        ObjectKind::ContinuousJob => {
            KindList::Records(records(client, namespace, &url, RecordKind::Continuous).await?)
        }
        ObjectKind::ScheduledJob => {
            KindList::Records(records(client, namespace, &url, RecordKind::Scheduled).await?)
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

/// The objects of one workload kind (or the Services) of `namespace`, at `url`, without their managedFields.
async fn workloads<K>(
    client: &kube::Client,
    namespace: &str,
    url: &str,
    what: &'static str,
) -> Result<Vec<Listed<K>>, ReadError>
where
    K: k8s_openapi::Resource
        + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>
        + serde::Serialize
        + DeserializeOwned,
{
    pages(client, url, Item::into_listed::<K>)
        .await
        .map_err(|source| ReadError::List {
            what,
            namespace: namespace.to_owned(),
            source,
        })
}

/// Upstream's stored records of one kind, at `url`, `None` when the cluster does not serve them (404) or the tool
/// may not list them (403): the plan then writes none.
async fn records(
    client: &kube::Client,
    namespace: &str,
    url: &str,
    kind: RecordKind,
) -> Result<Option<Vec<LiveRecord>>, ReadError> {
    let list_error = |source| ReadError::List {
        what: kind.plural(),
        namespace: namespace.to_owned(),
        source,
    };
    let record = |item: RawItem| {
        let (metadata, mut object) = item.into_parts()?;
        // The kind is the one its list was of.
        object["apiVersion"] = record::api_version().into();
        object["kind"] = kind.kind().into();
        Ok(LiveRecord {
            kind,
            metadata,
            object: Manifest::from(object),
        })
    };
    match pages(client, url, record).await {
        Ok(records) => Ok(Some(records)),
        Err(error) if is_not_found(&error) || is_forbidden(&error) => {
            tracing::debug!(%error, kind = kind.kind(), "no stored records; going on without");
            Ok(None)
        }
        Err(source) => Err(list_error(source)),
    }
}

/// The items of the LIST at `url`, each made into what is kept by `keep`, read a page of [`PAGE_SIZE`] at a time:
/// what one response holds stays small however many objects there are, as `kubectl get` reads them, and only the
/// kept form of the items read so far is held.
async fn pages<T: DeserializeOwned, U>(
    client: &kube::Client,
    url: &str,
    mut keep: impl FnMut(T) -> Result<U, serde_json::Error>,
) -> Result<Vec<U>, kube::Error> {
    let request = kube::core::Request::new(url);
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(PAGE_SIZE);
    loop {
        let page: Page<T> = retry::transient("list", || async {
            let mut list = request.list(&params).map_err(kube::Error::BuildRequest)?;
            list.extensions_mut().insert("list");
            client.request::<Page<T>>(list).await
        })
        .await?;
        for item in page.items {
            items.push(keep(item).map_err(kube::Error::SerdeError)?);
        }
        match page.metadata.continue_token {
            Some(token) if !token.is_empty() => params.continue_token = Some(token),
            _ => return Ok(items),
        }
    }
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
