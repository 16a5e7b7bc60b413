//! Who can reach the local cluster: TLS only; no credentials → 401 (but `/version` and the health checks); a
//! tool's certificate is confined to its namespace with RBAC's 403 wording for every verb on every resource;
//! requests a browser could be made to send are refused; the state, credentials and kubeconfig files are the
//! owner's alone; and one state file is served by one cluster at a time.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use axum::http::{Method, Request, StatusCode};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use toolforge_local_cluster::{ClusterError, LocalCluster, Options, RESOURCES};

async fn cluster() -> LocalCluster {
    LocalCluster::start(Options::default())
        .await
        .expect("cluster starts")
}

/// A client that trusts the cluster's CA and presents nothing.
fn anonymous(cluster: &LocalCluster) -> kube::Client {
    let mut config = kube::Config::new(cluster.url().parse().expect("url"));
    let pem = cluster.ca_certificate_pem();
    let der = pem_der(pem);
    config.root_cert = Some(vec![der]);
    kube::Client::try_from(config).expect("client")
}

fn pem_der(pem: &str) -> Vec<u8> {
    use base64::Engine as _;
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("base64")
}

/// Sends a raw request; returns the status and the body as JSON (`null` when it is not JSON).
async fn send(client: &kube::Client, request: Request<Vec<u8>>) -> (StatusCode, Value) {
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("response");
    let status = response.status();
    let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 1 << 20)
        .await
        .expect("body");
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn request(method: Method, path: &str) -> axum::http::request::Builder {
    Request::builder().method(method).uri(path)
}

#[tokio::test]
async fn without_credentials_everything_but_version_and_health_is_401() {
    let cluster = cluster().await;
    let client = anonymous(&cluster);
    for path in ["/version", "/healthz", "/readyz", "/livez"] {
        let (status, _) = send(
            &client,
            request(Method::GET, path).body(vec![]).expect("req"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
    for (method, path) in [
        (Method::GET, "/api"),
        (Method::GET, "/api/v1/namespaces/default/pods"),
        (Method::POST, "/api/v1/namespaces/default/pods"),
        (Method::GET, "/openapi/v2"),
        (Method::DELETE, "/api/v1/namespaces/kube-public"),
    ] {
        let (status, body) = send(
            &client,
            request(method.clone(), path)
                .header("content-type", "application/json")
                .body(b"{}".to_vec())
                .expect("req"),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
        assert_eq!(body["kind"], "Status");
        assert_eq!(body["reason"], "Unauthorized");
        assert_eq!(body["message"], "Unauthorized");
        assert_eq!(body["code"], 401);
    }
    // A wrong token is no token.
    let (status, _) = send(
        &client,
        request(Method::GET, "/api/v1/pods")
            .header("authorization", "Bearer 0123")
            .body(vec![])
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = send(
        &client,
        request(Method::GET, "/api/v1/pods")
            .header("authorization", format!("Bearer {}", cluster.admin_token()))
            .body(vec![])
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "the owner's token works");
    // Plain HTTP is not served at all.
    let plain = kube::Client::try_from(kube::Config::new(
        format!("http://{}", cluster.address())
            .parse()
            .expect("url"),
    ))
    .expect("client");
    assert!(plain.apiserver_version().await.is_err());
}

#[tokio::test]
async fn a_tool_cannot_touch_another_tools_namespace_with_any_verb_on_any_resource() {
    let cluster = cluster().await;
    let a = cluster.tool_client("a").expect("tool client");
    let mut denied = 0;
    for resource in RESOURCES.iter().filter(|r| r.namespaced) {
        let base = if resource.group.is_empty() {
            format!(
                "/api/{}/namespaces/tool-b/{}",
                resource.version, resource.plural
            )
        } else {
            format!(
                "/apis/{}/{}/namespaces/tool-b/{}",
                resource.group, resource.version, resource.plural
            )
        };
        let qualified = if resource.group.is_empty() {
            resource.plural.to_owned()
        } else {
            format!("{}.{}", resource.plural, resource.group)
        };
        let cases = [
            (Method::GET, base.clone(), "list", false),
            (Method::GET, format!("{base}?watch=true"), "watch", false),
            (Method::POST, base.clone(), "create", false),
            (Method::DELETE, base.clone(), "deletecollection", false),
            (Method::GET, format!("{base}/x"), "get", true),
            (Method::PUT, format!("{base}/x"), "update", true),
            (Method::PATCH, format!("{base}/x"), "patch", true),
            (Method::DELETE, format!("{base}/x"), "delete", true),
        ];
        for (method, path, verb, named) in cases {
            let (status, body) = send(
                &a,
                request(method.clone(), &path)
                    .header("content-type", "application/merge-patch+json")
                    .body(b"{}".to_vec())
                    .expect("req"),
            )
            .await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {body}");
            let object = if named {
                format!("{qualified} \"x\"")
            } else {
                qualified.clone()
            };
            assert_eq!(
                body["message"],
                format!(
                    "{object} is forbidden: User \"a\" cannot {verb} resource \"{}\" in API group \"{}\" in the namespace \"tool-b\"",
                    resource.plural, resource.group
                ),
                "{method} {path}"
            );
            assert_eq!(body["reason"], "Forbidden");
            denied += 1;
        }
    }
    assert!(denied >= 8 * 10, "{denied} requests checked");
    // The same identity works in its own namespace, but cannot change the quota it is given.
    let jobs: Api<Job> = Api::namespaced(a.clone(), "tool-a");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "hello"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    }))
    .expect("job");
    // The namespace must exist first; the owner creates it, as maintain-kubeusers does on Toolforge.
    let owner = cluster.client().expect("owner");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(owner);
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "tool-a"}})).expect("ns"),
        )
        .await
        .expect("namespace created");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("a tool creates jobs in its namespace");
    let (status, body) = send(
        &a,
        request(Method::POST, "/api/v1/namespaces/tool-a/resourcequotas")
            .header("content-type", "application/json")
            .body(br#"{"metadata":{"name":"q"},"spec":{}}"#.to_vec())
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = send(
        &a,
        request(Method::GET, "/api/v1/namespaces")
            .body(vec![])
            .expect("req"),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["message"],
        "namespaces is forbidden: User \"a\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
}

#[tokio::test]
async fn requests_a_browser_could_send_are_refused() {
    let cluster = cluster().await;
    let owner = cluster.client().expect("owner");
    let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#;
    let post = || request(Method::POST, "/api/v1/namespaces/default/pods");
    for (content_type, status) in [
        (Some("text/plain"), StatusCode::UNSUPPORTED_MEDIA_TYPE),
        (
            Some("application/x-www-form-urlencoded"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            Some("multipart/form-data; boundary=x"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
    ] {
        let mut builder = post();
        if let Some(content_type) = content_type {
            builder = builder.header("content-type", content_type);
        }
        let (got, body) = send(&owner, builder.body(pod.to_vec()).expect("req")).await;
        assert_eq!(got, status, "{content_type:?}: {body}");
        assert_eq!(body["reason"], "UnsupportedMediaType");
    }
    // A page's fetch can send a body without Content-Type (read as JSON, as Kubernetes does), never without its
    // Origin.
    for content_type in [Some("application/json"), None] {
        let mut builder = post().header("origin", "https://evil.example");
        if let Some(content_type) = content_type {
            builder = builder.header("content-type", content_type);
        }
        let (got, body) = send(&owner, builder.body(pod.to_vec()).expect("req")).await;
        assert_eq!(got, StatusCode::FORBIDDEN, "{content_type:?}: {body}");
    }
    let (got, body) = send(
        &owner,
        request(Method::GET, "/api/v1/namespaces/default/pods")
            .header(
                "host",
                format!("rebound.example:{}", cluster.address().port()),
            )
            .body(vec![])
            .expect("req"),
    )
    .await;
    assert_eq!(got, StatusCode::FORBIDDEN, "{body}");
    // Nothing of the above was created.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(owner.clone(), "default");
    assert!(pods.get_opt("p").await.expect("get").is_none());
    let (got, _) = send(
        &owner,
        post()
            .header("content-type", "application/json")
            .body(pod.to_vec())
            .expect("req"),
    )
    .await;
    assert_eq!(
        got,
        StatusCode::CREATED,
        "the same request from a client is served"
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn the_state_and_credentials_are_private_and_one_cluster_serves_a_state_file() {
    let directory = tempfile::tempdir().expect("temp dir");
    let state = directory.path().join("state.json");
    let options = Options {
        state_file: Some(state.clone()),
        credentials_dir: Some(toolforge_local_cluster::credentials_directory(&state)),
        ..Options::default()
    };
    let cluster = LocalCluster::start(options.clone()).await.expect("starts");
    let kubeconfig = directory.path().join("kubeconfig");
    cluster.write_kubeconfig(&kubeconfig).expect("written");
    let second = LocalCluster::start(options.clone()).await;
    assert!(
        matches!(second, Err(ClusterError::AlreadyServing(_))),
        "{second:?}"
    );
    let token = cluster.admin_token().to_owned();
    cluster.shutdown().await.expect("shutdown");
    let credentials = directory.path().join("state.credentials");
    assert_eq!(mode(&credentials), 0o700);
    for file in [
        state.clone(),
        credentials.join("ca.pem"),
        credentials.join("admin.token"),
        kubeconfig,
        directory.path().join("state.json.lock"),
    ] {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    // After a restart the same CA and token are in use, so kubeconfigs written before keep working.
    let again = LocalCluster::start(options).await.expect("restarts");
    assert_eq!(again.admin_token(), token);
    again.shutdown().await.expect("shutdown");
}
