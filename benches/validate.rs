//! Benchmark: validating a 1 000-job jobs file (issue target: under 50 ms on one core), then a 10 000-job file
//! (the most a file may have; issue target: under 200 ms).
//!
//! For each size: the median of repeated in-process `config::load` runs, the median wall time of the whole
//! `toolforge-jobs validate` process, and as a baseline measured in the same run, PyYAML's `safe_load` of the
//! same file (the parsing step alone of upstream's `load`, without any validation).
//! Run with `cargo bench --bench validate`; `BENCH_SCALE_JOBS` changes the 10 000 (0 skips that part).

mod support;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Context, SourceFile};

const JOBS: usize = 1_000;
const SCALE_JOBS: usize = 10_000;
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

/// Times loading and validating a generated file of `jobs` jobs, against `target`, into `report`.
fn measure(jobs: usize, target: Duration, directory: &Path, report: &mut String) {
    let text = support::jobs_file(jobs);
    let images = ImageTable::bundled();
    let context = Context {
        tool: "benchtool",
        images: &images,
        count_trigger_files: None,
    };

    let in_process = time(|| {
        let loaded = config::load(SourceFile::new("jobs.yaml", text.as_str()), &context);
        assert!(loaded.is_ok_and(|file| file.jobs.len() == jobs));
    });

    let path = directory.join(format!("jobs-{jobs}.yaml"));
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

    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    let verdict = |duration: Duration| if duration < target { "met" } else { "MISSED" };
    let _ = writeln!(
        report,
        "validate, {jobs} jobs ({} bytes), median of {RUNS} runs:",
        text.len()
    );
    let _ = writeln!(
        report,
        "  config::load in process        {:>9.2} ms",
        ms(in_process)
    );
    let _ = writeln!(
        report,
        "  `toolforge-jobs validate` run  {:>9.2} ms",
        ms(process)
    );
    match pyyaml {
        Some(baseline) => {
            let _ = writeln!(
                report,
                "  baseline: PyYAML safe_load     {:>9.2} ms",
                ms(baseline)
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
        "  target: under {} ms -> in process {}, whole process {}",
        target.as_millis(),
        verdict(in_process),
        verdict(process)
    );
}

fn main() {
    let directory =
        std::env::temp_dir().join(format!("toolforge-jobs-bench-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("temp dir");
    let scale = std::env::var("BENCH_SCALE_JOBS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(SCALE_JOBS);

    let mut report = String::new();
    measure(JOBS, Duration::from_millis(50), &directory, &mut report);
    if scale > 0 {
        measure(scale, Duration::from_millis(200), &directory, &mut report);
    }
    let _ = std::fs::remove_dir_all(&directory);
    #[expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]
    {
        print!("{report}");
    }
}
