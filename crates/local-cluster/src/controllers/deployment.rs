//! The Deployment controller (reference §3.4): one ReplicaSet per pod template, named `<deployment>-<hash>` with
//! the `pod-template-hash` label; `Recreate` and `RollingUpdate` (`maxSurge`, `maxUnavailable`) by scaling ReplicaSets;
//! revision annotations; old ReplicaSets beyond `revisionHistoryLimit` deleted; status counts,
//! `observedGeneration` and the `Available`/`Progressing` conditions, including `ProgressDeadlineExceeded`, plus
//! `ReplicaFailure` copied from a ReplicaSet that cannot create its pods (the new one first). A new ReplicaSet the
//! API refuses (a quota on `count/replicasets.apps`) records Warning `ReplicaSetCreateError` and sets
//! `Progressing` False with that reason until it can be created.
//!
//! A ReplicaSet made current again by a rollback (`kubectl rollout undo` restores its template) gets the next
//! revision, its former one going to `deployment.kubernetes.io/revision-history`.
//!
//! Not covered: `paused`, proportional scaling of several old ReplicaSets during a rollout,
//! `collisionCount`, adoption of orphan ReplicaSets.

use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::controllers::framework::{
    self, Action, Effect, Key, Reconciler, owner_and_dependents, owner_keys,
};
use crate::controllers::recorder::Event;
use crate::registry::api_error::ApiError;
use crate::registry::delete::DeleteOptions;
use crate::registry::meta;
use crate::registry::ops::Part;
use crate::registry::resources::{self, Propagation, ResourceType, replicasets};
use crate::registry::store::{Change, Store};

const COMPONENT: &str = "deployment-controller";
const HASH: &str = "pod-template-hash";
const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// The controller's `maxRevHistoryLengthInChars`.
const REVISION_HISTORY_CHARS: usize = 2000;
/// The reason of the event and condition when the new ReplicaSet cannot be created.
const CREATE_ERROR: &str = "ReplicaSetCreateError";

fn deployments() -> &'static ResourceType {
    // Invariant: deployments are in the static registry.
    resources::find("apps", "v1", "deployments").expect("deployments are served")
}

/// The Deployment controller's reconciler; its keys are Deployments.
#[derive(Debug)]
pub(crate) struct DeploymentController;

impl Reconciler for DeploymentController {
    fn keys(&self, change: &Change) -> Vec<Key> {
        owner_keys(change, deployments(), "Deployment", replicasets())
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        framework::all_keys(store, deployments())
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let found = owner_and_dependents(store, deployments(), replicasets(), key);
        found
            .map(|(deployment, owned)| decide(&deployment, &owned, store.clock().now()))
            .unwrap_or_default()
    }

    fn refused(&mut self, key: &Key, store: &Store, error: &ApiError) -> Vec<Effect> {
        store
            .get(deployments(), &key.namespace, &key.name)
            .and_then(|d| with_create_error(&d, &error.message, store.clock().now()))
            .map(|d| Effect::Replace(deployments(), Part::Status, d))
            .into_iter()
            .collect()
    }
}

/// The name of the ReplicaSet for the Deployment's current template: `<deployment>-<hash>`.
fn new_set_name(deployment: &Value) -> String {
    let template = meta::at(deployment, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    format!("{}-{}", meta::name(deployment), template_hash(&template))
}

/// What the controller says when the new ReplicaSet is refused, before the error.
fn create_failed(deployment: &Value) -> String {
    format!(
        "Failed to create new replica set \"{}\": ",
        new_set_name(deployment)
    )
}

/// The Deployment with `Progressing` False `ReplicaSetCreateError` and the API's error, as the controller
/// writes it when the new ReplicaSet is refused (only with a progress deadline).
fn with_create_error(deployment: &Value, error: &str, now: Timestamp) -> Option<Value> {
    let deadline =
        meta::at(deployment, &["spec", "progressDeadlineSeconds"]).and_then(Value::as_i64);
    if deadline == Some(i64::from(i32::MAX)) {
        return None;
    }
    let message = format!("{}{error}", create_failed(deployment));
    let progressing = condition(
        deployment,
        "Progressing",
        false,
        CREATE_ERROR,
        &message,
        &meta::format_time(now),
        false,
    );
    let mut updated = deployment.clone();
    let status = meta::map_at(&mut updated, &["status"]);
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if let Some(list) = conditions.as_array_mut() {
        match list
            .iter_mut()
            .find(|c| meta::str_at(c, &["type"]) == Some("Progressing"))
        {
            Some(existing) => *existing = progressing,
            None => list.push(progressing),
        }
    }
    Some(updated)
}

/// A deterministic hash of the pod template in the name generator's alphabet (FNV-32a of its JSON, whose keys
/// are sorted, so equal templates hash equally).
fn template_hash(template: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut hash: u32 = 0x811c_9dc5;
    for byte in template.to_string().bytes() {
        hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
    }
    hash.to_string()
        .bytes()
        .map(|digit| char::from(ALPHABET[usize::from(digit) % ALPHABET.len()]))
        .collect()
}

fn int(value: &Value, path: &[&str]) -> i64 {
    meta::at(value, path).and_then(Value::as_i64).unwrap_or(0)
}

fn revision(set: &Value) -> i64 {
    meta::str_at(set, &["metadata", "annotations", REVISION])
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// An int-or-percent of `replicas`, rounded up or down.
fn scaled(value: Option<&Value>, replicas: i64, round_up: bool) -> i64 {
    match value {
        Some(Value::String(text)) => {
            let percent: i64 = text.trim_end_matches('%').parse().unwrap_or(0);
            let product = percent * replicas;
            if round_up {
                (product + 99) / 100
            } else {
                product / 100
            }
        }
        Some(other) => other.as_i64().unwrap_or(0),
        None => 0,
    }
}

fn event(deployment: &Value, message: String) -> Effect {
    Effect::Event(Event::about(
        deployments(),
        deployment,
        None,
        "Normal",
        "ScalingReplicaSet",
        message,
        COMPONENT,
    ))
}

/// Scales a ReplicaSet to `to`, with its `ScalingReplicaSet` event; nothing when it is there already.
fn scale(deployment: &Value, set: &Value, to: i64, effects: &mut Vec<Effect>) {
    let from = int(set, &["spec", "replicas"]);
    if from == to {
        return;
    }
    let mut scaled = set.clone();
    meta::set_at(&mut scaled, &["spec", "replicas"], json!(to));
    effects.push(Effect::Replace(replicasets(), Part::Main, scaled));
    let direction = if to > from { "up" } else { "down" };
    effects.push(event(
        deployment,
        format!(
            "Scaled {direction} replica set {} from {from} to {to}",
            meta::name(set)
        ),
    ));
}

/// The ReplicaSet for the current template.
fn new_replicaset(
    deployment: &Value,
    hash: &str,
    revision: i64,
    replicas: i64,
    surge: i64,
) -> Value {
    let mut template = meta::at(deployment, &["spec", "template"])
        .cloned()
        .unwrap_or_default();
    meta::set_at(&mut template, &["metadata", "labels", HASH], json!(hash));
    let mut annotations: Map<String, Value> = meta::at(deployment, &["metadata", "annotations"])
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    annotations.insert(REVISION.into(), json!(revision.to_string()));
    annotations.insert(
        "deployment.kubernetes.io/desired-replicas".into(),
        json!(replicas.to_string()),
    );
    annotations.insert(
        "deployment.kubernetes.io/max-replicas".into(),
        json!((replicas + surge).to_string()),
    );
    let mut selector = meta::at(deployment, &["spec", "selector"])
        .cloned()
        .unwrap_or_else(|| json!({}));
    meta::set_at(&mut selector, &["matchLabels", HASH], json!(hash));
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", meta::name(deployment)),
            "namespace": meta::namespace(deployment),
            "labels": meta::at(&template, &["metadata", "labels"]).cloned().unwrap_or_else(|| json!({})),
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": meta::name(deployment),
                "uid": meta::uid(deployment), "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": int(deployment, &["spec", "minReadySeconds"]),
            "selector": selector,
            "template": template,
        },
    })
}

/// A Deployment condition; the transition time moves when the status does, the update time when anything does.
fn condition(
    old: &Value,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: &str,
    progressed: bool,
) -> Value {
    let status = if status { "True" } else { "False" };
    let previous = meta::at(old, &["status", "conditions"])
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|c| meta::str_at(c, &["type"]) == Some(type_)));
    let same_status = previous.is_some_and(|c| meta::str_at(c, &["status"]) == Some(status));
    let unchanged = same_status
        && previous.is_some_and(|c| {
            meta::str_at(c, &["reason"]) == Some(reason)
                && meta::str_at(c, &["message"]) == Some(message)
        });
    let kept = |field: &str, keep: bool| {
        previous
            .filter(|_| keep)
            .and_then(|c| c.get(field).cloned())
            .unwrap_or_else(|| json!(now))
    };
    json!({"type": type_, "status": status, "lastUpdateTime": kept("lastUpdateTime", unchanged && !progressed),
        "lastTransitionTime": kept("lastTransitionTime", same_status), "reason": reason, "message": message})
}

/// The `ReplicaFailure` condition of the new ReplicaSet, else of an old one, as a Deployment condition
/// (`ReplicaSetToDeploymentCondition`); a previous one with the same status and reason is kept as it was.
fn replica_failure(deployment: &Value, new_set: &Value, old: &[&Value]) -> Option<Value> {
    let failure = std::iter::once(new_set)
        .chain(old.iter().copied())
        .find_map(|set| crate::controllers::framework::condition(set, "ReplicaFailure"))?;
    let field = |name: &str| failure.get(name).cloned().unwrap_or(Value::Null);
    let previous =
        crate::controllers::framework::condition(deployment, "ReplicaFailure").filter(|p| {
            p.get("status") == failure.get("status") && p.get("reason") == failure.get("reason")
        });
    Some(previous.cloned().unwrap_or_else(|| {
        json!({"type": "ReplicaFailure", "status": field("status"),
            "lastUpdateTime": field("lastTransitionTime"), "lastTransitionTime": field("lastTransitionTime"),
            "reason": field("reason"), "message": field("message")})
    }))
}

/// What the spec asks of a rollout: the replicas, and how far a rolling update may go above and below them.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    replicas: i64,
    /// `RollingUpdate` (the default), not `Recreate`.
    rolling: bool,
    /// Pods above `replicas` a rolling update may create (`maxSurge`); 0 for Recreate.
    surge: i64,
    /// Pods below `replicas` a rolling update may leave unavailable (`maxUnavailable`, at least 1 when the
    /// surge is 0); 0 for Recreate.
    unavailable: i64,
}

impl Bounds {
    fn of(deployment: &Value) -> Bounds {
        let replicas = meta::at(deployment, &["spec", "replicas"])
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let rolling = meta::str_at(deployment, &["spec", "strategy", "type"]) != Some("Recreate");
        let rolling_update = meta::at(deployment, &["spec", "strategy", "rollingUpdate"]);
        let surge = if rolling {
            scaled(
                rolling_update.and_then(|r| r.get("maxSurge")),
                replicas,
                true,
            )
        } else {
            0
        };
        let mut unavailable = if rolling {
            scaled(
                rolling_update.and_then(|r| r.get("maxUnavailable")),
                replicas,
                false,
            )
        } else {
            0
        };
        if rolling && surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        Bounds {
            replicas,
            rolling,
            surge,
            unavailable,
        }
    }
}

/// One sync's view of a rollout: the Deployment, the ReplicaSets it owns, and which of them is the new one.
#[derive(Debug)]
struct Rollout<'a> {
    deployment: &'a Value,
    owned: &'a [Value],
    bounds: Bounds,
    /// The ReplicaSet of the current template, as it is or as it is to be created.
    new_set: Value,
    /// Whether `new_set` is still to be created.
    created: bool,
    /// Whether `new_set` is an older ReplicaSet made current again (a rollback) that got the next revision.
    renumbered: bool,
    /// The other ReplicaSets, oldest revision first.
    old: Vec<&'a Value>,
}

impl<'a> Rollout<'a> {
    fn of(deployment: &'a Value, owned: &'a [Value]) -> Rollout<'a> {
        let bounds = Bounds::of(deployment);
        let new_name = new_set_name(deployment);
        let current = owned.iter().find(|r| meta::name(r) == new_name);
        let mut old: Vec<&Value> = owned.iter().filter(|r| meta::name(r) != new_name).collect();
        old.sort_by_key(|r| revision(r));
        let next_revision = old.iter().map(|r| revision(r)).max().unwrap_or(0) + 1;
        let renumbered = current.and_then(|set| renumber(set, next_revision));
        let new_set = renumbered
            .clone()
            .or_else(|| current.cloned())
            .unwrap_or_else(|| {
                let template = meta::at(deployment, &["spec", "template"])
                    .cloned()
                    .unwrap_or_default();
                new_replicaset(
                    deployment,
                    &template_hash(&template),
                    next_revision,
                    bounds.replicas,
                    bounds.surge,
                )
            });
        Rollout {
            deployment,
            owned,
            bounds,
            new_set,
            created: current.is_none(),
            renumbered: renumbered.is_some(),
            old,
        }
    }

    /// Pods of old ReplicaSets, wanted or still there.
    fn old_pods(&self) -> i64 {
        self.old
            .iter()
            .map(|r| int(r, &["spec", "replicas"]).max(int(r, &["status", "replicas"])))
            .sum()
    }

    /// The replicas the owned ReplicaSets want together.
    fn total(&self) -> i64 {
        self.owned
            .iter()
            .map(|r| int(r, &["spec", "replicas"]))
            .sum()
    }

    /// Scales the new ReplicaSet, creating it when it is missing, to what the strategy allows now: every replica
    /// once no old pods are left, up to the surge for a rolling update, none while a Recreate has old pods.
    fn scale_new_set(&self, old_pods: i64, effects: &mut Vec<Effect>) {
        let Bounds {
            replicas,
            rolling,
            surge,
            ..
        } = self.bounds;
        let new_replicas = int(&self.new_set, &["spec", "replicas"]);
        let target = if old_pods == 0 {
            replicas
        } else if rolling {
            (new_replicas + (replicas + surge - self.total()).max(0)).min(replicas)
        } else {
            0
        };
        if !self.created {
            scale(self.deployment, &self.new_set, target, effects);
            return;
        }
        let mut set = self.new_set.clone();
        meta::set_at(&mut set, &["spec", "replicas"], json!(target));
        let refused = Event::about(
            deployments(),
            self.deployment,
            None,
            "Warning",
            CREATE_ERROR,
            create_failed(self.deployment),
            COMPONENT,
        );
        effects.push(Effect::Create(replicasets(), set, Some(refused)));
        if target > 0 {
            effects.push(event(
                self.deployment,
                format!(
                    "Scaled up replica set {} from 0 to {target}",
                    meta::name(&self.new_set)
                ),
            ));
        }
    }

    /// Scales the old ReplicaSets down: all to 0 for Recreate; for a rolling update oldest first, by as many pods
    /// as may go while enough stay available.
    fn scale_old_sets(&self, effects: &mut Vec<Effect>) {
        if !self.bounds.rolling {
            for set in &self.old {
                scale(self.deployment, set, 0, effects);
            }
            return;
        }
        // Old pods may go while enough pods stay available: all pods − minimum available − new unavailable.
        let new_replicas = int(&self.new_set, &["spec", "replicas"]);
        let new_unavailable =
            (new_replicas - int(&self.new_set, &["status", "availableReplicas"])).max(0);
        let minimum = self.bounds.replicas - self.bounds.unavailable;
        let mut removable = (self.total() - minimum - new_unavailable).max(0);
        for set in &self.old {
            let count = int(set, &["spec", "replicas"]);
            let down = count.min(removable);
            removable -= down;
            scale(self.deployment, set, count - down, effects);
        }
    }

    /// Deletes the old ReplicaSets that are empty and beyond the history limit, oldest first.
    fn delete_beyond_history(&self, effects: &mut Vec<Effect>) {
        let limit =
            usize::try_from(int(self.deployment, &["spec", "revisionHistoryLimit"])).unwrap_or(0);
        let empty: Vec<&&Value> = self
            .old
            .iter()
            .filter(|r| int(r, &["spec", "replicas"]) == 0 && int(r, &["status", "replicas"]) == 0)
            .collect();
        for set in empty.iter().take(empty.len().saturating_sub(limit)) {
            effects.push(Effect::Delete(
                replicasets(),
                (**set).clone(),
                DeleteOptions::with_propagation(Propagation::Background),
            ));
        }
    }

    /// The Deployment's `status` after this sync — the counts summed over its ReplicaSets and the `Available`,
    /// `Progressing` and `ReplicaFailure` conditions — and when to look again for the progress deadline.
    /// `scaled`: whether this sync changes any ReplicaSet.
    fn status(&self, old_pods: i64, scaled: bool, now: Timestamp) -> (Value, Option<Duration>) {
        let replicas = self.bounds.replicas;
        let sum =
            |field: &str| -> i64 { self.owned.iter().map(|r| int(r, &["status", field])).sum() };
        let (all, ready, available) = (
            sum("replicas"),
            sum("readyReplicas"),
            sum("availableReplicas"),
        );
        let updated = if self.created {
            0
        } else {
            int(&self.new_set, &["status", "replicas"])
        };
        let generation = meta::at(self.deployment, &["metadata", "generation"])
            .cloned()
            .unwrap_or(json!(1));
        let mut status = json!({ "observedGeneration": generation });
        for (field, count) in [
            ("replicas", all),
            ("updatedReplicas", updated),
            ("readyReplicas", ready),
            ("availableReplicas", available),
            ("unavailableReplicas", (replicas - available).max(0)),
        ] {
            // Go omits zero counts.
            if count > 0 {
                meta::set_at(&mut status, &[field], json!(count));
            }
        }
        let counts_moved = [
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
        ]
        .iter()
        .any(|f| meta::at(self.deployment, &["status", f]) != status.get(*f));
        let progress = Progress {
            complete: updated == replicas
                && all == replicas
                && available >= replicas
                && old_pods == 0,
            progressed: scaled || counts_moved,
            now,
            now_text: meta::format_time(now),
        };
        let minimum = available >= replicas - self.bounds.unavailable;
        let (progressing, requeue) = self.progressing(&progress);
        let mut conditions = vec![
            available_condition(self.deployment, minimum, &progress.now_text),
            progressing,
        ];
        conditions.extend(replica_failure(self.deployment, &self.new_set, &self.old));
        meta::set_at(&mut status, &["conditions"], Value::Array(conditions));
        (status, requeue)
    }

    /// The `Progressing` condition, and when its progress deadline runs out if it is still running.
    fn progressing(&self, progress: &Progress) -> (Value, Option<Duration>) {
        let deployment = self.deployment;
        let now_text = progress.now_text.as_str();
        let set_name = meta::name(&self.new_set);
        let previous = meta::at(deployment, &["status", "conditions"])
            .and_then(Value::as_array)
            .and_then(|l| {
                l.iter()
                    .find(|c| meta::str_at(c, &["type"]) == Some("Progressing"))
            });
        let deadline = meta::at(deployment, &["spec", "progressDeadlineSeconds"])
            .and_then(Value::as_i64)
            .unwrap_or(600);
        let stalled_since = previous
            .filter(|c| meta::str_at(c, &["status"]) == Some("True"))
            .and_then(|c| meta::str_at(c, &["lastUpdateTime"]))
            .and_then(meta::parse_time);
        let condition = if self.created
            && previous.is_some_and(|c| meta::str_at(c, &["reason"]) == Some(CREATE_ERROR))
        {
            // The new ReplicaSet is still to be created: the refusal stays reported until it exists.
            previous.cloned().unwrap_or_default()
        } else if self.created {
            condition(
                deployment,
                "Progressing",
                true,
                "NewReplicaSetCreated",
                &format!("Created new replica set \"{set_name}\""),
                now_text,
                true,
            )
        } else if progress.complete {
            condition(
                deployment,
                "Progressing",
                true,
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{set_name}\" has successfully progressed."),
                now_text,
                false,
            )
        } else if progress.progressed {
            condition(
                deployment,
                "Progressing",
                true,
                "ReplicaSetUpdated",
                &format!("ReplicaSet \"{set_name}\" is progressing."),
                now_text,
                true,
            )
        } else if let Some(since) = stalled_since
            && let Ok(limit) = since.checked_add(jiff::SignedDuration::from_secs(deadline))
            && limit > progress.now
        {
            let requeue =
                progress.now.duration_until(limit).unsigned_abs() + Duration::from_millis(1);
            return (previous.cloned().unwrap_or_default(), Some(requeue));
        } else if previous.is_some_and(|c| meta::str_at(c, &["status"]) == Some("True")) {
            condition(
                deployment,
                "Progressing",
                false,
                "ProgressDeadlineExceeded",
                &format!("ReplicaSet \"{set_name}\" has timed out progressing."),
                now_text,
                false,
            )
        } else {
            previous.cloned().unwrap_or_else(|| {
                condition(
                    deployment,
                    "Progressing",
                    true,
                    "FoundNewReplicaSet",
                    &format!("Found new replica set \"{set_name}\""),
                    now_text,
                    false,
                )
            })
        };
        (condition, None)
    }
}

/// How a rollout stands in this sync, for its `Progressing` condition.
#[derive(Debug)]
struct Progress {
    /// Every replica is updated and available, and no old pod is left.
    complete: bool,
    /// This sync scales a ReplicaSet, or the counts moved since the last status.
    progressed: bool,
    now: Timestamp,
    now_text: String,
}

/// The `Available` condition: whether the minimum of replicas (`replicas − maxUnavailable`) is available.
fn available_condition(deployment: &Value, minimum: bool, now: &str) -> Value {
    if minimum {
        condition(
            deployment,
            "Available",
            true,
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            now,
            false,
        )
    } else {
        condition(
            deployment,
            "Available",
            false,
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            now,
            false,
        )
    }
}

/// An existing ReplicaSet that is current again (`kubectl rollout undo` restored its template) with the next
/// revision, its former one appended to `deployment.kubernetes.io/revision-history`, as the controller's
/// `SetNewReplicaSetAnnotations` does; `None` when its revision is already the newest.
fn renumber(set: &Value, next_revision: i64) -> Option<Value> {
    let former = revision(set);
    if former >= next_revision {
        return None;
    }
    let mut renumbered = set.clone();
    meta::set_at(
        &mut renumbered,
        &["metadata", "annotations", REVISION],
        json!(next_revision.to_string()),
    );
    if former > 0 {
        let history = meta::str_at(set, &["metadata", "annotations", REVISION_HISTORY])
            .filter(|h| !h.is_empty());
        let mut revisions: Vec<&str> = history.map(|h| h.split(',').collect()).unwrap_or_default();
        let former = former.to_string();
        revisions.push(&former);
        // The controller keeps the most recent revisions that fit its limit of characters.
        while revisions.join(",").len() > REVISION_HISTORY_CHARS && revisions.len() > 1 {
            revisions.remove(0);
        }
        meta::set_at(
            &mut renumbered,
            &["metadata", "annotations", REVISION_HISTORY],
            json!(revisions.join(",")),
        );
    }
    Some(renumbered)
}

/// The Deployment with its revision annotation set to the new ReplicaSet's, when it says another.
fn revision_update(deployment: &Value, new_set: &Value) -> Option<Value> {
    let set_revision = revision(new_set).to_string();
    if meta::str_at(deployment, &["metadata", "annotations", REVISION])
        == Some(set_revision.as_str())
    {
        return None;
    }
    let mut annotated = deployment.clone();
    meta::set_at(
        &mut annotated,
        &["metadata", "annotations", REVISION],
        json!(set_revision),
    );
    Some(annotated)
}

/// The decision for one Deployment and the ReplicaSets it owns: find the new ReplicaSet, scale it up and the
/// old ones down as the strategy allows, clean up the history, report the status.
pub(crate) fn decide(deployment: &Value, owned: &[Value], now: Timestamp) -> Action {
    let mut action = Action::default();
    if meta::is_deleting(deployment) {
        return action;
    }
    let rollout = Rollout::of(deployment, owned);
    // The revisions first (a renumbered ReplicaSet's, then the Deployment's annotation); the next sync (caused
    // by these writes) does the rest.
    if rollout.renumbered {
        action.effects.push(Effect::Replace(
            replicasets(),
            Part::Main,
            rollout.new_set.clone(),
        ));
    }
    if !rollout.created
        && let Some(annotated) = revision_update(deployment, &rollout.new_set)
    {
        action
            .effects
            .push(Effect::Replace(deployments(), Part::Main, annotated));
    }
    if !action.effects.is_empty() {
        return action;
    }
    let old_pods = rollout.old_pods();
    let mut effects = Vec::new();
    rollout.scale_new_set(old_pods, &mut effects);
    rollout.scale_old_sets(&mut effects);
    rollout.delete_beyond_history(&mut effects);
    let (status, requeue) = rollout.status(old_pods, !effects.is_empty(), now);
    if let Some(after) = requeue {
        action.requeue(after);
    }
    if deployment.get("status") != Some(&status) {
        let mut updated = deployment.clone();
        meta::set_at(&mut updated, &["status"], status);
        action
            .effects
            .push(Effect::Replace(deployments(), Part::Status, updated));
    }
    action.effects.extend(effects);
    action
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(strategy: &Value, image: &str) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "uid": "du", "generation": 2,
                "annotations": {REVISION: "1"}},
            "spec": {"replicas": 2, "strategy": strategy, "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "main", "image": image}]}}}})
    }

    fn old_set(replicas: i64) -> Value {
        json!({"metadata": {"name": "web-old", "namespace": "default", "annotations": {REVISION: "1"}},
            "spec": {"replicas": replicas},
            "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}})
    }

    fn scalings(action: &Action) -> Vec<String> {
        action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Event(event) => Some(event.message.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_template_hash_uses_the_name_alphabet_and_changes_only_with_the_template() {
        let template = |image: &str| deployment(&json!({}), image)["spec"]["template"].clone();
        let hash = template_hash(&template("a"));
        assert!(
            hash.len() <= 10
                && hash
                    .chars()
                    .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
            "{hash}"
        );
        assert_eq!(hash, template_hash(&template("a")));
        assert_ne!(hash, template_hash(&template("b")));
    }

    #[test]
    fn recreate_scales_the_old_replicaset_to_zero_before_the_new_one_gets_pods() {
        let recreate = deployment(&json!({"type": "Recreate"}), "b");
        let action = decide(&recreate, &[old_set(2)], Timestamp::now());
        let created: Vec<i64> = action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Create(_, set, _) => Some(int(set, &["spec", "replicas"])),
                _ => None,
            })
            .collect();
        assert_eq!(created, [0], "the new ReplicaSet starts empty");
        assert_eq!(
            scalings(&action),
            ["Scaled down replica set web-old from 2 to 0"]
        );
    }

    #[test]
    fn a_rolling_update_surges_one_pod_and_keeps_every_old_pod_until_the_new_one_is_available() {
        let rolling = deployment(
            &json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            "b",
        );
        let action = decide(&rolling, &[old_set(2)], Timestamp::now());
        let hash = template_hash(&rolling["spec"]["template"]);
        assert_eq!(
            scalings(&action),
            [format!("Scaled up replica set web-{hash} from 0 to 1")]
        );
    }

    #[test]
    fn a_replicaset_made_current_again_gets_the_next_revision_and_keeps_its_former_one() {
        let set = |image: &str, revision: &str, history: Option<&str>| {
            let hash = template_hash(&deployment(&json!({}), image)["spec"]["template"]);
            let mut set = json!({"metadata": {"name": format!("web-{hash}"), "namespace": "default",
                "annotations": {REVISION: revision}}, "spec": {"replicas": 0}});
            if let Some(history) = history {
                set["metadata"]["annotations"][REVISION_HISTORY] = json!(history);
            }
            set
        };
        let mut undone = deployment(&json!({}), "b");
        undone["metadata"]["annotations"][REVISION] = json!("3");
        let owned = [
            set("a", "1", None),
            set("b", "2", Some("0")),
            set("c", "3", None),
        ];
        let action = decide(&undone, &owned, Timestamp::now());
        let written: Vec<(Option<&str>, Option<&str>)> = action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Replace(_, Part::Main, object) => Some((
                    meta::str_at(object, &["metadata", "annotations", REVISION]),
                    meta::str_at(object, &["metadata", "annotations", REVISION_HISTORY]),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            written,
            [(Some("4"), Some("0,2")), (Some("4"), None)],
            "the ReplicaSet, then the Deployment's revision"
        );
    }
}
