//! `toolforge-jobs local-cluster`: serves the Kubernetes-compatible local cluster in the foreground (SPEC §10).
//!
//! The cluster itself lives in the `toolforge-local-cluster` crate; this command only maps flags to its options,
//! tells the user how to reach it, and stops it on Ctrl-C or SIGTERM.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use toolforge_local_cluster::{
    Controllers, Kubelet, LocalCluster, ProcessOptions, ServeOptions, serve,
};

use crate::cli::Error;
use crate::cluster::embedded;
use crate::output::{ExitStatus, Printer};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LocalClusterArgs {
    #[command(subcommand)]
    pub action: Option<LocalClusterAction>,

    /// Port to listen on at 127.0.0.1 (0 picks a free port)
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// File to keep the cluster's objects in across restarts (default: in memory only)
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,

    /// Write a kubeconfig for kubectl and toolforge-jobs to this file
    #[arg(long, value_name = "FILE")]
    pub kubeconfig_out: Option<PathBuf>,

    /// Serve the API only: no controllers, so Jobs and Deployments never start pods
    #[arg(long)]
    pub api_only: bool,

    /// Run the cluster's clock this many times faster than real time (TTLs, back-offs, schedules, deadlines),
    /// for trying things out; real processes still run in real time
    #[arg(long, value_name = "FACTOR", value_parser = parse_speed)]
    pub clock_speed: Option<f64>,

    /// Directory the cluster announces as the parent of tools' home directories (in the `kube-public`
    /// identity ConfigMap), where jobs' working directories and file logs go
    #[arg(long, value_name = "DIR")]
    pub tools_home: Option<PathBuf>,
}

/// What to do with the embedded local cluster instead of serving in the foreground.
#[derive(Debug, Subcommand)]
pub enum LocalClusterAction {
    /// Stop the local cluster that commands started in the background (its state is kept)
    Stop,
}

pub(crate) async fn run(args: &LocalClusterArgs, printer: Printer) -> Result<ExitStatus, Error> {
    if let Some(LocalClusterAction::Stop) = args.action {
        let stopped = embedded::off_runtime(embedded::stop)
            .await
            .map_err(crate::cluster::ConnectError::from)?;
        printer.message(if stopped {
            "stopped the local cluster\n"
        } else {
            "the local cluster is not running\n"
        })?;
        return Ok(ExitStatus::Success);
    }
    let options = ServeOptions {
        port: args.port,
        state_file: args.state.clone(),
        kubeconfig_out: args.kubeconfig_out.clone(),
        tools_home: args.tools_home.clone(),
        clock_speed: args.clock_speed,
        // Jobs really run: their containers' commands become processes of the current user.
        controllers: (!args.api_only).then(|| Controllers {
            kubelet: Some(Kubelet::Process(ProcessOptions::default())),
            ..Controllers::default()
        }),
    };
    let kubeconfig = args.kubeconfig_out.clone();
    let ready = |cluster: &LocalCluster| {
        let how_to_connect = match &kubeconfig {
            Some(path) => format!(
                "kubeconfig written to {0}; try: KUBECONFIG={0} kubectl get jobs -A",
                path.display()
            ),
            None => "pass --kubeconfig-out FILE to get a kubeconfig for kubectl".to_owned(),
        };
        let text = format!(
            "local cluster serving at {}\n{how_to_connect}\npress Ctrl-C to stop\n",
            cluster.url()
        );
        // The cluster runs whether or not this line reaches the terminal.
        let _ = printer.message(&text);
    };
    serve(options, ready, shutdown_signal()).await?;
    Ok(ExitStatus::Success)
}

/// A positive, finite speed factor.
fn parse_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(speed) if speed.is_finite() && speed > 0.0 => Ok(speed),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

/// Completes on Ctrl-C or SIGTERM, whichever comes first.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                // Without a SIGTERM handler Ctrl-C still works; wait on that alone.
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = interrupt => {}
            () = terminate => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
