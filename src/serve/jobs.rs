//! The job routes: list, show, create (`run`), update (`load`'s `PATCH`), delete, flush and restart, each read
//! from the live namespace ([`live::read`]) and written through the same plans, executor and lock as
//! `toolforge-jobs run`, `delete` and `restart` (reference/jobs-api.md §2, §4.2).
//!
//! Jobs of a jobs file (an inventory's, written by `apply` or `watch`) are the file's: a request that would
//! change one is refused with 409, and a one-off of a file is never run a second time through the API.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde::Deserialize;

use super::AppState;
use super::auth::ToolScope;
use super::error::ApiError;
use super::payload;
use super::request::JsonBody;
use super::wire::{DefinedJob, JobList, JobReply, Messages, MessagesReply, NewJob, UpdateReply};
use crate::model::{Kind, labels};
use crate::pipeline::imperative::InventoryPlan;
use crate::pipeline::live::{self, LiveJob, LiveNamespace};
use crate::plan::{self, Plan};
use crate::render::limits::violations;
use crate::render::{self, LiveObject, Rendered};
use crate::status::Short;

/// How long a delete waits for the job's pods to be gone (upstream: 30 s; the CLI gives up after 60).
const POD_WAIT: Duration = Duration::from_secs(30);
const POD_POLL: Duration = Duration::from_millis(250);

/// `?include_unset=`: the CLI sends `True`/`False`.
#[derive(Debug, Deserialize)]
pub struct IncludeUnset {
    include_unset: Option<String>,
}

impl IncludeUnset {
    fn get(&self) -> Result<bool, ApiError> {
        match self
            .include_unset
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("true" | "1" | "yes" | "on") => Ok(true),
            Some("false" | "0" | "no" | "off") => Ok(false),
            Some(other) => Err(ApiError::unprocessable(
                "bool_parsing",
                format!("include_unset: `{other}` is not a boolean"),
            )),
        }
    }
}

async fn read(state: &AppState, scope: &ToolScope) -> Result<LiveNamespace, ApiError> {
    Ok(live::read(state.connection.clone(), &scope.tool, &state.home).await?)
}

/// The out-of-date warning upstream gives for a job whose running version differs from its definition.
fn out_of_date(job: &DefinedJob) -> Option<String> {
    (!job.status.up_to_date).then(|| {
        format!(
            "The running version of job '{}' is different from what was configured, please recreate or redeploy.",
            job.name
        )
    })
}

/// `GET /jobs`: continuous jobs, then scheduled ones, then one-offs, each by name (upstream's order).
pub async fn list(
    State(state): State<AppState>,
    scope: ToolScope,
    Query(query): Query<IncludeUnset>,
) -> Result<Json<JobList>, ApiError> {
    let include_unset = query.get()?;
    let live = read(&state, &scope).await?;
    let mut jobs = live.jobs();
    jobs.sort_by_key(|job| match job.read_back.job.kind {
        Kind::Continuous | Kind::Webservice => 0,
        Kind::Scheduled => 1,
        Kind::OneOff => 2,
    });
    let defined: Vec<DefinedJob> = jobs
        .iter()
        .map(|job| DefinedJob::of(job, &live.context, live.now))
        .collect();
    let messages = Messages {
        warning: defined.iter().filter_map(out_of_date).collect(),
        ..Messages::default()
    };
    Ok(Json(JobList {
        jobs: defined
            .iter()
            .map(|job| job.to_value(include_unset, &live.context))
            .collect(),
        messages,
    }))
}

/// `GET /jobs/{name}`.
pub async fn show(
    State(state): State<AppState>,
    scope: ToolScope,
    Path((_, name)): Path<(String, String)>,
    Query(query): Query<IncludeUnset>,
) -> Result<Json<JobReply>, ApiError> {
    let include_unset = query.get()?;
    let live = read(&state, &scope).await?;
    let job = live
        .job(&name)
        .ok_or_else(|| ApiError::no_such_job(&name))?;
    let defined = DefinedJob::of(&job, &live.context, live.now);
    Ok(Json(JobReply {
        messages: Messages {
            warning: out_of_date(&defined).into_iter().collect(),
            ..Messages::default()
        },
        job: defined.to_value(include_unset, &live.context),
    }))
}

/// A request's job, validated and rendered as a file's would be.
struct Requested {
    rendered: Rendered,
    warnings: Vec<String>,
}

fn requested(request: &NewJob, live: &LiveNamespace) -> Result<Requested, ApiError> {
    let loaded = payload::load(request, live.context.tool.as_str(), &live.context.images)?;
    let rendered = render::objects(&loaded.job, &live.context)
        .map_err(|error| ApiError::new(StatusCode::BAD_REQUEST, error.to_string()))?;
    // The namespace's LimitRange would refuse the pods: refuse the job, in upstream's words.
    if let Some(limits) = &live.context.container_limits {
        let violations = violations(&rendered.canonical, limits);
        if !violations.is_empty() {
            return Err(ApiError {
                status: StatusCode::BAD_REQUEST,
                error: violations.iter().map(ToString::to_string).collect(),
                detail: Vec::new(),
                fastapi_detail: None,
            });
        }
    }
    Ok(Requested {
        rendered,
        warnings: loaded.warnings,
    })
}

/// The 409 for a job of a jobs file.
fn owned_by_file(job: &LiveJob) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        format!(
            "Job '{}' is defined in a jobs file (inventory '{}', kept by toolforge-jobs apply or watch): \
             change it in that file, or delete it first",
            job.name(),
            job.inventory()
        ),
    )
}

/// `POST /jobs` (upstream's `run`): creates the job outside any file. A name taken by a job is refused with
/// 409, except a one-off that completed, which runs again (as upstream does) — unless a jobs file keeps it:
/// then it ran with its definition already and is not run again.
pub async fn create(
    State(state): State<AppState>,
    scope: ToolScope,
    JsonBody(request): JsonBody<NewJob>,
) -> Result<(StatusCode, Json<JobReply>), ApiError> {
    let live = read(&state, &scope).await?;
    let Requested { rendered, warnings } = requested(&request, &live)?;
    let name = rendered.canonical.name.clone();
    let mut messages = Messages {
        warning: warnings,
        ..Messages::default()
    };
    let existing = live.job(&name);
    let plan = match &existing {
        Some(job) if is_finished_one_off(job) && job.read_back.ownership.inventory.is_some() => {
            if job.read_back.ownership.fingerprint.as_deref() != Some(rendered.fingerprint.as_str())
            {
                return Err(owned_by_file(job));
            }
            messages.info.push(format!(
                "Job '{name}' ran already with this definition (its jobs file keeps one-off jobs at most \
                 once per definition); it is not run again"
            ));
            None
        }
        Some(job) if is_finished_one_off(job) && job.status.short == Short::Succeeded => {
            Some(plan::imperative::update(
                &name,
                &rendered,
                &job.read_back,
                &job.workload,
                &live.snapshot.live,
            ))
        }
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("A job with the name {name} already exists"),
            ));
        }
        None if live.name_taken(&name) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "A job with the name {name} already exists (an object named so that is not a job)"
                ),
            ));
        }
        None => Some(plan::imperative::create(&name, &rendered)),
    };
    if let Some(plan) = plan {
        carry_out(&state, live, "serve: run", plan).await?;
    }
    let after = read(&state, &scope).await?;
    let job = after.job(&name).ok_or_else(|| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Job '{name}' was created but is gone already"),
        )
    })?;
    Ok((
        StatusCode::CREATED,
        Json(JobReply {
            job: DefinedJob::of(&job, &after.context, after.now).to_value(true, &after.context),
            messages,
        }),
    ))
}

fn is_finished_one_off(job: &LiveJob) -> bool {
    matches!(job.workload, LiveObject::Job(_))
        && matches!(job.status.short, Short::Succeeded | Short::Failed)
}

/// `PATCH /jobs` (what upstream's `load` sends per job): creates the job, updates it, or says it is up to date,
/// in upstream's words. One-off jobs cannot be updated.
pub async fn update(
    State(state): State<AppState>,
    scope: ToolScope,
    JsonBody(request): JsonBody<NewJob>,
) -> Result<Json<UpdateReply>, ApiError> {
    if request.kind() == Kind::OneOff {
        return Ok(Json(UpdateReply {
            job_changed: false,
            messages: Messages::info("OneOffJobs can't be updated, delete and recreate it instead"),
        }));
    }
    let live = read(&state, &scope).await?;
    let Requested { rendered, warnings } = requested(&request, &live)?;
    let name = rendered.canonical.name.clone();
    let (plan, sentence) = match live.job(&name) {
        None if live.name_taken(&name) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("An object named {name} exists that is not a job"),
            ));
        }
        None => (
            Some(plan::imperative::create(&name, &rendered)),
            format!("Job {name} created in storage and runtime"),
        ),
        Some(job) if up_to_date(&job, &rendered) => {
            (None, format!("Job {name} is already up to date"))
        }
        Some(job) if job.read_back.ownership.inventory.is_some() => {
            return Err(owned_by_file(&job));
        }
        Some(job) => (
            Some(plan::imperative::update(
                &name,
                &rendered,
                &job.read_back,
                &job.workload,
                &live.snapshot.live,
            )),
            format!("Job {name} was updated in storage and runtime"),
        ),
    };
    let job_changed = plan.is_some();
    if let Some(plan) = plan {
        carry_out(&state, live, "serve: load", plan).await?;
    }
    let mut messages = Messages::info(sentence);
    messages.warning = warnings;
    Ok(Json(UpdateReply {
        job_changed,
        messages,
    }))
}

/// Whether the live job runs what the request defines.
fn up_to_date(job: &LiveJob, rendered: &Rendered) -> bool {
    job.read_back.job == rendered.canonical && !job.read_back.legacy_selector
}

/// `DELETE /jobs/{name}`: the job's objects (by UID) and its record, then waits for its pods.
pub async fn delete(
    State(state): State<AppState>,
    scope: ToolScope,
    Path((_, name)): Path<(String, String)>,
) -> Result<Json<MessagesReply>, ApiError> {
    let live = read(&state, &scope).await?;
    delete_jobs(&state, live, Some(&name)).await
}

/// `DELETE /jobs` (upstream's `flush`): every job of the tool.
pub async fn flush(
    State(state): State<AppState>,
    scope: ToolScope,
) -> Result<Json<MessagesReply>, ApiError> {
    let live = read(&state, &scope).await?;
    delete_jobs(&state, live, None).await
}

async fn delete_jobs(
    state: &AppState,
    live: LiveNamespace,
    names: Option<&str>,
) -> Result<Json<MessagesReply>, ApiError> {
    let jobs: Vec<LiveJob> = live
        .jobs()
        .into_iter()
        .filter(|job| names.is_none_or(|name| job.name() == name))
        .collect();
    if let Some(name) = names
        && jobs.is_empty()
    {
        return Err(ApiError::no_such_job(name));
    }
    if !jobs.is_empty() {
        let plans = live.delete_plans(&jobs.iter().collect::<Vec<_>>()).await?;
        let names: Vec<String> = jobs.iter().map(|job| job.name().to_owned()).collect();
        let live = carry_out_plans(state, live, "serve: delete", plans).await?;
        wait_for_pods(&live, &names).await;
    }
    Ok(Json(MessagesReply {
        messages: Messages::default(),
    }))
}

/// Waits up to [`POD_WAIT`] until no pod of `jobs` is left; a pod still there after that is left to the
/// garbage collector, as upstream leaves it.
async fn wait_for_pods(live: &LiveNamespace, jobs: &[String]) {
    let pods: Api<Pod> = Api::namespaced(live.connection.client.clone(), &live.namespace);
    let tool = live.context.tool.as_str();
    let deadline = tokio::time::Instant::now() + POD_WAIT;
    for job in jobs {
        let selector = labels::deployment_selector(tool, job)
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",");
        let params = ListParams::default().labels(&selector);
        loop {
            match pods.list(&params).await {
                Ok(list) if list.items.is_empty() => break,
                Ok(_) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(POD_POLL).await;
                }
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(%error, "cannot list the pods of deleted jobs; not waiting for them");
                    return;
                }
            }
        }
    }
}

/// `POST /jobs/{name}/restart`: a continuous job's pods are replaced, a scheduled job runs now; a one-off
/// cannot be restarted (upstream's 400).
pub async fn restart(
    State(state): State<AppState>,
    scope: ToolScope,
    Path((_, name)): Path<(String, String)>,
) -> Result<Json<MessagesReply>, ApiError> {
    let live = read(&state, &scope).await?;
    let job = live
        .job(&name)
        .ok_or_else(|| ApiError::no_such_job(&name))?;
    if matches!(job.workload, LiveObject::Job(_)) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "Unable to restart a one-off job",
        ));
    }
    let now = jiff::Timestamp::now().to_string();
    let plan = plan::imperative::restart(job.name(), &job.workload, &live.snapshot.live, &now);
    carry_out(&state, live, "serve: restart", plan).await?;
    Ok(Json(MessagesReply {
        messages: Messages::default(),
    }))
}

async fn carry_out(
    state: &AppState,
    live: LiveNamespace,
    purpose: &'static str,
    plan: Plan,
) -> Result<LiveNamespace, ApiError> {
    let plans = vec![live.in_default_set(plan)];
    carry_out_plans(state, live, purpose, plans).await
}

/// Carries out `plans` as the command line does (on a blocking thread: [`super::off_handler`]); the namespace
/// as it was read, for what comes after.
async fn carry_out_plans(
    state: &AppState,
    live: LiveNamespace,
    purpose: &'static str,
    plans: Vec<InventoryPlan>,
) -> Result<LiveNamespace, ApiError> {
    let started = std::time::Instant::now();
    let progress = state.progress.clone();
    let lock_wait = state.lock_wait;
    let (live, result) = super::off_handler(move || async move {
        let result = live
            .carry_out(purpose, plans, progress, Some(lock_wait))
            .await;
        (live, result)
    })
    .await?;
    state
        .metrics
        .apply_finished(started.elapsed(), result.is_ok());
    result.map(|_| live).map_err(ApiError::from)
}
