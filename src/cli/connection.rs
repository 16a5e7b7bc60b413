//! Connecting from the command line: the global flags name the cluster, and on the embedded local cluster the
//! user is told so in one line (SPEC §10).

use crate::cli::{Error, GlobalArgs};
use crate::cluster::{self, Connection, Target};
use crate::output::Printer;

/// The cluster the global flags name.
pub(crate) fn target(global: &GlobalArgs) -> Target {
    Target {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.clone(),
        local: global.local,
    }
}

/// Connects to the cluster the global flags name; on the embedded local cluster, says which and how to stop it.
pub(crate) async fn connect(global: &GlobalArgs) -> Result<Connection, Error> {
    let printer = Printer::new(global.no_color);
    let connection = cluster::connect(&target(global)).await?;
    if let Some(running) = &connection.embedded {
        let how = if running.started {
            "started it in the background"
        } else {
            "already running"
        };
        printer.message(&format!(
            "using the local cluster at {} ({how}; state in {}; stop it with `toolforge-jobs local-cluster stop`)\n",
            running.server,
            running.paths.directory.display()
        ))?;
    }
    Ok(connection)
}
