//! Rendering end to end: every option of tests/fixtures/render/jobs.yaml becomes the objects upstream's jobs-api
//! would create, snapshotted as YAML; read back, each gives the canonical job it was rendered from.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use std::path::Path;

use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Job, SourceFile};
use toolforge_jobs::render::{
    self, LiveObject, Membership, RenderContext, TriggerFile, TriggerFiles, Workload, inventory,
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
        TOOL,
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
