//! `config`: jobs.yaml text → validated [`Job`]s, or every problem with the file.
//!
//! The first stage of the pipeline (config → render → plan → apply/wait). It is pure: the caller reads the file
//! and passes its text, the tool name and the image table. Reading is YAML 1.1 exactly as upstream's PyYAML
//! `safe_load` (the `yaml11` crate), then each job is checked by [`validate`]. Nothing is returned as valid
//! unless the whole file is, so a bad entry can never lead to a partial apply.

pub mod diagnostic;
pub mod entry;
mod fields;
pub mod image;
pub mod job;
mod keys;
pub mod quantity;
pub mod schedule;
pub mod schema;
mod validate;

use std::collections::HashMap;

use yaml11::{Node, Value};

pub use diagnostic::{Problem, Severity, SourceFile};
pub use job::{Job, JobKind, LocatedJob};
pub use keys::Key;
pub use validate::{
    Context, DEFAULT_WAIT_SECONDS, FILELOG_NEEDS_MOUNT, JobNameError, MAX_NAME_LENGTH,
    check_job_name, is_dns_subdomain,
};

use fields::span_of;

/// Refuse files larger than this before parsing: a jobs file is a few kilobytes.
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;
/// Refuse files with more jobs than this: far beyond any tool's quota.
pub const MAX_JOBS: usize = 10_000;

/// A valid jobs file.
#[derive(Debug)]
pub struct JobsFile {
    pub source: SourceFile,
    pub jobs: Vec<LocatedJob>,
    /// Problems that do not make the file invalid.
    pub warnings: Vec<Problem>,
}

/// The code of the problem of a file that is an empty list (`[]`): invalid, except for `apply --allow-empty`,
/// which deletes every job with it. A file without any document stays invalid even then (a half-written file).
pub const EMPTY_LIST: &str = "jobs::empty_list";

/// The code of the warning about a deprecated pre-built image, given once per image.
pub(crate) const DEPRECATED_IMAGE: &str = "jobs::deprecated_image";

/// A jobs file with at least one error; `problems` holds every error and warning, in file order.
#[derive(Debug)]
pub struct InvalidFile {
    pub source: SourceFile,
    pub problems: Vec<Problem>,
}

impl InvalidFile {
    pub fn error_count(&self) -> usize {
        self.problems
            .iter()
            .filter(|problem| problem.is_error())
            .count()
    }
}

/// Turns a file's bytes into text the way PyYAML reads them (UTF-8, a leading byte-order mark skipped),
/// refusing files over [`MAX_FILE_BYTES`] and reporting the first byte that is not UTF-8 with its location.
pub fn decode(name: String, bytes: Vec<u8>) -> Result<SourceFile, InvalidFile> {
    if bytes.len() > MAX_FILE_BYTES {
        let problem = Problem::error(
            "jobs::too_large",
            0..0,
            format!(
                "the file is larger than {MAX_FILE_BYTES} bytes, the most a jobs file may have"
            ),
        )
        .with_help("a jobs file lists jobs; data belongs in other files");
        return Err(InvalidFile {
            source: SourceFile::new(name, ""),
            problems: vec![problem],
        });
    }
    let bytes = match bytes.strip_prefix("\u{feff}".as_bytes()) {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile::new(name, text)),
        Err(error) => {
            let offset = error.utf8_error().valid_up_to();
            let length = error.utf8_error().error_len().unwrap_or(1);
            let text = String::from_utf8_lossy(error.as_bytes()).into_owned();
            // The replacement character is three bytes long, and everything before it is unchanged.
            let problem = Problem::error(
                "jobs::not_utf8",
                offset..offset + "\u{fffd}".len(),
                format!("the file is not UTF-8 text: byte {offset} is not valid"),
            )
            .with_label(format!("{length} invalid byte(s) here"))
            .with_help("save the file as UTF-8; most editors offer this in their \"save as\" or encoding menu");
            Err(InvalidFile {
                source: SourceFile::new(name, text),
                problems: vec![problem],
            })
        }
    }
}

/// Parses and validates a whole jobs file.
pub fn load(source: SourceFile, context: &Context<'_>) -> Result<JobsFile, InvalidFile> {
    let mut problems = Vec::new();
    let jobs = load_jobs(&source, context, &mut problems);
    merge_deprecated_images(&mut problems);
    problems.sort_by(|a, b| {
        (a.span.start, a.severity, &a.message).cmp(&(b.span.start, b.severity, &b.message))
    });
    // A mistake inside an anchored mapping is found once per alias that uses it; report it once.
    problems.dedup();
    if problems.iter().any(Problem::is_error) {
        return Err(InvalidFile { source, problems });
    }
    Ok(JobsFile {
        source,
        jobs,
        warnings: problems,
    })
}

fn load_jobs(
    source: &SourceFile,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Vec<LocatedJob> {
    let text = &source.text;
    let limits = yaml11::Limits {
        max_bytes: MAX_FILE_BYTES,
        // A realistic job is 10–30 nodes, so this admits `MAX_JOBS` jobs and stops hostile files early.
        max_nodes: 600_000,
        ..yaml11::Limits::default()
    };
    let root = match yaml11::load(text, &limits) {
        Ok(Some(root)) => root,
        Ok(None) => {
            problems.push(
                Problem::error(
                    "jobs::empty_file",
                    0..text.len(),
                    "the file defines no jobs",
                )
                .with_label("empty")
                .with_help(EXAMPLE_HELP),
            );
            return Vec::new();
        }
        Err(error) => {
            problems.push(syntax_problem(text, &error));
            return Vec::new();
        }
    };
    let Value::Seq(items) = &root.value else {
        problems.push(not_a_list(&root));
        return Vec::new();
    };
    if items.is_empty() {
        problems.push(
            Problem::error(EMPTY_LIST, span_of(&root), "the file defines no jobs")
                .with_label("an empty list")
                .with_help(format!(
                    "{EXAMPLE_HELP}\nTo delete every job, keep `[]` and run `apply --allow-empty`."
                )),
        );
        return Vec::new();
    }
    if items.len() > MAX_JOBS {
        problems.push(
            Problem::error(
                "jobs::too_many_jobs",
                span_of(&root),
                format!(
                    "the file defines {} jobs; at most {MAX_JOBS} are supported",
                    items.len()
                ),
            )
            .with_help("split the jobs over several files and apply each with its own `--set`"),
        );
        return Vec::new();
    }

    let mut jobs: Vec<LocatedJob> = Vec::with_capacity(items.len());
    // Where each name is first defined; a job with other errors still claims its name, so a duplicate of it is
    // reported in the same run.
    let mut first_by_name: HashMap<String, usize> = HashMap::new();
    for item in items {
        let checked = validate::job(item, text, context, problems);
        if let Some(name) = &checked.name {
            if let Some(&first_offset) = first_by_name.get(name) {
                problems.push(duplicate_name(item, name, source, first_offset));
                continue;
            }
            first_by_name.insert(name.clone(), span_of(item).start);
        }
        if let Some(job) = checked.job {
            jobs.push(LocatedJob {
                job,
                span: span_of(item),
            });
        }
    }
    jobs
}

/// Keeps one deprecated-image warning per image, at its first use in the file, saying how many other jobs use it.
fn merge_deprecated_images(problems: &mut Vec<Problem>) {
    let mut uses: HashMap<String, usize> = HashMap::new();
    problems.retain(|problem| {
        if problem.code != DEPRECATED_IMAGE {
            return true;
        }
        let count = uses.entry(problem.message.clone()).or_insert(0);
        *count += 1;
        *count == 1
    });
    for problem in problems.iter_mut() {
        if problem.code != DEPRECATED_IMAGE {
            continue;
        }
        let others = uses.get(&problem.message).map_or(0, |count| count - 1);
        let also = match others {
            0 => continue,
            1 => "1 more job uses it".to_owned(),
            n => format!("{n} more jobs use it"),
        };
        problem.help = Some(match problem.help.take() {
            Some(help) => format!("{help}; {also}"),
            None => also,
        });
    }
}

const EXAMPLE_HELP: &str = "a jobs file is a YAML list with one entry per job, e.g.\n\
    - name: update-index\n  command: ./update.sh\n  image: python3.11\n  schedule: \"@daily\"";

fn not_a_list(root: &Node) -> Problem {
    let found = root.value.type_name();
    let mut problem = Problem::error(
        "jobs::not_a_list",
        span_of(root).start..span_of(root).start,
        format!("the file must be a list of jobs, found a {found}"),
    )
    .with_label(format!("a {found}"));
    problem = if let Value::Map(map) = &root.value
        && map.get("name").is_some()
    {
        problem.with_help("start the job with `- ` to make it an entry of a list: `- name: …`")
    } else {
        problem.with_help(EXAMPLE_HELP)
    };
    problem
}

fn duplicate_name(item: &Node, name: &str, source: &SourceFile, first_offset: usize) -> Problem {
    let (first_line, _) = source.line_column(first_offset);
    let span = match &item.value {
        Value::Map(map) => map
            .entries()
            .iter()
            .rev()
            .find(|(key, _)| matches!(&key.value, Value::Str(text) if text == "name"))
            .map_or_else(|| span_of(item), |(_, value)| span_of(value)),
        _ => span_of(item),
    };
    Problem::error(
        "jobs::duplicate_name",
        span,
        format!("job `{name}` is defined twice"),
    )
    .with_label("second definition")
    .with_help(format!(
        "the first definition is on line {first_line}; rename one of them or remove the duplicate"
    ))
}

fn syntax_problem(text: &str, error: &yaml11::Error) -> Problem {
    // At the end of the file the place to fix is where the unclosed construct began (an opening quote or
    // bracket), which the parser names as the context, as PyYAML does.
    let at_end_of_file = error.span.start.offset >= text.trim_end().len();
    let span = match &error.context {
        Some((_, context_span)) if at_end_of_file => *context_span,
        _ => error.span,
    };
    let start = span.start.offset.min(text.len());
    let end = span.end.offset.clamp(start, text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |newline| newline + 1);
    let line_end = text[start..]
        .find('\n')
        .map_or(text.len(), |newline| start + newline);
    let line = &text[line_start..line_end];
    let help = syntax_help(line, error);
    let mut message = error.message.clone();
    if let Some((context, _)) = &error.context {
        message = format!("{message} ({context})");
    }
    Problem::error(
        "jobs::yaml_syntax",
        start..end,
        format!("invalid YAML: {message}"),
    )
    .with_label(if at_end_of_file && error.context.is_some() {
        "opened here and never closed"
    } else {
        "here"
    })
    .with_optional_help(help.map(str::to_owned))
}

/// Advice for the YAML mistakes people make in jobs files.
fn syntax_help(line: &str, error: &yaml11::Error) -> Option<&'static str> {
    if line.contains(": @") || line.contains(":@") || line.trim_start().starts_with("- @") {
        return Some("a value that starts with `@` must be quoted in YAML: `schedule: \"@daily\"`");
    }
    if error.message.contains("tab") || error.message.contains("'\\t'") {
        return Some("YAML does not allow tabs for indentation; indent with spaces");
    }
    match error.kind {
        yaml11::ErrorKind::LimitExceeded(yaml11::Limit::Depth) => {
            Some("jobs files nest a few levels deep; this one nests far deeper")
        }
        yaml11::ErrorKind::LimitExceeded(_) => Some(
            "jobs files are small; this one expands into too much data (aliases of aliases, or far too many jobs)",
        ),
        _ => None,
    }
}
