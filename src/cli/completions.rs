//! `toolforge-jobs completions SHELL`: prints a completion script generated from the clap definitions.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, Error};
use crate::output::{ExitStatus, Printer};

pub(crate) fn run(shell: Shell, printer: Printer) -> Result<ExitStatus, Error> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "toolforge-jobs", &mut script);
    printer.data(&String::from_utf8_lossy(&script))?;
    Ok(ExitStatus::Success)
}
