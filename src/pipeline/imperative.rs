//! Carrying out the imperative commands' plans ([`crate::plan::imperative`]): under the tool's lock, with the
//! executor `apply` uses, one executor per inventory the plan's jobs belong to. Nothing is recorded for a job
//! no inventory has (`run`'s, upstream's); a deleted job's record is dropped from its inventory.

use std::sync::Arc;

use super::{Error, writable_namespace};
use crate::apply::{Applied, Executor, Options, Progress};
use crate::cluster::Connection;
use crate::cluster::StoredInventory;
use crate::cluster::inventory::InventoryStore;
use crate::cluster::lock::{self, Lock};
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

/// Takes the lock (exit 6 when another writer holds it), carries out each plan in order ([`carry_out_holding`]),
/// and releases the lock. What each plan did, in order; the first error ends it.
pub async fn carry_out(
    target: Imperative<'_>,
    plans: Vec<InventoryPlan>,
) -> Result<Vec<Applied>, Error> {
    let lock = take_lock(&target).await?;
    let result = carry_out_holding(&target, plans, &lock).await;
    release(lock).await;
    result
}

/// The tool's lock for `target`'s purpose, waiting up to its `lock_wait`; the namespace is made writable first.
pub async fn take_lock(target: &Imperative<'_>) -> Result<Lock, Error> {
    writable_namespace(target.connection, target.namespace).await?;
    let holder = lock::identity(target.purpose);
    Ok(lock::acquire(
        &target.connection.client,
        target.namespace,
        &holder,
        target.lock_wait,
    )
    .await?)
}

/// Releases the lock; one that cannot be released expires by itself.
pub async fn release(lock: Lock) {
    if let Err(error) = lock.release().await {
        tracing::warn!(%error, "cannot release the lock; it expires by itself");
    }
}

/// Carries out each plan in order while the caller holds `lock` (a lost lock stops it). What each plan did, in
/// order; the first error ends it.
pub async fn carry_out_holding(
    target: &Imperative<'_>,
    plans: Vec<InventoryPlan>,
    lock: &Lock,
) -> Result<Vec<Applied>, Error> {
    let client = &target.connection.client;
    let mut done = Vec::new();
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
            Arc::new(target.live.clone()),
            // Nothing rendered: nothing is recorded for the jobs written.
            std::collections::BTreeMap::new(),
            inventory,
            Arc::clone(&target.progress),
            Options::default(),
        )
        .stopped_by(lock.lost());
        let applied = Box::pin(executor.execute(&plan)).await?;
        if applied.interrupted {
            return Err(if lock.was_taken_over() {
                Error::LockTakenOver
            } else {
                Error::LockExpired
            });
        }
        done.push(applied);
    }
    Ok(done)
}
