//! A job's pod logs through the Kubernetes API, as entries of upstream's logs-api: `datetime`, `pod`,
//! `container`, `message`, read with `timestamps=true` from every pod of the job.

use futures::stream::BoxStream;
use futures::{AsyncBufReadExt as _, StreamExt as _, TryStreamExt as _};
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

/// One stream of entries per pod (its first container), with `params` (`timestamps` is always on).
pub async fn streams(
    live: &LiveNamespace,
    pods: &[&Pod],
    params: &LogParams,
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
