//! `toolforge-jobs validate` end to end: the real binary on fixture files, with snapshots of what users see.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Runs `validate` from the file's directory, so diagnostics show the bare file name.
fn validate(path: &Path, extra: &[&str]) -> Output {
    Command::cargo_bin("toolforge-jobs")
        .unwrap()
        .current_dir(path.parent().unwrap())
        .env_remove("USER")
        .env("NO_COLOR", "1")
        .args(["validate", "--tool", "mytool", "-f"])
        .arg(path.file_name().unwrap())
        .args(extra)
        .output()
        .unwrap()
}

fn transcript(output: &Output) -> String {
    format!(
        "exit code: {}\n----- stdout -----\n{}----- stderr -----\n{}",
        output.status.code().unwrap(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn valid_fixtures_pass_and_list_their_jobs() {
    insta::glob!("fixtures/valid/*.yaml", |path| {
        let output = validate(path, &[]);
        assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
        insta::assert_snapshot!(transcript(&output));
    });
}

#[test]
fn invalid_fixtures_fail_with_located_diagnostics() {
    insta::glob!("fixtures/invalid/*.yaml", |path| {
        let output = validate(path, &[]);
        assert_eq!(output.status.code(), Some(2), "{}", transcript(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let name = path.file_name().unwrap().to_string_lossy();
        assert!(
            stderr.contains(&format!("{name}:")),
            "diagnostics must name the file:\n{stderr}"
        );
        insta::assert_snapshot!(transcript(&output));
    });
}

#[test]
fn the_example_file_is_valid() {
    let output = validate(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jobs.yaml"),
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", transcript(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for kind in ["one-off", "scheduled", "continuous"] {
        assert!(
            stdout.contains(kind),
            "the example should show a {kind} job:\n{stdout}"
        );
    }
}

#[test]
fn every_error_of_a_file_is_reported_in_one_run() {
    let output = validate(
        &fixtures().join("invalid/many-errors.yaml"),
        &["-o", "json"],
    );
    assert_eq!(output.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["valid"], false);
    let error_lines: Vec<u64> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|problem| problem["severity"] == "error")
        .map(|problem| problem["line"].as_u64().unwrap())
        .collect();
    // One or more errors in each of the seven jobs, each on the line of the offending key or job.
    for line in [5, 10, 14, 18, 19, 20, 25, 28, 29] {
        assert!(
            error_lines.contains(&line),
            "no error on line {line}: {error_lines:?}"
        );
    }
}

#[test]
fn json_output_of_a_valid_file_has_actual_schedules() {
    let output = validate(&fixtures().join("valid/schedules.yaml"), &["-o", "json"]);
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let daily = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|job| job["name"] == "f")
        .unwrap();
    assert_eq!(daily["schedule"], "@hourly");
    assert_eq!(daily["kind"], "scheduled");
    assert!(
        daily["schedule_actual"]
            .as_str()
            .unwrap()
            .ends_with(" * * * *")
    );
}

#[test]
fn deeply_nested_input_is_rejected_quickly() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("jobs.yaml");
    std::fs::write(
        &path,
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
    )
    .unwrap();
    let output = validate(&path, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", transcript(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("jobs.yaml:1:"));
}

#[test]
fn oversized_files_are_refused_before_parsing() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("jobs.yaml");
    std::fs::write(&path, "#".repeat(11 * 1024 * 1024)).unwrap();
    let output = validate(&path, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("larger than 10485760 bytes"));
}

#[test]
fn missing_default_file_says_where_it_looked() {
    let directory = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("toolforge-jobs")
        .unwrap()
        .current_dir(directory.path())
        .env("HOME", directory.path())
        .arg("validate")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("jobs.yaml") && stderr.contains("-f FILE"),
        "{stderr}"
    );
}

#[test]
fn the_default_file_is_jobs_yaml_in_the_current_directory() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(
        directory.path().join("jobs.yaml"),
        "- name: a\n  command: ./a\n  image: bookworm\n",
    )
    .unwrap();
    Command::cargo_bin("toolforge-jobs")
        .unwrap()
        .current_dir(directory.path())
        .arg("validate")
        .assert()
        .success()
        .stderr(predicates::str::contains("jobs.yaml is valid: 1 job"));
}

#[test]
fn endless_input_is_refused_without_reading_it_all() {
    let output = Command::cargo_bin("toolforge-jobs")
        .unwrap()
        .args(["validate", "-f", "/dev/zero"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn bytes_that_are_not_utf8_are_located() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("jobs.yaml");
    std::fs::write(
        &path,
        b"- name: a\n  command: ./caf\xe9\n  image: bookworm\n",
    )
    .unwrap();
    let output = validate(&path, &["-o", "json"]);
    assert_eq!(output.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let problem = &report["problems"][0];
    assert_eq!(problem["code"], "jobs::not_utf8");
    assert_eq!(
        (problem["line"].as_u64(), problem["column"].as_u64()),
        (Some(2), Some(17))
    );
}

#[test]
fn thousands_of_problems_are_reported_promptly() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("jobs.yaml");
    let jobs = (0..3000).fold(String::new(), |mut jobs, index| {
        let _ = write!(jobs, "- name: job-{index}\n  image: bookworm\n  retry: 9\n");
        jobs
    });
    std::fs::write(&path, jobs).unwrap();
    let output = Command::cargo_bin("toolforge-jobs")
        .unwrap()
        .args(["validate", "-f"])
        .arg(&path)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("more problems; `-o json` lists them all"),
        "{stderr}"
    );
    assert!(stderr.contains("is invalid: 6000 errors"), "{stderr}");
}

#[test]
fn the_tool_comes_from_the_kubeconfig_context_namespace() {
    let directory = tempfile::tempdir().unwrap();
    let kubeconfig = directory.path().join("config");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\ncurrent-context: toolforge\nclusters:\n- name: toolforge\n  cluster:\n    server: https://k8s.example.org:6443\ncontexts:\n- name: toolforge\n  context:\n    cluster: toolforge\n    namespace: tool-some-tool\n    user: tf-some-tool\n- name: other\n  context:\n    cluster: toolforge\n    namespace: tool-tf-test\n    user: tf-tf-test\nusers:\n- name: tf-some-tool\n  user: {}\n- name: tf-tf-test\n  user: {}\n",
    )
    .unwrap();
    std::fs::write(
        directory.path().join("jobs.yaml"),
        "- name: some-job\n  command: ./a\n  image: bookworm\n  schedule: '@daily'\n- name: cronjobtest\n  command: ./b\n  image: bookworm\n  schedule: '@daily'\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let output = Command::cargo_bin("toolforge-jobs")
            .unwrap()
            .current_dir(directory.path())
            .env_remove("USER")
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["validate", "-o", "json"])
            .args(extra)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        report["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|job| {
                job["schedule_actual"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    // reference/toolforge.md §1.5 test vectors: `some-tool`/`some-job` and `tf-test`/`cronjobtest` @daily.
    assert_eq!(run(&[])[0], "56 6 * * *");
    assert_eq!(run(&["--context", "other"])[1], "13 13 * * *");
}
