//! `watch` end to end: the daemon runs as a child process against the in-process local cluster. File edits (in
//! place, by rename, in two halves, invalid then fixed), drift (a Deployment deleted, a CronJob edited, a one-off
//! deleted), an API outage, SIGTERM and a second daemon.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job as KubeJob};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use support::{Cluster, NAMESPACE, eventually};
use toolforge_local_cluster::Fault;

const TIMEOUT: Duration = Duration::from_secs(20);

const JOBS: &str = "\
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
";

const WITH_WEB: &str = "\
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
- name: nightly
  command: ./nightly.sh
  image: bookworm
  schedule: '17 3 * * *'
- name: web
  command: ./web.sh
  image: python3.11
  continuous: true
";

fn deployments(cluster: &Cluster) -> Api<Deployment> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

fn cron_jobs(cluster: &Cluster) -> Api<CronJob> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

fn jobs(cluster: &Cluster) -> Api<KubeJob> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

async fn exists(cluster: &Cluster, name: &str) -> bool {
    deployments(cluster).get_opt(name).await.unwrap().is_some()
}

async fn uid(cluster: &Cluster, name: &str) -> Option<String> {
    deployments(cluster)
        .get_opt(name)
        .await
        .unwrap()
        .and_then(|deployment| deployment.metadata.uid)
}

/// The inventory's record, as JSON.
/// Writes the jobs file the way editors that save by rename do: a temporary file, then a rename over it.
fn save_by_rename(cluster: &Cluster, yaml: &str) {
    let temporary = cluster.directory.path().join(".jobs.yaml.swp");
    std::fs::write(&temporary, yaml).unwrap();
    std::fs::rename(&temporary, cluster.directory.path().join("jobs.yaml")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_edits_in_place_and_by_rename_are_applied() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "`bot` is created at start", || {
        exists(&cluster, "bot")
    })
    .await;
    let bot = uid(&cluster, "bot").await;

    // In place: truncate and write.
    let saved = Instant::now();
    cluster.write_jobs(WITH_WEB);
    eventually(TIMEOUT, "`web` is created", || exists(&cluster, "web")).await;
    let latency = saved.elapsed();
    assert!(
        latency < Duration::from_secs(3),
        "save to write: {latency:?}"
    );

    // By rename: `web` is dropped from the file, so it is pruned (the daemon saw it in the file).
    save_by_rename(&cluster, JOBS);
    eventually(TIMEOUT, "`web` is pruned", || async {
        !exists(&cluster, "web").await
    })
    .await;
    assert_eq!(uid(&cluster, "bot").await, bot, "`bot` was left as it was");
    let log = daemon.log();
    assert!(log.contains("create: "), "{log}");
    assert!(log.contains("delete: absent from the file"), "{log}");

    // The status is written once the reconcile is done.
    eventually(TIMEOUT, "the status names the file's jobs", || async {
        cluster.inventory().await["daemon"]["jobs"] == json!(["bot", "nightly"])
    })
    .await;
    let record = cluster.inventory().await;
    let status = &record["daemon"];
    assert!(
        status["holder"].as_str().unwrap().starts_with("watch by "),
        "{record}"
    );
    assert!(status["lastReconcile"]["at"].is_string(), "{record}");
    assert!(status["lastError"].is_null(), "{record}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_the_file_sees_edits_too() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let _daemon = cluster.spawn_watch(&["--poll", "100ms"]);
    eventually(TIMEOUT, "`bot` is created", || exists(&cluster, "bot")).await;
    cluster.write_jobs(WITH_WEB);
    eventually(TIMEOUT, "`web` is created", || exists(&cluster, "web")).await;
    save_by_rename(&cluster, JOBS);
    eventually(TIMEOUT, "`web` is pruned", || async {
        !exists(&cluster, "web").await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_pausing_at_a_job_boundary_deletes_nothing() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(WITH_WEB);
    let daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "the jobs are created", || exists(&cluster, "web")).await;
    let web = uid(&cluster, "web").await;

    // The first half is a valid file without `web`; the writer pauses longer than the debounce (until the daemon
    // planned the half), shorter than the prune settle period of 1 s, before the rest.
    let half = &WITH_WEB[..WITH_WEB.find("- name: web").unwrap()];
    cluster.write_jobs(half);
    daemon
        .wait_for_log("the deletes wait until the jobs file has not changed", 1)
        .await;
    cluster.write_jobs(WITH_WEB);
    daemon
        .wait_for_log("the jobs file changed again: its deletes wait", 1)
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(uid(&cluster, "web").await, web, "{}", daemon.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_for_people_draws_the_diagnostics_of_an_invalid_file() {
    let cluster = Cluster::start().await;
    cluster.write_jobs("- name: bad\n  command: ./x\n  image: nosuchimage\n");
    let mut daemon = cluster.spawn(&["watch", "--log-format", "human", "--debounce", "100ms"]);
    daemon.wait_for_log("the jobs file is invalid", 1).await;
    daemon.wait_for_log("not a Toolforge image", 1).await;
    daemon.terminate();
    assert_eq!(daemon.exit_code().await, 0);
    let log = daemon.log();
    // Drawn as `validate` draws it, one line of the report per line of the log; nothing escaped.
    assert!(log.contains("jobs.yaml:3:10]"), "{log}");
    assert!(
        log.lines()
            .any(|line| line.trim_start().starts_with("3 │   image: nosuchimage")),
        "{log}"
    );
    assert!(!log.contains("\\n"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_or_half_written_file_changes_nothing_until_it_is_fixed() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(WITH_WEB);
    let daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "the jobs are created", || exists(&cluster, "web")).await;
    let web = uid(&cluster, "web").await;

    // Half a file: the write stops in the middle of `web`'s entry, then goes on after a while.
    let half = &WITH_WEB[..WITH_WEB.find("  image: python3.11\n  continuous").unwrap() + 12];
    cluster.write_jobs(half);
    daemon.wait_for_log("the jobs file is invalid", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.write_jobs(WITH_WEB);

    // An emptied file, then one with a typo: each is reported and ignored.
    cluster.write_jobs("");
    daemon.wait_for_log("the jobs file is invalid", 2).await;
    cluster.write_jobs(&WITH_WEB.replace("schedule:", "memory: 1Gi\n  schedule:"));
    daemon.wait_for_log("the jobs file is invalid", 3).await;
    assert!(
        daemon.log().contains("unknown key `memory`"),
        "{}",
        daemon.log()
    );
    eventually(TIMEOUT, "the invalid file is recorded", || async {
        cluster.inventory().await["daemon"]["lastReconcile"]["result"] == "invalid-file"
    })
    .await;
    assert_eq!(
        uid(&cluster, "web").await,
        web,
        "nothing was pruned or replaced"
    );
    assert!(
        cron_jobs(&cluster)
            .get_opt("nightly")
            .await
            .unwrap()
            .is_some()
    );

    // The fixed file is applied.
    cluster.write_jobs(&WITH_WEB.replace("./web.sh", "./web.sh --port 8000"));
    eventually(TIMEOUT, "`web` is updated", || async {
        let web = deployments(&cluster).get("web").await.unwrap();
        serde_json::to_string(&web.spec)
            .unwrap()
            .contains("--port 8000")
    })
    .await;
    assert!(!daemon.log().contains("delete:"), "{}", daemon.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_cut_between_two_jobs_for_a_moment_prunes_nothing() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(WITH_WEB);
    let daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "the jobs are created", || exists(&cluster, "web")).await;
    let web = uid(&cluster, "web").await;

    // A writer stops after `nightly` for longer than the debounce time (100 ms), then writes the rest: the cut
    // file is valid and drops `web`, but it changes again before its delete may run.
    cluster.write_jobs(JOBS);
    // The cut file must be planned before the rest arrives, however loaded the machine is.
    daemon
        .wait_for_log("the deletes wait until the jobs file has not changed", 1)
        .await;
    cluster.write_jobs(WITH_WEB);
    daemon
        .wait_for_log("the jobs file changed again: its deletes wait", 1)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(uid(&cluster, "web").await, web, "{}", daemon.log());
    assert!(!daemon.log().contains("delete:"), "{}", daemon.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_repaired_but_a_one_off_deleted_by_hand_does_not_run_again() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(&format!(
        "{JOBS}- name: migrate\n  command: ./migrate.sh\n  image: python3.11\n"
    ));
    let daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "the jobs are created", || async {
        exists(&cluster, "bot").await && jobs(&cluster).get_opt("migrate").await.unwrap().is_some()
    })
    .await;
    cluster.watches_open().await;
    eventually(TIMEOUT, "the one-off's outcome is recorded", || async {
        cluster.inventory().await["jobs"]["migrate"]["runs"][0]["outcome"] == "succeeded"
    })
    .await;

    // A continuous job deleted by hand comes back.
    let bot = uid(&cluster, "bot").await;
    deployments(&cluster)
        .delete("bot", &DeleteParams::background())
        .await
        .unwrap();
    eventually(TIMEOUT, "`bot` is recreated", || async {
        matches!(uid(&cluster, "bot").await, Some(new) if Some(&new) != bot.as_ref())
    })
    .await;

    // A CronJob edited by hand is restored.
    cron_jobs(&cluster)
        .patch(
            "nightly",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"schedule": "0 0 * * *"}})),
        )
        .await
        .unwrap();
    eventually(TIMEOUT, "the schedule is restored", || async {
        let nightly = cron_jobs(&cluster).get("nightly").await.unwrap();
        nightly.spec.unwrap().schedule == "17 3 * * *"
    })
    .await;

    // A one-off deleted by hand (or by its TTL) ran: it is not run again.
    let drifts = daemon.count("drift: reconciling");
    jobs(&cluster)
        .delete("migrate", &DeleteParams::background())
        .await
        .unwrap();
    daemon.wait_for_log("drift: reconciling", drifts + 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        jobs(&cluster).get_opt("migrate").await.unwrap().is_none(),
        "{}",
        daemon.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_outage_is_ridden_out_with_back_off() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "`bot` is created", || exists(&cluster, "bot")).await;
    cluster.watches_open().await;

    let watches = cluster.local.request_count("watch", "deployments");
    // Reading the live state fails six times in a row (more than one reconcile's retries of a transient error),
    // the open watches drop and cannot resume at once.
    cluster
        .local
        .inject_fault(Fault::new("list", "cronjobs", 500, 6));
    cluster
        .local
        .inject_fault(Fault::new("watch", "deployments", 500, 3));
    cluster.local.close_watches();
    cluster.write_jobs(WITH_WEB);
    daemon
        .wait_for_log("trying again after a back-off", 1)
        .await;
    eventually(TIMEOUT, "`web` is created once the API is back", || {
        exists(&cluster, "web")
    })
    .await;
    eventually(TIMEOUT, "the failure is recorded", || async {
        cluster.inventory().await["daemon"]["lastError"]["result"] == "failed"
    })
    .await;

    // The watches are back too (three refused attempts, then one that holds): drift is repaired again.
    eventually(TIMEOUT, "the Deployments watch is open again", || async {
        cluster.local.request_count("watch", "deployments") >= watches + 4
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    deployments(&cluster)
        .delete("web", &DeleteParams::background())
        .await
        .unwrap();
    eventually(TIMEOUT, "`web` is recreated", || exists(&cluster, "web")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_the_lease_and_a_second_daemon_or_apply_gets_the_lock_error() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let mut daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "`bot` is created", || exists(&cluster, "bot")).await;
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), NAMESPACE);
    let lease = leases.get("toolforge-jobs").await.unwrap();
    let holder = lease.spec.unwrap().holder_identity.unwrap();
    assert!(holder.starts_with("watch by "), "{holder}");

    let mut second = cluster.spawn_watch(&[]);
    assert_eq!(second.exit_code().await, 6, "{}", second.log());
    assert!(
        second.log().contains("held by watch by"),
        "{}",
        second.log()
    );
    cluster.write_jobs(WITH_WEB);
    let apply = cluster.run(&["apply", "--job", "web"]).await;
    if apply.code != 0 {
        // The daemon may have created `web` first; otherwise the apply met the lock.
        apply.expect_code(6);
    }

    daemon.terminate();
    assert_eq!(daemon.exit_code().await, 0, "{}", daemon.log());
    assert!(leases.get_opt("toolforge-jobs").await.unwrap().is_none());
    let record = cluster.inventory().await;
    assert!(record["daemon"]["stopped"].is_string(), "{record}");
    // Once it is gone, `apply` may take the lock.
    cluster.run(&["apply"]).await.expect_code(0);
}

/// How long a file change takes to reach the cluster, and what an idle daemon asks of the API: numbers for
/// docs/watch.md. Not a pass/fail benchmark beyond "no requests while idle".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_daemon_makes_no_requests() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(JOBS);
    let daemon = cluster.spawn_watch(&[]);
    eventually(TIMEOUT, "`bot` is created", || exists(&cluster, "bot")).await;
    cluster.watches_open().await;
    // Our own writes come back as watch events: let that settle.
    tokio::time::sleep(Duration::from_millis(500)).await;

    cluster.local.reset_request_counts();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        cluster.requests(),
        0,
        "{:?}\n{}",
        cluster.local.request_counts(),
        daemon.log()
    );

    let saved = Instant::now();
    cluster.write_jobs(WITH_WEB);
    eventually(TIMEOUT, "`web` is created", || exists(&cluster, "web")).await;
    eprintln!("save to first write: {:?}", saved.elapsed());
}

const ALWAYS: &str = "\
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
- name: report
  command: ./report.sh
  image: bookworm
  rerun: always
";

/// `rerun: always` is once per apply the user asked for: the daemon's start, then each change of the file. Its
/// own new Job, the Job finishing, drift repair and resyncs do not run it again (it used to be re-created about
/// three times a second, forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerun_always_runs_once_per_file_change_not_per_reconcile() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(ALWAYS);
    let daemon = cluster.spawn_watch(&["--resync", "2s"]);
    eventually(TIMEOUT, "`report` ran once", || async {
        cluster.local.request_count("create", "jobs") >= 1
    })
    .await;
    // Drift: a Deployment deleted by hand is repaired without running `report` again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    deployments(&cluster)
        .delete("bot", &DeleteParams::default())
        .await
        .unwrap();
    eventually(TIMEOUT, "`bot` is repaired", || exists(&cluster, "bot")).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        cluster.local.request_count("create", "jobs"),
        1,
        "30 s without a file change, drift and resyncs included\n{}",
        daemon.log()
    );

    cluster.write_jobs(&ALWAYS.replace("./bot.py", "./bot.py --fast"));
    eventually(
        TIMEOUT,
        "a change of the file, even of another job, runs `report` again",
        || async { cluster.local.request_count("create", "jobs") >= 2 },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        cluster.local.request_count("create", "jobs"),
        2,
        "{}",
        daemon.log()
    );
}

/// The numbers of docs/watch.md, for 300 jobs: resident memory, CPU and API requests over a minute of idling, and
/// the time from saving the file to the first write with the default debounce. Run by hand:
/// `cargo test --test watch -- --ignored --nocapture measure`, with `TOOLFORGE_JOBS_BIN=target/release/toolforge-jobs`
/// to measure a release build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "idles for a minute; run by hand for the measurements"]
async fn measure_a_daemon_with_300_jobs() {
    let cluster = Cluster::start().await;
    let job = |name: String| {
        format!("- name: {name}\n  command: ./run.sh\n  image: bookworm\n  continuous: true\n")
    };
    let mut file: String = (0..300).map(|i| job(format!("job{i}"))).collect();
    cluster.write_jobs(&file);
    let daemon = cluster.spawn_watch(&["--debounce", "300ms"]);
    let started = Instant::now();
    while daemon.count("300 of 300 jobs changed") == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the 300 jobs were not created:\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.watches_open().await;
    tokio::time::sleep(Duration::from_secs(5)).await;

    let ticks = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", daemon.pid())).unwrap();
        let fields: Vec<u64> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .filter_map(|field| field.parse().ok())
            .collect();
        // utime and stime, fields 14 and 15 of the whole line.
        fields[10] + fields[11]
    };
    cluster.local.reset_request_counts();
    let before = ticks();
    tokio::time::sleep(Duration::from_secs(60)).await;
    // Clock ticks of 10 ms per second: percent of one core.
    let idle_cpu = f64::from(u32::try_from(ticks() - before).unwrap()) / 60.0;
    let idle_requests = cluster.local.request_counts();
    let status = std::fs::read_to_string(format!("/proc/{}/status", daemon.pid())).unwrap();
    let rss = status
        .lines()
        .find(|line| line.starts_with("VmRSS"))
        .unwrap()
        .to_owned();

    let mut latencies = Vec::new();
    for round in 0..5 {
        file.push_str(&job(format!("extra{round}")));
        let saved = jiff::Timestamp::now();
        cluster.write_jobs(&file);
        let created = format!("created Deployment `extra{round}`");
        daemon.wait_for_log(&created, 1).await;
        let line = daemon
            .log()
            .lines()
            .find(|line| line.contains(&created))
            .unwrap()
            .to_owned();
        let logged: Value = serde_json::from_str(&line).unwrap();
        let at: jiff::Timestamp = logged["timestamp"].as_str().unwrap().parse().unwrap();
        latencies.push(at.duration_since(saved).as_millis_f64());
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    eprintln!("{rss}");
    eprintln!("idle CPU over 60 s: {idle_cpu:.3} % of one core");
    eprintln!("API requests while idle for 60 s: {idle_requests:?}");
    eprintln!("save to first write (debounce 300 ms): {latencies:?} ms");
}
