//! The upstream imperative commands end to end against the local cluster: `list`, `show`, `logs`, `delete` and
//! `flush` on jobs created by `apply`, next to objects that are not ours.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use support::{Cluster, NAMESPACE, Run};
use toolforge_local_cluster::{ContainerOutcome, Script};

const JOBS: &str = "\
- name: migrate
  command: ./migrate.sh
  image: python3.11
  wait: true
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
  mem: 1Gi
- name: crasher
  command: ./crash.sh
  image: bookworm
  continuous: true
";

/// Pods of `crasher` exit 1 and are restarted, those of `slow` never end; everything else as in
/// [`Cluster::start`].
async fn start() -> Cluster {
    let script = Script::new(ContainerOutcome::RunForever)
        .label(
            "app.kubernetes.io/name",
            "slow",
            ContainerOutcome::RunForever,
        )
        .label(
            "app.kubernetes.io/name",
            "crasher",
            ContainerOutcome::Exit {
                code: 1,
                after: Duration::from_millis(20),
            },
        );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);
    cluster
}

/// Runs `args` until `done` holds for what it printed (at most 20 s): the cluster's controllers need a moment.
async fn until(cluster: &Cluster, args: &[&str], done: impl Fn(&Run) -> bool) -> Run {
    let mut last = String::new();
    for _ in 0..200 {
        let run = cluster.run(args).await;
        if done(&run) {
            return run;
        }
        last = format!("{}{}", run.stdout, run.stderr);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "`{}` never printed what was expected; last:\n{last}",
        args.join(" ")
    );
}

/// The `Status:` cell of `job` in `list`'s table.
/// The rows of a `pretty` table (upstream's `list`, `images`), header first, each a list of trimmed cells.
fn pretty_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The cell of `job`'s row under `column` in a `pretty` table.
fn cell_of(run: &Run, job: &str, column: &str) -> Option<String> {
    let rows = pretty_rows(&run.stdout);
    let index = rows.first()?.iter().position(|title| title == column)?;
    rows.iter()
        .skip(1)
        .find(|row| row.first().map(String::as_str) == Some(job))
        .and_then(|row| row.get(index).cloned())
}

fn status_of(run: &Run, job: &str) -> Option<String> {
    cell_of(run, job, "Status:")
}

/// A job's status messages from `list -o json`.
fn messages_of(run: &Run, job: &str) -> Vec<String> {
    let Ok(jobs) = serde_json::from_str::<Value>(&run.stdout) else {
        return Vec::new();
    };
    jobs.as_array()
        .into_iter()
        .flatten()
        .find(|value| value["name"] == job)
        .and_then(|value| value["status"]["messages"].as_array().cloned())
        .into_iter()
        .flatten()
        .filter_map(|message| message.as_str().map(str::to_owned))
        .collect()
}

async fn create_foreign_deployment(cluster: &Cluster) {
    let foreign: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "foreign", "labels": {"app": "mine"}},
        "spec": {"selector": {"matchLabels": {"app": "mine"}},
            "template": {"metadata": {"labels": {"app": "mine"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE)
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_types_and_upstream_statuses_and_leaves_foreign_objects_out() {
    let cluster = start().await;
    create_foreign_deployment(&cluster).await;

    let json = until(&cluster, &["list", "-o", "json"], |run| {
        let short = |job: &str| {
            serde_json::from_str::<Value>(&run.stdout)
                .ok()
                .and_then(|jobs| {
                    jobs.as_array()?
                        .iter()
                        .find(|value| value["name"] == job)
                        .map(|value| value["status"]["short"].clone())
                })
        };
        short("bot") == Some(json!("running"))
            && messages_of(run, "crasher")
                .iter()
                .any(|message| message.starts_with("restarted"))
            && short("migrate") == Some(json!("succeeded"))
    })
    .await;
    json.expect_code(0);
    let list = cluster.run(&["list"]).await;
    list.expect_code(0);
    assert!(list.stdout.starts_with("+---"), "{}", list.stdout);
    let rows = pretty_rows(&list.stdout);
    assert_eq!(
        rows[0],
        ["Job name:", "Job type:", "Status:"],
        "{}",
        list.stdout
    );
    let names: Vec<&str> = rows[1..].iter().map(|row| row[0].as_str()).collect();
    assert_eq!(
        names,
        ["bot", "crasher", "migrate", "nightly"],
        "sorted, without `foreign`"
    );
    assert!(
        list.stdout.contains("scheduled: 17 3 * * *"),
        "{}",
        list.stdout
    );
    // As upstream's, the list has the status only; the messages are `show`'s hints.
    let crasher = status_of(&list, "crasher").unwrap();
    // It restarts over and over: pending, or running for a moment.
    assert!(
        crasher.starts_with("Pending for ") || crasher.starts_with("Running for "),
        "{crasher}"
    );
    assert!(!crasher.contains(':'), "{crasher}");
    until(&cluster, &["show", "crasher"], |run| {
        run.stdout.contains("exitcode 1")
    })
    .await;
    assert!(
        status_of(&list, "nightly")
            .unwrap()
            .starts_with("Pending for "),
        "waiting for its first run: {}",
        list.stdout
    );

    let names = cluster.run(&["list", "-o", "name"]).await;
    assert_eq!(
        names.expect_code(0).stdout,
        "bot\ncrasher\nmigrate\nnightly\n"
    );

    list_long_and_json(&cluster).await;
}

/// `list -o long`, its deprecated `-l`, and `list -o json`, of `start()`'s jobs.
async fn list_long_and_json(cluster: &Cluster) {
    let long = cluster.run(&["list", "-o", "long"]).await;
    long.expect_code(0);
    let header = &pretty_rows(&long.stdout)[0];
    assert_eq!(header.len(), 17, "{}", long.stdout);
    assert_eq!(header[..2], ["Job name:", "Command:"], "{}", long.stdout);
    assert_eq!(
        cell_of(&long, "bot", "Resources:").as_deref(),
        Some("mem: 1.0Gi, cpu: default"),
        "{}",
        long.stdout
    );
    let deprecated = cluster.run(&["list", "-l"]).await;
    assert_eq!(
        pretty_rows(&deprecated.stdout).first(),
        Some(header),
        "the deprecated `-l` is `-o long`"
    );
    assert!(
        deprecated
            .stderr
            .contains("the `--long` flag is deprecated, use `--output long` instead"),
        "{}",
        deprecated.stderr
    );

    let json = cluster.run(&["list", "-o", "json"]).await;
    let jobs: Value = serde_json::from_str(&json.expect_code(0).stdout).unwrap();
    let bot = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|job| job["name"] == "bot")
        .unwrap();
    assert_eq!(bot["type"], "continuous");
    assert_eq!(bot["image_name"], "python3.11");
    assert_eq!(bot["status"]["short"], "running");
    let nightly = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|job| job["name"] == "nightly")
        .unwrap();
    assert!(
        nightly["status"]["next_schedule"]
            .as_str()
            .unwrap()
            .ends_with("03:17:00Z")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_reads_the_namespace_with_a_fixed_number_of_requests() {
    let cluster = start().await;
    cluster.local.reset_request_counts();
    cluster.run(&["list"]).await.expect_code(0);
    assert_eq!(
        cluster.requests(),
        13,
        "one LIST per kind (upstream's two kinds of stored record too), pods and events, no GET per job: {:?}",
        cluster.local.request_counts()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_upstreams_grid_with_hints_and_unknown_jobs_are_errors() {
    let cluster = start().await;

    let show = cluster.run(&["show", "nightly"]).await;
    show.expect_code(0);
    let rows: Vec<&str> = show.stdout.lines().collect();
    assert!(rows[0].starts_with("+---"), "{}", show.stdout);
    assert!(rows[1].starts_with("| Job name:"), "{}", show.stdout);
    for field in [
        "| Command:",
        "| Job type:",
        "| Image:",
        "| Resources:",
        "| Retry:",
        "| Hints:",
    ] {
        assert!(
            show.stdout.contains(field),
            "{field} missing\n{}",
            show.stdout
        );
    }
    assert!(
        show.stdout.contains("scheduled: 17 3 * * *"),
        "{}",
        show.stdout
    );
    assert!(show.stdout.contains("Next: "), "{}", show.stdout);
    assert!(
        show.stdout
            .lines()
            .any(|line| line.starts_with("| Resources:") && line.contains("| default ")),
        "{}",
        show.stdout
    );

    let json = cluster.run(&["show", "bot", "-o", "json"]).await;
    let bot: Value = serde_json::from_str(&json.expect_code(0).stdout).unwrap();
    assert_eq!(bot["mem"], "1.0Gi");

    let missing = cluster.run(&["show", "nope"]).await;
    missing.expect_code(1);
    assert!(
        missing.stderr.contains("Job 'nope' does not exist"),
        "{}",
        missing.stderr
    );
}

/// The inventory's job records, by name.
async fn inventory_jobs(cluster: &Cluster) -> Vec<String> {
    let inventory: ConfigMap = Api::namespaced(cluster.client.clone(), NAMESPACE)
        .get("toolforge-jobs")
        .await
        .unwrap();
    let record: Value = serde_json::from_str(&inventory.data.unwrap()["inventory.json"]).unwrap();
    record["jobs"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_reads_the_file_log_in_the_home_or_the_pods_logs() {
    let script = Script::new(ContainerOutcome::RunForever).output("", "hello from the pod\n");
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(
        "\
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
- name: quiet
  command: ./quiet.py
  image: python3.11
  continuous: true
  no-filelog: true
",
    );
    cluster.run(&["apply", "--wait"]).await.expect_code(0);

    // File logging: the files in the home (on this local cluster, the jobs file's directory).
    std::fs::write(
        cluster.directory.path().join("bot.out"),
        "one\ntwo\nthree\n",
    )
    .unwrap();
    std::fs::write(cluster.directory.path().join("bot.err"), "oops\n").unwrap();
    let logs = cluster.run(&["logs", "bot", "-l", "2"]).await;
    logs.expect_code(0);
    assert_eq!(logs.stdout, "two\nthree\n");
    assert_eq!(logs.stderr, "oops\n");

    // No file logging: the pods' logs, upstream's line format.
    let logs = until(&cluster, &["logs", "quiet"], |run| {
        run.stdout.contains("hello")
    })
    .await;
    logs.expect_code(0);
    let line = logs.stdout.lines().next().unwrap();
    assert!(line.contains(" [quiet-"), "{line}");
    assert!(line.ends_with("] [job] hello from the pod"), "{line}");
    // `--since` and `--until`: a duration ago or a time; the lines outside the window are left out.
    let recent = cluster.run(&["logs", "quiet", "--since", "1h"]).await;
    assert_eq!(recent.expect_code(0).stdout, logs.stdout);
    let old = cluster
        .run(&["logs", "quiet", "--until", "2000-01-01T00:00:00Z"])
        .await;
    assert_eq!(old.expect_code(0).stdout, "");
    // Log files have no times: printed whole, with a warning.
    let files = cluster.run(&["logs", "bot", "--since", "1h"]).await;
    assert_eq!(files.expect_code(0).stdout, "one\ntwo\nthree\n");
    assert!(
        files
            .stderr
            .contains("`--since` and `--until` apply to pod logs only"),
        "{}",
        files.stderr
    );

    let missing = cluster.run(&["logs", "nope"]).await;
    missing.expect_code(1);
    assert!(
        missing.stderr.contains("Job 'nope' does not exist"),
        "{}",
        missing.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_removes_our_objects_and_records_and_never_foreign_ones() {
    let cluster = start().await;
    create_foreign_deployment(&cluster).await;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let cron_jobs: Api<CronJob> = Api::namespaced(cluster.client.clone(), NAMESPACE);

    let delete = cluster.run(&["delete", "bot"]).await;
    delete.expect_code(0);
    assert!(
        delete
            .stderr
            .contains("Deleted job 'bot' (Deployment, ContinuousJob)"),
        "{}",
        delete.stderr
    );
    assert!(deployments.get_opt("bot").await.unwrap().is_none());
    assert!(!inventory_jobs(&cluster).await.contains(&"bot".to_owned()));
    assert_eq!(
        cluster.run(&["diff"]).await.row("bot").unwrap().0,
        "create",
        "apply brings it back"
    );

    // While an apply or the daemon holds the lock, nothing is deleted.
    let now = jiff::Timestamp::now().to_string();
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "toolforge-jobs"},
        "spec": {"holderIdentity": "apply by someone@host (pid 1)", "leaseDurationSeconds": 60,
            "acquireTime": now, "renewTime": now}
    }))
    .unwrap();
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    leases.create(&PostParams::default(), &lease).await.unwrap();
    let held = cluster.run(&["delete", "crasher"]).await;
    held.expect_code(6);
    assert!(
        held.stderr.contains("apply by someone@host"),
        "{}",
        held.stderr
    );
    assert!(deployments.get_opt("crasher").await.unwrap().is_some());
    leases
        .delete("toolforge-jobs", &kube::api::DeleteParams::default())
        .await
        .unwrap();

    let foreign = cluster.run(&["delete", "foreign"]).await;
    foreign.expect_code(1);
    assert!(
        foreign.stderr.contains("Job 'foreign' does not exist"),
        "{}",
        foreign.stderr
    );
    assert!(deployments.get_opt("foreign").await.unwrap().is_some());

    let flush = cluster.run(&["flush"]).await;
    flush.expect_code(0);
    assert!(cron_jobs.get_opt("nightly").await.unwrap().is_none());
    assert!(deployments.get_opt("crasher").await.unwrap().is_none());
    assert!(
        deployments.get_opt("foreign").await.unwrap().is_some(),
        "never touched"
    );
    assert!(
        inventory_jobs(&cluster).await.is_empty(),
        "{:?}",
        inventory_jobs(&cluster).await
    );
    // As upstream's: nothing at all.
    let list = cluster.run(&["list"]).await;
    assert_eq!(list.expect_code(0).stdout, "");
    assert!(!list.stderr.contains("No jobs"), "{}", list.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_creates_a_job_outside_any_inventory_and_waits_for_it() {
    let script = Script::new(ContainerOutcome::RunForever).label(
        "app.kubernetes.io/name",
        "broken",
        ContainerOutcome::Exit {
            code: 3,
            after: Duration::from_millis(20),
        },
    );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    let run = cluster
        .run(&[
            "run",
            "once",
            "--command",
            "./once.sh",
            "--image",
            "python3.11",
            "--wait",
        ])
        .await;
    run.expect_code(0);
    assert!(
        run.stderr.contains("job 'once' completed"),
        "{}",
        run.stderr
    );
    let job = Api::<KubeJob>::namespaced(cluster.client.clone(), NAMESPACE)
        .get("once")
        .await
        .unwrap();
    let labels = job.metadata.labels.unwrap();
    assert_eq!(
        labels["app.kubernetes.io/managed-by"],
        "toolforge-jobs-framework"
    );
    assert!(
        !labels.contains_key("jobs.toolforge.org/inventory"),
        "{labels:?}"
    );
    // A no-op lists no Jobs when every one-off's run is recorded as ended (docs/apply.md): a plan that writes
    // lists them and shows `once` as not ours.
    assert_eq!(cluster.run(&["diff"]).await.row("once"), None);
    assert_eq!(
        cluster
            .run(&["diff", "--replace", "nightly"])
            .await
            .row("once")
            .unwrap()
            .0,
        "ignored"
    );

    let failing = cluster
        .run(&[
            "run",
            "broken",
            "--command",
            "./broken.sh",
            "--image",
            "bookworm",
            "--retry",
            "0",
            "--wait=30",
        ])
        .await;
    failing.expect_code(4);
    assert!(
        failing.stderr.contains("job 'broken' failed"),
        "{}",
        failing.stderr
    );
    let again = cluster.run(&["wait", "broken", "--timeout", "30s"]).await;
    again.expect_code(4);

    let taken = cluster
        .run(&["run", "bot", "--command", "x", "--image", "python3.11"])
        .await;
    taken.expect_code(1);
    assert!(
        taken.stderr.contains("'bot' already exists"),
        "{}",
        taken.stderr
    );

    let invalid = cluster
        .run(&["run", "bad", "--command", "x", "--image", "python9"])
        .await;
    invalid.expect_code(2);
    assert!(invalid.stderr.contains("python9"), "{}", invalid.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_waits_for_a_rollout_and_times_out_on_a_job_that_never_ends() {
    let cluster = start().await;
    let wait = cluster.run(&["wait", "bot"]).await;
    wait.expect_code(0);
    assert!(
        wait.stderr.contains("job 'bot' rolled out (running)")
            && !wait.stderr.contains("completed"),
        "{}",
        wait.stderr
    );

    let forever = cluster
        .run(&[
            "run",
            "forever",
            "--command",
            "sleep infinity",
            "--image",
            "bookworm",
            "--schedule",
            "0 0 1 1 *",
        ])
        .await;
    forever.expect_code(0);
    cluster
        .run(&[
            "run",
            "slow",
            "--command",
            "./slow.sh",
            "--image",
            "bookworm",
        ])
        .await
        .expect_code(0);
    let slow = cluster.run(&["wait", "slow", "--timeout", "1s"]).await;
    slow.expect_code(5);
    assert!(
        slow.stderr
            .contains("timed out 1 seconds waiting for job 'slow'"),
        "{}",
        slow.stderr
    );

    let nothing = cluster.run(&["wait", "forever"]).await;
    nothing.expect_code(1);
    assert!(
        nothing.stderr.contains("has not run yet"),
        "{}",
        nothing.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applying_a_dump_changes_nothing() {
    let cluster = start().await;
    let jobs_file = cluster.directory.path().join("jobs.yaml");
    std::fs::remove_file(&jobs_file).unwrap();

    let dump = cluster.run(&["dump"]).await;
    dump.expect_code(0);
    assert!(dump.stderr.contains("Wrote 4 job(s)"), "{}", dump.stderr);
    let dumped = std::fs::read_to_string(&jobs_file).unwrap();
    assert!(dumped.contains("- name: \"bot\"\n"), "{dumped}");
    assert!(dumped.contains("  mem: \"1.0Gi\"\n"), "{dumped}");
    assert!(dumped.contains("  schedule: \"17 3 * * *\"\n"), "{dumped}");
    // Upstream's `--to-file` writes the same dump elsewhere.
    let other = cluster.directory.path().join("other.yaml");
    cluster
        .run(&["dump", "--to-file", other.to_str().unwrap()])
        .await
        .expect_code(0);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), dumped);

    let diff = cluster.run(&["diff"]).await;
    diff.expect_code(0);
    assert!(diff.stdout.contains("nothing to change"), "{}", diff.stdout);
    cluster.run(&["apply"]).await.expect_code(0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_quota_print_upstreams_tables() {
    let cluster = start().await;
    let images = cluster.run(&["images"]).await;
    images.expect_code(0);
    let rows = pretty_rows(&images.stdout);
    // Upstream's header, quirk included.
    assert_eq!(rows[0], ["Short name", "image"], "{}", images.stdout);
    assert!(
        rows.iter()
            .any(|row| row[0] == "python3.11" && row[1].ends_with(":latest")),
        "{}",
        images.stdout
    );
    let json: Value =
        serde_json::from_str(&cluster.run(&["images", "-o", "json"]).await.stdout).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .any(|image| image["short_name"] == "bookworm")
    );

    let quota = cluster.run(&["quota"]).await;
    quota.expect_code(0);
    assert!(
        quota.stderr.contains("has no quota and no limits"),
        "{}",
        quota.stderr
    );

    // With Toolforge's quota and limits, the tables show what is used of them.
    let resource_quota: k8s_openapi::api::core::v1::ResourceQuota =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "tool-mytool"},
            "spec": {"hard": {"count/cronjobs.batch": "50", "count/deployments.apps": "3",
                "count/jobs.batch": "15", "pods": "10", "limits.cpu": "4", "limits.memory": "8Gi"}}
        }))
        .unwrap();
    Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(cluster.client.clone(), NAMESPACE)
        .create(&kube::api::PostParams::default(), &resource_quota)
        .await
        .unwrap();
    let limits: k8s_openapi::api::core::v1::LimitRange =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "tool-mytool"},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "1", "memory": "4Gi"},
                "min": {"cpu": "50m", "memory": "100Mi"}}]}
        }))
        .unwrap();
    Api::<k8s_openapi::api::core::v1::LimitRange>::namespaced(cluster.client.clone(), NAMESPACE)
        .create(&kube::api::PostParams::default(), &limits)
        .await
        .unwrap();
    let quota = cluster.run(&["quota"]).await;
    quota.expect_code(0);
    let row = |label: &str| -> Vec<String> {
        let line = quota
            .stdout
            .lines()
            .find(|line| line.starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` row in:\n{}", quota.stdout));
        line[label.len()..]
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    // Used (as the cluster's quota counts it) and limit.
    assert_eq!(
        row("Total running jobs at once (Kubernetes pods)"),
        ["2", "10"]
    );
    assert_eq!(row("Cron jobs"), ["1", "50"]);
    assert_eq!(row("Continuous jobs (including web services)"), ["2", "3"]);
    // Values as the jobs API writes them, as upstream's CLI prints them.
    assert_eq!(row("Memory")[1], "8.0Gi");
    assert_eq!(row("CPU")[1], "4.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_rolls_a_deployment_runs_a_cronjob_now_and_reruns_a_one_off() {
    let cluster = start().await;
    let jobs: Api<KubeJob> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);

    cluster.run(&["restart", "bot"]).await.expect_code(0);
    let bot = deployments.get("bot").await.unwrap();
    let annotations = bot
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .annotations
        .unwrap();
    assert!(
        annotations.contains_key("kubectl.kubernetes.io/restartedAt"),
        "{annotations:?}"
    );
    cluster.run(&["wait", "bot"]).await.expect_code(0);

    let nightly = cluster.run(&["restart", "nightly"]).await;
    nightly.expect_code(0);
    let cron_job = Api::<CronJob>::namespaced(cluster.client.clone(), NAMESPACE)
        .get("nightly")
        .await
        .unwrap();
    let runs: Vec<KubeJob> = jobs
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|job| {
            job.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| Some(&owner.uid) == cron_job.metadata.uid.as_ref())
        })
        .collect();
    assert_eq!(runs.len(), 1, "{}", nightly.stderr);
    assert_eq!(
        runs[0].metadata.annotations.as_ref().unwrap()["cronjob.kubernetes.io/instantiate"],
        "manual"
    );
    until(&cluster, &["show", "nightly"], |run| {
        run.stdout
            .lines()
            .any(|line| line.starts_with("| Status:") && line.contains("| Running for"))
    })
    .await;

    let before = jobs.get("migrate").await.unwrap().metadata.uid;
    cluster.run(&["restart", "migrate"]).await.expect_code(0);
    let after = jobs.get("migrate").await.unwrap().metadata.uid;
    assert_ne!(before, after, "a new Job");
    cluster.run(&["wait", "migrate"]).await.expect_code(0);

    let foreign = cluster.run(&["restart", "foreign"]).await;
    foreign.expect_code(1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_lock_holder_and_the_inventory() {
    let cluster = start().await;
    let status = cluster.run(&["status"]).await;
    status.expect_code(0);
    let text = &status.stdout;
    assert!(text.starts_with("Lock:"), "{text}");
    assert!(text.lines().next().unwrap().ends_with("free"), "{text}");
    assert!(
        text.contains("toolforge-jobs, 4 job(s) (2 continuous, 1 one-off, 1 scheduled)"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("migrate") && line.contains("succeeded")),
        "{text}"
    );

    cluster.hold_lock("watch by someone@host (pid 1)").await;
    let status = cluster.run(&["status", "-o", "json"]).await;
    let report: Value = serde_json::from_str(&status.expect_code(0).stdout).unwrap();
    assert_eq!(report["lock"]["holder"], "watch by someone@host (pid 1)");
    assert_eq!(report["lock"]["expired"], false);
    assert_eq!(report["inventory"]["jobs"]["continuous"], 2);
    let text = cluster.run(&["status"]).await.stdout;
    assert!(
        text.contains("held by watch by someone@host (pid 1) for "),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_next_waits_for_the_next_run_of_a_scheduled_job() {
    let script = Script::new(ContainerOutcome::RunForever).label(
        "app.kubernetes.io/component",
        "cronjobs",
        ContainerOutcome::Succeed {
            after: Duration::from_millis(50),
        },
    );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(JOBS);
    cluster.run(&["apply"]).await.expect_code(0);

    let waiting = cluster.run(&["wait", "nightly", "--next", "--timeout", "20s"]);
    let starting = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        cluster.run(&["restart", "nightly"]).await
    };
    let (waited, started) = tokio::join!(waiting, starting);
    started.expect_code(0);
    waited.expect_code(0);
    assert!(
        waited.stderr.contains("waiting for its next run"),
        "{}",
        waited.stderr
    );
    assert!(
        waited.stderr.contains("job 'nightly' completed"),
        "{}",
        waited.stderr
    );

    let quick = cluster
        .run(&["wait", "nightly", "--next", "--timeout", "1s"])
        .await;
    quick.expect_code(5);
    let not_scheduled = cluster.run(&["wait", "bot", "--next"]).await;
    not_scheduled.expect_code(2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_json_is_one_document_even_without_a_quota() {
    let cluster = Cluster::start().await;
    let quota = cluster.run(&["quota", "-o", "json"]).await;
    quota.expect_code(0);
    let tables: Value = serde_json::from_str(&quota.stdout)
        .unwrap_or_else(|error| panic!("{error}: not JSON:\n{}", quota.stdout));
    let titles: Vec<&str> = tables
        .as_array()
        .unwrap()
        .iter()
        .map(|table| table["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["Running jobs", "Per-job limits", "Job definitions"]
    );
    // Every item is there, and nothing limits any of them.
    let items: Vec<&Value> = tables
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|table| table["items"].as_array().unwrap())
        .collect();
    assert_eq!(items.len(), 8, "{tables}");
    assert!(items.iter().all(|item| item["limit"].is_null()), "{tables}");
    assert!(quota.stderr.is_empty(), "{}", quota.stderr);
}

/// What a command wrote to `path` so far.
fn written(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_prints_the_out_file_to_stdout_and_the_err_file_to_stderr_also_when_following() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(
        "\
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
- name: both
  command: ./both.py
  image: python3.11
  continuous: true
  filelog-stdout: both.log
  filelog-stderr: both.log
",
    );
    cluster.run(&["apply", "--wait"]).await.expect_code(0);
    let home = cluster.directory.path();
    std::fs::write(home.join("bot.out"), "out one\n").unwrap();
    std::fs::write(home.join("bot.err"), "err one\n").unwrap();

    let logs = cluster.run(&["logs", "bot"]).await;
    logs.expect_code(0);
    assert_eq!(logs.stdout, "out one\n");
    assert_eq!(logs.stderr, "err one\n");

    // One file for both streams is the job's output, on stdout.
    std::fs::write(home.join("both.log"), "said\nfailed\n").unwrap();
    let logs = cluster.run(&["logs", "both"]).await;
    logs.expect_code(0);
    assert_eq!(logs.stdout, "said\nfailed\n");
    assert_eq!(logs.stderr, "");

    // `--follow`: what is appended to each file goes to its own stream.
    let captured = tempfile::tempdir().unwrap();
    let (stdout_path, stderr_path) = (captured.path().join("out"), captured.path().join("err"));
    let mut child = cluster
        .command(&["logs", "bot", "--follow"])
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let settle = |done: &dyn Fn() -> bool, what: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}; stdout:\n{}\nstderr:\n{}",
                written(&stdout_path),
                written(&stderr_path)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    settle(
        &|| written(&stdout_path) == "out one\n" && written(&stderr_path) == "err one\n",
        "the files were never printed",
    );
    let append = |name: &str, text: &str| {
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .append(true)
            .open(home.join(name))
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    };
    append("bot.out", "out two\n");
    append("bot.err", "err two\n");
    settle(
        &|| {
            written(&stdout_path) == "out one\nout two\n"
                && written(&stderr_path) == "err one\nerr two\n"
        },
        "the appended lines were not printed apart",
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_restart_and_delete_write_under_the_lock_and_create_no_inventory() {
    let cluster = Cluster::start_with(Script::new(ContainerOutcome::RunForever)).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let run = [
        "run",
        "lone",
        "--command",
        "./lone.sh",
        "--image",
        "python3.11",
    ];
    cluster
        .run(&[&run[..], &["--continuous"]].concat())
        .await
        .expect_code(0);
    let lone = deployments.get("lone").await.unwrap();
    assert!(
        config_maps
            .get_opt("toolforge-jobs")
            .await
            .unwrap()
            .is_none(),
        "a job outside any file is recorded in no inventory, and none is created for it"
    );

    // Another writer (an apply, the daemon) holds the tool's lock: nothing is written.
    cluster.hold_lock("apply by someone@host (pid 1)").await;
    for args in [
        &["restart", "lone"][..],
        &["delete", "lone"],
        &["flush"],
        &["run", "other", "--command", "x", "--image", "python3.11"],
    ] {
        let held = cluster.run(args).await;
        held.expect_code(6);
        assert!(
            held.stderr
                .contains("held by apply by someone@host (pid 1)"),
            "{args:?}: {}",
            held.stderr
        );
    }
    let after = deployments.get("lone").await.unwrap();
    assert_eq!(after.metadata.uid, lone.metadata.uid, "not deleted");
    assert_eq!(
        after.spec.unwrap().template.metadata,
        lone.spec.unwrap().template.metadata,
        "not restarted"
    );
    assert!(
        Api::<KubeJob>::namespaced(cluster.client.clone(), NAMESPACE)
            .get_opt("other")
            .await
            .unwrap()
            .is_none()
    );
}
