//! The jobs API's JSON, as upstream's jobs-api writes and reads it (reference/jobs-api.md §2): the job objects of
//! `GET /jobs`, the request bodies `run` and `load` send, `messages`, and the replies of the other routes. Key
//! order is upstream's model order; the upstream CLI relies on the keys, not on their order.
//!
//! A job is always written with every key of its kind (`include_unset=true`, nulls included); [`sparse`] keeps
//! only the keys a user would have set, for `include_unset=false` (what `dump` asks for).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::Kind;
use crate::pipeline::live::LiveJob;
use crate::render::RenderContext;
use crate::render::canonical::{DEFAULT_CPU_TEXT, DEFAULT_MEMORY_TEXT};
use crate::status::{self, Short};

/// `messages`: shown by the upstream CLI, info on stdout and warnings on stderr.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Messages {
    pub info: Vec<String>,
    pub warning: Vec<String>,
    pub error: Vec<String>,
}

impl Messages {
    pub fn info(message: impl Into<String>) -> Self {
        Self {
            info: vec![message.into()],
            ..Self::default()
        }
    }
}

/// A reply that is only messages (delete, flush, restart).
#[derive(Debug, Serialize, JsonSchema)]
pub struct MessagesReply {
    pub messages: Messages,
}

/// `GET /jobs`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobList {
    /// Each a [`DefinedJob`], only the keys a user set with `include_unset=false`.
    #[schemars(with = "Vec<DefinedJob>")]
    pub jobs: Vec<serde_json::Value>,
    pub messages: Messages,
}

/// `GET /jobs/{name}` and `POST /jobs`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct JobReply {
    #[schemars(with = "DefinedJob")]
    pub job: serde_json::Value,
    pub messages: Messages,
}

/// `PATCH /jobs`: whether anything changed, and upstream's sentence saying what.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UpdateReply {
    pub job_changed: bool,
    pub messages: Messages,
}

/// An error: upstream's `{"error": [...]}` (always a list: the CLI joins it with newlines), and the same lines
/// under `messages.error`, with our detail beside them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorReply {
    pub error: Vec<String>,
    pub messages: ErrorMessages,
}

/// An error's messages.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorMessages {
    #[serde(flatten)]
    pub messages: Messages,
    /// Our words for each problem, naming the request key it is about, with hints (the CLI ignores them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
}

/// A job as upstream's `DefinedJob` writes it (reference/jobs-api.md §2.2).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DefinedJob {
    pub name: String,
    pub cmd: Option<String>,
    /// The image's short name, or the build-service image as written.
    pub imagename: String,
    pub filelog: bool,
    pub filelog_stdout: Option<String>,
    pub filelog_stderr: Option<String>,
    pub emails: String,
    pub mount: String,
    /// `0.5Gi`, `1.0Gi`: GiB as a Python float, three decimals at most.
    pub memory: String,
    /// `0.1`, `1.0`: cores as a Python float.
    pub cpu: String,
    pub image: String,
    /// `stable`, `deprecated`, … (build-service images: `stable`).
    pub image_state: String,
    /// The legacy status strings, for old clients.
    pub status_short: String,
    pub status_long: String,
    /// `one-off`, `scheduled`, `continuous` or `webservice`.
    pub job_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continuous: Option<bool>,
    /// Scheduled jobs: seconds, 0 for none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// One-off and scheduled jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The expression Kubernetes gets (`@daily` becomes a fixed time of day).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_actual: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// Continuous jobs: the port, or null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<Option<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_protocol: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_check: Option<Option<HealthCheck>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish: Option<String>,
    pub status: JobStatus,
}

/// A continuous job's health check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum HealthCheck {
    Script { script: String },
    Http { path: String },
}

/// Upstream's structured status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct JobStatus {
    pub short: Short,
    /// `5s`, `3h2m`, `2d3h`; null when the start is unknown.
    pub duration: Option<String>,
    /// Whether the running version is what was configured.
    pub up_to_date: bool,
    pub messages: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_schedule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_schedule: Option<String>,
}

impl DefinedJob {
    /// The job as upstream's API shows it, as of `now`.
    pub fn of(live: &LiveJob, context: &RenderContext, now: jiff::Timestamp) -> Self {
        let job = &live.read_back.job;
        let imagename = live
            .read_back
            .image_short_name
            .clone()
            .unwrap_or_else(|| live.read_back.live_image.clone());
        let image_state = live
            .read_back
            .image_short_name
            .as_deref()
            .and_then(|short| context.images.find(short))
            .map_or_else(
                || "stable".to_owned(),
                |(_, image)| image.state.name().to_owned(),
            );
        let long_running = matches!(job.kind, Kind::Continuous | Kind::Webservice);
        let health_check = match (&job.health_check_script, &job.health_check_http) {
            (Some(script), _) => Some(HealthCheck::Script {
                script: script.clone(),
            }),
            (None, Some(path)) => Some(HealthCheck::Http { path: path.clone() }),
            (None, None) => None,
        };
        let status = &live.status;
        let (status_short, status_long) = legacy_status(job.kind, status);
        Self {
            name: job.name.clone(),
            cmd: job.command.clone(),
            image: imagename.clone(),
            imagename,
            filelog: job.filelog,
            filelog_stdout: job.filelog_stdout.clone(),
            filelog_stderr: job.filelog_stderr.clone(),
            emails: job.emails.clone(),
            mount: job.mount.clone(),
            memory: job.mem.clone(),
            cpu: job.cpu.clone(),
            image_state,
            status_short,
            status_long,
            job_type: job.kind.name().to_owned(),
            continuous: (job.kind == Kind::Continuous).then_some(true),
            timeout: (job.kind == Kind::Scheduled).then(|| job.timeout.unwrap_or(0)),
            retry: matches!(job.kind, Kind::OneOff | Kind::Scheduled)
                .then(|| job.retry.unwrap_or(0)),
            schedule: job.schedule.clone(),
            schedule_actual: job.schedule_actual.clone(),
            replicas: long_running.then(|| job.replicas.unwrap_or(1)),
            port: long_running.then_some(job.port),
            port_protocol: long_running.then(|| job.port_protocol.clone()),
            health_check: long_running.then_some(health_check),
            publish: job.publish.clone(),
            status: JobStatus {
                short: status.short,
                duration: status.since.map(|since| status::duration(since, now)),
                up_to_date: true,
                messages: status.messages.clone(),
                previous_schedule: status.previous_schedule.map(|time| time.to_string()),
                next_schedule: status.next_schedule.map(|time| time.to_string()),
            },
        }
    }

    /// The JSON object; with `include_unset` false only the keys a user sets ([`sparse`]).
    pub fn to_value(&self, include_unset: bool, context: &RenderContext) -> serde_json::Value {
        // A struct of strings, numbers and options always serialises.
        let value = serde_json::to_value(self).expect("a job serialises");
        if include_unset {
            value
        } else {
            sparse(self, value, context)
        }
    }
}

/// Only what differs from the defaults, plus what identifies the job (`name`, `cmd`, `imagename`, `image`,
/// `job_type`, `continuous`): what upstream stores for a job defined with the fewest keys, so that `dump`
/// then `load` changes nothing. Status fields are dropped.
fn sparse(
    job: &DefinedJob,
    mut value: serde_json::Value,
    context: &RenderContext,
) -> serde_json::Value {
    let build_service = crate::config::image::parse_image_name(&job.image)
        .is_ok_and(|name| name.is_build_service());
    let default_log = |suffix: &str| format!("{}/{}.{suffix}", context.home, job.name);
    let drop = [
        ("status", true),
        ("status_short", true),
        ("status_long", true),
        ("image_state", true),
        ("schedule_actual", true),
        ("filelog", job.filelog != build_service),
        (
            "filelog_stdout",
            job.filelog_stdout.is_none() || job.filelog_stdout == Some(default_log("out")),
        ),
        (
            "filelog_stderr",
            job.filelog_stderr.is_none() || job.filelog_stderr == Some(default_log("err")),
        ),
        ("emails", job.emails == "none"),
        ("mount", (job.mount == "none") == build_service),
        ("memory", job.memory == DEFAULT_MEMORY_TEXT),
        ("cpu", job.cpu == DEFAULT_CPU_TEXT),
        ("timeout", job.timeout == Some(0)),
        ("retry", job.retry == Some(0)),
        ("replicas", job.replicas == Some(1)),
        ("port", job.port == Some(None)),
        (
            "port_protocol",
            job.port_protocol == Some(None) || job.port_protocol == Some(Some("tcp".to_owned())),
        ),
        ("health_check", job.health_check == Some(None)),
    ];
    if let Some(object) = value.as_object_mut() {
        for (key, unset) in drop {
            if unset {
                object.remove(key);
            }
        }
    }
    value
}

/// The legacy `status_short` and `status_long` strings.
fn legacy_status(kind: Kind, status: &status::Status) -> (String, String) {
    let short = match (status.short, kind) {
        (Short::Running, _) => "Running",
        (Short::Succeeded, _) => "Completed",
        (Short::Failed, _) => "Failed",
        (Short::Pending, Kind::Scheduled) => "Waiting for scheduled time",
        (Short::Pending, _) => "Not running",
        (Short::Unknown, _) => "Unknown",
    };
    let long = if status.messages.is_empty() {
        short.to_owned()
    } else {
        status.messages.join(". ")
    };
    (short.to_owned(), long)
}

/// The body of `POST /jobs` and `PATCH /jobs`: upstream's `NewOneOffJob | NewScheduledJob | NewContinuousJob`
/// (and the CLI's `webservice`). Unknown keys are refused, as upstream's models forbid extra keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewJob {
    pub name: String,
    pub imagename: String,
    #[serde(default)]
    pub cmd: Option<String>,
    /// `one-off`, `scheduled`, `continuous`, `webservice`; when absent, `schedule` or `continuous` decide.
    #[serde(default)]
    pub job_type: Option<JobType>,
    #[serde(default)]
    pub continuous: Option<bool>,
    #[serde(default)]
    pub schedule: Option<String>,
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub retry: Option<u64>,
    #[serde(default)]
    pub filelog: Option<bool>,
    #[serde(default)]
    pub filelog_stdout: Option<String>,
    #[serde(default)]
    pub filelog_stderr: Option<String>,
    #[serde(default)]
    pub memory: Option<String>,
    #[serde(default)]
    pub cpu: Option<String>,
    #[serde(default)]
    pub emails: Option<String>,
    #[serde(default)]
    pub mount: Option<String>,
    #[serde(default)]
    pub replicas: Option<u64>,
    /// The CLI sends a string (`"8080"`); numbers are taken too.
    #[serde(default)]
    pub port: Option<Port>,
    #[serde(default)]
    pub port_protocol: Option<String>,
    #[serde(default)]
    pub health_check: Option<HealthCheck>,
    #[serde(default)]
    pub publish: Option<String>,
}

/// The job types of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobType {
    OneOff,
    Scheduled,
    Continuous,
    Webservice,
}

/// A port as the CLI sends it (a string) or as a number.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Port {
    Number(u64),
    Text(String),
}

impl NewJob {
    /// The job's kind.
    pub fn kind(&self) -> Kind {
        match self.job_type {
            Some(JobType::Scheduled) => Kind::Scheduled,
            Some(JobType::Continuous) => Kind::Continuous,
            Some(JobType::Webservice) => Kind::Webservice,
            None if self.schedule.is_some() => Kind::Scheduled,
            None if self.continuous == Some(true) => Kind::Continuous,
            Some(JobType::OneOff) | None => Kind::OneOff,
        }
    }
}

/// `GET /images`: stable images, sorted by short name; `image` is the full reference with its tag.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImageList {
    pub images: Vec<Image>,
    pub messages: Messages,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Image {
    pub shortname: String,
    pub image: String,
}

/// `GET /quotas`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct QuotaReply {
    pub quota: Quota,
    pub messages: Messages,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Quota {
    pub categories: Vec<QuotaCategory>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct QuotaCategory {
    pub name: String,
    pub items: Vec<QuotaItem>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct QuotaItem {
    pub name: String,
    pub limit: Option<String>,
    /// Null for the per-job limits.
    pub used: Option<String>,
}

/// `GET /v1/healthz`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health {
    pub health: HealthStatus,
    pub messages: Messages,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HealthStatus {
    pub status: String,
    pub message: String,
}
