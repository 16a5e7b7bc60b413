//! `toolforge-jobs list [-o long|name|json]`: the tool's jobs with their type and status, exactly as upstream's
//! `toolforge jobs list` prints them (tabulate's `pretty` table; nothing at all when there are no jobs), read
//! from one LIST per kind.

use clap::Args;
use jiff::Timestamp;

use crate::cli::live_jobs::{self, LiveJob, job_type};
use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat};
use crate::output::{ExitStatus, Printer};
use crate::render::RenderContext;

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
    let format = if args.long {
        // Upstream's words; `-l` wins over `-o`, as upstream's.
        printer
            .message("warning: the `--long` flag is deprecated, use `--output long` instead\n")?;
        OutputFormat::Long
    } else {
        global.output
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
        // Upstream prints nothing at all for no jobs, not even the header.
        _ if jobs.is_empty() => String::new(),
        OutputFormat::Long => long_table(&jobs, &live.context, live.now),
        OutputFormat::Text => short_table(&jobs, live.now),
    };
    printer.data(&text)?;
    Ok(ExitStatus::Success)
}

/// `list -o long`: every field but the hints, one row per job, in upstream's `pretty` table.
fn long_table(jobs: &[LiveJob], context: &RenderContext, now: Timestamp) -> String {
    let rows: Vec<Vec<(&str, String)>> = jobs
        .iter()
        .map(|job| live_jobs::long_fields(job, context, now))
        .collect();
    let Some(first) = rows.first() else {
        return String::new();
    };
    let header: Vec<&str> = first.iter().map(|(field, _)| *field).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|(_, value)| value.clone()).collect())
        .collect();
    table::pretty(&header, &cells)
}

/// `list`: name, type and status, in upstream's `pretty` table.
fn short_table(jobs: &[LiveJob], now: Timestamp) -> String {
    let cells: Vec<Vec<String>> = jobs
        .iter()
        .map(|job| {
            vec![
                job.name().to_owned(),
                job_type(&job.read_back.job),
                job.status.summary(now),
            ]
        })
        .collect();
    table::pretty(&["Job name:", "Job type:", "Status:"], &cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::live_jobs::fixtures;

    // What upstream's CLI prints for the jobs API's form of the same jobs (generated with its own formatting
    // functions and tabulate), but for the webservice's "File log:", where upstream prints Python's `False`.
    const LIST: &str = "\
+------------+-------------------+------------------+
| Job name:  |     Job type:     |     Status:      |
+------------+-------------------+------------------+
|   myjob    |      one-off      |  Running for 5s  |
|   mycron   | scheduled: @daily | Pending for 3h2m |
|    web     |    continuous     | Running for 2d3h |
| webservice |    webservice     |      Failed      |
+------------+-------------------+------------------+
";
    const LONG: &str = "\
+------------+-----------------------------+-------------------+------------------------+----------+-----------------------------+-----------+-------------------------------+-------------------------------+-----------+--------------------------+-----------+---------+----------------+----------+----------------+------------------+
| Job name:  |          Command:           |     Job type:     |         Image:         |  Port:   |           Public:           | File log: |          Output log:          |          Error log:           |  Emails:  |        Resources:        | Replicas: | Mounts: |     Retry:     | Timeout: | Health check:  |     Status:      |
+------------+-----------------------------+-------------------+------------------------+----------+-----------------------------+-----------+-------------------------------+-------------------------------+-----------+--------------------------+-----------+---------+----------------+----------+----------------+------------------+
|   myjob    |           echo hi           |      one-off      |       python3.11       |   N/A    |             N/A             |    yes    | /data/project/test/myjob.out  | /data/project/test/myjob.err  |   none    |         default          |    N/A    |   all   |       no       |   N/A    |      N/A       |  Running for 5s  |
|   mycron   |          ./cron.sh          | scheduled: @daily |       python3.11       |   N/A    |             N/A             |    yes    | /data/project/test/mycron.out | /data/project/test/mycron.err | onfailure | mem: 1.0Gi, cpu: default |    N/A    |   all   | yes: 2 time(s) |    no    |      N/A       | Pending for 3h2m |
|    web     | python3 -m http.server 8000 |    continuous     | python3.9 (deprecated) | 8000/tcp | https://test.toolforge.org/ |    no     |                               |                               |   none    |  mem: default, cpu: 0.5  |     2     |   all   |      N/A       |   N/A    | http: /healthz | Running for 2d3h |
| webservice |         ./serve.py          |    webservice     |       python3.11       |   8000   | https://test.toolforge.org/ |    no     |                               |                               |   none    |         default          |     1     |   all   |      N/A       |   N/A    |      none      |      Failed      |
+------------+-----------------------------+-------------------+------------------------+----------+-----------------------------+-----------+-------------------------------+-------------------------------+-----------+--------------------------+-----------+---------+----------------+----------+----------------+------------------+
";

    #[test]
    fn the_tables_are_upstreams() {
        let (jobs, context) = fixtures::jobs();
        assert_eq!(short_table(&jobs, fixtures::now()), LIST);
        assert_eq!(long_table(&jobs, &context, fixtures::now()), LONG);
    }
}
