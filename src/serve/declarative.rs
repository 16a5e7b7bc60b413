//! Our own declarative routes beside upstream's, for a web front-end or a remote CLI: a whole jobs file is
//! validated, planned (the plan's JSON, as `diff -o json` prints it) or applied (as `apply` does: under the
//! tool's lock, planned again there, and refused when that plan is not the one the caller saw), with the
//! apply's progress as a stream of JSON lines. The body is the file's text; apply takes
//! `{"file": "...", "plan": <the plan's JSON>}`.

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::AppState;
use super::auth::ToolScope;
use super::error::ApiError;
use super::request::{BODY_LIMIT, JsonBody};
use crate::apply::{Event, Progress};
use crate::cluster::lock;
use crate::config::image::ImageTable;
use crate::pipeline::{self, CarryOut, PlanSettings, Planned, Prepared, Source};
use crate::plan::Plan;
use crate::render::context::DEFAULT_SET_NAME;

/// The answer of `validate`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Validation {
    pub valid: bool,
    /// Every problem, rendered with its line and column.
    pub problems: String,
}

/// The body of `apply`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyRequest {
    /// The jobs file's text.
    pub file: String,
    /// The plan the caller saw (`POST …/declarative/plan`); the apply is refused when planning again under the
    /// lock gives another.
    pub plan: Option<serde_json::Value>,
}

/// The file as the tool's `jobs.yaml` in its home (named so in problems).
fn source(state: &AppState, scope: &ToolScope) -> Source {
    Source {
        path: "jobs.yaml".into(),
        tool: scope.tool.clone(),
        directory: state.home.clone(),
    }
}

fn text(bytes: &Bytes) -> Result<&str, ApiError> {
    if bytes.len() > BODY_LIMIT {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The jobs file is too large",
        ));
    }
    std::str::from_utf8(bytes)
        .map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "The jobs file is not UTF-8 text"))
}

/// `POST …/declarative/validate`: the file's problems against the bundled image table, without the cluster.
pub async fn validate(
    scope: ToolScope,
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<Validation>, ApiError> {
    let file = text(&body)?;
    let source = source(&state, &scope);
    let (valid, problems) = match source.load(file.as_bytes(), &ImageTable::bundled(), false, false)
    {
        Ok(loaded) => (
            true,
            crate::config::diagnostic::render(&loaded.source, &loaded.warnings, false),
        ),
        Err(problems) => (false, problems),
    };
    Ok(Json(Validation { valid, problems }))
}

async fn planned(
    state: &AppState,
    scope: &ToolScope,
    file: &str,
) -> Result<Box<Planned>, ApiError> {
    let source = source(state, scope);
    let loaded = source
        .load(file.as_bytes(), &ImageTable::bundled(), false, false)
        .map_err(|problems| ApiError::new(StatusCode::BAD_REQUEST, problems))?;
    let connection = state.connection.clone();
    let file = file.to_owned();
    let prepared = super::off_handler(move || async move {
        let settings = PlanSettings::of_set(DEFAULT_SET_NAME);
        Box::pin(pipeline::plan(
            connection,
            source,
            file.as_bytes(),
            loaded,
            &settings,
            false,
        ))
        .await
    })
    .await??;
    match prepared {
        Prepared::Planned(planned) => Ok(planned),
        Prepared::Invalid(problems) => Err(ApiError::new(StatusCode::BAD_REQUEST, problems)),
    }
}

/// `POST …/declarative/plan`: what `apply` would do, as the plan's JSON (docs/plan.md).
pub async fn plan(
    scope: ToolScope,
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Json<Plan>, ApiError> {
    let file = text(&body)?;
    Ok(Json(planned(&state, &scope, file).await?.plan))
}

/// Sends the executor's events down the stream.
struct Streamed(mpsc::UnboundedSender<serde_json::Value>);

impl Progress for Streamed {
    fn event(&self, event: Event) {
        // A client that left does not stop the apply: it has the lock and finishes.
        let _ = self
            .0
            .send(serde_json::json!({"event": "progress", "progress": event}));
    }
}

/// `POST …/declarative/apply`: the file applied as `apply` applies it; NDJSON lines `plan`, `progress` …, and
/// last `done` (the jobs changed) or `error`.
pub async fn apply(
    scope: ToolScope,
    State(state): State<AppState>,
    JsonBody(request): JsonBody<ApplyRequest>,
) -> Result<Response, ApiError> {
    let mut planned = planned(&state, &scope, &request.file).await?;
    let (events, received) = mpsc::unbounded_channel();
    let lock_wait = state.lock_wait;
    let settings = PlanSettings::of_set(DEFAULT_SET_NAME);
    let expected = request.plan;
    // The apply goes on when the client leaves: it holds the lock, and stops only at its end.
    tokio::spawn(super::off_handler(move || async move {
        let result = async {
            let holder = lock::identity(&format!("serve: apply for {}", planned.namespace));
            pipeline::writable_namespace(&planned.connection, &planned.namespace).await?;
            let lock = lock::acquire(
                &planned.connection.client,
                &planned.namespace,
                &holder,
                Some(lock_wait),
            )
            .await?;
            let result = async {
                planned.confirm(&settings).await?;
                let _ = events.send(serde_json::json!({"event": "plan", "plan": planned.plan}));
                if let Some(expected) = &expected
                    && !same_actions(expected, &planned.plan)
                {
                    return Ok(serde_json::json!({"event": "error", "error": [
                        "The plan changed since it was made: plan again, and apply that plan"]}));
                }
                let how = CarryOut {
                    by: &holder,
                    progress: Arc::new(Streamed(events.clone())),
                    concurrency: usize::from(crate::apply::DEFAULT_CONCURRENCY),
                    stops: vec![lock.lost()],
                    wait: None,
                };
                let carried = pipeline::carry_out(&planned, how).await?;
                Ok::<_, pipeline::Error>(
                    serde_json::json!({"event": "done", "changed": carried.applied.changed}),
                )
            }
            .await;
            if let Err(error) = lock.release().await {
                tracing::warn!(%error, "cannot release the lock; it expires by itself");
            }
            result
        }
        .await;
        let last = result.unwrap_or_else(
            |error| serde_json::json!({"event": "error", "error": ApiError::from(error).error}),
        );
        let _ = events.send(last);
    }));
    let lines = futures::stream::unfold(received, |mut received| async move {
        let event = received.recv().await?;
        let mut line = event.to_string();
        line.push('\n');
        Some((Ok::<_, std::io::Error>(Bytes::from(line)), received))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response())
}

/// Whether the plan the caller saw has the same actions, job by job, as the plan made now.
fn same_actions(expected: &serde_json::Value, plan: &Plan) -> bool {
    let actions = |value: &serde_json::Value| -> Vec<(String, String)> {
        value["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|action| (action["job"].to_string(), action["action"].to_string()))
            .collect()
    };
    serde_json::to_value(plan).is_ok_and(|now| actions(&now) == actions(expected))
}
