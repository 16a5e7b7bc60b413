//! `serve`: the Toolforge jobs REST API (upstream's jobs-api and the logs-api routes its CLI uses), so that the
//! real upstream CLI, `toolforge jobs …`, works against our engine unchanged (reference/jobs-api.md).
//!
//! One multi-tenant server: each request names its tool in the path (`/jobs/v1/tool/{tool}/…`, the bare
//! upstream `/v1/tool/{tool}/…`, `/logs/v1/tool/{tool}/…`), [`auth`] proves the caller is that tool, and the
//! handlers act in `tool-<tool>` only. It keeps no state of its own — jobs, inventories and the lock are in the
//! cluster — so replicas answer alike. Handlers run the pipeline as the command line does: the request body is a
//! jobs file's entry ([`payload`]), writes are plans carried out by the executor under the tool's lock
//! ([`jobs`]).
//!
//! Modules: [`wire`] the JSON, [`error`] the error replies, [`request`] body reading, [`auth`] who may act for
//! which tool, [`tls`] the mTLS listener, [`jobs`], [`info`] and [`logs`] the routes, [`metrics`], [`openapi`].

pub mod auth;
pub mod declarative;
pub mod error;
pub mod info;
pub mod jobs;
pub mod logs;
pub mod metrics;
pub mod openapi;
pub mod payload;
pub mod request;
pub mod tls;
pub mod wire;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use tower_http::timeout::TimeoutLayer;

use crate::apply::Progress;
use crate::cluster::Connection;
use auth::{Auth, ToolSlots};
use error::ApiError;
use metrics::Metrics;

/// How the server works.
#[derive(Debug, Clone)]
pub struct Settings {
    pub auth: Auth,
    /// Requests of one tool handled at once; more get 429.
    pub requests_per_tool: usize,
    /// How long a request may take before it is answered 504, shorter than the upstream CLI's 60 s.
    pub handler_timeout: Duration,
    /// How long a write waits for another writer's lock before it is answered 409.
    pub lock_wait: Duration,
    /// The tool's home on a local cluster that announces none.
    pub home: PathBuf,
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

pub struct Shared {
    pub connection: Connection,
    pub auth: Auth,
    pub slots: ToolSlots,
    pub home: PathBuf,
    pub lock_wait: Duration,
    pub metrics: Metrics,
    pub progress: Arc<dyn Progress>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The routes under `/tool/{tool}`, each also with a trailing slash (the CLI uses both; never a redirect).
fn tool_routes() -> Router<AppState> {
    let routes: [(&str, MethodRouter<AppState>); 9] = [
        (
            "/jobs",
            get(jobs::list)
                .post(jobs::create)
                .put(jobs::create)
                .patch(jobs::update)
                .delete(jobs::flush),
        ),
        ("/jobs/{name}", get(jobs::show).delete(jobs::delete)),
        ("/jobs/{name}/restart", post(jobs::restart)),
        ("/jobs/{name}/logs", get(logs::job_logs)),
        ("/images", get(info::images)),
        ("/quotas", get(info::quotas)),
        ("/declarative/validate", post(declarative::validate)),
        ("/declarative/plan", post(declarative::plan)),
        ("/declarative/apply", post(declarative::apply)),
    ];
    with_slashes(routes)
}

fn log_routes() -> Router<AppState> {
    with_slashes([
        ("/job/{name}/logs", get(logs::page)),
        ("/job/{name}/logs_stream", get(logs::stream)),
    ])
}

fn with_slashes<const N: usize>(routes: [(&str, MethodRouter<AppState>); N]) -> Router<AppState> {
    routes
        .into_iter()
        .fold(Router::new(), |router, (path, route)| {
            router
                .route(path, route.clone())
                .route(&format!("{path}/"), route)
        })
}

/// The whole API.
pub fn router(connection: Connection, settings: &Settings, progress: Arc<dyn Progress>) -> Router {
    let state = AppState(Arc::new(Shared {
        connection,
        auth: settings.auth.clone(),
        slots: ToolSlots::new(settings.requests_per_tool),
        home: settings.home.clone(),
        lock_wait: settings.lock_wait,
        metrics: Metrics::default(),
        progress,
    }));
    let json_error = |status: StatusCode, message: &'static str| {
        move || async move { ApiError::new(status, message).into_response() }
    };
    Router::new()
        .nest("/jobs/v1/tool/{tool}", tool_routes())
        .nest("/v1/tool/{tool}", tool_routes())
        .nest("/logs/v1/tool/{tool}", log_routes())
        .route("/v1/healthz", get(info::health))
        .route("/jobs/v1/healthz", get(info::health))
        .route("/healthz", get(info::health))
        .route("/openapi.json", get(openapi::document))
        .route("/metrics", get(metrics_text))
        .route("/v1/metrics", get(metrics_text))
        .route_layer(middleware::from_fn_with_state(state.clone(), track))
        .fallback(json_error(StatusCode::NOT_FOUND, "Not Found"))
        .method_not_allowed_fallback(json_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed",
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::GATEWAY_TIMEOUT,
            settings.handler_timeout,
        ))
        .with_state(state)
}

/// Runs the future `make` gives to its end on a blocking thread of this runtime, for the pipeline's futures
/// that the compiler does not prove `Send` (closures over borrowed plan actions in their streams hit
/// rust-lang/rust#102211), while axum's handlers must be: what a handler awaiting them would amount to.
pub async fn off_handler<T, F, Fut>(make: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
    T: Send + 'static,
{
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || runtime.block_on(make()))
        .await
        .map_err(|error| ApiError::internal(&error))
}

async fn metrics_text(State(state): State<AppState>) -> String {
    state.metrics.render()
}

/// The access log and the request counts: route (not the path: names are not logged), method, status, time.
async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(String::new, |path| path.as_str().to_owned());
    let response = next.run(request).await;
    let code = response.status().as_u16();
    state.metrics.request(&route, &method, code);
    tracing::info!(
        target: crate::output::logging::ACCESS_LOG,
        %method,
        %route,
        code,
        millis = started.elapsed().as_millis(),
        "request"
    );
    response
}
