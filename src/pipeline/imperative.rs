//! Carrying out the imperative commands' plans ([`crate::plan::imperative`]): under the tool's lock, with the
//! executor `apply` uses, one executor per inventory the plan's jobs belong to. Nothing is recorded for a job
//! no inventory has (`run`'s, upstream's); a deleted job's record is dropped from its inventory.

use std::sync::Arc;

use super::{Error, writable_namespace};
use crate::apply::{Applied, Executor, Options, Progress};
use crate::cluster::StoredInventory;
use crate::cluster::inventory::InventoryStore;
use crate::cluster::{Connection, lock};
use crate::plan::{LiveState, Plan};

/// Where and by whom an imperative plan is carried out.
pub struct Imperative<'a> {
    pub connection: &'a Connection,
    pub namespace: &'a str,
    /// The objects the plans were made from; updates and deletes are guarded by their UIDs and versions.
    pub live: &'a LiveState,
    /// What the lock holder is doing (`delete`, `run`), as the Lease names it.
    pub purpose: &'a str,
    pub progress: Arc<dyn Progress>,
    /// How long to wait for another writer's lock; `None`: fail at once.
    pub lock_wait: Option<std::time::Duration>,
}

/// The share of an imperative plan that belongs to one inventory.
pub struct InventoryPlan {
    pub set_name: String,
    /// The inventory as read, `None` when it does not exist.
    pub stored: Option<StoredInventory>,
    pub plan: Plan,
}

/// Takes the lock (exit 6 when another writer holds it), carries out each plan in order, and releases the lock.
/// What each plan did, in order; the first error ends it.
pub async fn carry_out(
    target: Imperative<'_>,
    plans: Vec<InventoryPlan>,
) -> Result<Vec<Applied>, Error> {
    let client = &target.connection.client;
    writable_namespace(target.connection, target.namespace).await?;
    let holder = lock::identity(target.purpose);
    let lock = lock::acquire(client, target.namespace, &holder, target.lock_wait).await?;
    let mut done = Vec::new();
    let mut result = Ok(());
    for InventoryPlan {
        set_name,
        stored,
        plan,
    } in plans
    {
        let inventory = InventoryStore::new(client, target.namespace, &set_name, stored);
        let executor = Executor::new(
            client.clone(),
            target.namespace,
            target.live.clone(),
            // Nothing rendered: nothing is recorded for the jobs written.
            std::collections::BTreeMap::new(),
            inventory,
            Arc::clone(&target.progress),
            Options::default(),
        )
        .stopped_by(lock.lost());
        match Box::pin(executor.execute(&plan)).await {
            Ok(applied) if applied.interrupted => {
                result = Err(if lock.was_taken_over() {
                    Error::LockTakenOver
                } else {
                    Error::LockExpired
                });
                break;
            }
            Ok(applied) => done.push(applied),
            Err(error) => {
                result = Err(error.into());
                break;
            }
        }
    }
    if let Err(error) = lock.release().await {
        tracing::warn!(%error, "cannot release the lock; it expires by itself");
    }
    result.map(|()| done)
}
