//! `toolforge-jobs show NAME`: every field of one job and its status, in upstream's vertical grid, with the
//! status messages and (scheduled jobs) the previous and next run as "Hints:".

use clap::Args;

use crate::cli::live_jobs;
use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat};
use crate::output::{ExitStatus, Printer};

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The job's name
    #[arg(value_parser = crate::cli::job_name)]
    pub name: String,
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &ShowArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let job = live_jobs::job(&live, &args.name)?;
    let text = if global.output == OutputFormat::Json {
        json_line(&live_jobs::to_json(&job, &live.context, live.now))?
    } else {
        let mut rows = live_jobs::long_fields(&job, &live.context, live.now);
        let hints = job.status.hints();
        rows.push((
            "Hints:",
            if hints.is_empty() {
                "N/A".to_owned()
            } else {
                hints
            },
        ));
        table::grid(&rows)
    };
    printer.data(&text)?;
    Ok(ExitStatus::Success)
}
