//! `wait` without a job name and `status --wait` end to end, against the in-process local cluster: an edit under
//! `watch` awaited at once (the record from before the edit must not satisfy it), a failing one-off, a file nobody
//! applies, a file already in effect, the timeout; and `status`'s last apply and run outcomes, which agree with
//! `list`.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job as KubeJob;
use kube::api::Api;
use serde_json::Value;
use support::{Cluster, NAMESPACE, eventually};
use toolforge_local_cluster::{ContainerOutcome, Script};

const TIMEOUT: Duration = Duration::from_secs(20);

const BOT: &str = "\
- name: bot
  command: ./bot.py
  image: python3.11
  continuous: true
";

const EDITED: &str = "\
- name: bot
  command: ./bot.py --fast
  image: python3.11
  continuous: true
- name: migrate
  command: ./migrate.sh
  image: bookworm
";

const FAILING: &str = "\
- name: broken
  command: ./broken.sh
  image: bookworm
";

fn jobs(cluster: &Cluster) -> Api<KubeJob> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

async fn command_of_bot(cluster: &Cluster) -> Option<String> {
    let deployment = Api::<Deployment>::namespaced(cluster.client.clone(), NAMESPACE)
        .get_opt("bot")
        .await
        .unwrap()?;
    let value = serde_json::to_value(deployment).unwrap();
    Some(value["spec"]["template"]["spec"]["containers"][0]["command"].to_string())
}

fn succeeded(job: &KubeJob) -> bool {
    job.status
        .iter()
        .flat_map(|status| status.conditions.iter().flatten())
        .any(|condition| condition.type_ == "Complete" && condition.status == "True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_under_watch_is_awaited_until_the_daemon_applied_it() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(BOT);
    let daemon = cluster.spawn_watch(&[]);
    cluster.watches_open().await;
    cluster
        .run(&["wait", "--timeout", "30s"])
        .await
        .expect_code(0)
        .expect_stderr("applied by watch by");

    // At once after the edit: the daemon has not seen it yet, and its record is of the file before it.
    cluster.write_jobs(EDITED);
    let waited = cluster.run(&["wait", "--timeout", "60s"]).await;
    waited
        .expect_code(0)
        .expect_stderr("applied by watch by")
        .expect_stderr("its jobs are done");
    let migrate = jobs(&cluster).get_opt("migrate").await.unwrap();
    assert!(
        migrate.as_ref().is_some_and(succeeded),
        "the one-off of the edit completed: {migrate:?}\n{}",
        waited.stderr
    );
    let command = command_of_bot(&cluster).await.unwrap();
    assert!(command.contains("--fast"), "{command}");

    // `status --wait` is satisfied by the same record, and then shows it.
    let status = cluster.run(&["status", "--wait", "30s"]).await;
    status.expect_code(0).expect_stdout("Last applied:");
    // The daemon may have re-applied since (nothing to change: "0 job(s) changed"); the record is still its.
    assert!(
        status.stdout.contains("by watch by")
            && status.stdout.contains(" job(s) changed, complete"),
        "{}",
        status.stdout
    );
    drop(daemon);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_that_fails_exits_4() {
    let script = Script::new(ContainerOutcome::RunForever).label(
        "app.kubernetes.io/name",
        "broken",
        ContainerOutcome::Exit {
            code: 3,
            after: Duration::from_millis(20),
        },
    );
    let cluster = Cluster::start_with(script).await;
    cluster.write_jobs(FAILING);
    cluster.run(&["apply"]).await.expect_code(0);
    let waited = cluster.run(&["wait", "--timeout", "30s"]).await;
    waited
        .expect_code(4)
        .expect_stderr("exited with code 3")
        .expect_stderr("a job failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_nobody_applies_fails_after_the_grace_and_one_in_effect_succeeds() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(BOT);
    let started = Instant::now();
    let nobody = cluster.run(&["wait", "--timeout", "60s"]).await;
    nobody
        .expect_code(1)
        .expect_stderr("nobody is applying")
        .expect_stderr("toolforge-jobs apply");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(20),
        "{took:?}"
    );

    cluster.run(&["apply"]).await.expect_code(0);
    // The same jobs in other words: no apply records this content, and nothing needs writing.
    cluster.write_jobs(&format!("# the bot\n{BOT}"));
    cluster.run(&["apply"]).await.expect_code(0);
    cluster
        .run(&["wait", "--timeout", "30s"])
        .await
        .expect_code(0)
        .expect_stderr("is up to date");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_exits_5_while_the_holder_has_not_applied_the_content() {
    let cluster = Cluster::start().await;
    cluster.write_jobs(BOT);
    // Somebody holds the lock and never applies.
    cluster
        .hold_lock("watch by someone@elsewhere (pid 1)")
        .await;
    let started = Instant::now();
    let waited = cluster.run(&["wait", "--timeout", "2s"]).await;
    waited
        .expect_code(5)
        .expect_stderr("timed out 2 seconds")
        .expect_stderr("waiting for watch by someone@elsewhere (pid 1) to apply this content");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_last_apply_and_run_outcomes_as_list_does() {
    let cluster = Cluster::start().await;
    let none = cluster.run(&["status"]).await;
    none.expect_code(0).expect_stdout("none yet");

    cluster.write_jobs(EDITED);
    cluster.run(&["apply"]).await.expect_code(0);
    // Nobody waited for `migrate`: the inventory does not know how it ended; `list` does.
    eventually(TIMEOUT, "list shows migrate succeeded", || async {
        let list = cluster.run(&["list"]).await;
        // A row of upstream's bordered table: `|  migrate  |  one-off  | Succeeded for 1s |`.
        list.stdout.lines().any(|line| {
            line.split('|').any(|cell| cell.trim() == "migrate") && line.contains("Succeeded")
        })
    })
    .await;
    let status = cluster.run(&["status"]).await;
    let text = &status.expect_code(0).stdout;
    let last = text
        .lines()
        .find(|line| line.starts_with("Last applied:"))
        .unwrap();
    assert!(
        last.contains("by apply by") && last.contains("2 job(s) changed, complete"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("migrate") && line.contains("succeeded")),
        "{text}"
    );

    let report: Value =
        serde_json::from_str(&cluster.run(&["status", "-o", "json"]).await.stdout).unwrap();
    let last_apply = &report["inventory"]["last_apply"];
    assert_eq!(last_apply["result"]["state"], "complete", "{report}");
    assert_eq!(
        support::sorted_strings(&last_apply["changed"]),
        ["bot", "migrate"],
        "{report}"
    );
    assert_eq!(
        report["inventory"]["runs"][0]["outcome"], "succeeded",
        "{report}"
    );
}
