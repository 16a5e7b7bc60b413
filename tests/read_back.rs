//! Read-back of live objects as upstream's jobs-api and its older versions wrote them, compared with the jobs.yaml
//! entries that describe them: equal means the plan may adopt the object without touching it.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::Path;

use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, SourceFile};
use toolforge_jobs::model::ToolName;
use toolforge_jobs::model::inventory;
use toolforge_jobs::render::{self, CanonicalJob, LiveObject, Membership, ReadBack, RenderContext};

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

fn read(fixture: &str) -> ReadBack {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/read-back")
        .join(fixture);
    let value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    render::read_back(&LiveObject::from_json(value).unwrap(), &context()).unwrap()
}

/// The canonical job of a one-job jobs file.
fn desired(yaml: &str) -> CanonicalJob {
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
    render::canonical(&file.jobs[0].job, &context()).unwrap()
}

/// Names of the fields in which the live job differs from the desired one, as the plan will report them.
fn differing_fields(live: &CanonicalJob, desired: &CanonicalJob) -> Vec<String> {
    live.differences(desired)
        .into_iter()
        .map(|difference| difference.field)
        .collect()
}

#[test]
fn an_upstream_deployment_equals_its_jobs_yaml_entry() {
    let live = read("upstream-v2-deployment.json");
    let desired = desired(
        "- name: irc-bot\n  command: cd bot && python3 main.py\n  image: python3.11\n  continuous: true\n  \
         port: 8080\n  emails: onfailure\n  mem: 1Gi\n  cpu: 500m\n",
    );
    assert_eq!(live.job, desired);
    assert!(live.ownership.is_jobs_framework());
    assert_eq!(
        live.ownership.desired_hash, None,
        "upstream objects carry no hash"
    );
    assert_eq!(live.ownership.inventory, None);
    assert_eq!(live.ownership.format_version.as_deref(), Some("2"));
    assert!(!live.legacy_selector);
    assert_eq!(live.image_short_name.as_deref(), Some("python3.11"));
}

#[test]
fn an_upstream_build_service_cronjob_equals_its_jobs_yaml_entry() {
    // The server stored the memory in canonical form (`2999975591936m` for upstream's `2.794Gi`).
    let live = read("upstream-v2-cronjob-buildservice.json");
    let desired = desired(
        "- name: myjob\n  command: update --wiki \"en wiki\"\n  image: tool-mytool/updater:latest\n  \
         schedule: \"@daily\"\n  retry: 1\n  timeout: 3600\n  mem: 3G\n",
    );
    assert_eq!(live.job, desired);
    assert_eq!(live.job.command.as_deref(), Some("update --wiki 'en wiki'"));
    assert_eq!(live.job.schedule.as_deref(), Some("@daily"));
    assert_eq!(live.job.schedule_actual.as_deref(), Some("55 7 * * *"));
    assert_eq!(live.image_short_name, None);
    assert_eq!(live.live_image, live.job.image);
}

#[test]
fn a_different_pre_built_image_is_a_difference() {
    let live = read("upstream-v2-deployment.json");
    let desired = desired(
        "- name: irc-bot\n  command: cd bot && python3 main.py\n  image: python3.13\n  continuous: true\n  \
         port: 8080\n  emails: onfailure\n  mem: 1Gi\n  cpu: 500m\n",
    );
    assert_eq!(differing_fields(&live.job, &desired), ["image"]);
}

#[test]
fn a_legacy_cronjob_on_an_old_host_and_image_variant_equals_its_entry() {
    let live = read("legacy-v1-cronjob.json");
    assert_eq!(live.ownership.format_version.as_deref(), Some("1"));
    assert_eq!(live.job.command.as_deref(), Some("./update.sh --all"));
    assert_eq!(
        live.job.filelog_stdout.as_deref(),
        Some("/data/project/mytool/update-stats.out")
    );
    assert_eq!(
        live.job.mount, "all",
        "a missing mount label means the webhook mounted everything"
    );
    assert_eq!(live.job.schedule.as_deref(), Some("17 */6 * * *"));
    assert_eq!(live.image_short_name.as_deref(), Some("python3.9"));
    let desired = desired(
        "- name: update-stats\n  command: ./update.sh --all\n  image: python3.9\n  \
         schedule: \"17 */6 * * *\"\n  emails: onfinish\n",
    );
    // Upstream compares pre-built images by short name: adopting must not restart the job.
    assert_eq!(differing_fields(&live.job, &desired), Vec::<String>::new());
    assert_eq!(
        live.live_image,
        "docker-registry.tools.wmflabs.org/toolforge-python39-sssd-base:latest"
    );
}

#[test]
fn a_legacy_deployment_without_file_logs_and_with_a_full_selector() {
    let live = read("legacy-v1-deployment-devnull.json");
    assert!(
        live.legacy_selector,
        "the selector must be replaced, it is immutable"
    );
    assert!(!live.job.filelog);
    assert_eq!(live.job.filelog_stdout, None);
    assert_eq!(live.job.command.as_deref(), Some("./quiet.sh"));
    assert_eq!(
        (
            live.job.mem.as_str(),
            live.job.cpu.as_str(),
            live.job.cpu_limit.as_str()
        ),
        ("0.5Gi", "0.25", "0.5")
    );
    let desired = desired(
        "- name: quiet-bot\n  command: ./quiet.sh\n  image: bookworm\n  continuous: true\n  no-filelog: true\n  \
         cpu: 250m\n",
    );
    assert_eq!(differing_fields(&live.job, &desired), ["cpu-limit"]);
}

#[test]
fn a_legacy_new_format_job_with_one_log_file_equals_its_entry() {
    let live = read("legacy-v1-job-new-format.json");
    let desired = desired(
        "- name: setup-venv\n  command: python3 -m venv venv && venv/bin/pip install -r requirements.txt\n  \
         image: python3.11\n  retry: 2\n  filelog-stdout: logs/venv.log\n  filelog-stderr: logs/venv.log\n",
    );
    assert_eq!(live.job, desired);
}

#[test]
fn objects_rendered_before_the_job_template_and_spread_selector_changes_read_back_unchanged() {
    // Earlier versions wrote the CronJob's `jobTemplate.metadata.labels` and spread pods over the selector labels
    // with `component`. Neither is part of the job, so such objects are neither an update nor drift after an
    // upgrade: they keep both until the job next changes.
    let images = ImageTable::bundled();
    let validation = config::Context {
        tool: "mytool",
        images: &images,
        count_trigger_files: None,
    };
    let file = config::load(
        SourceFile::new(
            "jobs.yaml".to_owned(),
            "- name: nightly\n  command: ./n.sh\n  image: python3.11\n  schedule: '@daily'\n\
             - name: daemon\n  command: ./d.py\n  image: python3.11\n  continuous: true\n"
                .to_owned(),
        ),
        &validation,
    )
    .unwrap();
    for located in &file.jobs {
        let rendered = render::objects(&located.job, &context()).unwrap();
        let mut object = serde_json::to_value(&rendered.workload).unwrap();
        let labels = object["metadata"]["labels"].clone();
        let (template, component) = if object["kind"] == "CronJob" {
            object["spec"]["jobTemplate"]["metadata"] = serde_json::json!({"labels": labels});
            (
                &mut object["spec"]["jobTemplate"]["spec"]["template"],
                "cronjobs",
            )
        } else {
            (&mut object["spec"]["template"], "deployments")
        };
        template["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] =
            serde_json::json!(component);
        let live = render::read_back(&LiveObject::from_json(object).unwrap(), &context()).unwrap();
        assert_eq!(live.job, rendered.canonical, "{}", located.job.name);
        assert_eq!(
            render::desired_hash(&live.job),
            rendered.desired_hash,
            "{}",
            located.job.name
        );
        assert_eq!(
            live.ownership.desired_hash.as_deref(),
            Some(rendered.desired_hash.as_str())
        );
    }
}

#[test]
fn a_foreign_object_is_read_but_not_ours() {
    let live = read("foreign-deployment.json");
    assert!(!live.ownership.is_jobs_framework());
    assert_eq!(live.ownership.managed_by, None);
    assert_eq!(live.job.command.as_deref(), Some("python bot.py"));
    assert!(live.legacy_selector);
}

#[test]
fn only_workloads_are_live_objects() {
    let service =
        serde_json::json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}});
    assert_eq!(
        LiveObject::from_json(service).unwrap_err().to_string(),
        "`Service` is not a Job, CronJob or Deployment"
    );
    let broken = serde_json::json!({"kind": "Job", "spec": {"backoffLimit": "many"}});
    assert_eq!(
        LiveObject::from_json(broken).unwrap_err().to_string(),
        "invalid Job object"
    );
}

#[test]
fn incomplete_objects_are_errors_not_panics() {
    let object =
        LiveObject::Deployment(serde_json::from_str(r#"{"metadata": {"name": "x"}}"#).unwrap());
    let error = render::read_back(&object, &context()).unwrap_err();
    assert_eq!(error.to_string(), "Deployment `x` has no spec");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Live objects come from the cluster, where anyone may have edited them: any shape reads back or fails
    /// cleanly.
    #[test]
    fn any_hand_edited_object_reads_back_without_panicking(
        kind in proptest::sample::select(vec!["Job", "CronJob", "Deployment"]),
        words in proptest::collection::vec(".{0,40}", 0..5),
        version in proptest::option::of("[0-9]"),
        filelog in proptest::option::of("yes|no|"),
        memory in proptest::option::of("[0-9.]{1,8}(Mi|Gi|m|k|e3|)"),
        cpu in proptest::option::of("[0-9.]{1,6}(m|)"),
        port in proptest::option::of(-5i32..70_000),
        backoff in proptest::option::of(-3i32..10),
        image in "[a-z0-9./:@-]{1,40}",
    ) {
        let mut labels = serde_json::Map::new();
        if let Some(version) = version {
            labels.insert("app.kubernetes.io/version".into(), version.into());
        }
        if let Some(filelog) = filelog {
            labels.insert("jobs.toolforge.org/filelog".into(), filelog.into());
        }
        let mut resources = serde_json::Map::new();
        if let Some(memory) = memory {
            resources.insert("memory".into(), memory.into());
        }
        if let Some(cpu) = cpu {
            resources.insert("cpu".into(), cpu.into());
        }
        let mut container = serde_json::json!({
            "name": "job",
            "image": image,
            "command": words,
            "resources": {"limits": resources.clone(), "requests": resources},
        });
        if let Some(port) = port {
            container["ports"] = serde_json::json!([{"containerPort": port}]);
            container["startupProbe"] = serde_json::json!({"exec": {"command": words}});
        }
        let pod = serde_json::json!({"spec": {"containers": [container]}});
        let mut job_spec = serde_json::json!({"template": pod});
        if let Some(backoff) = backoff {
            job_spec["backoffLimit"] = backoff.into();
        }
        let spec = match kind {
            "Job" => job_spec,
            "CronJob" => serde_json::json!({"schedule": "* * * * *", "jobTemplate": {"spec": job_spec}}),
            _ => serde_json::json!({"selector": {}, "template": pod}),
        };
        let value = serde_json::json!({
            "kind": kind,
            "metadata": {"name": "x", "labels": labels},
            "spec": spec,
        });
        if let Ok(object) = LiveObject::from_json(value) {
            let _ = render::read_back(&object, &context());
        }
    }
}
