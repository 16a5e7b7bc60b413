//! Runs a local cluster in the foreground, the way `toolforge-jobs local-cluster` does:
//! `cargo run -p toolforge-local-cluster --example serve -- [PORT] [KUBECONFIG_OUT] [STATE_FILE]`.

#![expect(
    clippy::print_stdout,
    reason = "an example tells the user where the cluster listens"
)]

use std::path::PathBuf;

use toolforge_local_cluster::{ServeOptions, serve};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port = args.next().map(|p| p.parse()).transpose()?.unwrap_or(0);
    let kubeconfig_out = args.next().map(PathBuf::from);
    let state_file = args.next().map(PathBuf::from);
    let options = ServeOptions {
        port,
        state_file,
        kubeconfig_out,
        tools_home: None,
    };
    let ready =
        |cluster: &toolforge_local_cluster::LocalCluster| println!("serving on {}", cluster.url());
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serve(options, ready, shutdown).await?;
    Ok(())
}
