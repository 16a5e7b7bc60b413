//! What `list`, `show`, `logs`, `delete`, `flush`, `restart`, `run` and `dump` share: the tool's jobs as they run, read from the
//! cluster in one round of requests (one LIST per workload kind, one of the pods, one of the events), each read
//! back into the job it runs and given its status ([`crate::status`]); and carrying out the imperative commands'
//! plans there.
//!
//! Only objects with the jobs framework's managed-by label are jobs here (ours, upstream's, `run`'s); Jobs a
//! CronJob spawned are runs of that scheduled job, not jobs of their own.

use std::path::PathBuf;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams};
use serde::Serialize;

use crate::apply::Applied;
use crate::cli::{Error, GlobalArgs, jobs_file, tool_name};
use crate::cluster::{self, Connection, ContextInputs, Passwd, ReadError, Snapshot};
use crate::config::image::ImageState;
use crate::model::ToolName;
use crate::model::labels;
use crate::output::progress::LogProgress;
use crate::pipeline::imperative::{self, Imperative, InventoryPlan};
use crate::plan::Plan;
use crate::render::context::DEFAULT_SET_NAME;
use crate::render::{CanonicalJob, LiveObject, ReadBack, RenderContext, read_back};
use crate::status::{self, Related, Status, StatusJson};

/// The tool's namespace as read, with the context to read its objects back.
pub(crate) struct LiveNamespace {
    pub(crate) connection: Connection,
    pub(crate) namespace: String,
    pub(crate) snapshot: Snapshot,
    pub(crate) pods: Vec<Pod>,
    pub(crate) events: Vec<Event>,
    pub(crate) context: RenderContext,
    pub(crate) now: Timestamp,
}

/// One job as it runs.
pub(crate) struct LiveJob {
    pub(crate) read_back: ReadBack,
    pub(crate) workload: LiveObject,
    pub(crate) status: Status,
}

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

/// Connects and reads the tool's namespace (see the module documentation).
pub(crate) async fn read(global: &GlobalArgs) -> Result<LiveNamespace, Error> {
    let (tool, connection, namespace) = connect(global).await?;
    let client = &connection.client;
    let framework = ListParams::default().labels(&labels::framework_selector());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), &namespace);
    let list_error = |what| {
        let namespace = namespace.clone();
        move |source| ReadError::List {
            what,
            namespace,
            source,
        }
    };
    let (snapshot, pods, events) = tokio::try_join!(
        Box::pin(cluster::read(client, &namespace, DEFAULT_SET_NAME)),
        async { pods.list(&framework).await.map_err(list_error("Pods")) },
        async {
            events
                .list(&ListParams::default())
                .await
                .map_err(list_error("Events"))
        },
    )?;
    // On the local cluster without a tools directory, the home is the jobs file's directory, as for `diff`.
    let directory = jobs_file::locate(global).map_or_else(
        |_| PathBuf::from("."),
        |path| crate::pipeline::source::directory_of(&path),
    );
    let directory = std::path::absolute(&directory).unwrap_or(directory);
    let context = cluster::render_context(
        &snapshot,
        ContextInputs {
            tool: &tool,
            set_name: DEFAULT_SET_NAME,
            file_directory: &directory,
            trigger_files: crate::render::TriggerFiles::default(),
            uids: &Passwd,
        },
    )?;
    Ok(LiveNamespace {
        connection,
        namespace,
        snapshot,
        pods: pods.items,
        events: events.items,
        context,
        now: Timestamp::now(),
    })
}

impl LiveNamespace {
    /// Carries out an imperative command's plans under the tool's lock ([`imperative::carry_out`]), its
    /// progress in the log (`-v`); what each plan did.
    pub(crate) async fn carry_out(
        &self,
        purpose: &str,
        plans: Vec<InventoryPlan>,
    ) -> Result<Vec<Applied>, Error> {
        let target = Imperative {
            connection: &self.connection,
            namespace: &self.namespace,
            live: &self.snapshot.live,
            purpose,
            progress: Arc::new(LogProgress {
                failures_as_errors: false,
            }),
        };
        Ok(imperative::carry_out(target, plans).await?)
    }

    /// `plan` for jobs of the default inventory, as read.
    pub(crate) fn in_default_set(&self, plan: Plan) -> InventoryPlan {
        InventoryPlan {
            set_name: DEFAULT_SET_NAME.to_owned(),
            stored: self.snapshot.inventory.clone(),
            plan,
        }
    }

    /// The jobs, sorted by name. An object that cannot be read back is reported in the log and left out.
    pub(crate) fn jobs(&self) -> Vec<LiveJob> {
        let live = &self.snapshot.live;
        let spawned = |job: &&k8s_openapi::api::batch::v1::Job| {
            job.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.kind == "CronJob")
        };
        let workloads = live
            .jobs
            .iter()
            .filter(|job| !spawned(job))
            .map(|job| LiveObject::Job(job.clone()))
            .chain(live.cron_jobs.iter().cloned().map(LiveObject::CronJob))
            .chain(live.deployments.iter().cloned().map(LiveObject::Deployment));
        let related = Related {
            jobs: &live.jobs,
            pods: &self.pods,
            events: &self.events,
        };
        let mut jobs: Vec<LiveJob> = workloads
            .filter_map(|workload| match read_back(&workload, &self.context) {
                Ok(read_back) if read_back.ownership.is_jobs_framework() => Some(LiveJob {
                    status: status::of(&workload, related, self.now),
                    read_back,
                    workload,
                }),
                Ok(_) => None,
                Err(error) => {
                    tracing::warn!(%error, "cannot read this object back into a job; leaving it out");
                    None
                }
            })
            .collect();
        jobs.sort_by(|a, b| a.read_back.job.name.cmp(&b.read_back.job.name));
        jobs
    }

    /// The job `name`, or the error upstream gives: "Job 'NAME' does not exist".
    pub(crate) fn job(&self, name: &str) -> Result<LiveJob, Error> {
        self.jobs()
            .into_iter()
            .find(|job| job.read_back.job.name == name)
            .ok_or_else(|| Error::NoSuchJob {
                name: name.to_owned(),
            })
    }
}

impl LiveJob {
    pub(crate) fn name(&self) -> &str {
        &self.read_back.job.name
    }

    /// The upstream fields of `list -o long` and `show`, in upstream's order, formatted as upstream formats them.
    pub(crate) fn long_fields(
        &self,
        context: &RenderContext,
        now: Timestamp,
    ) -> Vec<(&'static str, String)> {
        let job = &self.read_back.job;
        let or_na = |value: Option<String>| value.unwrap_or_else(|| "N/A".to_owned());
        let yes_no = |yes: bool| if yes { "yes" } else { "no" }.to_owned();
        vec![
            ("Job name:", job.name.clone()),
            ("Command:", or_na(job.command.clone())),
            ("Job type:", job_type(job)),
            ("Image:", self.image(context)),
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
            ("Status:", self.status.summary(now)),
        ]
    }

    /// The image's short name (or URL), with its state when it is not stable: `python3.9 (deprecated)`.
    pub(crate) fn image(&self, context: &RenderContext) -> String {
        let Some(short) = &self.read_back.image_short_name else {
            return self.read_back.live_image.clone();
        };
        match context.images.find(short).map(|(_, image)| &image.state) {
            Some(ImageState::Deprecated) => format!("{short} (deprecated)"),
            Some(ImageState::Other(state)) => format!("{short} ({state})"),
            Some(ImageState::Stable) | None => short.clone(),
        }
    }

    /// The JSON form: the canonical job, the image as `show` names it, and the status.
    pub(crate) fn to_json(&self, context: &RenderContext, now: Timestamp) -> JobJson<'_> {
        JobJson {
            job: &self.read_back.job,
            image_name: self.image(context),
            status: self.status.to_json(now),
        }
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
