//! `render`: a validated job → the Kubernetes objects upstream's jobs-api would create for it, plus our own
//! annotations and labels (SPEC §4); and back: live objects → jobs ([`read_back`]).
//!
//! The second stage of the pipeline (config → render → plan → apply/wait). Everything here is pure: the caller
//! passes a [`RenderContext`] holding the tool, its home and uid, the image table, cluster defaults, the inventory
//! the objects belong to and the already-read trigger files. Nothing here talks to the cluster; the plan compares
//! what [`objects`] returns with what [`read_back`] makes of the live objects.
//!
//! Start at [`objects`]. The steps: [`canonical`] resolves defaults into a [`CanonicalJob`], whose hash and
//! [`fingerprint`] become annotations; `pod` and `workloads` build the objects from it, with the label sets of
//! [`label_sets`], and the stored record upstream's jobs-api lists by [`record`]. The inventory's model is [`crate::model::inventory`].

pub mod canonical;
pub mod command;
pub mod context;
pub mod fingerprint;
mod image;
pub mod label_sets;
pub mod limits;
pub mod pod;
pub mod quantities;
pub mod read_back;
pub mod record;
pub mod shell;
pub mod workloads;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::core::v1::Service;

use crate::config::Job;
use crate::model::{Kind, labels};

pub use canonical::{CanonicalJob, Difference, canonical, desired_hash};
pub use context::{Membership, RenderContext, UidLookup};
pub use fingerprint::{TriggerFile, TriggerFiles, fingerprint, trigger_digest};
pub use read_back::{LiveObject, LiveObjectError, ReadBack, ReadBackError, read_back};

/// The workload object of a job: one per job, named after it.
#[expect(
    clippy::large_enum_variant,
    reason = "one value per job, built once and moved; boxing would only add indirection"
)]
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Workload {
    Job(KubeJob),
    CronJob(CronJob),
    Deployment(Deployment),
}

/// Everything rendering produces for one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub workload: Workload,
    /// The `ClusterIP` Service of a continuous job with a port.
    pub service: Option<Service>,
    /// The stored record upstream's jobs-api lists (scheduled and continuous jobs; [`record`]).
    pub record: Option<serde_json::Value>,
    pub canonical: CanonicalJob,
    /// SHA-256 of the canonical job: equal hashes mean equal objects.
    pub desired_hash: String,
    /// The desired hash together with the triggers: a one-off runs again when this changes.
    pub fingerprint: String,
}

/// Why a job cannot be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("job `{job}`: No such image '{image}'")]
    UnknownImage { job: String, image: String },
    #[error("job `{job}`: `{field}` cannot be split into words")]
    Command {
        job: String,
        field: &'static str,
        #[source]
        source: shell::SplitError,
    },
    #[error("job `{job}`: the files of `trigger-files` pattern `{pattern}` were not read")]
    TriggerFilesNotRead { job: String, pattern: String },
}

/// Renders every job in `context`, in order, each paired with its objects; the first error wins.
pub fn all(
    jobs: impl IntoIterator<Item = Job>,
    context: &RenderContext,
) -> Result<Vec<(Job, Rendered)>, RenderError> {
    jobs.into_iter()
        .map(|job| {
            let rendered = objects(&job, context)?;
            Ok((job, rendered))
        })
        .collect()
}

/// Renders the objects of `job` in `context`.
pub fn objects(job: &Job, context: &RenderContext) -> Result<Rendered, RenderError> {
    let canonical = canonical(job, context)?;
    let desired_hash = desired_hash(&canonical);
    let mut files = Vec::new();
    for pattern in &job.trigger_files {
        let matched = context.trigger_files.matched_by(pattern).ok_or_else(|| {
            RenderError::TriggerFilesNotRead {
                job: job.name.clone(),
                pattern: pattern.clone(),
            }
        })?;
        files.extend(matched);
    }
    let triggers = trigger_digest(job.trigger.as_deref(), &files);
    let fingerprint = fingerprint(&desired_hash, triggers.as_deref());

    let metadata = workloads::Metadata::new(
        &canonical,
        context,
        BTreeMap::from([
            (labels::DESIRED_HASH.to_owned(), desired_hash.clone()),
            (labels::FINGERPRINT.to_owned(), fingerprint.clone()),
        ]),
    );
    let template_labels = || (metadata.labels.clone(), metadata.reduced_selector.clone());
    // A one-off's and a scheduled job's pods run once: never restarted by the kubelet.
    let run_once = || {
        pod::template(
            &canonical,
            context,
            "Never",
            template_labels(),
            BTreeMap::new(),
        )
    };
    let workload = match canonical.kind {
        Kind::OneOff => Workload::Job(workloads::job(&canonical, context, &metadata, run_once()?)),
        Kind::Scheduled => Workload::CronJob(workloads::cron_job(
            &canonical,
            context,
            &metadata,
            run_once()?,
        )),
        Kind::Continuous | Kind::Webservice => {
            // Only the triggers, not the whole fingerprint: scaling must not restart the pods, a new trigger must.
            let template_annotations = triggers
                .iter()
                .map(|digest| (labels::TRIGGERS.to_owned(), digest.clone()))
                .collect();
            Workload::Deployment(workloads::deployment(
                &canonical,
                context,
                &metadata,
                pod::template(
                    &canonical,
                    context,
                    "Always",
                    template_labels(),
                    template_annotations,
                )?,
            ))
        }
    };
    let service = workloads::service(&canonical, context, &metadata);
    let record = record::record(job, &canonical, context, &metadata);
    Ok(Rendered {
        workload,
        service,
        record,
        canonical,
        desired_hash,
        fingerprint,
    })
}
