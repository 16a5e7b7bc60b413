//! The live state: what one LIST per kind returned, indexed by object name, with each object's ownership.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob, JobStatus};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::model::inventory::RunOutcome;
use crate::model::labels;
use crate::plan::{Listed, ListedWorkload, Manifest, ObjectKind, ObjectRef};
use crate::render::record::RecordKind;
use crate::render::{Membership, ReadBack, ReadBackError, RenderContext, read_back};

/// The live objects of the tool's namespace, as listed (one LIST per kind). Objects without the jobs framework's
/// managed-by label may be included (they are never touched, only detected as name clashes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveState {
    pub jobs: Vec<Listed<KubeJob>>,
    pub cron_jobs: Vec<Listed<CronJob>>,
    pub deployments: Vec<Listed<Deployment>>,
    pub services: Vec<Listed<Service>>,
    /// Upstream's stored records (`ContinuousJob`s and `ScheduledJob`s); `None` when the cluster does not serve
    /// them or the tool may not list them, and then none is written.
    pub records: Option<Vec<LiveRecord>>,
    /// Whether the Jobs were listed: only then does a Job's absence say that its run is over. Set by the snapshot
    /// that lists them; `false` otherwise, so that nothing is concluded from a Job missing from a partial state.
    pub jobs_listed: bool,
}

/// A stored record as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRecord {
    pub kind: RecordKind,
    pub metadata: ObjectMeta,
    /// The whole object, as listed (kept as text: see [`Listed`]).
    pub object: Manifest,
}

impl LiveRecord {
    /// A listed custom resource, when it is one of upstream's records.
    pub fn from_json(object: serde_json::Value) -> Result<Option<Self>, serde_json::Error> {
        let Some(kind) = object
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .and_then(RecordKind::from_kind)
        else {
            return Ok(None);
        };
        let metadata = serde_json::from_value(object["metadata"].clone())?;
        Ok(Some(Self {
            kind,
            metadata,
            object: Manifest::from(object),
        }))
    }
}

impl LiveState {
    /// Sorts listed JSON objects (Jobs, CronJobs, Deployments, Services and stored records, in any order) into a
    /// live state. Records are taken as served when one is among the objects (else see [`Self::serving_records`]).
    pub fn from_json(objects: Vec<serde_json::Value>) -> Result<Self, serde_json::Error> {
        let mut state = Self::default();
        for value in objects {
            match value.get("kind").and_then(serde_json::Value::as_str) {
                Some("Job") => state.jobs.push(listed(value)?),
                Some("CronJob") => state.cron_jobs.push(listed(value)?),
                Some("Deployment") => state.deployments.push(listed(value)?),
                Some("Service") => state.services.push(listed(value)?),
                _ => {
                    if let Some(record) = LiveRecord::from_json(value)? {
                        state.records.get_or_insert_default().push(record);
                    }
                }
            }
        }
        Ok(state)
    }

    /// The same state on a cluster that serves the stored records (none listed when there were none).
    #[must_use]
    pub fn serving_records(mut self) -> Self {
        self.records.get_or_insert_default();
        self
    }

    /// The listed record `name` of `kind`.
    pub fn record(&self, kind: RecordKind, name: &str) -> Option<&LiveRecord> {
        self.records
            .iter()
            .flatten()
            .find(|record| record.kind == kind && record.metadata.name.as_deref() == Some(name))
    }

    /// The live object `name` of `kind` as JSON (with `kind`/`apiVersion`), if listed.
    pub fn manifest(&self, kind: ObjectKind, name: &str) -> Option<serde_json::Value> {
        match kind {
            ObjectKind::Job => named(&self.jobs, name).map(Listed::value),
            ObjectKind::CronJob => named(&self.cron_jobs, name).map(Listed::value),
            ObjectKind::Deployment => named(&self.deployments, name).map(Listed::value),
            ObjectKind::Service => named(&self.services, name).map(Listed::value),
            ObjectKind::ContinuousJob | ObjectKind::ScheduledJob => self
                .record(super::record_kind(kind)?, name)
                .map(|record| record.object.value()),
        }
    }
}

/// The listed object `name` among `objects`.
fn named<'a, K>(objects: &'a [Listed<K>], name: &str) -> Option<&'a Listed<K>> {
    objects
        .iter()
        .find(|object| object.metadata.name.as_deref() == Some(name))
}

/// A JSON object decoded as `K`, kept listed.
fn listed<K>(value: serde_json::Value) -> Result<Listed<K>, serde_json::Error>
where
    K: k8s_openapi::Metadata<Ty = ObjectMeta> + serde::Serialize + serde::de::DeserializeOwned,
{
    serde_json::from_value::<K>(value).map(Listed::from)
}

/// Who an object belongs to, from its labels alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// No jobs-framework managed-by label: not ours, never touched.
    Foreign,
    /// A jobs-framework object labelled as a member of another inventory.
    OtherInventory,
    /// A jobs-framework object of our inventory, or without inventory labels (upstream's, `run`'s).
    Framework,
}

/// One live object with what the plan needs to know about it.
#[derive(Debug, Clone)]
pub(crate) struct Live<'a> {
    pub(crate) reference: ObjectRef,
    pub(crate) owner: Owner,
    /// The other inventory's name, for messages.
    pub(crate) other_inventory: Option<String>,
    /// Labelled as a member of our inventory.
    pub(crate) member: bool,
    /// Our desired-hash annotation.
    pub(crate) desired_hash: Option<String>,
    pub(crate) fingerprint: Option<String>,
    /// The workload, for read-back (`None` for Services).
    pub(crate) workload: Option<ListedWorkload<'a>>,
    /// A finished Job's outcome, from its conditions.
    pub(crate) finished: Option<RunOutcome>,
    /// A Job waiting to be resumed (`spec.suspend`): ours are, from their creation until their UID is recorded.
    pub(crate) suspended: bool,
    /// A stored record's whole object.
    pub(crate) record: Option<&'a Manifest>,
}

impl Live<'_> {
    /// The workload read back into the job it runs; `None` for a Service or a record.
    pub(crate) fn read_back(
        &self,
        context: &RenderContext,
    ) -> Option<Result<ReadBack, ReadBackError>> {
        self.workload
            .map(|workload| read_back(&workload.decode(), context))
    }
}

/// Every live object, by name then kind.
pub(crate) type Index<'a> = BTreeMap<String, Objects<'a>>;

/// The live objects of one name, by kind. A name has a few at most (a workload, its Service, its record), so
/// they are a vector sorted by kind rather than a map: a map's first node has room for eleven, 2 KB a name.
#[derive(Debug, Clone)]
pub(crate) struct Objects<'a>(Vec<(ObjectKind, Live<'a>)>);

impl Default for Objects<'_> {
    /// Room for a workload, its Service and its record.
    fn default() -> Self {
        Self(Vec::with_capacity(3))
    }
}

impl<'a> Objects<'a> {
    pub(crate) fn get(&self, kind: ObjectKind) -> Option<&Live<'a>> {
        self.position(kind).ok().map(|at| &self.0[at].1)
    }

    fn get_mut(&mut self, kind: ObjectKind) -> Option<&mut Live<'a>> {
        self.position(kind).ok().map(|at| &mut self.0[at].1)
    }

    pub(crate) fn contains_key(&self, kind: ObjectKind) -> bool {
        self.position(kind).is_ok()
    }

    /// The objects in the order of their kinds.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&ObjectKind, &Live<'a>)> {
        self.0.iter().map(|(kind, live)| (kind, live))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Live<'a>> {
        self.0.iter().map(|(_, live)| live)
    }

    /// Adds the object of `kind`, or replaces the one there (as a map's `insert` does).
    fn insert(&mut self, kind: ObjectKind, live: Live<'a>) {
        match self.position(kind) {
            Ok(at) => self.0[at].1 = live,
            Err(at) => self.0.insert(at, (kind, live)),
        }
    }

    fn position(&self, kind: ObjectKind) -> Result<usize, usize> {
        self.0.binary_search_by_key(&kind, |(listed, _)| *listed)
    }
}

/// Indexes `state`; Jobs spawned by a CronJob are not jobs of their own and are left out.
pub(crate) fn index<'a>(state: &'a LiveState, membership: &Membership) -> Index<'a> {
    let mut index = Index::new();
    let mut unlabelled_records = Vec::new();
    let mut add = |kind,
                   metadata: &ObjectMeta,
                   workload: Option<ListedWorkload<'a>>,
                   record: Option<&'a Manifest>| {
        let Some(name) = metadata.name.clone() else {
            return;
        };
        let no_labels = BTreeMap::new();
        let labels = metadata.labels.as_ref().unwrap_or(&no_labels);
        let annotation = |key| {
            metadata
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.get(key))
                .cloned()
        };
        // Upstream's storage may write its records without labels: such a record is the jobs framework's (the only
        // other writer of these resources is upstream's jobs-api), and below it takes its workload's owner.
        let is_record = super::record_kind(kind).is_some();
        let framework = labels::is_framework(Some(labels))
            || (is_record && !labels.contains_key(labels::MANAGED_BY));
        if is_record && !labels.contains_key(labels::MANAGED_BY) {
            unlabelled_records.push((name.clone(), kind));
        }
        let inventory = labels.get(labels::INVENTORY);
        let part_of = labels.get(labels::APPLYSET_PART_OF);
        let other = inventory.is_some_and(|set| *set != membership.set_name)
            || part_of.is_some_and(|id| *id != membership.applyset_id);
        let owner = match (framework, other) {
            (false, _) => Owner::Foreign,
            (true, true) => Owner::OtherInventory,
            (true, false) => Owner::Framework,
        };
        let (finished, suspended) = match workload {
            Some(ListedWorkload::Job(job)) => job_state(job),
            _ => (None, false),
        };
        let live = Live {
            reference: ObjectRef {
                kind,
                name: name.clone(),
                uid: metadata.uid.clone(),
            },
            owner,
            other_inventory: inventory.or(part_of).cloned(),
            member: framework && !other && inventory.is_some(),
            desired_hash: annotation(labels::DESIRED_HASH),
            fingerprint: annotation(labels::FINGERPRINT),
            workload,
            finished,
            suspended,
            record,
        };
        index.entry(name).or_default().insert(kind, live);
    };
    for job in &state.jobs {
        let spawned = job
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|owner| owner.kind == "CronJob");
        if !spawned {
            add(
                ObjectKind::Job,
                &job.metadata,
                Some(ListedWorkload::Job(job)),
                None,
            );
        }
    }
    for cron_job in &state.cron_jobs {
        add(
            ObjectKind::CronJob,
            &cron_job.metadata,
            Some(ListedWorkload::CronJob(cron_job)),
            None,
        );
    }
    for deployment in &state.deployments {
        add(
            ObjectKind::Deployment,
            &deployment.metadata,
            Some(ListedWorkload::Deployment(deployment)),
            None,
        );
    }
    for service in &state.services {
        add(ObjectKind::Service, &service.metadata, None, None);
    }
    for record in state.records.iter().flatten() {
        add(
            super::record_object(record.kind),
            &record.metadata,
            None,
            Some(&record.object),
        );
    }
    owned_like_their_workloads(&mut index, unlabelled_records);
    index
}

/// Records written without labels take the owner of their job's workload, when it has one.
fn owned_like_their_workloads(index: &mut Index<'_>, records: Vec<(String, ObjectKind)>) {
    for (name, kind) in records {
        let Some(objects) = index.get_mut(&name) else {
            continue;
        };
        let workload = [ObjectKind::Job, ObjectKind::CronJob, ObjectKind::Deployment]
            .iter()
            .find_map(|workload| objects.get(*workload))
            .map(|live| (live.owner, live.other_inventory.clone()));
        if let (Some((owner, other_inventory)), Some(record)) = (workload, objects.get_mut(kind)) {
            record.owner = owner;
            record.other_inventory = other_inventory;
        }
    }
}

/// What the plan reads of a listed Job besides its metadata, decoded without the rest of it (its pod template).
#[derive(serde::Deserialize)]
struct JobState {
    spec: Option<Suspension>,
    status: Option<JobStatus>,
}

#[derive(serde::Deserialize)]
struct Suspension {
    suspend: Option<bool>,
}

/// How the Job ended, if it did, and whether it is suspended.
fn job_state(job: &Listed<KubeJob>) -> (Option<RunOutcome>, bool) {
    let state: JobState = job.part();
    let suspended = state.spec.and_then(|spec| spec.suspend) == Some(true);
    (job_outcome(state.status.as_ref()), suspended)
}

/// `Complete`/`SuccessCriteriaMet` → succeeded, `Failed`/`FailureTarget` → failed, else still running (`None`).
fn job_outcome(status: Option<&JobStatus>) -> Option<RunOutcome> {
    let conditions = status?.conditions.as_ref()?;
    let holds = |types: &[&str]| {
        conditions.iter().any(|condition| {
            condition.status == "True" && types.contains(&condition.type_.as_str())
        })
    };
    if holds(&["Failed", "FailureTarget"]) {
        Some(RunOutcome::Failed)
    } else if holds(&["Complete", "SuccessCriteriaMet"]) {
        Some(RunOutcome::Succeeded)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(value: serde_json::Value) -> KubeJob {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_jobs_conditions_say_how_it_ended() {
        let cases = [
            (serde_json::json!([]), None),
            (
                serde_json::json!([{"type": "Complete", "status": "True"}]),
                Some(RunOutcome::Succeeded),
            ),
            (
                serde_json::json!([{"type": "SuccessCriteriaMet", "status": "True"}]),
                Some(RunOutcome::Succeeded),
            ),
            (
                serde_json::json!([{"type": "Failed", "status": "True"}]),
                Some(RunOutcome::Failed),
            ),
            (
                serde_json::json!([{"type": "FailureTarget", "status": "True"}]),
                Some(RunOutcome::Failed),
            ),
            (
                serde_json::json!([{"type": "Complete", "status": "False"}]),
                None,
            ),
            (
                serde_json::json!([{"type": "Suspended", "status": "True"}]),
                None,
            ),
        ];
        for (conditions, expected) in cases {
            let listed = Listed::new(job(
                serde_json::json!({"status": {"conditions": conditions}}),
            ));
            assert_eq!(job_state(&listed), (expected, false), "{conditions}");
        }
        let suspended = job(serde_json::json!({"spec": {"suspend": true, "template": {}}}));
        assert_eq!(job_state(&Listed::new(suspended)), (None, true));
    }

    #[test]
    fn ownership_comes_from_the_labels() {
        let membership = Membership {
            set_name: "toolforge-jobs".to_owned(),
            applyset_id: "applyset-ours-v1".to_owned(),
        };
        let object = |labels: serde_json::Value| {
            job(serde_json::json!({"metadata": {"name": "x", "labels": labels}}))
        };
        let cases = [
            (serde_json::json!({}), Owner::Foreign, false),
            (
                serde_json::json!({"app.kubernetes.io/managed-by": "someone"}),
                Owner::Foreign,
                false,
            ),
            (
                serde_json::json!({"app.kubernetes.io/managed-by": "toolforge-jobs-framework"}),
                Owner::Framework,
                false,
            ),
            (
                serde_json::json!({"app.kubernetes.io/managed-by": "toolforge-jobs-framework",
                    "jobs.toolforge.org/inventory": "toolforge-jobs", "applyset.kubernetes.io/part-of": "applyset-ours-v1"}),
                Owner::Framework,
                true,
            ),
            (
                serde_json::json!({"app.kubernetes.io/managed-by": "toolforge-jobs-framework",
                    "jobs.toolforge.org/inventory": "other"}),
                Owner::OtherInventory,
                false,
            ),
            (
                serde_json::json!({"app.kubernetes.io/managed-by": "toolforge-jobs-framework",
                    "applyset.kubernetes.io/part-of": "applyset-theirs-v1"}),
                Owner::OtherInventory,
                false,
            ),
        ];
        for (labels, owner, member) in cases {
            let state = LiveState {
                jobs: vec![object(labels.clone()).into()],
                ..LiveState::default()
            };
            let index = index(&state, &membership);
            let live = index["x"].get(ObjectKind::Job).unwrap();
            assert_eq!((live.owner, live.member), (owner, member), "{labels}");
        }
    }
}
