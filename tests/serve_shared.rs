//! `serve` is stateless and shares a tool with the command line: two `serve` processes against one cluster
//! answer alike and never both create a job, and a one-off a jobs file ran through `apply` is not run a second
//! time through the API. Raw HTTP requests; no upstream CLI needed.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;
#[path = "support/upstream_cli.rs"]
mod upstream;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, ListParams};
use support::{NAMESPACE, eventually};
use toolforge_local_cluster::{ContainerOutcome, Script};
use upstream::{Served, Server, TOKEN, raw_request};

const JOBS: &str = "/jobs/v1/tool/mytool/jobs/";

/// `migrate` succeeds at once; everything else runs until deleted; every container prints two lines.
fn script() -> Script {
    Script::new(ContainerOutcome::RunForever)
        .label(
            "app.kubernetes.io/name",
            "migrate",
            ContainerOutcome::Exit {
                code: 0,
                after: Duration::from_millis(20),
            },
        )
        .output("", "first line\nsecond line\n")
}

async fn request(server: &Server, method: &str, path: &str, body: &str) -> upstream::Reply {
    let bearer = format!("Bearer {TOKEN}");
    let mut headers = vec![("Authorization", bearer.as_str())];
    if !body.is_empty() {
        headers.push(("Content-Type", "application/json"));
    }
    raw_request(server.address(), method, path, &headers, body.as_bytes()).await
}

/// Another `serve` in front of the same cluster, with the same tokens and the tools' home `home`.
async fn another_server(served: &Served, home: &std::path::Path) -> Server {
    let args = vec![
        "--token-file".into(),
        served.files.path().join("tokens").into_os_string(),
        "--home".into(),
        home.into(),
    ];
    Server::start(&served.cluster.directory.path().join("kubeconfig"), args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_answer_alike_and_never_both_create_a_job() {
    let served = Served::with_tokens(script()).await;
    let (a, b) = (
        &served.server,
        &another_server(&served, &served.tools_home()).await,
    );
    let web = r#"{"name":"web","imagename":"python3.11","cmd":"python3 -m http.server 8000","job_type":"continuous","port":"8000"}"#;

    // The same PATCH through both at once: one creates, the other finds it (or waits for the lock, then finds it).
    let (first, second) = tokio::join!(
        request(a, "PATCH", JOBS, web),
        request(b, "PATCH", JOBS, web)
    );
    let infos: Vec<String> = [&first, &second]
        .iter()
        .map(|reply| {
            assert_eq!(reply.status, 200, "{}", reply.text());
            reply.json()["messages"]["info"][0]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut sorted = infos.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "Job web created in storage and runtime",
            "Job web is already up to date"
        ],
        "{infos:?}"
    );
    let deployments: Api<Deployment> = Api::namespaced(served.cluster.client.clone(), NAMESPACE);
    assert_eq!(
        deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    // What one created, the other lists and shows the same.
    let listed_a = request(a, "GET", JOBS, "").await.json();
    let listed_b = request(b, "GET", JOBS, "").await.json();
    let names = |list: &serde_json::Value| -> Vec<String> {
        list["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|job| job["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&listed_a), ["web"]);
    assert_eq!(names(&listed_a), names(&listed_b));
    let shown = request(b, "GET", &format!("{JOBS}web"), "").await.json();
    assert_eq!(shown["job"]["port"], 8000);
    assert_eq!(shown["job"]["job_type"], "continuous");

    // Deleted through one, gone for the other.
    let deleted = request(b, "DELETE", "/jobs/v1/tool/mytool/jobs/web", "").await;
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    let gone = request(a, "GET", "/jobs/v1/tool/mytool/jobs/web", "").await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json()["error"][0], "Job 'web' does not exist");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_a_jobs_file_ran_is_not_run_again_through_the_api() {
    let served = Served::with_tokens(script()).await;
    let cluster = &served.cluster;
    // On the local cluster the tool's home is the jobs file's directory for `apply`: the same for the server.
    let api = another_server(&served, cluster.directory.path()).await;
    cluster.write_jobs("- name: migrate\n  command: ./migrate.sh\n  image: bookworm\n");
    let applied = cluster.run(&["apply", "--yes", "--wait"]).await;
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let uid = jobs.get("migrate").await.unwrap().metadata.uid;

    // `toolforge jobs load jobs.yaml` through the server POSTs the one-off: it ran, so nothing runs.
    let body =
        r#"{"name":"migrate","imagename":"bookworm","cmd":"./migrate.sh","job_type":"one-off"}"#;
    let posted = request(&api, "POST", JOBS, body).await;
    assert_eq!(posted.status, 201, "{}", posted.text());
    let info = posted.json()["messages"]["info"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(info.contains("ran already with this definition"), "{info}");
    assert_eq!(jobs.get("migrate").await.unwrap().metadata.uid, uid);

    // Another definition of the file's one-off is the file's business: refused, nothing written.
    let changed = r#"{"name":"migrate","imagename":"bookworm","cmd":"./migrate.sh --again","job_type":"one-off"}"#;
    let refused = request(&api, "POST", JOBS, changed).await;
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(
        refused.json()["error"][0]
            .as_str()
            .unwrap()
            .contains("is defined in a jobs file"),
        "{}",
        refused.text()
    );
    assert_eq!(jobs.get("migrate").await.unwrap().metadata.uid, uid);

    // And `apply` after the server's visits still has nothing to do.
    let again = cluster.run(&["diff"]).await;
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    eventually(
        Duration::from_secs(5),
        "the Job stays the one apply made",
        || async { jobs.get("migrate").await.unwrap().metadata.uid == uid },
    )
    .await;
}

/// `serve --trust-header` only where a proxy on this machine is the only caller: a public address is refused
/// at start; on a unix socket the header names the tool, and without it the answer is upstream's 403. SIGTERM
/// stops it with exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trusted_header_is_only_served_on_loopback_or_a_unix_socket() {
    let served = Served::with_tokens(script()).await;
    let kubeconfig = served.cluster.directory.path().join("kubeconfig");
    let serve = |listen: String| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"));
        command
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--no-color", "serve", "--trust-header", "--listen", &listen])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        command
    };
    let refused = tokio::task::block_in_place(|| serve("0.0.0.0:0".to_owned()).output().unwrap());
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("listen on a loopback address or a unix socket"),
        "{stderr}"
    );

    let socket = served.files.path().join("serve.sock");
    let mut child = serve(format!("unix:{}", socket.display())).spawn().unwrap();
    eventually(Duration::from_secs(10), "the socket is there", || async {
        socket.exists()
    })
    .await;
    // Whoever can connect names any tool: only the server's user may.
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let ask = |headers: &'static str| {
        let socket = socket.clone();
        async move {
            use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
            let mut stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
            let request = format!(
                "GET /v1/tool/mytool/jobs/ HTTP/1.1\r\nHost: local\r\nConnection: close\r\n{headers}\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut reply = String::new();
            stream.read_to_string(&mut reply).await.unwrap();
            reply
        }
    };
    let listed = ask("X-Toolforge-Tool: mytool\r\n").await;
    assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
    assert!(listed.contains(r#"{"jobs":[]"#), "{listed}");
    let anonymous = ask("").await;
    assert!(anonymous.starts_with("HTTP/1.1 403"), "{anonymous}");
    assert!(
        anonymous.contains(r#""error":["missing 'x-toolforge-tool' header"]"#),
        "{anonymous}"
    );
    let other = ask("X-Toolforge-Tool: other\r\n").await;
    assert!(other.starts_with("HTTP/1.1 403"), "{other}");

    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::task::block_in_place(|| child.wait().unwrap());
    assert_eq!(status.code(), Some(0));
}

/// The jobs API's own logs route: the pods' lines as JSON lines, `lines=1` the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_api_logs_route_gives_json_lines() {
    let served = Served::with_tokens(script()).await;
    let talker = r#"{"name":"talker","imagename":"python3.11","cmd":"./talk.sh","job_type":"continuous","filelog":false}"#;
    let created = request(&served.server, "PATCH", JOBS, talker).await;
    assert_eq!(created.status, 200, "{}", created.text());
    let path = "/jobs/v1/tool/mytool/jobs/talker/logs";
    eventually(
        Duration::from_secs(10),
        "the pod printed both lines",
        || async {
            let reply = request(&served.server, "GET", path, "").await;
            reply.status == 200 && reply.text().lines().count() == 2
        },
    )
    .await;
    let reply = request(&served.server, "GET", path, "").await;
    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
    let messages: Vec<String> = reply
        .text()
        .lines()
        .map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                entry["pod"].as_str().unwrap().starts_with("talker-"),
                "{entry}"
            );
            entry["message"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(messages, ["first line", "second line"]);
    let last = request(&served.server, "GET", &format!("{path}?lines=1"), "").await;
    assert_eq!(last.text().lines().count(), 1, "{}", last.text());
    assert!(last.text().contains("second line"), "{}", last.text());
    let missing = request(
        &served.server,
        "GET",
        "/jobs/v1/tool/mytool/jobs/nope/logs",
        "",
    )
    .await;
    assert_eq!(missing.status, 404);
}

/// Upstream's stored records of `kind` (`ContinuousJob`, `ScheduledJob`) in the tool's namespace.
fn records(client: &kube::Client, kind: &str, plural: &str) -> Api<kube::api::DynamicObject> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("jobs-api.toolforge.org", "v1", kind),
        plural,
    );
    Api::namespaced_with(client.clone(), NAMESPACE, &resource)
}

/// The API keeps upstream's records as upstream's jobs-api does, and takes turns with `apply` on one namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_stores_upstreams_records_and_takes_turns_with_apply() {
    let served = Served::with_tokens(script()).await;
    let cluster = &served.cluster;
    let api = another_server(&served, cluster.directory.path()).await;
    let continuous = records(&cluster.client, "ContinuousJob", "continuous-jobs");
    let scheduled = records(&cluster.client, "ScheduledJob", "scheduled-jobs");

    let web = r#"{"name":"web","imagename":"python3.11","cmd":"python3 -m http.server 8000","job_type":"continuous","port":"8000","memory":"1Gi"}"#;
    let posted = request(&api, "POST", JOBS, web).await;
    assert_eq!(posted.status, 201, "{}", posted.text());
    let stored = continuous.get("web").await.unwrap();
    assert_eq!(
        stored.data["spec"],
        serde_json::json!({"job_name": "web", "tool_name": "mytool", "job_type": "continuous",
            "cmd": "python3 -m http.server 8000", "image": {"short_name": "python3.11"}, "memory": "1.0Gi",
            "continuous": true, "port": 8000}),
        "upstream's sparse model of what the request set"
    );

    // A record lost by hand comes back with a PATCH that finds the job up to date.
    continuous
        .delete("web", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    let patched = request(&api, "PATCH", JOBS, web).await;
    assert_eq!(patched.status, 200, "{}", patched.text());
    assert_eq!(
        patched.json()["messages"]["info"][0],
        "Job web is already up to date"
    );
    assert!(continuous.get_opt("web").await.unwrap().is_some());

    // A file's scheduled job, applied beside it: both listed, each with its record.
    cluster.write_jobs("- {name: nightly, command: ./n.sh, image: bookworm, schedule: '@daily'}\n");
    let applied = cluster.run(&["apply"]).await;
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert_eq!(
        scheduled.get("nightly").await.unwrap().data["spec"]["schedule"],
        "@daily"
    );
    let listed = request(&api, "GET", JOBS, "").await.json();
    let mut names: Vec<&str> = listed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["nightly", "web"]);

    // Deleted through the API: the workload and its record go; the file's job keeps its own.
    let deleted = request(&api, "DELETE", &format!("{JOBS}web"), "").await;
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert!(continuous.get_opt("web").await.unwrap().is_none());
    assert!(scheduled.get_opt("nightly").await.unwrap().is_some());
    let again = cluster.run(&["diff"]).await;
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
}
