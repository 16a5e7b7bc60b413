//! The command-line frame: help text, global flags, completions and usage errors.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use assert_cmd::Command;

fn toolforge_jobs() -> Command {
    Command::cargo_bin("toolforge-jobs").unwrap()
}

#[test]
fn help_lists_commands_global_flags_and_exit_codes() {
    let output = toolforge_jobs().arg("--help").output().unwrap();
    assert!(output.status.success());
    insta::assert_snapshot!(String::from_utf8(output.stdout).unwrap());
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef toolforge-jobs"),
        ("fish", "complete -c toolforge-jobs"),
    ] {
        let output = toolforge_jobs()
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(output.status.success(), "{shell}");
        let script = String::from_utf8(output.stdout).unwrap();
        assert!(
            script.contains(marker),
            "{shell} completion lacks `{marker}`"
        );
        assert!(
            script.contains("validate"),
            "{shell} completion lacks the `validate` command"
        );
    }
}

#[test]
fn usage_errors_exit_with_2() {
    let output = toolforge_jobs().arg("no-such-command").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let output = toolforge_jobs()
        .args(["validate", "--tool", "a", "--namespace", "tool-a"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "--tool and --namespace conflict"
    );
    let output = toolforge_jobs()
        .args(["local-cluster", "--clock-speed", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "a clock must run forward");
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a positive number"));
}

#[test]
fn schema_prints_json_schema() {
    let output = toolforge_jobs().arg("schema").output().unwrap();
    assert!(output.status.success());
    let schema: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(schema["type"], "array");
}

#[test]
fn man_prints_a_manual_page_with_every_command() {
    let output = toolforge_jobs().arg("man").output().unwrap();
    assert!(output.status.success());
    let page = String::from_utf8(output.stdout).unwrap();
    assert!(page.contains(".TH toolforge-jobs 1"), "{page}");
    for command in ["apply", "diff", "watch", "list", "logs", "local\\-cluster"] {
        assert!(
            page.contains(command),
            "`{command}` missing from the man page"
        );
    }
}
