//! Field management on objects, without the API around it: the examples of Kubernetes' server-side apply
//! documentation (two appliers, a conflict, forcing, shared ownership, removal of co-owned fields) and the
//! entries updates leave.

use serde_json::{Value, json};

use super::*;
use crate::registry::resources;

fn deployments() -> &'static ResourceType {
    resources::find("apps", "v1", "deployments").expect("served")
}

fn config_maps() -> &'static ResourceType {
    resources::find("", "v1", "configmaps").expect("served")
}

fn deployment(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn apply_as(live: &Value, config: &Value, manager: &str, force: bool) -> Result<Value, ApiError> {
    apply(
        deployments(),
        live,
        config,
        Part::Main,
        manager,
        force,
        "2026-01-01T00:00:00Z".into(),
    )
}

/// The managers of an object, with the fields each owns as fieldsV1.
fn owners(object: &Value) -> Vec<(String, String, Value)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_owned(),
                        e["operation"].as_str().unwrap_or_default().to_owned(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn an_applier_owns_its_fields_in_the_fields_v1_encoding() {
    let object = apply_as(&json!({}), &deployment(2), "alice", false).expect("applies");
    let entry = &object["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "alice");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["time"], "2026-01-01T00:00:00Z");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
    );
}

#[test]
fn changing_a_field_another_applier_owns_is_a_conflict_unless_forced() {
    let live = apply_as(&json!({}), &deployment(2), "alice", false).expect("applies");
    let bob = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 3}});
    let error = apply_as(&live, &bob, "bob", false).expect_err("conflict");
    assert_eq!(error.code, 409);
    assert_eq!(error.reason, "Conflict");
    assert_eq!(
        error.message,
        r#"Apply failed with 1 conflict: conflict with "alice": .spec.replicas"#
    );
    assert_eq!(
        error.details["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".spec.replicas"}])
    );

    let forced = apply_as(&live, &bob, "bob", true).expect("forced");
    assert_eq!(forced["spec"]["replicas"], 3);
    let owners = owners(&forced);
    assert_eq!(owners[0].0, "alice");
    assert!(owners[0].2["f:spec"].get("f:replicas").is_none());
    assert_eq!(owners[1].0, "bob");
    assert_eq!(owners[1].2, json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn several_conflicts_are_listed_per_manager() {
    let live = apply_as(&json!({}), &deployment(2), "alice", false).expect("applies");
    let mut bob = deployment(5);
    bob["spec"]["template"]["spec"]["containers"][0]["image"] = json!("httpd");
    let error = apply_as(&live, &bob, "bob", false).expect_err("conflicts");
    assert_eq!(
        error.message,
        "Apply failed with 2 conflicts: conflicts with \"alice\"\n- .spec.replicas\n- .spec.template.spec.containers[name=\"c\"].image"
    );
    assert_eq!(error.details["causes"].as_array().map(Vec::len), Some(2));
}

#[test]
fn applying_the_same_value_shares_ownership_and_a_field_one_owner_drops_stays() {
    let live = apply_as(&json!({}), &deployment(2), "alice", false).expect("applies");
    let shared = apply_as(&live, &deployment(2), "bob", false).expect("same values");
    assert_eq!(owners(&shared).len(), 2);
    let mut without_replicas = deployment(2);
    without_replicas["spec"]
        .as_object_mut()
        .map(|spec| spec.remove("replicas"));
    let dropped = apply_as(&shared, &without_replicas, "alice", false).expect("applies");
    assert_eq!(dropped["spec"]["replicas"], 2, "bob still owns it");
    let alone = apply_as(&dropped, &without_replicas, "bob", false).expect("applies");
    assert!(
        alone["spec"].get("replicas").is_none(),
        "nobody owns it any more: {alone}"
    );
}

#[test]
fn a_keyed_element_an_applier_drops_goes_unless_someone_else_owns_it() {
    let mut two = deployment(1);
    two["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "c", "image": "nginx"}, {"name": "side", "image": "busybox"}]);
    let live = apply_as(&json!({}), &two, "alice", false).expect("applies");
    let one = apply_as(&live, &deployment(1), "alice", false).expect("applies");
    assert_eq!(
        one["spec"]["template"]["spec"]["containers"],
        json!([{"name": "c", "image": "nginx"}])
    );
    let shared = apply_as(&live, &two, "bob", false).expect("same values");
    let kept = apply_as(&shared, &deployment(1), "alice", false).expect("applies");
    assert_eq!(
        kept["spec"]["template"]["spec"]["containers"][1]["name"],
        "side"
    );
}

#[test]
fn managed_fields_in_an_applied_configuration_are_refused() {
    let mut config = deployment(1);
    config["metadata"]["managedFields"] = json!([]);
    let error = apply_as(&json!({}), &config, "alice", false).expect_err("refused");
    assert_eq!(error.code, 400);
    assert_eq!(error.message, "metadata.managedFields must be nil");
}

#[test]
fn a_no_op_apply_keeps_the_entry_time() {
    let live = apply_as(&json!({}), &deployment(2), "alice", false).expect("applies");
    let again = apply(
        deployments(),
        &live,
        &deployment(2),
        Part::Main,
        "alice",
        false,
        "2026-06-01T00:00:00Z".into(),
    )
    .expect("applies");
    assert_eq!(again, live);
}

fn update(old: Option<&Value>, new: &Value, manager: &str, part: Part, now: &str) -> Value {
    let mut new = new.clone();
    record_update(deployments(), old, &mut new, part, manager, now.into());
    new
}

#[test]
fn a_create_owns_what_it_set_with_dots_on_new_maps_and_the_server_set_fields_stripped() {
    let mut created = deployment(1);
    created["metadata"]["uid"] = json!("u");
    created["metadata"]["labels"] = json!({"app": "d"});
    created["status"] = json!({"replicas": 0});
    let object = update(None, &created, "kubectl-create", Part::Main, "t1");
    assert_eq!(
        owners(&object),
        [(
            "kubectl-create".to_owned(),
            "Update".to_owned(),
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
        )]
    );
}

#[test]
fn an_update_takes_what_it_changes_and_entries_of_the_same_manager_merge() {
    let created = update(None, &deployment(1), "kubectl-create", Part::Main, "t1");
    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(4);
    let scaled = update(Some(&created), &scaled, "kubectl-edit", Part::Main, "t2");
    let owners_now = owners(&scaled);
    assert_eq!(owners_now[0].0, "kubectl-create");
    assert!(owners_now[0].2["f:spec"].get("f:replicas").is_none());
    assert_eq!(owners_now[1].0, "kubectl-edit");
    assert_eq!(owners_now[1].2, json!({"f:spec": {"f:replicas": {}}}));

    let mut paused = scaled.clone();
    paused["spec"]["paused"] = json!(true);
    let paused = update(Some(&scaled), &paused, "kubectl-edit", Part::Main, "t3");
    let entries = paused["metadata"]["managedFields"]
        .as_array()
        .expect("list");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["time"], "t3");
    assert_eq!(
        entries[1]["fieldsV1"],
        json!({"f:spec": {"f:paused": {}, "f:replicas": {}}})
    );
}

#[test]
fn a_manager_left_owning_nothing_is_removed_and_nothing_changed_touches_nothing() {
    let created = update(None, &deployment(1), "creator", Part::Main, "t1");
    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(2);
    let scaled = update(Some(&created), &scaled, "scaler", Part::Main, "t2");
    let mut back = scaled.clone();
    back["spec"]["replicas"] = json!(3);
    let back = update(Some(&scaled), &back, "creator", Part::Main, "t3");
    let managers: Vec<String> = owners(&back).into_iter().map(|o| o.0).collect();
    assert_eq!(managers, ["creator"]);
    let unchanged = update(Some(&back), &back, "someone", Part::Main, "t4");
    assert_eq!(unchanged, back);
}

#[test]
fn status_writes_record_a_status_subresource_entry_and_main_writes_do_not_own_status() {
    let created = update(None, &deployment(1), "creator", Part::Main, "t1");
    let mut with_status = created.clone();
    with_status["status"] = json!({"replicas": 1});
    let main = update(Some(&created), &with_status, "sneaky", Part::Main, "t2");
    assert_eq!(owners(&main).len(), 1);
    let status = update(
        Some(&created),
        &with_status,
        "kube-controller-manager",
        Part::Status,
        "t2",
    );
    let entry = &status["metadata"]["managedFields"][1];
    assert_eq!(entry["subresource"], "status");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {".": {}, "f:replicas": {}}})
    );
}

#[test]
fn sent_managed_fields_replace_the_stored_ones_and_one_empty_entry_resets_them() {
    let created = update(None, &deployment(1), "creator", Part::Main, "t1");
    let mut sent = created.clone();
    sent["metadata"]["managedFields"] = json!([{"manager": "someone-else", "operation": "Apply",
        "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    let replaced = update(Some(&created), &sent, "editor", Part::Main, "t2");
    let managers: Vec<String> = owners(&replaced).into_iter().map(|o| o.0).collect();
    assert_eq!(managers, ["someone-else"]);

    sent["metadata"]["managedFields"] = json!([{}]);
    let reset = update(Some(&created), &sent, "editor", Part::Main, "t2");
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");

    sent["metadata"]["managedFields"] = json!([]);
    let kept = update(Some(&created), &sent, "editor", Part::Main, "t2");
    assert_eq!(kept, created);
}

#[test]
fn managers_come_from_the_field_manager_the_user_agent_or_the_component_writing() {
    let pods = resources::find("", "v1", "pods").expect("served");
    let pod = json!({});
    let options = |field_manager: Option<&str>, user_agent: Option<&str>| WriteOptions {
        field_manager: field_manager.map(str::to_owned),
        user_agent: user_agent.map(str::to_owned),
        ..WriteOptions::default()
    };
    let agent = "kubectl/v1.33.0 (linux/amd64) kubernetes/abc";
    assert_eq!(
        manager(&options(Some("alice"), Some(agent)), pods, Part::Main, &pod),
        "alice"
    );
    assert_eq!(
        manager(&options(None, Some(agent)), pods, Part::Main, &pod),
        "kubectl"
    );
    assert_eq!(
        manager(&options(None, None), pods, Part::Status, &pod),
        "kubelet"
    );
    assert_eq!(
        manager(&options(None, None), config_maps(), Part::Main, &pod),
        "kube-controller-manager"
    );
}
