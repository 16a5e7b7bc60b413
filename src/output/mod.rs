//! Everything that reaches the terminal: the printer, colour choice and exit codes.
//!
//! stdout carries data (tables, JSON), stderr everything meant for a human reading along (diagnostics,
//! summaries). Only [`Printer`] writes to either.

pub mod errors;
mod exit;
pub mod logging;
pub mod plan;
pub mod progress;

use std::io::{self, IsTerminal, Write};

pub use exit::{EXIT_CODES_HELP, ExitStatus};

/// Writes data to stdout and messages to stderr, and knows whether colour is wanted.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    color: bool,
    data_color: bool,
}

impl Printer {
    /// Colour only on a terminal, and never with `--no-color` or a non-empty `NO_COLOR`.
    pub fn new(no_color_flag: bool) -> Self {
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        let wanted = !no_color_flag && !no_color_env;
        Self {
            color: wanted && io::stderr().is_terminal(),
            data_color: wanted && io::stdout().is_terminal(),
        }
    }

    /// Whether messages (stderr) may be coloured.
    pub fn color(self) -> bool {
        self.color
    }

    /// Whether data (stdout) may be coloured.
    pub fn data_color(self) -> bool {
        self.data_color
    }

    /// Writes data to stdout. A closed pipe (`| head`) is not an error worth reporting.
    pub fn data(self, text: &str) -> io::Result<()> {
        ignore_broken_pipe(io::stdout().lock().write_all(text.as_bytes()))
    }

    /// Writes a message for the human to stderr.
    pub fn message(self, text: &str) -> io::Result<()> {
        ignore_broken_pipe(io::stderr().lock().write_all(text.as_bytes()))
    }
}

fn ignore_broken_pipe(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
