//! `toolforge-jobs local-cluster`: serves the Kubernetes-compatible local cluster in the foreground (SPEC §10).
//!
//! The cluster itself lives in the `toolforge-local-cluster` crate; this command only maps flags to its options,
//! tells the user how to reach it, and stops it on Ctrl-C or SIGTERM. `local-cluster stop` stops the embedded
//! cluster, `local-cluster kubeconfig --tool NAME` mints a tool's credentials for it.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use toolforge_local_cluster::auth::TOOL_GROUP;
use toolforge_local_cluster::auth::pki::Pki;
use toolforge_local_cluster::kubeconfig::UserCredentials;
use toolforge_local_cluster::{
    ClusterError, Controllers, ImagePolicy, Kubelet, LocalCluster, ProcessOptions, ServeOptions,
    credentials_directory, serve,
};

use crate::cli::{Error, private_directory, write_private};
use crate::cluster::embedded;
use crate::model::tool::ToolName;
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

    /// Do not install upstream's jobs-api custom resource definitions (`continuous-jobs` and `scheduled-jobs` of
    /// jobs-api.toolforge.org), to try a cluster that keeps no stored job records
    #[arg(long)]
    pub no_upstream_crds: bool,

    /// Run pods whatever their image; by default only the images a Toolforge cluster can pull run (its image
    /// table and build-service images in `tools-harbor.wmcloud.org`), others fail with `ErrImagePull`
    #[arg(long)]
    pub allow_any_image: bool,
}

/// What to do with the embedded local cluster instead of serving in the foreground.
#[derive(Debug, Subcommand)]
pub enum LocalClusterAction {
    /// Stop the local cluster that commands started in the background (its state is kept)
    Stop,
    /// Write the kubeconfig of the tool named by `--tool` for the embedded local cluster: a client certificate
    /// for `O=toolforge, CN=<tool>` (as Toolforge's `become` gives), allowed only in namespace `tool-<tool>`
    Kubeconfig {
        /// Directory for `kubeconfig`, `client.crt` and `client.key` (default: `tools/<tool>/` in the local
        /// cluster's state directory)
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

pub(crate) async fn run(
    args: &LocalClusterArgs,
    tool: Option<&ToolName>,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    match &args.action {
        Some(LocalClusterAction::Stop) => {
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
        Some(LocalClusterAction::Kubeconfig { out }) => {
            let tool = tool.ok_or(Error::NoTool)?;
            return tool_kubeconfig(tool, out.as_deref(), printer).await;
        }
        None => {}
    }
    let options = ServeOptions {
        port: args.port,
        state_file: args.state.clone(),
        kubeconfig_out: args.kubeconfig_out.clone(),
        tools_home: args.tools_home.clone(),
        clock_speed: args.clock_speed,
        upstream_crds: !args.no_upstream_crds,
        // Jobs really run: their containers' commands become processes of the current user.
        controllers: (!args.api_only).then(|| Controllers {
            kubelet: Some(Kubelet::Process(ProcessOptions {
                images: if args.allow_any_image {
                    ImagePolicy::Any
                } else {
                    ImagePolicy::Toolforge
                },
                ..ProcessOptions::default()
            })),
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

/// Mints a tool's certificate with the embedded cluster's CA, writes it with a kubeconfig, and creates the
/// tool's namespace (there is no maintain-kubeusers to do it).
async fn tool_kubeconfig(
    tool: &ToolName,
    out: Option<&Path>,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let connection = crate::cluster::connect(&crate::cluster::Target {
        local: true,
        ..crate::cluster::Target::default()
    })
    .await?;
    let Some(running) = &connection.embedded else {
        unreachable!("a `local` target always is the embedded cluster");
    };
    let namespace = tool.namespace();
    let directory = out.map_or_else(
        || running.paths.directory.join("tools").join(tool.as_str()),
        Path::to_path_buf,
    );
    let pki = Pki::load_or_create(&credentials_directory(&running.paths.state))
        .map_err(ClusterError::Credentials)?;
    let credentials = pki
        .issue_client(tool.as_str(), &[TOOL_GROUP])
        .map_err(ClusterError::Credentials)?;
    private_directory(&directory)?;
    let directory = directory
        .canonicalize()
        .map_err(|source| Error::WriteFile {
            path: directory.clone(),
            source,
        })?;
    let (certificate, key, kubeconfig) = (
        directory.join("client.crt"),
        directory.join("client.key"),
        directory.join("kubeconfig"),
    );
    write_private(&certificate, &credentials.certificate_pem)?;
    write_private(&key, &credentials.key_pem)?;
    let user = format!("tf-{tool}");
    write_private(
        &kubeconfig,
        &toolforge_local_cluster::kubeconfig::render(
            &running.server,
            pki.ca_certificate_pem(),
            &namespace,
            &user,
            UserCredentials::Files {
                certificate: &certificate,
                key: &key,
            },
        ),
    )?;
    crate::pipeline::writable_namespace(&connection, &namespace).await?;
    printer.message(&format!(
        "kubeconfig for tool `{tool}` (namespace {namespace}) written to {}\ntry: toolforge-jobs --kubeconfig {0} list\n",
        kubeconfig.display()
    ))?;
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
