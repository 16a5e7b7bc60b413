//! Benchmark: validating a 1 000-job jobs file (issue target: under 50 ms on one core).
//!
//! Reports the median of repeated in-process `config::load` runs, the median wall time of the whole
//! `toolforge-jobs validate` process, and as a baseline measured in the same run, PyYAML's `safe_load` of the
//! same file (the parsing step alone of upstream's `load`, without any validation).
//! Run with `cargo bench --bench validate`.

mod support;

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Context, SourceFile};

const JOBS: usize = 1_000;
const RUNS: usize = 21;

fn time<F: FnMut()>(mut run: F) -> Duration {
    support::median(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                run();
                start.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let text = support::jobs_file(JOBS);
    let images = ImageTable::bundled();
    let context = Context {
        tool: "benchtool",
        images: &images,
        count_trigger_files: None,
    };

    let in_process = time(|| {
        let loaded = config::load(SourceFile::new("jobs.yaml", text.as_str()), &context);
        assert!(loaded.is_ok_and(|file| file.jobs.len() == JOBS));
    });

    let directory =
        std::env::temp_dir().join(format!("toolforge-jobs-bench-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("temp dir");
    let path = directory.join("jobs.yaml");
    std::fs::write(&path, &text).expect("write bench file");
    let binary = env!("CARGO_BIN_EXE_toolforge-jobs");
    let process = time(|| {
        let status = Command::new(binary)
            .args(["validate", "--tool", "benchtool", "-o", "json", "-f"])
            .arg(&path)
            .output()
            .expect("run validate");
        assert!(status.status.success());
    });
    let pyyaml = support::pyyaml_safe_load(&path, RUNS);
    let _ = std::fs::remove_dir_all(&directory);

    let mut report = String::new();
    let _ = writeln!(
        report,
        "validate, {JOBS} jobs ({} bytes), median of {RUNS} runs:",
        text.len()
    );
    let _ = writeln!(
        report,
        "  config::load in process        {:>9.2} ms",
        in_process.as_secs_f64() * 1e3
    );
    let _ = writeln!(
        report,
        "  `toolforge-jobs validate` run  {:>9.2} ms",
        process.as_secs_f64() * 1e3
    );
    match pyyaml {
        Some(baseline) => {
            let _ = writeln!(
                report,
                "  baseline: PyYAML safe_load     {:>9.2} ms",
                baseline.as_secs_f64() * 1e3
            );
            let _ = writeln!(
                report,
                "  ratio load / PyYAML parse      {:>9.2}x",
                in_process.as_secs_f64() / baseline.as_secs_f64()
            );
        }
        None => report.push_str("  baseline: PyYAML not available\n"),
    }
    let _ = writeln!(
        report,
        "  target: under 50 ms -> {}",
        if in_process < Duration::from_millis(50) {
            "met"
        } else {
            "MISSED"
        }
    );
    #[expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]
    {
        print!("{report}");
    }
}
