//! Rendering end to end: every option of tests/fixtures/render/jobs.yaml becomes the objects upstream's jobs-api
//! would create, snapshotted as YAML; read back, each gives the canonical job it was rendered from.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::Path;

use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Job, SourceFile};
use toolforge_jobs::model::ToolName;
use toolforge_jobs::model::inventory;
use toolforge_jobs::render::{
    self, LiveObject, Membership, RenderContext, TriggerFile, TriggerFiles, Workload,
};

const TOOL: &str = "mytool";

fn jobs() -> Vec<Job> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/render/jobs.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let images = ImageTable::bundled();
    let context = config::Context {
        tool: TOOL,
        images: &images,
        count_trigger_files: None,
    };
    let file = config::load(SourceFile::new("jobs.yaml".to_owned(), text), &context).unwrap();
    file.jobs.into_iter().map(|located| located.job).collect()
}

fn context() -> RenderContext {
    let mut files = TriggerFiles::default();
    files.insert(
        "requirements.txt",
        vec![TriggerFile {
            path: "requirements.txt".to_owned(),
            contents: b"requests==2.32.3\n".to_vec(),
        }],
    );
    RenderContext::toolforge(
        &ToolName::new(TOOL).unwrap(),
        52503,
        ImageTable::bundled(),
        Membership {
            set_name: "toolforge-jobs".to_owned(),
            applyset_id: inventory::applyset_id("toolforge-jobs", "tool-mytool"),
        },
    )
    .with_trigger_files(files)
}

/// The objects of a job as a YAML stream would list them.
fn documents(rendered: &render::Rendered) -> Vec<serde_json::Value> {
    let mut documents = vec![serde_json::to_value(&rendered.workload).unwrap()];
    documents.extend(
        rendered
            .service
            .iter()
            .map(|service| serde_json::to_value(service).unwrap()),
    );
    documents
}

#[test]
fn every_option_renders_like_upstream() {
    let context = context();
    for job in jobs() {
        let rendered = render::objects(&job, &context).unwrap();
        insta::assert_yaml_snapshot!(job.name.clone(), documents(&rendered));
    }
}

#[test]
fn reading_back_gives_the_canonical_job() {
    let context = context();
    for job in jobs() {
        let rendered = render::objects(&job, &context).unwrap();
        let live = match rendered.workload {
            Workload::Job(object) => LiveObject::Job(object),
            Workload::CronJob(object) => LiveObject::CronJob(object),
            Workload::Deployment(object) => LiveObject::Deployment(object),
        };
        let read = render::read_back(&live, &context).unwrap();
        assert_eq!(read.job, rendered.canonical, "{}", job.name);
        assert_eq!(
            read.ownership.desired_hash.as_ref(),
            Some(&rendered.desired_hash)
        );
        assert_eq!(
            read.ownership.fingerprint.as_ref(),
            Some(&rendered.fingerprint)
        );
        assert_eq!(read.ownership.inventory.as_deref(), Some("toolforge-jobs"));
        assert!(!read.legacy_selector, "{}", job.name);
    }
}

fn job_named(name: &str) -> Job {
    jobs().into_iter().find(|job| job.name == name).unwrap()
}

fn pod_annotations(
    rendered: &render::Rendered,
) -> Option<std::collections::BTreeMap<String, String>> {
    let Workload::Deployment(deployment) = &rendered.workload else {
        panic!("expected a Deployment");
    };
    deployment
        .spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .clone()
}

#[test]
fn a_new_trigger_changes_the_fingerprint_and_rolls_the_pods_but_not_the_hash() {
    let context = context();
    let mut job = job_named("continuous-trigger");
    let before = render::objects(&job, &context).unwrap();
    job.trigger = Some("8".to_owned());
    let after = render::objects(&job, &context).unwrap();
    assert_eq!(before.desired_hash, after.desired_hash);
    assert_ne!(before.fingerprint, after.fingerprint);
    assert_ne!(pod_annotations(&before), pod_annotations(&after));

    let mut edited_files = TriggerFiles::default();
    edited_files.insert(
        "requirements.txt",
        vec![TriggerFile {
            path: "requirements.txt".to_owned(),
            contents: b"requests==2.33.0\n".to_vec(),
        }],
    );
    let edited = render::objects(&job, &context.clone().with_trigger_files(edited_files)).unwrap();
    assert_ne!(after.fingerprint, edited.fingerprint);
}

#[test]
fn scaling_changes_the_hash_but_not_the_pod_template() {
    let context = context();
    let mut job = job_named("continuous-trigger");
    let one = render::objects(&job, &context).unwrap();
    let toolforge_jobs::config::JobKind::Continuous(service) = &mut job.kind else {
        panic!("expected a continuous job");
    };
    service.replicas = Some(2);
    let two = render::objects(&job, &context).unwrap();
    assert_ne!(one.desired_hash, two.desired_hash);
    let template = |rendered: &render::Rendered| match &rendered.workload {
        Workload::Deployment(deployment) => deployment.spec.as_ref().unwrap().template.clone(),
        _ => panic!("expected a Deployment"),
    };
    assert_eq!(template(&one), template(&two));
}

#[test]
fn jobs_without_triggers_have_no_trigger_annotation() {
    let rendered = render::objects(&job_named("continuous-plain"), &context()).unwrap();
    assert_eq!(pod_annotations(&rendered), None);
}

#[test]
fn unread_trigger_files_are_an_error_not_a_different_fingerprint() {
    let context = context().with_trigger_files(TriggerFiles::default());
    let error = render::objects(&job_named("oneoff-triggers"), &context).unwrap_err();
    assert_eq!(
        error.to_string(),
        "job `oneoff-triggers`: the files of `trigger-files` pattern `requirements.txt` were not read"
    );
}

#[test]
fn the_local_cluster_context_uses_its_home_and_uid() {
    let context = RenderContext::new(
        &context().tool,
        "/home/dev/mytool",
        1000,
        ImageTable::bundled(),
        context().membership,
    );
    let rendered = render::objects(&job_named("oneoff-defaults"), &context).unwrap();
    let Workload::Job(job) = &rendered.workload else {
        panic!("expected a Job");
    };
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let container = &pod.containers[0];
    assert_eq!(container.working_dir.as_deref(), Some("/home/dev/mytool"));
    assert!(
        container.command.as_ref().unwrap()[3]
            .starts_with("exec 1>>/home/dev/mytool/oneoff-defaults.out;")
    );
    assert_eq!(
        pod.security_context.as_ref().unwrap().run_as_user,
        Some(1000)
    );
}

#[test]
fn only_top_level_objects_are_inventory_members() {
    // kubectl's ApplySet prune deletes labelled objects missing from the set: Jobs spawned by a CronJob and pods
    // must never carry the membership labels.
    let rendered = render::objects(&job_named("myjob"), &context()).unwrap();
    let Workload::CronJob(cron_job) = &rendered.workload else {
        panic!("expected a CronJob");
    };
    let is_member = |labels: &std::collections::BTreeMap<String, String>| {
        labels.contains_key("applyset.kubernetes.io/part-of")
            || labels.contains_key("jobs.toolforge.org/inventory")
    };
    assert!(is_member(cron_job.metadata.labels.as_ref().unwrap()));
    let job_template = &cron_job.spec.as_ref().unwrap().job_template;
    // As upstream: no job template metadata at all; the Jobs take the pod template's labels.
    assert_eq!(job_template.metadata, None);
    let pod_template = &job_template.spec.as_ref().unwrap().template;
    assert!(!is_member(
        pod_template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap()
    ));
}

/// Renders the jobs of `text` (a jobs file) in the test context.
fn rendered_from(text: &str) -> Vec<render::Rendered> {
    let images = ImageTable::bundled();
    let config_context = config::Context {
        tool: TOOL,
        images: &images,
        count_trigger_files: None,
    };
    let file = config::load(
        SourceFile::new("jobs.yaml".to_owned(), text.to_owned()),
        &config_context,
    )
    .unwrap();
    let context = context();
    file.jobs
        .iter()
        .map(|located| render::objects(&located.job, &context).unwrap())
        .collect()
}

/// The expected specs are written from upstream's model (reference/toolforge.md §3.8: the job model with only the
/// fields that are set, `job_name`, `tool_name`, `image.short_name`; key names and normalised values as in
/// jobs-api.md §2.2), never from our own output. Defaults are left out, written or not (the build-service job
/// sets the pre-built defaults `filelog` and `mount`, which are not its own).
#[test]
fn stored_records_are_upstreams_sparse_job_model() {
    let rendered = rendered_from(
        "\
- {name: once, command: ./migrate.sh, image: python3.11}
- {name: nightly, command: ./cron.sh, image: python3.11, schedule: '@daily', mem: 1Gi, retry: 2}
- {name: every, command: ./sync.sh, image: tool-mytool/tool-mytool:latest, schedule: '*/5 * * * *', timeout: 300,
   cpu: 500m, emails: onfailure, filelog: true, mount: all, filelog-stdout: logs/sync.out}
- {name: bot, command: ./bot.py, image: python3.9, continuous: true}
- {name: web, command: python3 -m http.server 8000, image: python3.11, continuous: true, replicas: 2,
   port: 8000, health-check-http: /healthz, no-filelog: true}
- {name: dns, command: ./dns.py, image: python3.11, continuous: true, port: 5353/udp,
   health-check-script: ./alive.sh, mem: 2Gi}
",
    );
    let record = |index: usize| rendered[index].record.clone();
    assert_eq!(record(0), None, "one-offs are not stored");
    let expected = [
        (
            1,
            "ScheduledJob",
            serde_json::json!({"job_name": "nightly", "tool_name": "mytool", "job_type": "scheduled",
                "cmd": "./cron.sh", "image": {"short_name": "python3.11"}, "memory": "1.0Gi",
                "schedule": "@daily", "retry": 2}),
        ),
        (
            2,
            "ScheduledJob",
            serde_json::json!({"job_name": "every", "tool_name": "mytool", "job_type": "scheduled",
                "cmd": "./sync.sh", "image": {"short_name": "tool-mytool/tool-mytool:latest"},
                "filelog": true, "filelog_stdout": "/data/project/mytool/logs/sync.out", "emails": "onfailure",
                "mount": "all", "cpu": "0.5", "schedule": "*/5 * * * *", "timeout": 300}),
        ),
        (
            3,
            "ContinuousJob",
            serde_json::json!({"job_name": "bot", "tool_name": "mytool", "job_type": "continuous",
                "cmd": "./bot.py", "image": {"short_name": "python3.9"}, "continuous": true}),
        ),
        (
            4,
            "ContinuousJob",
            serde_json::json!({"job_name": "web", "tool_name": "mytool", "job_type": "continuous",
                "cmd": "python3 -m http.server 8000", "image": {"short_name": "python3.11"},
                "filelog": false, "continuous": true, "replicas": 2, "port": 8000,
                "health_check": {"type": "http", "path": "/healthz"}}),
        ),
        (
            5,
            "ContinuousJob",
            serde_json::json!({"job_name": "dns", "tool_name": "mytool", "job_type": "continuous",
                "cmd": "./dns.py", "image": {"short_name": "python3.11"}, "memory": "2.0Gi",
                "continuous": true, "port": 5353, "port_protocol": "udp",
                "health_check": {"type": "script", "script": "./alive.sh"}}),
        ),
    ];
    for (index, kind, spec) in expected {
        let record = record(index).unwrap();
        let name = spec["job_name"].clone();
        assert_eq!(record["apiVersion"], "jobs-api.toolforge.org/v1", "{name}");
        assert_eq!(record["kind"], kind, "{name}");
        assert_eq!(record["metadata"]["name"], name);
        assert_eq!(record["metadata"]["namespace"], "tool-mytool");
        assert_eq!(record["spec"], spec, "{name}");
        // The workload's labels, so that ownership reads the same from either.
        let workload = serde_json::to_value(&rendered[index].workload).unwrap();
        assert_eq!(
            record["metadata"]["labels"], workload["metadata"]["labels"],
            "{name}"
        );
    }
}
