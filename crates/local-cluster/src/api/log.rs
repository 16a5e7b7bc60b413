//! `GET /api/v1/namespaces/{ns}/pods/{name}/log`: what a pod's container printed, as the API server and the
//! kubelet serve it together (reference §3.6 "Logs"): the options (`container`, `previous`, `tailLines`,
//! `limitBytes`, `timestamps`, `sinceSeconds`/`sinceTime`, `follow`), the API server's container choice and its
//! 400s, the kubelet's "waiting to start" and "previous terminated container" 400s, and `follow` streaming
//! until the container stops running or the pod goes away.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::ClusterState;
use super::path::Target;
use super::query::Query;
use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::logs::{self, Render};
use crate::registry::meta;
use crate::registry::ops;
use crate::registry::resources::ResourceType;
use crate::registry::store::Store;

/// How often a `follow` stream looks for new output and for the container's end.
const FOLLOW_POLL: Duration = Duration::from_millis(50);

/// The parsed query of a log request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct LogOptions {
    container: Option<String>,
    previous: bool,
    follow: bool,
    limit_bytes: Option<usize>,
    render: Render,
}

fn number(query: &Query, key: &str) -> Result<Option<i64>, ApiError> {
    match query.get(key).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(text) => text.parse::<i64>().map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "strconv.ParseInt: parsing \"{text}\": invalid syntax"
            ))
        }),
    }
}

impl LogOptions {
    /// Parses and validates the query as the API server validates `PodLogOptions`.
    fn parse(name: &str, query: &Query, now: jiff::Timestamp) -> Result<Self, ApiError> {
        let mut errors = Vec::new();
        let tail_lines = number(query, "tailLines")?;
        if let Some(n) = tail_lines.filter(|n| *n < 0) {
            errors.push(FieldError::invalid(
                "tailLines",
                &json!(n),
                "must be greater than or equal to 0",
            ));
        }
        let limit_bytes = number(query, "limitBytes")?;
        if let Some(n) = limit_bytes.filter(|n| *n < 1) {
            errors.push(FieldError::invalid(
                "limitBytes",
                &json!(n),
                "must be greater than 0",
            ));
        }
        let since_seconds = number(query, "sinceSeconds")?;
        if let Some(n) = since_seconds.filter(|n| *n < 1) {
            errors.push(FieldError::invalid(
                "sinceSeconds",
                &json!(n),
                "must be greater than 0",
            ));
        }
        let since_time = match query.get("sinceTime").filter(|v| !v.is_empty()) {
            None => None,
            Some(text) => Some(meta::parse_time(text).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "parsing time \"{text}\" as \"2006-01-02T15:04:05Z07:00\": cannot parse"
                ))
            })?),
        };
        if since_seconds.is_some() && since_time.is_some() {
            errors.push(FieldError::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            ));
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid_log_options(name, &errors));
        }
        let since = since_time.or_else(|| {
            since_seconds.and_then(|s| now.checked_sub(jiff::SignedDuration::from_secs(s)).ok())
        });
        let size = |n: Option<i64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        Ok(LogOptions {
            container: query
                .get("container")
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            previous: query.flag("previous"),
            follow: query.flag("follow"),
            limit_bytes: size(limit_bytes),
            render: Render {
                tail_lines: size(tail_lines),
                since,
                timestamps: query.flag("timestamps"),
            },
        })
    }
}

fn names(pod: &Value, field: &str) -> Vec<String> {
    meta::at(pod, &["spec", field])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The API server's choice of container, with its 400s.
fn choose_container(pod: &Value, name: &str, requested: Option<&str>) -> Result<String, ApiError> {
    let containers = names(pod, "containers");
    let Some(requested) = requested else {
        return match containers.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => {
                let init = names(pod, "initContainers");
                let or_init = if init.is_empty() {
                    String::new()
                } else {
                    format!(" or one of the init containers: [{}]", init.join(" "))
                };
                Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]{or_init}",
                    containers.join(" ")
                )))
            }
        };
    };
    let known = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .any(|field| names(pod, field).iter().any(|c| c == requested));
    if known {
        Ok(requested.to_owned())
    } else {
        Err(ApiError::bad_request(format!(
            "container {requested} is not valid for pod {name}"
        )))
    }
}

/// The container's entry in the pod status.
fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|field| meta::at(pod, &["status", field]).and_then(Value::as_array))
    .flatten()
    .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
}

/// The kubelet's choice of container instance (0 the latest, 1 the one before), with its 400s.
fn choose_instance(
    pod: &Value,
    name: &str,
    container: &str,
    previous: bool,
) -> Result<usize, ApiError> {
    let Some(status) = container_status(pod, container) else {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is not available"
        )));
    };
    let state = |key: &str| meta::at(status, &["state", key]);
    let last_terminated = meta::at(status, &["lastState", "terminated"]).is_some();
    if previous {
        if !last_terminated {
            return Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            )));
        }
        // While the container waits to restart, the previous instance is the latest one that ran.
        return Ok(usize::from(state("waiting").is_none()));
    }
    if state("running").is_some() || state("terminated").is_some() || last_terminated {
        return Ok(0);
    }
    let message = match state("waiting")
        .and_then(|w| w.get("reason"))
        .and_then(Value::as_str)
    {
        Some("ErrImagePull") => "is waiting to start: image can't be pulled".to_owned(),
        Some("ImagePullBackOff") => {
            "is waiting to start: trying and failing to pull image".to_owned()
        }
        Some(reason) => format!("is waiting to start: {reason}"),
        None => "is waiting to start - no logs yet".to_owned(),
    };
    Err(ApiError::bad_request(format!(
        "container \"{container}\" in pod \"{name}\" {message}"
    )))
}

fn text_plain(body: Body) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

/// Whether the request is for `pods/{name}/log`.
pub(super) fn addressed(target: &Target) -> bool {
    target.subresource.as_deref() == Some("log")
        && target.resource.plural == "pods"
        && target.resource.group.is_empty()
}

/// Serves `pods/{name}/log`.
pub(super) fn serve(
    state: &ClusterState,
    method: &Method,
    target: &Target,
    query: &Query,
) -> Result<Response, ApiError> {
    let resource = target.resource;
    if method != Method::GET {
        return Err(ApiError::method_not_allowed(
            &method.as_str().to_lowercase(),
            resource,
        ));
    }
    let (Some(namespace), Some(name)) = (target.namespace.as_deref(), target.name.as_deref())
    else {
        return Err(ApiError::path_not_found());
    };
    let options = LogOptions::parse(name, query, state.store.clock().now())?;
    let pod = ops::get(&state.store, resource, namespace, name)?;
    let container = choose_container(&pod, name, options.container.as_deref())?;
    if meta::str_at(&pod, &["spec", "nodeName"]).is_none_or(str::is_empty) {
        // Not scheduled yet: the API server has no kubelet to ask and answers with nothing.
        return Ok(text_plain(Body::empty()));
    }
    let back = choose_instance(&pod, name, &container, options.previous)?;
    let (text, started, sent) = state.store.logs(|logs| {
        let instances = logs.container(namespace, name, &container);
        let lines = instances.and_then(|i| i.get(back)).unwrap_or_default();
        (
            logs::render(lines, &options.render),
            instances.map_or(0, |i| i.started),
            lines.len(),
        )
    });
    let body = logs::limit(&text, options.limit_bytes).to_vec();
    let running = container_status(&pod, &container)
        .and_then(|s| meta::at(s, &["state", "running"]))
        .is_some();
    if !(options.follow && back == 0 && running) {
        return Ok(text_plain(Body::from(body)));
    }
    let follow = Follow {
        store: state.store.clone(),
        resource,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: meta::uid(&pod).to_owned(),
        container,
        started,
        sent,
        remaining: options
            .limit_bytes
            .map(|limit| limit.saturating_sub(body.len())),
        timestamps: options.render.timestamps,
        shutdown: state.shutdown.clone(),
        first: Some(body),
        done: false,
    };
    let stream = futures::stream::unfold(follow, |mut follow| async move {
        follow
            .next()
            .await
            .map(|chunk| (Ok::<_, Infallible>(Bytes::from(chunk)), follow))
    });
    Ok(text_plain(Body::from_stream(stream)))
}

/// A `follow` stream's position in one container instance.
struct Follow {
    store: Store,
    resource: &'static ResourceType,
    namespace: String,
    name: String,
    uid: String,
    container: String,
    /// Which instance is followed (see [`logs::Instances::started`]).
    started: u64,
    /// How many of its lines were sent.
    sent: usize,
    /// What is left of `limitBytes`.
    remaining: Option<usize>,
    timestamps: bool,
    shutdown: CancellationToken,
    first: Option<Vec<u8>>,
    done: bool,
}

impl Follow {
    /// The next chunk: what was printed since the last one; `None` once the container stopped running, the pod
    /// went away, `limitBytes` is used up or the server shuts down.
    async fn next(&mut self) -> Option<Vec<u8>> {
        if let Some(first) = self.first.take().filter(|f| !f.is_empty()) {
            return Some(first);
        }
        loop {
            if self.done || self.remaining == Some(0) || self.shutdown.is_cancelled() {
                return None;
            }
            let pod = self
                .store
                .get(self.resource, &self.namespace, &self.name)
                .filter(|p| meta::uid(p) == self.uid);
            let running = pod
                .as_ref()
                .and_then(|p| container_status(p, &self.container))
                .and_then(|s| meta::at(s, &["state", "running"]))
                .is_some();
            let (chunk, same_instance) = self.store.logs(|logs| {
                let Some(instances) = logs.container(&self.namespace, &self.name, &self.container)
                else {
                    return (String::new(), false);
                };
                if instances.started != self.started {
                    return (String::new(), false);
                }
                let lines = instances.get(0).unwrap_or_default();
                let new = lines.get(self.sent..).unwrap_or_default();
                self.sent = lines.len();
                let chunk: String = new
                    .iter()
                    .map(|l| logs::render_line(l, self.timestamps))
                    .collect();
                (chunk, true)
            });
            if pod.is_none() || !running || !same_instance {
                self.done = true;
            }
            if !chunk.is_empty() {
                let bytes = logs::limit(&chunk, self.remaining).to_vec();
                self.remaining = self.remaining.map(|r| r.saturating_sub(bytes.len()));
                return Some(bytes);
            }
            if self.done {
                return None;
            }
            tokio::select! {
                () = tokio::time::sleep(FOLLOW_POLL) => {}
                () = self.shutdown.cancelled() => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: &Value) -> Value {
        json!({"metadata": {"name": "x"}, "spec": {"nodeName": "n",
            "initContainers": [{"name": "init"}], "containers": [{"name": "job"}, {"name": "side"}]},
            "status": {"containerStatuses": [status]}})
    }

    fn message(result: Result<impl std::fmt::Debug, ApiError>) -> String {
        let error = result.expect_err("an error");
        assert_eq!(error.code, 400);
        error.message
    }

    #[test]
    fn the_api_server_chooses_the_container() {
        let p = pod(&json!({}));
        assert_eq!(
            message(choose_container(&p, "x", None)),
            "a container name must be specified for pod x, choose one of: [job side] or one of the init containers: [init]"
        );
        assert_eq!(
            message(choose_container(&p, "x", Some("nope"))),
            "container nope is not valid for pod x"
        );
        assert_eq!(
            choose_container(&p, "x", Some("init")).expect("valid"),
            "init"
        );
    }

    #[test]
    fn the_kubelet_chooses_the_instance() {
        let waiting =
            |reason: &str| pod(&json!({"name": "job", "state": {"waiting": {"reason": reason}}}));
        assert_eq!(
            message(choose_instance(
                &waiting("ContainerCreating"),
                "x",
                "job",
                false
            )),
            "container \"job\" in pod \"x\" is waiting to start: ContainerCreating"
        );
        assert_eq!(
            message(choose_instance(
                &waiting("ImagePullBackOff"),
                "x",
                "job",
                false
            )),
            "container \"job\" in pod \"x\" is waiting to start: trying and failing to pull image"
        );
        assert_eq!(
            message(choose_instance(&waiting("ErrImagePull"), "x", "job", false)),
            "container \"job\" in pod \"x\" is waiting to start: image can't be pulled"
        );
        assert_eq!(
            message(choose_instance(
                &waiting("ContainerCreating"),
                "x",
                "job",
                true
            )),
            "previous terminated container \"job\" in pod \"x\" not found"
        );
        assert_eq!(
            message(choose_instance(&waiting("x"), "x", "side", false)),
            "container \"side\" in pod \"x\" is not available"
        );
        let backing_off = pod(
            &json!({"name": "job", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1}}}),
        );
        assert_eq!(
            choose_instance(&backing_off, "x", "job", false).expect("ok"),
            0
        );
        assert_eq!(
            choose_instance(&backing_off, "x", "job", true).expect("ok"),
            0
        );
        let restarted = pod(&json!({"name": "job", "state": {"running": {}},
            "lastState": {"terminated": {"exitCode": 1}}}));
        assert_eq!(
            choose_instance(&restarted, "x", "job", true).expect("ok"),
            1
        );
    }

    #[test]
    fn options_are_validated_like_pod_log_options() {
        let query = Query::parse(Some("tailLines=-1&limitBytes=0"));
        let error = LogOptions::parse("x", &query, jiff::Timestamp::now()).expect_err("invalid");
        assert_eq!(error.code, 422);
        assert!(
            error
                .message
                .starts_with("PodLogOptions \"x\" is invalid: "),
            "{}",
            error.message
        );
        let query = Query::parse(Some(
            "container=job&tailLines=2&timestamps=true&follow=true&previous=1&limitBytes=10",
        ));
        let options = LogOptions::parse("x", &query, jiff::Timestamp::now()).expect("valid");
        assert_eq!(options.container.as_deref(), Some("job"));
        assert!(options.previous && options.follow && options.render.timestamps);
        assert_eq!(
            (options.render.tail_lines, options.limit_bytes),
            (Some(2), Some(10))
        );
    }
}
