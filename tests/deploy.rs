//! The manifests in deploy/ that run `serve` in a cluster: real kubectl applies them with a server-side dry run
//! against the local cluster (every object is accepted, nothing is created), and every flag they pass to
//! `serve` is one `serve` has.

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use toolforge_local_cluster::{LocalCluster, Options};

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(file)
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs (it is on every machine of this kind)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

// kubectl runs as a blocking child process: the in-process cluster needs threads of its own to answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifests_pass_a_server_side_dry_run_and_create_nothing() {
    let cluster = LocalCluster::start(Options::default()).await.unwrap();
    let directory = tempfile::tempdir().unwrap();
    let kubeconfig = directory.path().join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml()).unwrap();
    let namespace = deploy("namespace.yaml");
    let (ok, text) = kubectl(&kubeconfig, &["apply", "-f", namespace.to_str().unwrap()]);
    assert!(ok, "{text}");
    let serve = deploy("serve.yaml");
    let (ok, text) = kubectl(
        &kubeconfig,
        &["apply", "--dry-run=server", "-f", serve.to_str().unwrap()],
    );
    assert!(ok, "{text}");
    for object in [
        "serviceaccount/toolforge-jobs-serve",
        "clusterrole.rbac.authorization.k8s.io/toolforge-jobs-serve",
        "clusterrolebinding.rbac.authorization.k8s.io/toolforge-jobs-serve",
        "deployment.apps/toolforge-jobs-serve",
        "service/toolforge-jobs-serve",
    ] {
        assert!(
            text.contains(&format!("{object} created (server dry run)")),
            "{object} missing in:\n{text}"
        );
    }
    let deployments: Api<Deployment> = Api::namespaced(cluster.client().unwrap(), "toolforge-jobs");
    assert!(
        deployments
            .get_opt("toolforge-jobs-serve")
            .await
            .unwrap()
            .is_none()
    );
}

#[test]
fn every_flag_the_deployment_passes_is_a_flag_of_serve() {
    let manifest = std::fs::read_to_string(deploy("serve.yaml")).unwrap();
    let help = Command::new(env!("CARGO_BIN_EXE_toolforge-jobs"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let flags: Vec<&str> = manifest
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- --"))
        .map(|flag| flag.split('=').next().unwrap())
        .collect();
    assert!(flags.len() >= 4, "{flags:?}");
    for flag in flags {
        assert!(
            help.contains(&format!("--{flag}")),
            "`serve` has no --{flag}"
        );
    }
}
