//! The logs routes of upstream's logs-api as the CLI uses them (reference/jobs-api.md §4.2): pages of a job's
//! pod logs, newest first, with a cursor URL relative to the page's own; and the NDJSON stream of `-f`. Jobs
//! that log to files have no pod logs to give (upstream's 404).

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use jiff::Timestamp;
use kube::api::LogParams;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::ToolScope;
use super::error::ApiError;
use crate::pipeline::live::{self, LiveJob, LiveNamespace};
use crate::pipeline::pod_logs::{self, LogEntry, LogTime, Window};

/// Entries per page, as upstream's logs-api pages them.
const PAGE_SIZE: usize = 500;

/// The query of both routes.
#[derive(Debug, Default, Deserialize)]
pub struct LogQuery {
    /// At most this many of the newest entries.
    lines: Option<usize>,
    /// RFC 3339, or a duration before now (`1h32m22s`).
    since: Option<String>,
    until: Option<String>,
    /// Only `newest_first` is served; the CLI always asks for it.
    direction: Option<String>,
    /// How many entries earlier pages gave.
    cursor: Option<usize>,
}

/// A page.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LogPage {
    pub data: LogData,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LogData {
    /// Newest first.
    pub logs: Vec<LogEntry>,
    pub next: Option<NextPage>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct NextPage {
    /// Relative to the page's URL: `logs?cursor=…`.
    pub url: String,
}

/// A time bound of the query.
fn time_bound(text: &str, what: &str, now: Timestamp) -> Result<Timestamp, ApiError> {
    LogTime::parse(text)
        .map(|time| time.at(now))
        .map_err(|problem| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("Invalid {what}: {problem}"),
            )
        })
}

/// The job, when it has pod logs to give.
async fn job_with_pod_logs(
    state: &AppState,
    scope: &ToolScope,
    name: &str,
) -> Result<(LiveNamespace, LiveJob), ApiError> {
    let live = live::read(state.connection.clone(), &scope.tool, &state.home).await?;
    let job = live.job(name).ok_or_else(|| ApiError::no_such_job(name))?;
    if job.read_back.job.filelog {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "Job '{name}' has file logging enabled, which is incompatible with the logs command"
            ),
        ));
    }
    Ok((live, job))
}

fn no_logs(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("Job '{name}' does not have any logs available"),
    )
}

/// The window of a query and the Kubernetes log parameters that read it.
fn window(query: &LogQuery, now: Timestamp, follow: bool) -> Result<(Window, LogParams), ApiError> {
    if query
        .direction
        .as_deref()
        .is_some_and(|direction| direction != "newest_first")
    {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "Only direction=newest_first is supported",
        ));
    }
    let bound = |text: &Option<String>, what| {
        text.as_deref()
            .map(|text| time_bound(text, what, now))
            .transpose()
    };
    let window = Window {
        since: bound(&query.since, "since")?,
        until: bound(&query.until, "until")?,
    };
    // A page keeps the newest `lines` of all pods; a stream starts from each pod's last `lines`.
    let params = window.params(follow, query.lines.filter(|_| follow), now);
    Ok((window, params))
}

/// `GET /logs/v1/tool/{tool}/job/{name}/logs`: one page of the job's entries, newest first.
pub async fn page(
    State(state): State<AppState>,
    scope: ToolScope,
    Path((_, name)): Path<(String, String)>,
    Query(query): Query<LogQuery>,
) -> Result<Json<LogPage>, ApiError> {
    let (live, job) = job_with_pod_logs(&state, &scope, &name).await?;
    let (window, params) = window(&query, live.now, false)?;
    let pods = pod_logs::pods(&live, &job);
    let streams = pod_logs::streams(&live, &pods, &params, window)
        .await
        .map_err(|error| ApiError::internal(&error))?;
    let mut entries = Vec::new();
    for mut stream in streams {
        while let Some(entry) = stream.next().await {
            entries.push(entry.map_err(|error| ApiError::internal(&error))?);
        }
    }
    if entries.is_empty() && query.cursor.is_none() {
        return Err(no_logs(&name));
    }
    // Newest first. Each pod's entries come oldest first and lines of one instant keep that order reversed
    // (the sort is stable); times are compared as times, their texts differ in precision.
    entries.reverse();
    entries.sort_by_cached_key(|entry| std::cmp::Reverse(entry.datetime.parse::<Timestamp>().ok()));
    entries.truncate(query.lines.unwrap_or(usize::MAX));
    let start = query.cursor.unwrap_or(0).min(entries.len());
    let end = (start + PAGE_SIZE).min(entries.len());
    let next = (end < entries.len()).then(|| NextPage {
        url: next_url(&query, end),
    });
    Ok(Json(LogPage {
        data: LogData {
            logs: entries.drain(start..end).collect(),
            next,
        },
    }))
}

/// The next page's URL, relative to this one's (the CLI joins it with its own).
fn next_url(query: &LogQuery, cursor: usize) -> String {
    let mut url = form_urlencoded::Serializer::new(String::new());
    url.append_pair("cursor", &cursor.to_string());
    if let Some(lines) = query.lines {
        url.append_pair("lines", &lines.to_string());
    }
    for (key, value) in [("since", &query.since), ("until", &query.until)] {
        if let Some(value) = value {
            url.append_pair(key, value);
        }
    }
    url.append_pair("direction", "newest_first");
    format!("logs?{}", url.finish())
}

/// `GET /logs/v1/tool/{tool}/job/{name}/logs_stream`: the entries as they are written, one JSON object per
/// line, until every pod's containers stopped or the client leaves.
pub async fn stream(
    State(state): State<AppState>,
    scope: ToolScope,
    Path((_, name)): Path<(String, String)>,
    Query(query): Query<LogQuery>,
) -> Result<Response, ApiError> {
    ndjson(&state, &scope, &name, &query, true).await
}

/// The jobs API's own `GET /jobs/{name}/logs?follow=&lines=` (older clients; the CLI now uses the logs-api):
/// the same JSON lines, to the end of what the pods printed, or on as they print with `follow=true`.
#[derive(Debug, Default, Deserialize)]
pub struct JobLogQuery {
    follow: Option<String>,
    lines: Option<usize>,
}

pub async fn job_logs(
    State(state): State<AppState>,
    scope: ToolScope,
    Path((_, name)): Path<(String, String)>,
    Query(query): Query<JobLogQuery>,
) -> Result<Response, ApiError> {
    let follow = query
        .follow
        .as_deref()
        .is_some_and(|follow| follow.eq_ignore_ascii_case("true") || follow == "1");
    let query = LogQuery {
        lines: query.lines,
        ..LogQuery::default()
    };
    ndjson(&state, &scope, &name, &query, follow).await
}

/// The job's entries as JSON lines; with `follow`, until every container stopped or the client leaves.
async fn ndjson(
    state: &AppState,
    scope: &ToolScope,
    name: &str,
    query: &LogQuery,
    follow: bool,
) -> Result<Response, ApiError> {
    let (live, job) = job_with_pod_logs(state, scope, name).await?;
    let (window, mut params) = window(query, live.now, follow)?;
    if !follow {
        params.tail_lines = query
            .lines
            .map(|lines| i64::try_from(lines).unwrap_or(i64::MAX));
    }
    let pods = pod_logs::pods(&live, &job);
    if pods.is_empty() {
        return Err(no_logs(name));
    }
    let streams = pod_logs::streams(&live, &pods, &params, window)
        .await
        .map_err(|error| ApiError::internal(&error))?;
    let lines = futures::stream::select_all(streams).map(|entry| {
        entry
            .map(|entry| {
                // An entry of strings always serialises.
                let mut json = serde_json::to_vec(&entry).expect("a log entry serialises");
                json.push(b'\n');
                Bytes::from(json)
            })
            .map_err(std::io::Error::other)
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response())
}
