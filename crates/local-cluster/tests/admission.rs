//! LimitRange and ResourceQuota through kube-rs, as a tool's namespace on Toolforge has them: defaults filled in,
//! pods outside the limits and creates over quota refused with the 403 bodies of Kubernetes 1.33, and quota
//! usage kept in `status.used`.

mod support;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{LimitRange, Pod, ResourceQuota};
use kube::api::{Api, DeleteParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolforge_local_cluster::{LocalCluster, Options};

use support::Kubectl;

async fn start() -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

fn typed<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("valid object")
}

/// The container fixture of upstream Toolforge tests: min 50m / 100Mi, max 1 / 4Gi, default 500m / 512Mi.
fn tool_limits() -> LimitRange {
    typed(
        json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "tool-limits"},
        "spec": {"limits": [{"type": "Container", "min": {"cpu": "50m", "memory": "100Mi"},
            "max": {"cpu": "1", "memory": "4Gi"}, "default": {"cpu": "500m", "memory": "0.5Gi"}}]}}),
    )
}

fn pod(name: &str, resources: &Value) -> Pod {
    typed(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"restartPolicy": "Never",
            "containers": [{"name": "job", "image": "busybox", "resources": resources}]}}),
    )
}

fn job(name: &str, resources: &Value) -> Job {
    typed(
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "job", "image": "busybox", "resources": resources}]}}}}),
    )
}

fn refusal(error: kube::Error) -> (u16, String, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.reason, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn forbidden(message: &str) -> (u16, String, String) {
    (403, "Forbidden".to_owned(), message.to_owned())
}

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        field_manager: None,
    }
}

#[tokio::test]
async fn a_limit_range_defaults_container_resources_and_refuses_pods_outside_it() {
    let (_cluster, client) = start().await;
    let ranges: Api<LimitRange> = Api::default_namespaced(client.clone());
    let range = ranges
        .create(&PostParams::default(), &tool_limits())
        .await
        .expect("created");
    let item = serde_json::to_value(&range.spec.expect("spec").limits[0]).expect("json");
    assert_eq!(item["default"], json!({"cpu": "500m", "memory": "512Mi"}));
    assert_eq!(
        item["defaultRequest"], item["default"],
        "the default request defaults to the default limit"
    );

    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let created = pods
        .create(&PostParams::default(), &pod("bare", &json!({})))
        .await
        .expect("admitted");
    let resources =
        serde_json::to_value(&created.spec.expect("spec").containers[0].resources).expect("json");
    assert_eq!(
        resources,
        json!({"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}})
    );
    assert_eq!(
        created
            .metadata
            .annotations
            .expect("annotated")
            .get("kubernetes.io/limit-ranger")
            .map(String::as_str),
        Some(
            "LimitRanger plugin set: cpu, memory request for container job; cpu, memory limit for container job"
        )
    );
    assert_eq!(
        created.status.and_then(|s| s.qos_class).as_deref(),
        Some("Guaranteed")
    );

    let too_big = pods
        .create(
            &PostParams::default(),
            &pod("x", &json!({"limits": {"cpu": "2"}})),
        )
        .await
        .expect_err("over the maximum");
    assert_eq!(
        refusal(too_big),
        forbidden(r#"pods "x" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#)
    );
    let too_small = pods
        .create(
            &dry_run(),
            &pod("y", &json!({"requests": {"memory": "50Mi"}})),
        )
        .await
        .expect_err("under the minimum, also in a dry run");
    assert_eq!(
        refusal(too_small),
        forbidden(
            r#"pods "y" is forbidden: minimum memory usage per Container is 100Mi, but request is 50Mi"#
        )
    );

    let jobs: Api<Job> = Api::default_namespaced(client);
    jobs.create(
        &PostParams::default(),
        &job("big", &json!({"limits": {"cpu": "2"}})),
    )
    .await
    .expect("LimitRanger checks pods, not templates");
}

#[tokio::test]
async fn a_quota_counts_usage_and_refuses_creates_beyond_it() {
    let (cluster, client) = start().await;
    let quotas: Api<ResourceQuota> = Api::default_namespaced(client.clone());
    let quota: ResourceQuota = typed(json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "tool-q"}, "spec": {"hard": {"count/jobs.batch": "1", "pods": "3",
            "limits.cpu": "4", "limits.memory": "8Gi", "requests.cpu": "2", "requests.memory": "4Gi"}}}));
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("created");
    let used = async || {
        let quota = quotas.get("tool-q").await.expect("quota");
        serde_json::to_value(quota.status.expect("status").used).expect("json")
    };
    assert_eq!(
        used().await,
        json!({"count/jobs.batch": "0", "pods": "0", "limits.cpu": "0", "limits.memory": "0",
            "requests.cpu": "0", "requests.memory": "0"})
    );

    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let bare = pods
        .create(&PostParams::default(), &pod("bare", &json!({})))
        .await
        .expect_err("no resources under a compute quota");
    assert_eq!(
        refusal(bare),
        forbidden(
            r#"pods "bare" is forbidden: failed quota: tool-q: must specify limits.cpu for: job; limits.memory for: job; requests.cpu for: job; requests.memory for: job"#
        )
    );
    let small = json!({"limits": {"cpu": "1500m", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}});
    for name in ["a", "b"] {
        pods.create(&PostParams::default(), &pod(name, &small))
            .await
            .expect("within quota");
    }
    assert_eq!(
        used().await,
        json!({"count/jobs.batch": "0", "pods": "2", "limits.cpu": "3", "limits.memory": "2Gi",
            "requests.cpu": "1", "requests.memory": "2Gi"})
    );

    let before = cluster.store().resource_version();
    let big = pod(
        "x",
        &json!({"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}),
    );
    let over = r#"pods "x" is forbidden: exceeded quota: tool-q, requested: limits.cpu=2, used: limits.cpu=3, limited: limits.cpu=4"#;
    let refused = pods
        .create(&dry_run(), &big)
        .await
        .expect_err("a dry run is admitted the same way");
    assert_eq!(refusal(refused), forbidden(over));
    let refused = pods
        .create(&PostParams::default(), &big)
        .await
        .expect_err("over quota");
    assert_eq!(refusal(refused), forbidden(over));
    assert_eq!(
        cluster.store().resource_version(),
        before,
        "refusals write nothing"
    );

    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("first", &small))
        .await
        .expect("the first job fits");
    let second = jobs
        .create(&PostParams::default(), &job("second", &small))
        .await
        .expect_err("one job only");
    assert_eq!(
        refusal(second),
        forbidden(
            r#"jobs.batch "second" is forbidden: exceeded quota: tool-q, requested: count/jobs.batch=1, used: count/jobs.batch=1, limited: count/jobs.batch=1"#
        )
    );

    pods.delete("a", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleted");
    assert_eq!(used().await["limits.cpu"], "1500m", "deletes free usage");
    pods.create(&PostParams::default(), &big)
        .await
        .expect("fits again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_shows_quota_usage_and_limit_ranges_and_reports_refusals() {
    let (cluster, _client) = start().await;
    let kubectl = Kubectl::new(&cluster);
    let manifest = kubectl.directory.path().join("tool.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: tool-q\nspec:\n  hard:\n    pods: \"2\"\n    \
         requests.cpu: \"2\"\n    limits.cpu: 800m\n    limits.memory: 8Gi\n---\n\
         apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: tool-limits\nspec:\n  limits:\n  - type: Container\n    \
         default:\n      cpu: 500m\n      memory: 512Mi\n    max:\n      cpu: \"1\"\n",
    )
    .expect("manifest written");
    let manifest = manifest.to_str().expect("utf-8 path");
    kubectl.ok(&["apply", "-f", manifest]).await;
    kubectl
        .ok(&["run", "first", "--image=busybox", "--restart=Never"])
        .await;

    let quota = kubectl.ok(&["get", "quota"]).await;
    let lines: Vec<Vec<&str>> = quota
        .lines()
        .map(|line| {
            line.split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(lines[0], ["NAME", "AGE", "REQUEST", "LIMIT"], "{quota}");
    assert_eq!(lines[1][0], "tool-q", "{quota}");
    assert_eq!(
        lines[1][2..],
        [
            "pods: 1/2, requests.cpu: 500m/2",
            "limits.cpu: 500m/800m, limits.memory: 512Mi/8Gi"
        ],
        "{quota}"
    );
    let described = kubectl.ok(&["describe", "quota", "tool-q"]).await;
    assert!(
        described
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["limits.cpu", "500m", "800m"]),
        "{described}"
    );
    let limits = kubectl.ok(&["get", "limits"]).await;
    assert!(limits.starts_with("NAME"), "{limits}");
    assert!(limits.contains("tool-limits"), "{limits}");

    let (success, _, stderr) = kubectl
        .run(&["run", "second", "--image=busybox", "--restart=Never"])
        .await;
    assert!(!success);
    assert_eq!(
        stderr.trim(),
        "Error from server (Forbidden): pods \"second\" is forbidden: exceeded quota: tool-q, requested: \
         limits.cpu=500m, used: limits.cpu=500m, limited: limits.cpu=800m"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_generator_commands_send_protobuf_quotas_and_service_types_the_server_decodes() {
    let (cluster, _client) = start().await;
    let kubectl = Kubectl::new(&cluster);
    kubectl
        .ok(&[
            "create",
            "quota",
            "tool-q",
            "--hard=pods=1,count/jobs.batch=2",
        ])
        .await;
    let hard = kubectl
        .ok(&["get", "quota", "tool-q", "-o", "jsonpath={.status.hard}"])
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&hard).expect("json"),
        json!({"count/jobs.batch": "2", "pods": "1"})
    );
    kubectl
        .ok(&["create", "service", "nodeport", "web", "--tcp=80:8080"])
        .await;
    let kind = kubectl
        .ok(&["get", "service", "web", "-o", "jsonpath={.spec.type}"])
        .await;
    assert_eq!(kind, "NodePort", "`type` fields survive protobuf decoding");
}
