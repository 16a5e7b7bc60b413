//! Turning one job mapping into a [`Job`], checking every rule of SPEC §3 and reference/toolforge.md §1.
//!
//! Each rule reports a [`Problem`] pointing at the offending key or value and keeps going, so a file with five
//! mistakes shows five diagnostics. A job is returned only when it has no errors.

use yaml11::{Node, Style, Value};

use crate::config::diagnostic::Problem;
use crate::config::fields::{Fields, span_of};
use crate::config::image::ImageTable;
use crate::config::job::{Emails, Job, JobKind, Mount};
use crate::config::keys::Key;
use crate::config::quantity::Quantity;

mod file_log;
mod image;
mod kind;
mod service;

pub use file_log::FILELOG_NEEDS_MOUNT;
use file_log::{check_file_log, file_log, trigger_files};
use image::image;
use kind::kind;

/// What validation needs to know besides the file.
pub struct Context<'a> {
    /// The tool, which seeds the randomisation of `@daily`-style schedules.
    pub tool: &'a str,
    pub images: &'a ImageTable,
    /// Counts the files a `trigger-files` pattern matches, relative to the file's directory; `None` skips the
    /// check (the file system is the caller's business, so this module stays pure).
    pub count_trigger_files: Option<&'a dyn Fn(&str) -> usize>,
}

/// Upstream's limit: CronJob names longer than 52 characters cannot get Job names within 63.
pub const MAX_NAME_LENGTH: usize = 52;

/// Seconds `wait: true` waits, as upstream.
pub const DEFAULT_WAIT_SECONDS: u64 = 600;

/// A job mapping after validation: its name whenever the name itself is valid, even if other keys are not (so
/// duplicate names are found in a file with other mistakes), and the job when it has no errors at all.
pub(super) struct Checked {
    pub name: Option<String>,
    pub job: Option<Job>,
}

/// Validates one job mapping; its job is `None` when it has errors (all of them pushed to `problems`).
pub(super) fn job(
    mapping: &Node,
    source: &str,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Checked {
    let errors_before = count_errors(problems);
    let Some(fields) = Fields::collect(mapping, problems) else {
        problems.push(not_a_mapping(mapping));
        return Checked {
            name: None,
            job: None,
        };
    };
    let name = name(&fields, source, problems);
    let job = job_of(mapping, &fields, name.clone(), context, problems);
    let job = job.filter(|_| count_errors(problems) == errors_before);
    Checked { name, job }
}

fn job_of(
    mapping: &Node,
    fields: &Fields<'_>,
    name: Option<String>,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Option<Job> {
    let command = fields
        .text(Key::Command, problems)
        .and_then(|(text, entry)| {
            if text.trim().is_empty() {
                problems.push(
                    Problem::error("jobs::invalid_value", entry.range(), "`command` is empty")
                        .with_label("nothing to run")
                        .with_help(
                            "write the shell command the job runs, e.g. `command: ./bot.py`",
                        ),
                );
                return None;
            }
            Some(text)
        });
    let image = image(fields, context, problems);
    let kind = kind(fields, name.as_deref().unwrap_or(""), context, problems);
    let emails = fields
        .choice(Key::Emails, &Emails::NAMES, problems)
        .and_then(|(text, _)| Emails::from_name(&text));
    let mem = quantity(fields, Key::Mem, problems);
    let cpu = quantity(fields, Key::Cpu, problems);
    let mount = fields
        .choice(Key::Mount, &["all", "none"], problems)
        .map(|(text, entry)| {
            (
                if text == "all" {
                    Mount::All
                } else {
                    Mount::None
                },
                entry,
            )
        });
    let file_log = file_log(fields, context.tool, problems);
    let trigger = fields.text(Key::Trigger, problems).map(|(text, _)| text);
    let trigger_files = trigger_files(fields, context, problems);

    if let Some(kind) = &kind {
        if command.is_none() && !fields.has(Key::Command) && !matches!(kind, JobKind::Webservice(_))
        {
            problems.push(missing(
                fields,
                mapping,
                Key::Command,
                "the shell command the job runs, e.g. `command: ./bot.py`",
            ));
        }
        check_file_log(fields, kind, &file_log, image.as_ref(), mount, problems);
    }
    if let (Some((_, image_name)), Some((Mount::None, entry))) = (&image, mount)
        && !image_name.is_build_service()
    {
        problems.push(
            Problem::error(
                "jobs::mount_none_prebuilt",
                entry.range(),
                "`mount: none` is only supported for build-service images",
            )
            .with_label("pre-built images always mount the tool's storage")
            .with_help("remove `mount: none`"),
        );
    }

    let (image, image_name) = image?;
    Some(Job {
        name: name?,
        command,
        image,
        image_name,
        kind: kind?,
        emails,
        mem,
        cpu,
        file_log,
        mount: mount.map(|(mount, _)| mount),
        trigger,
        trigger_files,
    })
}

fn count_errors(problems: &[Problem]) -> usize {
    problems.iter().filter(|problem| problem.is_error()).count()
}

fn not_a_mapping(node: &Node) -> Problem {
    let found = node.value.type_name();
    let mut problem = Problem::error(
        "jobs::job_not_mapping",
        span_of(node),
        format!("each job must be a mapping of keys to values, found a {found}"),
    )
    .with_label(format!("a {found}"));
    if let Value::Str(text) = &node.value {
        problem = problem.with_help(format!(
            "write the job as `- name: {text}` followed by `command:` and `image:` lines indented under it"
        ));
    }
    problem
}

fn missing(fields: &Fields<'_>, mapping: &Node, key: Key, what: &str) -> Problem {
    let span = fields.span.clone();
    // Underline only the first line of the mapping: the whole job would drown the message.
    let first_line_end = span.start + mapping_first_line_length(mapping).min(span.len());
    Problem::error(
        "jobs::missing_key",
        span.start..first_line_end,
        format!("job has no `{key}`"),
    )
    .with_label(format!("`{key}` missing in this job"))
    .with_help(format!("add `{key}:` with {what}"))
}

fn mapping_first_line_length(mapping: &Node) -> usize {
    match &mapping.value {
        Value::Map(map) => map.entries().first().map_or(0, |(key, value)| {
            span_of(value).end.saturating_sub(span_of(key).start)
        }),
        _ => 0,
    }
}

fn name(fields: &Fields<'_>, source: &str, problems: &mut Vec<Problem>) -> Option<String> {
    let Some((name, entry)) = fields.text(Key::Name, problems) else {
        if !fields.has(Key::Name) {
            problems.push(
                Problem::error(
                    "jobs::missing_key",
                    fields.span.start..fields.span.start,
                    "job has no `name`",
                )
                .with_label("this job")
                .with_help("add `name:` with the job's name, e.g. `name: update-index`"),
            );
        }
        return None;
    };
    match check_job_name(&name) {
        Ok(()) => Some(name),
        Err(error @ JobNameError::TooLong { .. }) => {
            problems.push(
                Problem::error("jobs::invalid_name", entry.value_range(), error.to_string())
                    .with_label("too long")
                    .with_help(JOB_NAME_LENGTH_HELP),
            );
            None
        }
        Err(JobNameError::Invalid { .. }) => {
            let help = match &entry.value.value {
                // YAML 1.1 reads an unquoted `no`, `yes`, `on`, `off`, `true` or `false` as a boolean, whose
                // Python `str()` (`False`, `True`) is what upstream would use as the name.
                Value::Bool(_) if matches!(entry.value.style, Style::Plain) => format!(
                    "YAML 1.1 reads the unquoted word as the boolean `{name}`; quote the name to keep it text, e.g. \
                     `name: \"{}\"`",
                    source
                        .get(entry.value_range())
                        .map_or_else(|| "no".to_owned(), str::to_ascii_lowercase)
                ),
                _ => JOB_NAME_HELP.to_owned(),
            };
            problems.push(
                Problem::error(
                    "jobs::invalid_name",
                    entry.value_range(),
                    format!("`{name}` is not a valid job name"),
                )
                .with_label("invalid name")
                .with_help(help),
            );
            None
        }
    }
}

/// Why a job's name is refused, wherever it comes from (jobs.yaml, or a command's `NAME` argument).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobNameError {
    #[error("job name `{name}` is {length} characters long; at most {MAX_NAME_LENGTH} are allowed")]
    TooLong { name: String, length: usize },
    #[error("`{name}` is not a valid job name: {JOB_NAME_HELP}")]
    Invalid { name: String },
}

const JOB_NAME_HELP: &str = "use lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit, \
                             e.g. `update-index`; see https://w.wiki/6YL8";
const JOB_NAME_LENGTH_HELP: &str =
    "Kubernetes derives names of runs from it; see https://w.wiki/6YL8";

/// Checks a job name as upstream does: an RFC 1123 subdomain of at most [`MAX_NAME_LENGTH`] characters. Such a
/// name is safe in a request path (no `/`, no `..`).
pub fn check_job_name(name: &str) -> Result<(), JobNameError> {
    let length = name.chars().count();
    if length > MAX_NAME_LENGTH {
        return Err(JobNameError::TooLong {
            name: name.to_owned(),
            length,
        });
    }
    if !is_dns_subdomain(name) {
        return Err(JobNameError::Invalid {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// RFC 1123 subdomain: dot-separated labels of lowercase alphanumerics and `-`, each starting and ending
/// alphanumeric.
pub fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

fn quantity(fields: &Fields<'_>, key: Key, problems: &mut Vec<Problem>) -> Option<Quantity> {
    let (text, entry) = fields.text(key, problems)?;
    let example = if key == Key::Mem {
        "`512Mi` or `2Gi`"
    } else {
        "`0.5`, `500m` or `2`"
    };
    match Quantity::parse(&text) {
        Ok(quantity) if quantity.is_positive() => Some(quantity),
        Ok(_) => {
            problems.push(
                Problem::error(
                    "jobs::invalid_quantity",
                    entry.value_range(),
                    format!("`{key}` must be greater than zero"),
                )
                .with_label("not positive")
                .with_help(format!("write a quantity such as {example}")),
            );
            None
        }
        Err(error) => {
            let mut help = format!("write a quantity such as {example}");
            if key == Key::Mem
                && (text.ends_with("GB")
                    || text.ends_with("MB")
                    || text.ends_with('g')
                    || text.ends_with('m'))
            {
                "Kubernetes writes binary units as `Mi` and `Gi`, e.g. `512Mi` or `2Gi`"
                    .clone_into(&mut help);
            }
            problems.push(
                Problem::error(
                    "jobs::invalid_quantity",
                    entry.value_range(),
                    format!("`{key}`: {error}"),
                )
                .with_label("not a Kubernetes quantity")
                .with_help(help),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::image::ImageTable;
    use crate::config::{Context, InvalidFile, Job, JobKind, JobsFile, SourceFile, load};

    /// Loads one job written as the body of a list item, returning it or the codes of its errors.
    fn job(body: &str) -> Result<Job, Vec<&'static str>> {
        let images = ImageTable::bundled();
        let no_files = |pattern: &str| usize::from(pattern == "present.txt");
        let context = Context {
            tool: "mytool",
            images: &images,
            count_trigger_files: Some(&no_files),
        };
        let text = format!("- name: job\n  image: bookworm\n{body}");
        match load(SourceFile::new("jobs.yaml", text), &context) {
            Ok(mut file) => Ok(file.jobs.remove(0).job),
            Err(invalid) => Err(invalid
                .problems
                .iter()
                .filter(|p| p.is_error())
                .map(|p| p.code)
                .collect()),
        }
    }

    fn warnings(body: &str) -> Vec<&'static str> {
        let images = ImageTable::bundled();
        let context = Context {
            tool: "mytool",
            images: &images,
            count_trigger_files: None,
        };
        let text = format!("- name: job\n  image: bookworm\n{body}");
        load(SourceFile::new("jobs.yaml", text), &context)
            .map(|file| file.warnings.iter().map(|warning| warning.code).collect())
            .unwrap_or_default()
    }

    #[test]
    fn kind_follows_from_the_keys() {
        assert!(matches!(
            job("  command: x\n").unwrap().kind,
            JobKind::OneOff { .. }
        ));
        assert!(matches!(
            job("  command: x\n  schedule: '@daily'\n").unwrap().kind,
            JobKind::Scheduled { .. }
        ));
        assert!(matches!(
            job("  command: x\n  continuous: yes\n").unwrap().kind,
            JobKind::Continuous(_)
        ));
        assert!(matches!(
            job("  webservice: true\n").unwrap().kind,
            JobKind::Webservice(_)
        ));
    }

    #[test]
    fn wait_true_waits_600_seconds_and_a_number_that_many() {
        let wait_of = |body: &str| match job(body).unwrap().kind {
            JobKind::OneOff { wait, .. } => wait,
            other => panic!("not a one-off: {other:?}"),
        };
        assert_eq!(wait_of("  command: x\n  wait: true\n"), Some(600));
        assert_eq!(wait_of("  command: x\n  wait: 120\n"), Some(120));
        assert_eq!(wait_of("  command: x\n  wait: false\n"), None);
        assert_eq!(wait_of("  command: x\n  wait: '120'\n"), None);
        assert_eq!(
            warnings("  command: x\n  wait: '120'\n"),
            ["jobs::ignored_value"]
        );
    }

    #[test]
    fn values_are_read_as_python_str() {
        let job = job("  command: 42\n  cpu: 1.0\n  mem: 1Gi\n  retry: '2'\n").unwrap();
        assert_eq!(job.command.as_deref(), Some("42"));
        assert_eq!(job.cpu.unwrap().as_str(), "1.0");
        assert!(matches!(job.kind, JobKind::OneOff { retry: Some(2), .. }));
    }

    /// A job body and the error codes it must produce, one row per rule.
    const RULES: &[(&str, &[&str])] = &[
        ("  command: x\n  retry: 6\n", &["jobs::out_of_range"]),
        ("  command: x\n  retry: 2.0\n", &["jobs::invalid_value"]),
        ("  command: x\n  retry: true\n", &["jobs::invalid_value"]),
        (
            "  command: x\n  timeout: -1\n  schedule: '* * * * *'\n",
            &["jobs::out_of_range"],
        ),
        (
            "  command: x\n  continuous: true\n  port: 0\n",
            &["jobs::invalid_port"],
        ),
        (
            "  command: x\n  continuous: true\n  port: 80/sctp\n",
            &["jobs::invalid_port"],
        ),
        (
            "  command: x\n  continuous: true\n  replicas: -1\n",
            &["jobs::out_of_range"],
        ),
        ("  command: x\n  emails: yes\n", &["jobs::invalid_value"]),
        ("  command: x\n  mount: some\n", &["jobs::invalid_value"]),
        (
            "  command: x\n  mount: none\n",
            &["jobs::mount_none_prebuilt"],
        ),
        ("  command: x\n  mem: 0\n", &["jobs::invalid_quantity"]),
        ("  command: x\n  cpu: 1 core\n", &["jobs::invalid_quantity"]),
        ("  command: ''\n", &["jobs::invalid_value"]),
        ("  command:\n", &["jobs::invalid_value"]),
        ("  command: [a, b]\n", &["jobs::invalid_type"]),
        ("  schedule: '@daily'\n", &["jobs::missing_key"]),
        (
            "  command: x\n  schedule: '@reboot'\n",
            &["jobs::invalid_schedule"],
        ),
        (
            "  command: x\n  schedule: '* * * *'\n",
            &["jobs::invalid_schedule"],
        ),
        (
            "  command: x\n  schedule: '* * * * *'\n  continuous: true\n",
            &["jobs::conflicting_keys"],
        ),
        (
            "  command: x\n  schedule: '* * * * *'\n  wait: true\n",
            &["jobs::conflicting_keys"],
        ),
        (
            "  command: x\n  filelog: true\n  no-filelog: true\n",
            &["jobs::conflicting_keys"],
        ),
        (
            "  command: x\n  continuous: true\n  port: 80\n  health-check-script: x\n  health-check-http: /\n",
            &["jobs::conflicting_keys"],
        ),
        (
            "  command: x\n  continuous: true\n  health-check-http: /\n",
            &["jobs::missing_key"],
        ),
        ("  command: x\n  port: 80\n", &["jobs::not_for_kind"]),
        ("  command: x\n  timeout: 5\n", &["jobs::not_for_kind"]),
        (
            "  command: x\n  continuous: true\n  retry: 0\n",
            &["jobs::not_for_kind"],
        ),
        (
            "  command: x\n  continuous: true\n  rerun: always\n",
            &["jobs::not_for_kind"],
        ),
        (
            "  command: x\n  timezone: Europe/Berlin\n",
            &["jobs::not_for_kind"],
        ),
        (
            "  command: x\n  schedule: '* * * * *'\n  timezone: Mars/Olympus\n",
            &["jobs::invalid_timezone"],
        ),
        (
            "  command: x\n  continuous: true\n  port: 80\n  publish: /api\n",
            &["jobs::invalid_value"],
        ),
        (
            "  command: x\n  continuous: true\n  port: 53/udp\n  publish: /\n",
            &["jobs::missing_key"],
        ),
        (
            "  command: x\n  schedule: '* * * * *'\n  publish: /\n",
            &["jobs::not_for_kind"],
        ),
        (
            "  webservice: true\n  filelog-stdout: x.log\n",
            &["jobs::not_for_kind"],
        ),
        (
            "  command: x\n  filelog: true\n  image: tool-t/i:latest\n  mount: none\n",
            &["jobs::filelog_needs_mount"],
        ),
        (
            "  command: x\n  filelog: true\n  image: tool-t/i:latest\n",
            &["jobs::filelog_needs_mount"],
        ),
        (
            "  command: x\n  trigger-files: missing.txt\n",
            &["jobs::invalid_trigger_files"],
        ),
        (
            "  command: x\n  trigger-files: [/etc/passwd]\n",
            &["jobs::invalid_trigger_files"],
        ),
        (
            "  command: x\n  trigger-files: ['../secret']\n",
            &["jobs::invalid_trigger_files"],
        ),
        (
            "  command: x\n  rerun: sometimes\n",
            &["jobs::invalid_value"],
        ),
        ("  command: x\n  memory: 1Gi\n", &["jobs::unknown_key"]),
        ("  command: x\n  on: true\n", &["jobs::unknown_key"]),
    ];

    #[test]
    fn each_rule_reports_its_code() {
        for (body, expected) in RULES {
            assert_eq!(job(body).err().as_deref(), Some(*expected), "{body}");
        }
    }

    #[test]
    fn accepted_forms_load() {
        for body in [
            "  command: x\n  trigger-files: present.txt\n",
            "  command: x\n  trigger: 3\n",
            "  command: x\n  continuous: true\n  port: 8080/tcp\n  publish: /\n",
            "  command: x\n  continuous: true\n  replicas: 0\n",
            "  command: x\n  schedule: '0 0 * * *'\n  timezone: UTC\n  timeout: 0\n",
            "  command: x\n  rerun: always\n  wait: 0\n",
            "  comm: x\n",
        ] {
            assert!(job(body).is_ok(), "{body}: {:?}", job(body).err());
        }
    }

    #[test]
    fn abbreviation_warnings_do_not_fail_but_images_outside_the_table_do() {
        assert_eq!(warnings("  comm: x\n"), ["jobs::abbreviated_key"]);
        // Upstream refuses any registry URL its image table does not have.
        assert_eq!(
            job("  command: x\n  image: registry.example.org/python:2.7\n").err(),
            Some(vec!["jobs::unknown_image"])
        );
    }

    /// Loads a whole file with the bundled image table and no trigger files.
    fn load_text(text: &str) -> Result<JobsFile, InvalidFile> {
        let images = ImageTable::bundled();
        let context = Context {
            tool: "mytool",
            images: &images,
            count_trigger_files: None,
        };
        load(SourceFile::new("jobs.yaml", text), &context)
    }

    /// The errors of a file, with their help texts (none for a valid file).
    fn error_helps(text: &str) -> Vec<(&'static str, String)> {
        load_text(text)
            .err()
            .map(|invalid| {
                invalid
                    .problems
                    .into_iter()
                    .filter(crate::config::Problem::is_error)
                    .map(|p| (p.code, p.help.unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn error_codes(text: &str) -> Vec<&'static str> {
        error_helps(text)
            .into_iter()
            .map(|(code, _)| code)
            .collect()
    }

    #[test]
    fn a_duplicate_name_is_found_when_either_copy_has_other_errors() {
        let first_invalid = "- name: bot\n  command: x\n  image: bookworm\n  retry: 9\n\
                             - name: bot\n  command: y\n  image: bookworm\n";
        assert_eq!(
            error_codes(first_invalid),
            ["jobs::out_of_range", "jobs::duplicate_name"]
        );
        let both_invalid = "- name: bot\n  command: x\n  image: bookworm\n  retry: 9\n\
                            - name: bot\n  command: y\n  image: nosuch\n";
        assert_eq!(
            error_codes(both_invalid),
            [
                "jobs::out_of_range",
                "jobs::duplicate_name",
                "jobs::unknown_image"
            ]
        );
    }

    #[test]
    fn a_deprecated_image_is_reported_once_with_its_successor() {
        let text = "- {name: a, command: x, image: python3.9}\n\
                    - {name: b, command: x, image: tf-python39}\n\
                    - {name: c, command: x, image: node16}\n\
                    - {name: d, command: x, image: python3.9}\n";
        let file = load_text(text).unwrap();
        let warnings: Vec<(usize, &str, Option<&str>)> = file
            .warnings
            .iter()
            .map(|w| (w.span.start, w.message.as_str(), w.help.as_deref()))
            .collect();
        assert_eq!(
            warnings,
            [
                (
                    text.find("python3.9").unwrap(),
                    "image `python3.9` is deprecated",
                    Some("move to `python3.13`; 2 more jobs use it")
                ),
                (
                    text.find("node16").unwrap(),
                    "image `node16` is deprecated",
                    Some("move to `node22`")
                ),
            ]
        );
    }

    #[test]
    fn a_boolean_name_gets_a_hint_about_quoting() {
        assert_eq!(
            error_helps("- name: no\n  command: x\n  image: bookworm\n"),
            [(
                "jobs::invalid_name",
                "YAML 1.1 reads the unquoted word as the boolean `False`; quote the name to keep it text, \
                 e.g. `name: \"no\"`"
                    .to_owned()
            )]
        );
        assert_eq!(
            error_helps("- name: On\n  command: x\n  image: bookworm\n")[0].1,
            "YAML 1.1 reads the unquoted word as the boolean `True`; quote the name to keep it text, e.g. \
             `name: \"on\"`"
        );
        assert!(
            error_helps("- name: 'No'\n  command: x\n  image: bookworm\n")[0]
                .1
                .starts_with("use lowercase letters")
        );
    }

    #[test]
    fn a_command_list_gets_a_hint_that_the_command_is_one_string() {
        assert_eq!(
            error_helps("- name: a\n  command: [python3, bot.py, -v]\n  image: bookworm\n"),
            [(
                "jobs::invalid_type",
                "`command` is one string, which the shell splits into words: write \
                 `command: \"python3 bot.py -v\"`, not a list"
                    .to_owned()
            )]
        );
        assert_eq!(
            error_helps("- name: a\n  command: [./b, two words]\n  image: bookworm\n")[0].1,
            "`command` is one string, which the shell splits into words: write `command: \"a b c\"`, not a list"
        );
    }

    #[test]
    fn job_names_follow_kubernetes_rules() {
        assert!(super::is_dns_subdomain("task1.1"));
        assert_eq!(super::check_job_name("task1.1"), Ok(()));
        assert_eq!(
            super::check_job_name(&"a".repeat(super::MAX_NAME_LENGTH)),
            Ok(())
        );
        for name in [
            "", "..", ".", "../x", "a/b", "x/../y", "A", "a b", "a?b", "a%2f",
        ] {
            assert!(
                matches!(
                    super::check_job_name(name),
                    Err(super::JobNameError::Invalid { .. })
                ),
                "{name:?}"
            );
        }
        assert_eq!(
            super::check_job_name(&"a".repeat(53)).map_err(|error| error.to_string()),
            Err(format!(
                "job name `{}` is 53 characters long; at most 52 are allowed",
                "a".repeat(53)
            ))
        );
        assert_eq!(
            super::check_job_name("a/b").map_err(|error| error.to_string()),
            Err("`a/b` is not a valid job name: use lowercase letters, digits, `-` and `.`, starting and ending \
                 with a letter or digit, e.g. `update-index`; see https://w.wiki/6YL8"
                .to_owned())
        );
        assert!(super::is_dns_subdomain("a-b"));
        for name in ["", "A", "a_b", "-a", "a-", "a..b", ".a"] {
            assert!(!super::is_dns_subdomain(name), "{name:?}");
        }
    }
}
