//! Custom resource definitions and custom resources through the real HTTP API: kube-rs' dynamic API for every
//! verb, watches, the status subresource, server-side apply, deletion of a definition with its objects, name
//! conflicts, the upstream jobs-api definitions, the state file and real kubectl.

#![expect(
    clippy::too_many_lines,
    reason = "scenario tests read top to bottom, one step after another"
)]

mod support;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use support::Kubectl;
use toolforge_local_cluster::{LocalCluster, Options};

async fn start_with(options: Options) -> (LocalCluster, kube::Client) {
    let cluster = LocalCluster::start(options).await.expect("cluster starts");
    let client = cluster.client().expect("client");
    (cluster, client)
}

async fn start() -> (LocalCluster, kube::Client) {
    start_with(Options::default()).await
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// A discovery document, legacy or (with `accept`) aggregated.
async fn discovery(client: &kube::Client, path: &str, accept: &str) -> Value {
    let request = axum::http::Request::builder()
        .uri(path)
        .header("Accept", accept)
        .body(Vec::new())
        .expect("request");
    client.request(request).await.expect("discovery")
}

fn api_error(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// `widgets.example.org`: namespaced, v1 (storage, status subresource) and v2 (served, preferred by discovery),
/// both with a printer column.
fn widgets_definition() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.org"},
        "spec": {"group": "example.org", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["gadgets"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
                {"name": "v2", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
            ]}
    }))
    .expect("valid definition")
}

fn widgets(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.org", version, "Widget"),
        "widgets",
    );
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn widget(name: &str, spec: &Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.org/v1", "kind": "Widget",
        "metadata": {"name": name, "labels": {"colour": "blue"}}, "spec": spec}))
    .expect("valid object")
}

fn condition(definition: &CustomResourceDefinition, kind: &str) -> Option<(String, String)> {
    definition
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

async fn define_widgets(client: &kube::Client) -> CustomResourceDefinition {
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let created = definitions
        .create(&PostParams::default(), &widgets_definition())
        .await
        .expect("definition created");
    assert_eq!(created.spec.names.singular.as_deref(), Some("widget"));
    assert_eq!(created.spec.names.list_kind.as_deref(), Some("WidgetList"));
    definitions
        .get("widgets.example.org")
        .await
        .expect("read back")
}

#[tokio::test]
async fn custom_resources_are_served_with_every_verb() {
    let (_cluster, client) = start().await;
    let definition = define_widgets(&client).await;
    assert_eq!(
        condition(&definition, "NamesAccepted"),
        Some(("True".into(), "NoConflicts".into()))
    );
    assert_eq!(
        condition(&definition, "Established"),
        Some(("True".into(), "InitialNamesAccepted".into()))
    );
    let status = definition.status.as_ref().expect("status");
    assert_eq!(
        status.stored_versions.as_deref(),
        Some(&["v1".to_owned()][..])
    );
    let accepted = status.accepted_names.as_ref().expect("accepted names");
    assert_eq!(
        (accepted.plural.as_str(), accepted.kind.as_str()),
        ("widgets", "Widget")
    );

    // Discovery lists the group, its versions by priority, and the resource with its names and subresources.
    let groups = discovery(&client, "/apis", "application/json").await;
    let group = groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == "example.org")
        .expect("listed");
    assert_eq!(group["preferredVersion"]["groupVersion"], "example.org/v2");
    let list = discovery(&client, "/apis/example.org/v1", "application/json").await;
    let entries: Vec<&str> = list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(entries, ["widgets", "widgets/status"]);
    let resource = &list["resources"][0];
    assert_eq!(
        (
            &resource["singularName"],
            &resource["shortNames"],
            &resource["categories"],
            &resource["kind"]
        ),
        (
            &json!("widget"),
            &json!(["wd"]),
            &json!(["gadgets"]),
            &json!("Widget")
        )
    );
    let aggregated = discovery(&client, "/apis", AGGREGATED).await;
    let group = aggregated["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == "example.org")
        .expect("aggregated");
    assert_eq!(group["versions"][0]["version"], "v2");
    assert_eq!(
        group["versions"][1]["resources"][0]["subresources"][0]["subresource"],
        "status"
    );

    let v1 = widgets(&client, "v1");
    let created = v1
        .create(
            &PostParams::default(),
            &widget("a", &json!({"size": 1, "free": {"form": [1, 2]}})),
        )
        .await
        .expect("created");
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.data["spec"]["free"]["form"], json!([1, 2]));
    v1.create(&PostParams::default(), &widget("b", &json!({"size": 2})))
        .await
        .expect("created");
    let mut other: DynamicObject = widget("c", &json!({"size": 3}));
    other.metadata.labels = None;
    v1.create(&PostParams::default(), &other)
        .await
        .expect("created");
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    v1.create(&dry, &widget("dry", &json!({})))
        .await
        .expect("dry run");
    let taken = v1
        .create(&PostParams::default(), &widget("a", &json!({})))
        .await
        .expect_err("exists");
    assert_eq!(api_error(taken).reason, "AlreadyExists");

    let blue = v1
        .list(&ListParams::default().labels("colour=blue"))
        .await
        .expect("listed");
    let names: Vec<_> = blue
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let by_name = v1
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .expect("listed");
    assert_eq!(by_name.items.len(), 1);
    let unsupported = v1
        .list(&ListParams::default().fields("spec.size=2"))
        .await
        .expect_err("only name and namespace");
    assert_eq!(api_error(unsupported).code, 400);
    let page = v1
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    assert_eq!(page.items.len(), 2);
    let rest = v1
        .list(
            &ListParams::default()
                .limit(2)
                .continue_token(page.metadata.continue_.as_deref().expect("more")),
        )
        .await
        .expect("second page");
    assert_eq!(rest.items.len(), 1);

    let merged = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}, "metadata": {"labels": {"shape": "round"}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(merged.data["spec"]["size"], 5);
    assert_eq!(merged.metadata.generation, Some(2));
    let relabelled = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"shape": "square"}}})),
        )
        .await
        .expect("label patch");
    assert_eq!(
        relabelled.metadata.generation,
        Some(2),
        "metadata changes do not count"
    );
    let operations: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/size", "value": 6}]))
            .expect("patch");
    let patched = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::<Value>::Json(operations),
        )
        .await
        .expect("json patch");
    assert_eq!(patched.data["spec"]["size"], 6);
    assert_eq!(patched.metadata.generation, Some(3));
    let strategic = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 7}})),
        )
        .await
        .expect_err("no strategic merge for custom resources");
    let strategic = api_error(strategic);
    assert_eq!(
        (strategic.code, strategic.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
    assert_eq!(
        strategic.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );

    // The status subresource: main writes ignore status, status writes ignore everything else.
    let ignored = v1
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .expect("main write");
    assert!(ignored.data.get("status").is_none(), "{:?}", ignored.data);
    let with_status = v1
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}, "spec": {"size": 100}})),
        )
        .await
        .expect("status write");
    assert_eq!(with_status.data["status"]["phase"], "Ready");
    assert_eq!(with_status.data["spec"]["size"], 6);
    assert_eq!(
        with_status.metadata.generation,
        Some(3),
        "status does not count"
    );

    // Another served version reads and writes the same objects (conversion strategy None).
    let v2 = widgets(&client, "v2");
    let seen = v2.get("a").await.expect("read through v2");
    assert_eq!(
        seen.types.as_ref().map(|t| t.api_version.as_str()),
        Some("example.org/v2")
    );
    assert_eq!(seen.data["spec"]["size"], 6);
    let listed = v2.list(&ListParams::default()).await.expect("listed");
    assert!(listed.items.iter().all(|o| {
        o.types
            .as_ref()
            .is_some_and(|t| t.api_version == "example.org/v2")
    }));
    v2.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 20}})),
    )
    .await
    .expect("written through v2");
    assert_eq!(v1.get("b").await.expect("read").data["spec"]["size"], 20);

    // Server-side apply creates, merges, and forgets what a manager no longer applies.
    let apply = |manager: &str| PatchParams::apply(manager);
    let applied = v1
        .patch(
            "applied",
            &apply("first"),
            &Patch::Apply(json!({"apiVersion": "example.org/v1", "kind": "Widget",
                "metadata": {"name": "applied"}, "spec": {"size": 1, "tags": ["a", "b"], "owner": "first"}})),
        )
        .await
        .expect("created by apply");
    assert_eq!(applied.data["spec"]["tags"], json!(["a", "b"]));
    v1.patch(
        "applied",
        &apply("second"),
        &Patch::Apply(json!({"apiVersion": "example.org/v1", "kind": "Widget",
            "metadata": {"name": "applied"}, "spec": {"extra": true}})),
    )
    .await
    .expect("second manager");
    let reapplied = v1
        .patch(
            "applied",
            &apply("first"),
            &Patch::Apply(json!({"apiVersion": "example.org/v1", "kind": "Widget",
                "metadata": {"name": "applied"}, "spec": {"size": 2, "tags": ["c"]}})),
        )
        .await
        .expect("first manager again");
    assert_eq!(
        reapplied.data["spec"],
        json!({"size": 2, "tags": ["c"], "extra": true})
    );

    // Owner references to custom resources are honoured by the garbage collector.
    let configmaps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let owner = v1.get("c").await.expect("owner");
    let dependent: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "owned",
        "ownerReferences": [{"apiVersion": "example.org/v1", "kind": "Widget", "name": "c",
            "uid": owner.metadata.uid}]}}))
    .expect("config map");
    configmaps
        .create(&PostParams::default(), &dependent)
        .await
        .expect("created");
    v1.delete("c", &DeleteParams::default())
        .await
        .expect("deleted");
    let gone = configmaps.get("owned").await.expect_err("collected");
    assert_eq!(api_error(gone).code, 404);

    // Finalizers hold a deleted custom resource until they are removed.
    v1.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.org/hold"]}})),
    )
    .await
    .expect("finalizer added");
    v1.delete("b", &DeleteParams::default())
        .await
        .expect("deleting");
    let held = v1.get("b").await.expect("still there");
    assert!(held.metadata.deletion_timestamp.is_some());
    v1.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("finalizer removed");
    assert_eq!(api_error(v1.get("b").await.expect_err("gone")).code, 404);
}

#[tokio::test]
async fn watches_see_custom_resources_come_change_and_go_and_the_definition_takes_them_along() {
    let (_cluster, client) = start().await;
    define_widgets(&client).await;
    let v1 = widgets(&client, "v1");
    v1.create(
        &PostParams::default(),
        &widget("first", &json!({"size": 1})),
    )
    .await
    .expect("created");
    let all: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.org", "v1", "Widget"),
            "widgets",
        ),
    );
    let version = all
        .list(&ListParams::default())
        .await
        .expect("listed")
        .metadata
        .resource_version
        .expect("version");
    let mut events = all
        .watch(&WatchParams::default(), &version)
        .await
        .expect("watching")
        .boxed();
    v1.create(
        &PostParams::default(),
        &widget("second", &json!({"size": 2})),
    )
    .await
    .expect("created");
    v1.patch(
        "second",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 3}})),
    )
    .await
    .expect("patched");
    v1.delete("second", &DeleteParams::default())
        .await
        .expect("deleted");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match events.try_next().await.expect("event").expect("open") {
            WatchEvent::Added(o) => seen.push(("ADDED", o.metadata.name)),
            WatchEvent::Modified(o) => seen.push(("MODIFIED", o.metadata.name)),
            WatchEvent::Deleted(o) => seen.push(("DELETED", o.metadata.name)),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    let second = Some("second".to_owned());
    assert_eq!(
        seen,
        [
            ("ADDED", second.clone()),
            ("MODIFIED", second.clone()),
            ("DELETED", second)
        ]
    );

    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    definitions
        .delete("widgets.example.org", &DeleteParams::default())
        .await
        .expect("definition deleted");
    match events.try_next().await.expect("event").expect("open") {
        WatchEvent::Deleted(o) => assert_eq!(o.metadata.name.as_deref(), Some("first")),
        other => panic!("expected the object's deletion, got {other:?}"),
    }
    let gone = definitions
        .get("widgets.example.org")
        .await
        .expect_err("definition gone with its objects");
    assert_eq!(api_error(gone).code, 404);
    let unserved = v1
        .list(&ListParams::default())
        .await
        .expect_err("not served");
    assert_eq!(api_error(unserved).code, 404);
    let aggregated = discovery(&client, "/apis", AGGREGATED).await;
    assert!(
        !aggregated.to_string().contains("example.org"),
        "the group left discovery"
    );

    // Re-created, it starts empty.
    define_widgets(&client).await;
    assert!(
        v1.list(&ListParams::default())
            .await
            .expect("served again")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_definition_with_a_custom_resource_holding_a_finalizer_waits_for_it() {
    let (_cluster, client) = start().await;
    define_widgets(&client).await;
    let v1 = widgets(&client, "v1");
    let mut held = widget("held", &json!({}));
    held.metadata.finalizers = Some(vec!["example.org/hold".into()]);
    v1.create(&PostParams::default(), &held)
        .await
        .expect("created");
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    definitions
        .delete("widgets.example.org", &DeleteParams::default())
        .await
        .expect("deleting");
    let terminating = definitions.get("widgets.example.org").await.expect("waits");
    assert_eq!(
        terminating.metadata.finalizers.as_deref(),
        Some(&["customresourcecleanup.apiextensions.k8s.io".to_owned()][..])
    );
    assert_eq!(
        condition(&terminating, "Terminating"),
        Some(("True".into(), "InstanceDeletionInProgress".into()))
    );
    let refused = v1
        .create(&PostParams::default(), &widget("late", &json!({})))
        .await
        .expect_err("no new objects while terminating");
    let refused = api_error(refused);
    assert_eq!(refused.code, 405);
    assert_eq!(
        refused.message,
        "create not allowed while custom resource definition is terminating"
    );
    v1.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("released");
    assert_eq!(
        api_error(
            definitions
                .get("widgets.example.org")
                .await
                .expect_err("gone")
        )
        .code,
        404
    );
}

#[tokio::test]
async fn invalid_and_conflicting_definitions() {
    let (_cluster, client) = start().await;
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut invalid = serde_json::to_value(widgets_definition()).expect("json");
    invalid["metadata"]["name"] = json!("widgets.example.com");
    invalid["spec"]["versions"][1]["storage"] = json!(true);
    invalid["spec"]["versions"][0]["schema"] = Value::Null;
    let invalid: CustomResourceDefinition = serde_json::from_value(invalid).expect("typed");
    let error = api_error(
        definitions
            .create(&PostParams::default(), &invalid)
            .await
            .expect_err("invalid"),
    );
    assert_eq!((error.code, error.reason.as_str()), (422, "Invalid"));
    assert!(
        error.message.starts_with(
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: ["
        ),
        "{}",
        error.message
    );
    for expected in [
        "metadata.name: Invalid value: \"widgets.example.com\": must be spec.names.plural+\".\"+spec.group",
        "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
        "spec.versions: Invalid value:",
        "must have exactly one version marked as storage version",
    ] {
        assert!(
            error.message.contains(expected),
            "{expected} in {}",
            error.message
        );
    }

    define_widgets(&client).await;
    // Another definition claiming the same kind in the group is not accepted, so not served.
    let clash: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "gizmos.example.org"},
        "spec": {"group": "example.org", "scope": "Cluster",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}
    }))
    .expect("typed");
    definitions
        .create(&PostParams::default(), &clash)
        .await
        .expect("created, but not accepted");
    let clash = definitions.get("gizmos.example.org").await.expect("read");
    assert_eq!(
        condition(&clash, "NamesAccepted"),
        Some(("False".into(), "KindConflict".into()))
    );
    assert_eq!(
        condition(&clash, "Established"),
        Some(("False".into(), "NotAccepted".into()))
    );
    let gizmos: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.org", "v1", "Widget"),
            "gizmos",
        ),
    );
    assert_eq!(
        api_error(
            gizmos
                .list(&ListParams::default())
                .await
                .expect_err("not served")
        )
        .code,
        404
    );
}

fn continuous_jobs(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("jobs-api.toolforge.org", "v1", "ContinuousJob"),
        "continuous-jobs",
    );
    Api::namespaced_with(client.clone(), namespace, &resource)
}

#[tokio::test]
async fn upstream_definitions_are_installed_by_default_and_tools_use_them_in_their_namespace() {
    let (cluster, client) = start().await;
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in [
        "continuous-jobs.jobs-api.toolforge.org",
        "scheduled-jobs.jobs-api.toolforge.org",
    ] {
        let definition = definitions.get(name).await.expect("installed");
        assert_eq!(
            condition(&definition, "Established").map(|c| c.0),
            Some("True".into()),
            "{name}"
        );
        assert_eq!(
            definition.spec.names.categories.as_deref(),
            Some(&["toolforge-jobs".to_owned()][..])
        );
        let schema = definition.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .expect("schema");
        assert_eq!(
            schema.x_kubernetes_preserve_unknown_fields,
            Some(true),
            "{name}"
        );
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "tool-a"}})).expect("namespace"),
        )
        .await
        .expect("namespace");
    let tool = cluster.tool_client("a").expect("tool client");
    let mine = continuous_jobs(&tool, "tool-a");
    let job: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "jobs-api.toolforge.org/v1", "kind": "ContinuousJob",
        "metadata": {"name": "web"},
        "spec": {"cmd": "./serve", "image": "python3.11", "replicas": 2, "anything": {"nested": [true]}},
        "status": {"kept": "without a status subresource"}
    }))
    .expect("object");
    let created = mine
        .create(&PostParams::default(), &job)
        .await
        .expect("a tool creates in its namespace");
    assert_eq!(
        created.data["spec"]["anything"]["nested"],
        json!([true]),
        "schemaless keeps all"
    );
    assert_eq!(
        created.data["status"]["kept"],
        "without a status subresource"
    );
    mine.list(&ListParams::default())
        .await
        .expect("a tool lists");
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::namespaced(client.clone(), "tool-a");
    quotas
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "q"},
                "spec": {"hard": {"count/continuous-jobs.jobs-api.toolforge.org": "1"}}}))
            .expect("quota"),
        )
        .await
        .expect("quota created");
    let mut second = job.clone();
    second.metadata.name = Some("second".into());
    let over = api_error(
        mine.create(&PostParams::default(), &second)
            .await
            .expect_err("over quota"),
    );
    assert_eq!(over.code, 403);
    assert!(
        over.message.contains(
            "exceeded quota: q, requested: count/continuous-jobs.jobs-api.toolforge.org=1"
        ),
        "{}",
        over.message
    );
    mine.delete("web", &DeleteParams::default())
        .await
        .expect("a tool deletes");
    mine.create(&PostParams::default(), &second)
        .await
        .expect("fits again");
    let elsewhere = continuous_jobs(&tool, "tool-b")
        .list(&ListParams::default())
        .await
        .expect_err("not another tool's namespace");
    assert_eq!(api_error(elsewhere).code, 403);
    let tool_definitions: Api<CustomResourceDefinition> = Api::all(tool);
    let refused = tool_definitions
        .delete(
            "continuous-jobs.jobs-api.toolforge.org",
            &DeleteParams::default(),
        )
        .await
        .expect_err("definitions are the admin's");
    assert_eq!(api_error(refused).code, 403);
    let refused = tool_definitions
        .create(&PostParams::default(), &widgets_definition())
        .await
        .expect_err("definitions are the admin's");
    assert_eq!(api_error(refused).code, 403);

    let (_bare, bare_client) = start_with(Options {
        upstream_crds: false,
        ..Options::default()
    })
    .await;
    let bare: Api<CustomResourceDefinition> = Api::all(bare_client.clone());
    assert!(
        bare.list(&ListParams::default())
            .await
            .expect("listed")
            .items
            .is_empty()
    );
    let unserved = continuous_jobs(&bare_client, "default")
        .list(&ListParams::default())
        .await
        .expect_err("not served");
    assert_eq!(api_error(unserved).code, 404);
}

#[tokio::test]
async fn definitions_and_custom_resources_survive_a_restart() {
    let directory = tempfile::tempdir().expect("temp dir");
    let state = directory.path().join("state.json");
    let options = || Options {
        state_file: Some(state.clone()),
        ..Options::default()
    };
    let (cluster, client) = start_with(options()).await;
    define_widgets(&client).await;
    widgets(&client, "v1")
        .create(&PostParams::default(), &widget("kept", &json!({"size": 9})))
        .await
        .expect("created");
    continuous_jobs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "jobs-api.toolforge.org/v1",
                "kind": "ContinuousJob", "metadata": {"name": "web"}, "spec": {"cmd": "x"}}))
            .expect("object"),
        )
        .await
        .expect("created");
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let before = definitions
        .get("continuous-jobs.jobs-api.toolforge.org")
        .await
        .expect("installed");
    drop(client);
    cluster.shutdown().await.expect("stopped");

    let (_cluster, client) = start_with(options()).await;
    let kept = widgets(&client, "v1").get("kept").await.expect("restored");
    assert_eq!(kept.data["spec"]["size"], 9);
    let web = continuous_jobs(&client, "default")
        .get("web")
        .await
        .expect("restored");
    assert_eq!(web.data["spec"]["cmd"], "x");
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let after = definitions
        .get("continuous-jobs.jobs-api.toolforge.org")
        .await
        .expect("still installed");
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "installing is idempotent"
    );
}

#[tokio::test]
async fn schemas_default_prune_and_validate_custom_resources() {
    let (_cluster, client) = start().await;
    let definitions: Api<CustomResourceDefinition> = Api::all(client.clone());
    let definition: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "gauges.example.org"},
        "spec": {"group": "example.org", "scope": "Namespaced", "names": {"plural": "gauges", "kind": "Gauge"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "unit": {"type": "string", "default": "cm"}}}}}}}]}
    }))
    .expect("typed");
    definitions
        .create(&PostParams::default(), &definition)
        .await
        .expect("created");
    let gauges: Api<DynamicObject> = Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.org", "v1", "Gauge"),
            "gauges",
        ),
    );
    let object = |spec: Value| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.org/v1", "kind": "Gauge",
            "metadata": {"name": "g"}, "spec": spec}))
        .expect("object")
    };
    let created = gauges
        .create(
            &PostParams::default(),
            &object(json!({"size": 2, "colour": "red"})),
        )
        .await
        .expect("created");
    assert_eq!(
        created.data["spec"],
        json!({"size": 2, "unit": "cm"}),
        "defaulted and pruned"
    );
    gauges
        .delete("g", &DeleteParams::default())
        .await
        .expect("deleted");
    let strict = PatchParams::apply("test").validation(kube::api::ValidationDirective::Strict);
    let unknown = api_error(
        gauges
            .patch(
                "g",
                &strict,
                &Patch::Apply(object(json!({"size": 2, "colour": "red"}))),
            )
            .await
            .expect_err("strict"),
    );
    assert_eq!(unknown.code, 400);
    assert!(
        unknown.message.contains("unknown field \"spec.colour\""),
        "{}",
        unknown.message
    );
    let invalid = api_error(
        gauges
            .create(&PostParams::default(), &object(json!({"size": 0})))
            .await
            .expect_err("invalid"),
    );
    assert_eq!(invalid.code, 422);
    assert!(
        invalid
            .message
            .starts_with("Gauge.example.org \"g\" is invalid: spec.size"),
        "{}",
        invalid.message
    );

    // A schema that is not structural (no types) is refused, with paths under the version's schema.
    let mut loose = serde_json::to_value(&definition).expect("json");
    loose["metadata"] = json!({"name": "loose.example.org"});
    loose["spec"]["names"] = json!({"plural": "loose", "kind": "Loose"});
    loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
        json!({"properties": {"spec": {"properties": {"size": {}}}}});
    let loose: CustomResourceDefinition = serde_json::from_value(loose).expect("typed");
    let refused = api_error(
        definitions
            .create(&PostParams::default(), &loose)
            .await
            .expect_err("not structural"),
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused
            .message
            .contains("spec.versions[0].schema.openAPIV3Schema."),
        "{}",
        refused.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_definitions_and_custom_resources() {
    let (cluster, _client) = start_with(Options {
        upstream_crds: false,
        ..Options::default()
    })
    .await;
    let kubectl = Kubectl::new(&cluster);
    let directory = kubectl.directory.path();
    let definition = directory.join("crd.yaml");
    std::fs::write(
        &definition,
        serde_json::to_string(&widgets_definition()).expect("json"),
    )
    .expect("written");
    // The discovery cache is filled before the definition exists: kubectl must notice the new type.
    kubectl.ok(&["get", "pods"]).await;
    let applied = kubectl
        .ok(&["apply", "-f", definition.to_str().expect("utf-8")])
        .await;
    assert!(
        applied
            .contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.org created"),
        "{applied}"
    );
    let listed = kubectl.ok(&["get", "crd"]).await;
    assert!(listed.contains("widgets.example.org"), "{listed}");
    let object = directory.join("cr.yaml");
    std::fs::write(
        &object,
        "apiVersion: example.org/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 4\n  tags: [a]\n",
    )
    .expect("written");
    let path = object.to_str().expect("utf-8");
    let first = kubectl.ok(&["apply", "-f", path]).await;
    assert!(first.contains("widget.example.org/w created"), "{first}");
    let again = kubectl.ok(&["apply", "-f", path]).await;
    assert!(again.contains("widget.example.org/w unchanged"), "{again}");
    std::fs::write(
        &object,
        "apiVersion: example.org/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 5\n",
    )
    .expect("written");
    let changed = kubectl.ok(&["apply", "-f", path]).await;
    assert!(
        changed.contains("widget.example.org/w configured"),
        "{changed}"
    );
    let json: Value =
        serde_json::from_str(&kubectl.ok(&["get", "widgets", "-o", "json"]).await).expect("json");
    assert_eq!(
        json["items"][0]["spec"],
        json!({"size": 5}),
        "apply removed the dropped list"
    );
    assert_eq!(json["items"][0]["kind"], "Widget");
    let table = kubectl.ok(&["get", "wd"]).await;
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SIZE"], "{table}");
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|row| row.split_whitespace().eq(["w", "5"])),
        "{table}"
    );
    let category = kubectl.ok(&["get", "gadgets"]).await;
    assert!(
        category.lines().any(|row| row.starts_with("w ")),
        "{category}"
    );
    let explained = kubectl.ok(&["explain", "widgets"]).await;
    assert!(explained.contains("Widget"), "{explained}");
    assert_eq!(
        json["items"][0]["apiVersion"], "example.org/v2",
        "the preferred version"
    );
    kubectl.ok(&["delete", "crd", "widgets.example.org"]).await;
    // kubectl trusts its discovery cache (as against a real server), so a stale one lists and gets a 404 ...
    let (success, _, stderr) = kubectl.run(&["get", "widgets"]).await;
    assert!(!success);
    assert!(
        stderr.contains("Unable to list \"example.org/v2, Resource=widgets\": the server could not find the requested resource"),
        "{stderr}"
    );
    // ... and a fresh one no longer finds the type.
    let (success, _, stderr) = Kubectl::new(&cluster).run(&["get", "widgets"]).await;
    assert!(!success);
    assert!(
        stderr.contains("the server doesn't have a resource type \"widgets\""),
        "{stderr}"
    );
}
