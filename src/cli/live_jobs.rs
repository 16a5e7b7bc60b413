//! What `list`, `show`, `logs`, `delete`, `flush`, `restart`, `run` and `dump` share: connecting as the global
//! flags say and reading the tool's jobs as they run ([`crate::pipeline::live`]), the errors the command line
//! gives, and the upstream fields the tables print.

use std::path::PathBuf;
use std::sync::Arc;

use jiff::Timestamp;
use serde::Serialize;

use crate::apply::Applied;
use crate::cli::{Error, GlobalArgs, jobs_file, tool_name};
use crate::cluster::{self, Connection, Snapshot};
use crate::config::image::ImageState;
use crate::model::ToolName;
use crate::output::progress::LogProgress;
use crate::pipeline::imperative::InventoryPlan;
use crate::pipeline::live;
use crate::render::context::DEFAULT_SET_NAME;
use crate::render::{CanonicalJob, RenderContext};
use crate::status::StatusJson;

pub(crate) use crate::pipeline::live::{LiveJob, LiveNamespace};

/// The tool, a connection, and the tool's namespace.
async fn connect(global: &GlobalArgs) -> Result<(ToolName, Connection, String), Error> {
    let tool = tool_name(global)?;
    let connection = crate::cli::connection::connect(global).await?;
    let namespace = tool.namespace();
    Ok((tool, connection, namespace))
}

/// Connects and reads what `diff` reads, without pods and events (`images`, `quota`, `status`).
pub(crate) async fn snapshot(global: &GlobalArgs) -> Result<(Connection, String, Snapshot), Error> {
    let (_, connection, namespace) = connect(global).await?;
    let snapshot = Box::pin(cluster::read(
        &connection.client,
        &namespace,
        DEFAULT_SET_NAME,
    ))
    .await?;
    Ok((connection, namespace, snapshot))
}

/// Connects and reads the tool's namespace ([`live::read`]).
pub(crate) async fn read(global: &GlobalArgs) -> Result<LiveNamespace, Error> {
    let (tool, connection, _) = connect(global).await?;
    // On the local cluster without a tools directory, the home is the jobs file's directory, as for `diff`.
    let directory = jobs_file::locate(global).map_or_else(
        |_| PathBuf::from("."),
        |path| crate::pipeline::source::directory_of(&path),
    );
    let directory = std::path::absolute(&directory).unwrap_or(directory);
    Ok(live::read(connection, &tool, &directory).await?)
}

/// Carries out an imperative command's plans under the tool's lock, its progress in the log (`-v`).
pub(crate) async fn carry_out(
    live: &LiveNamespace,
    purpose: &str,
    plans: Vec<InventoryPlan>,
) -> Result<Vec<Applied>, Error> {
    let progress = Arc::new(LogProgress {
        failures_as_errors: false,
    });
    Ok(live.carry_out(purpose, plans, progress, None).await?)
}

/// The job `name`, or the error upstream gives: "Job 'NAME' does not exist".
pub(crate) fn job(live: &LiveNamespace, name: &str) -> Result<LiveJob, Error> {
    live.job(name).ok_or_else(|| Error::NoSuchJob {
        name: name.to_owned(),
    })
}

/// The upstream fields of `list -o long` and `show`, in upstream's order, formatted as upstream formats them.
pub(crate) fn long_fields(
    live: &LiveJob,
    context: &RenderContext,
    now: Timestamp,
) -> Vec<(&'static str, String)> {
    let job = &live.read_back.job;
    let or_na = |value: Option<String>| value.unwrap_or_else(|| "N/A".to_owned());
    let yes_no = |yes: bool| if yes { "yes" } else { "no" }.to_owned();
    vec![
        ("Job name:", job.name.clone()),
        ("Command:", or_na(job.command.clone())),
        ("Job type:", job_type(job)),
        ("Image:", image(live, context)),
        (
            "Port:",
            job.port.map_or_else(
                || "none".to_owned(),
                |port| format!("{port}/{}", job.port_protocol.as_deref().unwrap_or("tcp")),
            ),
        ),
        ("Public:", yes_no(job.publish.is_some())),
        ("File log:", yes_no(job.filelog)),
        ("Output log:", or_na(job.filelog_stdout.clone())),
        ("Error log:", or_na(job.filelog_stderr.clone())),
        ("Emails:", job.emails.clone()),
        ("Resources:", resources(job)),
        (
            "Replicas:",
            or_na(job.replicas.map(|replicas| replicas.to_string())),
        ),
        ("Mounts:", job.mount.clone()),
        (
            "Retry:",
            job.retry
                .filter(|retry| *retry > 0)
                .map_or_else(|| "no".to_owned(), |retry| format!("yes: {retry} time(s)")),
        ),
        (
            "Timeout:",
            job.timeout
                .map_or_else(|| "no".to_owned(), |timeout| format!("yes: {timeout}s")),
        ),
        ("Health check:", health_check(job)),
        ("Status:", live.status.summary(now)),
    ]
}

/// The image's short name (or URL), with its state when it is not stable: `python3.9 (deprecated)`.
pub(crate) fn image(live: &LiveJob, context: &RenderContext) -> String {
    let Some(short) = &live.read_back.image_short_name else {
        return live.read_back.live_image.clone();
    };
    match context.images.find(short).map(|(_, image)| &image.state) {
        Some(ImageState::Deprecated) => format!("{short} (deprecated)"),
        Some(ImageState::Other(state)) => format!("{short} ({state})"),
        Some(ImageState::Stable) | None => short.clone(),
    }
}

/// The JSON form: the canonical job, the image as `show` names it, and the status.
pub(crate) fn to_json<'a>(
    live: &'a LiveJob,
    context: &RenderContext,
    now: Timestamp,
) -> JobJson<'a> {
    JobJson {
        job: &live.read_back.job,
        image_name: image(live, context),
        status: live.status.to_json(now),
    }
}

/// A job in `-o json` output.
#[derive(Serialize)]
pub(crate) struct JobJson<'a> {
    #[serde(flatten)]
    job: &'a CanonicalJob,
    /// The image's short name with its state, as the tables print it.
    image_name: String,
    status: StatusJson,
}

/// `one-off`, `scheduled: <schedule as written>`, `continuous`, `webservice`.
pub(crate) fn job_type(job: &CanonicalJob) -> String {
    match &job.schedule {
        Some(schedule) => format!("{}: {schedule}", job.kind.name()),
        None => job.kind.name().to_owned(),
    }
}

fn resources(job: &CanonicalJob) -> String {
    if job.mem == "0.5Gi" && job.cpu == "0.1" {
        "default".to_owned()
    } else {
        format!("mem: {}, cpu: {}", job.mem, job.cpu)
    }
}

fn health_check(job: &CanonicalJob) -> String {
    match (&job.health_check_script, &job.health_check_http) {
        (Some(script), _) => format!("script: {script}"),
        (None, Some(path)) => format!("http: {path}"),
        (None, None) => "none".to_owned(),
    }
}
