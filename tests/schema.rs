//! The checked-in JSON Schema is current, and the example and valid fixtures satisfy it.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::Path;

use assert_cmd::Command;
use yaml11::{Node, Value};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn checked_in_schema() -> String {
    std::fs::read_to_string(root().join("schema/jobs.schema.json")).unwrap()
}

#[test]
fn checked_in_schema_is_current() {
    let generated = Command::cargo_bin("toolforge-jobs")
        .unwrap()
        .arg("schema")
        .output()
        .unwrap();
    assert!(generated.status.success());
    assert_eq!(
        String::from_utf8(generated.stdout).unwrap(),
        checked_in_schema(),
        "schema/jobs.schema.json is stale: run `cargo run -- schema > schema/jobs.schema.json`"
    );
}

/// The JSON value PyYAML's `safe_load` followed by `json.dumps` would give.
fn to_json(node: &Node) -> serde_json::Value {
    match &node.value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(flag) => serde_json::Value::Bool(*flag),
        Value::Int(integer) => serde_json::json!(integer.to_i64().unwrap()),
        Value::Float(float) => serde_json::json!(float),
        Value::Seq(items) => items.iter().map(to_json).collect(),
        Value::Map(map) => map
            .entries()
            .iter()
            .map(|(key, value)| (key.value.python_str().unwrap(), to_json(value)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => serde_json::Value::String(other.python_str().unwrap()),
    }
}

#[test]
fn example_and_valid_fixtures_satisfy_the_schema() {
    let schema: serde_json::Value = serde_json::from_str(&checked_in_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut files = vec![root().join("examples/jobs.yaml")];
    for entry in std::fs::read_dir(root().join("tests/fixtures/valid")).unwrap() {
        files.push(entry.unwrap().path());
    }
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let document = yaml11::load(&text, &yaml11::Limits::default())
            .unwrap()
            .unwrap();
        let instance = to_json(&document);
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|error| error.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
    }
}

#[test]
fn schema_rejects_unknown_keys() {
    let schema: serde_json::Value = serde_json::from_str(&checked_in_schema()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let instance =
        serde_json::json!([{"name": "a", "command": "./a", "image": "bookworm", "memory": "1Gi"}]);
    assert!(!validator.is_valid(&instance));
}
