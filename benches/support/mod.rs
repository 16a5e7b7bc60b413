//! What the benchmarks share: the generated 1 000-job file, medians, and PyYAML's `safe_load` as the baseline.

#![allow(dead_code, reason = "each benchmark uses the part it needs")]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A jobs file of `jobs` jobs: one-off, scheduled with explicit and `@daily` schedules, continuous with ports and
/// health checks, in turn.
pub(crate) fn jobs_file(jobs: usize) -> String {
    let mut text = String::from("# generated benchmark file\n");
    for index in 0..jobs {
        let job = match index % 4 {
            0 => format!(
                "- name: oneoff-{index}\n  command: ./migrate.sh --step {index}\n  image: python3.11\n  mem: 1Gi\n"
            ),
            1 => format!(
                "- name: cron-{index}\n  command: ./report.sh > out-{index}.txt\n  image: bookworm\n  schedule: \"{} */2 * * 1-5\"\n  retry: 2\n  emails: onfailure\n",
                index % 60
            ),
            2 => format!(
                "- name: daily-{index}\n  command: ./daily.sh\n  image: tf-python311\n  schedule: \"@daily\"\n  cpu: 0.5\n"
            ),
            _ => format!(
                "- name: bot-{index}\n  command: ./bot.py --shard {index}\n  image: python3.13\n  continuous: yes\n  port: {}\n  health-check-http: /healthz\n",
                8000 + index
            ),
        };
        text.push_str(&job);
    }
    text
}

pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The median time of `runs` PyYAML `safe_load`s of the file at `path`; `None` without python3 and PyYAML.
pub(crate) fn pyyaml_safe_load(path: &Path, runs: usize) -> Option<Duration> {
    Command::new("python3")
        .args([
            "-c",
            "import sys, time, yaml\ntext = open(sys.argv[1]).read()\nsamples = []\nfor _ in range(int(sys.argv[2])):\n    start = time.perf_counter(); yaml.safe_load(text); samples.append(time.perf_counter() - start)\nsamples.sort(); print(samples[len(samples) // 2])",
        ])
        .arg(path)
        .arg(runs.to_string())
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|seconds| seconds.trim().parse::<f64>().ok())
        .map(Duration::from_secs_f64)
}
