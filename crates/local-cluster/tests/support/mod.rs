//! What the integration tests share: the kubectl harness — a kubeconfig for one cluster and a fresh discovery
//! cache, so each test sees the cluster as a first-time kubectl user would (kubectl must be installed: a missing
//! binary fails the test instead of skipping it) — and [`eventually`], the wait for the cluster to get somewhere.

#![allow(
    dead_code,
    reason = "each test file uses the part of the harness it needs"
)]

use std::future::Future;
use std::time::Duration;

use std::path::PathBuf;
use std::process::Stdio;

use tokio::process::Command;
use toolforge_local_cluster::LocalCluster;

pub(crate) struct Kubectl {
    pub(crate) directory: tempfile::TempDir,
    kubeconfig: PathBuf,
    binary: PathBuf,
}

impl Kubectl {
    pub(crate) fn new(cluster: &LocalCluster) -> Self {
        let directory = tempfile::tempdir().expect("temp dir");
        let kubeconfig = directory.path().join("kubeconfig");
        cluster
            .write_kubeconfig(&kubeconfig)
            .expect("kubeconfig written");
        Kubectl {
            directory,
            kubeconfig,
            binary: PathBuf::from("kubectl"),
        }
    }

    /// The same harness running another kubectl binary (e.g. `/usr/lib/google-cloud-sdk/bin/kubectl.1.27`).
    pub(crate) fn using(mut self, binary: &str) -> Self {
        self.binary = PathBuf::from(binary);
        self
    }

    /// Runs kubectl (which must be installed); returns (success, stdout, stderr).
    pub(crate) async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let output = Command::new(&self.binary)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.directory.path().join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("kubectl runs");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    pub(crate) async fn ok(&self, args: &[&str]) -> String {
        let (success, stdout, stderr) = self.run(args).await;
        assert!(success, "kubectl {args:?} failed: {stdout} {stderr}");
        stdout
    }
}

/// Polls `check` every 5 ms until it returns something; fails the test after 10 seconds, naming `what`.
pub(crate) async fn eventually<T, F: Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    for _ in 0..2000 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for {what}");
}
