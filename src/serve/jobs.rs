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
use crate::pipeline::imperative::{self, Imperative};
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

/// What a write request decided from the namespace: an answer as it is, or writes and the answer after them.
enum Decision<T> {
    Answer(T),
    Write(Writes, T),
}

/// The writes of a decision.
enum Writes {
    /// A plan of the default inventory (`run`, `load`, `restart`).
    Plan(Plan),
    /// Delete these jobs, each with its inventory's record.
    Delete(Vec<String>),
}

/// Decides from the namespace as read; when that needs writes, takes the tool's lock, reads and decides again
/// (nobody can change what it decides from while it holds the lock: another request of this server or of
/// another replica, `apply`, `watch`) and carries the writes out. The answer, and the namespace it was decided
/// from.
async fn decide_and_write<T, F>(
    state: &AppState,
    scope: &ToolScope,
    purpose: &'static str,
    decide: F,
) -> Result<(T, LiveNamespace), ApiError>
where
    T: Send + 'static,
    F: Fn(&LiveNamespace) -> Result<Decision<T>, ApiError> + Send + 'static,
{
    let live = read(state, scope).await?;
    if let Decision::Answer(answer) = decide(&live)? {
        return Ok((answer, live));
    }
    let state = state.clone();
    let tool = scope.tool.clone();
    super::off_handler(move || async move {
        let target = Imperative {
            connection: &state.connection,
            namespace: &live.namespace,
            live: &live.snapshot.live,
            purpose,
            progress: state.progress.clone(),
            lock_wait: Some(state.lock_wait),
        };
        let lock = imperative::take_lock(&target).await?;
        let started = std::time::Instant::now();
        let result = async {
            let live = live::read(state.connection.clone(), &tool, &state.home).await?;
            let (writes, answer) = match decide(&live)? {
                Decision::Answer(answer) => return Ok((answer, live)),
                Decision::Write(writes, answer) => (writes, answer),
            };
            let plans = match writes {
                Writes::Plan(plan) => vec![live.in_default_set(plan)],
                Writes::Delete(names) => {
                    let jobs: Vec<LiveJob> = live
                        .jobs()
                        .into_iter()
                        .filter(|job| names.iter().any(|name| name == job.name()))
                        .collect();
                    live.delete_plans(&jobs.iter().collect::<Vec<_>>()).await?
                }
            };
            live.carry_out_holding(plans, state.progress.clone(), &lock)
                .await?;
            Ok::<_, ApiError>((answer, live))
        }
        .await;
        state
            .metrics
            .apply_finished(started.elapsed(), result.is_ok());
        imperative::release(lock).await;
        result
    })
    .await?
}

/// `POST /jobs` (upstream's `run`): creates the job outside any file. A name taken by a job is refused with
/// 409, except a one-off that completed, which runs again (as upstream does) — unless a jobs file keeps it:
/// then it ran with its definition already and is not run again.
pub async fn create(
    State(state): State<AppState>,
    scope: ToolScope,
    JsonBody(request): JsonBody<NewJob>,
) -> Result<(StatusCode, Json<JobReply>), ApiError> {
    let ((name, messages), _) =
        decide_and_write(&state, &scope, "serve: run", move |live| {
            let Requested { rendered, warnings } = requested(&request, live)?;
            let name = rendered.canonical.name.clone();
            let mut messages = Messages {
                warning: warnings,
                ..Messages::default()
            };
            let plan = match live.job(&name) {
                Some(job) if is_finished_one_off(&job) && job.read_back.ownership.inventory.is_some() => {
                    if job.read_back.ownership.fingerprint.as_deref()
                        != Some(rendered.fingerprint.as_str())
                    {
                        return Err(owned_by_file(&job));
                    }
                    messages.info.push(format!(
                        "Job '{name}' ran already with this definition (its jobs file keeps one-off jobs at \
                         most once per definition); it is not run again"
                    ));
                    return Ok(Decision::Answer((name, messages)));
                }
                Some(job) if is_finished_one_off(&job) && job.status.short == Short::Succeeded => {
                    plan::imperative::update(
                        &name,
                        &rendered,
                        &job.read_back,
                        &job.workload,
                        &live.snapshot.live,
                    )
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
                None => plan::imperative::create(&name, &rendered, &live.snapshot.live),
            };
            Ok(Decision::Write(Writes::Plan(plan), (name, messages)))
        })
        .await?;
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
    let (reply, _) = decide_and_write(&state, &scope, "serve: load", move |live| {
        let Requested { rendered, warnings } = requested(&request, live)?;
        let name = rendered.canonical.name.clone();
        let reply = |job_changed, sentence: String| UpdateReply {
            job_changed,
            messages: Messages {
                info: vec![sentence],
                warning: warnings.clone(),
                ..Messages::default()
            },
        };
        Ok(match live.job(&name) {
            None if live.name_taken(&name) => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!("An object named {name} exists that is not a job"),
                ));
            }
            None => Decision::Write(
                Writes::Plan(plan::imperative::create(
                    &name,
                    &rendered,
                    &live.snapshot.live,
                )),
                reply(true, format!("Job {name} created in storage and runtime")),
            ),
            Some(job) if up_to_date(&job, &rendered) => {
                let answer = reply(false, format!("Job {name} is already up to date"));
                // A job of ours from before the cluster kept records, or whose record was lost: stored now.
                match plan::imperative::stored_record_only(&name, &rendered, &live.snapshot.live) {
                    Some(plan) if job.read_back.ownership.inventory.is_none() => {
                        Decision::Write(Writes::Plan(plan), answer)
                    }
                    _ => Decision::Answer(answer),
                }
            }
            Some(job) if job.read_back.ownership.inventory.is_some() => {
                return Err(owned_by_file(&job));
            }
            Some(job) => Decision::Write(
                Writes::Plan(plan::imperative::update(
                    &name,
                    &rendered,
                    &job.read_back,
                    &job.workload,
                    &live.snapshot.live,
                )),
                reply(
                    true,
                    format!("Job {name} was updated in storage and runtime"),
                ),
            ),
        })
    })
    .await?;
    Ok(Json(reply))
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
    delete_jobs(&state, &scope, Some(name)).await
}

/// `DELETE /jobs` (upstream's `flush`): every job of the tool.
pub async fn flush(
    State(state): State<AppState>,
    scope: ToolScope,
) -> Result<Json<MessagesReply>, ApiError> {
    delete_jobs(&state, &scope, None).await
}

/// Deletes the job `name`, or every job, then waits for their pods.
async fn delete_jobs(
    state: &AppState,
    scope: &ToolScope,
    name: Option<String>,
) -> Result<Json<MessagesReply>, ApiError> {
    let (names, live) = decide_and_write(state, scope, "serve: delete", move |live| {
        let names: Vec<String> = live
            .jobs()
            .iter()
            .map(|job| job.name().to_owned())
            .filter(|job| name.as_ref().is_none_or(|name| name == job))
            .collect();
        match &name {
            Some(name) if names.is_empty() => Err(ApiError::no_such_job(name)),
            _ if names.is_empty() => Ok(Decision::Answer(names)),
            _ => Ok(Decision::Write(Writes::Delete(names.clone()), names)),
        }
    })
    .await?;
    wait_for_pods(&live, &names).await;
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
        let selector = labels::selector_text(&labels::deployment_selector(tool, job));
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
    let now = jiff::Timestamp::now().to_string();
    decide_and_write(&state, &scope, "serve: restart", move |live| {
        let job = live
            .job(&name)
            .ok_or_else(|| ApiError::no_such_job(&name))?;
        if matches!(job.workload, LiveObject::Job(_)) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "Unable to restart a one-off job",
            ));
        }
        let plan = plan::imperative::restart(job.name(), &job.workload, &live.snapshot.live, &now);
        Ok(Decision::Write(Writes::Plan(plan), ()))
    })
    .await?;
    Ok(Json(MessagesReply {
        messages: Messages::default(),
    }))
}
