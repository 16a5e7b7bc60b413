//! `toolforge-jobs man`: prints the manual page (roff), generated from the same clap definitions as `--help`.

use clap::CommandFactory;

use crate::cli::{Cli, Error};
use crate::output::{ExitStatus, Printer};

pub(crate) fn run(printer: Printer) -> Result<ExitStatus, Error> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    printer.data(&String::from_utf8_lossy(&page))?;
    Ok(ExitStatus::Success)
}
