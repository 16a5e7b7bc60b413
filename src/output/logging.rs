//! Diagnostic logging with `tracing`, behind `-v` and `RUST_LOG`; logs go to stderr.
//!
//! Logs are for understanding what the program does, not for results: those go through the printer.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber: `RUST_LOG` when set, otherwise a level from the number of `-v` flags.
pub fn init(verbosity: u8, color: bool) {
    let default_level = match verbosity {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(filter_for(default_level)));
    // A second initialisation (only possible in tests that call `run` twice) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(color)
        .with_target(false)
        .try_init();
}

/// `level`, with kube's client quieter unless `-vv` or more asks for everything: it logs every failed request as
/// an error (which our own message already reports, once) and bodies it cannot parse whole. `serve`'s access
/// log (one line per request; only `serve` writes it) is on at every level: a server without one is blind.
fn filter_for(level: &str) -> String {
    match level {
        "warn" | "info" => format!("{level},kube_client=off,{ACCESS_LOG}=info"),
        _ => level.to_owned(),
    }
}

/// The `tracing` target of `serve`'s access log.
pub const ACCESS_LOG: &str = "toolforge_jobs::serve::access";
