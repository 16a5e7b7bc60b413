//! The conformance suite: clients this project did not write — the official Python client (`kubernetes` 37.0.2),
//! `kr8s` and `lightkube` — run scenarios against an in-process local cluster, each scenario checking what
//! Kubernetes 1.33 does (reference/k8s-semantics.md), so the clients' own deserialisation and error handling judge
//! the server. The scenarios are Python, under `tests/conformance/` (`run.py MODULE.FUNCTION`); each is one test
//! here, with its own cluster and a time limit.
//!
//! The clients live in a venv pinned by hash (`tests/conformance/requirements.txt`), which `.ci/run` makes and names
//! in `$CONFORMANCE_PYTHON`. Without it every test fails, saying how to make it: these tests are the project's
//! third-party check and must never be skipped silently.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use toolforge_local_cluster::{
    Controllers, ImagePolicy, Kubelet, LocalCluster, Options, ProcessOptions,
};

const MS: Duration = Duration::from_millis(1);
/// Longer than any scenario needs; a scenario that gets here hangs, and is killed.
const TIME_LIMIT: Duration = Duration::from_secs(90);
/// The tool whose identity the scenarios' second kubeconfig carries (namespace `tool-conformance`).
const TOOL: &str = "conformance";
const REQUIREMENTS: &str = "crates/local-cluster/tests/conformance/requirements.txt";

/// The venv's interpreter: `$CONFORMANCE_PYTHON`, else the venv `.ci/run` makes; a missing one fails the test.
fn python() -> PathBuf {
    if let Some(named) = std::env::var_os("CONFORMANCE_PYTHON") {
        let named = PathBuf::from(named);
        assert!(
            named.is_file(),
            "$CONFORMANCE_PYTHON is {}, which is not a file; unset it or point it at the conformance venv's \
             bin/python",
            named.display()
        );
        return named;
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    let default = PathBuf::from(home).join(".cache/toolforge-jobs/conformance-venv/bin/python");
    assert!(
        default.is_file(),
        "the conformance clients are not installed ({} is missing): run .ci/run once, or\n  \
         python3 -m venv ~/.cache/toolforge-jobs/conformance-venv && \
         ~/.cache/toolforge-jobs/conformance-venv/bin/pip install --require-hashes -r {REQUIREMENTS}\n\
         (or set $CONFORMANCE_PYTHON to an interpreter that has them)",
        default.display()
    );
    default
}

/// A cluster as the scenarios expect it: every controller, a kubelet that runs pods as real processes with short
/// back-offs, and bookmarks every half second.
fn options() -> Options {
    Options {
        bookmark_interval: 500 * MS,
        controllers: Some(Controllers {
            job_backoff_base: 50 * MS,
            job_backoff_cap: 200 * MS,
            kubelet: Some(Kubelet::Process(ProcessOptions {
                restart_backoff: 100 * MS,
                // Clients written for any cluster run any image (busybox, nginx), not only Toolforge's.
                images: ImagePolicy::Any,
                ..ProcessOptions::default()
            })),
        }),
        ..Options::default()
    }
}

/// Runs `tests/conformance/run.py scenario` against a fresh cluster started with `options`; fails with the
/// scenario's output when it fails or outlives [`TIME_LIMIT`].
async fn scenario_with(scenario: &str, options: Options) {
    let python = python();
    let cluster = LocalCluster::start(options).await.expect("cluster starts");
    let directory = tempfile::tempdir().expect("temp dir");
    let owner = directory.path().join("owner.kubeconfig");
    let tool = directory.path().join("tool.kubeconfig");
    std::fs::write(&owner, cluster.kubeconfig_yaml()).expect("kubeconfig written");
    std::fs::write(
        &tool,
        cluster.tool_kubeconfig_yaml(TOOL).expect("tool kubeconfig"),
    )
    .expect("kubeconfig written");
    let runner = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/run.py");
    let child = Command::new(&python)
        .arg(&runner)
        .arg(scenario)
        .env("CONFORMANCE_KUBECONFIG", &owner)
        .env("CONFORMANCE_TOOL_KUBECONFIG", &tool)
        .env("CONFORMANCE_TOOL", TOOL)
        .env("HOME", directory.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("KUBECONFIG")
        .current_dir(directory.path())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(TIME_LIMIT, child)
        .await
        .unwrap_or_else(|_| panic!("{scenario} hung: no result after {TIME_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        output.status.success(),
        "{scenario} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    cluster.shutdown().await.expect("clean shutdown");
}

/// Declares one test per scenario: `name => "module.function"`, optionally `with |options| ...` to change the
/// cluster, and `#[ignore = ...]` for scenarios that wait for a fix.
macro_rules! scenarios {
    ($($(#[$attribute:meta])* $name:ident => $scenario:literal $(with $adjust:expr)?;)*) => {$(
        $(#[$attribute])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let options = options();
            $(let options = {
                let mut options = options;
                ($adjust)(&mut options);
                options
            };)?
            scenario_with($scenario, options).await;
        }
    )*};
}

scenarios! {
    official_client_discovers_the_served_groups => "api_machinery.discovery";
    official_client_sends_bodies_without_a_content_type => "api_machinery.bodies_without_a_content_type";
    official_dynamic_client_discovers_and_works_by_kind => "api_machinery.dynamic_client";
    official_client_creates_reads_lists_patches_deletes_every_served_type => "api_machinery.crud_every_served_type";
    official_client_patches_with_json_merge_and_strategic_patches => "api_machinery.patch_types";
    official_client_gets_the_deleted_service_and_quota_back => "api_machinery.deletes_return_the_object_where_kubernetes_does";
    official_client_gets_kubernetes_status_bodies_for_errors => "api_machinery.error_bodies";
    official_client_meets_optimistic_concurrency => "api_machinery.optimistic_concurrency";
    official_client_transport_meets_decoding_and_field_validation => "api_machinery.decoding_and_field_validation";
    official_client_pages_lists_with_limit_and_continue => "api_machinery.list_paging";
    official_client_filters_with_label_and_field_selectors => "api_machinery.selectors";
    official_client_dry_runs_writes => "api_machinery.dry_run";
    official_client_server_side_applies => "api_machinery.server_side_apply";
    official_client_sees_apply_field_managers_and_conflicts => "api_machinery.server_side_apply_field_managers";
    official_client_sees_server_set_fields_and_defaults => "api_machinery.server_set_fields";
    official_watch_delivers_changes_in_order => "watching.events_in_order";
    official_watch_starts_with_current_state_and_follows_selectors => "watching.current_state_first";
    official_watch_receives_bookmarks => "watching.bookmarks";
    official_watch_raises_410_for_a_compacted_version => "watching.expired_version"
        with |options: &mut Options| options.history_limit = 10;
    official_client_gets_list_option_errors => "watching.list_options_validation";
    official_client_runs_a_job_to_completion => "workloads.job_runs_to_completion";
    official_client_sees_a_job_fail_at_its_backoff_limit => "workloads.job_fails_after_backoff_limit";
    official_client_sees_a_cronjob_create_jobs => "workloads.cronjob_creates_jobs"
        with |options: &mut Options| options.clock_speed = 60.0;
    official_client_rolls_out_and_scales_a_deployment => "workloads.deployment_rollout_and_scale";
    official_client_deletes_with_each_propagation_policy => "workloads.garbage_collection";
    official_client_reads_pod_logs => "workloads.pod_logs";
    official_client_writes_and_selects_events => "workloads.events";
    official_client_sees_a_pod_run_and_terminate_gracefully => "workloads.pod_lifecycle";
    official_client_sees_a_crash_loop => "workloads.crash_loop";
    official_client_sees_a_namespace_terminate => "access.namespace_lifecycle";
    official_client_as_a_tool_is_confined_to_its_namespace => "access.tool_is_confined_to_its_namespace";
    official_client_finds_the_root_ca_config_map_in_every_namespace => "access.root_ca_config_map_in_every_namespace";
    kr8s_connects_lists_creates_gets_and_deletes => "other_clients.kr8s_basics";
    kr8s_waits_for_and_scales_a_deployment_and_reads_logs => "other_clients.kr8s_scales_a_deployment_and_reads_logs";
    lightkube_connects_lists_creates_gets_watches_and_deletes => "other_clients.lightkube_basics";
    lightkube_runs_a_job_patches_replaces_and_deletes_collections => "other_clients.lightkube_runs_a_job_and_reads_its_log";
}
