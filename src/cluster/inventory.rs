//! Reading and writing the inventory (SPEC §6). Every change is a read-modify-write of the set ConfigMap guarded
//! by its resourceVersion. On a conflict the ConfigMap is read again and the change applied to what is there, so a
//! concurrent writer's records are kept, never overwritten.
//!
//! A record too big for one ConfigMap is stored in parts (see [`crate::model::inventory`]): the parts are
//! created first, then the set ConfigMap is switched to the index naming them (the atomic step), then the parts
//! the old index named are deleted. A reader that finds a part gone read an index that was replaced meanwhile
//! and reads again. Parts a crashed writer left behind are deleted by the next writer that stores parts.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use super::snapshot::{ReadError, StoredInventory, Unreadable, config_map};
use super::{FIELD_MANAGER, is_conflict, is_not_found, retry};
use crate::model::inventory::{self, Inventory, PartsIndex, Stored};

/// How often a conflicting write is tried again before giving up.
const ATTEMPTS: usize = 5;
/// How often a read starts over because the index changed while its parts were read.
const READ_ATTEMPTS: usize = 3;
/// How old a part nobody names must be before it is deleted: younger ones may belong to a write in flight.
const ORPHAN_AGE: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

/// Reads inventory `set_name` of `namespace`: `None` when it does not exist.
pub async fn read(
    api: &Api<ConfigMap>,
    namespace: &str,
    set_name: &str,
) -> Result<Option<StoredInventory>, ReadError> {
    let head = config_map(api, namespace, set_name, Unreadable::Error).await?;
    load(api, namespace, set_name, head).await
}

/// The resourceVersion of inventory `set_name`'s set ConfigMap, `None` when it does not exist. Every apply that
/// writes writes the inventory (a one-off's run before its Job, the apply's record at its end), so an unchanged
/// version means no apply wrote since it was read: one GET, whatever the number of parts.
pub async fn version(
    api: &Api<ConfigMap>,
    namespace: &str,
    set_name: &str,
) -> Result<Option<String>, ReadError> {
    let head = config_map(api, namespace, set_name, Unreadable::Error).await?;
    Ok(head.and_then(|set| set.metadata.resource_version))
}

/// Completes the read of inventory `set_name` whose set ConfigMap `head` was already fetched (`None`: it does not
/// exist): decodes it and, when it is stored in parts, reads and joins them.
pub async fn load(
    api: &Api<ConfigMap>,
    namespace: &str,
    set_name: &str,
    mut head: Option<ConfigMap>,
) -> Result<Option<StoredInventory>, ReadError> {
    let unreadable = |source| ReadError::Inventory {
        namespace: namespace.to_owned(),
        name: set_name.to_owned(),
        source,
    };
    for _ in 0..READ_ATTEMPTS {
        let Some(set) = head else { return Ok(None) };
        let resource_version = set.metadata.resource_version.clone();
        let index = match inventory::from_config_map(&set).map_err(unreadable)? {
            Stored::Whole(inventory) => {
                return Ok(Some(StoredInventory {
                    inventory: *inventory,
                    resource_version,
                    parts: Vec::new(),
                }));
            }
            Stored::Parts(index) => index,
        };
        let parts = read_parts(api, namespace, &index).await?;
        if parts.len() < index.parts.len() {
            // A part is gone: a writer replaced the index since it was read, unless it is still the same.
            head = config_map(api, namespace, set_name, Unreadable::Error).await?;
            let replaced =
                head.as_ref().map(|set| &set.metadata.resource_version) != Some(&resource_version);
            if replaced {
                continue;
            }
        }
        // With a part missing from an index nobody replaced, this names the part.
        let inventory = inventory::assemble(set_name, &index, &parts).map_err(unreadable)?;
        return Ok(Some(StoredInventory {
            inventory,
            resource_version,
            parts: index.parts,
        }));
    }
    Err(ReadError::InventoryChanging {
        namespace: namespace.to_owned(),
        name: set_name.to_owned(),
    })
}

/// The parts `index` names that exist, read at once.
async fn read_parts(
    api: &Api<ConfigMap>,
    namespace: &str,
    index: &PartsIndex,
) -> Result<Vec<ConfigMap>, ReadError> {
    let reads = index
        .parts
        .iter()
        .map(|name| config_map(api, namespace, name, Unreadable::Error));
    let parts = futures::future::try_join_all(reads).await?;
    Ok(parts.into_iter().flatten().collect())
}

/// The inventory as last read or written, and where it lives.
pub struct InventoryStore {
    api: Api<ConfigMap>,
    namespace: String,
    set_name: String,
    current: Inventory,
    /// `None` while the ConfigMap does not exist.
    resource_version: Option<String>,
    /// The parts the set ConfigMap names; empty while it holds the whole record.
    parts: Vec<String>,
    /// The most record text one ConfigMap holds.
    part_limit: usize,
    /// Whether parts left behind by others were looked for already.
    swept: bool,
}

/// Why the inventory could not be written.
#[derive(Debug, thiserror::Error)]
pub enum InventoryWriteError {
    #[error("cannot write the inventory ConfigMap `{namespace}/{name}`")]
    Api {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the inventory changed under us {ATTEMPTS} times in a row; is another program writing it?"
    )]
    Contended,
    #[error(transparent)]
    Unreadable(#[from] ReadError),
}

impl InventoryStore {
    /// The store of set `set_name`, starting from what was read with the live state.
    pub fn new(
        client: &kube::Client,
        namespace: &str,
        set_name: &str,
        stored: Option<StoredInventory>,
    ) -> Self {
        let StoredInventory {
            inventory: current,
            resource_version,
            parts,
        } = stored.unwrap_or_default();
        Self {
            api: Api::namespaced(client.clone(), namespace),
            namespace: namespace.to_owned(),
            set_name: set_name.to_owned(),
            current,
            resource_version,
            parts,
            part_limit: inventory::PART_LIMIT,
            swept: false,
        }
    }

    /// Stores records over `limit` bytes in parts (tests make it small to see parts with few jobs).
    #[must_use]
    pub fn with_part_limit(mut self, limit: usize) -> Self {
        self.part_limit = limit;
        self
    }

    /// The inventory as last written.
    pub fn current(&self) -> &Inventory {
        &self.current
    }

    /// Applies `change` and writes the result; on a conflict, reads again and re-applies `change`. A change
    /// that changes nothing writes nothing.
    pub async fn update(
        &mut self,
        change: impl Fn(&mut Inventory),
    ) -> Result<(), InventoryWriteError> {
        let mut created = Vec::new();
        for _ in 0..ATTEMPTS {
            let mut next = self.current.clone();
            change(&mut next);
            if next == self.current && self.resource_version.is_some() {
                return Ok(());
            }
            let encoded =
                inventory::encode(&next, &self.set_name, &self.namespace, self.part_limit);
            for part in &encoded.parts {
                if self.create_part(part).await? {
                    created.extend(part.metadata.name.clone());
                }
            }
            let names = encoded.part_names();
            let mut head = encoded.head;
            head.metadata.resource_version = self.resource_version.clone();
            match self.write_head(&head).await {
                Ok(written) => {
                    let replaced = std::mem::replace(&mut self.parts, names);
                    self.current = next;
                    self.resource_version = written.metadata.resource_version;
                    let unused = replaced.into_iter().chain(created);
                    self.delete_parts(unused.filter(|name| !self.parts.contains(name)))
                        .await;
                    if !self.parts.is_empty() && !self.swept {
                        self.sweep_orphans().await;
                    }
                    return Ok(());
                }
                // Changed (or created) by somebody else since we read it: start from theirs.
                Err(error) if is_conflict(&error) => self.reload().await?,
                Err(source) => return Err(self.api_error(&self.set_name, source)),
            }
        }
        Err(InventoryWriteError::Contended)
    }

    async fn write_head(&self, head: &ConfigMap) -> Result<ConfigMap, kube::Error> {
        let params = write_params();
        if self.resource_version.is_some() {
            retry::transient("update", || self.api.replace(&self.set_name, &params, head)).await
        } else {
            retry::transient("create", || self.api.create(&params, head)).await
        }
    }

    /// Creates `part` unless the set names it already; whether it was created. A part that exists already holds
    /// the same text: its name is its content's hash.
    async fn create_part(&self, part: &ConfigMap) -> Result<bool, InventoryWriteError> {
        let name = part.metadata.name.as_deref().unwrap_or_default();
        if self.parts.iter().any(|known| known == name) {
            return Ok(false);
        }
        let params = write_params();
        match retry::transient("create", || self.api.create(&params, part)).await {
            Ok(_) => Ok(true),
            Err(error) if is_conflict(&error) => Ok(false),
            Err(source) => Err(self.api_error(name, source)),
        }
    }

    /// Deletes parts nobody names any more. A failure only leaves a part for a later sweep.
    async fn delete_parts(&self, names: impl Iterator<Item = String>) {
        let params = DeleteParams::default();
        for name in names {
            let deleted = retry::transient("delete", || self.api.delete(&name, &params)).await;
            match deleted {
                Ok(_) => {}
                Err(error) if is_not_found(&error) => {}
                Err(error) => {
                    tracing::warn!(%error, part = name, "cannot delete an inventory part");
                }
            }
        }
    }

    /// Deletes the parts of this set that the index does not name and that are old enough not to belong to a
    /// write in flight: what a writer killed between creating parts and switching the index left behind.
    async fn sweep_orphans(&mut self) {
        self.swept = true;
        let params =
            ListParams::default().labels(&format!("{}={}", inventory::PART_OF, self.set_name));
        let listed = match retry::transient("list", || self.api.list(&params)).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(%error, "cannot list the inventory's parts");
                return;
            }
        };
        let now = jiff::Timestamp::now();
        let orphans: Vec<String> = listed
            .items
            .into_iter()
            .filter(|part| is_orphan(part, &self.parts, now))
            .filter_map(|part| part.metadata.name)
            .collect();
        self.delete_parts(orphans.into_iter()).await;
    }

    async fn reload(&mut self) -> Result<(), InventoryWriteError> {
        let stored = read(&self.api, &self.namespace, &self.set_name)
            .await?
            .unwrap_or_default();
        self.current = stored.inventory;
        self.resource_version = stored.resource_version;
        self.parts = stored.parts;
        Ok(())
    }

    fn api_error(&self, name: &str, source: kube::Error) -> InventoryWriteError {
        InventoryWriteError::Api {
            namespace: self.namespace.clone(),
            name: name.to_owned(),
            source,
        }
    }
}

/// Whether `part` is named by nobody (`named` is what the index names) and was created long enough before `now`
/// not to belong to a write in flight.
fn is_orphan(part: &ConfigMap, named: &[String], now: jiff::Timestamp) -> bool {
    let (Some(name), Some(created)) = (&part.metadata.name, &part.metadata.creation_timestamp)
    else {
        return false;
    };
    let age = now.duration_since(created.0);
    !named.contains(name) && age >= ORPHAN_AGE
}

fn write_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(FIELD_MANAGER.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;

    #[test]
    fn only_old_parts_nobody_names_are_orphans() {
        let now: jiff::Timestamp = "2026-12-02T12:00:00Z".parse().unwrap();
        let part = |name: &str, minutes_ago: i64| ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                creation_timestamp: Some(Time(now - jiff::SignedDuration::from_mins(minutes_ago))),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let named = vec!["s-part-1".to_owned()];
        assert!(is_orphan(&part("s-part-2", 11), &named, now));
        assert!(!is_orphan(&part("s-part-1", 11), &named, now), "named");
        assert!(
            !is_orphan(&part("s-part-2", 9), &named, now),
            "a write may be in flight"
        );
    }
}
