//! The controllers and the scripted kubelet as kubectl users see them: `wait --for=condition=complete|failed`,
//! `rollout status`, and the STATUS column of `get pods` for each way a pod ends (reference §6 (b)).

mod support;

use std::time::Duration;

use toolforge_local_cluster::{
    ContainerOutcome, Controllers, Kubelet, LocalCluster, Options, Script,
};

use support::Kubectl;

const MS: Duration = Duration::from_millis(1);

fn job(name: &str, image: &str, restart_policy: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: {restart_policy}\n      containers:\n      - name: main\n        image: {image}\n        command: [run-it]\n"
    )
}

/// A cluster whose kubelet ends each Job the way its name says.
async fn start() -> LocalCluster {
    let script = Script::new(ContainerOutcome::Succeed { after: 20 * MS })
        .label(
            "job-name",
            "error",
            ContainerOutcome::Exit {
                code: 2,
                after: 10 * MS,
            },
        )
        .label(
            "job-name",
            "oom",
            ContainerOutcome::OomKilled { after: 10 * MS },
        )
        .label(
            "job-name",
            "crash",
            ContainerOutcome::Exit {
                code: 1,
                after: 10 * MS,
            },
        )
        .image("nope:1", ContainerOutcome::ImagePullError)
        .label("app", "web", ContainerOutcome::RunForever)
        .restart_backoff(Duration::from_secs(5));
    LocalCluster::start(Options {
        controllers: Some(Controllers {
            job_backoff_base: 20 * MS,
            kubelet: Some(Kubelet::Scripted(script)),
            ..Controllers::default()
        }),
        ..Options::default()
    })
    .await
    .expect("cluster starts")
}

/// Jobs for each ending and a Deployment, as one multi-document manifest.
fn manifests() -> String {
    [
        job("ok", "busybox", "Never"),
        job("error", "busybox", "Never"),
        job("oom", "busybox", "Never"),
        job("crash", "busybox", "OnFailure").replace("backoffLimit: 0", "backoffLimit: 6"),
        job("pull", "nope:1", "Never"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: main\n        image: busybox\n".to_owned(),
    ]
    .join("---\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_waits_for_jobs_and_rollouts_and_shows_how_each_pod_ended() {
    let cluster = start().await;
    let kubectl = Kubectl::new(&cluster);
    let file = kubectl.directory.path().join("all.yaml");
    std::fs::write(&file, manifests()).expect("manifest written");
    kubectl
        .ok(&["apply", "-f", &file.display().to_string()])
        .await;

    let complete = kubectl
        .ok(&[
            "wait",
            "--for=condition=complete",
            "job/ok",
            "--timeout=20s",
        ])
        .await;
    assert_eq!(complete.trim(), "job.batch/ok condition met");
    let failed = kubectl
        .ok(&[
            "wait",
            "--for=condition=failed",
            "job/error",
            "job/oom",
            "--timeout=20s",
        ])
        .await;
    assert_eq!(failed.lines().count(), 2, "{failed}");
    let rollout = kubectl
        .ok(&["rollout", "status", "deployment/web", "--timeout=20s"])
        .await;
    assert!(
        rollout.contains("deployment \"web\" successfully rolled out"),
        "{rollout}"
    );

    let mut statuses = String::new();
    for _ in 0..200 {
        statuses = kubectl
            .ok(&["get", "pods", "--no-headers", "-L", "job-name"])
            .await;
        let status_of = |job: &str| {
            statuses
                .lines()
                .find(|l| l.split_whitespace().last() == Some(job))
                .and_then(|l| l.split_whitespace().nth(2))
                .map(str::to_owned)
        };
        let wanted = [
            ("ok", "Completed"),
            ("error", "Error"),
            ("oom", "OOMKilled"),
            ("crash", "CrashLoopBackOff"),
            ("pull", "ImagePullBackOff"),
        ];
        if wanted
            .iter()
            .all(|(job, status)| status_of(job).as_deref() == Some(*status))
        {
            let running = statuses
                .lines()
                .filter(|l| l.starts_with("web-") && l.contains(" Running "))
                .count();
            assert_eq!(running, 2, "{statuses}");
            return;
        }
        tokio::time::sleep(25 * MS).await;
    }
    panic!("pods never showed every status: {statuses}");
}

/// The revisions `kubectl rollout history` lists.
async fn revisions(kubectl: &Kubectl, deployment: &str) -> Vec<u32> {
    kubectl
        .ok(&["rollout", "history", &format!("deployment/{deployment}")])
        .await
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

/// Waits for the rollout, then returns the Deployment's image and `<image>=<revision-history>` of its
/// ReplicaSets that have a history.
async fn rolled_out_image(kubectl: &Kubectl, deployment: &str) -> (String, Vec<String>) {
    let target = format!("deployment/{deployment}");
    kubectl
        .ok(&["rollout", "status", &target, "--timeout=20s"])
        .await;
    let image = kubectl
        .ok(&[
            "get",
            &target,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
        .await;
    let histories = kubectl
        .ok(&[
            "get",
            "replicasets",
            "-l",
            &format!("instance={deployment}"),
            "-o",
            r#"jsonpath={range .items[*]}{.spec.template.spec.containers[0].image}={.metadata.annotations.deployment\.kubernetes\.io/revision-history}{"\n"}{end}"#,
        ])
        .await;
    let mut histories: Vec<String> = histories
        .lines()
        .filter(|l| !l.ends_with('='))
        .map(str::to_owned)
        .collect();
    histories.sort();
    (image, histories)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_undo_gives_the_restored_replicaset_the_next_revision_and_can_be_repeated() {
    let cluster = start().await;
    for (version, name) in [("1.27", "undo-old"), ("1.33", "undo-new")] {
        let kubectl = Kubectl::of_version(&cluster, version);
        let file = kubectl.directory.path().join("deployment.yaml");
        std::fs::write(&file, format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: web, instance: {name}}}\n  template:\n    metadata:\n      labels: {{app: web, instance: {name}}}\n    spec:\n      containers:\n      - name: main\n        image: busybox:1\n")).expect("manifest written");
        kubectl
            .ok(&["apply", "-f", &file.display().to_string()])
            .await;
        rolled_out_image(&kubectl, name).await;
        for image in ["busybox:2", "busybox:3"] {
            kubectl
                .ok(&[
                    "set",
                    "image",
                    &format!("deployment/{name}"),
                    &format!("main={image}"),
                ])
                .await;
            rolled_out_image(&kubectl, name).await;
        }
        assert_eq!(
            revisions(&kubectl, name).await,
            [1, 2, 3],
            "kubectl {version}"
        );

        let target = format!("deployment/{name}");
        kubectl.ok(&["rollout", "undo", &target]).await;
        let (image, histories) = rolled_out_image(&kubectl, name).await;
        assert_eq!(image, "busybox:2", "kubectl {version}");
        assert_eq!(
            revisions(&kubectl, name).await,
            [1, 3, 4],
            "kubectl {version}"
        );
        assert_eq!(histories, ["busybox:2=2"], "kubectl {version}");

        // Undo again goes back to what was current before the first undo.
        kubectl.ok(&["rollout", "undo", &target]).await;
        let (image, histories) = rolled_out_image(&kubectl, name).await;
        assert_eq!(image, "busybox:3", "kubectl {version}");
        assert_eq!(
            revisions(&kubectl, name).await,
            [1, 4, 5],
            "kubectl {version}"
        );
        assert_eq!(
            histories,
            ["busybox:2=2", "busybox:3=3"],
            "kubectl {version}"
        );

        kubectl
            .ok(&["rollout", "undo", &target, "--to-revision=1"])
            .await;
        let (image, histories) = rolled_out_image(&kubectl, name).await;
        assert_eq!(image, "busybox:1", "kubectl {version}");
        assert_eq!(
            revisions(&kubectl, name).await,
            [4, 5, 6],
            "kubectl {version}"
        );
        assert_eq!(
            histories,
            ["busybox:1=1", "busybox:2=2", "busybox:3=3"],
            "kubectl {version}"
        );
    }
}
