//! Benchmark: parse + render + plan of a 1 000-job file against an in-memory live state (issue target: under
//! 50 ms), with PyYAML's `safe_load` of the same file as the baseline measured in the same run (the first step of
//! upstream's `load`, which then re-reads every job from the API).
//!
//! The live state holds every job's objects as rendered and an inventory recording them, so the plan compares
//! all 1 000 jobs (hash, drift read-back, fingerprint) and finds nothing to do. Run with
//! `cargo bench --bench plan`.

mod support;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use toolforge_jobs::config::Job;
use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Context, SourceFile};
use toolforge_jobs::model::ToolName;
use toolforge_jobs::model::inventory::{self, Inventory, JobRecord};
use toolforge_jobs::plan::{self, LiveState, PlanOptions};
use toolforge_jobs::render::{self, Membership, RenderContext, Rendered, Workload};

const JOBS: usize = 1_000;
const RUNS: usize = 21;
const TOOL: &str = "benchtool";

fn context() -> RenderContext {
    RenderContext::toolforge(
        &ToolName::new(TOOL).expect("a valid tool name"),
        52_503,
        ImageTable::bundled(),
        Membership {
            set_name: "toolforge-jobs".to_owned(),
            applyset_id: inventory::applyset_id("toolforge-jobs", "tool-benchtool"),
        },
    )
}

/// Time spent per stage.
#[derive(Default)]
struct Stages {
    load: Duration,
    render: Duration,
    plan: Duration,
}

/// The file, loaded, rendered and planned against `live` and `inventory`; also the rendered set, which the caller
/// drops after the clock stops: `diff` never frees it (it exits right after printing the plan, `cli::diff`).
fn pipeline(
    text: &str,
    live: &LiveState,
    inventory: &Inventory,
) -> (plan::Plan, Vec<(Job, Rendered)>, Stages) {
    let mut stages = Stages::default();
    let start = Instant::now();
    let images = ImageTable::bundled();
    let validation = Context {
        tool: TOOL,
        images: &images,
        count_trigger_files: None,
    };
    let file = config::load(SourceFile::new("jobs.yaml", text), &validation).expect("valid file");
    stages.load = start.elapsed();
    let start = Instant::now();
    let context = context();
    let jobs = file.jobs.into_iter().map(|located| located.job);
    let desired = render::all(jobs, &context).expect("renders");
    stages.render = start.elapsed();
    let start = Instant::now();
    let plan = plan::compute(&desired, live, inventory, &context, &PlanOptions::pruning());
    stages.plan = start.elapsed();
    (plan, desired, stages)
}

/// What a previous apply left: every job's objects as rendered (with UIDs, one-offs complete) and the inventory.
fn applied_state(text: &str) -> (LiveState, Inventory) {
    let mut objects = Vec::new();
    let mut inventory = Inventory::default();
    let images = ImageTable::bundled();
    let validation = Context {
        tool: TOOL,
        images: &images,
        count_trigger_files: None,
    };
    let file = config::load(SourceFile::new("jobs.yaml", text), &validation).expect("valid");
    for (index, located) in file.jobs.iter().enumerate() {
        let rendered = render::objects(&located.job, &context()).expect("renders");
        let mut workload = serde_json::to_value(&rendered.workload).expect("serialises");
        workload["metadata"]["uid"] = serde_json::json!(format!("uid-{index}"));
        if matches!(rendered.workload, Workload::Job(_)) {
            workload["status"] =
                serde_json::json!({"conditions": [{"type": "Complete", "status": "True"}]});
        }
        objects.push(workload);
        if let Some(service) = &rendered.service {
            objects.push(serde_json::to_value(service).expect("serialises"));
        }
        inventory.jobs.insert(
            located.job.name.clone(),
            JobRecord {
                kind: rendered.canonical.kind,
                desired_hash: rendered.desired_hash.clone(),
                fingerprint: rendered.fingerprint.clone(),
                runs: Vec::new(),
            },
        );
    }
    let live = LiveState::from_json(objects).expect("live state");
    (live, inventory)
}

fn main() {
    let text = support::jobs_file(JOBS);

    let (empty, _, _) = pipeline(&text, &LiveState::default(), &Inventory::default());
    let (live, inventory) = applied_state(&text);

    let mut samples = Vec::new();
    let (mut loads, mut renders, mut plans) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..RUNS {
        let start = Instant::now();
        let (plan, desired, stages) = pipeline(&text, &live, &inventory);
        samples.push(start.elapsed());
        drop(desired);
        loads.push(stages.load);
        renders.push(stages.render);
        plans.push(stages.plan);
        last = Some(plan);
    }
    let ours = support::median(samples);
    let plan = last.expect("ran");

    let path = std::env::temp_dir().join(format!(
        "toolforge-jobs-plan-bench-{}.yaml",
        std::process::id()
    ));
    std::fs::write(&path, &text).expect("write");
    let pyyaml = support::pyyaml_safe_load(&path, RUNS);
    let _ = std::fs::remove_file(&path);

    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    let mut report = format!(
        "parse + render + plan, {JOBS} jobs, median of {RUNS} runs:\n  against an empty cluster: {} actions\n  against the applied state: {:.2} ms (load {:.2}, render {:.2}, plan {:.2}), counts {:?}\n",
        empty.actions.len(),
        ms(ours),
        ms(support::median(loads)),
        ms(support::median(renders)),
        ms(support::median(plans)),
        plan.counts,
    );
    match pyyaml {
        Some(baseline) => {
            let _ = writeln!(
                report,
                "  baseline, PyYAML safe_load of the same file: {:.2} ms ({:.1}x our whole pipeline)",
                baseline.as_secs_f64() * 1e3,
                baseline.as_secs_f64() / ours.as_secs_f64()
            );
        }
        None => report.push_str("  baseline: python3 with PyYAML not available\n"),
    }
    let _ = writeln!(
        report,
        "  target < 50 ms: {}",
        if ours < Duration::from_millis(50) {
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
