//! The middleware every request passes first: it refuses what a web page could make a browser send (a `Host`
//! that is not the cluster's own address — DNS rebinding —, any `Origin`), authenticates (client certificate of
//! the connection, else the owner's bearer token; 401 otherwise), authorizes ([`super::policy`]; 403), and
//! refuses writes whose body is not in an API media type (415), before any handler runs.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::policy;
use crate::api::ClusterState;
use crate::api::request_info::RequestInfo;
use crate::auth::{Identity, PeerIdentity};
use crate::registry::api_error::ApiError;

/// Paths anyone may reach without credentials, as on Kubernetes (`system:public-info-viewer`).
const OPEN_PATHS: [&str; 4] = ["/version", "/healthz", "/readyz", "/livez"];

/// The media types a write may carry (JSON, YAML, protobuf and the patch types).
const WRITE_MEDIA_TYPES: [&str; 7] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// What the guard checks requests against.
#[derive(Debug)]
pub(crate) struct Guard {
    /// The `Host` values that name this server (`127.0.0.1:<port>`, `localhost:<port>`, `[::1]:<port>`).
    hosts: Vec<String>,
    admin_token: String,
}

impl Guard {
    pub(crate) fn new(port: u16, admin_token: &str) -> Guard {
        Guard {
            hosts: ["127.0.0.1", "localhost", "[::1]"]
                .iter()
                .map(|host| format!("{host}:{port}"))
                .collect(),
            admin_token: admin_token.to_owned(),
        }
    }

    /// The identity the bearer token names, if it is the owner's. The comparison takes the same time wherever
    /// the first difference is.
    fn token_identity(&self, headers: &HeaderMap) -> Option<Identity> {
        let token = headers
            .get(header::AUTHORIZATION)?
            .to_str()
            .ok()?
            .strip_prefix("Bearer ")?
            .trim();
        let expected = self.admin_token.as_bytes();
        let difference = token
            .as_bytes()
            .iter()
            .zip(expected)
            .fold(token.len() ^ expected.len(), |acc, (a, b)| {
                acc | usize::from(a ^ b)
            });
        (difference == 0).then(Identity::admin)
    }

    /// Refuses requests that did not come from a client of this server's own address.
    fn check_origin(&self, request: &Request) -> Result<(), ApiError> {
        if request.headers().contains_key(header::ORIGIN) {
            return Err(ApiError::forbidden(
                "requests from web pages (with an Origin header) are refused by the local cluster",
            ));
        }
        // HTTP/2 carries the host in the URI's authority, HTTP/1.1 in the Host header.
        let host = request
            .uri()
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| {
                request
                    .headers()
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .map(str::to_owned)
            });
        match host {
            Some(host) if self.hosts.iter().any(|own| own.eq_ignore_ascii_case(&host)) => Ok(()),
            Some(host) => Err(ApiError::forbidden(format!(
                "host \"{host}\" is not the local cluster's address; use https://{}",
                self.hosts[0]
            ))),
            None => Err(ApiError::bad_request("the request has no Host")),
        }
    }
}

fn is_open(path: &str) -> bool {
    OPEN_PATHS.iter().any(|open| {
        path.strip_prefix(open)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// 415 unless a write's body is in an API media type, which keeps a browser's form posts (`text/plain`, form
/// encodings) out. A create or replace without `Content-Type` is JSON, as kube-apiserver reads it (the official
/// Python client sends none); a browser cannot send one unnoticed, as it adds an `Origin`. A patch names its type.
/// A connection upgrade (kubectl exec's SPDY POST, which has no body) is not a write, and browsers cannot send the
/// `Upgrade` header on a POST.
fn check_media_type(request: &Request) -> Result<(), ApiError> {
    let method = request.method();
    if !matches!(*method, Method::POST | Method::PUT | Method::PATCH)
        || request.headers().contains_key(header::UPGRADE)
    {
        return Ok(());
    }
    let media_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|value| value.trim().to_ascii_lowercase());
    match media_type {
        Some(media_type) if WRITE_MEDIA_TYPES.contains(&media_type.as_str()) => Ok(()),
        None if *method != Method::PATCH => Ok(()),
        _ => Err(ApiError::unsupported_media_type(&WRITE_MEDIA_TYPES[..3])),
    }
}

/// The middleware; the authenticated [`Identity`] is attached to the request for the handlers.
pub(crate) async fn middleware(
    State(state): State<ClusterState>,
    mut request: Request,
    next: Next,
) -> Response {
    let guard: &Arc<Guard> = &state.guard;
    if let Err(error) = guard.check_origin(&request) {
        return error.into_response();
    }
    let peer = request
        .extensions()
        .get::<PeerIdentity>()
        .and_then(|peer| peer.0.clone());
    let identity = peer.or_else(|| guard.token_identity(request.headers()));
    let path = request.uri().path();
    let Some(identity) = identity else {
        if is_open(path) && request.method() == Method::GET {
            return next.run(request).await;
        }
        return ApiError::unauthorized().into_response();
    };
    let info = RequestInfo::parse(request.method(), request.uri());
    if !policy::allows(&identity, &info) {
        return policy::forbidden(&identity, &info).into_response();
    }
    if let Err(error) = check_media_type(&request) {
        return error.into_response();
    }
    request.extensions_mut().insert(identity);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::builder()
            .method(method)
            .uri("/api/v1/namespaces/a/pods");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(axum::body::Body::empty()).expect("request")
    }

    #[test]
    fn only_the_own_address_without_origin_passes() {
        let guard = Guard::new(6443, "t");
        assert!(
            guard
                .check_origin(&request(Method::GET, &[("host", "127.0.0.1:6443")]))
                .is_ok()
        );
        assert!(
            guard
                .check_origin(&request(Method::GET, &[("host", "LOCALHOST:6443")]))
                .is_ok()
        );
        for headers in [
            &[("host", "evil.example:6443")][..],
            &[("host", "127.0.0.1:80")],
            &[
                ("host", "127.0.0.1:6443"),
                ("origin", "https://evil.example"),
            ],
            &[("host", "127.0.0.1:6443"), ("origin", "null")],
            &[],
        ] {
            assert!(
                guard.check_origin(&request(Method::GET, headers)).is_err(),
                "{headers:?}"
            );
        }
    }

    #[test]
    fn only_the_exact_token_authenticates() {
        let guard = Guard::new(1, "secret");
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().expect("header"));
            guard.token_identity(&headers)
        };
        assert_eq!(with("Bearer secret"), Some(Identity::admin()));
        for wrong in [
            "Bearer secre",
            "Bearer secrets",
            "Bearer ",
            "Basic secret",
            "secret",
        ] {
            assert_eq!(with(wrong), None, "{wrong}");
        }
        assert_eq!(guard.token_identity(&HeaderMap::new()), None);
    }

    #[test]
    fn writes_need_an_api_media_type() {
        let write = |content_type: Option<&str>| {
            let headers: Vec<(&str, &str)> = content_type
                .map(|c| ("content-type", c))
                .into_iter()
                .collect();
            check_media_type(&request(Method::POST, &headers))
        };
        assert!(write(Some("application/json")).is_ok());
        assert!(write(Some("application/json; charset=utf-8")).is_ok());
        assert!(write(Some("application/apply-patch+yaml")).is_ok());
        assert!(write(None).is_ok(), "a create without a type is JSON");
        assert!(
            check_media_type(&request(Method::PATCH, &[])).is_err(),
            "a patch names its type"
        );
        for refused in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
        ] {
            let error = write(refused).expect_err("refused");
            assert_eq!(error.code, 415, "{refused:?}");
        }
        assert!(check_media_type(&request(Method::DELETE, &[])).is_ok());
        assert!(is_open("/healthz") && is_open("/readyz/ping") && !is_open("/healthzx"));
    }
}
