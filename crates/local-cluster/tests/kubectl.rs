//! Real kubectl against the local cluster: the default `kubectl` on PATH, and 1.27 and 1.33 from the gcloud SDK.
//! Each run uses a fresh `--cache-dir`, so discovery and OpenAPI are fetched from this server every time. A
//! missing kubectl fails the test: these tests are the proof that real clients accept the server.

#![expect(
    clippy::too_many_lines,
    reason = "the scenario reads top to bottom like a kubectl session"
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use toolforge_local_cluster::{
    Controllers, ImagePolicy, Kubelet, LocalCluster, Options, ProcessOptions,
};

const SDK: &str = "/usr/lib/google-cloud-sdk/bin";

struct Kubectl {
    binary: PathBuf,
    directory: tempfile::TempDir,
    kubeconfig: PathBuf,
    runs: AtomicUsize,
}

struct Output {
    success: bool,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    /// kubectl as the cluster's owner.
    fn new(binary: &str, cluster: &LocalCluster) -> Self {
        Self::with_kubeconfig(binary, &cluster.kubeconfig_yaml())
    }

    /// kubectl as `tool`, with the kubeconfig the cluster mints for it.
    fn for_tool(binary: &str, cluster: &LocalCluster, tool: &str) -> Self {
        let kubeconfig = cluster.tool_kubeconfig_yaml(tool).expect("tool kubeconfig");
        Self::with_kubeconfig(binary, &kubeconfig)
    }

    fn with_kubeconfig(binary: &str, kubeconfig_yaml: &str) -> Self {
        let binary = PathBuf::from(binary);
        let directory = tempfile::tempdir().expect("temp dir");
        let kubeconfig = directory.path().join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_yaml).expect("kubeconfig written");
        Kubectl {
            binary,
            directory,
            kubeconfig,
            runs: AtomicUsize::new(0),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let run = self.runs.fetch_add(1, Ordering::SeqCst);
        let cache = self.directory.path().join(format!("cache-{run}"));
        let mut command = Command::new(&self.binary);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&cache)
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    async fn run(&self, args: &[&str]) -> Output {
        let output = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {}: {e}; kubectl must be installed for these tests",
                    self.binary.display()
                )
            });
        Output {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(
            output.success,
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            output.stdout, output.stderr
        );
        output.stdout
    }

    fn file(&self, name: &str, content: &str) -> String {
        let path = self.directory.path().join(name);
        std::fs::write(&path, content).expect("manifest written");
        path.display().to_string()
    }
}

fn job_manifest(parallelism: u32, label: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hello\n  labels:\n    owner: {label}\nspec:\n  parallelism: {parallelism}\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [echo, hi]\n"
    )
}

async fn get_watch_sees_new_rows(kubectl: &Kubectl, configmaps: &Api<ConfigMap>) {
    let mut child = kubectl
        .command(&["get", "configmaps", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl.binary.display()));
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let header = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("header in time")
        .expect("read")
        .expect("a line");
    assert!(
        header.starts_with("NAME") && header.contains("DATA") && header.contains("AGE"),
        "{header}"
    );
    let watched: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "watched"}, "data": {"k": "v"}}))
            .expect("valid");
    configmaps
        .create(&PostParams::default(), &watched)
        .await
        .expect("created");
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("row in time")
            .expect("read")
            .expect("a line");
        if line.starts_with("watched") {
            assert!(
                line.split_whitespace().nth(1) == Some("1"),
                "DATA column: {line}"
            );
            break;
        }
    }
    child.kill().await.expect("killed");
}

async fn wait_for_delete(cluster: &LocalCluster, kubectl: &Kubectl, configmaps: &Api<ConfigMap>) {
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .expect("valid");
    configmaps
        .create(&PostParams::default(), &held)
        .await
        .expect("created");
    kubectl
        .ok(&["delete", "configmap", "held", "--wait=false"])
        .await;
    let waiting = kubectl
        .command(&["wait", "--for=delete", "configmap/held", "--timeout=30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output();
    let watches = cluster.request_count("watch", "configmaps");
    let release = async {
        // Release only once kubectl watches, so that it sees the deletion happen rather than find it done.
        let watching = async {
            while cluster.request_count("watch", "configmaps") == watches {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        // Bounded: if kubectl never watches, it times out and the assertions below say so.
        let _ = tokio::time::timeout(Duration::from_secs(30), watching).await;
        configmaps
            .patch(
                "held",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await
            .expect("finalizer removed");
    };
    let (output, ()) = tokio::join!(waiting, release);
    let output = output.expect("kubectl wait ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "wait failed: {stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("configmap/held condition met"), "{stdout}");
}

async fn scenario(binary: &str) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let kubectl = Kubectl::new(binary, &cluster);
    let client = cluster.client().expect("client");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);

    let manifest = kubectl.file("job.yaml", &job_manifest(1, "a"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", &manifest]).await.trim(),
        "job.batch/hello created"
    );
    assert_eq!(
        kubectl.ok(&["apply", "-f", &manifest]).await.trim(),
        "job.batch/hello unchanged"
    );
    let openapi =
        cluster.request_count("get", "/openapi/v3") + cluster.request_count("get", "/openapi/v2");
    assert!(
        openapi > 0,
        "apply ran with kubectl's default validation, which reads OpenAPI"
    );

    let table = kubectl.ok(&["get", "jobs"]).await;
    let header: Vec<&str> = table
        .lines()
        .next()
        .expect("header")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        "{table}"
    );
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|row| row.starts_with("hello")
                && row.contains("Running")
                && row.contains("0/1")),
        "{table}"
    );
    let wide = kubectl.ok(&["get", "job", "hello", "-o", "wide"]).await;
    assert!(
        wide.contains("CONTAINERS") && wide.contains("busybox"),
        "{wide}"
    );

    let changed = kubectl.file("job2.yaml", &job_manifest(2, "b"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", &changed]).await.trim(),
        "job.batch/hello configured"
    );
    let live = jobs.get("hello").await.expect("job");
    assert_eq!(live.spec.as_ref().and_then(|s| s.parallelism), Some(2));
    assert_eq!(
        live.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("owner"))
            .map(String::as_str),
        Some("b")
    );
    let stored = serde_json::to_string(&live).expect("serialises");
    assert!(
        !stored.contains("$setElementOrder") && !stored.contains("$patch"),
        "directives are never stored"
    );

    let immutable = kubectl.file(
        "job3.yaml",
        &job_manifest(2, "b").replace("echo, hi", "echo, bye"),
    );
    let refused = kubectl.run(&["apply", "-f", &immutable]).await;
    assert!(!refused.success);
    assert!(
        refused.stderr.contains("field is immutable"),
        "{}",
        refused.stderr
    );

    let configmap = kubectl.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n",
    );
    assert_eq!(
        kubectl
            .ok(&["apply", "--server-side", "-f", &configmap])
            .await
            .trim(),
        "configmap/ssa serverside-applied"
    );
    assert_eq!(
        configmaps.get("ssa").await.expect("cm").data,
        Some([("a".to_owned(), "1".to_owned())].into())
    );

    let yaml = kubectl.ok(&["get", "job", "hello", "-o", "yaml"]).await;
    assert!(
        yaml.contains("backoffLimit: 6") && yaml.contains("uid:"),
        "{yaml}"
    );
    let described = kubectl.ok(&["describe", "job", "hello"]).await;
    assert!(
        described.contains("Name:") && described.contains("hello") && described.contains("busybox"),
        "{described}"
    );

    // kubectl's generator commands send protobuf bodies.
    assert_eq!(
        kubectl.ok(&["create", "namespace", "scratch"]).await.trim(),
        "namespace/scratch created"
    );
    let created = kubectl
        .ok(&[
            "create",
            "configmap",
            "literal",
            "--from-literal=a=b",
            "-n",
            "scratch",
        ])
        .await;
    assert_eq!(created.trim(), "configmap/literal created");
    let literal: Api<ConfigMap> = Api::namespaced(cluster.client().expect("client"), "scratch");
    assert_eq!(
        literal.get("literal").await.expect("cm").data,
        Some([("a".to_owned(), "b".to_owned())].into())
    );
    let from_cronjob = kubectl
        .ok(&[
            "create",
            "cronjob",
            "nightly",
            "--image=busybox",
            "--schedule=0 3 * * *",
            "--",
            "echo",
            "hi",
        ])
        .await;
    assert_eq!(from_cronjob.trim(), "cronjob.batch/nightly created");
    assert_eq!(
        kubectl
            .ok(&["create", "job", "manual", "--from=cronjob/nightly"])
            .await
            .trim(),
        "job.batch/manual created"
    );
    let manual = jobs.get("manual").await.expect("job");
    let container = &manual
        .spec
        .as_ref()
        .expect("spec")
        .template
        .spec
        .as_ref()
        .expect("pod spec")
        .containers[0];
    assert_eq!(
        container.command,
        Some(vec!["echo".to_owned(), "hi".to_owned()])
    );
    assert_eq!(
        manual
            .metadata
            .owner_references
            .as_ref()
            .map(|o| o[0].kind.as_str()),
        Some("CronJob")
    );
    assert_eq!(
        kubectl
            .ok(&[
                "create",
                "deployment",
                "web",
                "--image=nginx",
                "--replicas=0"
            ])
            .await
            .trim(),
        "deployment.apps/web created"
    );
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::default_namespaced(cluster.client().expect("client"));
    assert_eq!(
        deployments
            .get("web")
            .await
            .expect("deployment")
            .spec
            .and_then(|s| s.replicas),
        Some(0),
        "explicit zeros survive"
    );

    get_watch_sees_new_rows(&kubectl, &configmaps).await;

    assert_eq!(
        kubectl
            .ok(&["delete", "job", "hello", "--cascade=foreground"])
            .await
            .trim(),
        "job.batch \"hello\" deleted"
    );
    assert!(jobs.get_opt("hello").await.expect("get").is_none());
    let missing = kubectl.run(&["delete", "job", "hello"]).await;
    assert!(!missing.success);
    assert!(
        missing
            .stderr
            .contains("Error from server (NotFound): jobs.batch \"hello\" not found"),
        "{}",
        missing.stderr
    );

    wait_for_delete(&cluster, &kubectl, &configmaps).await;

    assert_eq!(
        kubectl
            .ok(&["auth", "can-i", "create", "jobs"])
            .await
            .trim(),
        "yes"
    );
    let nodes = kubectl.ok(&["get", "nodes"]).await;
    let row: Vec<&str> = nodes
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        (row.first(), row.get(1), row.get(2)),
        (Some(&"local"), Some(&"Ready"), Some(&"control-plane")),
        "{nodes}"
    );
    let names = kubectl.ok(&["get", "all", "-o", "name"]).await;
    assert!(!names.contains("job.batch/hello"), "{names}");
    cluster.shutdown().await.expect("clean shutdown");
}

/// A tool's certificate through real kubectl: `auth whoami` names it, `auth can-i` answers from the policy, its
/// own namespace works, another tool's is forbidden in RBAC's words.
async fn tool_identity(binary: &str) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let owner = Kubectl::new(binary, &cluster);
    owner.ok(&["create", "namespace", "tool-a"]).await;
    let kubectl = Kubectl::for_tool(binary, &cluster, "a");
    let whoami = kubectl.ok(&["auth", "whoami"]).await;
    assert!(
        whoami.contains("Username") && whoami.contains(" a\n"),
        "{binary}: {whoami}"
    );
    assert!(
        whoami.contains("[toolforge system:authenticated]"),
        "{binary}: {whoami}"
    );
    for (args, answer) in [
        (&["auth", "can-i", "create", "jobs"][..], "yes"),
        (
            &["auth", "can-i", "delete", "deployments", "-n", "tool-a"],
            "yes",
        ),
        (&["auth", "can-i", "create", "jobs", "-n", "tool-b"], "no"),
        (&["auth", "can-i", "list", "nodes"], "no"),
        (&["auth", "can-i", "update", "resourcequotas"], "no"),
        (&["auth", "can-i", "get", "namespaces/tool-a"], "yes"),
        (&["auth", "can-i", "get", "namespaces/tool-b"], "no"),
        (&["auth", "can-i", "get", "/healthz"], "yes"),
    ] {
        let output = kubectl.run(args).await;
        assert_eq!(
            output.stdout.trim(),
            answer,
            "{binary} {args:?}: {}",
            output.stderr
        );
        assert_eq!(output.success, answer == "yes", "{binary} {args:?}");
    }
    let manifest = kubectl.file("job.yaml", &job_manifest(1, "a"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", &manifest]).await.trim(),
        "job.batch/hello created",
        "{binary}"
    );
    let denied = kubectl.run(&["get", "jobs", "-n", "tool-b"]).await;
    assert!(!denied.success);
    assert!(
        denied.stderr.contains(
            "Error from server (Forbidden): jobs.batch is forbidden: User \"a\" cannot list resource \"jobs\" in API group \"batch\" in the namespace \"tool-b\""
        ),
        "{binary}: {}",
        denied.stderr
    );
    let owner_whoami = owner.ok(&["auth", "whoami"]).await;
    assert!(
        owner_whoami.contains("system:masters"),
        "{binary}: {owner_whoami}"
    );
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_with_a_tool_certificate_is_confined_to_its_namespace() {
    tool_identity(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_with_a_tool_certificate_is_confined_to_its_namespace() {
    tool_identity(&sdk("1.33")).await;
}

/// What kubectl asks of the API layer beyond get/apply: trailing-slash paths, `--sort-by` (Tables with
/// `includeObject=Object`), `auth can-i --list` as the owner and as a tool, and the streaming subresources the
/// local cluster refuses with a Status naming itself.
async fn api_layer(binary: &str) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let owner = Kubectl::new(binary, &cluster);
    for (path, expected) in [
        ("/version/", "\"gitVersion\":\"v1.33.0\""),
        ("/api/", "\"kind\":\"APIVersions\""),
        ("/apis/", "\"kind\":\"APIGroupList\""),
        ("/api/v1/", "\"kind\":\"APIResourceList\""),
        ("/apis/batch/v1/", "\"groupVersion\":\"batch/v1\""),
        (
            "/api/v1/namespaces/default/configmaps/",
            "\"kind\":\"ConfigMapList\"",
        ),
    ] {
        let body = owner.ok(&["get", "--raw", path]).await;
        assert!(body.contains(expected), "{binary} {path}: {body}");
    }
    let client = cluster.client().expect("client");
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    for (name, order) in [("first", "2"), ("second", "1"), ("third", "3")] {
        let configmap: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"order": order}}))
                .expect("valid");
        configmaps
            .create(&PostParams::default(), &configmap)
            .await
            .expect("created");
    }
    let sorted = owner
        .ok(&["get", "configmaps", "--sort-by=.data.order", "-o", "name"])
        .await;
    let names: Vec<&str> = sorted
        .lines()
        .filter(|line| !line.contains("kube-root-ca"))
        .collect();
    assert_eq!(
        names,
        ["configmap/second", "configmap/first", "configmap/third"],
        "{binary}: {sorted}"
    );
    let table = owner
        .ok(&["get", "configmaps", "--sort-by=.data.order"])
        .await;
    assert!(table.starts_with("NAME"), "{binary}: {table}");
    let everything = owner.ok(&["auth", "can-i", "--list"]).await;
    assert!(
        everything
            .lines()
            .any(|l| l.split_whitespace().eq(["*.*", "[]", "[]", "[*]"])),
        "{binary}: {everything}"
    );
    owner.ok(&["create", "namespace", "tool-a"]).await;
    let tool = Kubectl::for_tool(binary, &cluster, "a");
    let own = tool.ok(&["auth", "can-i", "--list", "-n", "tool-a"]).await;
    let rule = |resource: &str| {
        own.lines()
            .find(|l| l.split_whitespace().next() == Some(resource))
            .unwrap_or_else(|| panic!("{binary}: no rule for {resource} in\n{own}"))
            .to_owned()
    };
    assert!(
        rule("jobs.batch")
            .ends_with("[get list watch create update patch delete deletecollection]"),
        "{binary}: {own}"
    );
    assert!(
        rule("resourcequotas").ends_with("[get list watch]"),
        "{binary}: {own}"
    );
    assert!(rule("namespaces").contains("[tool-a]"), "{binary}: {own}");
    let elsewhere = tool.ok(&["auth", "can-i", "--list", "-n", "tool-b"]).await;
    assert!(!elsewhere.contains("jobs.batch"), "{binary}: {elsewhere}");
    let pods: Api<Pod> = Api::default_namespaced(client);
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "60"]}]}}))
    .expect("valid");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("created");
    pods.patch_status(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .expect("running");
    for args in [
        &["exec", "p", "--", "true"][..],
        &["cp", "p:/etc/hostname", "copied"],
        &["attach", "p"],
        &["port-forward", "pod/p", "0:80"],
    ] {
        let refused = owner.run(args).await;
        assert!(!refused.success, "{binary} {args:?}");
        assert!(
            refused
                .stderr
                .contains("not supported by the toolforge local cluster"),
            "{binary} {args:?}: {}",
            refused.stderr
        );
    }
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_api_layer() {
    api_layer(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_api_layer() {
    api_layer(&sdk("1.33")).await;
}

/// `kubectl apply --prune -l` walks its default allowlist (`Secret`, `DaemonSet`, `StatefulSet`, `Ingress`, ...), so
/// every kind of it must be served; the stored-only kinds apply, print and prune like the others, and an
/// autoscaling/v1 HPA reads back through v2.
async fn prune(binary: &str) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let kubectl = Kubectl::new(binary, &cluster);
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, content: &str| {
        std::fs::write(dir.path().join(name), content).expect("manifest written");
    };
    write(
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  labels: {app: x}\nstringData:\n  key: value\n",
    );
    write(
        "daemonset.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\n  labels: {app: x}\nspec:\n  selector:\n    matchLabels: {name: agent}\n  template:\n    metadata:\n      labels: {name: agent}\n    spec:\n      containers:\n      - name: agent\n        image: busybox\n",
    );
    write(
        "hpa.yaml",
        "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: web\n  labels: {app: x}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 3\n  targetCPUUtilizationPercentage: 70\n",
    );
    write(
        "configmap.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  labels: {app: x}\n",
    );
    let path = dir.path().display().to_string();
    let applied = kubectl
        .ok(&["apply", "--prune", "-l", "app=x", "-f", &path])
        .await;
    for line in [
        "secret/token created",
        "daemonset.apps/agent created",
        "horizontalpodautoscaler.autoscaling/web created",
        "configmap/kept created",
    ] {
        assert!(applied.contains(line), "{binary}: {applied}");
    }
    let secrets = kubectl.ok(&["get", "secrets"]).await;
    let row: Vec<&str> = secrets
        .lines()
        .find(|l| l.starts_with("token"))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row.get(1..3),
        Some(&["Opaque", "1"][..]),
        "{binary}: {secrets}"
    );
    let target = kubectl
        .ok(&[
            "get",
            "hpa.v2.autoscaling",
            "web",
            "-o",
            "jsonpath={.spec.metrics[0].resource.target.averageUtilization} {.spec.minReplicas}",
        ])
        .await;
    assert_eq!(target, "70 1", "{binary}");
    let invalid = kubectl.file(
        "bad-daemonset.yaml",
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: bad\nspec:\n  selector:\n    matchLabels: {name: a}\n  template:\n    metadata:\n      labels: {name: b}\n    spec:\n      containers:\n      - name: c\n        image: busybox\n",
    );
    let refused = kubectl.run(&["apply", "-f", &invalid]).await;
    assert!(
        !refused.success
            && refused
                .stderr
                .contains("spec.template.metadata.labels: Invalid value"),
        "{binary}: {}",
        refused.stderr
    );
    for name in ["secret.yaml", "daemonset.yaml", "hpa.yaml"] {
        std::fs::remove_file(dir.path().join(name)).expect("removed");
    }
    let pruned = kubectl
        .ok(&["apply", "--prune", "-l", "app=x", "-f", &path])
        .await;
    for line in [
        "configmap/kept unchanged",
        "secret/token pruned",
        "daemonset.apps/agent pruned",
    ] {
        assert!(pruned.contains(line), "{binary}: {pruned}");
    }
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_prunes_with_its_default_allowlist() {
    prune(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_prunes_with_its_default_allowlist() {
    prune(&sdk("1.33")).await;
}

fn sdk(version: &str) -> String {
    Path::new(SDK)
        .join(format!("kubectl.{version}"))
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_kubectl_gets_applies_watches_deletes_and_waits() {
    scenario("kubectl").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_gets_applies_watches_deletes_and_waits() {
    scenario(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_gets_applies_watches_deletes_and_waits() {
    scenario(&sdk("1.33")).await;
}

/// The core of the scenario for the versions between the two ends, which differ in discovery (v2beta1 until
/// 1.29) and OpenAPI (v3 from 1.29).
async fn short_scenario(binary: String) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let kubectl = Kubectl::new(&binary, &cluster);
    let manifest = kubectl.file("job.yaml", &job_manifest(1, "a"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", &manifest]).await.trim(),
        "job.batch/hello created",
        "{binary}"
    );
    let table = kubectl.ok(&["get", "jobs"]).await;
    assert!(
        table.starts_with("NAME") && table.contains("COMPLETIONS"),
        "{binary}: {table}"
    );
    let explained = kubectl.ok(&["explain", "job.spec.backoffLimit"]).await;
    assert!(
        explained.contains("Specifies the number of retries before marking this job failed."),
        "{binary}: {explained}"
    );
    let changed = kubectl.file("job2.yaml", &job_manifest(2, "b"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", &changed]).await.trim(),
        "job.batch/hello configured",
        "{binary}"
    );
    let configmap = kubectl.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n",
    );
    assert_eq!(
        kubectl
            .ok(&["apply", "--server-side", "-f", &configmap])
            .await
            .trim(),
        "configmap/ssa serverside-applied"
    );
    assert_eq!(
        kubectl.ok(&["delete", "job", "hello"]).await.trim(),
        "job.batch \"hello\" deleted",
        "{binary}"
    );
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_28_to_1_32_apply_get_explain_and_delete() {
    let runs = ["1.28", "1.29", "1.30", "1.31", "1.32"].map(|version| short_scenario(sdk(version)));
    futures::future::join_all(runs).await;
}

/// kubectl against a cluster whose kubelet runs pods as real processes: rollouts, waiting, logs, events,
/// filtered watches, diff, and the errors kubectl prints for the server's Status bodies.
async fn workloads(binary: &str) {
    let cluster = LocalCluster::start(Options {
        controllers: Some(Controllers {
            job_backoff_base: Duration::from_millis(50),
            job_backoff_cap: Duration::from_millis(200),
            kubelet: Some(Kubelet::Process(ProcessOptions {
                restart_backoff: Duration::from_millis(100),
                // Clients written for any cluster run any image (busybox, nginx), not only Toolforge's.
                images: ImagePolicy::Any,
                ..ProcessOptions::default()
            })),
        }),
        ..Options::default()
    })
    .await
    .expect("cluster starts");
    let kubectl = Kubectl::new(binary, &cluster);
    let deployment = kubectl.file(
        "web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: main\n        image: busybox\n        command: [sleep, \"300\"]\n",
    );
    kubectl.ok(&["apply", "-f", &deployment]).await;
    let status = kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    assert!(
        status.contains("deployment \"web\" successfully rolled out"),
        "{binary}: {status}"
    );
    assert_eq!(
        kubectl
            .ok(&["set", "image", "deployment/web", "main=busybox:2"])
            .await
            .trim(),
        "deployment.apps/web image updated",
        "{binary}"
    );
    let status = kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=60s"])
        .await;
    assert!(
        status.contains("deployment \"web\" successfully rolled out"),
        "{binary}: {status}"
    );
    let history = kubectl.ok(&["rollout", "history", "deployment/web"]).await;
    let rows: Vec<Vec<&str>> = history
        .lines()
        .skip_while(|line| !line.starts_with("REVISION"))
        .map(|line| line.split_whitespace().collect())
        .filter(|row: &Vec<&str>| !row.is_empty())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["REVISION", "CHANGE-CAUSE"],
            vec!["1", "<none>"],
            vec!["2", "<none>"]
        ],
        "{binary}: {history}"
    );
    assert_eq!(
        kubectl
            .ok(&["scale", "deployment/web", "--replicas=1"])
            .await
            .trim(),
        "deployment.apps/web scaled",
        "{binary}"
    );

    let job = kubectl.file(
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: counted\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: main\n        image: busybox\n        command: [sh, -c, \"echo one; sleep 1; echo two; sleep 1; echo three\"]\n",
    );
    kubectl.ok(&["apply", "-f", &job]).await;
    let followed = kubectl
        .ok(&["logs", "-f", "job/counted", "--pod-running-timeout=30s"])
        .await;
    assert_eq!(followed, "one\ntwo\nthree\n", "{binary}");
    let waited = kubectl
        .ok(&[
            "wait",
            "--for=condition=complete",
            "job/counted",
            "--timeout=60s",
        ])
        .await;
    assert_eq!(waited.trim(), "job.batch/counted condition met", "{binary}");
    assert_eq!(
        kubectl.ok(&["logs", "job/counted", "--tail=1"]).await,
        "three\n",
        "{binary}"
    );
    let events = kubectl.ok(&["events", "--for", "job/counted"]).await;
    assert!(
        events.starts_with("LAST SEEN")
            && events.contains("SuccessfulCreate")
            && events.contains("Completed"),
        "{binary}: {events}"
    );

    get_watch_filters_by_label(&cluster, &kubectl).await;

    let configmap = kubectl.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: diffed\ndata:\n  a: \"1\"\n",
    );
    kubectl.ok(&["apply", "-f", &configmap]).await;
    let same = kubectl.run(&["diff", "-f", &configmap]).await;
    assert!(
        same.success && same.stdout.is_empty(),
        "{binary}: {} {}",
        same.stdout,
        same.stderr
    );
    let changed = kubectl.file(
        "cm2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: diffed\ndata:\n  a: \"2\"\n",
    );
    let different = kubectl.run(&["diff", "-f", &changed]).await;
    assert!(
        !different.success
            && different.stdout.contains("-  a: \"1\"")
            && different.stdout.contains("+  a: \"2\""),
        "{binary}: {} {}",
        different.stdout,
        different.stderr
    );

    let missing = kubectl.run(&["get", "job", "nope"]).await;
    assert_eq!(
        missing.stderr.trim(),
        "Error from server (NotFound): jobs.batch \"nope\" not found",
        "{binary}"
    );
    let invalid = kubectl.file(
        "bad.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: bad\nspec:\n  template:\n    spec:\n      containers:\n      - name: main\n        image: busybox\n",
    );
    let refused = kubectl.run(&["create", "-f", &invalid]).await;
    assert!(
        refused.stderr.contains(
            "The Job \"bad\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
        ),
        "{binary}: {}",
        refused.stderr
    );
    let unknown = kubectl.run(&["get", "widgets"]).await;
    assert!(
        unknown
            .stderr
            .contains("error: the server doesn't have a resource type \"widgets\""),
        "{binary}: {}",
        unknown.stderr
    );
    cluster.shutdown().await.expect("clean shutdown");
}

/// `get -w -l` prints rows only for objects the selector matches.
async fn get_watch_filters_by_label(cluster: &LocalCluster, kubectl: &Kubectl) {
    let watches = cluster.request_count("watch", "configmaps");
    let mut child = kubectl
        .command(&["get", "configmaps", "-w", "-l", "watched=yes", "-o", "name"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl.binary.display()));
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    // Change things only once kubectl watches, so that its rows come from the watch rather than from its list.
    let watching = async {
        while cluster.request_count("watch", "configmaps") == watches {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), watching)
        .await
        .expect("kubectl watches within 30 s");
    for (name, watched) in [("ignored", "no"), ("seen", "yes")] {
        kubectl
            .ok(&["create", "configmap", name, "--from-literal=k=v"])
            .await;
        kubectl
            .ok(&["label", "configmap", name, &format!("watched={watched}")])
            .await;
    }
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("a row in time")
        .expect("read")
        .expect("a line");
    assert_eq!(line, "configmap/seen");
    child.kill().await.expect("killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_rolls_out_waits_follows_logs_diffs_and_reports_errors() {
    workloads(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_rolls_out_waits_follows_logs_diffs_and_reports_errors() {
    workloads(&sdk("1.33")).await;
}

/// `kubectl diff` of the very file `apply --server-side` applied shows nothing: its dry-run patch carries
/// `metadata.annotations: {}`, which Kubernetes drops when it stores the object (Go's `omitempty`).
async fn diff_after_server_side_apply(binary: &str) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let kubectl = Kubectl::new(binary, &cluster);
    let configmap = kubectl.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: diffed\ndata:\n  a: \"1\"\n",
    );
    kubectl
        .ok(&["apply", "--server-side", "-f", &configmap])
        .await;
    let same = kubectl.run(&["diff", "-f", &configmap]).await;
    assert!(
        same.success && same.stdout.is_empty(),
        "{binary}: {} {}",
        same.stdout,
        same.stderr
    );
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_diff_after_server_side_apply_shows_nothing() {
    diff_after_server_side_apply(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_diff_after_server_side_apply_shows_nothing() {
    diff_after_server_side_apply(&sdk("1.33")).await;
}

/// Server-side apply by two field managers: the conflict kubectl reports, shared ownership, `--force-conflicts`,
/// and managedFields, which kubectl shows only with `--show-managed-fields`.
async fn field_managers(binary: &str) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = |replicas: u32| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  replicas: \"{replicas}\"\n"
        )
    };
    let alice = kubectl.file("alice.yaml", &(manifest(1) + "  colour: blue\n"));
    assert_eq!(
        kubectl
            .ok(&[
                "apply",
                "--server-side",
                "--field-manager=alice",
                "-f",
                &alice
            ])
            .await
            .trim(),
        "configmap/settings serverside-applied",
        "{binary}"
    );
    let bob = kubectl.file("bob.yaml", &manifest(3));
    let refused = kubectl
        .run(&["apply", "--server-side", "--field-manager=bob", "-f", &bob])
        .await;
    assert!(!refused.success, "{binary}: {}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains(r#"Apply failed with 1 conflict: conflict with "alice": .data.replicas"#)
            && refused.stderr.contains("--force-conflicts"),
        "{binary}: {}",
        refused.stderr
    );
    let same = kubectl.file("same.yaml", &manifest(1));
    kubectl
        .ok(&["apply", "--server-side", "--field-manager=bob", "-f", &same])
        .await;
    kubectl
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=bob",
            "--force-conflicts",
            "-f",
            &bob,
        ])
        .await;
    let replicas = kubectl
        .ok(&[
            "get",
            "configmap",
            "settings",
            "-o",
            "jsonpath={.data.replicas}",
        ])
        .await;
    assert_eq!(replicas, "3", "{binary}");

    let plain = kubectl
        .ok(&["get", "configmap", "settings", "-o", "yaml"])
        .await;
    assert!(!plain.contains("managedFields"), "{binary}: {plain}");
    let shown = kubectl
        .ok(&[
            "get",
            "configmap",
            "settings",
            "-o",
            "yaml",
            "--show-managed-fields",
        ])
        .await;
    for expected in [
        "managedFields:",
        "manager: alice",
        "manager: bob",
        "operation: Apply",
        "fieldsType: FieldsV1",
        "f:colour: {}",
        "f:replicas: {}",
    ] {
        assert!(shown.contains(expected), "{binary}: {expected} in {shown}");
    }
    let alice_entry = shown
        .split("- apiVersion: v1")
        .find(|entry| entry.contains("manager: alice"))
        .expect("alice's entry");
    assert!(
        !alice_entry.contains("f:replicas"),
        "{binary}: bob took the field: {alice_entry}"
    );

    // kubectl's own writes are Update entries of the manager it names.
    kubectl
        .ok(&["label", "configmap", "settings", "team=a"])
        .await;
    let labelled = kubectl
        .ok(&[
            "get",
            "configmap",
            "settings",
            "-o",
            "yaml",
            "--show-managed-fields",
        ])
        .await;
    assert!(
        labelled.contains("manager: kubectl-label") && labelled.contains("operation: Update"),
        "{binary}: {labelled}"
    );
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_server_side_apply_reports_conflicts_and_shows_managed_fields() {
    field_managers(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_server_side_apply_reports_conflicts_and_shows_managed_fields() {
    field_managers(&sdk("1.33")).await;
}

/// `kubectl explain` (1.27 on) reads the kinds' schemas from the OpenAPI v3 group-version documents and prints
/// Kubernetes' own field descriptions, nested types and required fields.
async fn explain(binary: &str) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let kubectl = Kubectl::new(binary, &cluster);
    for (args, expected) in [
        (
            &["explain", "job.spec"][..],
            &[
                "GROUP:      batch",
                "KIND:       Job",
                "VERSION:    v1",
                "FIELD: spec <JobSpec>",
                "JobSpec describes how the job execution will look like.",
                "backoffLimit\t<integer>",
                "Specifies the number of retries before marking this job failed.",
                "template\t<PodTemplateSpec> -required-",
            ][..],
        ),
        (
            &[
                "explain",
                "cronjob.spec.jobTemplate.spec.template.spec.containers",
            ],
            &[
                "KIND:       CronJob",
                "FIELD: containers <[]Container>",
                "List of containers belonging to the pod.",
                "name\t<string> -required-",
                "resources\t<ResourceRequirements>",
                "Compute Resources required by this container.",
            ],
        ),
        (
            &["explain", "deployment", "--recursive"],
            &[
                "GROUP:      apps",
                "KIND:       Deployment",
                "VERSION:    v1",
                "Deployment enables declarative updates for Pods and ReplicaSets.",
                "    replicas\t<integer>",
                "        maxSurge\t<IntOrString>",
                "        containers\t<[]Container> -required-",
            ],
        ),
        (
            &["explain", "pods.spec.containers.resources"],
            &[
                "KIND:       Pod",
                "VERSION:    v1",
                "FIELD: resources <ResourceRequirements>",
                "limits\t<map[string]Quantity>",
                "Limits describes the maximum amount of compute resources allowed.",
            ],
        ),
        (
            &["explain", "configmap"],
            &[
                "KIND:       ConfigMap",
                "VERSION:    v1",
                "ConfigMap holds configuration data for pods to consume.",
                "data\t<map[string]string>",
                "immutable\t<boolean>",
            ],
        ),
    ] {
        let output = kubectl.ok(args).await;
        for line in expected {
            assert!(
                output.contains(line),
                "{binary} {args:?}: no {line:?} in\n{output}"
            );
        }
    }
    // The index names the document by its hash and the document fetched so is immutable, so a kubectl with a
    // warm cache directory reads it from there.
    let cache = kubectl.directory.path().join("shared-cache");
    let cache = cache.to_str().expect("UTF-8 path");
    let explain = ["explain", "job.spec.backoffLimit", "--cache-dir", cache];
    let fetched = || cluster.request_count("get", "/openapi/v3/apis/batch/v1");
    let cold = kubectl.ok(&explain).await;
    assert!(cold.contains("FIELD: backoffLimit <integer>"), "{cold}");
    let cold_fetches = fetched();
    assert!(
        cold_fetches > 0,
        "{binary} explained without the batch/v1 document"
    );
    let warm = kubectl.ok(&explain).await;
    assert_eq!(warm, cold);
    assert_eq!(
        fetched(),
        cold_fetches,
        "{binary} fetched the hashed document again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_27_explains_built_in_kinds_with_their_descriptions() {
    explain(&sdk("1.27")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_1_33_explains_built_in_kinds_with_their_descriptions() {
    explain(&sdk("1.33")).await;
}
