//! Writing the inventory (SPEC §6): every change is a read-modify-write of the ConfigMap guarded by its
//! resourceVersion. On a conflict the ConfigMap is read again and the change applied to what is there, so a
//! concurrent writer's records are kept, never overwritten.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

use super::snapshot::StoredInventory;
use super::{FIELD_MANAGER, is_conflict, retry};
use crate::render::inventory::{self, Inventory, InventoryError};

/// How often a conflicting write is tried again before giving up.
const ATTEMPTS: usize = 5;

/// The inventory as last read or written, and where it lives.
pub struct InventoryStore {
    api: Api<ConfigMap>,
    namespace: String,
    set_name: String,
    current: Inventory,
    /// `None` while the ConfigMap does not exist.
    resource_version: Option<String>,
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
    Unreadable(#[from] InventoryError),
}

impl InventoryStore {
    /// The store of set `set_name`, starting from what was read with the live state.
    pub fn new(
        client: &kube::Client,
        namespace: &str,
        set_name: &str,
        stored: Option<StoredInventory>,
    ) -> Self {
        let (current, resource_version) = stored.map_or_else(
            || (Inventory::default(), None),
            |stored| (stored.inventory, stored.resource_version),
        );
        Self {
            api: Api::namespaced(client.clone(), namespace),
            namespace: namespace.to_owned(),
            set_name: set_name.to_owned(),
            current,
            resource_version,
        }
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
        for _ in 0..ATTEMPTS {
            let mut next = self.current.clone();
            change(&mut next);
            if next == self.current && self.resource_version.is_some() {
                return Ok(());
            }
            let mut config_map = inventory::to_config_map(&next, &self.set_name, &self.namespace);
            config_map.metadata.resource_version = self.resource_version.clone();
            let params = PostParams {
                dry_run: false,
                field_manager: Some(FIELD_MANAGER.to_owned()),
            };
            let written = if self.resource_version.is_some() {
                retry::transient("update", || {
                    self.api.replace(&self.set_name, &params, &config_map)
                })
                .await
            } else {
                retry::transient("create", || self.api.create(&params, &config_map)).await
            };
            match written {
                Ok(written) => {
                    self.current = next;
                    self.resource_version = written.metadata.resource_version;
                    return Ok(());
                }
                // Changed (or created) by somebody else since we read it: start from theirs.
                Err(error) if is_conflict(&error) => self.reload().await?,
                Err(source) => return Err(self.api_error(source)),
            }
        }
        Err(InventoryWriteError::Contended)
    }

    async fn reload(&mut self) -> Result<(), InventoryWriteError> {
        let stored = retry::transient("get", || self.api.get_opt(&self.set_name))
            .await
            .map_err(|source| self.api_error(source))?;
        (self.current, self.resource_version) = match stored {
            Some(config_map) => (
                inventory::from_config_map(&config_map)?,
                config_map.metadata.resource_version,
            ),
            None => (Inventory::default(), None),
        };
        Ok(())
    }

    fn api_error(&self, source: kube::Error) -> InventoryWriteError {
        InventoryWriteError::Api {
            namespace: self.namespace.clone(),
            name: self.set_name.clone(),
            source,
        }
    }
}
