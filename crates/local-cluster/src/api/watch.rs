//! Watch streams: newline-delimited JSON events over a chunked 200 response, flushed per event, as kube-rs'
//! watcher and kubectl read them (reference §1.12). Handles the start point (`resourceVersion` unset, `0` or N),
//! selector transitions (ADDED/DELETED when an object enters or leaves the filter), bookmarks,
//! `timeoutSeconds`, and 410/504 ERROR events inside the stream. Streaming lists (`sendInitialEvents`) are refused
//! with 422, as Kubernetes 1.33 refuses them with its `WatchList` feature gate off by default; clients fall back to
//! list and watch.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::ClusterState;
use super::negotiate::Representation;
use super::query::Query;
use crate::clock::Clock;
use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::ops::Filter;
use crate::registry::resources::ResourceType;
use crate::registry::store::{Change, EventType, WatchStart};

/// Everything a running watch needs.
struct Watch {
    resource: &'static ResourceType,
    namespace: Option<String>,
    filter: Filter,
    bookmarks: bool,
    representation: Representation,
    /// The cluster's clock, for the ages of Table rows.
    clock: Clock,
    timeout: Duration,
    bookmark_interval: Duration,
}

/// Validates the watch options, resolves the start point and starts streaming.
pub(crate) fn serve(
    state: &ClusterState,
    resource: &'static ResourceType,
    namespace: Option<String>,
    query: &Query,
    representation: Representation,
) -> Result<Response, ApiError> {
    let filter = query.filter(resource)?;
    let send_initial = query
        .get("sendInitialEvents")
        .is_some_and(|v| !v.is_empty());
    let rv_match = query.get("resourceVersionMatch").filter(|v| !v.is_empty());
    // Kubernetes 1.33's validation of watch options, with the WatchList feature gate off by default.
    let mut errors = Vec::new();
    if send_initial {
        if rv_match != Some("NotOlderThan") {
            errors.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        errors.push(FieldError::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        ));
    } else if rv_match.is_some() {
        errors.push(FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_options("ListOptions", &errors));
    }
    let from = match query
        .get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0")
    {
        None => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            ApiError::invalid_options(
                "ListOptions",
                &[FieldError::invalid(
                    "resourceVersion",
                    &json!(text),
                    "must be a number",
                )],
            )
        })?),
    };
    let timeout = match query
        .get("timeoutSeconds")
        .filter(|t| !t.is_empty() && *t != "0")
    {
        Some(text) => Duration::from_secs(
            text.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {text}")))?,
        ),
        // No (or a zero) timeout: real servers pick a random 30–60 minute one; the middle is as good.
        None => Duration::from_secs(45 * 60),
    };
    let watch = Watch {
        resource,
        namespace,
        filter,
        bookmarks: query.flag("allowWatchBookmarks"),
        representation,
        clock: state.store.clock(),
        timeout,
        bookmark_interval: state.bookmark_interval,
    };
    let expired = state.faults.take_expire_next_watch();
    let (start, receiver) = state.store.watch_from(
        resource,
        watch.namespace.as_deref(),
        from,
        &watch.filter.required_text(),
    );
    let start = if expired {
        let current = state.store.resource_version();
        WatchStart::Expired(current + 1)
    } else {
        start
    };
    let (sender, mut lines) = mpsc::channel::<Bytes>(256);
    let closer = state.faults.watch_closer();
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        run(watch, start, from, receiver, sender, closer, shutdown).await;
    });
    let stream = futures::stream::poll_fn(move |cx| {
        lines
            .poll_recv(cx)
            .map(|line| line.map(Ok::<_, Infallible>))
    });
    let mut response = Body::from_stream(stream).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut text = json!({"type": kind, "object": object}).to_string();
    text.push('\n');
    Bytes::from(text)
}

fn error_line(error: &ApiError) -> Bytes {
    line("ERROR", &error.status_body())
}

impl Watch {
    fn in_scope(&self, object: &Value) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| crate::registry::meta::namespace(object) == ns)
    }

    fn visible(&self, object: &Value) -> bool {
        self.in_scope(object) && self.filter.matches(object)
    }

    fn render(&self, object: &Value) -> Value {
        self.representation
            .single(self.resource, object, self.clock.now())
    }

    /// The event a change produces for this watch, if any, applying the selector transitions.
    fn event(&self, change: &Change) -> Option<Bytes> {
        if !change.resource.is(self.resource) {
            return None;
        }
        let now = self.visible(&change.object);
        let before = change.old.as_ref().is_some_and(|o| self.visible(o));
        let kind = match change.event {
            EventType::Modified if before && now => "MODIFIED",
            EventType::Added | EventType::Modified if now => "ADDED",
            // A modified object that left the filter is DELETED for this watch (`now` is false here).
            EventType::Modified | EventType::Deleted if before || now => "DELETED",
            _ => return None,
        };
        if self.representation == Representation::Object && self.resource.presents_stored() {
            // Many watches send the same object: serialise it once.
            return Some(Bytes::from(format!(
                "{{\"type\":\"{kind}\",\"object\":{}}}\n",
                change.json()
            )));
        }
        Some(line(kind, &self.render(&change.object)))
    }

    fn bookmark(&self, resource_version: u64) -> Bytes {
        let metadata = json!({"resourceVersion": resource_version.to_string()});
        line(
            "BOOKMARK",
            &json!({"kind": self.resource.kind, "apiVersion": self.resource.api_version(), "metadata": metadata}),
        )
    }
}

/// A watch from a version the store has not reached yet waits up to 3 s for it, as a real server does, then
/// starts from it; if it never comes, the stream carries a 504 ERROR event. `None` means the stream is over.
async fn catch_up(
    watch: &Watch,
    requested: u64,
    mut current: u64,
    receiver: &mut broadcast::Receiver<Arc<Change>>,
    sender: &mpsc::Sender<Bytes>,
) -> Option<u64> {
    let give_up = tokio::time::sleep(Duration::from_secs(3));
    tokio::pin!(give_up);
    loop {
        tokio::select! {
            () = &mut give_up => {
                let error = ApiError::too_large_resource_version(requested, current);
                let _ = sender.send(error_line(&error)).await;
                return None;
            }
            next = receiver.recv() => {
                let change = next.ok()?;
                current = change.resource_version;
                if current > requested && let Some(event) = watch.event(&change) {
                    sender.send(event).await.ok()?;
                }
                if current >= requested {
                    return Some(current);
                }
            }
        }
    }
}

async fn run(
    watch: Watch,
    start: WatchStart,
    requested: Option<u64>,
    mut receiver: broadcast::Receiver<Arc<Change>>,
    sender: mpsc::Sender<Bytes>,
    mut closer: tokio::sync::watch::Receiver<u64>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let mut last = match start {
        WatchStart::Snapshot(objects, version) => {
            for object in objects.iter().filter(|o| watch.filter.matches(o)) {
                if sender
                    .send(line("ADDED", &watch.render(object)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            version
        }
        WatchStart::Backlog(changes, last) => {
            for change in changes {
                if let Some(event) = watch.event(&change)
                    && sender.send(event).await.is_err()
                {
                    return;
                }
            }
            last
        }
        WatchStart::Expired(oldest) => {
            let requested = requested.unwrap_or_default();
            let error =
                ApiError::expired(format!("too old resource version: {requested} ({oldest})"));
            let _ = sender.send(error_line(&error)).await;
            return;
        }
        WatchStart::TooLarge(current) => {
            let requested = requested.unwrap_or_default();
            match catch_up(&watch, requested, current, &mut receiver, &sender).await {
                Some(last) => last,
                None => return,
            }
        }
    };
    let deadline = tokio::time::sleep(watch.timeout);
    tokio::pin!(deadline);
    // `interval` refuses a zero period.
    let mut ticker = tokio::time::interval(watch.bookmark_interval.max(Duration::from_millis(1)));
    ticker.reset();
    loop {
        tokio::select! {
            () = &mut deadline => return,
            () = shutdown.cancelled() => return,
            _ = closer.changed() => return,
            () = sender.closed() => return,
            _ = ticker.tick(), if watch.bookmarks => {
                if sender.send(watch.bookmark(last)).await.is_err() {
                    return;
                }
            }
            next = receiver.recv() => match next {
                Ok(change) => {
                    last = change.resource_version;
                    if let Some(event) = watch.event(&change)
                        && sender.send(event).await.is_err()
                    {
                        return;
                    }
                }
                // A watcher that falls this far behind is closed; the client resumes from its last version.
                Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}
