//! The HTTP layer: the axum router serving discovery, OpenAPI, `/version` and every resource URL, over a shared
//! [`ClusterState`], with its middleware (request accounting and fault injection in [`faults`], authentication
//! and authorization in [`guard`] and [`policy`]) and the wire formats (content negotiation, tables, the
//! protobuf request bodies, watch streams, `pods/{name}/log`). Handlers are thin; the semantics live in
//! [`crate::registry::ops`], [`crate::registry::delete`] and [`crate::registry::store`].
//!
//! This layer imports the registry and the identities of [`crate::auth`]; it never imports the controllers or
//! the kubelet, which reach the objects through the registry as every client does.

mod discovery;
pub(crate) mod faults;
pub(crate) mod guard;
mod log;
mod negotiate;
mod openapi;
mod openapi_schemas;
mod pages;
pub(crate) mod path;
mod policy;
mod protobuf;
pub(crate) mod query;
pub(crate) mod request_info;
mod resource;
mod review;
mod scale;
mod stored_table;
mod streams;
mod table;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::registry::resources::ResourceType;
use crate::registry::store::Store;
use faults::Faults;

/// State shared by all handlers; cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ClusterState {
    pub(crate) store: Store,
    pub(crate) faults: Arc<Faults>,
    pub(crate) bookmark_interval: Duration,
    pub(crate) shutdown: CancellationToken,
    pub(crate) server_address: Arc<str>,
    pub(crate) pages: Arc<pages::Pages>,
    pub(crate) guard: Arc<crate::api::guard::Guard>,
}

impl ClusterState {
    /// The types served right now: the built-in table and the established custom types.
    fn served(&self) -> Vec<&'static ResourceType> {
        self.store.read(crate::registry::store::Inner::served)
    }
}

fn json(body: &Value) -> Response {
    let mut response = body.to_string().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The complete API server.
pub(crate) fn router(state: ClusterState) -> Router {
    use tower::ServiceExt as _;
    // Routing happens inside `routes`, so the path is normalized before it reaches them.
    Router::new().fallback_service(routes(state).map_request(trim_trailing_slash))
}

/// kube-apiserver serves `/version/`, `/api/`, `/apis/batch/v1/`, `/api/v1/namespaces/default/pods/` … as the
/// paths without the slash (go-restful trims it, and so does its `RequestInfo`); kr8s relies on it. Other paths
/// (`/openapi/v2`, `/healthz`) are exact matches there and stay so here.
fn trim_trailing_slash(mut request: axum::extract::Request) -> axum::extract::Request {
    let path = request.uri().path();
    let trimmed = path.trim_end_matches('/');
    let served = ["/version", "/api", "/apis"].iter().any(|prefix| {
        trimmed
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    if trimmed.len() == path.len() || !served {
        return request;
    }
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{trimmed}?{query}"),
        None => trimmed.to_owned(),
    };
    let mut parts = request.uri().clone().into_parts();
    if let Ok(rewritten) = path_and_query.parse() {
        parts.path_and_query = Some(rewritten);
        if let Ok(uri) = axum::http::Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// The routes, with the middleware that runs once a request is routed.
fn routes(state: ClusterState) -> Router {
    Router::new()
        .route("/version", get(|| async { json(&discovery::version()) }))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route(
            "/api",
            get(
                |State(state): State<ClusterState>, headers: HeaderMap| async move {
                    discovery::api(&state.served(), &headers, &state.server_address)
                },
            ),
        )
        .route(
            "/apis",
            get(
                |State(state): State<ClusterState>, headers: HeaderMap| async move {
                    discovery::apis(&state.served(), &headers)
                },
            ),
        )
        .route(
            "/api/{version}",
            get(
                |State(state): State<ClusterState>, Path(version): Path<String>| async move {
                    discovery::resource_list(&state.served(), "", &version)
                },
            ),
        )
        .route(
            "/apis/{group}",
            get(
                |State(state): State<ClusterState>, Path(group): Path<String>| async move {
                    discovery::group(&state.served(), &group)
                },
            ),
        )
        .route(
            "/apis/{group}/{version}",
            get(
                |State(state): State<ClusterState>,
                 Path((group, version)): Path<(String, String)>| async move {
                    discovery::resource_list(&state.served(), &group, &version)
                },
            ),
        )
        .route(
            "/openapi/v3",
            get(|State(state): State<ClusterState>| async move {
                json(&openapi::v3_root(&state.served()))
            }),
        )
        .route(
            "/openapi/v3/{*path}",
            get(
                |State(state): State<ClusterState>,
                 Path(path): Path<String>,
                 RawQuery(query): RawQuery,
                 headers: HeaderMap| async move {
                    openapi::serve_v3_group(&state.served(), &path, query.as_deref(), &headers)
                },
            ),
        )
        .route(
            "/openapi/v2",
            get(|State(state): State<ClusterState>| async move {
                let mut response = openapi::v2_protobuf(&state.served()).into_response();
                // kubectl cannot parse the protobuf media type's `@`; a real server answers octet-stream too.
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/octet-stream"),
                );
                response
            }),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            axum::routing::post(review::access_review),
        )
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            axum::routing::post(review::rules_review),
        )
        .route(
            "/apis/authentication.k8s.io/{version}/selfsubjectreviews",
            axum::routing::post(review::self_subject_review),
        )
        .fallback(resource::handle)
        .layer(axum::extract::DefaultBodyLimit::max(resource::MAX_BODY))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            faults::middleware,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::api::guard::middleware,
        ))
        .with_state(state)
}
