//! What a write stores and refuses, as Kubernetes 1.33's API server does it, through kube-rs and real kubectl:
//! status reset on create, canonical quantities in every `Quantity` field (pod templates included), empty
//! `omitempty` lists and maps dropped, create-on-update for the types that allow it, events.k8s.io/v1
//! validation, and decode errors that name the field.

#![expect(
    clippy::too_many_lines,
    reason = "each test reads top to bottom, one write after another"
)]

mod support;

use axum::http::{Request, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job, JobStatus};
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::Kubectl;
use toolforge_local_cluster::{LocalCluster, Options};

async fn start() -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

/// The object as stored, in JSON, read with a plain GET.
async fn stored(client: &kube::Client, path: &str) -> Value {
    let request = Request::get(path).body(Vec::new()).expect("request");
    client.request::<Value>(request).await.expect("stored")
}

/// Sends a body and returns the status code and the JSON answer.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: &Value,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).expect("json"))
        .expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("answered");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect_bytes()
        .await
        .expect("body read");
    (status, serde_json::from_slice(&bytes).expect("JSON answer"))
}

fn job_body(name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_sent_on_create_is_reset_and_main_writes_ignore_it() {
    let (cluster, client) = start().await;
    let mut exported = job_body("exported");
    exported["status"] = json!({"failed": 9, "succeeded": 1,
        "conditions": [{"type": "Complete", "status": "True"}]});
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let created = jobs
        .create(
            &PostParams::default(),
            &serde_json::from_value(exported.clone()).expect("job"),
        )
        .await
        .expect("created");
    assert_eq!(
        created.status,
        Some(JobStatus::default()),
        "a re-created export does not look finished"
    );

    // Server-side apply that creates, and kubectl create, both with a status.
    let mut applied = job_body("applied");
    applied["status"] = json!({"failed": 3});
    jobs.patch(
        "applied",
        &PatchParams::apply("test"),
        &Patch::Apply(applied),
    )
    .await
    .expect("applied");
    let path = "/apis/batch/v1/namespaces/default/jobs/applied";
    assert_eq!(stored(&client, path).await["status"], json!({}));
    let kubectl = Kubectl::new(&cluster);
    let manifest = kubectl.directory.path().join("cronjob.json");
    let cronjob = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}},
        "status": {"lastScheduleTime": "2026-01-01T00:00:00Z"}});
    std::fs::write(&manifest, cronjob.to_string()).expect("manifest");
    kubectl
        .ok(&["create", "-f", &manifest.display().to_string()])
        .await;
    let cronjobs: Api<CronJob> = Api::default_namespaced(client.clone());
    assert_eq!(
        cronjobs.get("nightly").await.expect("cronjob").status,
        Some(CronJobStatus::default())
    );

    // A replace that carries a status keeps the stored one.
    let mut current = stored(&client, path).await;
    current["status"] = json!({"failed": 7});
    let (code, replaced) = send(&client, "PUT", path, &current).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(replaced["status"], json!({}));
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_quantity_is_stored_canonical_and_empty_omitempty_fields_are_dropped() {
    let (cluster, client) = start().await;
    let container = json!({"name": "main", "image": "busybox", "args": [], "ports": [],
        "resources": {"requests": {"cpu": "1000m", "memory": "0.5Gi"},
            "limits": {"cpu": "0.1", "memory": 536_870_912.0}},
        "env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1000m"}}}]});
    let pod_spec = json!({"restartPolicy": "Never", "containers": [container], "nodeSelector": {},
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1.5Gi"}}]});
    let template =
        json!({"metadata": {"labels": {"app": "q"}, "annotations": {}}, "spec": pod_spec});
    let expect_canonical = |object: &Value, pointer: &str| {
        let spec = object.pointer(pointer).expect("pod spec");
        let container = &spec["containers"][0];
        assert_eq!(
            container["resources"],
            json!({"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"cpu": "100m", "memory": "536870912"}}),
            "{pointer}"
        );
        assert_eq!(
            container["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"],
            "1"
        );
        assert_eq!(spec["volumes"][0]["emptyDir"]["sizeLimit"], "1536Mi");
        for dropped in ["args", "ports"] {
            assert!(container.get(dropped).is_none(), "{pointer}: {dropped}");
        }
        assert!(spec.get("nodeSelector").is_none(), "{pointer}");
    };

    let kubectl = Kubectl::new(&cluster);
    let manifests = [
        (
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "q", "labels": {}},
                "spec": {"template": template}}),
            "/apis/batch/v1/namespaces/default/jobs/q",
            "/spec/template/spec",
        ),
        (
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "q"},
                "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}}),
            "/apis/batch/v1/namespaces/default/cronjobs/q",
            "/spec/jobTemplate/spec/template/spec",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "q", "annotations": {}},
                "spec": {"selector": {"matchLabels": {"app": "q"}}, "template": {
                    "metadata": template["metadata"], "spec": {"containers": template["spec"]["containers"],
                    "volumes": template["spec"]["volumes"], "nodeSelector": {}}}}}),
            "/apis/apps/v1/namespaces/default/deployments/q",
            "/spec/template/spec",
        ),
    ];
    for (i, (manifest, path, pointer)) in manifests.iter().enumerate() {
        let file = kubectl.directory.path().join(format!("m{i}.json"));
        std::fs::write(&file, manifest.to_string()).expect("manifest");
        kubectl
            .ok(&["create", "-f", &file.display().to_string()])
            .await;
        let object = stored(&client, path).await;
        expect_canonical(&object, pointer);
        let template_metadata = object
            .pointer(&pointer.replace("/spec/template/spec", "/spec/template/metadata"))
            .expect("template metadata");
        assert!(template_metadata.get("annotations").is_none(), "{path}");
    }
    let job = stored(&client, "/apis/batch/v1/namespaces/default/jobs/q").await;
    assert!(
        job["metadata"]["labels"].get("job-name").is_some(),
        "labels: {{}} is no labels, so the Job takes its template's"
    );
    let deployment = stored(&client, "/apis/apps/v1/namespaces/default/deployments/q").await;
    assert!(deployment["metadata"].get("annotations").is_none());

    // The ReplicaSet the controller makes from the template, and the quota and limit objects.
    let limits = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "2000m"}, "default": {"memory": "0.25Gi"}}]}});
    let (code, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/limitranges",
        &limits,
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let stored_limits = stored(&client, "/api/v1/namespaces/default/limitranges/l").await;
    assert_eq!(
        stored_limits["spec"]["limits"][0]["max"],
        json!({"cpu": "2"})
    );
    assert_eq!(
        stored_limits["spec"]["limits"][0]["default"],
        json!({"cpu": "2", "memory": "256Mi"}),
        "canonical, and defaulted from max"
    );
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
        "spec": {"hard": {"requests.memory": "4096Mi", "pods": 10}}});
    let (code, _) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/resourcequotas",
        &quota,
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let stored_quota = stored(&client, "/api/v1/namespaces/default/resourcequotas/q").await;
    assert_eq!(
        stored_quota["spec"]["hard"],
        json!({"requests.memory": "4Gi", "pods": "10"})
    );

    // Lists Go encodes even when empty are kept.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "nothing", "labels": {}}, "rules": []});
    let (code, created) = send(
        &client,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &role,
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    assert_eq!(created["rules"], json!([]));
    assert!(created["metadata"].get("labels").is_none());
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_of_a_missing_service_creates_it_and_of_a_missing_job_is_404() {
    let (cluster, client) = start().await;
    let path = "/api/v1/namespaces/default/services/web";
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "12345"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 8000}]}});
    let (code, created) = send(&client, "PUT", path, &service).await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    assert_eq!(created["spec"]["ports"][0]["targetPort"], 8000);
    assert!(created["spec"]["clusterIP"].is_string());
    let (code, _) = send(&client, "PUT", path, &service).await;
    assert_eq!(
        code,
        StatusCode::CONFLICT,
        "once it exists, the stale resourceVersion counts again"
    );
    let services: Api<Service> = Api::default_namespaced(client.clone());
    assert!(services.get("web").await.is_ok());

    // A uid in the body is a precondition nothing missing meets.
    let mut with_uid = service.clone();
    with_uid["metadata"]["name"] = json!("other");
    with_uid["metadata"]["uid"] = json!("d2b5a1a4-0000-0000-0000-000000000000");
    let (code, _) = send(
        &client,
        "PUT",
        "/api/v1/namespaces/default/services/other",
        &with_uid,
    )
    .await;
    assert_eq!(code, StatusCode::CONFLICT);

    for (kind_path, body) in [
        (
            "/api/v1/namespaces/default/limitranges/l",
            json!({"apiVersion": "v1", "kind": "LimitRange",
            "metadata": {"name": "l"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/lock",
            json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"}}),
        ),
    ] {
        let (code, answer) = send(&client, "PUT", kind_path, &body).await;
        assert_eq!(code, StatusCode::CREATED, "{kind_path}: {answer}");
    }
    for (kind_path, body) in [
        (
            "/apis/batch/v1/namespaces/default/jobs/missing",
            job_body("missing"),
        ),
        (
            "/api/v1/namespaces/default/configmaps/missing",
            json!({"apiVersion": "v1",
            "kind": "ConfigMap", "metadata": {"name": "missing"}}),
        ),
    ] {
        let (code, answer) = send(&client, "PUT", kind_path, &body).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{kind_path}");
        assert_eq!(answer["reason"], "NotFound");
    }

    // kubectl replace of a Service that does not exist yet, oldest and newest kubectl.
    for version in ["1.27", "1.33"] {
        let kubectl = Kubectl::of_version(&cluster, version);
        let manifest = kubectl.directory.path().join("svc.json");
        let name = format!("svc-{}", version.replace('.', "-"));
        let mut second = service.clone();
        second["metadata"] = json!({"name": name});
        std::fs::write(&manifest, second.to_string()).expect("manifest");
        assert_eq!(
            kubectl
                .ok(&["replace", "-f", &manifest.display().to_string()])
                .await
                .trim(),
            format!("service/{name} replaced")
        );
        assert!(services.get(&name).await.is_ok());
    }
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_v1_event_without_event_time_is_invalid() {
    let (cluster, client) = start().await;
    let path = "/apis/events.k8s.io/v1/namespaces/default/events";
    let mut event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e1"}, "regarding": {"kind": "Job", "namespace": "default", "name": "j"},
        "reason": "Started", "action": "Run", "note": "started", "type": "Normal",
        "reportingController": "toolforge.org/jobs", "reportingInstance": "jobs-1"});
    let (code, answer) = send(&client, "POST", path, &event).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(
        answer["message"],
        "Event.events.k8s.io \"e1\" is invalid: eventTime: Required value"
    );
    event["eventTime"] = json!("2026-01-01T00:00:00.000000Z");
    event["reportingController"] = json!("");
    event["type"] = json!("Info");
    let (code, answer) = send(&client, "POST", path, &event).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let fields: Vec<&str> = answer["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert!(fields.contains(&"reportingController"), "{answer}");
    assert!(fields.contains(&"type"), "{answer}");
    event["reportingController"] = json!("toolforge.org/jobs");
    event["type"] = json!("Normal");
    let (code, answer) = send(&client, "POST", path, &event).await;
    assert_eq!(code, StatusCode::CREATED, "{answer}");
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_the_wrong_type_is_refused_naming_the_field() {
    let (cluster, client) = start().await;
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": "two", "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let (code, answer) = send(&client, "POST", path, &deployment).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    let mut containers = deployment.clone();
    containers["spec"]["replicas"] = json!(1);
    containers["spec"]["template"]["spec"]["containers"] = json!({});
    let (code, answer) = send(&client, "POST", path, &containers).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"
    );
    let mut quantity = containers.clone();
    quantity["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}]);
    let (code, answer) = send(&client, "POST", path, &quantity).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );

    // kubectl shows the server's message.
    let kubectl = Kubectl::new(&cluster);
    let manifest = kubectl.directory.path().join("d.json");
    std::fs::write(&manifest, deployment.to_string()).expect("manifest");
    let (success, _, stderr) = kubectl
        .run(&[
            "create",
            "--validate=false",
            "-f",
            &manifest.display().to_string(),
        ])
        .await;
    assert!(!success);
    assert!(
        stderr.contains("cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
        "{stderr}"
    );
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    assert!(deployments.get("d").await.is_err(), "nothing was stored");
    cluster.shutdown().await.expect("clean shutdown");
}
