//! The command-line frame: help text, global flags, completions and usage errors.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// A cluster address that counts the connections made to it (closing each at once), and kubeconfigs for it.
struct UnusedCluster {
    directory: tempfile::TempDir,
    server: String,
    connections: Arc<AtomicUsize>,
}

impl UnusedCluster {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = format!("http://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                counted.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Self {
            directory: tempfile::tempdir().unwrap(),
            server,
            connections,
        }
    }

    /// A kubeconfig whose one context, `ctx`, is this cluster with `namespace`.
    fn kubeconfig(&self, namespace: &str) -> PathBuf {
        let path = self
            .directory
            .path()
            .join(format!("kubeconfig-{namespace}"));
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n\
             clusters: [{{name: c, cluster: {{server: '{}'}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\n\
             contexts: [{{name: ctx, context: {{cluster: c, user: u, namespace: '{namespace}'}}}}]\n",
            self.server
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs the command against `kubeconfig`: its exit code and stderr.
    fn run(kubeconfig: &Path, args: &[&str]) -> (Option<i32>, String) {
        let output = toolforge_jobs()
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.code(), stderr)
    }

    /// Each command exits with 2 and its message, and none of them connects.
    fn assert_usage_errors(&self, namespace: &str, cases: &[(&[&str], &str)]) {
        let kubeconfig = self.kubeconfig(namespace);
        for (args, message) in cases {
            let (code, stderr) = Self::run(&kubeconfig, args);
            assert_eq!(code, Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(message), "{args:?}: {stderr}");
        }
        assert_eq!(
            self.connections.load(Ordering::SeqCst),
            0,
            "no request may be sent for an invalid name"
        );
    }
}

#[test]
fn invalid_tools_and_namespaces_fail_before_any_request() {
    let cluster = UnusedCluster::start();
    let long = "a".repeat(64);
    cluster.assert_usage_errors(
        "tool-mytool",
        &[
            (
                &["--tool", "x/../y", "list"],
                "error: invalid value 'x/../y' for '--tool <TOOL>': the tool name contains `/`; a tool name \
                 has only lower-case letters, digits and `-`, e.g. `mytool`",
            ),
            (
                &["--tool", "../x", "status"],
                "error: invalid value '../x' for '--tool <TOOL>': the tool name contains `.`",
            ),
            (
                &["--tool", &long, "list"],
                "the tool name is 64 characters long; at most 58 are allowed",
            ),
            (
                &["--namespace", "kube-system", "list"],
                "error: invalid value 'kube-system' for '--namespace <NAMESPACE>': `kube-system` is not a \
                 tool's namespace: a tool's namespace is `tool-<tool>`, e.g. `tool-mytool`; name the tool with \
                 `--tool <tool>` or its namespace with `--namespace tool-<tool>`",
            ),
            (
                &["--namespace", "default", "dump"],
                "`default` is not a tool's namespace",
            ),
            (
                &["--namespace", "tool-", "list"],
                "`tool-` is not a tool's namespace: the tool name is empty",
            ),
        ],
    );
    cluster.assert_usage_errors(
        "default",
        &[(
            &["list"],
            "error: the namespace of kubeconfig context `ctx` does not name a tool\n  caused by: `default` is \
             not a tool's namespace",
        )],
    );

    // With a valid tool the same kubeconfig does reach the cluster: the count above would have seen it.
    let (code, stderr) = UnusedCluster::run(
        &cluster.kubeconfig("default"),
        &["--tool", "mytool", "status"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(cluster.connections.load(Ordering::SeqCst) > 0);
}

#[test]
fn invalid_job_and_set_names_fail_before_any_request() {
    let cluster = UnusedCluster::start();
    cluster.assert_usage_errors(
        "tool-mytool",
        &[
            (
                &["show", "x/../y"],
                "error: invalid value 'x/../y' for '<NAME>': `x/../y` is not a valid job name: use lowercase \
                 letters, digits, `-` and `.`",
            ),
            (&["delete", ".."], "`..` is not a valid job name"),
            (&["logs", "A"], "`A` is not a valid job name"),
            (&["restart", "a/b"], "`a/b` is not a valid job name"),
            (&["wait", "a/b"], "`a/b` is not a valid job name"),
            (
                &["run", "a/b", "--command", "x", "--image", "python3.11"],
                "`a/b` is not a valid job name",
            ),
            (
                &["status", "--set", "../x"],
                "`../x` is not a valid set name",
            ),
        ],
    );
}

#[test]
fn upstreams_run_flags_that_cannot_be_are_usage_errors() {
    let cluster = UnusedCluster::start();
    cluster.assert_usage_errors(
        "tool-mytool",
        &[
            // Upstream's `-o` for `--filelog-stdout` is our global `--output` (docs/migrating.md).
            (
                &[
                    "run",
                    "a",
                    "--command",
                    "x",
                    "--image",
                    "python3.11",
                    "-o",
                    "out.log",
                ],
                "invalid value 'out.log' for '--output <OUTPUT>'",
            ),
            (
                &["run", "--command", "x", "--image", "python3.11"],
                "the following required arguments were not provided",
            ),
            (
                &[
                    "run",
                    "a",
                    "--command",
                    "x",
                    "--image",
                    "python3.11",
                    "--webservice",
                    "--continuous",
                ],
                "cannot be used with",
            ),
            (
                &[
                    "run",
                    "a",
                    "--command",
                    "x",
                    "--image",
                    "python3.11",
                    "--publish",
                    "/x",
                ],
                "invalid value '/x' for '--publish [<PUBLISH>]'",
            ),
            (&["logs", "a", "--since", "yesterday"], "is neither a time"),
        ],
    );
}

#[test]
fn no_jobs_file_or_a_missing_one_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("missing.yaml");
    let missing = missing.to_str().unwrap();
    // (arguments after the command, what stderr names)
    let cases: [(&[&str], &str); 2] = [
        (&[], "pass one with `-f FILE`"),
        (&["-f", missing], "missing.yaml"),
    ];
    for (args, named) in cases {
        for command in ["validate", "diff", "apply"] {
            let output = toolforge_jobs()
                .arg(command)
                .args(args)
                .current_dir(home.path())
                .env("HOME", home.path())
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            assert_eq!(output.status.code(), Some(2), "{command} {args:?}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains(named), "{command} {args:?}: {stderr}");
            assert!(output.stdout.is_empty(), "{command} {args:?}");
        }
    }
}
