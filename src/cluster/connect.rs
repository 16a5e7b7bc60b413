//! Connecting: `--kubeconfig FILE` and `--context NAME`, else the usual kubeconfig search (`$KUBECONFIG`,
//! `~/.kube/config`), else the in-cluster service account (the `watch` daemon running as a Toolforge job), else —
//! or with `--local` — the embedded local cluster ([`embedded`]).
//!
//! Every client gets a [`Guard`] around kube's HTTP stack, so that no server can hang the command or fill its
//! memory: each request must be answered within `--request-timeout` ([`Limits`]), may not pause longer than the
//! idle limit while its body arrives, and may not be larger than [`MAX_RESPONSE_BYTES`]. Streams (watches,
//! `logs --follow`) are exempt from the per-request timeout — a watch lasts minutes by design — but a watch that
//! stays silent past its server-side timeout plus a margin is cut, and no line of a stream may exceed the size
//! limit. Errors say which server, and quote at most [`QUOTED_BYTES`] of a body.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt as _;
use kube::client::{Body, ClientBuilder};
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use tokio::time::{Instant, Sleep};
use tower::BoxError;

use super::embedded;

/// Which cluster to talk to, as the user named it.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// `--local`: the embedded local cluster, whatever else is configured.
    pub local: bool,
    /// `--request-timeout` (`None`: [`DEFAULT_REQUEST_TIMEOUT`]).
    pub request_timeout: Option<Duration>,
}

impl Target {
    /// Whether this target is the embedded local cluster: asked for, or nothing else is configured.
    pub fn is_embedded(&self) -> bool {
        self.local
            || (self.kubeconfig.is_none() && self.context.is_none() && embedded::is_default())
    }
}

/// A client and the namespace the configuration chose (the context's namespace, or the pod's).
#[derive(Clone)]
pub struct Connection {
    pub client: kube::Client,
    pub default_namespace: String,
    /// The API server's URL, for messages.
    pub server: String,
    /// Set when this is the embedded local cluster.
    pub embedded: Option<embedded::Running>,
}

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot read the kubeconfig `{}`", .path.display())]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot use the kubeconfig")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    #[error(
        "no cluster configured: no kubeconfig (`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`) and not running in a pod; start one with `toolforge-jobs local-cluster --kubeconfig-out FILE` and pass `--kubeconfig FILE`"
    )]
    NoConfiguration(#[source] kube::config::InferConfigError),
    #[error("cannot create a Kubernetes client")]
    Client(#[source] kube::Error),
    #[error("cannot use the API server URL `{url}` of the kubeconfig")]
    ClusterUrl { url: String },
    #[error("the local cluster is not available")]
    Embedded(#[from] embedded::EmbeddedError),
}

/// Builds a client for `target`, starting the embedded local cluster when it is the target.
pub async fn connect(target: &Target) -> Result<Connection, ConnectError> {
    let options = KubeConfigOptions {
        context: target.context.clone(),
        ..KubeConfigOptions::default()
    };
    let running = if target.is_embedded() {
        Some(embedded::off_runtime(embedded::ensure_running).await?)
    } else {
        None
    };
    let kubeconfig = running
        .as_ref()
        .map(|running| running.kubeconfig.clone())
        .or_else(|| target.kubeconfig.clone());
    let config = match &kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).map_err(|source| ConnectError::ReadKubeconfig {
                    path: path.clone(),
                    source,
                })?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(ConnectError::Kubeconfig)?
        }
        None if target.context.is_some() => Config::from_kubeconfig(&options)
            .await
            .map_err(ConnectError::Kubeconfig)?,
        None => Config::infer()
            .await
            .map_err(ConnectError::NoConfiguration)?,
    };
    let default_namespace = config.default_namespace.clone();
    let server = config.cluster_url.to_string();
    let limits = Limits::new(target.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT));
    let client = client(config, limits)?;
    Ok(Connection {
        client,
        default_namespace,
        server,
        embedded: running,
    })
}

/// How long one request may take from sending it to the end of its response, unless `--request-timeout` says
/// otherwise.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest wait for a TCP (and TLS) connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest pause of a server in the middle of a response, and the longest wait for a stream's headers.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a watch may stay silent beyond the timeout it asked the server for, before it counts as dead.
const WATCH_MARGIN: Duration = Duration::from_secs(30);
/// The server-side timeout of a watch that asks for none (kube-runtime's watcher always asks for 290 s).
const DEFAULT_WATCH_SECONDS: u64 = 290;
/// The largest response, and the longest line of a stream: far above any LIST of one tool's objects.
pub const MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;
/// The largest error response (a `Status` is a few hundred bytes).
const MAX_ERROR_BYTES: u64 = 1024 * 1024;
/// How much of a body an error message quotes.
pub const QUOTED_BYTES: usize = 300;

/// The client's timeouts, all derived from the per-request one so that a short `--request-timeout` shortens
/// them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From sending a request to the end of its response (streams: to their headers).
    pub request: Duration,
    /// Connecting: [`CONNECT_TIMEOUT`] at most.
    pub connect: Duration,
    /// The longest pause within a response: [`IDLE_TIMEOUT`] at most.
    pub idle: Duration,
}

impl Limits {
    pub fn new(request: Duration) -> Self {
        Limits {
            request,
            connect: CONNECT_TIMEOUT.min(request),
            idle: IDLE_TIMEOUT.min(request),
        }
    }
}

/// A client for `config` whose requests are bounded by `limits`.
fn client(mut config: Config, limits: Limits) -> Result<kube::Client, ConnectError> {
    let server: Arc<str> = config.cluster_url.to_string().into();
    if config.cluster_url.host().is_none() {
        return Err(ConnectError::ClusterUrl {
            url: server.to_string(),
        });
    }
    config.connect_timeout = Some(limits.connect);
    // Socket writes are small requests; a server that does not take them is as stuck as one that does not answer.
    config.write_timeout = Some(limits.idle);
    // No socket read timeout: it would also run while a pooled connection waits for its next request, and cut
    // watches. The guard times each response instead.
    config.read_timeout = None;
    let builder = ClientBuilder::try_from(config).map_err(ConnectError::Client)?;
    Ok(builder.with_layer(&Guard { server, limits }).build())
}

/// Why a request to the API server failed below the API: the connection, a timeout, a size limit. Always names
/// the server.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot reach the API server at {server}")]
    Unreachable {
        server: Arc<str>,
        #[source]
        source: BoxError,
    },
    #[error(
        "the API server at {server} did not answer within {} (`--request-timeout`)",
        seconds(*.after)
    )]
    TimedOut { server: Arc<str>, after: Duration },
    #[error("the API server at {server} stopped sending its answer for {}", seconds(*.after))]
    Stalled { server: Arc<str>, after: Duration },
    #[error(
        "the answer of the API server at {server} is larger than {} MiB; it was not read to the end",
        .limit / 1024 / 1024
    )]
    TooLarge { server: Arc<str>, limit: u64 },
}

/// The server of the first [`TransportError`] in `error`'s chain that says it cannot be reached or does not
/// answer; `None` when the server did answer (an API error, a size limit).
pub fn unreachable_server<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a str> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(transport) = error.downcast_ref::<TransportError>() {
            return match transport {
                TransportError::Unreachable { server, .. }
                | TransportError::TimedOut { server, .. }
                | TransportError::Stalled { server, .. } => Some(server),
                TransportError::TooLarge { .. } => None,
            };
        }
        cause = error.source();
    }
    None
}

fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// The tower layer that bounds every request and response ([module docs](self)).
#[derive(Debug, Clone)]
struct Guard {
    server: Arc<str>,
    limits: Limits,
}

impl<S> tower::Layer<S> for Guard {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            guard: self.clone(),
        }
    }
}

/// kube's HTTP stack inside a [`Guard`].
#[derive(Debug, Clone)]
struct Guarded<S> {
    inner: S,
    guard: Guard,
}

/// What kind of response a request asks for, from its query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One answer, within the request timeout.
    Whole,
    /// A watch: silent at most for its server-side timeout plus [`WATCH_MARGIN`].
    Watch { silent: Duration },
    /// `follow=true` (a pod's log): silent as long as the program is.
    Follow,
}

impl Shape {
    fn of(uri: &http::Uri) -> Self {
        let mut shape = Shape::Whole;
        let mut timeout = DEFAULT_WATCH_SECONDS;
        for pair in uri.query().unwrap_or_default().split('&') {
            match pair.split_once('=').unwrap_or((pair, "")) {
                ("watch", "true" | "1") => {
                    shape = Shape::Watch {
                        silent: Duration::ZERO,
                    };
                }
                ("follow", "true" | "1") => shape = Shape::Follow,
                ("timeoutSeconds", value) => {
                    timeout = value.parse().unwrap_or(DEFAULT_WATCH_SECONDS);
                }
                _ => {}
            }
        }
        match shape {
            Shape::Watch { .. } => Shape::Watch {
                silent: Duration::from_secs(timeout) + WATCH_MARGIN,
            },
            other => other,
        }
    }
}

impl<S, B> tower::Service<Request<Body>> for Guarded<S>
where
    S: tower::Service<Request<Body>, Response = Response<B>, Error = BoxError>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes, Error = BoxError> + Send + Unpin + 'static,
{
    type Response = Response<GuardedBody<B>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        let server = &self.guard.server;
        self.inner
            .poll_ready(cx)
            .map_err(|source| unreachable(server, source))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let Guard { server, limits } = self.guard.clone();
        let shape = Shape::of(request.uri());
        let started = Instant::now();
        let answer = self.inner.call(request);
        Box::pin(async move {
            // A stream's headers come at once, as a whole answer's do.
            let headers_within = limits.request;
            let response = tokio::time::timeout(headers_within, answer)
                .await
                .map_err(|_| TransportError::TimedOut {
                    server: server.clone(),
                    after: headers_within,
                })?
                .map_err(|source| unreachable(&server, source))?;
            let (parts, body) = response.into_parts();
            let limited = Limited {
                inner: body,
                server: server.clone(),
                lines: shape != Shape::Whole,
                limit: MAX_RESPONSE_BYTES,
                counted: 0,
                idle: match shape {
                    Shape::Whole => Some(limits.idle),
                    Shape::Watch { silent } => Some(silent),
                    Shape::Follow => None,
                },
                idle_timer: None,
                deadline: (shape == Shape::Whole).then(|| {
                    (
                        limits.request,
                        Box::pin(tokio::time::sleep_until(started + limits.request)),
                    )
                }),
            };
            if parts.status.is_client_error() || parts.status.is_server_error() {
                let quoted = quoted_error(Limited {
                    limit: MAX_ERROR_BYTES,
                    lines: false,
                    ..limited
                })
                .await?;
                return Ok(Response::from_parts(
                    parts,
                    GuardedBody::Buffered(Some(quoted)),
                ));
            }
            Ok(Response::from_parts(parts, GuardedBody::Streaming(limited)))
        })
    }
}

/// An error of kube's stack, as it is when kube made it (auth, a bad request), else as a [`TransportError`]
/// that names the server.
fn unreachable(server: &Arc<str>, source: BoxError) -> BoxError {
    if source.is::<kube::Error>() {
        return source;
    }
    Box::new(TransportError::Unreachable {
        server: server.clone(),
        source,
    })
}

/// An error response's body as kube will quote it: a JSON body (a `Status`) as it is, anything else cut to
/// [`QUOTED_BYTES`], so that an HTML page or a flood of bytes is not printed in full.
async fn quoted_error<B>(body: Limited<B>) -> Result<Bytes, BoxError>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    let bytes = body.collect().await?.to_bytes();
    if serde_json::from_slice::<serde_json::Value>(&bytes).is_ok() || bytes.len() <= QUOTED_BYTES {
        return Ok(bytes);
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut end = QUOTED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Ok(Bytes::from(format!(
        "{}… ({} bytes in all)",
        &text[..end],
        bytes.len()
    )))
}

/// A response body: streamed within the limits, or an error body already read.
enum GuardedBody<B> {
    Streaming(Limited<B>),
    Buffered(Option<Bytes>),
}

impl<B> http_body::Body for GuardedBody<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            GuardedBody::Streaming(body) => Pin::new(body).poll_frame(cx),
            GuardedBody::Buffered(bytes) => {
                Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            GuardedBody::Streaming(body) => body.inner.is_end_stream(),
            GuardedBody::Buffered(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            GuardedBody::Streaming(body) => body.inner.size_hint(),
            GuardedBody::Buffered(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |bytes| bytes.len() as u64))
            }
        }
    }
}

/// A body that fails when it is larger than its limit (streams: a line longer than it), pauses longer than its
/// idle limit, or is not done by its deadline.
struct Limited<B> {
    inner: B,
    server: Arc<str>,
    /// Whether the limit is per line (streams) rather than for the whole body.
    lines: bool,
    limit: u64,
    /// Bytes so far (streams: since the last newline).
    counted: u64,
    idle: Option<Duration>,
    /// Armed at the first poll, reset by every frame.
    idle_timer: Option<Pin<Box<Sleep>>>,
    /// The request timeout and when it runs out (not for streams).
    deadline: Option<(Duration, Pin<Box<Sleep>>)>,
}

impl<B> Limited<B> {
    /// Counts a frame's bytes; whether they are within the limit.
    fn count(&mut self, data: &Bytes) -> bool {
        let after_newline = if self.lines {
            data.iter().rposition(|byte| *byte == b'\n')
        } else {
            None
        };
        match after_newline {
            Some(newline) => self.counted = (data.len() - newline - 1) as u64,
            None => self.counted += data.len() as u64,
        }
        self.counted <= self.limit
    }
}

impl<B> http_body::Body for Limited<B>
where
    B: http_body::Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some((after, deadline)) = &mut this.deadline
            && deadline.as_mut().poll(cx).is_ready()
        {
            let error = TransportError::TimedOut {
                server: this.server.clone(),
                after: *after,
            };
            return Poll::Ready(Some(Err(error.into())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && !this.count(data)
                {
                    let error = TransportError::TooLarge {
                        server: this.server.clone(),
                        limit: this.limit,
                    };
                    return Poll::Ready(Some(Err(error.into())));
                }
                if let (Some(idle), Some(timer)) = (this.idle, &mut this.idle_timer) {
                    timer.as_mut().reset(Instant::now() + idle);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(other) => Poll::Ready(other),
            Poll::Pending => {
                let Some(idle) = this.idle else {
                    return Poll::Pending;
                };
                let timer = this
                    .idle_timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                if timer.as_mut().poll(cx).is_ready() {
                    let error = TransportError::Stalled {
                        server: this.server.clone(),
                        after: idle,
                    };
                    return Poll::Ready(Some(Err(error.into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_and_follows_are_streams_and_get_their_own_silence() {
        let shape = |uri: &str| Shape::of(&uri.parse().unwrap());
        assert_eq!(
            shape("/api/v1/namespaces/a/pods?labelSelector=x"),
            Shape::Whole
        );
        assert_eq!(
            shape("/api/v1/pods?watch=true&timeoutSeconds=290"),
            Shape::Watch {
                silent: Duration::from_secs(320)
            }
        );
        assert_eq!(
            shape("/api/v1/pods?watch=1"),
            Shape::Watch {
                silent: Duration::from_secs(DEFAULT_WATCH_SECONDS) + WATCH_MARGIN
            }
        );
        assert_eq!(
            shape("/api/v1/namespaces/a/pods/p/log?follow=true"),
            Shape::Follow
        );
        assert_eq!(shape("/api/v1/pods?watch=false"), Shape::Whole);
    }

    #[test]
    fn a_short_request_timeout_shortens_the_others() {
        assert_eq!(
            Limits::new(DEFAULT_REQUEST_TIMEOUT),
            Limits {
                request: DEFAULT_REQUEST_TIMEOUT,
                connect: CONNECT_TIMEOUT,
                idle: IDLE_TIMEOUT
            }
        );
        let short = Limits::new(Duration::from_secs(2));
        assert_eq!(
            (short.connect, short.idle),
            (Duration::from_secs(2), Duration::from_secs(2))
        );
    }

    #[tokio::test]
    async fn error_bodies_are_quoted_in_part() {
        let limited = |bytes: &'static [u8]| Limited {
            inner: http_body_util::Full::new(Bytes::from_static(bytes))
                .map_err(|never| match never {}),
            server: "https://example.org".into(),
            lines: false,
            limit: MAX_ERROR_BYTES,
            counted: 0,
            idle: None,
            idle_timer: None,
            deadline: None,
        };
        let status = br#"{"kind":"Status","message":"x"}"#;
        assert_eq!(quoted_error(limited(status)).await.unwrap(), &status[..]);
        let page: &'static [u8] = Box::leak(vec![b'<'; 10_000].into_boxed_slice());
        let quoted = quoted_error(limited(page)).await.unwrap();
        assert!(quoted.len() < QUOTED_BYTES + 40, "{}", quoted.len());
        assert!(quoted.ends_with("… (10000 bytes in all)".as_bytes()));
    }

    #[test]
    fn lines_of_a_stream_are_limited_one_by_one() {
        let mut body = Limited {
            inner: http_body_util::Empty::<Bytes>::new().map_err(|never| match never {}),
            server: "https://example.org".into(),
            lines: true,
            limit: 10,
            counted: 0,
            idle: None,
            idle_timer: None,
            deadline: None,
        };
        assert!(body.count(&Bytes::from_static(b"12345678\n123")));
        assert!(body.count(&Bytes::from_static(b"4567")));
        assert!(!body.count(&Bytes::from_static(b"89012")));
        body.lines = false;
        body.counted = 0;
        assert!(!body.count(&Bytes::from_static(b"12345\n12345\n")));
    }
}
