//! A local cluster for the command's end-to-end tests: started in-process with controllers and a scripted
//! kubelet, a kubeconfig for it, the tool's namespace, a jobs file in a temporary directory, and a way to run
//! `toolforge-jobs` against it and read its exit code, stdout and stderr.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses the part of the harness it needs"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use toolforge_local_cluster::{
    ContainerOutcome, Controllers, Kubelet, LocalCluster, Options, Script,
};

pub const TOOL: &str = "mytool";
pub const NAMESPACE: &str = "tool-mytool";
const MS: Duration = Duration::from_millis(1);

/// A `wait` one-off, `migrate`, and the continuous job `bot` it holds back until it succeeds.
pub const MIGRATE_THEN_BOT: &str = "\
- name: migrate
  command: ./migrate.sh
  image: bookworm
  wait: true
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
";

/// A running local cluster with the tool's namespace and a directory for the jobs file.
pub struct Cluster {
    pub local: LocalCluster,
    pub client: kube::Client,
    pub directory: tempfile::TempDir,
    kubeconfig: PathBuf,
}

/// What one run of the command printed.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Cluster {
    /// Takes the tool's lock as `holder` (another apply or daemon, for 60 s) and never lets go.
    pub async fn hold_lock(&self, holder: &str) {
        let now = jiff::Timestamp::now().to_string();
        let lease: k8s_openapi::api::coordination::v1::Lease =
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "toolforge-jobs"},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 60,
                    "acquireTime": now, "renewTime": now}
            }))
            .unwrap();
        Api::namespaced(self.client.clone(), NAMESPACE)
            .create(&PostParams::default(), &lease)
            .await
            .unwrap();
    }

    /// Pods of one-off Jobs succeed after 50 ms; every other pod runs until deleted.
    pub async fn start() -> Self {
        Self::start_with(Script::new(ContainerOutcome::RunForever)).await
    }

    /// Pods follow `script`; Jobs' pods without a rule of their own succeed after 50 ms.
    pub async fn start_with(script: Script) -> Self {
        let cluster = LocalCluster::start(Options {
            controllers: Some(controllers(script)),
            ..Options::default()
        })
        .await
        .expect("the local cluster starts");
        let client = cluster.client().expect("a client");
        create_namespace(&client).await;
        let directory = tempfile::tempdir().unwrap();
        let kubeconfig = directory.path().join("kubeconfig");
        cluster.write_kubeconfig(&kubeconfig).unwrap();
        Cluster {
            local: cluster,
            client,
            directory,
            kubeconfig,
        }
    }

    /// Writes the jobs file.
    pub fn write_jobs(&self, yaml: &str) {
        std::fs::write(self.directory.path().join("jobs.yaml"), yaml).unwrap();
    }

    /// `toolforge-jobs ARGS --kubeconfig … --tool mytool -f jobs.yaml --no-color`, not started.
    pub fn command(&self, args: &[&str]) -> Command {
        command(&self.kubeconfig, self.directory.path(), args)
    }

    /// Runs `toolforge-jobs ARGS …` (see [`Cluster::command`]) and waits for it.
    pub async fn run(&self, args: &[&str]) -> Run {
        Run::of(self.command(args)).await
    }

    /// The inventory record (the JSON in the inventory ConfigMap of the default set).
    pub async fn inventory(&self) -> serde_json::Value {
        let config_map = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
            self.client.clone(),
            NAMESPACE,
        )
        .get("toolforge-jobs")
        .await
        .expect("the inventory exists");
        let data = config_map.data.expect("the inventory has data");
        serde_json::from_str(&data["inventory.json"]).expect("the inventory is JSON")
    }

    /// Deletes the inventory ConfigMap of the default set: it no longer knows any job.
    pub async fn forget_inventory(&self) {
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(self.client.clone(), NAMESPACE)
            .delete("toolforge-jobs", &kube::api::DeleteParams::default())
            .await
            .expect("the inventory exists");
    }

    /// The API requests made since the last reset, as `verb resource` → count, without the watch requests
    /// the controllers make.
    pub fn requests(&self) -> u64 {
        self.local.request_counts().values().sum()
    }
}

/// The controllers of the tests' clusters: pods follow `script`, Jobs' pods without a rule of their own
/// succeed after 50 ms, and back-offs are short.
pub fn controllers(script: Script) -> Controllers {
    let script = script
        .label(
            "app.kubernetes.io/component",
            "jobs",
            ContainerOutcome::Succeed { after: 50 * MS },
        )
        .restart_backoff(30 * MS);
    Controllers {
        job_backoff_base: 20 * MS,
        job_backoff_cap: 100 * MS,
        kubelet: Some(Kubelet::Scripted(script)),
    }
}

/// Creates the tool's namespace, unless it exists (a cluster restarted from its state file has it).
pub async fn create_namespace(client: &kube::Client) {
    let namespaces = Api::<Namespace>::all(client.clone());
    if namespaces.get_opt(NAMESPACE).await.unwrap().is_some() {
        return;
    }
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}})).unwrap();
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the namespace is created");
}

/// `toolforge-jobs ARGS --kubeconfig KUBECONFIG --tool mytool -f DIRECTORY/jobs.yaml --no-color`, run in
/// `directory`, not started.
pub fn command(kubeconfig: &Path, directory: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"));
    command
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--tool", TOOL, "--no-color", "-f"])
        .arg(directory.join("jobs.yaml"))
        .current_dir(directory)
        .env_remove("RUST_LOG");
    command
}

impl Run {
    /// Runs `command` and waits for it.
    pub async fn of(mut command: Command) -> Self {
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .unwrap()
            .expect("toolforge-jobs runs");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Fails the test with everything printed when the exit code is not `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\n--- stderr\n{}\n--- stdout\n{}",
            self.stderr, self.stdout
        );
        self
    }

    /// Fails the test with everything printed when stderr does not contain `text`.
    #[track_caller]
    pub fn expect_stderr(&self, text: &str) -> &Self {
        assert!(
            self.stderr.contains(text),
            "no `{text}` in stderr:\n{}",
            self.stderr
        );
        self
    }

    /// Fails the test with everything printed when stdout does not contain `text`.
    #[track_caller]
    pub fn expect_stdout(&self, text: &str) -> &Self {
        assert!(
            self.stdout.contains(text),
            "no `{text}` in stdout:\n{}",
            self.stdout
        );
        self
    }

    /// The plan table's row for `job`: `(action, kind)`.
    pub fn row(&self, job: &str) -> Option<(String, String)> {
        self.stdout.lines().find_map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            match cells.as_slice() {
                [action, kind, name, ..] if *name == job => {
                    Some(((*action).to_owned(), (*kind).to_owned()))
                }
                [action, outcome, kind, name, ..] if *name == job && outcome.starts_with('(') => {
                    Some((format!("{action} {outcome}"), (*kind).to_owned()))
                }
                _ => None,
            }
        })
    }
}

/// The moments of a bounded randomized kill loop: a xorshift sequence from `KILL_LOOP_SEED`, or from the clock
/// (a test names the seed in its failure messages, so that a failing run can be replayed).
pub struct KillLoop {
    pub seed: u64,
    state: u64,
}

impl KillLoop {
    pub fn new() -> Self {
        let seed: u64 = std::env::var("KILL_LOOP_SEED")
            .ok()
            .and_then(|seed| seed.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos()
                    .into()
            });
        KillLoop {
            seed,
            state: seed | 1,
        }
    }

    /// A number in `0..below`.
    pub fn below(&mut self, below: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % below
    }
}

/// The strings of a JSON array, sorted (job names in a report, whose order is not part of it).
pub fn sorted_strings(array: &serde_json::Value) -> Vec<&str> {
    let mut strings: Vec<&str> = array
        .as_array()
        .expect("an array")
        .iter()
        .map(|string| string.as_str().expect("a string"))
        .collect();
    strings.sort_unstable();
    strings
}

/// The merge patch that makes one of our objects look made by upstream's jobs-api (or `run`): none of our
/// annotations, none of the inventory's labels.
pub fn as_upstream_made() -> kube::api::Patch<serde_json::Value> {
    kube::api::Patch::Merge(
        serde_json::json!({"metadata": {"annotations": null, "labels": {
        "jobs.toolforge.org/inventory": null, "applyset.kubernetes.io/part-of": null}}}),
    )
}

/// A `toolforge-jobs` child process running in the background (the `watch` daemon, an apply to interrupt) and
/// the lines of its stderr, collected as they come.
pub struct Background {
    child: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Cluster {
    /// Starts `toolforge-jobs watch ARGS` against the cluster with JSON logs, a short back-off and (unless ARGS
    /// set one) a short debounce. `$TOOLFORGE_JOBS_BIN` names another binary (a release build, to measure it).
    pub fn spawn_watch(&self, args: &[&str]) -> Background {
        let binary = std::env::var_os("TOOLFORGE_JOBS_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_toolforge-jobs").into());
        let mut command = Command::new(binary);
        command
            .arg("watch")
            .args(["--log-format", "json", "--max-backoff", "1s"])
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--tool", TOOL, "--no-color", "-f"])
            .arg(self.directory.path().join("jobs.yaml"))
            .current_dir(self.directory.path())
            .env_remove("RUST_LOG");
        if !args.contains(&"--debounce") {
            command.args(["--debounce", "100ms"]);
        }
        if !args.contains(&"--prune-settle") {
            command.args(["--prune-settle", "1s"]);
        }
        Background::spawn(command)
    }

    /// Starts `toolforge-jobs ARGS …` (see [`Cluster::command`]) in the background.
    pub fn spawn(&self, args: &[&str]) -> Background {
        Background::spawn(self.command(args))
    }

    /// Waits until the daemon's watches of the four kinds are open (after their first LIST): from then on, a
    /// change in the cluster is drift.
    pub async fn watches_open(&self) {
        eventually(
            Duration::from_secs(20),
            "the daemon's watches open",
            || async {
                ["jobs", "cronjobs", "deployments", "services"]
                    .iter()
                    .all(|resource| self.local.request_count("watch", resource) > 0)
            },
        )
        .await;
    }
}

impl Background {
    /// Starts `command` (stdin and stdout closed), collecting its stderr.
    pub fn spawn(mut command: Command) -> Self {
        use std::io::BufRead as _;
        let mut child = command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("toolforge-jobs starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let collected = std::sync::Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                collected.lock().unwrap().push(line);
            }
        });
        Background { child, lines }
    }

    /// Every log line so far.
    pub fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// How many log lines so far contain `needle`.
    pub fn count(&self, needle: &str) -> usize {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains(needle))
            .count()
    }

    /// Waits until `count(needle)` reaches `at_least`.
    pub async fn wait_for_log(&self, needle: &str, at_least: usize) {
        let started = std::time::Instant::now();
        while self.count(needle) < at_least {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no {at_least}× `{needle}` in the log:\n{}",
                self.log()
            );
            tokio::time::sleep(20 * MS).await;
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// Sends SIGINT, as Ctrl-C does.
    pub fn interrupt(&self) {
        self.signal("INT");
    }

    /// Sends SIGKILL and reaps the process: it ends at once, with no cleanup (its lock stays taken, its requests
    /// in flight are cut off), as `kill -9` or a machine losing power ends it.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to end; its exit code.
    pub async fn exit_code(&mut self) -> i32 {
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the process did not exit:\n{}",
                self.log()
            );
            tokio::time::sleep(20 * MS).await;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `check` holds, looking every 20 ms; fails the test after `timeout`.
pub async fn eventually<F, Fut>(timeout: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < timeout,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(20 * MS).await;
    }
}
