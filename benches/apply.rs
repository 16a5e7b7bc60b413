//! Benchmark: `diff` and `apply` against the local cluster (API server only, no controllers), with the API
//! requests each makes as counted by the cluster, and baselines measured in the same run:
//!
//! 1. `apply` of 300 new jobs;
//! 2. `diff` of the same 300 jobs, nothing changed: while the one-offs' runs go on, and once they ended (their
//!    Jobs' status set as the Job controller would) and an `apply` recorded it (issue target: one request per kind
//!    the file uses plus the inventory, ≤ 6);
//! 3. a no-op `apply` of the 300 jobs vs `kubectl apply -f` of the same rendered objects, also a no-op (target:
//!    ≥ 20× faster);
//! 4. 100 changed jobs with 5 ms of latency per request: `apply` vs `apply --concurrency 1`, the
//!    one-request-at-a-time loop (target ≥ 5×);
//! 5. scale: `apply` of 10 000 new jobs, then `diff` and a no-op `apply` of them, against the cluster's object size
//!    limits (the inventory must be stored in parts), with the client's peak memory per job (target < 20 KB).
//!
//! Run with `cargo bench --bench apply`; needs kubectl on PATH for the baseline of 3 and `/usr/bin/time` for the
//! memory of 5. `BENCH_SCALE_JOBS` changes the 10 000 of 5 (0 skips it).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use toolforge_local_cluster::{LocalCluster, Options};

const JOBS: usize = 300;
const CHANGED: usize = 100;
const SCALE_JOBS: usize = 10_000;
const TOOL: &str = "benchtool";
const SCALE_TOOL: &str = "scaletool";

/// `count` jobs: a third scheduled, a third continuous (half of them with a port, so a Service), a third one-off.
fn jobs_file(count: usize, command_suffix: &str, changed: usize) -> String {
    let mut text = String::new();
    for index in 0..count {
        let suffix = if index < changed { command_suffix } else { "" };
        let job = match index % 3 {
            0 => format!(
                "- name: cron-{index}\n  command: ./report.sh {index}{suffix}\n  image: bookworm\n  schedule: \"{} * * * *\"\n",
                index % 60
            ),
            1 => {
                let port = if index % 2 == 0 {
                    format!("  port: {}\n", 8000 + index)
                } else {
                    String::new()
                };
                format!(
                    "- name: bot-{index}\n  command: ./bot.py {index}{suffix}\n  image: python3.11\n  continuous: true\n{port}"
                )
            }
            _ => format!(
                "- name: once-{index}\n  command: ./once.sh {index}{suffix}\n  image: bookworm\n"
            ),
        };
        text.push_str(&job);
    }
    text
}

struct Bench {
    cluster: LocalCluster,
    directory: tempfile::TempDir,
}

struct Measured {
    elapsed: Duration,
    requests: u64,
    writes: u64,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Bench {
    fn kubeconfig(&self) -> std::path::PathBuf {
        self.directory.path().join("kubeconfig")
    }

    /// Runs a command and measures its wall time and the requests the cluster saw.
    fn measure(&self, command: &mut Command) -> Measured {
        self.cluster.reset_request_counts();
        let start = Instant::now();
        let output = command.output().expect("the command runs");
        let elapsed = start.elapsed();
        let counts = self.cluster.request_counts();
        let requests = counts.values().sum();
        let writes = counts
            .iter()
            .filter(|((verb, _), _)| {
                matches!(verb.as_str(), "create" | "update" | "patch" | "delete")
            })
            .map(|(_, count)| count)
            .sum();
        assert!(
            output.status.code().is_some(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Measured {
            elapsed,
            requests,
            writes,
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    fn ours(&self, args: &[&str]) -> Measured {
        let ours = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"));
        self.measure(&mut self.command(ours, TOOL, args))
    }

    /// Runs our command under `/usr/bin/time`: what it measured, and the peak resident memory in KB.
    fn ours_with_memory(&self, tool: &str, args: &[&str]) -> (Measured, u64) {
        let mut time = Command::new("/usr/bin/time");
        time.args(["-f", "%M", env!("CARGO_BIN_EXE_toolforge-jobs")]);
        let measured = self.measure(&mut self.command(time, tool, args));
        let peak = measured
            .stderr
            .lines()
            .last()
            .and_then(|line| line.trim().parse().ok())
            .unwrap_or(0);
        (measured, peak)
    }

    fn command(&self, mut command: Command, tool: &str, args: &[&str]) -> Command {
        command
            .args(args)
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(["--tool", tool, "--no-color", "-f"])
            .arg(self.directory.path().join("jobs.yaml"));
        command
    }

    fn kubectl(&self, file: &Path) -> Measured {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--cache-dir")
            .arg(self.directory.path().join("kube-cache"))
            .args(["apply", "-f"])
            .arg(file);
        self.measure(&mut command)
    }
}

/// Part 5: 10 000 jobs applied, diffed and applied again, in a namespace of their own.
fn scale(bench: &Bench, report: &mut String) {
    let count = std::env::var("BENCH_SCALE_JOBS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(SCALE_JOBS);
    if count == 0 {
        return;
    }
    let jobs = bench.directory.path().join("jobs.yaml");
    std::fs::write(&jobs, jobs_file(count, "", 0)).expect("write");
    for (what, args) in [
        ("apply of new jobs", &["apply"][..]),
        ("diff, nothing changed", &["diff"][..]),
        ("no-op apply", &["apply"][..]),
    ] {
        let (measured, peak_kb) = bench.ours_with_memory(SCALE_TOOL, args);
        assert_eq!(measured.code, 0, "{what}: {}", measured.stderr);
        let _ = writeln!(
            report,
            "5. {count} jobs, {what}: {:.0} ms, {} requests ({} writes), client peak memory {} MB ({} bytes per job; target < 20 KB)",
            ms(measured.elapsed),
            measured.requests,
            measured.writes,
            peak_kb / 1024,
            peak_kb * 1024 / u64::try_from(count).unwrap_or(u64::MAX),
        );
    }
}

/// 2: `diff` of the unchanged jobs while the one-offs' runs go on, then once they ended and were recorded.
fn unchanged(bench: &Bench, report: &mut String) {
    // The one-offs' Jobs have not ended (no controllers): their end is not recorded, so the Jobs are listed.
    diff_unchanged(bench, report, "the one-offs' runs not ended", "");
    // As the Job controller would: every run ends; the next apply records how (it writes only the inventory).
    tokio::runtime::Handle::current().block_on(succeed_jobs(&bench.cluster, "tool-benchtool"));
    let recorded = bench.ours(&["apply"]);
    assert_eq!(recorded.code, 0, "{}", recorded.stdout);
    let _ = writeln!(
        report,
        "   apply recording the {} one-offs' ends: {:.0} ms, {} requests ({} writes: the lock and the inventory)",
        JOBS / 3,
        ms(recorded.elapsed),
        recorded.requests,
        recorded.writes
    );
    diff_unchanged(
        bench,
        report,
        "the one-offs' runs ended and recorded",
        " (target: one per kind used + the inventory, <= 6)",
    );
}

/// `diff` of the unchanged jobs, reported with `state` and `target`.
fn diff_unchanged(bench: &Bench, report: &mut String, state: &str, target: &str) {
    let diff = bench.ours(&["diff"]);
    assert_eq!(diff.code, 0);
    let _ = writeln!(
        report,
        "2. diff of {JOBS} unchanged jobs, {state}: {:.0} ms, {} requests{target}",
        ms(diff.elapsed),
        diff.requests
    );
}

/// Ends every Job of `namespace` as succeeded, through its status as the Job controller would (the cluster runs
/// no controllers).
async fn succeed_jobs(cluster: &LocalCluster, namespace: &str) {
    let jobs: Api<Job> = Api::namespaced(cluster.client().expect("client"), namespace);
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .expect("a second is a valid rounding")
        .to_string();
    let condition = |type_: &str| serde_json::json!({"type": type_, "status": "True", "lastProbeTime": now, "lastTransitionTime": now});
    let status = serde_json::json!({"status": {
        "startTime": now,
        "completionTime": now,
        "succeeded": 1,
        "conditions": [condition("SuccessCriteriaMet"), condition("Complete")],
    }});
    for job in jobs.list(&ListParams::default()).await.expect("list Jobs") {
        let name = job.metadata.name.expect("a listed Job has a name");
        jobs.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("Job status");
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let client = cluster.client().expect("client");
    for name in ["tool-benchtool", "tool-kubectl", "tool-scaletool"] {
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("valid");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("namespace");
    }
    let directory = tempfile::tempdir().expect("temp dir");
    cluster
        .write_kubeconfig(&directory.path().join("kubeconfig"))
        .expect("kubeconfig");
    let bench = Bench { cluster, directory };
    let jobs = bench.directory.path().join("jobs.yaml");
    let mut report = String::new();

    // The rendered objects, for kubectl: the writes of the plan against the empty namespace.
    std::fs::write(&jobs, jobs_file(JOBS, "", 0)).expect("write");
    let plan =
        tokio::task::block_in_place(|| bench.ours(&["diff", "-o", "json", "--no-server-dry-run"]));
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).expect("plan JSON");
    let items: Vec<serde_json::Value> = plan["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .flat_map(|action| action["writes"].as_array().cloned().unwrap_or_default())
        .map(|write| {
            let mut manifest = write["manifest"].clone();
            manifest["metadata"]["namespace"] = serde_json::json!("tool-kubectl");
            manifest
        })
        .collect();
    let objects = items.len();
    let list = bench.directory.path().join("objects.json");
    std::fs::write(
        &list,
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .expect("write");

    tokio::task::block_in_place(|| {
        let created = bench.ours(&["apply"]);
        assert_eq!(created.code, 0, "{}", created.stdout);
        let _ = writeln!(
            report,
            "1. apply of {JOBS} new jobs ({objects} objects): {:.0} ms, {} requests ({} writes)",
            ms(created.elapsed),
            created.requests,
            created.writes
        );

        unchanged(&bench, &mut report);

        let noop = bench.ours(&["apply"]);
        assert_eq!(noop.code, 0);
        let first_kubectl = bench.kubectl(&list);
        assert_eq!(first_kubectl.code, 0, "kubectl apply failed");
        let kubectl = bench.kubectl(&list);
        let _ = writeln!(
            report,
            "3. no-op apply of {JOBS} jobs: {:.0} ms, {} requests, {} writes; kubectl apply -f of the {objects} objects (no-op): {:.0} ms, {} requests, {} writes -> {:.1}x faster (target >= 20x)",
            ms(noop.elapsed),
            noop.requests,
            noop.writes,
            ms(kubectl.elapsed),
            kubectl.requests,
            kubectl.writes,
            kubectl.elapsed.as_secs_f64() / noop.elapsed.as_secs_f64()
        );

        bench.cluster.set_latency(Duration::from_millis(5));
        std::fs::write(&jobs, jobs_file(JOBS, " --changed", CHANGED)).expect("write");
        let concurrent = bench.ours(&["apply"]);
        assert_eq!(concurrent.code, 0, "{}", concurrent.stdout);
        std::fs::write(&jobs, jobs_file(JOBS, " --changed-again", CHANGED)).expect("write");
        let sequential = bench.ours(&["apply", "--concurrency", "1"]);
        assert_eq!(sequential.code, 0, "{}", sequential.stdout);
        let _ = writeln!(
            report,
            "4. {CHANGED} changed jobs, 5 ms latency per request: apply {:.0} ms ({} requests), one request at a time {:.0} ms ({} requests) -> {:.1}x faster (target >= 5x)",
            ms(concurrent.elapsed),
            concurrent.requests,
            ms(sequential.elapsed),
            sequential.requests,
            sequential.elapsed.as_secs_f64() / concurrent.elapsed.as_secs_f64()
        );
        bench.cluster.set_latency(Duration::ZERO);
        scale(&bench, &mut report);
    });
    #[expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]
    {
        print!("{report}");
    }
}
