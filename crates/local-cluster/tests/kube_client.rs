//! kube-rs against the local cluster: every verb, the error bodies kube-rs parses, delete propagation and the
//! garbage collector, watches (selector transitions, 410 relists), fault injection and the state file.

#![expect(
    clippy::too_many_lines,
    reason = "scenario tests read top to bottom, one step after another"
)]

use std::time::Duration;

use axum::http::Request;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::watcher;
use serde_json::{Value, json};
use toolforge_local_cluster::{Fault, LocalCluster, Options};

async fn start() -> (LocalCluster, kube::Client) {
    start_with(Options::default()).await
}

async fn start_with(options: Options) -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(options).await.expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

fn job(name: &str, restart_policy: &str) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": restart_policy,
            "containers": [{"name": "main", "image": "busybox", "command": ["echo", "hi"]}]}}}
    }))
    .expect("valid job")
}

fn api_error(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn create_get_list_replace_set_server_metadata_and_generation() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client);
    let created = jobs
        .create(&PostParams::default(), &job("hello", "Never"))
        .await
        .expect("created");
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert_eq!(meta.uid.as_ref().map(String::len), Some(36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.generation, Some(1));
    let spec = created.spec.as_ref().expect("spec");
    assert_eq!(spec.backoff_limit, Some(6));
    assert_eq!(
        meta.labels
            .as_ref()
            .and_then(|l| l.get("job-name"))
            .map(String::as_str),
        Some("hello"),
        "a Job without labels takes the template's"
    );

    let fetched = jobs.get("hello").await.expect("get");
    assert_eq!(
        fetched.metadata.resource_version,
        created.metadata.resource_version
    );
    let listed = jobs
        .list(&ListParams::default().labels("job-name=hello"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1);
    assert!(
        listed
            .metadata
            .resource_version
            .is_some_and(|rv| !rv.is_empty())
    );
    assert!(
        jobs.list(&ListParams::default().labels("job-name=other"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let by_field = jobs
        .list(&ListParams::default().fields("metadata.name=hello"))
        .await
        .expect("list");
    assert_eq!(by_field.items.len(), 1);

    let mut labelled = fetched.clone();
    labelled
        .metadata
        .labels
        .get_or_insert_default()
        .insert("team".into(), "a".into());
    let labelled = jobs
        .replace("hello", &PostParams::default(), &labelled)
        .await
        .expect("replace");
    assert_eq!(
        labelled.metadata.generation,
        Some(1),
        "metadata changes keep the generation"
    );
    let mut scaled = labelled.clone();
    scaled.spec.as_mut().expect("spec").parallelism = Some(2);
    let scaled = jobs
        .replace("hello", &PostParams::default(), &scaled)
        .await
        .expect("replace");
    assert_eq!(
        scaled.metadata.generation,
        Some(2),
        "spec changes bump the generation"
    );
    let unchanged = jobs
        .replace("hello", &PostParams::default(), &scaled)
        .await
        .expect("replace");
    assert_eq!(
        unchanged.metadata.resource_version, scaled.metadata.resource_version,
        "no-op writes keep the version"
    );

    let stale = jobs
        .replace("hello", &PostParams::default(), &labelled)
        .await
        .expect_err("stale version");
    let status = api_error(stale);
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on jobs.batch \"hello\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

#[tokio::test]
async fn errors_carry_the_reasons_and_messages_kube_rs_matches_on() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let missing = api_error(jobs.get("nope").await.expect_err("missing"));
    assert_eq!(
        (
            missing.code,
            missing.reason.as_str(),
            missing.message.as_str()
        ),
        (404, "NotFound", "jobs.batch \"nope\" not found")
    );
    let details = missing.details.expect("details");
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("nope", "batch", "jobs")
    );
    assert!(jobs.get_opt("nope").await.expect("get_opt").is_none());

    jobs.create(&PostParams::default(), &job("dup", "Never"))
        .await
        .expect("created");
    let exists = api_error(
        jobs.create(&PostParams::default(), &job("dup", "Never"))
            .await
            .expect_err("exists"),
    );
    assert_eq!(
        (exists.code, exists.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(exists.message, "jobs.batch \"dup\" already exists");

    let invalid = api_error(
        jobs.create(&PostParams::default(), &job("bad", "Always"))
            .await
            .expect_err("invalid"),
    );
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        invalid.message,
        "Job.batch \"bad\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
    );
    let cause = &invalid.details.expect("details").causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldValueRequired", "spec.template.spec.restartPolicy")
    );

    let mut template_change = jobs.get("dup").await.expect("get");
    template_change
        .spec
        .as_mut()
        .expect("spec")
        .template
        .spec
        .as_mut()
        .expect("pod spec")
        .containers[0]
        .image = Some("other".into());
    let immutable = api_error(
        jobs.replace("dup", &PostParams::default(), &template_change)
            .await
            .expect_err("immutable"),
    );
    assert_eq!(immutable.code, 422);
    assert!(
        immutable
            .message
            .starts_with("Job.batch \"dup\" is invalid: spec.template: Invalid value: "),
        "{}",
        immutable.message
    );
    assert!(immutable.message.ends_with(": field is immutable"));

    let strict = PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let unknown = api_error(
        jobs.patch("dup", &strict, &Patch::Merge(json!({"spec": {"bogus": 1}})))
            .await
            .expect_err("unknown"),
    );
    assert_eq!((unknown.code, unknown.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        unknown.message,
        "Job in version \"v1\" cannot be handled as a Job: strict decoding error: unknown field \"spec.bogus\""
    );

    let elsewhere: Api<Job> = Api::namespaced(client.clone(), "missing-namespace");
    let no_namespace = api_error(
        elsewhere
            .create(&PostParams::default(), &job("x", "Never"))
            .await
            .expect_err("no namespace"),
    );
    assert_eq!(
        (no_namespace.code, no_namespace.message.as_str()),
        (404, "namespaces \"missing-namespace\" not found")
    );

    let request = Request::patch("/apis/batch/v1/namespaces/default/jobs/dup")
        .header("content-type", "application/xml")
        .body(b"<job/>".to_vec())
        .expect("request");
    let unsupported = api_error(client.request::<Value>(request).await.expect_err("415"));
    assert_eq!(
        (unsupported.code, unsupported.reason.as_str()),
        (415, "UnsupportedMediaType")
    );

    let request = Request::get("/apis/batch/v1/namespaces/default/widgets")
        .body(Vec::new())
        .expect("request");
    let unknown_path = api_error(client.request::<Value>(request).await.expect_err("404"));
    assert_eq!(
        unknown_path.message,
        "the server could not find the requested resource"
    );
}

#[tokio::test]
async fn every_patch_flavour_applies() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("p", "Never"))
        .await
        .expect("created");

    let merged = jobs
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "1"}}})),
        )
        .await
        .expect("merge");
    assert_eq!(
        merged
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("a"))
            .map(String::as_str),
        Some("1")
    );

    let strategic = Patch::Strategic(
        json!({"spec": {"parallelism": 3}, "metadata": {"$setElementOrder/finalizers": [], "finalizers": ["example.com/x"]}}),
    );
    let patched = jobs
        .patch("p", &PatchParams::default(), &strategic)
        .await
        .expect("strategic");
    assert_eq!(patched.spec.as_ref().and_then(|s| s.parallelism), Some(3));
    assert_eq!(
        patched.metadata.finalizers,
        Some(vec!["example.com/x".to_owned()])
    );

    let request = Request::patch("/apis/batch/v1/namespaces/default/jobs/p")
        .header("content-type", "application/json-patch+json")
        .body(br#"[{"op":"replace","path":"/spec/parallelism","value":4},{"op":"remove","path":"/metadata/finalizers"}]"#.to_vec())
        .expect("request");
    let json_patched: Job = client.request(request).await.expect("json patch");
    assert_eq!(
        json_patched.spec.as_ref().and_then(|s| s.parallelism),
        Some(4)
    );

    let conditional =
        Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "spec": {"parallelism": 5}}));
    let conflict = api_error(
        jobs.patch("p", &PatchParams::default(), &conditional)
            .await
            .expect_err("stale"),
    );
    assert_eq!(conflict.reason, "Conflict");

    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let apply = PatchParams::apply("tests");
    let first = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}});
    let created = configmaps
        .patch("cm", &apply, &Patch::Apply(&first))
        .await
        .expect("apply creates");
    assert_eq!(
        created.data.as_ref().map(std::collections::BTreeMap::len),
        Some(2)
    );
    let second = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "3"}});
    let updated = configmaps
        .patch("cm", &apply, &Patch::Apply(&second))
        .await
        .expect("apply updates");
    assert_eq!(
        updated.data,
        Some([("a".to_owned(), "3".to_owned())].into()),
        "fields the manager stopped applying are removed"
    );

    let no_manager = api_error(
        configmaps
            .patch("cm", &PatchParams::default(), &Patch::Apply(&second))
            .await
            .expect_err("no manager"),
    );
    assert_eq!(no_manager.code, 422);
    assert!(
        no_manager
            .message
            .contains("fieldManager: Required value: is required for apply patch")
    );
}

#[tokio::test]
async fn status_subresource_and_dry_run() {
    let (cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client);
    let created = jobs
        .create(&PostParams::default(), &job("s", "Never"))
        .await
        .expect("created");
    let with_status = Patch::Merge(json!({"status": {"active": 1}}));
    let main = jobs
        .patch("s", &PatchParams::default(), &with_status)
        .await
        .expect("patch");
    assert!(
        main.status.as_ref().and_then(|s| s.active).is_none(),
        "main resource writes ignore status"
    );
    let status = jobs
        .patch_status("s", &PatchParams::default(), &with_status)
        .await
        .expect("status patch");
    assert_eq!(status.status.as_ref().and_then(|s| s.active), Some(1));
    assert_eq!(
        status.metadata.generation, created.metadata.generation,
        "status writes keep the generation"
    );

    let before = cluster.store().resource_version();
    let dry = PostParams {
        dry_run: true,
        field_manager: None,
    };
    let would = jobs
        .create(&dry, &job("dry", "Never"))
        .await
        .expect("dry run");
    assert!(would.metadata.uid.is_some());
    assert!(would.metadata.resource_version.is_none());
    assert!(jobs.get_opt("dry").await.expect("get").is_none());
    let dry_delete = DeleteParams {
        dry_run: true,
        ..DeleteParams::background()
    };
    jobs.delete("s", &dry_delete).await.expect("dry delete");
    assert!(jobs.get_opt("s").await.expect("get").is_some());
    assert_eq!(
        cluster.store().resource_version(),
        before,
        "dry runs write nothing"
    );
}

fn owned_pod(name: &str, owner: &Job, block: bool, finalizers: &[&str]) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "finalizers": finalizers, "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": owner.metadata.name, "uid": owner.metadata.uid,
            "controller": true, "blockOwnerDeletion": block}]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .expect("valid pod")
}

/// A ConfigMap owned by the given ConfigMaps.
fn owned_map(name: &str, owners: &[&ConfigMap]) -> ConfigMap {
    let references: Vec<Value> = owners
        .iter()
        .map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid}))
        .collect();
    serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": references}}))
        .expect("valid config map")
}

#[tokio::test]
async fn after_a_restart_the_collector_still_knows_every_objects_owners() {
    let directory = tempfile::tempdir().expect("temp dir");
    let options = Options {
        state_file: Some(directory.path().join("state.json")),
        ..Options::default()
    };
    let (cluster, client) = start_with(options.clone()).await;
    let maps: Api<ConfigMap> = Api::default_namespaced(client);
    let plain = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("valid config map")
    };
    let owner = maps
        .create(&PostParams::default(), &plain("owner"))
        .await
        .expect("owner");
    let keeper = maps
        .create(&PostParams::default(), &plain("keeper"))
        .await
        .expect("keeper");
    for (name, owners) in [("only", vec![&owner]), ("shared", vec![&owner, &keeper])] {
        maps.create(&PostParams::default(), &owned_map(name, &owners))
            .await
            .expect("dependent");
    }
    cluster.shutdown().await.expect("clean shutdown");

    let (_cluster, client) = start_with(options).await;
    let maps: Api<ConfigMap> = Api::default_namespaced(client);
    maps.delete("owner", &DeleteParams::background())
        .await
        .expect("deleted");
    assert!(
        maps.get_opt("only").await.expect("get").is_none(),
        "a dependent of the deleted owner is collected"
    );
    let shared = maps
        .get("shared")
        .await
        .expect("a dependent with a live owner stays");
    let owners: Vec<String> = shared
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(
        owners,
        ["keeper"],
        "the reference to the deleted owner is removed"
    );
}

#[tokio::test]
async fn deleting_a_job_by_default_orphans_its_pods() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client);
    let owner = jobs
        .create(&PostParams::default(), &job("orphaner", "Never"))
        .await
        .expect("job");
    pods.create(
        &PostParams::default(),
        &owned_pod("orphan-pod", &owner, true, &[]),
    )
    .await
    .expect("pod");

    let deleted = jobs
        .delete("orphaner", &DeleteParams::default())
        .await
        .expect("delete");
    let pending = deleted
        .left()
        .expect("the Job comes back while its orphan finalizer is pending");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(pending.metadata.finalizers, Some(vec!["orphan".to_owned()]));
    assert!(
        jobs.get_opt("orphaner").await.expect("get").is_none(),
        "the garbage collector finished the deletion"
    );
    let pod = pods.get("orphan-pod").await.expect("the pod survives");
    assert!(pod.metadata.owner_references.is_none_or(|r| r.is_empty()));
}

#[tokio::test]
async fn background_and_foreground_deletion_collect_dependents() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client);

    let owner = jobs
        .create(&PostParams::default(), &job("bg", "Never"))
        .await
        .expect("job");
    pods.create(
        &PostParams::default(),
        &owned_pod("bg-pod", &owner, true, &[]),
    )
    .await
    .expect("pod");
    let status = jobs
        .delete("bg", &DeleteParams::background())
        .await
        .expect("delete")
        .right()
        .expect("gone at once");
    assert_eq!(
        status.details.as_ref().map(|d| d.uid.as_str()),
        owner.metadata.uid.as_deref()
    );
    assert!(
        pods.get_opt("bg-pod").await.expect("get").is_none(),
        "dependents are collected"
    );

    let owner = jobs
        .create(&PostParams::default(), &job("fg", "Never"))
        .await
        .expect("job");
    pods.create(
        &PostParams::default(),
        &owned_pod("fg-pod", &owner, true, &["example.com/hold"]),
    )
    .await
    .expect("pod");
    let pending = jobs
        .delete("fg", &DeleteParams::foreground())
        .await
        .expect("delete")
        .left()
        .expect("pending");
    assert_eq!(
        pending.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_owned()])
    );
    let blocked = jobs
        .get("fg")
        .await
        .expect("the owner waits for its blocking dependent");
    assert!(blocked.metadata.deletion_timestamp.is_some());
    let pod = pods
        .get("fg-pod")
        .await
        .expect("the dependent is terminating");
    assert!(pod.metadata.deletion_timestamp.is_some());
    pods.patch(
        "fg-pod",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
    assert!(pods.get_opt("fg-pod").await.expect("get").is_none());
    assert!(
        jobs.get_opt("fg").await.expect("get").is_none(),
        "the owner goes once its dependents are gone"
    );

    let recreate = jobs
        .create(&PostParams::default(), &job("hold", "Never"))
        .await
        .expect("job");
    jobs.patch(
        "hold",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/x"]}})),
    )
    .await
    .expect("finalizer");
    jobs.delete("hold", &DeleteParams::background())
        .await
        .expect("delete");
    let again = api_error(
        jobs.create(&PostParams::default(), &job("hold", "Never"))
            .await
            .expect_err("terminating"),
    );
    assert_eq!(
        again.message,
        "object is being deleted: jobs.batch \"hold\" already exists"
    );
    let uid = recreate.metadata.uid.clone().expect("uid");
    let wrong = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let precondition = api_error(jobs.delete("hold", &wrong).await.expect_err("precondition"));
    assert_eq!(precondition.code, 409);
    assert!(precondition.message.ends_with(&format!(
        "Precondition failed: UID in precondition: other, UID in object meta: {uid}"
    )));
}

#[tokio::test]
async fn deployments_reject_mismatched_selectors_and_default_their_strategy() {
    let (_cluster, client) = start().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    let mut deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "other"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .expect("valid");
    let invalid = api_error(
        deployments
            .create(&PostParams::default(), &deployment)
            .await
            .expect_err("mismatch"),
    );
    assert_eq!(invalid.reason, "Invalid");
    deployment
        .spec
        .as_mut()
        .expect("spec")
        .template
        .metadata
        .as_mut()
        .expect("meta")
        .labels = Some([("app".to_owned(), "web".to_owned())].into());
    let created = deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("created");
    let spec = created.spec.expect("spec");
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(
        spec.strategy.and_then(|s| s.type_).as_deref(),
        Some("RollingUpdate")
    );
    let scale = deployments.get_scale("web").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1));
    let scaled = deployments
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(
        deployments
            .get("web")
            .await
            .expect("get")
            .metadata
            .generation,
        Some(2)
    );
}

#[tokio::test]
async fn watches_follow_selectors_and_resume_from_versions() {
    let (_cluster, client) = start().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let cm = |name: &str, tier: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"tier": tier}}}))
            .expect("valid")
    };
    let start_version = configmaps
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let params = WatchParams::default().labels("tier=front").timeout(5);
    let mut stream = configmaps
        .watch(&params, &start_version)
        .await
        .expect("watch")
        .boxed();
    configmaps
        .create(&PostParams::default(), &cm("a", "front"))
        .await
        .expect("create");
    configmaps
        .create(&PostParams::default(), &cm("b", "back"))
        .await
        .expect("create");
    configmaps
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "back"}}})),
        )
        .await
        .expect("relabel");
    configmaps
        .patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await
        .expect("relabel");
    configmaps
        .delete("b", &DeleteParams::default())
        .await
        .expect("delete");
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("event in time")
            .expect("open")
            .expect("event");
        match event {
            WatchEvent::Added(o) => {
                seen.push(format!("ADDED {}", o.metadata.name.unwrap_or_default()));
            }
            WatchEvent::Modified(o) => {
                seen.push(format!("MODIFIED {}", o.metadata.name.unwrap_or_default()));
            }
            WatchEvent::Deleted(o) => {
                seen.push(format!("DELETED {}", o.metadata.name.unwrap_or_default()));
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("unexpected error event {e:?}"),
        }
    }
    assert_eq!(seen, ["ADDED a", "DELETED a", "ADDED b", "DELETED b"]);

    let replay = configmaps
        .watch(&WatchParams::default().timeout(1), &start_version)
        .await
        .expect("watch");
    let events: Vec<_> = replay.try_collect().await.expect("events");
    assert_eq!(
        events.len(),
        5,
        "resuming from a version replays every later change: {events:?}"
    );
}

#[tokio::test]
async fn watcher_relists_after_410_inside_the_stream() {
    let (cluster, client) = start_with(Options {
        history_limit: 2,
        ..Options::default()
    })
    .await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let cm = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("valid")
    };
    configmaps
        .create(&PostParams::default(), &cm("first"))
        .await
        .expect("create");
    let old_version = configmaps
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    for name in ["x", "y", "z"] {
        configmaps
            .create(&PostParams::default(), &cm(name))
            .await
            .expect("create");
    }
    let mut expired = configmaps
        .watch(&WatchParams::default(), &old_version)
        .await
        .expect("200 stream")
        .boxed();
    match expired.next().await.expect("one event").expect("parsed") {
        WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(
                status
                    .message
                    .starts_with(&format!("too old resource version: {old_version} ("))
            );
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
    assert!(
        expired.next().await.is_none(),
        "the stream ends after the ERROR event"
    );

    let mut events = watcher(configmaps.clone(), watcher::Config::default()).boxed();
    let mut inits = 0;
    let mut relisted = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("event in time")
            .expect("open")
        {
            Ok(watcher::Event::InitDone) => {
                inits += 1;
                if inits == 1 {
                    cluster.expire_next_watch();
                    cluster.close_watches();
                } else {
                    relisted = true;
                    break;
                }
            }
            Ok(_) => {}
            Err(watcher::Error::WatchError(status)) => assert_eq!(status.code, 410),
            Err(other) => panic!("unexpected watcher error {other:?}"),
        }
    }
    assert!(relisted, "the watcher relisted after the 410");
    assert!(cluster.request_count("list", "configmaps") >= 3);
}

/// Kubernetes 1.33 keeps the `WatchList` feature gate off: a streaming list is refused with the 422 client-go
/// recognises to fall back to list and watch, and the default kube-rs watcher (list, then watch) works.
#[tokio::test]
async fn streaming_lists_are_refused_as_kubernetes_1_33_refuses_them() {
    let (_cluster, client) = start().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "s"}})).expect("valid"),
        )
        .await
        .expect("create");
    let refused = match configmaps.watch(&WatchParams::streaming_lists(), "0").await {
        Ok(_) => panic!("a streaming list was accepted"),
        Err(error) => api_error(error),
    };
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        refused.message,
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    let mut events = watcher(configmaps, watcher::Config::default()).boxed();
    let mut applied = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(5), events.next())
            .await
            .expect("event in time")
            .expect("open")
            .expect("ok")
        {
            watcher::Event::InitApply(cm) => applied.push(cm.metadata.name.unwrap_or_default()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(applied, ["s"]);
}

#[tokio::test]
async fn faults_and_counters() {
    let (cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client);
    cluster.inject_fault(Fault::new("create", "jobs", 500, 1));
    let failed = api_error(
        jobs.create(&PostParams::default(), &job("f", "Never"))
            .await
            .expect_err("injected"),
    );
    assert_eq!(
        (failed.code, failed.reason.as_str()),
        (500, "InternalError")
    );
    jobs.create(&PostParams::default(), &job("f", "Never"))
        .await
        .expect("the fault is used up");
    jobs.get("f").await.expect("get");
    assert_eq!(cluster.request_count("create", "jobs"), 2);
    assert_eq!(cluster.request_count("get", "jobs"), 1);
    cluster.set_latency(Duration::from_millis(150));
    let started = std::time::Instant::now();
    jobs.get("f").await.expect("get");
    assert!(started.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
async fn state_file_restores_objects_and_the_version_counter() {
    let directory = tempfile::tempdir().expect("temp dir");
    let options = Options {
        state_file: Some(directory.path().join("state.json")),
        ..Options::default()
    };
    let (cluster, client) = start_with(options.clone()).await;
    let jobs: Api<Job> = Api::default_namespaced(client);
    let created = jobs
        .create(&PostParams::default(), &job("kept", "Never"))
        .await
        .expect("created");
    let version = cluster.store().resource_version();
    cluster.shutdown().await.expect("clean shutdown");

    let (cluster, client) = start_with(options).await;
    let jobs: Api<Job> = Api::default_namespaced(client);
    let restored = jobs.get("kept").await.expect("restored");
    assert_eq!(restored.metadata.uid, created.metadata.uid);
    assert_eq!(
        restored.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(cluster.store().resource_version(), version);
    let next = jobs
        .create(&PostParams::default(), &job("after", "Never"))
        .await
        .expect("created");
    let next_version: u64 = next
        .metadata
        .resource_version
        .expect("rv")
        .parse()
        .expect("decimal");
    assert!(
        next_version > version,
        "the counter continues after a restart"
    );
    cluster.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn discovery_lists_every_served_resource() {
    let (_cluster, client) = start().await;
    let discovery = kube::Discovery::new(client.clone())
        .run()
        .await
        .expect("legacy discovery");
    for (group, kind) in [
        ("", "Pod"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("apps", "Deployment"),
        ("coordination.k8s.io", "Lease"),
    ] {
        let found = discovery.groups().any(|g| {
            g.name() == group
                && g.recommended_resources()
                    .iter()
                    .any(|(r, _)| r.kind == kind)
        });
        assert!(found, "{group}/{kind}");
    }
    let aggregated = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .expect("aggregated discovery");
    assert!(aggregated.has_group("batch"));
    let version = client.apiserver_version().await.expect("version");
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "33")
    );
}

#[tokio::test]
async fn bookmarks_carry_kind_and_api_version() {
    let (_cluster, client) = start_with(Options {
        bookmark_interval: Duration::from_millis(100),
        ..Options::default()
    })
    .await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let mut stream = configmaps
        .watch(&WatchParams::default().timeout(5), "0")
        .await
        .expect("watch")
        .boxed();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("event in time")
            .expect("open");
        // kube-rs fails to parse a bookmark without kind and apiVersion, so reaching one proves both are there.
        if let WatchEvent::Bookmark(bookmark) = event.expect("parsed") {
            assert!(!bookmark.metadata.resource_version.is_empty());
            break;
        }
    }
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents_and_refuses_new_ones() {
    let (_cluster, client) = start().await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let namespace =
        serde_json::from_value(json!({"metadata": {"name": "scratch"}})).expect("valid");
    let created = namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("created");
    assert_eq!(
        created.status.and_then(|s| s.phase).as_deref(),
        Some("Active")
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "scratch");
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/x"]}}),
    )
    .expect("valid");
    configmaps
        .create(&PostParams::default(), &held)
        .await
        .expect("created");
    let protected = api_error(
        namespaces
            .delete("default", &DeleteParams::default())
            .await
            .expect_err("protected"),
    );
    assert_eq!(
        (protected.code, protected.message.as_str()),
        (
            403,
            "namespaces \"default\" is forbidden: this namespace may not be deleted"
        )
    );
    namespaces
        .delete("scratch", &DeleteParams::default())
        .await
        .expect("delete");
    let terminating = namespaces
        .get("scratch")
        .await
        .expect("still there while content remains");
    assert_eq!(
        terminating.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    let refused = api_error(
        configmaps
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "new"}})).expect("valid"),
            )
            .await
            .expect_err("forbidden"),
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert!(refused.message.ends_with(
        "unable to create new content in namespace scratch because it is being terminated"
    ));
    configmaps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release");
    assert!(namespaces.get_opt("scratch").await.expect("get").is_none());
}

#[tokio::test]
async fn metadata_views_collections_and_uid_preconditions() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    for name in ["m1", "m2"] {
        jobs.create(&PostParams::default(), &job(name, "Never"))
            .await
            .expect("created");
    }
    let metadata = jobs
        .list_metadata(&ListParams::default())
        .await
        .expect("metadata list");
    assert_eq!(metadata.items.len(), 2);
    assert_eq!(metadata.items[0].metadata.name.as_deref(), Some("m1"));
    let one = jobs.get_metadata("m2").await.expect("metadata get");
    assert_eq!(one.metadata.generation, Some(1));

    let request = Request::get("/apis/batch/v1/namespaces/default/jobs")
        .body(Vec::new())
        .expect("request");
    let raw: Value = client.request(request).await.expect("raw list");
    assert_eq!(raw["kind"], "JobList");
    assert!(
        raw["items"][0].get("kind").is_none(),
        "list items carry no kind, as on a real server"
    );

    let mut foreign = jobs.get("m1").await.expect("get");
    foreign.metadata.uid = Some("not-the-uid".into());
    let conflict = api_error(
        jobs.replace("m1", &PostParams::default(), &foreign)
            .await
            .expect_err("uid precondition"),
    );
    assert_eq!(conflict.code, 409);
    assert!(
        conflict
            .message
            .contains("Precondition failed: UID in precondition: not-the-uid"),
        "{}",
        conflict.message
    );

    let deleted = jobs
        .delete_collection(
            &DeleteParams::background(),
            &ListParams::default().labels("job-name=m1"),
        )
        .await
        .expect("deletecollection");
    let removed = deleted.left().expect("a list of what was deleted");
    assert_eq!(removed.items.len(), 1);
    let left: Vec<String> = jobs
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|j| j.metadata.name)
        .collect();
    assert_eq!(left, ["m2"]);
}

#[tokio::test]
async fn scheduled_pods_are_deleted_gracefully() {
    let (_cluster, client) = start().await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let pod = |name: &str| -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "spec": {"nodeName": "local",
            "containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .expect("valid pod")
    };
    pods.create(&PostParams::default(), &pod("graceful"))
        .await
        .expect("created");
    let deleted = pods
        .delete("graceful", &DeleteParams::default())
        .await
        .expect("delete")
        .left()
        .expect("pods always come back");
    assert_eq!(deleted.metadata.deletion_grace_period_seconds, Some(30));
    assert!(deleted.metadata.deletion_timestamp.is_some());
    assert!(
        pods.get_opt("graceful").await.expect("get").is_some(),
        "the kubelet finishes graceful deletion"
    );
    let shorter = DeleteParams {
        grace_period_seconds: Some(5),
        ..DeleteParams::default()
    };
    let shortened = pods
        .delete("graceful", &shorter)
        .await
        .expect("delete")
        .left()
        .expect("pending");
    assert_eq!(shortened.metadata.deletion_grace_period_seconds, Some(5));
    let longer = DeleteParams {
        grace_period_seconds: Some(60),
        ..DeleteParams::default()
    };
    let kept = pods
        .delete("graceful", &longer)
        .await
        .expect("delete")
        .left()
        .expect("pending");
    assert_eq!(
        kept.metadata.deletion_grace_period_seconds,
        Some(5),
        "a grace period is never lengthened"
    );
    pods.delete(
        "graceful",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await
    .expect("final delete");
    assert!(
        pods.get_opt("graceful").await.expect("get").is_none(),
        "grace 0 removes the pod"
    );

    pods.create(&PostParams::default(), &pod("forever"))
        .await
        .expect("created");
    let far = DeleteParams {
        grace_period_seconds: Some(u32::MAX),
        ..DeleteParams::default()
    };
    pods.delete("forever", &far)
        .await
        .expect("a huge grace period is no crash");

    let unscheduled: Pod = serde_json::from_value(json!({"metadata": {"name": "now"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})).expect("valid");
    pods.create(&PostParams::default(), &unscheduled)
        .await
        .expect("created");
    let gone = pods
        .delete("now", &DeleteParams::default())
        .await
        .expect("delete")
        .left()
        .expect("the pod");
    assert_eq!(gone.metadata.name.as_deref(), Some("now"));
    assert!(
        pods.get_opt("now").await.expect("get").is_none(),
        "unscheduled pods go at once"
    );
}

#[tokio::test]
async fn events_k8s_io_shares_storage_with_core_events() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event;
    let (_cluster, client) = start().await;
    let events: Api<Event> = Api::default_namespaced(client.clone());
    let core: Api<CoreEvent> = Api::default_namespaced(client);
    let event: Event = serde_json::from_value(json!({"metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Job", "name": "j", "namespace": "default"}, "note": "started", "reason": "Started",
        "type": "Normal", "action": "Run", "reportingController": "toolforge", "reportingInstance": "here"}))
    .expect("valid");
    let created = events
        .create(&PostParams::default(), &event)
        .await
        .expect("created");
    assert_eq!(created.note.as_deref(), Some("started"));
    let seen = core.get("e1").await.expect("the core view has it");
    assert_eq!(seen.message.as_deref(), Some("started"));
    assert_eq!(seen.involved_object.name.as_deref(), Some("j"));
    let by_field = core
        .list(&ListParams::default().fields("involvedObject.name=j"))
        .await
        .expect("list");
    assert_eq!(by_field.items.len(), 1);
    // Through events.k8s.io only the series (and metadata) of an Event may change, as in Kubernetes.
    let refused = events
        .patch(
            "e1",
            &PatchParams::default(),
            &Patch::Merge(json!({"note": "again"})),
        )
        .await
        .expect_err("the note is immutable");
    assert!(
        matches!(&refused, kube::Error::Api(status) if status.code == 422),
        "{refused:?}"
    );
    let patched = events
        .patch(
            "e1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}}),
            ),
        )
        .await
        .expect("patch");
    assert_eq!(patched.series.map(|series| series.count), Some(2));
    let listed = core.list(&ListParams::default()).await.expect("list");
    assert_eq!(
        listed.items[0]
            .series
            .as_ref()
            .and_then(|series| series.count),
        Some(2),
        "the core view shares the series"
    );
    assert_eq!(listed.items[0].message.as_deref(), Some("started"));
}

#[tokio::test]
async fn lists_are_paged_consistently_with_limit_and_continue() {
    let (_cluster, client) = start().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    for name in ["a", "b", "c"] {
        configmaps
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": name}})).expect("valid"),
            )
            .await
            .expect("create");
    }
    let first = configmaps
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.metadata.remaining_item_count, Some(1));
    let token = first.metadata.continue_.clone().expect("continue token");
    configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "d"}})).expect("valid"),
        )
        .await
        .expect("create");
    let second = configmaps
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .expect("second page");
    let names: Vec<String> = second
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(
        names,
        ["c"],
        "later pages come from the first page's snapshot"
    );
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    assert!(second.metadata.continue_.is_none_or(|c| c.is_empty()));
    // As with Kubernetes, a token can be used again (a client retrying a page) until it expires.
    let reused = configmaps
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .expect("the same token again");
    assert_eq!(
        reused
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect::<Vec<_>>(),
        ["c"]
    );
    // The server keeps 64 snapshots; older tokens are answered as Kubernetes answers compacted ones.
    for _ in 0..64 {
        configmaps
            .list(&ListParams::default().limit(1))
            .await
            .expect("page");
    }
    let expired = api_error(
        configmaps
            .list(&ListParams::default().limit(2).continue_token(&token))
            .await
            .expect_err("expired token"),
    );
    assert_eq!((expired.code, expired.reason.as_str()), (410, "Expired"));
    let all: Vec<_> = watcher(configmaps, watcher::Config::default().page_size(1))
        .take(6)
        .collect()
        .await;
    assert_eq!(
        all.len(),
        6,
        "the watcher pages through Init, four objects and InitDone"
    );
}

#[tokio::test]
async fn watches_from_a_future_version_wait_for_it_then_time_out() {
    let (cluster, client) = start().await;
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let next = cluster.store().resource_version() + 1;
    let mut waiting = configmaps
        .watch(&WatchParams::default().timeout(10), &next.to_string())
        .await
        .expect("watch")
        .boxed();
    let cm = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("valid")
    };
    configmaps
        .create(&PostParams::default(), &cm("reaches"))
        .await
        .expect("create");
    configmaps
        .create(&PostParams::default(), &cm("after"))
        .await
        .expect("create");
    match tokio::time::timeout(Duration::from_secs(5), waiting.next())
        .await
        .expect("event in time")
        .expect("open")
        .expect("parsed")
    {
        WatchEvent::Added(o) => assert_eq!(
            o.metadata.name.as_deref(),
            Some("after"),
            "changes after the requested version"
        ),
        other => panic!("expected ADDED, got {other:?}"),
    }
    let far = cluster.store().resource_version() + 100;
    let started = std::time::Instant::now();
    let mut never = configmaps
        .watch(&WatchParams::default(), &far.to_string())
        .await
        .expect("200 stream")
        .boxed();
    match never.next().await.expect("one event").expect("parsed") {
        WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (504, "Timeout"));
            assert!(
                status
                    .message
                    .starts_with(&format!("Too large resource version: {far}, current: "))
            );
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_secs(3));
}

#[tokio::test]
async fn the_written_kubeconfig_works_for_kube_rs() {
    let (cluster, _) = start().await;
    let directory = tempfile::tempdir().expect("temp dir");
    let path = directory.path().join("kubeconfig");
    cluster.write_kubeconfig(&path).expect("written");
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("parses");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    assert_eq!(config.default_namespace, "default");
    let client = kube::Client::try_from(config).expect("client");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    assert!(
        namespaces
            .get_opt("kube-system")
            .await
            .expect("get")
            .is_some()
    );
}

/// Hostile or broken requests get a 4xx Status, never a crash or a 5xx.
#[tokio::test]
async fn malformed_requests_get_status_errors_not_crashes() {
    let (cluster, client) = start().await;
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let bodies: [&[u8]; 7] = [
        b"",
        b"[]",
        b"42",
        b"{\"metadata\": 5}",
        b"{\"spec\": {\"template\": []}}",
        deep.as_bytes(),
        b"\xff\xfe",
    ];
    let paths = [
        "/api/v1/namespaces/default/pods",
        "/apis/batch/v1/namespaces/default/jobs",
        "/apis/batch/v1/namespaces/default/cronjobs",
        "/apis/apps/v1/namespaces/default/deployments",
        "/api/v1/namespaces",
    ];
    for path in paths {
        for body in bodies {
            for (method, suffix, content_type) in [
                ("POST", "", "application/json"),
                ("POST", "", "application/yaml"),
                ("POST", "", "application/vnd.kubernetes.protobuf"),
                ("PUT", "/x", "application/json"),
                ("PATCH", "/x", "application/strategic-merge-patch+json"),
                ("PATCH", "/x", "application/apply-patch+yaml"),
                ("PATCH", "/x", "application/json-patch+json"),
                ("DELETE", "/x", "application/json"),
                ("DELETE", "", "application/json"),
            ] {
                let request = Request::builder()
                    .method(method)
                    .uri(format!("{path}{suffix}?fieldManager=fuzz"))
                    .header("content-type", content_type)
                    .body(body.to_vec())
                    .expect("request");
                match client.request_text(request).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) => {
                        assert!(
                            (400..500).contains(&status.code),
                            "{method} {path}{suffix} {content_type}: {status:?}"
                        );
                    }
                    Err(other) => panic!("{method} {path}{suffix}: {other:?}"),
                }
            }
        }
    }
    let jobs: Api<Job> = Api::default_namespaced(cluster.client().expect("client"));
    jobs.create(&PostParams::default(), &job("still-alive", "Never"))
        .await
        .expect("the server still works");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    assert_eq!(
        namespaces
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        4,
        "namespaces cannot be deleted as a collection"
    );
}

#[tokio::test]
async fn replicasets_read_back_as_typed_objects() {
    let (_cluster, client) = start().await;
    let replicasets: Api<k8s_openapi::api::apps::v1::ReplicaSet> = Api::default_namespaced(client);
    let rs = serde_json::from_value(json!({"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"app": "a"}},
        "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
    .expect("valid");
    let created = replicasets
        .create(&PostParams::default(), &rs)
        .await
        .expect("created and parsed");
    assert_eq!(created.status.map(|s| s.replicas), Some(0));
    replicasets
        .replace(
            "rs",
            &PostParams::default(),
            &created_again(&replicasets).await,
        )
        .await
        .expect("replace round-trips");
}

async fn created_again(
    api: &Api<k8s_openapi::api::apps::v1::ReplicaSet>,
) -> k8s_openapi::api::apps::v1::ReplicaSet {
    api.get("rs").await.expect("get parses")
}

#[tokio::test]
async fn generate_name_appends_five_characters_and_names_the_job_labels() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client);
    let mut generated = job("", "Never");
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("run-".into());
    let created = jobs
        .create(&PostParams::default(), &generated)
        .await
        .expect("created");
    let name = created.metadata.name.expect("generated name");
    assert!(name.starts_with("run-") && name.len() == 9, "{name}");
    let labels = created
        .spec
        .expect("spec")
        .template
        .metadata
        .expect("metadata")
        .labels
        .expect("labels");
    assert_eq!(labels.get("job-name"), Some(&name));
    let mut nameless = job("", "Never");
    nameless.metadata.name = None;
    let invalid = api_error(
        jobs.create(&PostParams::default(), &nameless)
            .await
            .expect_err("no name"),
    );
    assert_eq!(
        invalid.message,
        "Job.batch \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
}

#[tokio::test]
async fn the_cluster_identifies_itself_in_kube_public() {
    let directory = tempfile::tempdir().expect("temp dir");
    let options = Options {
        tools_home: Some(directory.path().to_owned()),
        ..Options::default()
    };
    let (_cluster, client) = start_with(options).await;
    let configmaps: Api<ConfigMap> =
        Api::namespaced(client, toolforge_local_cluster::IDENTITY_NAMESPACE);
    let identity = configmaps
        .get(toolforge_local_cluster::IDENTITY_NAME)
        .await
        .expect("identity");
    let data = identity.data.expect("data");
    assert_eq!(
        data.get("cluster").map(String::as_str),
        Some("toolforge-local")
    );
    assert_eq!(
        data.get("toolsHome"),
        Some(&directory.path().display().to_string())
    );
}

#[tokio::test]
async fn a_dropped_cluster_stops_serving() {
    let (cluster, client) = start().await;
    let address = cluster.address();
    drop(cluster);
    // The server notices in the background; give it time on a busy machine.
    let mut listening = true;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if tokio::net::TcpStream::connect(address).await.is_err() {
            listening = false;
            break;
        }
    }
    assert!(!listening, "nothing listens any more");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    assert!(namespaces.get("default").await.is_err());
}

#[tokio::test]
async fn deprecated_orphan_dependents_false_answers_202_while_pending() {
    let (_cluster, client) = start().await;
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    jobs.create(&PostParams::default(), &job("held", "Never"))
        .await
        .expect("created");
    jobs.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/x"]}})),
    )
    .await
    .expect("finalizer");
    let request = Request::delete("/apis/batch/v1/namespaces/default/jobs/held")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(
            br#"{"orphanDependents":false}"#.to_vec(),
        ))
        .expect("request");
    let response = client.send(request).await.expect("sent");
    assert_eq!(response.status().as_u16(), 202);
}

/// The managers of an object with their operations, in the order the server lists them.
fn managers(object: &Deployment) -> Vec<(String, String)> {
    object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|entry| {
            (
                entry.manager.clone().unwrap_or_default(),
                entry.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The `fieldsV1` a manager owns.
fn owned_by(object: &Deployment, manager: &str) -> Value {
    object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|entry| entry.manager.as_deref() == Some(manager))
        .and_then(|entry| entry.fields_v1.as_ref())
        .map_or(Value::Null, |fields| fields.0.clone())
}

#[tokio::test]
async fn server_side_apply_tracks_owners_and_refuses_conflicting_changes() {
    let (_cluster, client) = start().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    let web = |spec: Value| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec});
    let full = |replicas: i64| {
        web(
            json!({"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}}}),
        )
    };
    let alice = PatchParams::apply("alice");
    let bob = PatchParams::apply("bob");
    let created = deployments
        .patch("web", &alice, &Patch::Apply(full(0)))
        .await
        .expect("alice creates");
    assert_eq!(managers(&created), [("alice".into(), "Apply".into())]);
    assert_eq!(
        owned_by(&created, "alice")["f:spec"]["f:template"]["f:spec"]["f:containers"],
        json!({"k:{\"name\":\"main\"}": {".": {}, "f:command": {}, "f:image": {}, "f:name": {}}})
    );

    let conflict = api_error(
        deployments
            .patch("web", &bob, &Patch::Apply(web(json!({"replicas": 2}))))
            .await
            .expect_err("bob conflicts with alice"),
    );
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.reason, "Conflict");
    assert_eq!(
        conflict.message,
        r#"Apply failed with 1 conflict: conflict with "alice": .spec.replicas"#
    );
    let causes = conflict.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].message, r#"conflict with "alice""#);
    assert_eq!(causes[0].field, ".spec.replicas");

    // The same value shares ownership; alice dropping the field then leaves it to bob.
    deployments
        .patch("web", &bob, &Patch::Apply(web(json!({"replicas": 0}))))
        .await
        .expect("same value, no conflict");
    let mut without_replicas = full(0);
    without_replicas["spec"]
        .as_object_mut()
        .map(|spec| spec.remove("replicas"));
    let kept = deployments
        .patch("web", &alice, &Patch::Apply(&without_replicas))
        .await
        .expect("alice stops applying replicas");
    assert_eq!(kept.spec.as_ref().and_then(|s| s.replicas), Some(0));
    assert!(
        owned_by(&kept, "alice")["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert_eq!(
        owned_by(&kept, "bob"),
        json!({"f:spec": {"f:replicas": {}}})
    );

    // Forcing takes the field.
    let forced = deployments
        .patch(
            "web",
            &PatchParams::apply("carol").force(),
            &Patch::Apply(web(json!({"replicas": 1}))),
        )
        .await
        .expect("forced");
    assert_eq!(forced.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert!(
        !managers(&forced).contains(&("bob".into(), "Apply".into())),
        "bob owned nothing else: {:?}",
        managers(&forced)
    );

    // Other writes are Update entries of their field manager.
    let merged = deployments
        .patch(
            "web",
            &PatchParams {
                field_manager: Some("labeller".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        owned_by(&merged, "labeller"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}})
    );
    let mut live = deployments.get("web").await.expect("live");
    live.spec.as_mut().expect("spec").min_ready_seconds = Some(5);
    let replaced = deployments
        .replace(
            "web",
            &PostParams {
                field_manager: Some("editor".into()),
                ..PostParams::default()
            },
            &live,
        )
        .await
        .expect("replaced");
    let entry = replaced
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|entry| entry.manager.as_deref() == Some("editor"))
        .expect("editor entry");
    assert_eq!(entry.operation.as_deref(), Some("Update"));
    assert_eq!(entry.api_version.as_deref(), Some("apps/v1"));
    assert!(entry.time.is_some());
    assert_eq!(
        owned_by(&replaced, "editor"),
        json!({"f:spec": {"f:minReadySeconds": {}}})
    );
    // Now alice's change of a field the editor owns is a conflict naming the editor's apiVersion.
    let mut raised = without_replicas.clone();
    raised["spec"]["minReadySeconds"] = json!(9);
    let conflict = api_error(
        deployments
            .patch("web", &alice, &Patch::Apply(&raised))
            .await
            .expect_err("conflict with an updater"),
    );
    assert_eq!(
        conflict.message,
        r#"Apply failed with 1 conflict: conflict with "editor" using apps/v1: .spec.minReadySeconds"#
    );
}
