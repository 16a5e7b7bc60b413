//! The loader reads every valid fixture exactly as upstream does: PyYAML's `safe_load`, then Python's `str()`
//! of each value. Needs python3 with PyYAML (installed by `.ci/run` when missing); fails without them.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Context, SourceFile};

/// For each job: name → {key → str(value)} for the keys upstream passes as `--key str(value)`.
const UPSTREAM_VIEW: &str = r#"
import json, sys, yaml
result = {}
for path in sys.argv[1:]:
    jobs = {}
    for job in yaml.safe_load(open(path, encoding="utf-8")):
        jobs[str(job["name"])] = {k: str(v) for k, v in job.items()
                                  if k in ("command", "image", "schedule", "mem", "cpu", "filelog-stdout", "filelog-stderr", "trigger")}
    result[path] = jobs
print(json.dumps(result))
"#;

fn valid_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("examples/jobs.yaml")];
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures/valid"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    fixtures.sort();
    files.extend(fixtures);
    files
}

#[test]
fn loader_reads_values_as_pyyaml_and_str_do() {
    let files = valid_files();
    let output = Command::new("python3")
        .arg("-c")
        .arg(UPSTREAM_VIEW)
        .args(&files)
        .output()
        .expect("python3 with PyYAML is required for this test");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let upstream: BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>> =
        serde_json::from_slice(&output.stdout).unwrap();

    let images = ImageTable::bundled();
    let context = Context {
        tool: "mytool",
        images: &images,
        count_trigger_files: None,
    };
    let mut compared = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let loaded =
            config::load(SourceFile::new(file.display().to_string(), text), &context).unwrap();
        let expected = &upstream[&file.display().to_string()];
        assert_eq!(loaded.jobs.len(), expected.len(), "{}", file.display());
        for located in &loaded.jobs {
            let job = &located.job;
            let values = &expected[&job.name];
            let ours: BTreeMap<&str, Option<String>> = BTreeMap::from([
                ("command", job.command.clone()),
                ("image", Some(job.image.clone())),
                ("mem", job.mem.as_ref().map(|mem| mem.as_str().to_owned())),
                ("cpu", job.cpu.as_ref().map(|cpu| cpu.as_str().to_owned())),
                ("filelog-stdout", job.file_log.stdout.clone()),
                ("filelog-stderr", job.file_log.stderr.clone()),
                ("trigger", job.trigger.clone()),
                (
                    "schedule",
                    match &job.kind {
                        config::JobKind::Scheduled { schedule, .. } => {
                            Some(schedule.expression.clone())
                        }
                        _ => None,
                    },
                ),
            ]);
            for (key, ours) in ours {
                assert_eq!(
                    ours.as_ref(),
                    values.get(key),
                    "{} job `{}` key `{key}`",
                    file.display(),
                    job.name
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 100, "only {compared} values compared");
}
