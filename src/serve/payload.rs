//! A request body becomes a job the way a jobs file does: [`NewJob`] is written as the jobs.yaml entry it stands
//! for and goes through the loader, so `POST /jobs` and `PATCH /jobs` have exactly the rules of a jobs file. A
//! problem is reported with upstream's sentence where upstream has one, then our own words, naming the request
//! key it is about (not the line of the entry nobody sees).

use axum::http::StatusCode;

use super::error::ApiError;
use super::wire::{HealthCheck, NewJob, Port};
use crate::config::diagnostic::{Problem, Severity};
use crate::config::entry::{entry, quoted};
use crate::config::image::ImageTable;
use crate::config::{self, Context, Job};
use crate::model::Kind;

/// A valid job, with the warnings of its definition.
pub struct Loaded {
    pub job: Job,
    pub warnings: Vec<String>,
}

/// Loads `request` as a jobs file with one job, for `tool` and its images.
pub fn load(request: &NewJob, tool: &str, images: &ImageTable) -> Result<Loaded, ApiError> {
    let lines = lines(request);
    let pairs: Vec<(&str, String)> = lines
        .iter()
        .map(|line| (line.yaml_key, line.value.clone()))
        .collect();
    let yaml = entry(&pairs);
    let context = Context {
        tool,
        images,
        count_trigger_files: None,
    };
    let loaded = config::decode("the request".to_owned(), yaml.into_bytes())
        .and_then(|source| config::load(source, &context));
    match loaded {
        Ok(mut file) if !file.jobs.is_empty() => {
            let warnings = file
                .warnings
                .iter()
                .map(|problem| described(problem, &lines, &file.source))
                .collect();
            Ok(Loaded {
                job: file.jobs.swap_remove(0).job,
                warnings,
            })
        }
        Ok(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "No job in the request",
        )),
        Err(invalid) => {
            let errors: Vec<&Problem> = invalid
                .problems
                .iter()
                .filter(|problem| problem.severity == Severity::Error)
                .collect();
            let mut sentences: Vec<String> = errors
                .iter()
                .filter_map(|problem| upstream_sentence(problem, request))
                .collect();
            sentences.dedup();
            let detail: Vec<String> = errors
                .iter()
                .map(|problem| described(problem, &lines, &invalid.source))
                .collect();
            // Where upstream has no sentence for it, our words are the message.
            let (error, detail) = if sentences.is_empty() {
                (detail, Vec::new())
            } else {
                (sentences, detail)
            };
            Err(ApiError {
                status: StatusCode::BAD_REQUEST,
                error,
                detail,
                fastapi_detail: None,
            })
        }
    }
}

/// One line of the generated entry: the jobs.yaml key, its value, and the request key it came from.
struct Line {
    yaml_key: &'static str,
    value: String,
    request_key: &'static str,
}

/// The entry's lines, `name` first (an entry is a list item that starts with it).
fn lines(request: &NewJob) -> Vec<Line> {
    let line = |yaml_key, value, request_key| Line {
        yaml_key,
        value,
        request_key,
    };
    let mut lines = vec![line("name", quoted(&request.name), "name")];
    let strings = [
        ("command", &request.cmd, "cmd"),
        ("schedule", &request.schedule, "schedule"),
        ("mem", &request.memory, "memory"),
        ("cpu", &request.cpu, "cpu"),
        ("emails", &request.emails, "emails"),
        ("mount", &request.mount, "mount"),
        ("filelog-stdout", &request.filelog_stdout, "filelog_stdout"),
        ("filelog-stderr", &request.filelog_stderr, "filelog_stderr"),
        ("publish", &request.publish, "publish"),
    ];
    lines.push(line("image", quoted(&request.imagename), "imagename"));
    lines.extend(
        strings
            .into_iter()
            .filter_map(|(yaml_key, value, request_key)| {
                value
                    .as_deref()
                    .map(|value| line(yaml_key, quoted(value), request_key))
            }),
    );
    let numbers = [
        ("retry", request.retry, "retry"),
        ("timeout", request.timeout, "timeout"),
        ("replicas", request.replicas, "replicas"),
    ];
    lines.extend(
        numbers
            .into_iter()
            .filter_map(|(yaml_key, value, request_key)| {
                value.map(|value| line(yaml_key, value.to_string(), request_key))
            }),
    );
    if let Some(port) = &request.port {
        let number = match port {
            Port::Number(number) => number.to_string(),
            Port::Text(text) => text.clone(),
        };
        let value = match &request.port_protocol {
            Some(protocol) => quoted(&format!("{number}/{protocol}")),
            None if number.parse::<u16>().is_ok() => number,
            None => quoted(&number),
        };
        lines.push(line("port", value, "port"));
    }
    match &request.health_check {
        Some(HealthCheck::Script { script }) => {
            lines.push(line("health-check-script", quoted(script), "health_check"));
        }
        Some(HealthCheck::Http { path }) => {
            lines.push(line("health-check-http", quoted(path), "health_check"));
        }
        None => {}
    }
    match request.filelog {
        Some(true) => lines.push(line("filelog", "true".to_owned(), "filelog")),
        Some(false) => lines.push(line("no-filelog", "true".to_owned(), "filelog")),
        None => {}
    }
    match request.kind() {
        Kind::OneOff | Kind::Scheduled => {}
        Kind::Continuous => lines.push(line("continuous", "true".to_owned(), "job_type")),
        Kind::Webservice => lines.push(line("webservice", "true".to_owned(), "job_type")),
    }
    lines
}

/// `<request key>: <message> (<help>)`.
fn described(problem: &Problem, lines: &[Line], source: &config::diagnostic::SourceFile) -> String {
    let (line, _) = source.line_column(problem.span.start);
    let key = line
        .checked_sub(1)
        .and_then(|index| lines.get(index))
        .map_or("request", |line| line.request_key);
    match &problem.help {
        Some(help) => format!("{key}: {} ({help})", problem.message),
        None => format!("{key}: {}", problem.message),
    }
}

/// Upstream's words for a problem, where upstream refuses the same job (reference/jobs-api.md §4.2).
fn upstream_sentence(problem: &Problem, request: &NewJob) -> Option<String> {
    match problem.code {
        "jobs::invalid_name" => Some(
            "Invalid job name. See the documentation for the naming rules: https://w.wiki/6YL8"
                .to_owned(),
        ),
        "jobs::filelog_needs_mount" => Some(config::FILELOG_NEEDS_MOUNT.to_owned()),
        "jobs::mount_none_prebuilt" => {
            Some("Mount type none is only supported for build service images".to_owned())
        }
        "jobs::unknown_image" | "jobs::invalid_image" => {
            Some(format!("No such image '{}'", request.imagename))
        }
        "jobs::invalid_schedule" | "jobs::schedule" => Some(format!(
            "Unable to parse cron expression \"{}\"",
            request.schedule.as_deref().unwrap_or_default()
        )),
        _ => None,
    }
}
