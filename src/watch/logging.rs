//! The daemon's log: one line per action taken and why, through `tracing`, to stderr — for people on a terminal,
//! JSON lines (one object per event, fields flattened) where a log collector reads them.
//!
//! Unlike the one-shot commands, whose log is silent unless `-v`, the daemon's log is its output: the default
//! level is `info` for this program and `warn` for its libraries (kube's client, which logs every failed request
//! as an error, is silent: the daemon says what failed and what it does about it).

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber for the daemon: JSON lines when `json`, else human lines (coloured when
/// `color`). `RUST_LOG` overrides the level; each `-v` raises it.
pub fn init(json: bool, verbosity: u8, color: bool) {
    let default_level = match verbosity {
        // kube's client logs every 5xx answer as an error; the daemon logs what it does about them.
        0 => "warn,kube_client=off,toolforge_jobs=info",
        1 => "info,kube_client=off,toolforge_jobs=debug",
        2 => "debug",
        _ => "trace",
    };
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    // A second initialisation (only in tests) keeps the first subscriber.
    let _ = if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init()
    } else {
        builder.with_ansi(color).try_init()
    };
}
