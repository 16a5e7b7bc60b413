//! Benchmark: `serve` against the local cluster, with the API requests the cluster counted, measured in one run:
//!
//! 1. the real upstream CLI's `load` of a 50-job file through `serve` (one `PATCH`/`POST` per job) vs
//!    `toolforge-jobs apply` of the same file (in another tool's namespace of the same cluster);
//! 2. a no-op `GET /jobs` for a tool with 300 jobs, the median of 20 (target: < 20 ms at the server).
//!
//! Run with `cargo bench --bench serve`; part 1 needs the upstream CLI (`$UPSTREAM_JOBS_CLI`, or the venv
//! `.ci/run` makes) and is skipped without it.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use toolforge_local_cluster::{LocalCluster, Options};

const TOKEN: &str = "bench-token";

/// `count` jobs: half scheduled, half continuous.
fn jobs_file(prefix: &str, count: usize) -> String {
    (0..count)
        .map(|index| {
            if index % 2 == 0 {
                format!(
                    "- name: {prefix}cron-{index}\n  command: ./report.sh {index}\n  image: bookworm\n  schedule: \"{} * * * *\"\n",
                    index % 60
                )
            } else {
                format!(
                    "- name: {prefix}bot-{index}\n  command: ./bot.py {index}\n  image: python3.11\n  continuous: true\n"
                )
            }
        })
        .collect()
}

fn upstream_cli() -> Option<PathBuf> {
    let path = std::env::var_os("UPSTREAM_JOBS_CLI").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/toolforge-jobs/upstream-cli-venv/bin/toolforge-jobs")
        },
        PathBuf::from,
    );
    path.exists().then_some(path)
}

/// `serve` with one token for `tool`, killed on drop.
struct Serve {
    child: Child,
    address: String,
}

impl Serve {
    fn start(kubeconfig: &Path, directory: &Path, tool: &str) -> Self {
        let tokens = directory.join("tokens");
        std::fs::write(&tokens, format!("{TOKEN} {tool}\n")).expect("token file");
        std::fs::set_permissions(&tokens, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .expect("private");
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&tokens)
            .arg("--home")
            .arg(directory)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("serve says where");
        let address = line
            .trim()
            .trim_start_matches("serving the Toolforge jobs API on http://")
            .to_owned();
        Serve { child, address }
    }

    /// One `GET` with the token, the time to the whole answer.
    fn get(&self, path: &str) -> (Duration, usize) {
        let started = Instant::now();
        let mut stream = TcpStream::connect(&self.address).expect("connects");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n",
            self.address
        )
        .expect("sends");
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).expect("reads");
        assert!(
            reply.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&reply)
        );
        (started.elapsed(), reply.len())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// 1: the upstream CLI's `load` through `serve` vs `apply`, each in a namespace of its own.
fn compare_load(cluster: &LocalCluster, kubeconfig: &Path, directory: &Path) -> String {
    let requests = |cluster: &LocalCluster| -> u64 { cluster.request_counts().values().sum() };
    let file = directory.join("jobs.yaml");
    std::fs::write(&file, jobs_file("", 50)).expect("write");
    match upstream_cli() {
        Some(cli) => {
            let serve = Serve::start(kubeconfig, directory, "viaserve");
            let home = directory.join("cli-home");
            std::fs::create_dir_all(&home).expect("home");
            let cli_kubeconfig = home.join("kubeconfig");
            std::fs::write(
                &cli_kubeconfig,
                format!(
                    "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: s\n  cluster:\n    server: http://{0}\n\
                     contexts:\n- name: c\n  context:\n    cluster: s\n    user: u\n    namespace: tool-viaserve\n\
                     users:\n- name: u\n  user:\n    token: {TOKEN}\n",
                    serve.address
                ),
            )
            .expect("kubeconfig");
            cluster.reset_request_counts();
            let started = Instant::now();
            let output = Command::new(&cli)
                .args(["load"])
                .arg(&file)
                .env_remove("REQUESTS_CA_BUNDLE")
                .env_remove("CURL_CA_BUNDLE")
                .env("HOME", &home)
                .env("KUBECONFIG", &cli_kubeconfig)
                .env(
                    "TOOL_TOOLFORGE_API_URL",
                    format!("http://{}", serve.address),
                )
                .output()
                .expect("the upstream CLI runs");
            let loaded = started.elapsed();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let load_requests = requests(cluster);

            cluster.reset_request_counts();
            let started = Instant::now();
            let output = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["--tool", "viaapply", "--no-color", "apply", "--yes", "-f"])
                .arg(&file)
                .output()
                .expect("apply runs");
            let applied = started.elapsed();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let apply_requests = requests(cluster);
            format!(
                "1. 50 jobs: upstream CLI `load` through serve {:.0} ms, {load_requests} API requests; \
                 `toolforge-jobs apply` {:.0} ms, {apply_requests} API requests -> apply {:.1}x faster",
                ms(loaded),
                ms(applied),
                loaded.as_secs_f64() / applied.as_secs_f64()
            )
        }
        None => "1. skipped: no upstream CLI (set $UPSTREAM_JOBS_CLI or run .ci/run)".to_owned(),
    }
}

/// 2: `GET /jobs` of a tool with 300 jobs.
fn list_300(cluster: &LocalCluster, kubeconfig: &Path, directory: &Path) -> String {
    let requests = |cluster: &LocalCluster| -> u64 { cluster.request_counts().values().sum() };
    let file = directory.join("jobs.yaml");
    std::fs::write(&file, jobs_file("", 300)).expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--tool", "many", "--no-color", "apply", "--yes", "-f"])
        .arg(&file)
        .output()
        .expect("apply runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let serve = Serve::start(kubeconfig, directory, "many");
    let path = "/jobs/v1/tool/many/jobs/?include_unset=True";
    let _ = serve.get(path);
    cluster.reset_request_counts();
    let mut times: Vec<Duration> = (0..20).map(|_| serve.get(path).0).collect();
    let per_request = requests(cluster) / 20;
    times.sort();
    let (_, bytes) = serve.get(path);
    format!(
        "2. GET /jobs of 300 jobs: median {:.1} ms (min {:.1}, max {:.1}), {bytes} bytes, {per_request} API requests each (target < 20 ms)",
        ms(times[10]),
        ms(times[0]),
        ms(times[19])
    )
}

#[tokio::main]
async fn main() {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let client = cluster.client().expect("client");
    for name in ["tool-viaserve", "tool-viaapply", "tool-many"] {
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("valid");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("namespace");
    }
    let directory = tempfile::tempdir().expect("temp dir");
    let kubeconfig = directory.path().join("kubeconfig");
    cluster.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let report = tokio::task::block_in_place(|| {
        [
            compare_load(&cluster, &kubeconfig, directory.path()),
            list_300(&cluster, &kubeconfig, directory.path()),
        ]
        .join("\n")
    });
    #[expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]
    {
        println!("{report}");
    }
}
