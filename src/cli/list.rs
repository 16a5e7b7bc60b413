//! `toolforge-jobs list [-o long|name|json]`: the tool's jobs with their type and status, as upstream's
//! `toolforge jobs list` prints them (reference/toolforge.md §2.6), read from one LIST per kind.

use clap::Args;

use crate::cli::live_jobs::{self, job_type};
use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat};
use crate::output::{ExitStatus, Printer};

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Deprecated upstream alias of `-o long`
    #[arg(short = 'l', long)]
    pub long: bool,
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &ListArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let jobs = live.jobs();
    let format = match global.output {
        OutputFormat::Text if args.long => OutputFormat::Long,
        format => format,
    };
    let text = match format {
        OutputFormat::Json => {
            let values: Vec<_> = jobs
                .iter()
                .map(|job| live_jobs::to_json(job, &live.context, live.now))
                .collect();
            json_line(&values)?
        }
        OutputFormat::Name => jobs.iter().flat_map(|job| [job.name(), "\n"]).collect(),
        _ if jobs.is_empty() => {
            printer.message("No jobs found.\n")?;
            String::new()
        }
        OutputFormat::Long => {
            let rows: Vec<Vec<(&str, String)>> = jobs
                .iter()
                .map(|job| live_jobs::long_fields(job, &live.context, live.now))
                .collect();
            let header: Vec<&str> = rows[0].iter().map(|(field, _)| *field).collect();
            let cells: Vec<Vec<String>> = rows
                .into_iter()
                .map(|row| row.into_iter().map(|(_, value)| value).collect())
                .collect();
            table::columns(&header, &cells)
        }
        OutputFormat::Text => {
            let cells: Vec<Vec<String>> = jobs
                .iter()
                .map(|job| {
                    vec![
                        job.name().to_owned(),
                        job_type(&job.read_back.job),
                        job.status.line(live.now),
                    ]
                })
                .collect();
            table::columns(&["Job name:", "Job type:", "Status:"], &cells)
        }
    };
    printer.data(&text)?;
    Ok(ExitStatus::Success)
}
