//! The local cluster's resident memory per stored object (issue 19: < 15 KB): CronJobs as toolforge-jobs renders
//! a scheduled job are created (8 in flight) on an API-only cluster with the default watch history, and the
//! process's RSS is read from `/proc/self/status` at 10 000 and 50 000 objects. The client runs in the same
//! process; it keeps nothing between requests, so the growth is the server's. Run with
//! `cargo bench -p toolforge-local-cluster --bench memory`; figures go to stdout.

#![expect(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::CronJob;
use kube::api::{Api, PostParams};
use serde_json::json;
use toolforge_local_cluster::{LocalCluster, Options};

const SIZES: [usize; 2] = [10_000, 50_000];
const IN_FLIGHT: usize = 8;

/// A scheduled job as toolforge-jobs renders it for a tool (labels, limits, a command with arguments).
fn cron_job(name: &str) -> CronJob {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {
            "toolforge": "tool", "app.kubernetes.io/managed-by": "toolforge-jobs-framework",
            "app.kubernetes.io/created-by": "bench", "app.kubernetes.io/name": name,
            "app.kubernetes.io/component": "cronjobs", "app.kubernetes.io/version": "2",
            "jobs.toolforge.org/emails": "none", "toolforge.org/mount-storage": "none"},
            "annotations": {"jobs.toolforge.org/cron-expression": "@daily"}},
        "spec": {"schedule": "55 7 * * *", "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 30,
            "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {"backoffLimit": 1, "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 30,
                "template": {"metadata": {"labels": {"toolforge": "tool", "app.kubernetes.io/name": name}},
                    "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 15,
                        "containers": [{"name": "job", "image": "docker-registry.tools.wmflabs.org/toolforge-python311-sssd-base:latest",
                            "command": ["/bin/sh", "-c", "--", format!("exec ./{name}.sh --verbose 1>>{name}.out 2>>{name}.err")],
                            "workingDir": "/data/project/bench",
                            "env": [{"name": "HOME", "value": "/data/project/bench"}],
                            "resources": {"limits": {"cpu": "500m", "memory": "512Mi"},
                                "requests": {"cpu": "250m", "memory": "256Mi"}}}]}}}}}
    }))
    .expect("valid cron job")
}

/// The process's resident set size in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kilobytes = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .expect("VmRSS in kB");
    kilobytes * 1024
}

#[expect(
    clippy::cast_precision_loss,
    reason = "memory sizes are far below 2^53 bytes"
)]
fn kilobytes(bytes: u64) -> f64 {
    bytes as f64 / 1024.0
}

#[tokio::main]
async fn main() {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let cron_jobs: Api<CronJob> = Api::default_namespaced(cluster.client().expect("client"));
    cron_jobs
        .create(&PostParams::default(), &cron_job("warm-up"))
        .await
        .expect("create");
    let stored = cron_jobs.get("warm-up").await.expect("get");
    let baseline = rss();
    println!(
        "empty cluster: RSS {:.1} MB; one stored CronJob is {} bytes of JSON",
        kilobytes(baseline) / 1024.0,
        serde_json::to_string(&stored).expect("encodes").len()
    );
    let mut filled = 0;
    for size in SIZES {
        let started = Instant::now();
        let created = size - filled;
        let results: Vec<_> = futures::stream::iter(filled..size)
            .map(|i| {
                let cron_jobs = cron_jobs.clone();
                let object = cron_job(&format!("job-{i:05}"));
                async move {
                    cron_jobs
                        .create(&PostParams::default(), &object)
                        .await
                        .map(drop)
                }
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        assert!(results.iter().all(Result::is_ok), "every create succeeds");
        let elapsed = started.elapsed();
        filled = size;
        let now = rss();
        let per_object = now.saturating_sub(baseline) / u64::try_from(size).unwrap_or(u64::MAX);
        println!(
            "{size:>6} CronJobs: RSS {:>7.1} MB, {:>5.1} KB per object ({created} created in {:.1} s)",
            kilobytes(now) / 1024.0,
            kilobytes(per_object),
            elapsed.as_secs_f64()
        );
    }
    cluster.shutdown().await.expect("shutdown");
}
