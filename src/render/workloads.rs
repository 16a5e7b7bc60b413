//! The top-level objects of each kind (reference/toolforge.md §3.6, §3.7): Job, CronJob, Deployment and Service.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{PodTemplateSpec, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::model::Kind;
use crate::model::labels;
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

/// What every top-level object of a job carries besides its labels and kind-specific annotations.
pub(crate) struct Metadata {
    /// Our hash and fingerprint annotations.
    pub annotations: BTreeMap<String, String>,
}

impl Metadata {
    fn object(
        &self,
        job: &CanonicalJob,
        context: &RenderContext,
        labels: BTreeMap<String, String>,
        extra: &[(&str, &str)],
    ) -> ObjectMeta {
        let mut annotations = self.annotations.clone();
        for (key, value) in extra {
            annotations.insert((*key).to_owned(), (*value).to_owned());
        }
        ObjectMeta {
            name: Some(job.name.clone()),
            namespace: Some(context.namespace.clone()),
            labels: Some(label_sets::with_membership(labels, context)),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        }
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
        metadata: metadata.object(
            job,
            context,
            label_sets::workload(context.tool.as_str(), job),
            &[],
        ),
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
        metadata: metadata.object(
            job,
            context,
            label_sets::workload(context.tool.as_str(), job),
            &[(labels::CRON_EXPRESSION, expression)],
        ),
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
        metadata: metadata.object(
            job,
            context,
            label_sets::workload(context.tool.as_str(), job),
            type_annotation,
        ),
        spec: Some(DeploymentSpec {
            replicas: Some(i32::try_from(replicas).unwrap_or(i32::MAX)),
            progress_deadline_seconds: Some(PROGRESS_DEADLINE_SECONDS),
            selector: LabelSelector {
                match_labels: Some(labels::deployment_selector(
                    context.tool.as_str(),
                    &job.name,
                )),
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
    Some(Service {
        metadata: metadata.object(job, context, labels.clone(), &[]),
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
