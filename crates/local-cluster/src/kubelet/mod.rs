//! The kubelet of the local cluster's single node ([`Kubelet`], started by [`start`]). In its first mode,
//! `Kubelet::Scripted`, containers run nothing and follow a [`ContainerOutcome`] chosen per pod by a [`Script`],
//! KWOK-style (reference §4) — every step is a status write through the API plus the kubelet's Events, so
//! watchers see what a real node shows: binding, `ContainerCreating`, running, terminated with the right reason
//! and exit code, crash-loop and image-pull back-offs, and graceful deletion. `Kubelet::Process` ([`process`])
//! runs real processes through the same steps. What a script says lives in [`script`], what a pod's status looks
//! like in [`pod_status`]; this module plays it.
//!
//! The kubelet is the only part of the crate that spawns processes. It is a reconciler of the controller
//! framework and writes through the registry (`controllers::framework`, `controllers::recorder`, `registry`);
//! it never imports the HTTP layer (`api`) or the workload controllers, and nothing below it imports it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::bootstrap::NODE_NAME as NODE;
use crate::controllers::framework::{self, Action, Effect, Key, Reconciler};
use crate::controllers::recorder::Event;
use crate::registry::delete::DeleteOptions;
use crate::registry::meta;
use crate::registry::ops::Part;
use crate::registry::resources::pods;
use crate::registry::store::{Change, ObjectKey, Store};

mod images;
mod lease;
mod pids;
mod pod_status;
mod probe;
mod process;
mod script;
mod security;
pub use images::ImagePolicy;
pub(crate) use pids::{pid_file, stop_previous};
use pod_status::PodView;
use process::ProcessKubelet;
pub use process::ProcessOptions;
pub use script::{ContainerOutcome, Script};
use script::{crash_backoff, run_length};

/// How the node runs pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kubelet {
    /// Containers follow a script instead of running (tests).
    Scripted(Script),
    /// Each pod's (single) container runs as a local process of the current user.
    Process(ProcessOptions),
}

/// Spawns the node's kubelet; it stops when `shutdown` is cancelled. A process kubelet records its processes in
/// `pid_file` when given.
pub(crate) fn start(
    kubelet: &Kubelet,
    store: &Store,
    shutdown: &CancellationToken,
    pid_file: Option<PathBuf>,
) {
    match kubelet {
        Kubelet::Scripted(script) => {
            framework::spawn(ScriptedKubelet::new(script.clone()), store, shutdown);
        }
        Kubelet::Process(options) => {
            // Only the real node keeps a heartbeat: a Lease write a second would only add changes to the
            // fast-clock scripted tests.
            lease::spawn(store, shutdown);
            let kubelet = ProcessKubelet::new(options.clone(), store.clock(), pid_file);
            framework::spawn(kubelet, store, shutdown);
        }
    }
}

/// Where a pod's containers are in their script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Creating,
    PullFailed,
    Running,
    BackingOff,
    PullBackOff,
}

/// The kubelet's memory of one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    stage: Stage,
    /// When the stage began, in cluster time.
    since: Timestamp,
    restarts: u32,
}

/// The scripted kubelet's reconciler; its keys are pods.
#[derive(Debug)]
struct ScriptedKubelet {
    script: Script,
    /// Per pod: the uid it had (a new pod of the same name starts afresh) and where it is.
    runs: HashMap<Key, (String, Run)>,
}

impl ScriptedKubelet {
    fn new(script: Script) -> Self {
        ScriptedKubelet {
            script,
            runs: HashMap::new(),
        }
    }
}

/// What a kubelet reconciles on a change: the pod changed, deletions too (so that it forgets the pod).
fn pod_keys(change: &Change) -> Vec<Key> {
    if change.resource.is(pods()) {
        vec![Key::of(&change.object)]
    } else {
        Vec::new()
    }
}

/// Every pod, for a kubelet's resync.
fn all_pods(store: &Store) -> Vec<Key> {
    framework::all_keys(store, pods())
}

impl Reconciler for ScriptedKubelet {
    fn keys(&self, change: &Change) -> Vec<Key> {
        pod_keys(change)
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        all_pods(store)
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let pod = store.read(|s| s.get(&ObjectKey::new(pods(), &key.namespace, &key.name)));
        let Some(pod) = pod else {
            self.runs.remove(key);
            return Action::default();
        };
        let uid = meta::uid(&pod).to_owned();
        let now = store.clock().now();
        let run = self
            .runs
            .get(key)
            .filter(|(known, _)| *known == uid)
            .map(|(_, run)| *run);
        let elapsed =
            run.map(|r| Duration::try_from(now.duration_since(r.since)).unwrap_or(Duration::ZERO));
        let (action, next) = step(
            &pod,
            run.map(|r| (r, elapsed.unwrap_or_default())),
            &self.script,
            &meta::format_time(now),
        );
        let outcome = self.script.outcome(&pod);
        let created = run.is_some_and(|r| matches!(r.stage, Stage::Creating | Stage::BackingOff))
            && next != Some(Next::Keep)
            && !meta::is_deleting(&pod)
            && !is_terminal(&pod)
            && *outcome != ContainerOutcome::ImagePullError;
        if let Some(restarts) = run.filter(|_| created).map(|r| r.restarts) {
            // A new instance of the containers: what they print is there before the status says they run.
            let at = store.clock().now();
            store.logs(|logs| {
                for (container, image) in pod_status::containers(&pod) {
                    let text = if *outcome == ContainerOutcome::CannotStart {
                        ""
                    } else {
                        self.script.output_for(&image, restarts)
                    };
                    logs.start((&key.namespace, &key.name, &container), text, at);
                }
            });
        }
        match next {
            Some(Next::Keep) => {}
            Some(Next::Enter(stage, restarts)) => {
                let run = Run {
                    stage,
                    since: now,
                    restarts,
                };
                self.runs.insert(key.clone(), (uid, run));
            }
            None => {
                self.runs.remove(key);
            }
        }
        action
    }
}

/// What to remember after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Keep,
    Enter(Stage, u32),
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        meta::str_at(pod, &["status", "phase"]),
        Some("Succeeded" | "Failed")
    )
}

fn waiting(reason: &str, message: &str) -> Value {
    if message.is_empty() {
        json!({"waiting": {"reason": reason}})
    } else {
        json!({"waiting": {"reason": reason, "message": message}})
    }
}

/// The previous run's state, as `lastState` shows it after a restart: the run that just ended, or, once the
/// container waits or runs again, the `lastState` already shown.
fn previous(pod: &Value) -> Value {
    let status = meta::at(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .and_then(|l| l.first());
    let terminated = |key: &str| {
        status
            .and_then(|c| c.get(key))
            .filter(|s| s.get("terminated").is_some())
    };
    terminated("state")
        .or_else(|| terminated("lastState"))
        .cloned()
        .unwrap_or_else(|| json!({}))
}

/// The `restartCount` the pod's (first) container shows.
fn restart_count(pod: &Value) -> u32 {
    meta::at(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .and_then(|l| l.first())
        .and_then(|c| c.get("restartCount"))
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

fn started_at(pod: &Value) -> Value {
    meta::at(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .and_then(|l| l.first())
        .and_then(|c| meta::at(c, &["state", "running", "startedAt"]))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Whether the kubelet pulls a container's image before every start: `imagePullPolicy: Always`, which is also
/// the API's default for an image without a tag or with `:latest` (and no digest).
fn pulls_always(container: &Value) -> bool {
    if let Some(policy) = container.get("imagePullPolicy").and_then(Value::as_str) {
        return policy == "Always";
    }
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = image.rsplit('/').next().unwrap_or(image);
    !image.contains('@') && name.split_once(':').is_none_or(|(_, tag)| tag == "latest")
}

/// A duration as Go prints it in kubelet messages, to the millisecond: `10s`, `5m0s`, `20ms`, `1.5s`, `0s`.
fn go_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let millis = duration.subsec_millis();
    if seconds == 0 {
        return if millis == 0 {
            "0s".to_owned()
        } else {
            format!("{millis}ms")
        };
    }
    let fraction = if millis == 0 {
        String::new()
    } else {
        format!(".{millis:03}").trim_end_matches('0').to_owned()
    };
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}{fraction}s"),
        (0, _) => format!("{minutes}m{seconds}{fraction}s"),
        _ => format!("{hours}h{minutes}m{seconds}{fraction}s"),
    }
}

/// One decision about one pod.
struct Step<'a> {
    pod: &'a Value,
    script: &'a Script,
    restarts: u32,
    now: &'a str,
    action: Action,
    /// The container has a startup probe that has not succeeded: while running, it is not `started`.
    starting: bool,
}

impl Step<'_> {
    fn write(
        &mut self,
        phase: &'static str,
        state: Value,
        last_state: Value,
        restart_count: u32,
        ready: bool,
    ) {
        let started = state.get("running").is_some() && !self.starting;
        let view = PodView {
            phase,
            state,
            last_state,
            restart_count,
            ready,
            started,
        };
        let mut updated = self.pod.clone();
        meta::set_at(
            &mut updated,
            &["status"],
            pod_status::render(self.pod, &view, self.now),
        );
        self.action
            .effects
            .push(Effect::Replace(pods(), Part::Status, updated));
    }

    /// The previous run, shown as `lastState` once a container restarted.
    fn last_state(&self) -> Value {
        if self.restarts > 0 {
            previous(self.pod)
        } else {
            json!({})
        }
    }

    fn events(&mut self, kind: &'static str, reason: &str, message: impl Fn(&str, &str) -> String) {
        for (name, image) in pod_status::containers(self.pod) {
            let path = format!("spec.containers{{{name}}}");
            let event = Event::about(
                pods(),
                self.pod,
                Some(path),
                kind,
                reason,
                message(&name, &image),
                "kubelet",
            );
            self.action.effects.push(Effect::Event(event));
        }
    }

    fn pulling(&mut self) {
        self.events("Normal", "Pulling", |_, image| {
            format!("Pulling image \"{image}\"")
        });
    }

    /// The image is there for the containers to be created: under `imagePullPolicy: Always` the kubelet pulled
    /// it again (`Pulling`, then `Pulled` with the time, the script's start delay, and a size); otherwise it was
    /// already on the node.
    fn pulled(&mut self) {
        let always = meta::at(self.pod, &["spec", "containers"])
            .and_then(Value::as_array)
            .and_then(|l| l.first())
            .is_some_and(pulls_always);
        if !always {
            self.events("Normal", "Pulled", |_, image| {
                format!("Container image \"{image}\" already present on machine")
            });
            return;
        }
        self.pulling();
        let took = go_duration(self.script.start_delay);
        self.events("Normal", "Pulled", |_, image| {
            let size = pod_status::image_size(image);
            format!(
                "Successfully pulled image \"{image}\" in {took} ({took} including waiting). Image size: {size} bytes."
            )
        });
    }

    fn first_image(&self) -> String {
        pod_status::containers(self.pod)
            .into_iter()
            .next()
            .map(|(_, image)| image)
            .unwrap_or_default()
    }

    fn done(self, next: Option<Next>) -> (Action, Option<Next>) {
        (self.action, next)
    }

    /// A new pod: containers are being created, images pulled.
    fn accept(mut self) -> (Action, Option<Next>) {
        self.write(
            "Pending",
            waiting("ContainerCreating", ""),
            json!({}),
            0,
            false,
        );
        self.action.requeue_after = Some(self.script.start_delay);
        self.done(Some(Next::Enter(Stage::Creating, 0)))
    }

    /// The containers were lost with the previous kubelet, as in a node restart: under `Never` the pod fails
    /// with `ContainerStatusUnknown`; otherwise the containers start again, counted as a restart.
    fn lost(mut self) -> (Action, Option<Next>) {
        let terminated = json!({"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated",
            "startedAt": null, "finishedAt": self.now}});
        // The count the earlier life reached goes on, as a node keeps it across kubelet restarts.
        let before = restart_count(self.pod);
        if meta::str_at(self.pod, &["spec", "restartPolicy"]) == Some("Never") {
            self.write("Failed", terminated, json!({}), before, false);
            return self.done(None);
        }
        let restarts = before + 1;
        self.write(
            "Pending",
            waiting("ContainerCreating", ""),
            terminated,
            restarts,
            false,
        );
        self.action.requeue_after = Some(self.script.start_delay);
        self.done(Some(Next::Enter(Stage::Creating, restarts)))
    }

    /// Containers are created: they start, fail to start, or their image cannot be pulled.
    fn start(mut self, outcome: &ContainerOutcome) -> (Action, Option<Next>) {
        match outcome {
            ContainerOutcome::ImagePullError => {
                let image = self.first_image();
                let error = format!(
                    "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": not found"
                );
                self.write(
                    "Pending",
                    waiting("ErrImagePull", &error),
                    self.last_state(),
                    self.restarts,
                    false,
                );
                self.pulling();
                self.events("Warning", "Failed", |_, image| {
                    format!("Failed to pull image \"{image}\": {error}")
                });
                self.events("Warning", "Failed", |_, _| "Error: ErrImagePull".to_owned());
                self.action.requeue_after = Some(self.script.restart_backoff);
                let restarts = self.restarts;
                self.done(Some(Next::Enter(Stage::PullFailed, restarts)))
            }
            ContainerOutcome::CannotStart => {
                let command = meta::at(self.pod, &["spec", "containers"])
                    .and_then(Value::as_array)
                    .and_then(|l| l.first())
                    .and_then(|c| c.get("command").or_else(|| c.get("args")))
                    .and_then(Value::as_array)
                    .and_then(|l| l.first())
                    .and_then(Value::as_str)
                    .unwrap_or("sh")
                    .to_owned();
                let message = format!(
                    "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"{command}\": executable file not found in $PATH: unknown"
                );
                self.pulled();
                self.events("Normal", "Created", |name, _| {
                    format!("Created container: {name}")
                });
                self.events("Warning", "Failed", |_, _| format!("Error: {message}"));
                let terminated = json!({"terminated": {"exitCode": 128, "reason": "StartError", "message": message,
                    "startedAt": "1970-01-01T00:00:00Z", "finishedAt": self.now}});
                self.exited(terminated, false)
            }
            ContainerOutcome::Succeed { .. }
            | ContainerOutcome::Exit { .. }
            | ContainerOutcome::OomKilled { .. }
            | ContainerOutcome::RunForever
            | ContainerOutcome::NeverReady => {
                let ready = *outcome != ContainerOutcome::NeverReady;
                self.write(
                    "Running",
                    json!({"running": {"startedAt": self.now}}),
                    self.last_state(),
                    self.restarts,
                    ready,
                );
                self.pulled();
                self.events("Normal", "Created", |name, _| {
                    format!("Created container: {name}")
                });
                self.events("Normal", "Started", |name, _| {
                    format!("Started container {name}")
                });
                self.action.requeue_after = run_length(outcome);
                let restarts = self.restarts;
                self.done(Some(Next::Enter(Stage::Running, restarts)))
            }
        }
    }

    /// A running container whose probes changed its `started` (with [`Step::starting`]) or `ready`.
    fn running(&mut self, ready: bool) {
        self.write(
            "Running",
            json!({"running": {"startedAt": started_at(self.pod)}}),
            self.last_state(),
            self.restarts,
            ready,
        );
    }

    /// The kubelet refuses to create the container for its configuration (`CreateContainerConfigError`, e.g. a
    /// `runAsNonRoot` it would break): the pod stays where it is, not ready, until it is deleted.
    fn config_error(mut self, message: &str) -> (Action, Option<Next>) {
        self.pulled();
        let phase = if self.restarts == 0 {
            "Pending"
        } else {
            "Running"
        };
        self.write(
            phase,
            waiting("CreateContainerConfigError", message),
            self.last_state(),
            self.restarts,
            false,
        );
        self.events("Warning", "Failed", |_, _| format!("Error: {message}"));
        self.done(None)
    }

    /// A failed pull backs off: `ImagePullBackOff`. The image never appears (scripted, or missing from the
    /// process kubelet's images), so the pull is not retried (retries would only repeat events).
    fn pull_back_off(mut self) -> (Action, Option<Next>) {
        let image = self.first_image();
        self.write(
            "Pending",
            waiting(
                "ImagePullBackOff",
                &format!("Back-off pulling image \"{image}\""),
            ),
            json!({}),
            self.restarts,
            false,
        );
        self.events("Normal", "BackOff", |_, image| {
            format!("Back-off pulling image \"{image}\"")
        });
        self.events("Warning", "Failed", |_, _| {
            "Error: ImagePullBackOff".to_owned()
        });
        let restarts = self.restarts;
        self.done(Some(Next::Enter(Stage::PullBackOff, restarts)))
    }

    /// Containers exited with `terminated`: the pod finishes, or they are restarted after a back-off.
    fn exited(mut self, terminated: Value, success: bool) -> (Action, Option<Next>) {
        let restart = match meta::str_at(self.pod, &["spec", "restartPolicy"]).unwrap_or("Always") {
            "Never" => false,
            "OnFailure" => !success,
            _ => true,
        };
        if !restart {
            let phase = if success { "Succeeded" } else { "Failed" };
            self.write(phase, terminated, self.last_state(), self.restarts, false);
            return self.done(None);
        }
        let restarts = self.restarts + 1;
        let backoff = crash_backoff(self.script, restarts);
        let pod = format!(
            "{}_{}({})",
            meta::name(self.pod),
            meta::namespace(self.pod),
            meta::uid(self.pod)
        );
        let name = pod_status::containers(self.pod)
            .into_iter()
            .next()
            .map(|(n, _)| n)
            .unwrap_or_default();
        let message = format!(
            "back-off {} restarting failed container={name} pod={pod}",
            go_duration(backoff)
        );
        self.write(
            "Running",
            waiting("CrashLoopBackOff", &message),
            terminated,
            restarts,
            false,
        );
        self.events("Warning", "BackOff", |name, _| {
            format!("Back-off restarting failed container {name} in pod {pod}")
        });
        self.action.requeue_after = Some(backoff);
        self.done(Some(Next::Enter(Stage::BackingOff, restarts)))
    }
}

/// Whether the pod's containers were started by an earlier life of the kubelet (the cluster restarted from its
/// state file): this kubelet never saw the pod, yet it has running or restarting containers.
fn started_elsewhere(pod: &Value) -> bool {
    meta::at(pod, &["status", "containerStatuses"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("containerID").is_some() || meta::at(c, &["state", "running"]).is_some())
}

/// Writes the terminal status of a deleted pod whose containers stopped with `exit_code` (143: they honoured
/// SIGTERM; the scripted kubelet's containers always do, at once), after which the pod goes away unless
/// finalizers hold it. As a kubelet does, the phase is `Succeeded` when the containers exited 0, else `Failed`.
/// `announce`: say `Killing` now (the process kubelet said it when it sent SIGTERM).
fn terminate(pod: &Value, restarts: u32, now: &str, exit_code: i32, announce: bool) -> Action {
    let mut step = Step {
        pod,
        script: &Script::new(ContainerOutcome::RunForever),
        restarts,
        now,
        action: Action::default(),
        starting: false,
    };
    let running = started_at(pod);
    let (phase, state) = if running.is_null() {
        let state = json!({"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated",
            "startedAt": null, "finishedAt": now}});
        ("Failed", state)
    } else {
        let (phase, reason) = if exit_code == 0 {
            ("Succeeded", "Completed")
        } else {
            ("Failed", "Error")
        };
        let state = json!({"terminated": {"exitCode": exit_code, "reason": reason, "startedAt": running,
            "finishedAt": now}});
        (phase, state)
    };
    step.write(phase, state, step.last_state(), restarts, false);
    if announce && !running.is_null() {
        step.events("Normal", "Killing", |name, _| {
            format!("Stopping container {name}")
        });
    }
    // The kubelet's final delete; the pod may already be gone or held by finalizers.
    let now_please = DeleteOptions {
        grace_period: Some(0),
        ..DeleteOptions::default()
    };
    step.action
        .effects
        .push(Effect::Delete(pods(), pod.clone(), now_please));
    step.action
}

/// The scheduler's part: binds an unbound pod to the only node.
fn bind(pod: &Value) -> Action {
    let mut action = Action::default();
    let mut bound = pod.clone();
    meta::set_at(&mut bound, &["spec", "nodeName"], json!(NODE));
    action
        .effects
        .push(Effect::Replace(pods(), Part::Main, bound));
    action.effects.push(Effect::Event(Event::about(
        pods(),
        pod,
        None,
        "Normal",
        "Scheduled",
        format!(
            "Successfully assigned {}/{} to {NODE}",
            meta::namespace(pod),
            meta::name(pod)
        ),
        "default-scheduler",
    )));
    action
}

/// The decision for one pod: `run` is the kubelet's memory of it and the time spent in that stage.
fn step(
    pod: &Value,
    run: Option<(Run, Duration)>,
    script: &Script,
    now: &str,
) -> (Action, Option<Next>) {
    let action = Action::default();
    if meta::str_at(pod, &["spec", "nodeName"]).is_none_or(str::is_empty) {
        return (bind(pod), None);
    }
    if is_terminal(pod) {
        return (action, None);
    }
    let restarts = run.map_or(0, |(r, _)| r.restarts);
    if meta::is_deleting(pod) {
        return (terminate(pod, restarts, now, 143, true), None);
    }
    let outcome = script.outcome(pod);
    let mut step = Step {
        pod,
        script,
        restarts,
        now,
        action,
        starting: false,
    };
    let Some((run, elapsed)) = run else {
        return if started_elsewhere(pod) {
            step.lost()
        } else {
            step.accept()
        };
    };
    let length = match run.stage {
        Stage::Creating => Some(script.start_delay),
        Stage::BackingOff => Some(crash_backoff(script, restarts)),
        Stage::PullFailed => Some(script.restart_backoff),
        Stage::PullBackOff => None,
        Stage::Running => run_length(outcome),
    };
    match length {
        Some(length) if elapsed >= length => {}
        Some(length) => {
            step.action.requeue_after = Some(length.saturating_sub(elapsed));
            return step.done(Some(Next::Keep));
        }
        // Nothing more happens until the pod is deleted.
        None => return step.done(Some(Next::Keep)),
    }
    match run.stage {
        Stage::Creating | Stage::BackingOff => step.start(outcome),
        Stage::PullFailed | Stage::PullBackOff => step.pull_back_off(),
        Stage::Running => {
            let (code, reason) = match outcome {
                ContainerOutcome::Exit { code, .. } => (*code, "Error"),
                ContainerOutcome::OomKilled { .. } => (137, "OOMKilled"),
                _ => (0, "Completed"),
            };
            let terminated = json!({"terminated": {"exitCode": code, "reason": reason,
                "startedAt": started_at(pod), "finishedAt": now}});
            step.exited(terminated, code == 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(restart_policy: &str) -> Value {
        json!({"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"nodeName": NODE, "restartPolicy": restart_policy,
                "containers": [{"name": "main", "image": "busybox", "command": ["run-it"]}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "main",
                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}})
    }

    fn run(stage: Stage, restarts: u32) -> Run {
        Run {
            stage,
            since: Timestamp::now(),
            restarts,
        }
    }

    fn written_status(action: &Action) -> &Value {
        action
            .effects
            .iter()
            .find_map(|e| match e {
                Effect::Replace(_, Part::Status, pod) => pod.get("status"),
                _ => None,
            })
            .expect("a status write")
    }

    fn reasons(action: &Action) -> Vec<&str> {
        action
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Event(event) => Some(event.reason.as_str()),
                _ => None,
            })
            .collect()
    }

    const NOW: &str = "2026-01-01T00:00:05Z";

    #[test]
    fn a_pod_without_a_node_is_bound_to_the_local_node_first() {
        let mut unbound = pod("Never");
        meta::remove_at(&mut unbound, &["spec", "nodeName"]);
        let (action, next) = step(
            &unbound,
            None,
            &Script::new(ContainerOutcome::RunForever),
            NOW,
        );
        assert_eq!(next, None);
        assert!(
            matches!(&action.effects[0], Effect::Replace(_, Part::Main, p) if p["spec"]["nodeName"] == NODE)
        );
        assert_eq!(reasons(&action), ["Scheduled"]);
    }

    #[test]
    fn an_exit_under_on_failure_restarts_after_a_crash_loop_back_off() {
        let script = Script::new(ContainerOutcome::Exit {
            code: 2,
            after: Duration::ZERO,
        });
        let (action, next) = step(
            &pod("OnFailure"),
            Some((run(Stage::Running, 0), Duration::ZERO)),
            &script,
            NOW,
        );
        assert_eq!(next, Some(Next::Enter(Stage::BackingOff, 1)));
        assert_eq!(action.requeue_after, Some(Duration::from_secs(10)));
        let status = written_status(&action);
        assert_eq!(status["phase"], "Running");
        let container = &status["containerStatuses"][0];
        assert_eq!(container["restartCount"], 1);
        assert_eq!(
            container["state"]["waiting"]["message"],
            "back-off 10s restarting failed container=main pod=p_default(u)"
        );
        assert_eq!(container["lastState"]["terminated"]["exitCode"], 2);
        assert_eq!(container["lastState"]["terminated"]["reason"], "Error");
        assert_eq!(reasons(&action), ["BackOff"]);
    }

    #[test]
    fn under_never_an_oom_kill_fails_the_pod_with_137_once_the_run_is_over() {
        let script = Script::new(ContainerOutcome::OomKilled {
            after: Duration::from_millis(5),
        });
        let running = run(Stage::Running, 0);
        let (early, _) = step(
            &pod("Never"),
            Some((running, Duration::from_millis(1))),
            &script,
            NOW,
        );
        assert!(early.effects.is_empty());
        assert_eq!(early.requeue_after, Some(Duration::from_millis(4)));
        let (action, next) = step(
            &pod("Never"),
            Some((running, Duration::from_millis(5))),
            &script,
            NOW,
        );
        assert_eq!(next, None);
        let status = written_status(&action);
        assert_eq!(status["phase"], "Failed");
        let terminated = &status["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(terminated["exitCode"], 137);
        assert_eq!(terminated["reason"], "OOMKilled");
        assert_eq!(terminated["startedAt"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn a_command_that_cannot_start_is_a_start_error_with_the_containerd_message() {
        let creating = run(Stage::Creating, 0);
        let script = Script::new(ContainerOutcome::CannotStart);
        let (action, _) = step(
            &pod("Never"),
            Some((creating, Duration::from_secs(1))),
            &script,
            NOW,
        );
        let terminated = &written_status(&action)["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(terminated["exitCode"], 128);
        assert_eq!(terminated["reason"], "StartError");
        assert_eq!(terminated["startedAt"], "1970-01-01T00:00:00Z");
        assert!(terminated["message"].as_str().is_some_and(
            |m| m.contains("exec: \"run-it\": executable file not found in $PATH")
        ));
        assert_eq!(reasons(&action), ["Pulling", "Pulled", "Created", "Failed"]);
    }

    #[test]
    fn a_deleted_running_pod_is_stopped_with_sigterm_and_deleted_at_once() {
        let mut deleted = pod("Always");
        meta::set_at(
            &mut deleted,
            &["metadata", "deletionTimestamp"],
            json!("2026-01-01T00:00:30Z"),
        );
        let script = Script::new(ContainerOutcome::RunForever);
        let (action, next) = step(
            &deleted,
            Some((run(Stage::Running, 0), Duration::ZERO)),
            &script,
            NOW,
        );
        assert_eq!(next, None);
        let status = written_status(&action);
        assert_eq!(status["phase"], "Failed");
        assert_eq!(
            status["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            143
        );
        assert_eq!(reasons(&action), ["Killing"]);
        assert!(
            matches!(action.effects.last(), Some(Effect::Delete(_, _, options)) if options.grace_period == Some(0))
        );
    }

    #[test]
    fn a_never_ready_container_runs_started_but_keeps_the_pod_not_ready() {
        let creating = run(Stage::Creating, 0);
        let script = Script::new(ContainerOutcome::NeverReady);
        let (action, next) = step(
            &pod("Always"),
            Some((creating, Duration::from_secs(1))),
            &script,
            NOW,
        );
        assert_eq!(next, Some(Next::Enter(Stage::Running, 0)));
        assert_eq!(action.requeue_after, None, "it never exits");
        let status = written_status(&action);
        assert_eq!(status["phase"], "Running");
        let container = &status["containerStatuses"][0];
        assert_eq!(
            (container["started"].clone(), container["ready"].clone()),
            (json!(true), json!(false))
        );
        assert_eq!(status["conditions"][2]["reason"], "ContainersNotReady");
    }

    #[test]
    fn after_a_cluster_restart_the_restart_count_goes_on_from_the_one_shown() {
        let mut restarted = pod("Always");
        restarted["status"]["containerStatuses"][0]["restartCount"] = json!(3);
        let script = Script::new(ContainerOutcome::RunForever);
        let (action, next) = step(&restarted, None, &script, NOW);
        assert_eq!(next, Some(Next::Enter(Stage::Creating, 4)));
        let container = &written_status(&action)["containerStatuses"][0];
        assert_eq!(container["restartCount"], 4);
        assert_eq!(
            container["lastState"]["terminated"]["reason"],
            "ContainerStatusUnknown"
        );
    }

    #[test]
    fn durations_read_as_go_prints_them() {
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_millis(20)), "20ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_millis(61_025)), "1m1.025s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn a_deleted_pod_is_forgotten_and_a_new_one_of_the_same_name_starts_from_the_beginning() {
        use crate::registry::ops::{self, WriteOptions};
        let store = ops::store_with_namespace("default");
        let options = WriteOptions::default();
        let script = Script::new(ContainerOutcome::RunForever).start_delay(Duration::ZERO);
        let mut kubelet = ScriptedKubelet::new(script);
        let key = Key {
            namespace: "default".into(),
            name: "p".into(),
        };
        let mut body = pod("Never");
        meta::remove_at(&mut body, &["status"]);
        let run_through = |kubelet: &mut ScriptedKubelet| {
            for _ in 0..3 {
                let action = kubelet.reconcile(&key, &store);
                crate::controllers::framework::execute(&store, action.effects)
                    .expect("effects apply");
            }
            store.get(pods(), "default", "p").expect("pod exists")
        };
        ops::create(&store, pods(), Some("default"), body.clone(), &options).expect("pod");
        let first = run_through(&mut kubelet);
        assert!(
            first["status"]["containerStatuses"][0]["state"]
                .get("running")
                .is_some()
        );
        let gone = crate::registry::delete::DeleteOptions {
            grace_period: Some(0),
            ..crate::registry::delete::DeleteOptions::default()
        };
        crate::registry::delete::delete(&store, pods(), "default", "p", &gone).expect("deleted");
        assert_eq!(kubelet.reconcile(&key, &store), Action::default());
        assert!(kubelet.runs.is_empty());
        ops::create(&store, pods(), Some("default"), body, &options).expect("pod again");
        let action = kubelet.reconcile(&key, &store);
        let state = &written_status(&action)["containerStatuses"][0]["state"];
        assert_eq!(state["waiting"]["reason"], "ContainerCreating", "{state}");
    }
}
