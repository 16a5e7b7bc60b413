//! The pure core stays pure: the modules of the domain model, the loader, rendering, planning and status take values and
//! return values. They never reach the file system, the network, processes, the environment, the clock or the
//! log, and never import the stages above them (cluster access, apply, the pipeline, the CLI). kube-core keeps
//! kube's types apart from its client the same way; here a build-time check over the source does it: a module
//! that needs I/O belongs to `pipeline/` or `cluster/` (docs/architecture.md).
//!
//! Test modules (`#[cfg(test)] mod …` at the end of a file) may do what they like: they check the core against
//! oracles such as Python.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::{Path, PathBuf};

/// The folders of `src/` that make up the pure core.
const PURE: [&str; 5] = ["model", "config", "render", "plan", "status"];

/// What pure code never names, each with why.
const FORBIDDEN: [(&str, &str); 22] = [
    ("std::fs", "the file system"),
    ("std::net", "the network"),
    ("std::process", "processes"),
    ("std::env", "the environment"),
    ("stdin()", "the terminal"),
    ("stdout()", "the terminal"),
    ("stderr()", "the terminal"),
    ("println!", "the terminal"),
    ("eprintln!", "the terminal"),
    ("tokio", "the async runtime"),
    (
        "kube::",
        "the Kubernetes client (k8s-openapi's types are fine)",
    ),
    ("Timestamp::now", "the clock (the caller passes the time)"),
    ("SystemTime", "the clock"),
    ("Instant::now", "the clock"),
    ("tracing::", "the log (return warnings instead)"),
    ("crate::cluster", "a stage above the core"),
    ("crate::apply", "a stage above the core"),
    ("crate::pipeline", "a stage above the core"),
    ("crate::wait", "a stage above the core"),
    ("crate::watch", "a stage above the core"),
    ("crate::output", "a stage above the core"),
    ("crate::cli", "a stage above the core"),
];

fn rust_files(directory: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// The file's code without its test module and without comments.
fn product_code(source: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut previous = "";
    for (index, line) in source.lines().enumerate() {
        let is_test_module = previous == "#[cfg(test)]"
            && (line.starts_with("mod ") || line.starts_with("pub(crate) mod "));
        if is_test_module {
            break;
        }
        previous = line;
        let code = line.split("//").next().unwrap_or_default();
        lines.push((index + 1, code));
    }
    lines
}

#[test]
fn the_core_does_no_io_and_imports_no_stage_above_it() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for folder in PURE {
        rust_files(&source.join(folder), &mut files);
    }
    assert!(
        files.len() > 40,
        "the core's files were not found: {files:?}"
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, code) in product_code(&text) {
            for (name, what) in FORBIDDEN {
                if code.contains(name) {
                    found.push(format!(
                        "{}:{line}: `{name}` ({what})",
                        file.strip_prefix(&source).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the pure core must not do I/O:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_forbidden_name_and_skips_test_modules() {
    let source = "use std::fs;\n// std::env in a comment\nfn f() {}\n#[cfg(test)]\nmod tests {\n    use std::process;\n}\n";
    let code = product_code(source);
    assert!(
        code.iter()
            .any(|(line, code)| *line == 1 && code.contains("std::fs"))
    );
    assert!(!code.iter().any(|(_, code)| code.contains("std::env")));
    assert!(!code.iter().any(|(_, code)| code.contains("std::process")));
}
