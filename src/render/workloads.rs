//! The top-level objects of each kind (reference/toolforge.md §3.6, §3.7): Job, CronJob, Deployment and Service.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{PodTemplateSpec, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::model::Kind;
use crate::model::labels::{self, Labels};
use crate::render::canonical::CanonicalJob;
use crate::render::context::RenderContext;
use crate::render::label_sets;
use crate::render::pod;

/// Finished Jobs are deleted this many seconds after they finish.
pub const TTL_SECONDS_AFTER_FINISHED: i32 = 30;
/// A CronJob run that cannot start within this many seconds of its time is skipped.
pub const STARTING_DEADLINE_SECONDS: i64 = 30;
/// A rollout without progress for this many seconds is reported as failed (`ProgressDeadlineExceeded`).
pub const PROGRESS_DEADLINE_SECONDS: i32 = 600;

/// What every top-level object of a job carries besides its kind-specific annotations, built once per job: each
/// label set goes into several objects, and building it again for each costs more than cloning it.
pub(crate) struct Metadata {
    /// Our hash and fingerprint annotations.
    pub annotations: BTreeMap<String, String>,
    /// Upstream's labels of the workload and its pod template ([`label_sets::workload`]).
    pub labels: Labels,
    /// `labels` with our membership labels: the workload's and the stored record's.
    pub member_labels: Labels,
    /// The reduced Deployment selector, which the pod topology spread selects too.
    pub reduced_selector: Labels,
}

impl Metadata {
    pub(crate) fn new(
        job: &CanonicalJob,
        context: &RenderContext,
        annotations: BTreeMap<String, String>,
    ) -> Self {
        let labels = label_sets::workload(context.tool.as_str(), job);
        Self {
            annotations,
            member_labels: label_sets::with_membership(labels.clone(), context),
            labels,
            reduced_selector: labels::deployment_selector(context.tool.as_str(), &job.name),
        }
    }

    fn object(
        &self,
        job: &CanonicalJob,
        context: &RenderContext,
        labels: Labels,
        extra: &[(&str, &str)],
    ) -> ObjectMeta {
        let mut annotations = self.annotations.clone();
        for (key, value) in extra {
            annotations.insert((*key).to_owned(), (*value).to_owned());
        }
        ObjectMeta {
            name: Some(job.name.clone()),
            namespace: Some(context.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        }
    }

    /// The metadata of the job's workload.
    fn workload(
        &self,
        job: &CanonicalJob,
        context: &RenderContext,
        extra: &[(&str, &str)],
    ) -> ObjectMeta {
        self.object(job, context, self.member_labels.clone(), extra)
    }
}

/// The Job of a one-off job.
pub(crate) fn job(
    job: &CanonicalJob,
    context: &RenderContext,
    metadata: &Metadata,
    template: PodTemplateSpec,
) -> Job {
    Job {
        metadata: metadata.workload(job, context, &[]),
        spec: Some(job_spec(job, template)),
        ..Job::default()
    }
}

/// The CronJob of a scheduled job; its Jobs get the same spec as a one-off's.
pub(crate) fn cron_job(
    job: &CanonicalJob,
    context: &RenderContext,
    metadata: &Metadata,
    template: PodTemplateSpec,
) -> CronJob {
    let expression = job.schedule.as_deref().unwrap_or_default();
    CronJob {
        metadata: metadata.workload(job, context, &[(labels::CRON_EXPRESSION, expression)]),
        spec: Some(CronJobSpec {
            schedule: job.schedule_actual.clone().unwrap_or_default(),
            time_zone: job.timezone.clone(),
            concurrency_policy: Some("Forbid".to_owned()),
            starting_deadline_seconds: Some(STARTING_DEADLINE_SECONDS),
            successful_jobs_history_limit: Some(1),
            failed_jobs_history_limit: Some(1),
            job_template: JobTemplateSpec {
                // No metadata, as upstream writes it: a Job created without labels takes its pod template's
                // (Kubernetes' Job defaulting), so the CronJob's Jobs still carry the job's labels.
                metadata: None,
                spec: Some(job_spec(job, template)),
            },
            ..CronJobSpec::default()
        }),
        ..CronJob::default()
    }
}

fn job_spec(job: &CanonicalJob, template: PodTemplateSpec) -> JobSpec {
    JobSpec {
        backoff_limit: Some(i32::from(job.retry.unwrap_or(0))),
        ttl_seconds_after_finished: Some(TTL_SECONDS_AFTER_FINISHED),
        // Clamped rather than wrapped: a timeout beyond i64 seconds is "never" either way.
        active_deadline_seconds: job
            .timeout
            .map(|seconds| i64::try_from(seconds).unwrap_or(i64::MAX)),
        template,
        ..JobSpec::default()
    }
}

/// The Deployment of a continuous job or webservice.
pub(crate) fn deployment(
    job: &CanonicalJob,
    context: &RenderContext,
    metadata: &Metadata,
    template: PodTemplateSpec,
) -> Deployment {
    let replicas = job.replicas.unwrap_or(1);
    let type_annotation: &[(&str, &str)] = if job.kind == Kind::Webservice {
        &[(labels::JOB_TYPE, labels::WEBSERVICE)]
    } else {
        &[]
    };
    Deployment {
        metadata: metadata.workload(job, context, type_annotation),
        spec: Some(DeploymentSpec {
            replicas: Some(i32::try_from(replicas).unwrap_or(i32::MAX)),
            progress_deadline_seconds: Some(PROGRESS_DEADLINE_SECONDS),
            selector: LabelSelector {
                match_labels: Some(metadata.reduced_selector.clone()),
                ..LabelSelector::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some(
                    if replicas == 1 {
                        "Recreate"
                    } else {
                        "RollingUpdate"
                    }
                    .to_owned(),
                ),
                ..DeploymentStrategy::default()
            }),
            template,
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

/// The `ClusterIP` Service of a job with a port.
pub(crate) fn service(
    job: &CanonicalJob,
    context: &RenderContext,
    metadata: &Metadata,
) -> Option<Service> {
    let port = i32::from(job.port?);
    let labels = label_sets::service(context.tool.as_str(), job);
    let member_labels = label_sets::with_membership(labels.clone(), context);
    Some(Service {
        metadata: metadata.object(job, context, member_labels, &[]),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(labels),
            ports: Some(vec![ServicePort {
                port,
                target_port: Some(IntOrString::Int(port)),
                protocol: Some(pod::protocol(job).to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}
