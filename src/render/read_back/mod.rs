//! Read-back: a live Job, CronJob or Deployment → the [`CanonicalJob`] it runs (reference/toolforge.md §4).
//!
//! The result has the same type rendering starts from, so the plan can compare desired and live field by field,
//! explain drift ("`mem` is 1.0Gi, the file says 2.0Gi") and decide whether an object upstream created may be
//! adopted without a restart. Every object format upstream has written is understood: current v2 objects, legacy
//! v1 objects (old command formats, `/dev/null` logs, full-label Deployment selectors) and objects without our
//! annotations. Quantities are compared by value: the server rewrites them in canonical form (`0.5Gi` → `512Mi`).
//!
//! Where the live object says nothing, the read-back assumes what was in effect: a missing
//! `toolforge.org/mount-storage` label means `all` (the volume-admission webhook's default), a missing
//! `backoffLimit` Kubernetes' default 6, missing resources upstream's defaults.

mod command;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob, JobSpec};
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec, Probe};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::config::image::parse_image_name;
use crate::config::quantity::Quantity;
use crate::model::Kind;
use crate::model::labels;
use crate::render::canonical::{
    CanonicalJob, DEFAULT_CPU, DEFAULT_CPU_TEXT, DEFAULT_MEMORY, LAUNCHER,
};
use crate::render::context::RenderContext;
use crate::render::image;
use crate::render::quantities::{Memory, cpu_text};
use crate::render::shell;

use command::CommandFormat;

/// Kubernetes' `backoffLimit` when a Job does not set it.
const KUBERNETES_DEFAULT_BACKOFF_LIMIT: u8 = 6;

/// A live workload object, as listed from the cluster.
#[expect(
    clippy::large_enum_variant,
    reason = "one value per listed object, moved around, never copied in bulk"
)]
#[derive(Debug, Clone, PartialEq)]
pub enum LiveObject {
    Job(KubeJob),
    CronJob(CronJob),
    Deployment(Deployment),
}

impl LiveObject {
    /// Parses a Job, CronJob or Deployment from its JSON (as listed by the API or written in a fixture).
    pub fn from_json(value: serde_json::Value) -> Result<Self, LiveObjectError> {
        let kind = value
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let object = match kind.as_str() {
            "Job" => serde_json::from_value(value).map(Self::Job),
            "CronJob" => serde_json::from_value(value).map(Self::CronJob),
            "Deployment" => serde_json::from_value(value).map(Self::Deployment),
            _ => return Err(LiveObjectError::NotAWorkload { kind }),
        };
        object.map_err(|source| LiveObjectError::Invalid { kind, source })
    }
}

/// Why a JSON value is not a live workload object.
#[derive(Debug, thiserror::Error)]
pub enum LiveObjectError {
    #[error("`{kind}` is not a Job, CronJob or Deployment")]
    NotAWorkload { kind: String },
    #[error("invalid {kind} object")]
    Invalid {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
}

/// What a live object says about who manages it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ownership {
    /// `app.kubernetes.io/managed-by`; `toolforge-jobs-framework` for upstream's objects and ours.
    pub managed_by: Option<String>,
    /// `app.kubernetes.io/created-by`: the tool.
    pub created_by: Option<String>,
    /// `app.kubernetes.io/version`; upstream reads a missing label as `1`.
    pub format_version: Option<String>,
    /// Our `jobs.toolforge.org/desired-hash` annotation: present only on objects we wrote.
    pub desired_hash: Option<String>,
    pub fingerprint: Option<String>,
    /// Our `jobs.toolforge.org/inventory` label: the set the object belongs to.
    pub inventory: Option<String>,
    /// `applyset.kubernetes.io/part-of`.
    pub applyset_part_of: Option<String>,
}

impl Ownership {
    /// Whether the object carries the jobs framework's managed-by label (ours or upstream's).
    pub fn is_jobs_framework(&self) -> bool {
        self.managed_by.as_deref() == Some(labels::MANAGED_BY_VALUE)
    }
}

/// A live object read back into a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBack {
    pub job: CanonicalJob,
    pub ownership: Ownership,
    /// The image's short name in the image table, when it is a known pre-built image.
    pub image_short_name: Option<String>,
    /// The container image exactly as the object names it; `job.image` names a known pre-built image by the
    /// table's current reference instead.
    pub live_image: String,
    /// A Deployment whose selector has more than the reduced labels (objects before T409007): its selector
    /// differs from ours and is immutable, so updating it means replacing it.
    pub legacy_selector: bool,
}

/// Why a live object cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadBackError {
    #[error("{kind} `{name}` has no {missing}")]
    Incomplete {
        kind: &'static str,
        name: String,
        missing: &'static str,
    },
}

/// Reads `object` back into the job it runs. `context` supplies the home (for relative log paths), the image
/// table and the default CPU limit.
pub fn read_back(object: &LiveObject, context: &RenderContext) -> Result<ReadBack, ReadBackError> {
    let (kind_name, metadata) = match object {
        LiveObject::Job(job) => ("Job", &job.metadata),
        LiveObject::CronJob(cron_job) => ("CronJob", &cron_job.metadata),
        LiveObject::Deployment(deployment) => ("Deployment", &deployment.metadata),
    };
    let name = metadata.name.clone().unwrap_or_default();
    let incomplete = |missing| ReadBackError::Incomplete {
        kind: kind_name,
        name: name.clone(),
        missing,
    };
    let (kind, job_spec, template) = workload_parts(object).map_err(incomplete)?;
    let container = first_container(template).ok_or_else(|| incomplete("container"))?;
    let live_image = container.image.clone().ok_or_else(|| incomplete("image"))?;
    let image = image::read_back(&live_image, &context.images);
    let build_service = parse_image_name(&live_image).is_ok_and(|name| name.is_build_service());
    let label = |key: &str| {
        metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(key))
            .cloned()
    };
    let format_version = label(labels::VERSION);
    let words: Vec<String> = container
        .command
        .iter()
        .flatten()
        .chain(container.args.iter().flatten())
        .cloned()
        .collect();
    let home = container.working_dir.as_deref().unwrap_or(&context.home);
    let parsed = command::parse(
        &words,
        CommandFormat {
            filelog_label: label(labels::FILELOG).as_deref() == Some("yes")
                || label(labels::COMMAND_NEW_FORMAT).as_deref() == Some("yes"),
            legacy: format_version
                .as_deref()
                .is_none_or(|version| version == "1"),
            build_service,
        },
        home,
    );
    let (cpu, cpu_limit) = cpu(container, context);
    let (stdout, stderr) = parsed.logs.clone().unzip();

    let mut job = CanonicalJob {
        name: name.clone(),
        kind,
        command: parsed.command,
        image: image.reference,
        schedule: None,
        schedule_actual: None,
        timezone: None,
        timeout: None,
        retry: job_spec.map(retry),
        emails: label(labels::EMAILS).unwrap_or_else(|| "none".to_owned()),
        mem: memory(container),
        cpu,
        cpu_limit,
        filelog: parsed.logs.is_some(),
        filelog_stdout: stdout,
        filelog_stderr: stderr,
        mount: label(labels::MOUNT_STORAGE).unwrap_or_else(|| "all".to_owned()),
        port: None,
        port_protocol: None,
        replicas: None,
        health_check_script: None,
        health_check_http: None,
        publish: None,
    };
    let legacy_selector = read_kind_settings(object, container, job_spec, &mut job);
    Ok(ReadBack {
        image_short_name: image.short_name,
        live_image,
        ownership: Ownership {
            managed_by: label(labels::MANAGED_BY),
            created_by: label(labels::CREATED_BY),
            format_version,
            desired_hash: annotation(metadata, labels::DESIRED_HASH).map(str::to_owned),
            fingerprint: annotation(metadata, labels::FINGERPRINT).map(str::to_owned),
            inventory: label(labels::INVENTORY),
            applyset_part_of: label(labels::APPLYSET_PART_OF),
        },
        job,
        legacy_selector,
    })
}

/// Reads the settings that exist only for the object's kind into `job`; returns whether a Deployment has a
/// legacy full-label selector.
fn read_kind_settings(
    object: &LiveObject,
    container: &Container,
    job_spec: Option<&JobSpec>,
    job: &mut CanonicalJob,
) -> bool {
    match object {
        LiveObject::Job(_) => false,
        LiveObject::CronJob(cron_job) => {
            let spec = cron_job.spec.as_ref();
            let actual = spec.map(|spec| spec.schedule.clone());
            job.schedule = annotation(&cron_job.metadata, labels::CRON_EXPRESSION)
                .map(str::to_owned)
                .or_else(|| actual.clone());
            job.schedule_actual = actual;
            job.timezone = spec.and_then(|spec| spec.time_zone.clone());
            job.timeout = job_spec
                .and_then(|spec| spec.active_deadline_seconds)
                .and_then(|seconds| u64::try_from(seconds).ok())
                .filter(|seconds| *seconds > 0);
            false
        }
        LiveObject::Deployment(deployment) => {
            let spec = deployment.spec.as_ref();
            job.replicas = Some(
                spec.and_then(|spec| spec.replicas)
                    .and_then(|replicas| u32::try_from(replicas).ok())
                    .unwrap_or(1),
            );
            if let Some(port) = container.ports.iter().flatten().next() {
                job.port = u16::try_from(port.container_port).ok();
                job.port_protocol = Some(
                    port.protocol
                        .as_deref()
                        .unwrap_or("TCP")
                        .to_ascii_lowercase(),
                );
            }
            read_health_check(container.startup_probe.as_ref(), job);
            let created_by = deployment
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(labels::CREATED_BY))
                .map_or("", String::as_str);
            let reduced = labels::deployment_selector(created_by, &job.name);
            spec.and_then(|spec| spec.selector.match_labels.as_ref()) != Some(&reduced)
        }
    }
}

/// The job's kind, its Job spec (not for Deployments) and its pod template; or what is missing.
fn workload_parts(
    object: &LiveObject,
) -> Result<(Kind, Option<&JobSpec>, &PodTemplateSpec), &'static str> {
    match object {
        LiveObject::Job(job) => {
            let spec = job.spec.as_ref().ok_or("spec")?;
            Ok((Kind::OneOff, Some(spec), &spec.template))
        }
        LiveObject::CronJob(cron_job) => {
            let spec = cron_job
                .spec
                .as_ref()
                .and_then(|spec| spec.job_template.spec.as_ref())
                .ok_or("job template")?;
            Ok((Kind::Scheduled, Some(spec), &spec.template))
        }
        LiveObject::Deployment(deployment) => {
            let spec = deployment.spec.as_ref().ok_or("spec")?;
            let webservice =
                annotation(&deployment.metadata, labels::JOB_TYPE) == Some(labels::WEBSERVICE);
            let kind = if webservice {
                Kind::Webservice
            } else {
                Kind::Continuous
            };
            Ok((kind, None, &spec.template))
        }
    }
}

fn annotation<'a>(metadata: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    metadata
        .annotations
        .as_ref()
        .and_then(|annotations: &BTreeMap<String, String>| annotations.get(key))
        .map(String::as_str)
}

fn first_container(template: &PodTemplateSpec) -> Option<&Container> {
    template.spec.as_ref()?.containers.first()
}

fn retry(spec: &JobSpec) -> u8 {
    spec.backoff_limit
        .and_then(|limit| u8::try_from(limit).ok())
        .unwrap_or(KUBERNETES_DEFAULT_BACKOFF_LIMIT)
}

/// `mem` from the memory limit, in the canonical job's normalised form.
fn memory(container: &Container) -> String {
    let limit = resource(container, |resources| resources.limits.as_ref(), "memory");
    let quantity = limit.unwrap_or_else(|| parse_default(DEFAULT_MEMORY));
    Memory::of(&quantity).limit_text()
}

/// `cpu` (the request) and its limit, normalised; a missing value takes upstream's rule for it.
fn cpu(container: &Container, context: &RenderContext) -> (String, String) {
    let request = resource(container, |resources| resources.requests.as_ref(), "cpu");
    let limit = resource(container, |resources| resources.limits.as_ref(), "cpu");
    let cpu = request
        .as_ref()
        .or(limit.as_ref())
        .map_or_else(|| cpu_text(&parse_default(DEFAULT_CPU)), cpu_text);
    let limit = limit.as_ref().map_or_else(
        || {
            if cpu == DEFAULT_CPU_TEXT {
                cpu_text(&context.default_cpu_limit)
            } else {
                cpu.clone()
            }
        },
        cpu_text,
    );
    (cpu, limit)
}

type QuantityMap = BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;

fn resource(
    container: &Container,
    select: impl Fn(&k8s_openapi::api::core::v1::ResourceRequirements) -> Option<&QuantityMap>,
    name: &str,
) -> Option<Quantity> {
    let text = &select(container.resources.as_ref()?)?.get(name)?.0;
    Quantity::parse(text).ok()
}

fn parse_default(text: &str) -> Quantity {
    // Only called with the default constants, which the canonical module's tests parse.
    Quantity::parse(text).expect("default quantities are valid")
}

/// The health check from the startup probe; a TCP probe is the automatic one and means "no health check".
fn read_health_check(probe: Option<&Probe>, job: &mut CanonicalJob) {
    let Some(probe) = probe else { return };
    if let Some(words) = probe.exec.as_ref().and_then(|exec| exec.command.as_ref()) {
        job.health_check_script = Some(match words.as_slice() {
            [first, rest @ ..] if first == LAUNCHER => shell::join(rest),
            [shell, dash_c, script] if shell == "/bin/sh" && dash_c == "-c" => script.clone(),
            _ => shell::join(words),
        });
    } else if let Some(http) = &probe.http_get {
        job.health_check_http = Some(http.path.clone().unwrap_or_else(|| "/".to_owned()));
    }
}
