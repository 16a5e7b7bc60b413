//! `toolforge-jobs schema`: prints the JSON Schema of jobs.yaml.

use crate::cli::Error;
use crate::config::schema::json_schema;
use crate::output::{ExitStatus, Printer};

pub(crate) fn run(printer: Printer) -> Result<ExitStatus, Error> {
    printer.data(&json_schema())?;
    Ok(ExitStatus::Success)
}
