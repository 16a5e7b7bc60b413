//! `Kubelet::Process`: each pod's single container runs as a local process of the current user — `command` and
//! `args` exec'd directly, the container's env plus `HOME`, `TOOL_DATA_DIR` and `PORT`, in its `workingDir`
//! (created if missing). Output is appended to the log store as it arrives; the real exit code becomes the
//! terminated state; restarts follow the scripted kubelet's crash-loop back-off; a deleted pod's process gets
//! SIGTERM (`Killing`), then SIGKILL once the grace period is over — the pod's current
//! `deletionGracePeriodSeconds`, so a second delete with a shorter one brings SIGKILL forward. An image
//! [`ProcessOptions::images`] does not allow is not pulled: `ErrImagePull`, then `ImagePullBackOff` after
//! `restart_backoff`, and the pod stays Pending.
//! Probes ([`super::probe`]): a startup probe keeps the container not `started` and the others off until it
//! passes; a readiness probe drives `ready` and the pod's `Ready` condition (a container without one is ready
//! once started). Whatever its probes say, a container is shown ready only once it has stayed running through
//! one status sync ([`STATUS_SYNC`], a real second): a process that exits sooner is never ready. A failed
//! liveness or startup probe (`failureThreshold` in a row) kills the container (`Killing`, SIGTERM then SIGKILL
//! after the grace period), which then restarts as the restart policy says.
//! Every failed probe records `Unhealthy` `<Kind> probe failed: <output>`.
//! The status writes and Events are the scripted kubelet's ([`Step`]).
//! With a state file, the running processes are recorded ([`super::pids`]) so that the next life of the
//! cluster stops those a kill left behind.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::images::ImagePolicy;
use super::pids::PidFile;
use super::probe::{Kind, Prober, Verdict};
use super::script::{ContainerOutcome, Script, crash_backoff};
use super::security::{self, RunAs};
use super::{Next, Stage, Step, bind, is_terminal, started_at, started_elsewhere, terminate};
use crate::clock::Clock;
use crate::controllers::framework::{Action, Key, Reconciler};
use crate::registry::meta;
use crate::registry::resources::pods;
use crate::registry::store::{Change, ObjectKey, Store};

/// How the process kubelet ([`Kubelet::Process`](super::Kubelet::Process)) runs containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOptions {
    /// The tool's home, given to processes as `HOME` and `TOOL_DATA_DIR`; `None` uses the container's
    /// `workingDir` (or the cluster's current directory without one).
    pub tool_data_dir: Option<PathBuf>,
    /// The first crash-loop back-off; it doubles per restart up to 30 times this (10 s → 300 s). Also how long
    /// a failed image pull shows `ErrImagePull` before `ImagePullBackOff`.
    pub restart_backoff: Duration,
    /// The images the node can pull (by default Toolforge's); a container of any other image waits in
    /// `ErrImagePull`, then `ImagePullBackOff`, and never runs.
    pub images: ImagePolicy,
}

impl Default for ProcessOptions {
    fn default() -> Self {
        ProcessOptions {
            tool_data_dir: None,
            restart_backoff: Duration::from_secs(10),
            images: ImagePolicy::Toolforge,
        }
    }
}

/// How often a running process is checked for its end.
const POLL: Duration = Duration::from_millis(25);
/// How long output still in the pipes is awaited once the process exited (a background child may hold them).
const DRAIN: Duration = Duration::from_millis(500);
/// The kubelet's status-sync period (PLEG relist and status manager, 1 s on Kubernetes): a started container is
/// shown running but not ready until it has stayed running this long, so a process that exits sooner is seen
/// terminated and is never ready. Real time, as the process runs in real time whatever the clock's speed.
const STATUS_SYNC: Duration = Duration::from_secs(1);

/// A started process.
#[derive(Debug)]
struct Running {
    child: Child,
    readers: Vec<JoinHandle<()>>,
    /// When the process was seen to exit, and how.
    exited: Option<(Instant, ExitStatus)>,
    /// Set once SIGTERM was sent: when SIGKILL follows.
    stopping: Option<Stopping>,
    /// The container's probes, which started with it.
    probes: Vec<Prober>,
    /// Whether the startup probe succeeded (true without one): until then no other probe runs.
    started: bool,
    /// Whether the container is ready as its probes say (true without a readiness probe once started).
    ready: bool,
    /// When the process started: it shows ready only after [`STATUS_SYNC`] from then.
    since: Instant,
    /// The readiness the status shows: `ready` once the container has stayed running through a status sync.
    shown_ready: bool,
}

/// A container being stopped: SIGTERM was sent, SIGKILL follows at `kill_at`.
#[derive(Debug, Clone, Copy)]
struct Stopping {
    kill_at: Instant,
    /// The grace period `kill_at` was set for (cluster time), to notice a shorter one.
    grace: Duration,
}

/// Sends SIGTERM to the container's processes; SIGKILL follows after the pod's grace period (cluster time).
fn stop(running: &mut Running, pod: &Value, clock: Clock) {
    signal_group(&running.child, "TERM");
    let grace = grace_period(pod);
    running.stopping = Some(Stopping {
        kill_at: clock.deadline(grace),
        grace,
    });
}

/// A second delete shortened the pod's grace period (`deletionGracePeriodSeconds`): as the kubelet's pod worker
/// restarts the kill with the shorter period, SIGKILL comes that long from now unless it was due sooner.
fn shorten(stopping: &mut Stopping, pod: &Value, clock: Clock) {
    let grace = grace_period(pod);
    if grace < stopping.grace {
        stopping.kill_at = stopping.kill_at.min(clock.deadline(grace));
        stopping.grace = grace;
    }
}

/// Where a pod is.
#[derive(Debug)]
enum State {
    /// Waiting since `at` to start after `delay` of real time (nothing for a first start, a crash-loop back-off
    /// after exits).
    Waiting {
        at: Instant,
        delay: Duration,
    },
    Running(Box<Running>),
    /// The image could not be pulled at `at`; `ImagePullBackOff` follows after the back-off.
    PullFailed {
        at: Instant,
    },
    /// Backing off from a pull that will not succeed; nothing happens until the pod is deleted.
    PullBackOff,
    /// Refused for its `securityContext` (`CreateContainerConfigError`); nothing happens until the pod is deleted.
    Refused,
}

#[derive(Debug)]
struct Run {
    uid: String,
    restarts: u32,
    state: State,
}

/// The process kubelet's reconciler; its keys are pods.
#[derive(Debug)]
pub(crate) struct ProcessKubelet {
    options: ProcessOptions,
    /// Timings for [`Step`] (start at once, back off from `restart_backoff`).
    script: Script,
    runs: HashMap<Key, Run>,
    /// The cluster's clock: back-offs and grace periods are cluster durations, while processes, their output
    /// and their probes run in real time.
    clock: Clock,
    /// Where the running processes are recorded, with a state file.
    pids: Option<PidFile>,
    /// Whether the cluster runs as root, and so can run containers as their `runAsUser` ([`security`]).
    cluster_is_root: bool,
}

impl ProcessKubelet {
    pub(crate) fn new(options: ProcessOptions, clock: Clock, pids: Option<PathBuf>) -> Self {
        let script = Script::new(ContainerOutcome::RunForever)
            .start_delay(Duration::ZERO)
            .restart_backoff(options.restart_backoff);
        ProcessKubelet {
            options,
            script,
            runs: HashMap::new(),
            clock,
            pids: pids.map(PidFile::new),
            cluster_is_root: rustix::process::geteuid().is_root(),
        }
    }

    /// Records the processes running now (the file is rewritten only when they change).
    fn record_pids(&mut self) {
        if let Some(pids) = &mut self.pids {
            pids.record(self.runs.values().filter_map(|run| match &run.state {
                State::Running(running) if running.exited.is_none() => Some(running.child.id()),
                _ => None,
            }));
        }
    }
}

impl Drop for ProcessKubelet {
    /// The cluster stops: so do its processes.
    fn drop(&mut self) {
        for run in self.runs.values_mut() {
            kill_run(run);
        }
    }
}

fn kill_run(run: &mut Run) {
    if let State::Running(running) = &mut run.state
        && running.exited.is_none()
    {
        kill_now(&mut running.child);
    }
}

/// The exit code as a container runtime reports it: the code, or 128 + the signal.
fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(255)
}

fn grace_period(pod: &Value) -> Duration {
    let seconds = meta::at(pod, &["metadata", "deletionGracePeriodSeconds"])
        .or_else(|| meta::at(pod, &["spec", "terminationGracePeriodSeconds"]))
        .and_then(Value::as_u64)
        .unwrap_or(30);
    Duration::from_secs(seconds)
}

/// The first container of the pod.
fn container(pod: &Value) -> Value {
    meta::at(pod, &["spec", "containers"])
        .and_then(Value::as_array)
        .and_then(|l| l.first())
        .cloned()
        .unwrap_or_else(|| json!({}))
}

fn strings(container: &Value, field: &str) -> Vec<String> {
    container
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// The directory and environment of a container's processes: its command and its `exec` probes.
struct Context {
    dir: PathBuf,
    env: Vec<(String, OsString)>,
    run_as: RunAs,
}

impl Context {
    fn of(container: &Value, options: &ProcessOptions, run_as: RunAs) -> std::io::Result<Context> {
        let working_dir = container
            .get("workingDir")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from);
        let home = match (&options.tool_data_dir, &working_dir) {
            (Some(home), _) => home.clone(),
            (None, Some(dir)) => dir.clone(),
            (None, None) => std::env::current_dir()?,
        };
        let dir = working_dir.unwrap_or_else(|| home.clone());
        // As container runtimes do, a missing working directory is created, owned by the container's user.
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir)?;
            if let Some((uid, gid)) = run_as {
                rustix::fs::chown(
                    &dir,
                    Some(rustix::fs::Uid::from_raw(uid)),
                    Some(rustix::fs::Gid::from_raw(gid)),
                )?;
            }
        }
        let mut env: Vec<(String, OsString)> = Vec::new();
        if let Some(path) = std::env::var_os("PATH") {
            env.push(("PATH".into(), path));
        }
        env.push(("HOME".into(), home.clone().into_os_string()));
        env.push(("TOOL_DATA_DIR".into(), home.into_os_string()));
        let port = container
            .get("ports")
            .and_then(Value::as_array)
            .and_then(|l| l.first())
            .and_then(|p| p.get("containerPort"))
            .and_then(Value::as_i64);
        if let Some(port) = port {
            env.push(("PORT".into(), port.to_string().into()));
        }
        for var in container
            .get("env")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = var.get("name").and_then(Value::as_str) {
                let value = var.get("value").and_then(Value::as_str).unwrap_or_default();
                env.push((name.to_owned(), value.into()));
            }
        }
        Ok(Context { dir, env, run_as })
    }

    /// `argv` as a command in this directory and environment (and nothing of the cluster's).
    fn command(&self, argv: &[String]) -> Command {
        let (program, rest) = argv
            .split_first()
            .map_or(("", &[][..]), |(p, r)| (p.as_str(), r));
        let mut command = Command::new(program);
        command
            .args(rest)
            .current_dir(&self.dir)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some((uid, gid)) = self.run_as {
            command.uid(uid).gid(gid);
        }
        command
    }
}

/// The container's own process: `command` + `args`, leading its own process group, output piped.
fn command(container: &Value, options: &ProcessOptions, run_as: RunAs) -> std::io::Result<Command> {
    let mut argv = strings(container, "command");
    argv.extend(strings(container, "args"));
    let mut command = Context::of(container, options, run_as)?.command(&argv);
    command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(command)
}

/// Appends what `pipe` prints to the container's latest log instance, line by line as it arrives.
fn reader(
    pipe: impl Read + Send + 'static,
    store: &Store,
    key: &Key,
    name: &str,
) -> JoinHandle<()> {
    let (store, namespace, pod, name) = (
        store.clone(),
        key.namespace.clone(),
        key.name.clone(),
        name.to_owned(),
    );
    std::thread::spawn(move || {
        let mut pipe = BufReader::new(pipe);
        let mut line = Vec::new();
        while pipe.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let text = String::from_utf8_lossy(&line);
            let at = store.clock().now();
            store.logs(|logs| logs.append((&namespace, &pod, &name), &text, at));
            line.clear();
        }
    })
}

/// Nothing to do now; look again after `after` of real time (requeues are cluster durations).
fn later(clock: Clock, after: Duration) -> Action {
    Action {
        requeue_after: Some(clock.cluster(after)),
        ..Action::default()
    }
}

/// Sends `signal` (`TERM`, `KILL`) to the process and everything it started: the process leads its own process
/// group, as a container's processes share a PID namespace. kill(1) does it, as the crate has no unsafe code.
fn signal_group(child: &Child, signal: &str) {
    let _ = Command::new("kill")
        .args(["-s", signal, "--", &format!("-{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Kills the process and its group at once and reaps it.
fn kill_now(child: &mut Child) {
    signal_group(child, "KILL");
    let _ = child.kill();
    let _ = child.wait();
}

impl Reconciler for ProcessKubelet {
    fn keys(&self, change: &Change) -> Vec<Key> {
        super::pod_keys(change)
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        super::all_pods(store)
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let action = self.reconcile_pod(key, store);
        self.record_pids();
        action
    }
}

impl ProcessKubelet {
    /// One reconcile of one pod.
    fn reconcile_pod(&mut self, key: &Key, store: &Store) -> Action {
        let pod = store.read(|s| s.get(&ObjectKey::new(pods(), &key.namespace, &key.name)));
        let Some(pod) = pod else {
            if let Some(mut run) = self.runs.remove(key) {
                kill_run(&mut run);
            }
            return Action::default();
        };
        if meta::str_at(&pod, &["spec", "nodeName"]).is_none_or(str::is_empty) {
            return bind(&pod);
        }
        let uid = meta::uid(&pod).to_owned();
        if self.runs.get(key).is_some_and(|r| r.uid != uid)
            && let Some(mut run) = self.runs.remove(key)
        {
            kill_run(&mut run);
        }
        let now = meta::now(store.clock());
        if is_terminal(&pod) {
            if let Some(mut run) = self.runs.remove(key) {
                kill_run(&mut run);
            }
            return Action::default();
        }
        let Some(mut run) = self.runs.remove(key) else {
            let step = Step {
                pod: &pod,
                script: &self.script,
                restarts: 0,
                now: &now,
                action: Action::default(),
                starting: false,
            };
            if meta::is_deleting(&pod) {
                return terminate(&pod, 0, &now, 143, false);
            }
            let (action, next) = if started_elsewhere(&pod) {
                step.lost()
            } else {
                step.accept()
            };
            let mut run = Run {
                uid,
                restarts: 0,
                state: State::Waiting {
                    at: Instant::now(),
                    delay: Duration::ZERO,
                },
            };
            if next.is_some() {
                self.remember(&mut run, next);
                self.runs.insert(key.clone(), run);
            }
            return action;
        };
        let (action, keep) = self.advance(&mut run, &pod, key, store, &now);
        if keep {
            self.runs.insert(key.clone(), run);
        }
        action
    }

    /// One step of a known pod; whether to keep remembering it.
    fn advance(
        &self,
        run: &mut Run,
        pod: &Value,
        key: &Key,
        store: &Store,
        now: &str,
    ) -> (Action, bool) {
        let step = Step {
            pod,
            script: &self.script,
            restarts: run.restarts,
            now,
            action: Action::default(),
            starting: matches!(&run.state, State::Running(running) if !running.started),
        };
        let deleting = meta::is_deleting(pod);
        match &mut run.state {
            State::Waiting { .. }
            | State::PullFailed { .. }
            | State::PullBackOff
            | State::Refused
                if deleting =>
            {
                (terminate(pod, run.restarts, now, 143, false), false)
            }
            State::PullFailed { at } => {
                let elapsed = Instant::now().saturating_duration_since(*at);
                let backoff = self.clock.real(self.options.restart_backoff);
                if elapsed < backoff {
                    return (later(self.clock, backoff.saturating_sub(elapsed)), true);
                }
                run.state = State::PullBackOff;
                (step.pull_back_off().0, true)
            }
            State::PullBackOff | State::Refused => (Action::default(), true),
            State::Waiting { at, delay } => {
                let elapsed = Instant::now().saturating_duration_since(*at);
                if elapsed < *delay {
                    return (later(self.clock, delay.saturating_sub(elapsed)), true);
                }
                self.start(run, step, pod, key, store)
            }
            State::Running(running) => {
                if running.exited.is_none() {
                    match running.child.try_wait() {
                        Ok(Some(status)) => {
                            // As when a container's first process ends: what it left behind is killed
                            // (only if something still holds its output, which is when the group lives on).
                            if !running.readers.iter().all(JoinHandle::is_finished) {
                                signal_group(&running.child, "KILL");
                            }
                            running.exited = Some((Instant::now(), status));
                        }
                        Ok(None) => {}
                        Err(_) => {
                            signal_group(&running.child, "KILL");
                            let _ = running.child.kill();
                            let status = running.child.wait().ok();
                            running.exited = status.map(|s| (Instant::now(), s));
                        }
                    }
                }
                let Some((exited, status)) = running.exited else {
                    let mut step = step;
                    match &mut running.stopping {
                        Some(stopping) if deleting => shorten(stopping, pod, self.clock),
                        Some(_) => {}
                        None if deleting => {
                            stop(running, pod, self.clock);
                            step.events("Normal", "Killing", |name, _| {
                                format!("Stopping container {name}")
                            });
                        }
                        None => return (self.probe(running, pod, step), true),
                    }
                    if running
                        .stopping
                        .is_some_and(|s| Instant::now() >= s.kill_at)
                    {
                        signal_group(&running.child, "KILL");
                        let _ = running.child.kill();
                    }
                    let mut action = step.action;
                    action.requeue(self.clock.cluster(POLL));
                    return (action, true);
                };
                // The rest of its output first, so the log is complete once the status says it ended.
                let drained = running.readers.iter().all(JoinHandle::is_finished);
                if !drained && Instant::now().saturating_duration_since(exited) < DRAIN {
                    return (later(self.clock, POLL), true);
                }
                let code = exit_code(status);
                if deleting {
                    return (terminate(pod, run.restarts, now, code, false), false);
                }
                let reason = if code == 0 { "Completed" } else { "Error" };
                let terminated = json!({"terminated": {"exitCode": code, "reason": reason,
                    "startedAt": started_at(pod), "finishedAt": now}});
                let (action, next) = step.exited(terminated, code == 0);
                self.remember(run, next);
                (action, next.is_some())
            }
        }
    }

    /// Starts the container's process, or reports that it cannot run.
    fn start(
        &self,
        run: &mut Run,
        step: Step<'_>,
        pod: &Value,
        key: &Key,
        store: &Store,
    ) -> (Action, bool) {
        let container = container(pod);
        let name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let image = container
            .get("image")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.options.images.pulls(image, store) {
            let (action, _) = step.start(&ContainerOutcome::ImagePullError);
            run.state = State::PullFailed { at: Instant::now() };
            return (action, true);
        }
        let run_as = match security::run_as(pod, &container, self.cluster_is_root) {
            Ok(run_as) => run_as,
            Err(message) => {
                let (action, _) = step.config_error(&message);
                run.state = State::Refused;
                return (action, true);
            }
        };
        let child = command(&container, &self.options, run_as).and_then(|mut c| c.spawn());
        let Ok(mut child) = child else {
            let (action, next) = step.start(&ContainerOutcome::CannotStart);
            self.remember(run, next);
            return (action, next.is_some());
        };
        let at = store.clock().now();
        store.logs(|logs| logs.start((&key.namespace, &key.name, &name), "", at));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(reader(out, store, key, &name));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(reader(err, store, key, &name));
        }
        let started = Instant::now();
        let probes: Vec<Prober> = [Kind::Startup, Kind::Liveness, Kind::Readiness]
            .into_iter()
            .filter_map(|kind| Prober::of(&container, kind, started))
            .collect();
        let has = |kind: Kind| probes.iter().any(|p| p.kind == kind);
        let mut step = step;
        step.starting = has(Kind::Startup);
        // Every container starts not ready: without a startup or readiness probe it becomes ready once it has
        // stayed running through a status sync.
        let (mut action, _) = step.start(&ContainerOutcome::NeverReady);
        action.requeue_after = Some(self.clock.cluster(POLL));
        run.state = State::Running(Box::new(Running {
            child,
            readers,
            exited: None,
            stopping: None,
            started: !has(Kind::Startup),
            ready: !has(Kind::Startup) && !has(Kind::Readiness),
            since: started,
            shown_ready: false,
            probes,
        }));
        (action, true)
    }

    /// Runs the due probes of a running container and acts on their results: `Unhealthy` events for failures,
    /// `started` and `ready` in the status, and a container that failed its liveness or startup probe killed
    /// (`Killing`), to be restarted as its pod's restart policy says once it exited.
    fn probe(&self, running: &mut Running, pod: &Value, mut step: Step<'_>) -> Action {
        let container = container(pod);
        let exec = |argv: &[String]| {
            let run_as = security::run_as(pod, &container, self.cluster_is_root).ok()?;
            Context::of(&container, &self.options, run_as)
                .ok()
                .map(|c| c.command(argv))
        };
        let has_readiness = running.probes.iter().any(|p| p.kind == Kind::Readiness);
        let (was_started, was_ready) = (running.started, running.shown_ready);
        let mut failed: Option<Kind> = None;
        for prober in &mut running.probes {
            // The startup probe runs until it succeeds; the others only after it.
            if (prober.kind == Kind::Startup) == running.started {
                continue;
            }
            match (prober.kind, prober.poll(exec)) {
                (Kind::Startup, Some(Verdict::Success { settled: true })) => {
                    running.started = true;
                    running.ready = !has_readiness;
                }
                (Kind::Readiness, Some(Verdict::Success { settled: true })) => running.ready = true,
                (kind, Some(Verdict::Failure { output, settled })) => {
                    step.events("Warning", "Unhealthy", |_, _| {
                        format!("{} probe failed: {output}", kind.title())
                    });
                    match kind {
                        Kind::Readiness if settled => running.ready = false,
                        Kind::Liveness | Kind::Startup if settled => failed = Some(kind),
                        _ => {}
                    }
                }
                (_, None | Some(Verdict::Success { .. })) => {}
            }
        }
        let synced = running.since.elapsed() >= STATUS_SYNC;
        running.shown_ready = running.ready && synced;
        if (running.started, running.shown_ready) != (was_started, was_ready) {
            step.starting = !running.started;
            step.running(running.shown_ready);
        }
        if let Some(kind) = failed {
            let restarted = meta::str_at(pod, &["spec", "restartPolicy"]) != Some("Never");
            step.events("Normal", "Killing", |name, _| {
                let probe = kind.title().to_lowercase();
                let then = if restarted { ", will be restarted" } else { "" };
                format!("Container {name} failed {probe} probe{then}")
            });
            stop(running, pod, self.clock);
        }
        let next = running
            .probes
            .iter()
            .map(Prober::due_in)
            .min()
            .unwrap_or(POLL)
            .clamp(Duration::from_millis(1), POLL);
        let mut action = step.action;
        action.requeue(self.clock.cluster(next));
        action
    }
}

impl ProcessKubelet {
    /// What a [`Step`] decided, in this kubelet's terms: containers being created start at once (the script's
    /// start delay is zero), a crash loop waits for its back-off.
    fn remember(&self, run: &mut Run, next: Option<Next>) {
        if let Some(Next::Enter(stage, restarts)) = next {
            let delay = match stage {
                Stage::BackingOff => crash_backoff(&self.script, restarts),
                _ => self.script.start_delay,
            };
            run.restarts = restarts;
            run.state = State::Waiting {
                at: Instant::now(),
                delay: self.clock.real(delay),
            };
        }
    }
}
