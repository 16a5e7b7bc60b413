//! Connecting from the command line: the global flags name the cluster, and on the embedded local cluster the
//! user is told so in one line (SPEC §10).

use std::time::Duration;

use crate::cli::{Error, GlobalArgs};
use crate::cluster::{self, Connection, Target};
use crate::output::Printer;

/// The cluster the global flags name.
pub(crate) fn target(global: &GlobalArgs) -> Target {
    Target {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.clone(),
        local: global.local,
        request_timeout: global.request_timeout,
    }
}

/// `--request-timeout`: a duration as `apply --wait` takes it, more than zero (a request that may not take any
/// time cannot be answered); clap's `value_parser`.
pub(crate) fn request_timeout(text: &str) -> Result<Duration, String> {
    match super::apply::parse_duration(text)? {
        Duration::ZERO => Err(format!(
            "`{text}` is no time at all: give the request time to be answered, e.g. `10s`"
        )),
        timeout => Ok(timeout),
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
