//! The size limits of a real cluster: a ConfigMap's data over 1 MiB is invalid (422), an object too big for etcd
//! is refused with etcd's error (500), as kube-apiserver 1.33 answers them; kubectl shows the same messages.

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;
use toolforge_local_cluster::{LocalCluster, Options};

use support::Kubectl;

const MIB: usize = 1 << 20;

/// A ConfigMap whose data holds `data_bytes` (Kubernetes counts the values, not the keys).
fn config_map(name: &str, data_bytes: usize) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "x".repeat(data_bytes))])),
        ..Default::default()
    }
}

fn refusal(error: kube::Error) -> (u16, String, String) {
    match error {
        kube::Error::Api(status) => (status.code, status.reason, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_map_data_over_one_mebibyte_is_invalid_on_create_and_update() {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().expect("client"), "default");
    let params = PostParams::default();

    api.create(&params, &config_map("full", MIB))
        .await
        .expect("exactly 1 MiB is allowed");
    let too_long = (
        422,
        "Invalid".to_owned(),
        "ConfigMap \"full\" is invalid: []: Too long: may not be more than 1048576 bytes"
            .to_owned(),
    );
    let mut grown = api.get("full").await.expect("stored");
    grown.data = config_map("full", MIB + 1).data;
    let error = api
        .replace("full", &params, &grown)
        .await
        .expect_err("refused");
    assert_eq!(refusal(error), too_long);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let error = api.create(&dry_run, &config_map("full", MIB + 1)).await;
    assert_eq!(
        refusal(error.expect_err("refused")).0,
        422,
        "validation runs on a dry run too"
    );

    let kubectl = Kubectl::new(&cluster);
    let file = kubectl.directory.path().join("big.txt");
    std::fs::write(&file, "x".repeat(MIB + 1)).expect("file written");
    let from_file = format!("--from-file=big.txt={}", file.display());
    let (created, _, stderr) = kubectl
        .run(&["create", "configmap", "big", "-n", "default", &from_file])
        .await;
    assert!(!created);
    assert!(
        stderr.contains(
            "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes"
        ),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_too_big_for_etcd_gets_etcds_error() {
    let cluster = LocalCluster::start(Options::default())
        .await
        .expect("cluster starts");
    let api: Api<CronJob> = Api::namespaced(cluster.client().expect("client"), "default");
    // 1.6 MB of arguments: no field limit applies, but etcd's 1.5 MiB request limit does.
    let cron_job = |args: usize| -> CronJob {
        serde_json::from_value(json!({
            "metadata": {"name": "big"},
            "spec": {"schedule": "@daily", "suspend": true, "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "job", "image": "busybox", "args": vec!["x".repeat(1000); args]}]
            }}}}}
        }))
        .expect("a CronJob")
    };
    let error = api
        .create(&PostParams::default(), &cron_job(1600))
        .await
        .expect_err("refused");
    assert_eq!(
        refusal(error),
        (
            500,
            String::new(),
            "etcdserver: request is too large".to_owned()
        )
    );
    assert!(
        api.get_opt("big").await.expect("get").is_none(),
        "nothing stored"
    );
    api.create(&PostParams::default(), &cron_job(1400))
        .await
        .expect("1.4 MB fits");

    let kubectl = Kubectl::new(&cluster);
    let manifest = kubectl.directory.path().join("big.json");
    let mut bigger = cron_job(1600);
    bigger.metadata.name = Some("bigger".to_owned());
    std::fs::write(&manifest, serde_json::to_vec(&bigger).expect("JSON")).expect("written");
    let path = manifest.display().to_string();
    let (created, _, stderr) = kubectl.run(&["create", "-n", "default", "-f", &path]).await;
    assert!(!created);
    assert!(
        stderr.starts_with("Error from server: error when creating")
            && stderr
                .trim_end()
                .ends_with(": etcdserver: request is too large"),
        "{stderr}"
    );
}
