//! The failure report of a wait ([`FailureReport`]): why it failed, the failing pods' container states, the Warning
//! Events, the last lines of the log and where the full log is — and its text for a person.
//!
//! Building the report is pure (the judges in `job` and `deployment`) except for the log tail, which
//! [`conclude`] reads from the file log in the tool home or from `pods/log`.

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, LogParams};
use tokio::time::Instant;

use super::observe::{Decision, Finish, LogRequest, Observed};
use super::{LOG_TAIL_LINES, Outcome};

/// At most this many failing pods are listed (the newest); the rest are counted.
pub(crate) const MAX_PODS: usize = 5;
/// At most this many Warning Events are listed (the newest).
const MAX_EVENTS: usize = 8;
/// How much of the end of a file log is read to find its last lines.
const FILE_TAIL_BYTES: u64 = 64 * 1024;

/// Why a Job failed or a Deployment did not roll out, and what to look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureReport {
    /// The job's name in jobs.yaml.
    pub job: String,
    /// The kind of object waited for.
    pub workload: TargetKind,
    /// The object's name.
    pub object: String,
    /// Why.
    pub cause: Cause,
    /// The failing pods, newest first (at most five).
    pub pods: Vec<PodProblem>,
    /// How many more failing pods there were.
    pub more_pods: usize,
    /// Warning Events about the object, its `ReplicaSet`s and the failing pods, oldest first (at most eight).
    pub events: Vec<WarningEvent>,
    /// The last lines of the log, when there are any and they could be read.
    pub log: Option<LogTail>,
    /// Where the full log is.
    pub full_log: Option<LogLocation>,
}

/// The kind of object a wait was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A one-off job's Job.
    Job,
    /// A continuous job's Deployment.
    Deployment,
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TargetKind::Job => "Job",
            TargetKind::Deployment => "Deployment",
        })
    }
}

/// Why a wait failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The controller gave up: the Job's `Failed`/`FailureTarget` condition (`BackoffLimitExceeded`,
    /// `DeadlineExceeded`, ...), or the Deployment's `Progressing=False` `ProgressDeadlineExceeded` or
    /// `ReplicaFailure`.
    Condition {
        /// The condition type.
        type_: String,
        /// Its reason.
        reason: String,
        /// Its message.
        message: String,
    },
    /// A pod cannot start (image pull error, container config error) or keeps crashing; the controller would keep
    /// trying.
    Pod {
        /// The pod.
        pod: String,
        /// The container's waiting reason, e.g. `ImagePullBackOff`, `CrashLoopBackOff`.
        reason: String,
    },
    /// Pods cannot be created (quota, admission): a Warning `FailedCreate` Event.
    FailedCreate {
        /// The Event's message, e.g. `Error creating: pods "x" is forbidden: exceeded quota: ...`.
        message: String,
    },
    /// The object was deleted, or replaced by another of the same name, before it finished.
    Deleted {
        /// Another object of the same name (another UID) exists now.
        replaced: bool,
    },
}

impl Cause {
    /// A short machine-readable reason: the condition's or container's reason, `FailedCreate` or `Deleted`.
    pub fn reason(&self) -> &str {
        match self {
            Cause::Condition { reason, type_, .. } if reason.is_empty() => type_,
            Cause::Condition { reason, .. } | Cause::Pod { reason, .. } => reason,
            Cause::FailedCreate { .. } => "FailedCreate",
            Cause::Deleted { .. } => "Deleted",
        }
    }
}

/// One failing pod: its most telling container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodProblem {
    /// The pod's name.
    pub pod: String,
    /// The container's name.
    pub container: String,
    /// How often the container was restarted.
    pub restarts: i32,
    /// Its state now.
    pub state: ContainerState,
    /// How its previous run ended, when it was restarted.
    pub last_termination: Option<Termination>,
}

impl PodProblem {
    /// The container's waiting or termination reason (`ImagePullBackOff`, `OOMKilled`, ...), else its last run's.
    pub fn reason(&self) -> &str {
        match &self.state {
            ContainerState::Waiting { reason, .. }
            | ContainerState::Terminated(Termination { reason, .. }) => reason,
            ContainerState::Running { ready } => match (&self.last_termination, ready) {
                (Some(last), _) => &last.reason,
                (None, false) => "NotReady",
                (None, true) => "Running",
            },
        }
    }
}

/// A container's state, as far as a failure report cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerState {
    /// Not running: `ErrImagePull`, `CrashLoopBackOff`, `CreateContainerConfigError`, ...
    Waiting {
        /// The kubelet's reason.
        reason: String,
        /// The kubelet's message.
        message: Option<String>,
    },
    /// Running.
    Running {
        /// Whether it passes its readiness check.
        ready: bool,
    },
    /// Exited.
    Terminated(Termination),
}

/// How a container run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Termination {
    /// `Error`, `OOMKilled`, `StartError`, `Completed`, ...
    pub reason: String,
    /// The exit code.
    pub exit_code: i32,
    /// The termination message, if any.
    pub message: Option<String>,
}

/// A Warning Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarningEvent {
    /// The object's kind, e.g. `Pod`.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The Event's reason, e.g. `FailedCreate`, `BackOff`.
    pub reason: String,
    /// The Event's message.
    pub message: String,
    /// How often it happened.
    pub count: i32,
}

impl WarningEvent {
    pub(crate) fn from_event(event: &Event) -> Self {
        WarningEvent {
            kind: event.involved_object.kind.clone().unwrap_or_default(),
            name: event.involved_object.name.clone().unwrap_or_default(),
            reason: event.reason.clone().unwrap_or_default(),
            message: event.message.clone().unwrap_or_default(),
            count: event.count.unwrap_or(1),
        }
    }
}

/// The last lines of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTail {
    /// Where they come from.
    pub source: LogSource,
    /// The lines, oldest first, without line ends.
    pub lines: Vec<String>,
}

/// Where a log tail was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogSource {
    /// The job's file log in the tool home.
    File(PathBuf),
    /// `pods/log` of a container.
    Pod {
        /// The pod.
        pod: String,
        /// The container.
        container: String,
        /// The run before the last restart.
        previous: bool,
    },
}

/// Where the full log is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogLocation {
    /// The job's file log in the tool home.
    File(PathBuf),
    /// The pod's log: `toolforge-jobs logs JOB` or `kubectl logs POD`.
    Pod {
        /// The job's name in jobs.yaml.
        job: String,
        /// The pod.
        pod: String,
        /// The container.
        container: String,
        /// The run before the last restart.
        previous: bool,
    },
}

impl fmt::Display for LogLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogLocation::File(path) => write!(f, "`{}` in the tool's home", path.display()),
            LogLocation::Pod {
                job,
                pod,
                container,
                previous,
            } => {
                let previous = if *previous { " --previous" } else { "" };
                write!(
                    f,
                    "`toolforge-jobs logs {job}` or `kubectl logs {pod} -c {container}{previous}`"
                )
            }
        }
    }
}

impl FailureReport {
    /// The report for a row that already names the job: `failed: …` / `did not roll out: …`.
    pub fn under_its_job(&self) -> String {
        struct Untitled<'a>(&'a FailureReport);
        impl fmt::Display for Untitled<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.write(f, false)
            }
        }
        Untitled(self).to_string()
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, with_job: bool) -> fmt::Result {
        let failed = match self.workload {
            TargetKind::Job => "failed",
            TargetKind::Deployment => "did not roll out",
        };
        if with_job {
            write!(f, "job `{}` ", self.job)?;
        }
        write!(f, "{failed}: ")?;
        match &self.cause {
            Cause::Condition {
                reason, message, ..
            } if message.is_empty() => write!(f, "{reason}")?,
            Cause::Condition {
                reason, message, ..
            } => write!(f, "{reason}: {message}")?,
            Cause::Pod { pod, reason } if is_crash(reason) => {
                write!(f, "pod `{pod}` keeps crashing ({reason})")?;
            }
            Cause::Pod { pod, reason } => write!(f, "pod `{pod}` cannot start ({reason})")?,
            Cause::FailedCreate { message } => write!(f, "pods cannot be created: {message}")?,
            Cause::Deleted { replaced: true } => write!(
                f,
                "{} `{}` was replaced by another of the same name before it finished",
                self.workload, self.object
            )?,
            Cause::Deleted { replaced: false } => write!(
                f,
                "{} `{}` was deleted before it finished",
                self.workload, self.object
            )?,
        }
        for pod in &self.pods {
            write!(f, "\n  {pod}")?;
        }
        if self.more_pods > 0 {
            write!(f, "\n  and {} more failed pods", self.more_pods)?;
        }
        for event in &self.events {
            write!(
                f,
                "\n  warning `{}` on {} `{}`: {}",
                event.reason, event.kind, event.name, event.message
            )?;
            if event.count > 1 {
                write!(f, " ({} times)", event.count)?;
            }
        }
        if let Some(log) = &self.log {
            let source = match &log.source {
                LogSource::File(path) => format!("`{}`", path.display()),
                LogSource::Pod {
                    pod,
                    container,
                    previous,
                } => {
                    let run = if *previous { ", previous run" } else { "" };
                    format!("pod `{pod}`, container `{container}`{run}")
                }
            };
            write!(
                f,
                "\n  last {} lines of the log ({source}):",
                log.lines.len()
            )?;
            for line in &log.lines {
                write!(f, "\n  | {line}")?;
            }
        }
        if let Some(location) = &self.full_log {
            write!(f, "\n  full log: {location}")?;
        }
        Ok(())
    }
}

impl fmt::Display for FailureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, true)
    }
}

impl fmt::Display for PodProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pod `{}`, container `{}`: ", self.pod, self.container)?;
        match &self.state {
            ContainerState::Waiting { reason, message } => {
                write!(f, "waiting ({reason})")?;
                // A crash loop's message only names the back-off and the pod; restarts and the last run say more.
                if let Some(message) = message
                    .as_deref()
                    .filter(|m| !m.is_empty() && !is_crash(reason))
                {
                    write!(f, ": {message}")?;
                }
            }
            ContainerState::Running { ready: true } => f.write_str("running")?,
            ContainerState::Running { ready: false } => f.write_str("running but not ready")?,
            ContainerState::Terminated(termination) => write!(f, "{termination}")?,
        }
        if self.restarts > 0 {
            let times = if self.restarts == 1 { "time" } else { "times" };
            write!(f, "; restarted {} {times}", self.restarts)?;
        }
        if let Some(last) = &self.last_termination {
            write!(f, "; last run {last}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.reason == "OOMKilled" {
            write!(
                f,
                "killed for using more memory than its limit (OOMKilled, exit code {})",
                self.exit_code
            )?;
        } else {
            // 128 + N is how a runtime reports a process killed by signal N.
            let signal = match self.exit_code {
                137 => ", killed by SIGKILL",
                143 => ", killed by SIGTERM",
                _ => "",
            };
            write!(
                f,
                "exited with code {} ({}{signal})",
                self.exit_code, self.reason
            )?;
        }
        if let Some(message) = self.message.as_deref().filter(|m| !m.trim().is_empty()) {
            write!(f, ": {}", message.trim_end())?;
        }
        Ok(())
    }
}

/// The newest Warning Events about these objects, oldest first, without the one that only repeats the cause.
pub(crate) fn relevant_events(
    observed: &Observed,
    uids: &[&str],
    cause: &Cause,
    pods: &[PodProblem],
) -> Vec<WarningEvent> {
    let repeats_cause = |event: &WarningEvent| match cause {
        Cause::Condition {
            reason, message, ..
        } => event.reason == *reason && event.message == *message,
        Cause::FailedCreate { message } => event.message == *message,
        Cause::Pod { .. } | Cause::Deleted { .. } => false,
    };
    // The kubelet's `Error: ImagePullBackOff` and `Back-off restarting failed container` say no more than the
    // pod's line of the report.
    let repeats_pod = |event: &WarningEvent| {
        let bare_reason = event
            .message
            .strip_prefix("Error: ")
            .is_some_and(|reason| !reason.contains(char::is_whitespace));
        bare_reason
            || (event.reason == "BackOff"
                && event
                    .message
                    .starts_with("Back-off restarting failed container")
                && pods.iter().any(|pod| pod.pod == event.name))
    };
    let events: Vec<WarningEvent> = observed
        .warnings_about(uids)
        .into_iter()
        .map(WarningEvent::from_event)
        .filter(|event| !repeats_cause(event) && !repeats_pod(event))
        .collect();
    let skip = events.len().saturating_sub(MAX_EVENTS);
    events.into_iter().skip(skip).collect()
}

/// Whether a waiting reason means the container keeps crashing (rather than never starting).
pub(crate) fn is_crash(reason: &str) -> bool {
    matches!(reason, "CrashLoopBackOff" | "RunContainerError")
}

/// The outcome of a finished wait; a failure's report gets its log tail (see [`attach_log`]).
pub(crate) async fn conclude(
    finish: Finish,
    pods: &Api<Pod>,
    file_log: Option<&Path>,
    deadline: Instant,
) -> Outcome {
    match finish {
        Finish::TimedOut(last) => Outcome::TimedOut(last),
        Finish::Done(Decision::Succeeded) => Outcome::Succeeded,
        Finish::Done(Decision::CleanedUp) => Outcome::CleanedUp,
        Finish::Done(Decision::Failed(mut report, request)) => {
            attach_log(&mut report, pods, file_log, request.as_ref(), deadline).await;
            Outcome::Failed(report)
        }
    }
}

/// Adds the log tail and the full log's location to `report`: from the file log when it can be read, else from
/// `pods/log` of `request`, read before `deadline` (a log not read in time is left out).
async fn attach_log(
    report: &mut FailureReport,
    pods: &Api<Pod>,
    file_log: Option<&Path>,
    request: Option<&LogRequest>,
    deadline: Instant,
) {
    if let Some(path) = file_log {
        report.full_log = Some(LogLocation::File(path.to_owned()));
        let owned = path.to_owned();
        let read = tokio::task::spawn_blocking(move || file_tail(&owned, LOG_TAIL_LINES));
        match tokio::time::timeout_at(deadline, read).await {
            Ok(Ok(Ok(lines))) if !lines.is_empty() => {
                report.log = Some(LogTail {
                    source: LogSource::File(path.to_owned()),
                    lines,
                });
                return;
            }
            Ok(Ok(Ok(_))) => {}
            Ok(Ok(Err(error))) => {
                tracing::debug!(path = %path.display(), %error, "cannot read the file log");
            }
            Ok(Err(_)) | Err(_) => tracing::debug!(path = %path.display(), "file log not read"),
        }
    }
    let Some(request) = request else {
        return;
    };
    if report.full_log.is_none() {
        report.full_log = Some(LogLocation::Pod {
            job: report.job.clone(),
            pod: request.pod.clone(),
            container: request.container.clone(),
            previous: request.previous,
        });
    }
    let params = LogParams {
        container: Some(request.container.clone()),
        previous: request.previous,
        tail_lines: Some(i64::try_from(LOG_TAIL_LINES).unwrap_or(i64::MAX)),
        ..LogParams::default()
    };
    match tokio::time::timeout_at(deadline, pods.logs(&request.pod, &params)).await {
        Ok(Ok(text)) => {
            let lines = tail(&text, LOG_TAIL_LINES);
            if !lines.is_empty() {
                report.log = Some(LogTail {
                    source: LogSource::Pod {
                        pod: request.pod.clone(),
                        container: request.container.clone(),
                        previous: request.previous,
                    },
                    lines,
                });
            }
        }
        Ok(Err(error)) => tracing::debug!(pod = %request.pod, %error, "cannot read the pod log"),
        Err(_) => tracing::debug!(pod = %request.pod, "pod log not read before the deadline"),
    }
}

/// The last `count` lines of `text`.
fn tail(text: &str, count: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..]
        .iter()
        .map(|line| (*line).to_owned())
        .collect()
}

/// The last `count` lines of a file, reading only its end.
fn file_tail(path: &Path, count: usize) -> std::io::Result<Vec<String>> {
    let mut file = std::fs::File::open(path)?;
    let start = file.metadata()?.len().saturating_sub(FILE_TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    // A read that starts inside the file starts inside a line: drop that partial line.
    let text = match text.split_once('\n') {
        Some((_, rest)) if start > 0 => rest,
        _ => &text,
    };
    Ok(tail(text, count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(cause: Cause) -> FailureReport {
        FailureReport {
            job: "backup".to_owned(),
            workload: TargetKind::Job,
            object: "backup".to_owned(),
            cause,
            pods: Vec::new(),
            more_pods: 0,
            events: Vec::new(),
            log: None,
            full_log: None,
        }
    }

    #[test]
    fn renders_a_backoff_failure_with_pod_events_log_and_where_the_full_log_is() {
        let mut failed = report(Cause::Condition {
            type_: "Failed".to_owned(),
            reason: "BackoffLimitExceeded".to_owned(),
            message: "Job has reached the specified backoff limit".to_owned(),
        });
        failed.pods.push(PodProblem {
            pod: "backup-x7k2q".to_owned(),
            container: "job".to_owned(),
            restarts: 0,
            state: ContainerState::Terminated(Termination {
                reason: "Error".to_owned(),
                exit_code: 3,
                message: None,
            }),
            last_termination: None,
        });
        failed.more_pods = 2;
        failed.events.push(WarningEvent {
            kind: "Pod".to_owned(),
            name: "backup-x7k2q".to_owned(),
            reason: "BackOff".to_owned(),
            message: "Back-off restarting failed container".to_owned(),
            count: 3,
        });
        failed.log = Some(LogTail {
            source: LogSource::Pod {
                pod: "backup-x7k2q".to_owned(),
                container: "job".to_owned(),
                previous: false,
            },
            lines: vec!["starting".to_owned(), "disk full".to_owned()],
        });
        failed.full_log = Some(LogLocation::Pod {
            job: "backup".to_owned(),
            pod: "backup-x7k2q".to_owned(),
            container: "job".to_owned(),
            previous: false,
        });
        assert_eq!(
            failed.to_string(),
            "job `backup` failed: BackoffLimitExceeded: Job has reached the specified backoff limit
  pod `backup-x7k2q`, container `job`: exited with code 3 (Error)
  and 2 more failed pods
  warning `BackOff` on Pod `backup-x7k2q`: Back-off restarting failed container (3 times)
  last 2 lines of the log (pod `backup-x7k2q`, container `job`):
  | starting
  | disk full
  full log: `toolforge-jobs logs backup` or `kubectl logs backup-x7k2q -c job`"
        );
    }

    #[test]
    fn renders_a_crash_loop_with_its_last_run_and_a_file_log() {
        let mut failed = report(Cause::Pod {
            pod: "web-abc-x".to_owned(),
            reason: "CrashLoopBackOff".to_owned(),
        });
        failed.workload = TargetKind::Deployment;
        failed.pods.push(PodProblem {
            pod: "web-abc-x".to_owned(),
            container: "web".to_owned(),
            restarts: 2,
            state: ContainerState::Waiting {
                reason: "CrashLoopBackOff".to_owned(),
                message: Some("back-off 20s restarting failed container".to_owned()),
            },
            last_termination: Some(Termination {
                reason: "OOMKilled".to_owned(),
                exit_code: 137,
                message: None,
            }),
        });
        failed.full_log = Some(LogLocation::File(PathBuf::from("/data/project/t/web.err")));
        assert_eq!(
            failed.to_string(),
            "job `backup` did not roll out: pod `web-abc-x` keeps crashing (CrashLoopBackOff)
  pod `web-abc-x`, container `web`: waiting (CrashLoopBackOff); restarted 2 times; last run killed for using \
more memory than its limit (OOMKilled, exit code 137)
  full log: `/data/project/t/web.err` in the tool's home"
        );
    }

    #[test]
    fn renders_deleted_and_replaced_and_quota_causes() {
        assert_eq!(
            report(Cause::Deleted { replaced: false }).to_string(),
            "job `backup` failed: Job `backup` was deleted before it finished"
        );
        assert_eq!(
            report(Cause::Deleted { replaced: true }).to_string(),
            "job `backup` failed: Job `backup` was replaced by another of the same name before it finished"
        );
        let quota = report(Cause::FailedCreate {
            message: "Error creating: pods \"backup-1\" is forbidden: exceeded quota: tool"
                .to_owned(),
        });
        assert_eq!(quota.cause.reason(), "FailedCreate");
        assert_eq!(
            quota.to_string(),
            "job `backup` failed: pods cannot be created: Error creating: pods \"backup-1\" is forbidden: \
exceeded quota: tool"
        );
    }

    #[test]
    fn a_termination_by_signal_names_the_signal() {
        let killed = |exit_code| {
            Termination {
                reason: "Error".to_owned(),
                exit_code,
                message: Some("deadline\n".to_owned()),
            }
            .to_string()
        };
        assert_eq!(
            killed(143),
            "exited with code 143 (Error, killed by SIGTERM): deadline"
        );
        assert_eq!(
            killed(137),
            "exited with code 137 (Error, killed by SIGKILL): deadline"
        );
        assert_eq!(killed(1), "exited with code 1 (Error): deadline");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), ["b", "c"]);
        assert_eq!(tail("a", 5), ["a"]);
        assert!(tail("", 5).is_empty());
    }

    #[test]
    fn file_tail_reads_the_last_lines_of_a_long_file_without_a_partial_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("job.err");
        let lines: Vec<String> = (0..20_000).map(|n| format!("line {n}\n")).collect();
        std::fs::write(&path, lines.concat()).expect("written");
        let lines = file_tail(&path, 3).expect("read");
        assert_eq!(lines, ["line 19997", "line 19998", "line 19999"]);
        let all = file_tail(&path, 100_000).expect("read");
        assert!(
            all.first().is_some_and(|l| l.starts_with("line ")),
            "{:?}",
            all.first()
        );
        assert!(file_tail(&dir.path().join("missing"), 3).is_err());
    }
}
