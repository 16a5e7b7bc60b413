//! What `list`, `show`, `logs`, `delete`, `flush`, `restart`, `run` and `dump` share: connecting as the global
//! flags say and reading the tool's jobs as they run ([`crate::pipeline::live`]), the errors the command line
//! gives, and the upstream fields the tables print.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use jiff::Timestamp;
use serde::Serialize;

use crate::apply::Applied;
use crate::cli::table::wrap;
use crate::cli::{Error, GlobalArgs, jobs_file, tool_name};
use crate::cluster::{self, Connection, Snapshot};
use crate::config::image::ImageState;
use crate::model::{Kind, ToolName};
use crate::output::progress::LogProgress;
use crate::pipeline::imperative::InventoryPlan;
use crate::pipeline::live;
use crate::render::canonical::{DEFAULT_CPU_TEXT, DEFAULT_MEMORY_TEXT};
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

/// Where upstream's CLI says a published job is (its default `jobs.publish_url_template`).
fn public_url(tool: &str, path: &str) -> String {
    format!("https://{tool}.toolforge.org{path}")
}

/// The upstream fields of `list -o long` and `show`, in upstream's order, formatted as upstream's CLI formats
/// the jobs API's answer: `N/A` for a field the job's type does not have (the API leaves it out), an empty cell
/// for one it has but is unset (the API sends `null`).
pub(crate) fn long_fields(
    live: &LiveJob,
    context: &RenderContext,
    now: Timestamp,
) -> Vec<(&'static str, String)> {
    let job = &live.read_back.job;
    let na = || "N/A".to_owned();
    let yes_no = |yes: bool| if yes { "yes" } else { "no" }.to_owned();
    let service = matches!(job.kind, Kind::Continuous | Kind::Webservice);
    let port = job.port.map_or_else(
        || "none".to_owned(),
        |port| match (&job.kind, &job.port_protocol) {
            // Upstream's webservice jobs have no protocol.
            (Kind::Continuous, Some(protocol)) => format!("{port}/{protocol}"),
            _ => port.to_string(),
        },
    );
    let public = match (&job.kind, &job.publish) {
        (Kind::Webservice, _) => public_url(context.tool.as_str(), "/"),
        (Kind::Continuous, Some(path)) if !path.is_empty() => {
            public_url(context.tool.as_str(), path)
        }
        _ => na(),
    };
    let retry = match job.retry {
        _ if service => na(),
        Some(retry) if retry > 0 => format!("yes: {retry} time(s)"),
        _ => "no".to_owned(),
    };
    let timeout = match (&job.kind, job.timeout) {
        (Kind::Scheduled, Some(timeout)) if timeout > 0 => format!("yes: {timeout}s"),
        (Kind::Scheduled, _) => "no".to_owned(),
        _ => na(),
    };
    vec![
        ("Job name:", job.name.clone()),
        ("Command:", job.command.clone().unwrap_or_default()),
        ("Job type:", job_type(job)),
        ("Image:", image(live, context)),
        ("Port:", if service { port } else { na() }),
        ("Public:", public),
        ("File log:", yes_no(job.filelog)),
        (
            "Output log:",
            job.filelog_stdout.clone().unwrap_or_default(),
        ),
        ("Error log:", job.filelog_stderr.clone().unwrap_or_default()),
        ("Emails:", job.emails.clone()),
        ("Resources:", resources(job)),
        (
            "Replicas:",
            if service {
                job.replicas.unwrap_or(1).to_string()
            } else {
                na()
            },
        ),
        ("Mounts:", job.mount.clone()),
        ("Retry:", retry),
        ("Timeout:", timeout),
        (
            "Health check:",
            if service { health_check(job) } else { na() },
        ),
        ("Status:", live.status.summary(now)),
    ]
}

/// `show`'s "Hints:": the status messages joined with `. ` and wrapped at 70 columns; for a scheduled job the
/// previous and next run appended (`Previous: …. Next: …`, each when known) and the whole wrapped again, as
/// upstream does; `N/A` when there is nothing to say.
pub(crate) fn hints(live: &LiveJob) -> String {
    let status = &live.status;
    let mut hint = if status.messages.is_empty() {
        String::new()
    } else {
        wrap::fill(&status.messages.join(". "))
    };
    if matches!(live.read_back.job.kind, Kind::Scheduled) {
        for (label, time) in [
            ("Previous", status.previous_schedule),
            ("Next", status.next_schedule),
        ] {
            let Some(time) = time else { continue };
            if !hint.is_empty() {
                hint.push_str(". ");
            }
            // Writing to a String cannot fail.
            let _ = write!(hint, "{label}: {time}");
        }
        if !hint.is_empty() {
            hint = wrap::fill(&hint);
        }
    }
    if status.messages.is_empty() && hint.is_empty() {
        "N/A".to_owned()
    } else {
        hint
    }
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

/// `default`, or `mem: X, cpu: Y` with `default` for the side that is.
fn resources(job: &CanonicalJob) -> String {
    let or_default = |value: &str, default: &str| {
        if value == default {
            "default".to_owned()
        } else {
            value.to_owned()
        }
    };
    let (mem, cpu) = (
        or_default(&job.mem, DEFAULT_MEMORY_TEXT),
        or_default(&job.cpu, DEFAULT_CPU_TEXT),
    );
    if mem == "default" && cpu == "default" {
        mem
    } else {
        format!("mem: {mem}, cpu: {cpu}")
    }
}

fn health_check(job: &CanonicalJob) -> String {
    match (&job.health_check_script, &job.health_check_http) {
        (Some(script), _) => format!("script: {script}"),
        (None, Some(path)) => format!("http: {path}"),
        (None, None) => "none".to_owned(),
    }
}

/// Jobs of each kind as `list` and `show` get them, for their tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use jiff::{SignedDuration, Timestamp};

    use super::LiveJob;
    use crate::config::image::ImageTable;
    use crate::config::{self, SourceFile};
    use crate::model::ToolName;
    use crate::render::context::{DEFAULT_SET_NAME, Membership};
    use crate::render::read_back::{LiveObject, read_back};
    use crate::render::{self, RenderContext, Workload};
    use crate::status::{Short, Status};

    pub(crate) fn now() -> Timestamp {
        "2026-01-02T00:00:00Z".parse().unwrap()
    }

    const JOBS: &str = "\
- name: myjob
  command: echo hi
  image: python3.11
- name: mycron
  command: ./cron.sh
  image: python3.11
  schedule: \"@daily\"
  emails: onfailure
  mem: 1Gi
  retry: 2
- name: web
  command: python3 -m http.server 8000
  image: python3.9
  continuous: true
  no-filelog: true
  cpu: \"0.5\"
  replicas: 2
  port: 8000
  health-check-http: /healthz
  publish: /
- name: webservice
  command: ./serve.py
  image: python3.11
  webservice: true
  port: 8000
";

    /// `myjob` (one-off, running for 5s), `mycron` (scheduled, pending for 3h2m, waiting, with a previous and a
    /// next run), `web` (continuous, deprecated image, published, running for 2d3h) and `webservice` (failed,
    /// since when unknown, with a long message), and their context (tool `test`).
    pub(crate) fn jobs() -> (Vec<LiveJob>, RenderContext) {
        let context = RenderContext::toolforge(
            &ToolName::new("test").unwrap(),
            52503,
            ImageTable::bundled(),
            Membership {
                set_name: DEFAULT_SET_NAME.to_owned(),
                applyset_id: "applyset-test-v1".to_owned(),
            },
        );
        let validation = config::Context {
            tool: "test",
            images: &context.images,
            count_trigger_files: None,
        };
        let file = config::load(SourceFile::new("jobs.yaml", JOBS), &validation).unwrap();
        let ago = |seconds: i64| {
            Some(
                now()
                    .checked_sub(SignedDuration::from_secs(seconds))
                    .unwrap(),
            )
        };
        let time = |text: &str| Some(text.parse::<Timestamp>().unwrap());
        let statuses = [
            (Short::Running, ago(5), vec![], None, None),
            (
                Short::Pending,
                ago(3 * 3600 + 2 * 60),
                vec!["Waiting for scheduled time".to_owned()],
                time("2026-01-01T12:34:00Z"),
                time("2026-01-02T12:34:00Z"),
            ),
            (Short::Running, ago(2 * 86_400 + 3 * 3600), vec![], None, None),
            (
                Short::Failed,
                None,
                vec![
                    "restarted (3)".to_owned(),
                    "exitcode 1".to_owned(),
                    "a very long message that goes on and on and on, with one-off hyphenated words and more \
                     text to wrap"
                        .to_owned(),
                ],
                None,
                None,
            ),
        ];
        let jobs = file
            .jobs
            .iter()
            .zip(statuses)
            .map(
                |(located, (short, since, messages, previous_schedule, next_schedule))| {
                    let rendered = render::objects(&located.job, &context).unwrap();
                    let workload = match rendered.workload {
                        Workload::Job(job) => LiveObject::Job(job),
                        Workload::CronJob(cron_job) => LiveObject::CronJob(cron_job),
                        Workload::Deployment(deployment) => LiveObject::Deployment(deployment),
                    };
                    let mut read_back = read_back(&workload, &context).unwrap();
                    // No live object records `publish` yet, so reading back cannot tell it; the tables' part is
                    // to show it when it is known.
                    read_back
                        .job
                        .publish
                        .clone_from(&rendered.canonical.publish);
                    LiveJob {
                        read_back,
                        workload,
                        status: Status {
                            short,
                            since,
                            messages,
                            previous_schedule,
                            next_schedule,
                        },
                    }
                },
            )
            .collect();
        (jobs, context)
    }
}
