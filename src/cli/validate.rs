//! `toolforge-jobs validate`: checks a jobs file offline and reports every problem at once.

use serde::Serialize;

use crate::cli::{Error, GlobalArgs, OutputFormat, jobs_file, tool_name};
use crate::config::diagnostic::render;
use crate::config::image::ImageTable;
use crate::config::{self, Context, JobKind, Problem, Severity, SourceFile};
use crate::model::ToolName;
use crate::output::{ExitStatus, Printer};
use crate::pipeline::source;

pub(crate) fn run(global: &GlobalArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let path = jobs_file::locate(global)?;
    let bytes = jobs_file::read(&path)?;
    // Offline, the tool only shapes the times of `@daily`-style schedules: without one they are not shown.
    let tool = tool_name(global)
        .inspect_err(|error| tracing::debug!(%error, "validating without a tool"))
        .ok();
    tracing::debug!(file = %path.display(), bytes = bytes.len(), tool = ?tool, "validating");
    let images = ImageTable::bundled();
    let directory = source::directory_of(&path);
    let count_trigger_files = |pattern: &str| source::count_matches(&directory, pattern);
    let context = Context {
        tool: tool.as_ref().map_or("", ToolName::as_str),
        images: &images,
        count_trigger_files: Some(&count_trigger_files),
    };

    let started = std::time::Instant::now();
    let loaded = config::decode(path.display().to_string(), bytes)
        .and_then(|source| config::load(source, &context));
    tracing::info!(elapsed = ?started.elapsed(), valid = loaded.is_ok(), "loaded the jobs file");
    let (source, jobs, problems) = match loaded {
        Ok(file) => {
            let jobs = file
                .jobs
                .iter()
                .map(|located| JobSummary::new(&located.job, tool.is_some()))
                .collect();
            // The process exits after the report: freeing up to 10 000 jobs one by one would only delay it.
            std::mem::forget(file.jobs);
            (file.source, jobs, file.warnings)
        }
        Err(invalid) => (invalid.source, Vec::new(), invalid.problems),
    };
    let errors = problems.iter().filter(|problem| problem.is_error()).count();
    let status = if errors == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Invalid
    };

    match global.output {
        OutputFormat::Json => {
            let report = JsonReport {
                file: &source.name,
                valid: errors == 0,
                jobs,
                problems: problems
                    .iter()
                    .map(|problem| JsonProblem::new(&source, problem))
                    .collect(),
            };
            let mut text = serde_json::to_string_pretty(&report).map_err(std::io::Error::other)?;
            text.push('\n');
            printer.data(&text)?;
        }
        OutputFormat::Text | OutputFormat::Long | OutputFormat::Name => {
            printer.message(&render(&source, &problems, printer.color()))?;
            if errors == 0 {
                printer.data(&job_table(&jobs))?;
            }
            printer.message(&summary(&source, jobs.len(), &problems))?;
        }
    }
    Ok(status)
}

/// What `validate` tells about each valid job.
#[derive(Debug, Serialize)]
struct JobSummary {
    name: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule: Option<String>,
    /// The schedule Kubernetes gets; absent for `@` macros when the tool is unknown, since the tool seeds them.
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_actual: Option<String>,
}

impl JobSummary {
    fn new(job: &config::Job, tool_known: bool) -> Self {
        let (schedule, schedule_actual) = match &job.kind {
            JobKind::Scheduled { schedule, .. } => {
                let is_macro = schedule.expression.trim_start().starts_with('@');
                let actual = (tool_known || !is_macro).then(|| schedule.actual.clone());
                (Some(schedule.expression.clone()), actual)
            }
            _ => (None, None),
        };
        Self {
            name: job.name.clone(),
            kind: job.kind.label(),
            schedule,
            schedule_actual,
        }
    }
}

fn job_table(jobs: &[JobSummary]) -> String {
    let name_width = jobs
        .iter()
        .map(|job| job.name.len())
        .max()
        .unwrap_or(0)
        .max("JOB".len());
    let mut table = format!("{:<name_width$}  {:<10}  SCHEDULE\n", "JOB", "KIND");
    for job in jobs {
        let schedule = match (&job.schedule, &job.schedule_actual) {
            (Some(written), Some(actual)) if written != actual => {
                format!("{written} (runs as `{actual}`)")
            }
            (Some(written), None) => format!("{written} (times depend on the tool: pass --tool)"),
            (Some(written), Some(_)) => written.clone(),
            (None, _) => String::new(),
        };
        table.push_str(
            format!("{:<name_width$}  {:<10}  {schedule}", job.name, job.kind).trim_end(),
        );
        table.push('\n');
    }
    table
}

fn summary(source: &SourceFile, jobs: usize, problems: &[Problem]) -> String {
    let errors = problems.iter().filter(|problem| problem.is_error()).count();
    let warnings = problems.len() - errors;
    let warnings_text = match warnings {
        0 => String::new(),
        1 => ", 1 warning".to_owned(),
        n => format!(", {n} warnings"),
    };
    if errors == 0 {
        let jobs_text = if jobs == 1 {
            "1 job".to_owned()
        } else {
            format!("{jobs} jobs")
        };
        format!("{} is valid: {jobs_text}{warnings_text}\n", source.name)
    } else {
        let errors_text = if errors == 1 {
            "1 error".to_owned()
        } else {
            format!("{errors} errors")
        };
        format!("{} is invalid: {errors_text}{warnings_text}\n", source.name)
    }
}

#[derive(Debug, Serialize)]
struct JsonReport<'a> {
    file: &'a str,
    valid: bool,
    jobs: Vec<JobSummary>,
    problems: Vec<JsonProblem<'a>>,
}

#[derive(Debug, Serialize)]
struct JsonProblem<'a> {
    severity: Severity,
    code: &'static str,
    message: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
}

impl<'a> JsonProblem<'a> {
    fn new(source: &SourceFile, problem: &'a Problem) -> Self {
        let (line, column) = source.line_column(problem.span.start);
        let (end_line, end_column) = source.line_column(problem.span.end);
        Self {
            severity: problem.severity,
            code: problem.code,
            message: &problem.message,
            line,
            column,
            end_line,
            end_column,
            help: problem.help.as_deref(),
        }
    }
}
