//! An inventory too big for one `ConfigMap` (SPEC §6): 10 000 jobs' records are stored in parts against a
//! cluster that refuses `ConfigMap`s over 1 MiB, read back whole by every reader, and a change rewrites one part.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

mod support;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use support::{Cluster, NAMESPACE};
use toolforge_jobs::cluster::inventory::{self, InventoryStore};
use toolforge_jobs::model::Kind;
use toolforge_jobs::model::inventory::{Inventory, JobRecord, RunOutcome, RunRecord};

const SET: &str = "toolforge-jobs";

/// `count` one-off jobs that ran once, about 420 bytes of record each.
fn one_offs(count: usize) -> Inventory {
    let mut inventory = Inventory::default();
    for index in 0..count {
        let fingerprint = format!("{index:064x}");
        inventory.jobs.insert(
            format!("job-{index:05}"),
            JobRecord {
                kind: Kind::OneOff,
                desired_hash: format!("{:064x}", index * 7),
                fingerprint: fingerprint.clone(),
                runs: vec![RunRecord {
                    fingerprint,
                    job_uid: Some(format!("0b9c6a3e-5d2f-4c1e-9a7b-{index:012x}")),
                    started: "2026-12-01T12:00:00Z".parse().unwrap(),
                    finished: Some("2026-12-01T12:01:30Z".parse().unwrap()),
                    outcome: RunOutcome::Succeeded,
                }],
            },
        );
    }
    inventory
}

fn config_maps(cluster: &Cluster) -> Api<ConfigMap> {
    Api::namespaced(cluster.client.clone(), NAMESPACE)
}

async fn stored(cluster: &Cluster) -> Inventory {
    inventory::read(&config_maps(cluster), NAMESPACE, SET)
        .await
        .unwrap()
        .unwrap()
        .inventory
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_jobs_are_stored_in_parts_and_a_change_rewrites_one() {
    let cluster = Cluster::start().await;
    let wanted = one_offs(10_000);
    let mut store = InventoryStore::new(&cluster.client, NAMESPACE, SET, None);
    store
        .update(|inventory| *inventory = wanted.clone())
        .await
        .unwrap();
    assert_eq!(stored(&cluster).await, wanted);
    let parts = config_maps(&cluster)
        .list(&ListParams::default().labels("jobs.toolforge.org/inventory-part-of=toolforge-jobs"))
        .await
        .unwrap()
        .items;
    assert!(parts.len() >= 3, "{} parts", parts.len());

    // A new run of one job: one part is created, the index switched, the part it replaces deleted.
    let (creates, updates, deletes) = counts(&cluster);
    let mut changed = wanted.clone();
    let run = changed.jobs["job-00042"].runs[0].clone();
    changed.jobs.get_mut("job-00042").unwrap().runs.push(run);
    store
        .update(|inventory| *inventory = changed.clone())
        .await
        .unwrap();
    let (creates_after, updates_after, deletes_after) = counts(&cluster);
    assert_eq!(
        (
            creates_after - creates,
            updates_after - updates,
            deletes_after - deletes
        ),
        (1, 1, 1)
    );
    assert_eq!(stored(&cluster).await, changed);

    // A store that read before the change writes over it without losing it (the conflict path re-reads parts).
    let mut late = InventoryStore::new(&cluster.client, NAMESPACE, SET, None);
    late.update(|inventory| {
        inventory.jobs.remove("job-00007");
    })
    .await
    .unwrap();
    let mut expected = changed.clone();
    expected.jobs.remove("job-00007");
    assert_eq!(stored(&cluster).await, expected);

    // Shrunk back to one ConfigMap, no part is left.
    store
        .update(|inventory| inventory.jobs.retain(|name, _| name.as_str() < "job-00010"))
        .await
        .unwrap();
    let left = config_maps(&cluster)
        .list(&ListParams::default().fields("metadata.name!=kube-root-ca.crt"))
        .await
        .unwrap();
    let names: Vec<_> = left
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names, [SET], "{names:?}");
    assert_eq!(stored(&cluster).await.jobs.len(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_whose_index_was_replaced_meanwhile_reads_the_new_record() {
    let cluster = Cluster::start().await;
    let mut store =
        InventoryStore::new(&cluster.client, NAMESPACE, SET, None).with_part_limit(20_000);
    store
        .update(|inventory| *inventory = one_offs(300))
        .await
        .unwrap();
    let old_index = config_maps(&cluster).get(SET).await.unwrap();
    store
        .update(|inventory| {
            for record in inventory.jobs.values_mut() {
                record.runs[0].outcome = RunOutcome::Failed;
            }
        })
        .await
        .unwrap();
    // The parts the old index names are gone; the reader notices and reads the new index.
    let read = inventory::load(&config_maps(&cluster), NAMESPACE, SET, Some(old_index))
        .await
        .unwrap()
        .unwrap();
    assert!(
        read.inventory
            .jobs
            .values()
            .all(|record| record.runs[0].outcome == RunOutcome::Failed)
    );
    assert_eq!(read.inventory.jobs.len(), 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_read_an_inventory_in_parts() {
    let cluster = Cluster::start().await;
    let mut store = InventoryStore::new(&cluster.client, NAMESPACE, SET, None);
    store
        .update(|inventory| *inventory = one_offs(10_000))
        .await
        .unwrap();
    cluster.write_jobs(
        "\
- name: job-00001
  command: ./migrate.sh
  image: bookworm
",
    );
    let status = cluster.run(&["status", "-o", "json"]).await;
    status.expect_code(0);
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(status["inventory"]["jobs"]["one-off"], 10_000, "{status}");
    // Dropping 9 999 of 10 000 jobs is refused without `--allow-mass-delete`.
    cluster.run(&["diff"]).await.expect_code(7);
    // The one job runs (its definition is new); the 9 999 others are pruned and remembered as tombstones.
    let apply = cluster
        .run(&["apply", "--yes", "--allow-mass-delete"])
        .await;
    apply.expect_code(0);
    let after = stored(&cluster).await;
    assert_eq!(after.jobs.len(), 1, "{}", apply.stderr);
    assert_eq!(after.jobs["job-00001"].runs.len(), 2);
    assert_eq!(after.pruned.len(), 9_999);
    cluster.run(&["diff"]).await.expect_code(0);
}

fn counts(cluster: &Cluster) -> (u64, u64, u64) {
    let count = |verb| cluster.local.request_count(verb, "configmaps");
    (count("create"), count("update"), count("delete"))
}
