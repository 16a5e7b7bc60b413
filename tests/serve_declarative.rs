//! `serve`'s own declarative routes: a whole jobs file validated, planned, and applied as `apply` applies it —
//! refused when the plan under the lock is not the one the caller saw, and reading the namespace once when
//! nobody wrote in between. Raw HTTP requests; no upstream CLI needed.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;
#[path = "support/upstream_cli.rs"]
mod upstream;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::Api;
use support::{NAMESPACE, sorted_strings};
use toolforge_local_cluster::{ContainerOutcome, Script};
use upstream::{Reply, Served};

const DECLARATIVE: &str = "/jobs/v1/tool/mytool/declarative";

const FILE: &str = "\
- name: web
  command: python3 -m http.server 8000
  image: python3.11
  continuous: true
- name: report
  command: ./report.sh
  image: bookworm
  schedule: '@daily'
";

async fn post(served: &Served, route: &str, body: &[u8]) -> Reply {
    let path = format!("{DECLARATIVE}/{route}");
    let json = [("Content-Type", "application/json")];
    let headers: &[(&str, &str)] = if route == "apply" { &json } else { &[] };
    served.request("POST", &path, headers, body).await
}

/// The apply's JSON lines.
fn lines(reply: &Reply) -> Vec<serde_json::Value> {
    reply
        .text()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn actions(plan: &serde_json::Value) -> Vec<(String, String)> {
    plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|action| {
            let field = |name: &str| action[name].as_str().unwrap().to_owned();
            (field("job"), field("action"))
        })
        .collect()
}

async fn apply(served: &Served, file: &str, plan: &serde_json::Value) -> Vec<serde_json::Value> {
    let body = serde_json::json!({"file": file, "plan": plan}).to_string();
    let reply = post(served, "apply", body.as_bytes()).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    lines(&reply)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_is_validated_planned_and_applied_as_the_plan_the_caller_saw() {
    let served = Served::with_tokens(Script::new(ContainerOutcome::RunForever)).await;
    let cluster = &served.cluster;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let cronjobs: Api<CronJob> = Api::namespaced(cluster.client.clone(), NAMESPACE);

    let invalid = post(
        &served,
        "validate",
        b"- name: web\n  command: x\n  image: nope\n",
    )
    .await;
    assert_eq!(invalid.status, 200, "{}", invalid.text());
    assert_eq!(invalid.json()["valid"], false);
    let problems = invalid.json()["problems"].as_str().unwrap().to_owned();
    assert!(problems.contains("jobs.yaml:3:"), "{problems}");
    assert!(problems.contains("nope"), "{problems}");
    let valid = post(&served, "validate", FILE.as_bytes()).await;
    assert_eq!(valid.json()["valid"], true, "{}", valid.text());

    let planned = post(&served, "plan", FILE.as_bytes()).await;
    assert_eq!(planned.status, 200, "{}", planned.text());
    let plan = planned.json();
    let mut expected = actions(&plan);
    expected.sort();
    assert_eq!(
        expected,
        [
            ("report".into(), "create".into()),
            ("web".into(), "create".into())
        ]
    );
    assert!(deployments.get_opt("web").await.unwrap().is_none());

    // A plan the caller saw that is not the one made under the lock: refused, nothing written.
    let stale = serde_json::json!({"actions": [{"job": "web", "action": "update"}]});
    let refused = apply(&served, FILE, &stale).await;
    let last = refused.last().unwrap();
    assert_eq!(last["event"], "error", "{refused:?}");
    assert!(
        last["error"][0]
            .as_str()
            .unwrap()
            .contains("The plan changed since it was made"),
        "{last}"
    );
    assert!(deployments.get_opt("web").await.unwrap().is_none());
    assert!(cronjobs.get_opt("report").await.unwrap().is_none());

    // The plan seen: applied, with the plan and the progress streamed before the end.
    let applied = apply(&served, FILE, &plan).await;
    let last = applied.last().unwrap();
    assert_eq!(last["event"], "done", "{applied:?}");
    assert_eq!(sorted_strings(&last["changed"]), ["report", "web"]);
    assert_eq!(applied[0]["event"], "plan");
    assert!(applied.iter().any(|line| line["event"] == "progress"));
    assert!(deployments.get_opt("web").await.unwrap().is_some());
    assert!(cronjobs.get_opt("report").await.unwrap().is_some());

    // A change: nobody wrote between the read and the lock (the inventory is the version read), so the namespace
    // is read once.
    let changed = FILE.replace("8000", "8080");
    let planned = post(&served, "plan", changed.as_bytes()).await;
    assert_eq!(
        actions(&planned.json()),
        [
            ("web".into(), "update".into()),
            ("report".into(), "unchanged".into())
        ]
    );
    cluster.local.reset_request_counts();
    let applied = apply(&served, &changed, &planned.json()).await;
    assert_eq!(
        applied.last().unwrap()["changed"],
        serde_json::json!(["web"]),
        "{applied:?}"
    );
    assert_eq!(cluster.local.request_count("list", "deployments"), 1);
    assert_eq!(cluster.local.request_count("list", "cronjobs"), 1);

    // Applied again: nothing to do.
    let planned = post(&served, "plan", changed.as_bytes()).await;
    let again = apply(&served, &changed, &planned.json()).await;
    assert_eq!(again.last().unwrap()["event"], "done", "{again:?}");
    assert_eq!(again.last().unwrap()["changed"], serde_json::json!([]));
}
