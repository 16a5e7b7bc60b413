//! A job's pod logs through the Kubernetes API, as entries of upstream's logs-api: `datetime`, `pod`,
//! `container`, `message`, read with `timestamps=true` from every pod of the job; and the time window of
//! `--since`/`--until` (a time, or a duration before now) that selects them.

use futures::stream::BoxStream;
use futures::{AsyncBufReadExt as _, StreamExt as _, TryStreamExt as _};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use serde::Serialize;

use super::live::{LiveJob, LiveNamespace};
use crate::status::{self, Related};

/// One line a container printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LogEntry {
    /// RFC 3339, as the kubelet stamps it.
    pub datetime: String,
    pub pod: String,
    pub container: String,
    pub message: String,
}

impl LogEntry {
    /// From a `timestamps=true` log line `<time> <message>`.
    fn parse(line: &str, pod: &str, container: &str) -> Self {
        let (datetime, message) = line.split_once(' ').unwrap_or((line, ""));
        Self {
            datetime: datetime.to_owned(),
            pod: pod.to_owned(),
            container: container.to_owned(),
            message: message.to_owned(),
        }
    }

    /// `<time> [<pod>] [<container>] <message>`.
    pub fn line(&self) -> String {
        format!(
            "{} [{}] [{}] {}",
            self.datetime, self.pod, self.container, self.message
        )
    }
}

/// A `--since` or `--until` bound: a point in time, or how long before now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogTime {
    At(Timestamp),
    Ago(SignedDuration),
}

impl LogTime {
    /// An RFC 3339 time (`2026-03-02T21:29:55+01:00`), or a duration ago: seconds, or `1h32m22s`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Ok(time) = text.parse::<Timestamp>() {
            return Ok(LogTime::At(time));
        }
        let ago = match text.parse::<u64>() {
            Ok(seconds) => i64::try_from(seconds).ok().map(SignedDuration::from_secs),
            Err(_) => text.parse::<SignedDuration>().ok(),
        };
        ago.filter(|ago| !ago.is_negative())
            .map(LogTime::Ago)
            .ok_or_else(|| {
                format!("`{text}` is neither a time (`2026-03-02T21:29:55Z`) nor a duration (`1h32m22s`)")
            })
    }

    pub fn at(self, now: Timestamp) -> Timestamp {
        match self {
            LogTime::At(time) => time,
            LogTime::Ago(duration) => now.checked_sub(duration).unwrap_or(Timestamp::MIN),
        }
    }
}

/// The window of `--since` and `--until`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

impl Window {
    /// Whether the entry was written within the window; an entry without a readable time is kept.
    pub fn contains(&self, entry: &LogEntry) -> bool {
        let Ok(time) = entry.datetime.parse::<Timestamp>() else {
            return true;
        };
        self.since.is_none_or(|since| time >= since) && self.until.is_none_or(|until| time <= until)
    }

    /// The log parameters that ask the server for the window's start (the end is [`Window::contains`]'s).
    pub fn params(&self, follow: bool, tail_lines: Option<usize>, now: Timestamp) -> LogParams {
        LogParams {
            follow,
            since_seconds: self
                .since
                .map(|since| now.duration_since(since).as_secs().max(1)),
            tail_lines: tail_lines.map(|lines| i64::try_from(lines).unwrap_or(i64::MAX)),
            ..LogParams::default()
        }
    }
}

/// Why the logs cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the log of pod `{pod}`")]
pub struct PodLogError {
    pub pod: String,
    #[source]
    pub source: kube::Error,
}

/// The job's pods, oldest first.
pub fn pods<'a>(live: &'a LiveNamespace, job: &LiveJob) -> Vec<&'a Pod> {
    let related = Related {
        jobs: &live.snapshot.live.jobs,
        pods: &live.pods,
        events: &live.events,
    };
    status::pods_of(&job.workload, related)
}

/// One stream of entries per pod (its first container), with `params` (`timestamps` is always on), only
/// those within `window`.
pub async fn streams(
    live: &LiveNamespace,
    pods: &[&Pod],
    params: &LogParams,
    window: Window,
) -> Result<Vec<BoxStream<'static, Result<LogEntry, PodLogError>>>, PodLogError> {
    let api: Api<Pod> = Api::namespaced(live.connection.client.clone(), &live.namespace);
    let params = LogParams {
        timestamps: true,
        ..params.clone()
    };
    let mut streams = Vec::new();
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let container = pod
            .spec
            .as_ref()
            .and_then(|spec| spec.containers.first())
            .map(|container| container.name.clone())
            .unwrap_or_default();
        let lines = api
            .log_stream(&name, &params)
            .await
            .map_err(|source| PodLogError {
                pod: name.clone(),
                source,
            })?
            .lines();
        let pod = name.clone();
        let entries = lines
            .map_ok(move |line| LogEntry::parse(&line, &pod, &container))
            .try_filter(move |entry| futures::future::ready(window.contains(entry)))
            .map_err(move |source| PodLogError {
                pod: name.clone(),
                source: kube::Error::ReadEvents(source),
            });
        streams.push(entries.boxed());
    }
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_like_upstreams() {
        let entry = LogEntry::parse("2026-11-30T12:00:00Z hello world", "bot-1", "job");
        assert_eq!(entry.datetime, "2026-11-30T12:00:00Z");
        assert_eq!(entry.message, "hello world");
        assert_eq!(
            entry.line(),
            "2026-11-30T12:00:00Z [bot-1] [job] hello world"
        );
    }
}
