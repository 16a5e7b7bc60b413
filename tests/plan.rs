//! The plan, table-driven: every action and every guard of SPEC §5 from small states built out of rendered jobs
//! (ours, upstream's, foreign, another inventory's, hand-edited, TTL-cleaned), a property test that no plan writes
//! or deletes an object that is not ours, and a snapshot of the JSON form.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use proptest::prelude::*;
use serde_json::{Value, json};

use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Job, SourceFile};
use toolforge_jobs::model::ToolName;
use toolforge_jobs::model::inventory;
use toolforge_jobs::model::inventory::{Inventory, JobRecord, RunOutcome, RunRecord};
use toolforge_jobs::plan::{self, Action, Guard, LiveState, ObjectKind, Plan, PlanOptions};
use toolforge_jobs::render::{self, Membership, RenderContext, Rendered};

fn context() -> RenderContext {
    RenderContext::toolforge(
        &ToolName::new("mytool").unwrap(),
        52503,
        ImageTable::bundled(),
        Membership {
            set_name: "toolforge-jobs".to_owned(),
            applyset_id: inventory::applyset_id("toolforge-jobs", "tool-mytool"),
        },
    )
}

/// The jobs of a jobs file, rendered.
fn jobs(yaml: &str) -> Vec<(Job, Rendered)> {
    if yaml.trim().is_empty() {
        return Vec::new();
    }
    let images = ImageTable::bundled();
    let validation = config::Context {
        tool: "mytool",
        images: &images,
        count_trigger_files: None,
    };
    let file = config::load(
        SourceFile::new("jobs.yaml".to_owned(), yaml.to_owned()),
        &validation,
    )
    .unwrap();
    file.jobs
        .into_iter()
        .map(|located| {
            let rendered = render::objects(&located.job, &context()).unwrap();
            (located.job, rendered)
        })
        .collect()
}

type Transform = fn(&mut Value);

fn ours(_: &mut Value) {}

fn labels(object: &mut Value) -> &mut serde_json::Map<String, Value> {
    object["metadata"]["labels"].as_object_mut().unwrap()
}

fn upstream(object: &mut Value) {
    let metadata = object["metadata"].as_object_mut().unwrap();
    metadata.remove("annotations");
    labels(object).remove("jobs.toolforge.org/inventory");
    labels(object).remove("applyset.kubernetes.io/part-of");
}

fn foreign(object: &mut Value) {
    upstream(object);
    labels(object).remove("app.kubernetes.io/managed-by");
}

fn other_set(object: &mut Value) {
    labels(object).insert("jobs.toolforge.org/inventory".into(), json!("other"));
    labels(object).insert(
        "applyset.kubernetes.io/part-of".into(),
        json!("applyset-other-v1"),
    );
}

fn template(object: &mut Value) -> Option<&mut Value> {
    match object["kind"].as_str()? {
        "Job" | "Deployment" => Some(&mut object["spec"]["template"]),
        "CronJob" => Some(&mut object["spec"]["jobTemplate"]["spec"]["template"]),
        _ => None,
    }
}

fn mem_edited(object: &mut Value) {
    if let Some(template) = template(object) {
        template["spec"]["containers"][0]["resources"]["limits"]["memory"] = json!("2Gi");
    }
}

fn status(object: &mut Value, condition: &str) {
    if object["kind"] == "Job" {
        object["status"] = json!({"conditions": [{"type": condition, "status": "True"}]});
    }
}

fn succeeded(object: &mut Value) {
    status(object, "Complete");
}

fn failed(object: &mut Value) {
    status(object, "Failed");
}

fn legacy_selector(object: &mut Value) {
    upstream(object);
    if object["kind"] == "Deployment" {
        object["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] =
            json!("deployments");
    }
}

fn spawned_by_cron_job(object: &mut Value) {
    if object["kind"] == "Job" {
        object["metadata"]["name"] = json!("nightly-29170000");
        object["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "uid-cron"
        }]);
    }
}

fn no_service(object: &mut Value) {
    if object["kind"] == "Service" {
        *object = Value::Null;
    }
}

/// The live objects of a rendered job, with UIDs, transformed.
fn live_objects(rendered: &Rendered, transform: Transform) -> Vec<Value> {
    let mut objects = vec![serde_json::to_value(&rendered.workload).unwrap()];
    objects.extend(
        rendered
            .service
            .iter()
            .map(|service| serde_json::to_value(service).unwrap()),
    );
    objects.extend(rendered.record.clone());
    for object in &mut objects {
        let uid = format!(
            "uid-{}-{}",
            object["metadata"]["name"].as_str().unwrap(),
            object["kind"].as_str().unwrap().to_lowercase()
        );
        object["metadata"]["uid"] = json!(uid);
        transform(object);
    }
    objects.retain(|object| !object.is_null());
    objects
}

fn record(rendered: &Rendered) -> JobRecord {
    JobRecord {
        kind: rendered.canonical.kind,
        desired_hash: rendered.desired_hash.clone(),
        fingerprint: rendered.fingerprint.clone(),
        runs: Vec::new(),
    }
}

fn run(rendered: &Rendered, outcome: RunOutcome) -> RunRecord {
    RunRecord {
        fingerprint: rendered.fingerprint.clone(),
        job_uid: Some(format!("uid-{}-job", rendered.canonical.name)),
        started: "2026-11-30T12:00:00Z".parse().unwrap(),
        finished: Some("2026-11-30T12:01:00Z".parse().unwrap()),
        outcome,
    }
}

/// What was applied before: which jobs of the `applied` file are live (and how), which are recorded (and runs).
struct State {
    applied: &'static str,
    live: &'static [(&'static str, Transform)],
    recorded: &'static [&'static str],
    runs: &'static [(&'static str, RunOutcome)],
}

fn build(state: &State) -> (LiveState, Inventory) {
    let applied = jobs(state.applied);
    let find = |name: &str| {
        &applied
            .iter()
            .find(|(job, _)| job.name == name)
            .unwrap_or_else(|| panic!("no job `{name}` in the applied file"))
            .1
    };
    let mut objects = Vec::new();
    for (name, transform) in state.live {
        objects.extend(live_objects(find(name), *transform));
    }
    let mut inventory = Inventory::default();
    for name in state.recorded {
        inventory
            .jobs
            .insert((*name).to_owned(), record(find(name)));
    }
    for (name, outcome) in state.runs {
        let run = run(find(name), *outcome);
        inventory.jobs.get_mut(*name).unwrap().runs.push(run);
    }
    (
        LiveState::from_json(objects).unwrap().serving_records(),
        inventory,
    )
}

fn plan_of(state: &State, file: &str, options: &PlanOptions) -> Plan {
    let (live, inventory) = build(state);
    plan::compute(&jobs(file), &live, &inventory, &context(), options)
}

const BOT: &str = "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n";
const BOT_1G: &str =
    "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n  mem: 1Gi\n";
const BOT_TRIGGER: &str =
    "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n  trigger: 2\n";
const WEB: &str =
    "- name: web\n  command: ./web.py\n  image: python3.11\n  continuous: true\n  port: 8000\n";
const NIGHTLY: &str =
    "- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: \"0 3 * * *\"\n";
const NIGHTLY_5: &str =
    "- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: \"5 3 * * *\"\n";
const NIGHTLY_CONTINUOUS: &str =
    "- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  continuous: true\n";
const MIGRATE: &str = "- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n";
const MIGRATE_V2: &str = "- name: migrate\n  command: ./migrate.sh --v2\n  image: python3.11\n";
const MIGRATE_TRIGGER: &str =
    "- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n  trigger: \"2026-12\"\n";
const MIGRATE_ALWAYS: &str =
    "- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n  rerun: always\n";
const WAIT_THEN_BOT: &str = "- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n  wait: true\n\
- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n";
const WAIT_THEN_BOT_NIGHTLY: &str = "- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n  wait: true\n\
- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n\
- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: \"0 3 * * *\"\n";
const WAIT_V2_THEN_BOT: &str = "- name: migrate\n  command: ./migrate.sh --v2\n  image: python3.11\n  wait: true\n\
- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n";
const ALL: &str = "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n\
- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: \"0 3 * * *\"\n\
- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n";

const NOTHING: State = State {
    applied: "",
    live: &[],
    recorded: &[],
    runs: &[],
};

struct Case {
    name: &'static str,
    state: State,
    file: &'static str,
    options: fn() -> PlanOptions,
    /// `(job, action)`; `done` is written `done:<outcome>`.
    expected: &'static [(&'static str, &'static str)],
    /// A text the reason of the first expected job contains.
    reason: &'static str,
}

fn pruning() -> PlanOptions {
    PlanOptions::pruning()
}

fn action_name(action: Action) -> String {
    match action {
        Action::Done { outcome } => format!(
            "done:{}",
            serde_json::to_value(outcome).unwrap().as_str().unwrap()
        ),
        other => other.name().to_owned(),
    }
}

const CASES: &[Case] = &[
    Case {
        name: "a new continuous job is created",
        state: NOTHING,
        file: BOT,
        options: pruning,
        expected: &[("bot", "create")],
        reason: "new job",
    },
    Case {
        name: "a new one-off job is created and runs once",
        state: NOTHING,
        file: MIGRATE,
        options: pruning,
        expected: &[("migrate", "create")],
        reason: "runs once",
    },
    Case {
        name: "an applied job is unchanged",
        state: State {
            applied: ALL,
            live: &[("bot", ours), ("nightly", ours)],
            recorded: &["bot", "nightly"],
            runs: &[],
        },
        file: "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n\
- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: \"0 3 * * *\"\n",
        options: pruning,
        expected: &[("bot", "unchanged"), ("nightly", "unchanged")],
        reason: "up to date",
    },
    Case {
        name: "a new schedule updates the CronJob in place",
        state: State {
            applied: NIGHTLY,
            live: &[("nightly", ours)],
            recorded: &["nightly"],
            runs: &[],
        },
        file: NIGHTLY_5,
        options: pruning,
        expected: &[("nightly", "update")],
        reason: "`schedule` changed",
    },
    Case {
        name: "more memory updates the Deployment in place",
        state: State {
            applied: BOT,
            live: &[("bot", ours)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT_1G,
        options: pruning,
        expected: &[("bot", "update")],
        reason: "`mem` changed",
    },
    Case {
        name: "a new trigger restarts a continuous job",
        state: State {
            applied: BOT,
            live: &[("bot", ours)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT_TRIGGER,
        options: pruning,
        expected: &[("bot", "update")],
        reason: "triggers changed: the pods restart",
    },
    Case {
        name: "a change to a Deployment with a legacy selector replaces it",
        state: State {
            applied: BOT,
            live: &[("bot", legacy_selector)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT_1G,
        options: pruning,
        expected: &[("bot", "replace")],
        reason: "immutable: spec.selector",
    },
    Case {
        name: "a legacy selector alone is left alone",
        state: State {
            applied: BOT,
            live: &[("bot", legacy_selector)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT,
        options: pruning,
        expected: &[("bot", "unchanged")],
        reason: "up to date",
    },
    Case {
        name: "a changed one-off whose Job is live is replaced",
        state: State {
            applied: MIGRATE,
            live: &[("migrate", succeeded)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE_V2,
        options: pruning,
        expected: &[("migrate", "replace")],
        reason: "`command` changed (immutable: spec.template)",
    },
    Case {
        name: "a changed one-off whose Job was cleaned up runs again",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE_V2,
        options: pruning,
        expected: &[("migrate", "rerun")],
        reason: "definition changed since the last run",
    },
    Case {
        name: "a new trigger runs a one-off again",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE_TRIGGER,
        options: pruning,
        expected: &[("migrate", "rerun")],
        reason: "triggers changed since the last run",
    },
    Case {
        name: "a one-off cleaned up after success is done, not run again",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE,
        options: pruning,
        expected: &[("migrate", "done:succeeded")],
        reason: "succeeded",
    },
    Case {
        name: "a one-off that failed is done, with a hint",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Failed)],
        },
        file: MIGRATE,
        options: pruning,
        expected: &[("migrate", "done:failed")],
        reason: "failed",
    },
    Case {
        name: "a one-off whose end nobody saw is done, outcome unknown",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Unknown)],
        },
        file: MIGRATE,
        options: pruning,
        expected: &[("migrate", "done:unknown")],
        reason: "outcome unknown",
    },
    Case {
        name: "--retry-failed runs a failed one-off again",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Failed)],
        },
        file: MIGRATE,
        options: || PlanOptions {
            retry_failed: true,
            ..PlanOptions::pruning()
        },
        expected: &[("migrate", "rerun")],
        reason: "`--retry-failed`",
    },
    Case {
        name: "--retry-failed leaves a succeeded one-off done",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE,
        options: || PlanOptions {
            retry_failed: true,
            ..PlanOptions::pruning()
        },
        expected: &[("migrate", "done:succeeded")],
        reason: "succeeded",
    },
    Case {
        name: "--retry-failed replaces a live Job that failed",
        state: State {
            applied: MIGRATE,
            live: &[("migrate", failed)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Unknown)],
        },
        file: MIGRATE,
        options: || PlanOptions {
            retry_failed: true,
            ..PlanOptions::pruning()
        },
        expected: &[("migrate", "replace")],
        reason: "`--retry-failed`",
    },
    Case {
        name: "a live one-off with the same definition is unchanged",
        state: State {
            applied: MIGRATE,
            live: &[("migrate", ours)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Unknown)],
        },
        file: MIGRATE,
        options: pruning,
        expected: &[("migrate", "unchanged")],
        reason: "the Job of this definition is running",
    },
    Case {
        name: "a live one-off that finished is unchanged and says how it ended",
        state: State {
            applied: MIGRATE,
            live: &[("migrate", failed)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Unknown)],
        },
        file: MIGRATE,
        options: pruning,
        expected: &[("migrate", "unchanged")],
        reason: "ran with this definition: failed",
    },
    Case {
        name: "a live one-off whose run is recorded as ended is done, as once its Job is cleaned up",
        state: State {
            applied: MIGRATE,
            live: &[("migrate", succeeded)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE,
        options: pruning,
        expected: &[("migrate", "done:succeeded")],
        reason: "ran with this definition: succeeded",
    },
    Case {
        name: "--replace runs a done one-off again",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE,
        options: || PlanOptions {
            replace: vec!["migrate".into()],
            ..PlanOptions::pruning()
        },
        expected: &[("migrate", "rerun")],
        reason: "`--replace`",
    },
    Case {
        name: "--replace replaces a continuous job",
        state: State {
            applied: BOT,
            live: &[("bot", ours)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT,
        options: || PlanOptions {
            replace: vec!["bot".into()],
            ..PlanOptions::pruning()
        },
        expected: &[("bot", "replace")],
        reason: "`--replace`",
    },
    Case {
        name: "a reconcile nobody asked for leaves a done rerun: always one-off done",
        state: State {
            applied: MIGRATE_ALWAYS,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE_ALWAYS,
        options: || PlanOptions {
            ignore_rerun_always: true,
            ..PlanOptions::pruning()
        },
        expected: &[("migrate", "done:succeeded")],
        reason: "succeeded",
    },
    Case {
        name: "rerun: always runs a done one-off again",
        state: State {
            applied: MIGRATE_ALWAYS,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Succeeded)],
        },
        file: MIGRATE_ALWAYS,
        options: pruning,
        expected: &[("migrate", "rerun")],
        reason: "`rerun: always`",
    },
    Case {
        name: "a hand-edited Deployment is repaired",
        state: State {
            applied: BOT,
            live: &[("bot", mem_edited)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT,
        options: pruning,
        expected: &[("bot", "repair")],
        reason: "edited by hand: `mem`",
    },
    Case {
        name: "a hand-edited Deployment with a changed file is updated",
        state: State {
            applied: BOT,
            live: &[("bot", mem_edited)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT_1G,
        options: pruning,
        expected: &[("bot", "update")],
        reason: "also edited by hand",
    },
    Case {
        name: "a CronJob deleted by hand is repaired",
        state: State {
            applied: NIGHTLY,
            live: &[],
            recorded: &["nightly"],
            runs: &[],
        },
        file: NIGHTLY,
        options: pruning,
        expected: &[("nightly", "repair")],
        reason: "deleted by hand",
    },
    Case {
        name: "a Service deleted by hand is repaired",
        state: State {
            applied: WEB,
            live: &[("web", no_service)],
            recorded: &["web"],
            runs: &[],
        },
        file: WEB,
        options: pruning,
        expected: &[("web", "repair")],
        reason: "Service was deleted by hand",
    },
    Case {
        name: "a job removed from the file is deleted",
        state: State {
            applied: ALL,
            live: &[("bot", ours), ("nightly", ours)],
            recorded: &["bot", "nightly", "migrate"],
            runs: &[],
        },
        file: "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n\
- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n",
        options: pruning,
        expected: &[
            ("bot", "unchanged"),
            ("migrate", "done:unknown"),
            ("nightly", "delete"),
        ],
        reason: "up to date",
    },
    Case {
        name: "without pruning a removed job is left alone",
        state: State {
            applied: ALL,
            live: &[("bot", ours), ("nightly", ours)],
            recorded: &["bot", "nightly"],
            runs: &[],
        },
        file: BOT,
        options: PlanOptions::default,
        expected: &[("bot", "unchanged"), ("nightly", "ignored")],
        reason: "up to date",
    },
    Case {
        name: "an equal upstream object is adopted",
        state: State {
            applied: WEB,
            live: &[("web", upstream)],
            recorded: &[],
            runs: &[],
        },
        file: WEB,
        options: pruning,
        expected: &[("web", "adopt")],
        reason: "not restarted",
    },
    Case {
        name: "an upstream object that differs is a conflict",
        state: State {
            applied: BOT,
            live: &[("bot", upstream)],
            recorded: &[],
            runs: &[],
        },
        file: BOT_1G,
        options: pruning,
        expected: &[("bot", "conflict")],
        reason: "differs from the file in `mem`",
    },
    Case {
        name: "a foreign object of the same name is a conflict",
        state: State {
            applied: BOT,
            live: &[("bot", foreign)],
            recorded: &[],
            runs: &[],
        },
        file: BOT,
        options: pruning,
        expected: &[("bot", "conflict")],
        reason: "without the `app.kubernetes.io/managed-by: toolforge-jobs-framework` label",
    },
    Case {
        name: "a foreign object stays a conflict even when the inventory names the job",
        state: State {
            applied: BOT,
            live: &[("bot", foreign)],
            recorded: &["bot"],
            runs: &[],
        },
        file: BOT_1G,
        options: pruning,
        expected: &[("bot", "conflict")],
        reason: "without the",
    },
    Case {
        name: "another inventory's object is a conflict",
        state: State {
            applied: BOT,
            live: &[("bot", other_set)],
            recorded: &[],
            runs: &[],
        },
        file: BOT,
        options: pruning,
        expected: &[("bot", "conflict")],
        reason: "belongs to inventory `other`",
    },
    Case {
        name: "an upstream object in neither file nor inventory is ignored",
        state: State {
            applied: NIGHTLY,
            live: &[("nightly", upstream)],
            recorded: &[],
            runs: &[],
        },
        file: BOT,
        options: pruning,
        expected: &[("bot", "create"), ("nightly", "ignored")],
        reason: "new job",
    },
    Case {
        name: "foreign objects outside the file are not listed",
        state: State {
            applied: NIGHTLY,
            live: &[("nightly", foreign)],
            recorded: &[],
            runs: &[],
        },
        file: BOT,
        options: pruning,
        expected: &[("bot", "create")],
        reason: "new job",
    },
    Case {
        name: "Jobs spawned by a CronJob are not jobs of their own",
        state: State {
            applied: MIGRATE,
            live: &[("migrate", spawned_by_cron_job)],
            recorded: &[],
            runs: &[],
        },
        file: BOT,
        options: pruning,
        expected: &[("bot", "create")],
        reason: "new job",
    },
    Case {
        name: "a scheduled job that becomes continuous is replaced",
        state: State {
            applied: NIGHTLY,
            live: &[("nightly", ours)],
            recorded: &["nightly"],
            runs: &[],
        },
        file: NIGHTLY_CONTINUOUS,
        options: pruning,
        expected: &[("nightly", "replace")],
        reason: "kind changed: scheduled → continuous",
    },
    Case {
        name: "--job plans only the named jobs and prunes nothing",
        state: State {
            applied: ALL,
            live: &[("bot", ours), ("nightly", ours)],
            recorded: &["bot", "nightly"],
            runs: &[],
        },
        file: NIGHTLY_5,
        options: || PlanOptions {
            only_jobs: vec!["nightly".into()],
            ..PlanOptions::pruning()
        },
        expected: &[("nightly", "update")],
        reason: "`schedule`",
    },
    Case {
        name: "the jobs after a `wait` one-off whose Job failed are held",
        state: State {
            applied: WAIT_THEN_BOT,
            live: &[("migrate", failed)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Failed)],
        },
        file: WAIT_THEN_BOT,
        options: pruning,
        expected: &[("migrate", "done:failed"), ("bot", "held")],
        reason: "failed",
    },
    Case {
        name: "the jobs after a cleaned-up `wait` one-off that failed are held, prunes too",
        state: State {
            applied: WAIT_THEN_BOT_NIGHTLY,
            live: &[("bot", ours), ("nightly", ours)],
            recorded: &["migrate", "bot", "nightly"],
            runs: &[("migrate", RunOutcome::Failed)],
        },
        file: "- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n  wait: true\n\
- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n  mem: 1Gi\n",
        options: pruning,
        expected: &[
            ("migrate", "done:failed"),
            ("bot", "held"),
            ("nightly", "held"),
        ],
        reason: "failed",
    },
    Case {
        name: "--retry-failed runs a failed `wait` one-off again and releases the jobs after it",
        state: State {
            applied: WAIT_THEN_BOT,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Failed)],
        },
        file: WAIT_THEN_BOT,
        options: || PlanOptions {
            retry_failed: true,
            ..PlanOptions::pruning()
        },
        expected: &[("migrate", "rerun"), ("bot", "create")],
        reason: "`--retry-failed`",
    },
    Case {
        name: "a fixed `wait` one-off runs again and releases the jobs after it",
        state: State {
            applied: WAIT_THEN_BOT,
            live: &[("migrate", failed)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Failed)],
        },
        file: WAIT_V2_THEN_BOT,
        options: pruning,
        expected: &[("migrate", "replace"), ("bot", "create")],
        reason: "`command` changed",
    },
    Case {
        name: "the jobs after a running `wait` one-off wait for it",
        state: State {
            applied: WAIT_THEN_BOT,
            live: &[("migrate", ours)],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Unknown)],
        },
        file: WAIT_THEN_BOT,
        options: pruning,
        expected: &[("migrate", "unchanged"), ("bot", "create")],
        reason: "the jobs after it wait for it",
    },
    Case {
        name: "a failed one-off without `wait` holds nothing",
        state: State {
            applied: MIGRATE,
            live: &[],
            recorded: &["migrate"],
            runs: &[("migrate", RunOutcome::Failed)],
        },
        file: "- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n\
- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n",
        options: pruning,
        expected: &[("migrate", "done:failed"), ("bot", "create")],
        reason: "failed",
    },
];

#[test]
fn every_action_follows_its_rule() {
    for case in CASES {
        let plan = plan_of(&case.state, case.file, &(case.options)());
        let actual: Vec<(String, String)> = plan
            .actions
            .iter()
            .map(|action| (action.job.clone(), action_name(action.action)))
            .collect();
        let expected: Vec<(String, String)> = case
            .expected
            .iter()
            .map(|(job, action)| ((*job).to_owned(), (*action).to_owned()))
            .collect();
        assert_eq!(actual, expected, "{}: {:#?}", case.name, plan.actions);
        let first = &plan.actions[0];
        assert!(
            first.reason.contains(case.reason),
            "{}: reason {:?} does not contain {:?}",
            case.name,
            first.reason,
            case.reason
        );
        assert!(
            plan.refusals.is_empty(),
            "{}: {:?}",
            case.name,
            plan.refusals
        );
    }
}

#[test]
fn every_action_is_covered_by_the_table() {
    let covered: std::collections::BTreeSet<&str> = CASES
        .iter()
        .flat_map(|case| {
            case.expected
                .iter()
                .map(|(_, action)| action.split(':').next().unwrap())
        })
        .collect();
    for action in [
        "create",
        "unchanged",
        "update",
        "replace",
        "rerun",
        "done",
        "repair",
        "delete",
        "adopt",
        "conflict",
        "ignored",
        "held",
    ] {
        assert!(covered.contains(action), "no case for `{action}`");
    }
}

#[test]
fn a_failed_one_off_says_how_to_run_it_again() {
    let state = State {
        applied: MIGRATE,
        live: &[],
        recorded: &["migrate"],
        runs: &[("migrate", RunOutcome::Failed)],
    };
    let plan = plan_of(&state, MIGRATE, &pruning());
    assert_eq!(
        plan.actions[0].hint.as_deref(),
        Some("run it again with `--retry-failed` or `--replace migrate`")
    );
    assert!(!plan.has_changes());
}

#[test]
fn held_jobs_write_nothing_and_name_the_failed_barrier() {
    let state = State {
        applied: WAIT_THEN_BOT_NIGHTLY,
        live: &[("nightly", ours)],
        recorded: &["migrate", "nightly"],
        runs: &[("migrate", RunOutcome::Failed)],
    };
    let plan = plan_of(&state, WAIT_THEN_BOT, &pruning());
    assert_eq!(plan.held_by(), Some("migrate"));
    assert!(!plan.has_changes(), "{:#?}", plan.actions);
    assert!(
        plan.actions[0]
            .hint
            .as_deref()
            .unwrap()
            .contains("held until it succeeds"),
        "{:?}",
        plan.actions[0].hint
    );
    for held in &plan.actions[1..] {
        assert_eq!(held.action, Action::Held, "{held:#?}");
        assert!(held.writes.is_empty() && held.deletes.is_empty() && !held.records_run);
        assert_eq!(
            held.waits,
            vec![plan::Wait::Barrier {
                job: "migrate".to_owned()
            }]
        );
    }
    assert!(
        plan.action("bot")
            .unwrap()
            .reason
            .starts_with("held: `migrate` (wait) failed; then create: new job")
    );
    assert!(
        plan.action("nightly")
            .unwrap()
            .reason
            .contains("then delete")
    );
    assert_eq!(plan.counts["held"], 2);
    let json: Value = serde_json::from_str(&plan.to_json()).unwrap();
    assert_eq!(json["actions"][1]["action"], "held");
    assert_eq!(
        json["actions"][1]["waits"],
        json!([{"for": "barrier", "job": "migrate"}])
    );
    let text = toolforge_jobs::output::plan::render(&plan, &LiveState::default(), false);
    assert!(
        text.contains("held back by `migrate` (wait), which failed"),
        "{text}"
    );

    // A running `wait` one-off is waited for, not held.
    let running = State {
        applied: WAIT_THEN_BOT,
        live: &[("migrate", ours)],
        recorded: &["migrate"],
        runs: &[("migrate", RunOutcome::Unknown)],
    };
    let plan = plan_of(&running, WAIT_THEN_BOT, &pruning());
    assert_eq!(plan.held_by(), None);
    assert_eq!(
        plan.actions[0].waits,
        vec![plan::Wait::Completed { barrier: true }]
    );
}

#[test]
fn replacing_a_one_off_deletes_the_old_job_first_and_waits_for_it() {
    let state = State {
        applied: MIGRATE,
        live: &[("migrate", succeeded)],
        recorded: &["migrate"],
        runs: &[("migrate", RunOutcome::Succeeded)],
    };
    let plan = plan_of(&state, MIGRATE_V2, &pruning());
    let action = &plan.actions[0];
    assert_eq!(action.deletes.len(), 1);
    assert_eq!(
        action.deletes[0].object.uid.as_deref(),
        Some("uid-migrate-job")
    );
    assert_eq!(action.deletes[0].propagation, plan::Propagation::Background);
    assert!(
        matches!(&action.waits[0], plan::Wait::Deleted { object } if object.uid.as_deref() == Some("uid-migrate-job"))
    );
    assert_eq!(action.writes[0].verb, plan::WriteVerb::Create);
    assert!(action.records_run);
    assert_eq!(action.changes[0].field, "command");
    assert_eq!(
        action.changes[0].immutable.as_deref(),
        Some("spec.template")
    );
}

#[test]
fn updates_write_in_place_with_the_live_uid() {
    let state = State {
        applied: WEB,
        live: &[("web", ours)],
        recorded: &["web"],
        runs: &[],
    };
    let plan = plan_of(
        &state,
        "- name: web\n  command: ./web.py\n  image: python3.11\n  continuous: true\n  port: 8001\n",
        &pruning(),
    );
    let action = &plan.actions[0];
    assert_eq!(action.action, Action::Update);
    let writes: Vec<(ObjectKind, plan::WriteVerb, Option<&str>)> = action
        .writes
        .iter()
        .map(|write| (write.object.kind, write.verb, write.object.uid.as_deref()))
        .collect();
    assert_eq!(
        writes,
        [
            (
                ObjectKind::Deployment,
                plan::WriteVerb::Update,
                Some("uid-web-deployment")
            ),
            (
                ObjectKind::Service,
                plan::WriteVerb::Update,
                Some("uid-web-service")
            ),
            // The port is in the stored record too.
            (
                ObjectKind::ContinuousJob,
                plan::WriteVerb::Update,
                Some("uid-web-continuousjob")
            ),
        ]
    );
    assert!(action.deletes.is_empty());
}

/// An apply that changed `nightly` from scheduled to continuous was killed after it created the Deployment and
/// before it recorded it: the inventory still says scheduled, and the Deployment carries our labels.
fn interrupted_kind_change() -> (LiveState, Inventory) {
    let continuous = jobs(NIGHTLY_CONTINUOUS);
    let scheduled = jobs(NIGHTLY);
    let live = LiveState::from_json(live_objects(&continuous[0].1, ours))
        .unwrap()
        .serving_records();
    let mut inventory = Inventory::default();
    inventory
        .jobs
        .insert("nightly".to_owned(), record(&scheduled[0].1));
    (live, inventory)
}

#[test]
fn a_workload_an_interrupted_kind_change_left_is_deleted_not_a_conflict() {
    let (live, inventory) = interrupted_kind_change();
    for (file, expected) in [(NIGHTLY, "repair"), (NIGHTLY_CONTINUOUS, "create")] {
        let plan = plan::compute(&jobs(file), &live, &inventory, &context(), &pruning());
        let action = &plan.actions[0];
        assert_eq!(action_name(action.action), expected, "{file}: {action:?}");
        assert!(action.errors.is_empty(), "{action:?}");
        let mut deleted: Vec<_> = action
            .deletes
            .iter()
            .map(|delete| delete.object.uid.as_deref().unwrap())
            .collect();
        deleted.sort_unstable();
        if file == NIGHTLY {
            // Back to scheduled: the Deployment and its record go, the CronJob is made again.
            assert_eq!(
                deleted,
                ["uid-nightly-continuousjob", "uid-nightly-deployment"],
                "{action:?}"
            );
            assert!(
                action.reason.contains("an interrupted apply left"),
                "{}",
                action.reason
            );
            assert_eq!(action.writes[0].object.kind, ObjectKind::CronJob);
        } else {
            // Still continuous: the Deployment is ours and written over.
            assert!(deleted.is_empty(), "{action:?}");
            assert_eq!(action.writes[0].object.kind, ObjectKind::Deployment);
        }
    }
}

#[test]
fn a_workload_an_interrupted_apply_left_unrecorded_is_pruned_with_its_record() {
    let (live, _) = interrupted_kind_change();
    let plan = plan::compute(
        &jobs(BOT),
        &live,
        &Inventory::default(),
        &context(),
        &pruning(),
    );
    let nightly = plan
        .actions
        .iter()
        .find(|action| action.job == "nightly")
        .unwrap();
    assert_eq!(nightly.action, Action::Delete, "{nightly:?}");
    let mut deleted: Vec<_> = nightly
        .deletes
        .iter()
        .map(|delete| delete.object.uid.as_deref().unwrap())
        .collect();
    deleted.sort_unstable();
    assert_eq!(
        deleted,
        ["uid-nightly-continuousjob", "uid-nightly-deployment"]
    );
    let plan = plan::compute(
        &jobs(BOT),
        &live,
        &Inventory::default(),
        &context(),
        &PlanOptions::default(),
    );
    let nightly = plan
        .actions
        .iter()
        .find(|action| action.job == "nightly")
        .unwrap();
    assert_eq!(nightly.action, Action::Ignored, "pruning off: {nightly:?}");
}

#[test]
fn a_dropped_port_deletes_our_service() {
    let state = State {
        applied: WEB,
        live: &[("web", ours)],
        recorded: &["web"],
        runs: &[],
    };
    let plan = plan_of(
        &state,
        "- name: web\n  command: ./web.py\n  image: python3.11\n  continuous: true\n",
        &pruning(),
    );
    let action = &plan.actions[0];
    assert_eq!(action.action, Action::Update);
    assert_eq!(action.deletes.len(), 1);
    assert_eq!(action.deletes[0].object.kind, ObjectKind::Service);
}

#[test]
fn adopting_only_labels_the_live_objects() {
    let state = State {
        applied: WEB,
        live: &[("web", upstream)],
        recorded: &[],
        runs: &[],
    };
    let plan = plan_of(&state, WEB, &pruning());
    let action = &plan.actions[0];
    assert!(
        action
            .writes
            .iter()
            .all(|write| write.verb == plan::WriteVerb::Label)
    );
    assert!(action.deletes.is_empty());
    assert!(action.waits.is_empty());
}

fn guard_plan(
    applied: &'static str,
    recorded: &'static [&'static str],
    file: &str,
    options: &PlanOptions,
) -> Plan {
    let state = State {
        applied,
        live: &[],
        recorded,
        runs: &[],
    };
    plan_of(&state, file, options)
}

fn guards(plan: &Plan) -> Vec<Guard> {
    plan.refusals.iter().map(|refusal| refusal.guard).collect()
}

/// `(case, recorded jobs of ALL, file, options, expected refusals)`.
type GuardCase = (
    &'static str,
    &'static [&'static str],
    &'static str,
    PlanOptions,
    &'static [Guard],
);

#[test]
#[expect(clippy::too_many_lines, reason = "one table")]
fn guards_refuse_dangerous_prunes_unless_overridden() {
    let all = &["bot", "nightly", "migrate"];
    let cases: &[GuardCase] = &[
        (
            "empty file",
            all,
            "",
            PlanOptions::pruning(),
            &[Guard::EmptyFile],
        ),
        (
            "empty file allowed",
            all,
            "",
            PlanOptions {
                allow_empty: true,
                ..PlanOptions::pruning()
            },
            &[],
        ),
        ("empty file, no prune", all, "", PlanOptions::default(), &[]),
        (
            "empty file, empty inventory",
            &[],
            "",
            PlanOptions::pruning(),
            &[],
        ),
        (
            "deletes everything",
            &["nightly"],
            BOT,
            PlanOptions::pruning(),
            &[Guard::DeletesEverything],
        ),
        (
            "deletes everything allowed",
            &["nightly"],
            BOT,
            PlanOptions {
                allow_mass_delete: true,
                ..PlanOptions::pruning()
            },
            &[],
        ),
        (
            "deletes two of three",
            all,
            BOT,
            PlanOptions::pruning(),
            &[Guard::MassDelete],
        ),
        (
            "deletes two of three allowed",
            all,
            BOT,
            PlanOptions {
                allow_mass_delete: true,
                ..PlanOptions::pruning()
            },
            &[],
        ),
        (
            "deletes one of three",
            all,
            "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n\
- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n",
            PlanOptions::pruning(),
            &[],
        ),
        (
            "deletes one of two",
            &["bot", "nightly"],
            BOT,
            PlanOptions::pruning(),
            &[],
        ),
        (
            "unknown --job",
            all,
            ALL,
            PlanOptions {
                only_jobs: vec!["nope".into()],
                ..PlanOptions::pruning()
            },
            &[Guard::UnknownJob],
        ),
        (
            "unknown --replace",
            all,
            ALL,
            PlanOptions {
                replace: vec!["nope".into()],
                ..PlanOptions::pruning()
            },
            &[Guard::UnknownJob],
        ),
    ];
    for (name, recorded, file, options, expected) in cases {
        let plan = guard_plan(ALL, recorded, file, options);
        assert_eq!(guards(&plan), *expected, "{name}: {:#?}", plan.refusals);
        assert_eq!(plan.is_refused(), !expected.is_empty(), "{name}");
    }
}

#[test]
fn a_refusal_names_the_jobs_and_the_flag() {
    let plan = guard_plan(
        ALL,
        &["bot", "nightly", "migrate"],
        BOT,
        &PlanOptions::pruning(),
    );
    let refusal = &plan.refusals[0];
    assert_eq!(refusal.jobs, ["migrate", "nightly"]);
    assert_eq!(
        refusal.override_flag.as_deref(),
        Some("--allow-mass-delete")
    );
    assert_eq!(
        refusal.message,
        "refusing to delete 2 of the inventory's 3 jobs (more than half)"
    );
}

#[test]
fn counts_sum_to_the_actions() {
    let state = State {
        applied: ALL,
        live: &[("bot", ours), ("nightly", ours)],
        recorded: &["bot", "nightly", "migrate"],
        runs: &[("migrate", RunOutcome::Succeeded)],
    };
    let plan = plan_of(
        &state,
        "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n  mem: 1Gi\n\
- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n",
        &pruning(),
    );
    assert_eq!(plan.counts.values().sum::<usize>(), plan.actions.len());
    assert_eq!(plan.counts.get("update"), Some(&1));
    assert_eq!(plan.counts.get("done"), Some(&1));
    assert_eq!(plan.counts.get("delete"), Some(&1));
}

#[test]
fn the_json_plan_is_stable() {
    let state = State {
        applied: ALL,
        live: &[("bot", ours), ("nightly", ours)],
        recorded: &["bot", "nightly", "migrate"],
        runs: &[("migrate", RunOutcome::Failed)],
    };
    let file = "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n  mem: 1Gi\n\
- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n\
- name: web\n  command: ./web.py\n  image: python3.11\n  continuous: true\n  port: 8000\n";
    let plan = plan_of(&state, file, &pruning());
    let again = plan_of(&state, file, &pruning());
    assert_eq!(plan.to_json(), again.to_json());
    let value: Value = serde_json::from_str(&plan.to_json()).unwrap();
    assert_eq!(value["version"], 1);
    insta::assert_snapshot!("plan_json", plan.to_json());
}

#[test]
fn the_text_plan_shows_rows_changes_yaml_diffs_and_quota() {
    let state = State {
        applied: ALL,
        live: &[("bot", mem_edited), ("nightly", ours)],
        recorded: &["bot", "nightly", "migrate"],
        runs: &[("migrate", RunOutcome::Failed)],
    };
    let file = "- name: bot\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n  mem: 1Gi\n\
- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: \"5 3 * * *\"\n\
- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n\
- name: web\n  command: ./web.py\n  image: python3.11\n  continuous: true\n  port: 8000\n";
    let (live, inventory) = build(&state);
    let mut plan = plan::compute(&jobs(file), &live, &inventory, &context(), &pruning());
    let quota: k8s_openapi::api::core::v1::ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "tool-mytool"},
        "spec": {"hard": {"count/deployments.apps": "3", "limits.memory": "8Gi", "services": "1"}},
        "status": {"hard": {"count/deployments.apps": "3", "limits.memory": "8Gi", "services": "1"},
            "used": {"count/deployments.apps": "1", "limits.memory": "512Mi", "services": "1"}}
    }))
    .unwrap();
    plan::quota::check(&mut plan, &live, &[quota]);
    let text = toolforge_jobs::output::plan::render(&plan, &live, false);
    assert_eq!(
        text,
        toolforge_jobs::output::plan::render(&plan, &live, false)
    );
    assert!(!text.contains('\x1b'), "no colours unless asked");
    assert!(toolforge_jobs::output::plan::render(&plan, &live, true).contains("\x1b[33mupdate"));
    insta::assert_snapshot!("plan_text", text);
}

// --- Property: no plan touches an object that is not ours. ---

/// Job definitions the generated states draw from: per name, a few variants of different kinds.
fn variants() -> Vec<Vec<(Job, Rendered)>> {
    let definitions = [
        [
            "- name: a\n  command: ./a\n  image: python3.11\n  continuous: true\n",
            "- name: a\n  command: ./a\n  image: python3.11\n  continuous: true\n  port: 80\n",
            "- name: a\n  command: ./a\n  image: python3.11\n  schedule: \"@daily\"\n",
        ],
        [
            "- name: b\n  command: ./b\n  image: python3.11\n",
            "- name: b\n  command: ./b2\n  image: python3.11\n",
            "- name: b\n  command: ./b\n  image: python3.11\n  rerun: always\n",
        ],
        [
            "- name: c\n  command: ./c\n  image: bookworm\n  schedule: \"0 * * * *\"\n",
            "- name: c\n  command: ./c\n  image: bookworm\n  schedule: \"5 * * * *\"\n",
            "- name: c\n  command: ./c\n  image: bookworm\n",
        ],
        [
            "- name: d\n  command: ./d\n  image: python3.11\n  continuous: true\n  port: 8000\n",
            "- name: d\n  command: ./d\n  image: python3.11\n  continuous: true\n  mem: 1Gi\n",
            "- name: d\n  command: ./d\n  image: python3.11\n  trigger: x\n",
        ],
    ];
    definitions
        .iter()
        .map(|variants| variants.iter().map(|yaml| jobs(yaml).remove(0)).collect())
        .collect()
}

const TRANSFORMS: [Transform; 7] = [
    ours,
    upstream,
    foreign,
    other_set,
    mem_edited,
    failed,
    legacy_selector,
];

/// Per name: desired variant (or none), live variant and transform (or none), recorded variant (or none), run.
type NameState = (
    Option<usize>,
    Option<(usize, usize)>,
    Option<usize>,
    Option<usize>,
);

fn name_state() -> impl Strategy<Value = NameState> {
    (
        proptest::option::of(0..3usize),
        proptest::option::of((0..3usize, 0..TRANSFORMS.len())),
        proptest::option::of(0..3usize),
        proptest::option::of(0..3usize),
    )
}

fn options() -> impl Strategy<Value = PlanOptions> {
    (any::<[bool; 6]>(), proptest::option::of(0..4usize)).prop_map(|(flags, named)| {
        let name = named.map(|index| ["a", "b", "c", "d"][index].to_owned());
        PlanOptions {
            only_jobs: if flags[0] {
                name.iter().cloned().collect()
            } else {
                Vec::new()
            },
            replace: if flags[1] {
                name.iter().cloned().collect()
            } else {
                Vec::new()
            },
            retry_failed: flags[2],
            prune: flags[3],
            allow_mass_delete: flags[4],
            ignore_rerun_always: flags[5],
            allow_empty: flags[4],
        }
    })
}

fn is_ours(object: &Value) -> bool {
    let labels = &object["metadata"]["labels"];
    labels["app.kubernetes.io/managed-by"] == "toolforge-jobs-framework"
        && labels
            .get("jobs.toolforge.org/inventory")
            .is_none_or(|set| set == "toolforge-jobs")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn no_plan_writes_or_deletes_an_object_that_is_not_ours(
        states in proptest::collection::vec(name_state(), 4),
        options in options(),
    ) {
        thread_local! {
            static VARIANTS: Vec<Vec<(Job, Rendered)>> = variants();
        }
        VARIANTS.with(|variants| {
            let mut desired = Vec::new();
            let mut objects = Vec::new();
            let mut inventory = Inventory::default();
            for (index, (want, live, recorded, run_outcome)) in states.iter().enumerate() {
                let name_variants = &variants[index];
                if let Some(variant) = want {
                    desired.push(name_variants[*variant].clone());
                }
                if let Some((variant, transform)) = live {
                    objects.extend(live_objects(&name_variants[*variant].1, TRANSFORMS[*transform]));
                }
                if let Some(variant) = recorded {
                    let rendered = &name_variants[*variant].1;
                    let mut job_record = record(rendered);
                    if let Some(outcome) = run_outcome {
                        let outcome = [RunOutcome::Succeeded, RunOutcome::Failed, RunOutcome::Unknown][*outcome];
                        job_record.runs.push(run(rendered, outcome));
                    }
                    inventory.jobs.insert(rendered.canonical.name.clone(), job_record);
                }
            }
            let live = LiveState::from_json(objects.clone()).unwrap();
            let plan = plan::compute(&desired, &live, &inventory, &context(), &options);
            let find = |kind: ObjectKind, name: &str| {
                objects.iter().find(|object| {
                    object["metadata"]["name"] == name && object["kind"] == format!("{kind:?}")
                })
            };
            for action in &plan.actions {
                for delete in &action.deletes {
                    let object = find(delete.object.kind, &delete.object.name);
                    prop_assert!(object.is_some_and(is_ours), "deletes {:?}: {:#?}", delete.object, action);
                }
                for write in &action.writes {
                    if let Some(object) = find(write.object.kind, &write.object.name) {
                        prop_assert!(is_ours(object), "writes {:?}: {:#?}", write.object, action);
                    }
                    if write.verb == plan::WriteVerb::Create {
                        // A create never collides with a live object, unless the action deletes it first.
                        let deleted_first = action.deletes.iter().any(|delete| {
                            delete.object.kind == write.object.kind && delete.object.name == write.object.name
                        });
                        prop_assert!(
                            deleted_first || find(write.object.kind, &write.object.name).is_none(),
                            "creates over {:?}: {:#?}", write.object, action
                        );
                    } else {
                        prop_assert!(find(write.object.kind, &write.object.name).is_some());
                    }
                }
                if action.action == Action::Conflict {
                    prop_assert!(action.writes.is_empty() && action.deletes.is_empty());
                }
            }
            // One row per name; every planned job of the file has its row, in file order, first.
            let names: Vec<&str> = plan.actions.iter().map(|action| action.job.as_str()).collect();
            let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
            prop_assert_eq!(unique.len(), names.len());
            let planned: Vec<&str> = desired
                .iter()
                .map(|(job, _)| job.name.as_str())
                .filter(|name| options.only_jobs.is_empty() || options.only_jobs.iter().any(|only| only == name))
                .collect();
            prop_assert_eq!(&names[..planned.len()], &planned[..]);
            // A foreign object of the job's own kind is always a conflict.
            for (job, rendered) in &desired {
                let kind = match rendered.canonical.kind {
                    toolforge_jobs::model::Kind::OneOff => ObjectKind::Job,
                    toolforge_jobs::model::Kind::Scheduled => ObjectKind::CronJob,
                    _ => ObjectKind::Deployment,
                };
                let clash = find(kind, &job.name).is_some_and(|object| {
                    object["metadata"]["labels"]["app.kubernetes.io/managed-by"].is_null()
                });
                if clash && let Some(action) = plan.action(&job.name) {
                    prop_assert_eq!(action.action, Action::Conflict);
                }
            }
            // Deterministic: the same inputs, listed in any order, give the same JSON.
            let again = plan::compute(&desired, &live, &inventory, &context(), &options);
            prop_assert_eq!(plan.to_json(), again.to_json());
            let mut reversed = objects.clone();
            reversed.reverse();
            let reversed = LiveState::from_json(reversed).unwrap();
            let again = plan::compute(&desired, &reversed, &inventory, &context(), &options);
            prop_assert_eq!(plan.to_json(), again.to_json());
            Ok(())
        })?;
    }
}

#[test]
fn a_new_trigger_runs_a_scheduled_job_once_now() {
    let state = State {
        applied: NIGHTLY,
        live: &[("nightly", ours)],
        recorded: &["nightly"],
        runs: &[],
    };
    let plan = plan_of(
        &state,
        "- name: nightly\n  command: ./nightly.sh\n  image: bookworm\n  schedule: \"0 3 * * *\"\n  trigger: 1\n",
        &pruning(),
    );
    let action = &plan.actions[0];
    assert_eq!(action.action, Action::Update);
    assert_eq!(action.reason, "triggers changed: runs once now");
    assert!(action.runs_now);
    assert!(action.changes.is_empty());
}

#[test]
fn going_back_to_a_definition_that_already_ran_does_not_run_it_again() {
    // migrate ran (succeeded), then migrate --v2 was applied and its Job is still live; the file goes back.
    let v1 = &jobs(MIGRATE)[0].1;
    let v2 = &jobs(MIGRATE_V2)[0].1;
    let mut inventory = Inventory::default();
    let mut job_record = record(v2);
    job_record.runs = vec![run(v1, RunOutcome::Succeeded), run(v2, RunOutcome::Unknown)];
    inventory.jobs.insert("migrate".to_owned(), job_record);
    let live = LiveState::from_json(live_objects(v2, ours)).unwrap();
    let plan = plan::compute(&jobs(MIGRATE), &live, &inventory, &context(), &pruning());
    assert_eq!(
        plan.actions[0].action,
        Action::Done {
            outcome: RunOutcome::Succeeded
        }
    );
    assert!(plan.actions[0].deletes.is_empty());
}

#[test]
fn writes_beyond_the_namespace_limits_are_plan_errors() {
    let limit_range: k8s_openapi::api::core::v1::LimitRange = serde_json::from_value(json!({
        "metadata": {"name": "tool-mytool"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1", "memory": "4Gi"}}]}
    }))
    .unwrap();
    let limits = render::limits::ContainerLimits::from_limit_range(&limit_range);
    let desired = jobs(
        "- name: big\n  command: ./big\n  image: python3.11\n  continuous: true\n  mem: 6Gi\n",
    );
    let plan = plan::compute(
        &desired,
        &LiveState::default(),
        &Inventory::default(),
        &context().with_container_limits(limits),
        &pruning(),
    );
    assert_eq!(
        plan.actions[0].errors,
        ["Requested memory 6.0Gi is over maximum allowed per container (4Gi)"]
    );
    assert!(plan.has_errors());
    assert!(!plan_of(&NOTHING, BOT, &pruning()).has_errors());
}

/// Scale: 1 000 jobs (continuous, scheduled and one-off), all applied and live, each decided on its own and none
/// changed. How fast is measured by `cargo bench --bench plan`, not here.
#[test]
fn a_thousand_applied_jobs_plan_no_change() {
    let yaml: String = (0..1000)
        .map(|index| match index % 3 {
            0 => format!("- name: bot{index}\n  command: ./bot.py\n  image: python3.11\n  continuous: true\n"),
            1 => format!("- name: cron{index}\n  command: ./c.sh\n  image: bookworm\n  schedule: \"0 3 * * *\"\n"),
            _ => format!("- name: once{index}\n  command: ./once.sh\n  image: python3.11\n"),
        })
        .collect();
    let desired = jobs(&yaml);
    let mut objects = Vec::new();
    let mut inventory = Inventory::default();
    for (job, rendered) in &desired {
        objects.extend(live_objects(rendered, ours));
        let mut job_record = record(rendered);
        job_record.runs.push(run(rendered, RunOutcome::Succeeded));
        inventory.jobs.insert(job.name.clone(), job_record);
    }
    let live = LiveState::from_json(objects).unwrap();
    let plan = plan::compute(&desired, &live, &inventory, &context(), &pruning());
    assert_eq!(plan.actions.len(), 1000);
    assert!(!plan.has_changes(), "{:?}", plan.counts);
}

/// The rendered workload of `job` as listed: with a UID, and a status when given.
fn listed(rendered: &Rendered, uid: &str) -> Value {
    let mut object = serde_json::to_value(&rendered.workload).unwrap();
    object["metadata"]["uid"] = json!(uid);
    object
}

#[test]
fn run_creates_the_rendered_objects_without_inventory_labels() {
    let desired =
        jobs("- {name: web, command: ./web, image: python3.11, continuous: true, port: 8000}\n");
    let (job, rendered) = &desired[0];
    let plan =
        plan::imperative::create(&job.name, rendered, &LiveState::default().serving_records());
    let action = plan.action("web").unwrap();
    assert_eq!(action.action, Action::Create);
    let kinds: Vec<ObjectKind> = action
        .writes
        .iter()
        .map(|write| write.object.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            ObjectKind::Deployment,
            ObjectKind::Service,
            ObjectKind::ContinuousJob
        ]
    );
    for write in &action.writes {
        let manifest = write.manifest.value();
        let labels = manifest["metadata"]["labels"].as_object().unwrap();
        assert!(
            !labels.contains_key("jobs.toolforge.org/inventory"),
            "{labels:?}"
        );
        assert!(
            !labels.contains_key("applyset.kubernetes.io/part-of"),
            "{labels:?}"
        );
        assert_eq!(
            labels["app.kubernetes.io/managed-by"],
            "toolforge-jobs-framework"
        );
    }
    assert!(action.records.is_none() && !action.records_run);
}

#[test]
fn delete_removes_the_workload_and_only_a_framework_service_by_uid_and_forgets_the_record() {
    let desired = jobs(
        "- {name: web, command: ./web, image: python3.11, continuous: true, port: 8000}\n\
         - {name: bot, command: ./bot, image: python3.11, continuous: true}\n",
    );
    let web = render::LiveObject::from_json(listed(&desired[0].1, "u-web")).unwrap();
    let bot = render::LiveObject::from_json(listed(&desired[1].1, "u-bot")).unwrap();
    let mut service = serde_json::to_value(desired[0].1.service.as_ref().unwrap()).unwrap();
    service["metadata"]["uid"] = json!("u-web-service");
    let mut foreign_service = service.clone();
    foreign_service["metadata"]["name"] = json!("bot");
    foreign(&mut foreign_service);
    let live = LiveState::from_json(vec![service, foreign_service]).unwrap();

    let plan = plan::imperative::delete([("web", &web), ("bot", &bot)], &live);
    let deletes = |job: &str| -> Vec<(ObjectKind, Option<String>)> {
        plan.action(job)
            .unwrap()
            .deletes
            .iter()
            .map(|delete| (delete.object.kind, delete.object.uid.clone()))
            .collect()
    };
    assert_eq!(
        deletes("web"),
        [
            (ObjectKind::Deployment, Some("u-web".to_owned())),
            (ObjectKind::Service, Some("u-web-service".to_owned()))
        ]
    );
    assert_eq!(
        deletes("bot"),
        [(ObjectKind::Deployment, Some("u-bot".to_owned()))],
        "a Service without the managed-by label is not ours"
    );
    assert!(
        plan.actions
            .iter()
            .all(|action| action.action == Action::Delete
                && action.records == Some(plan::RecordUpdate::Forget)
                && action.writes.is_empty())
    );
}

#[test]
fn restart_plans_a_rolling_restart_a_run_now_or_a_rerun() {
    let desired = jobs(
        "- {name: bot, command: ./bot, image: python3.11, continuous: true}\n\
         - {name: nightly, command: ./n, image: python3.11, schedule: '0 3 * * *'}\n\
         - {name: migrate, command: ./m, image: python3.11}\n",
    );
    let bot = render::LiveObject::from_json(listed(&desired[0].1, "u-bot")).unwrap();
    let nightly = render::LiveObject::from_json(listed(&desired[1].1, "u-nightly")).unwrap();
    let mut migrate_json = listed(&desired[2].1, "u-migrate");
    migrate_json["spec"]["selector"] =
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-migrate"}});
    migrate_json["spec"]["template"]["metadata"]["labels"]["job-name"] = json!("migrate");
    let migrate = render::LiveObject::from_json(migrate_json).unwrap();
    // Two runs of the CronJob: one still running, one finished; and a Job of another owner.
    let run = |name: &str, owner: &str, active: i32| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "uid": format!("u-{name}"),
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "x", "uid": owner}]},
            "status": {"active": active}})
    };
    let live = LiveState::from_json(vec![
        run("nightly-1", "u-nightly", 1),
        run("nightly-2", "u-nightly", 0),
        run("other-1", "u-other", 1),
    ])
    .unwrap();
    let now = "2026-12-02T12:00:00Z";

    let rolling = plan::imperative::restart("bot", &bot, &live, now);
    let action = rolling.action("bot").unwrap();
    assert_eq!(action.action, Action::Update);
    assert_eq!(action.writes[0].verb, plan::WriteVerb::Patch);
    let patch = action.writes[0].manifest.value();
    assert_eq!(patch["metadata"]["uid"], "u-bot");
    assert_eq!(
        patch["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"],
        now
    );

    let run_now = plan::imperative::restart("nightly", &nightly, &live, now);
    let action = run_now.action("nightly").unwrap();
    assert!(action.runs_now && action.writes.is_empty());
    let deleted: Vec<&str> = action
        .deletes
        .iter()
        .map(|delete| delete.object.name.as_str())
        .collect();
    assert_eq!(deleted, ["nightly-1"], "only its running runs");

    let rerun = plan::imperative::restart("migrate", &migrate, &live, now);
    let action = rerun.action("migrate").unwrap();
    assert_eq!(action.action, Action::Replace);
    assert_eq!(action.deletes[0].object.uid.as_deref(), Some("u-migrate"));
    let created = action.writes[0].manifest.value();
    assert!(created["spec"]["selector"].is_null(), "{created}");
    assert!(created["metadata"]["uid"].is_null(), "{created}");
    assert!(
        created["spec"]["template"]["metadata"]["labels"]["job-name"].is_null(),
        "{created}"
    );
}
