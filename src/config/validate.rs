//! Turning one job mapping into a [`Job`], checking every rule of SPEC §3 and reference/toolforge.md §1.
//!
//! Each rule reports a [`Problem`] pointing at the offending key or value and keeps going, so a file with five
//! mistakes shows five diagnostics. A job is returned only when it has no errors.

use std::ops::Range;

use yaml11::{Node, Style, Value};

use crate::config::diagnostic::Problem;
use crate::config::fields::{Entry, Fields, Flag, span_of};
use crate::config::image::{ImageName, ImageState, ImageTable, parse_image_name};
use crate::config::job::{
    Emails, FileLog, HealthCheck, Job, JobKind, Mount, Port, Protocol, Rerun, Service,
};
use crate::config::keys::Key;
use crate::config::quantity::Quantity;
use crate::config::schedule;

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

/// Validates one job mapping; `None` when it has errors (all of them pushed to `problems`).
pub(super) fn job(
    mapping: &Node,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Option<Job> {
    let errors_before = count_errors(problems);
    let Some(fields) = Fields::collect(mapping, problems) else {
        problems.push(not_a_mapping(mapping));
        return None;
    };

    let name = name(&fields, problems);
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
    let image = image(&fields, context, problems);
    let kind = kind(&fields, name.as_deref().unwrap_or(""), context, problems);
    let emails = fields
        .choice(Key::Emails, &Emails::NAMES, problems)
        .and_then(|(text, _)| Emails::from_name(&text));
    let mem = quantity(&fields, Key::Mem, problems);
    let cpu = quantity(&fields, Key::Cpu, problems);
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
    let file_log = file_log(&fields, problems);
    let trigger = fields.text(Key::Trigger, problems).map(|(text, _)| text);
    let trigger_files = trigger_files(&fields, context, problems);

    if let Some(kind) = &kind {
        if command.is_none() && !fields.has(Key::Command) && !matches!(kind, JobKind::Webservice(_))
        {
            problems.push(missing(
                &fields,
                mapping,
                Key::Command,
                "the shell command the job runs, e.g. `command: ./bot.py`",
            ));
        }
        check_file_log(&fields, kind, &file_log, image.as_ref(), mount, problems);
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

    if count_errors(problems) > errors_before {
        return None;
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

fn name(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Option<String> {
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
    if name.chars().count() > MAX_NAME_LENGTH {
        problems.push(
            Problem::error(
                "jobs::invalid_name",
                entry.value_range(),
                format!(
                    "job name `{name}` is {} characters long; at most {MAX_NAME_LENGTH} are allowed",
                    name.chars().count()
                ),
            )
            .with_label("too long")
            .with_help("Kubernetes derives names of runs from it; see https://w.wiki/6YL8"),
        );
        return None;
    }
    if !is_dns_subdomain(&name) {
        problems.push(
            Problem::error("jobs::invalid_name", entry.value_range(), format!("`{name}` is not a valid job name"))
                .with_label("invalid name")
                .with_help(
                    "use lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit, \
                     e.g. `update-index`; see https://w.wiki/6YL8",
                ),
        );
        return None;
    }
    Some(name)
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

fn image(
    fields: &Fields<'_>,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Option<(String, ImageName)> {
    let Some((text, entry)) = fields.text(Key::Image, problems) else {
        if !fields.has(Key::Image) {
            problems.push(
                Problem::error(
                    "jobs::missing_key",
                    fields.span.start..fields.span.start,
                    "job has no `image`",
                )
                .with_label("this job")
                .with_help(image_help(context.images)),
            );
        }
        return None;
    };
    let image_name = match parse_image_name(&text) {
        Ok(image_name) => image_name,
        Err(error) => {
            problems.push(
                Problem::error(
                    "jobs::invalid_image",
                    entry.value_range(),
                    error.to_string(),
                )
                .with_label("not an image name")
                .with_help(image_help(context.images)),
            );
            return None;
        }
    };
    if let ImageName::Prebuilt(name) = &image_name {
        match context.images.find(name) {
            None => problems.push(
                Problem::warning(
                    "jobs::unknown_image",
                    entry.value_range(),
                    format!("image `{name}` is not in the known image table"),
                )
                .with_label("unknown image")
                .with_help(format!(
                    "{}; the cluster's own table decides when the job is applied",
                    image_help(context.images)
                )),
            ),
            Some((short, prebuilt)) if prebuilt.state != ImageState::Stable => problems.push(
                Problem::warning(
                    "jobs::deprecated_image",
                    entry.value_range(),
                    format!("image `{short}` is deprecated"),
                )
                .with_label("deprecated")
                .with_help(format!(
                    "move to a current image: {}",
                    stable_list(context.images)
                )),
            ),
            Some(_) => {}
        }
    }
    Some((text, image_name))
}

fn image_help(images: &ImageTable) -> String {
    format!(
        "use a pre-built image ({}) or a build-service image such as `tool-<tool>/<image>:latest`",
        stable_list(images)
    )
}

fn stable_list(images: &ImageTable) -> String {
    images
        .stable_names()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
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

fn file_log(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> FileLog {
    let filelog = fields.flag(Key::Filelog, Some("yes"), problems);
    let no_filelog = fields.flag(Key::NoFilelog, Some("true"), problems);
    let enabled = match (filelog, no_filelog) {
        (Flag::Set, Flag::Set) => {
            let entry = fields.get(Key::NoFilelog);
            problems.push(
                Problem::error(
                    "jobs::conflicting_keys",
                    entry.map_or(fields.span.clone(), |entry| entry.range()),
                    "`filelog` and `no-filelog` cannot both be set",
                )
                .with_label("conflicts with `filelog`")
                .with_help("keep one of the two"),
            );
            None
        }
        (Flag::Set, _) => Some(true),
        (_, Flag::Set) => Some(false),
        _ => None,
    };
    FileLog {
        enabled,
        stdout: fields
            .text(Key::FilelogStdout, problems)
            .map(|(text, _)| text),
        stderr: fields
            .text(Key::FilelogStderr, problems)
            .map(|(text, _)| text),
    }
}

fn check_file_log(
    fields: &Fields<'_>,
    kind: &JobKind,
    file_log: &FileLog,
    image: Option<&(String, ImageName)>,
    mount: Option<(Mount, Entry<'_>)>,
    problems: &mut Vec<Problem>,
) {
    if matches!(kind, JobKind::Webservice(_)) {
        for key in [
            Key::Filelog,
            Key::NoFilelog,
            Key::FilelogStdout,
            Key::FilelogStderr,
        ] {
            if let Some(entry) = fields.get(key) {
                problems.push(
                    Problem::error(
                        "jobs::not_for_kind",
                        entry.range(),
                        format!("`{key}` is not valid for webservice jobs"),
                    )
                    .with_label("webservice jobs log to the web service's log")
                    .with_help(format!("remove `{key}`")),
                );
            }
        }
        return;
    }
    if file_log.enabled != Some(true) {
        return;
    }
    match mount {
        Some((Mount::None, entry)) => problems.push(
            Problem::error(
                "jobs::filelog_needs_mount",
                entry.range(),
                "file logging requires `mount: all`",
            )
            .with_label("log files live on the tool's storage, which `mount: none` leaves out")
            .with_help("use `mount: all`, or remove `filelog: true`"),
        ),
        None if image.is_some_and(|(_, name)| name.is_build_service()) => {
            if let Some(entry) = fields.get(Key::Filelog) {
                problems.push(
                    Problem::warning(
                        "jobs::filelog_needs_mount",
                        entry.range(),
                        "file logging on a build-service image needs the tool's storage, which is not mounted by default",
                    )
                    .with_label("needs `mount: all`")
                    .with_help("add `mount: all` to this job"),
                );
            }
        }
        _ => {}
    }
}

fn trigger_files(
    fields: &Fields<'_>,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Vec<String> {
    let Some((globs, _)) = fields.strings(Key::TriggerFiles, problems) else {
        return Vec::new();
    };
    let mut valid = Vec::with_capacity(globs.len());
    for (glob, span) in globs {
        let problem = if glob.is_empty() {
            Some("an empty pattern matches nothing")
        } else if glob.starts_with('/') {
            Some("patterns are relative to the directory of the jobs file")
        } else if glob.split('/').any(|part| part == "..") {
            Some("patterns may not leave the directory of the jobs file")
        } else if glob::Pattern::new(&glob).is_err() {
            Some("not a valid glob pattern")
        } else if context
            .count_trigger_files
            .is_some_and(|count| count(&glob) == 0)
        {
            Some("matches no files")
        } else {
            None
        };
        match problem {
            Some(message) => problems.push(
                Problem::error("jobs::invalid_trigger_files", span, format!("`trigger-files` entry `{glob}`: {message}"))
                    .with_label("invalid pattern")
                    .with_help("write paths or globs relative to the jobs file, e.g. `requirements.txt` or `src/**/*.py`"),
            ),
            None => valid.push(glob),
        }
    }
    valid
}

/// Which of `schedule`, `continuous`, `webservice` and `wait` decide the kind.
fn kind(
    fields: &Fields<'_>,
    job_name: &str,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Option<JobKind> {
    let continuous = fields.flag(Key::Continuous, None, problems) == Flag::Set;
    let webservice = fields.flag(Key::Webservice, None, problems) == Flag::Set;
    let wait = wait(fields, problems);
    let has_schedule = fields.has(Key::Schedule);

    let deciding: Vec<Key> = [
        (has_schedule, Key::Schedule),
        (continuous, Key::Continuous),
        (webservice, Key::Webservice),
        (wait.is_some(), Key::Wait),
    ]
    .into_iter()
    .filter_map(|(present, key)| present.then_some(key))
    .collect();
    if let [first, second, ..] = deciding.as_slice() {
        let span = fields
            .get(*second)
            .map_or(fields.span.clone(), |entry| entry.range());
        problems.push(
            Problem::error(
                "jobs::conflicting_keys",
                span,
                format!("`{first}` and `{second}` cannot be set on the same job"),
            )
            .with_label(format!("conflicts with `{first}`"))
            .with_help("a job is one-off (optionally with `wait`), scheduled (`schedule`), continuous (`continuous: true`) or a webservice (`webservice: true`)"),
        );
        return None;
    }

    // Values are read only for the kind that uses them: a key the kind does not accept gets one
    // `not_for_kind` error below, not a second one about its value.
    let kind = match deciding.first() {
        Some(Key::Schedule) => {
            let retry = retry(fields, problems);
            let timeout = fields
                .integer_in(Key::Timeout, 0..=i64::MAX, problems)
                .map(|(timeout, _)| timeout.unsigned_abs());
            let timezone = timezone(fields, problems);
            JobKind::Scheduled {
                schedule: parse_schedule(fields, job_name, context, problems)?,
                retry,
                timeout,
                timezone,
            }
        }
        Some(Key::Continuous) => JobKind::Continuous(service(fields, problems)),
        Some(Key::Webservice) => JobKind::Webservice(service(fields, problems)),
        _ => {
            let retry = retry(fields, problems);
            let rerun = fields
                .choice(Key::Rerun, &["on-change", "always"], problems)
                .map(|(text, _)| {
                    if text == "always" {
                        Rerun::Always
                    } else {
                        Rerun::OnChange
                    }
                });
            JobKind::OneOff { retry, wait, rerun }
        }
    };
    check_keys_for_kind(fields, &kind, problems);
    Some(kind)
}

fn retry(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Option<u8> {
    fields
        .integer_in(Key::Retry, 0..=5, problems)
        .and_then(|(retry, _)| u8::try_from(retry).ok())
}

/// Upstream sends `wait: true` as `--wait` and an integer as `--wait N`; anything else it ignores with a
/// warning, and so do we.
fn wait(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Option<u64> {
    let entry = fields.get(Key::Wait)?;
    match &entry.value.value {
        Value::Bool(true) => Some(DEFAULT_WAIT_SECONDS),
        Value::Int(_) => {
            let (seconds, _) = fields.integer_in(Key::Wait, 0..=i64::MAX, problems)?;
            Some(seconds.unsigned_abs())
        }
        other => {
            let shown = match other {
                Value::Str(text) => format!("\"{text}\""),
                other => other
                    .python_str()
                    .unwrap_or_else(|| other.type_name().to_owned()),
            };
            let help = match other {
                Value::Bool(false) => "remove `wait: false`; it has no effect".to_owned(),
                Value::Str(text) if crate::config::fields::python_int(text).is_some() => {
                    format!("write the number without quotes: `wait: {}`", text.trim())
                }
                _ => "write `wait: true` (up to 600 seconds) or a number of seconds, e.g. `wait: 300`".to_owned(),
            };
            problems.push(
                Problem::warning(
                    "jobs::ignored_value",
                    entry.range(),
                    format!("`wait` expects `true` or a number of seconds but got `{shown}`; the key is ignored"),
                )
                .with_label("ignored")
                .with_help(help),
            );
            None
        }
    }
}

fn timezone(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Option<String> {
    let (name, entry) = fields.text(Key::Timezone, problems)?;
    if name != "Local" && jiff::tz::db().get(&name).is_ok() {
        return Some(name);
    }
    problems.push(
        Problem::error("jobs::invalid_timezone", entry.value_range(), format!("`{name}` is not an IANA time zone"))
            .with_label("unknown time zone")
            .with_help("use a name from the IANA time zone database, e.g. `Europe/Berlin`, `America/New_York` or `UTC`"),
    );
    None
}

fn service(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Service {
    let replicas = fields
        .integer_in(Key::Replicas, 0..=i64::from(u32::MAX), problems)
        .and_then(|(replicas, _)| u32::try_from(replicas).ok());
    let port = port(fields, problems);
    let script = fields.text(Key::HealthCheckScript, problems);
    let http = fields.text(Key::HealthCheckHttp, problems);
    let health_check = match (script, http) {
        (Some(_), Some((_, entry))) => {
            problems.push(
                Problem::error(
                    "jobs::conflicting_keys",
                    entry.range(),
                    "`health-check-script` and `health-check-http` cannot both be set",
                )
                .with_label("conflicts with `health-check-script`")
                .with_help("keep one of the two"),
            );
            None
        }
        (Some((script, _)), None) => Some(HealthCheck::Script(script)),
        (None, Some((path, entry))) => {
            if port.is_none() && !fields.has(Key::Port) {
                problems.push(
                    Problem::error(
                        "jobs::missing_key",
                        entry.range(),
                        "`health-check-http` requires `port`",
                    )
                    .with_label("checks an HTTP path on the job's port")
                    .with_help("add `port:` with the port the job listens on"),
                );
            }
            Some(HealthCheck::Http(path))
        }
        (None, None) => None,
    };
    let publish = fields
        .text(Key::Publish, problems)
        .and_then(|(path, entry)| {
            if path != "/" {
                problems.push(
                    Problem::error(
                        "jobs::invalid_value",
                        entry.value_range(),
                        format!("`publish` must be `/`, not `{path}`"),
                    )
                    .with_label("only `/` can be published")
                    .with_help(
                        "write `publish: /` to expose the job at https://<tool>.toolforge.org/",
                    ),
                );
                return None;
            }
            match port {
                Some(Port {
                    protocol: Protocol::Tcp,
                    ..
                }) => {}
                _ => problems.push(
                    Problem::error(
                        "jobs::missing_key",
                        entry.range(),
                        "`publish` requires a TCP `port`",
                    )
                    .with_label("needs a port to route to")
                    .with_help("add `port:` with the TCP port the job serves HTTP on"),
                ),
            }
            Some(path)
        });
    Service {
        replicas,
        port,
        health_check,
        publish,
    }
}

fn port(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> Option<Port> {
    let (text, entry) = fields.text(Key::Port, problems)?;
    let (number, protocol) = match text.split_once('/') {
        Some((number, protocol)) => (number, Some(protocol)),
        None => (text.as_str(), None),
    };
    let number = crate::config::fields::python_int(number)
        .and_then(|n| u16::try_from(n).ok())
        .filter(|n| *n > 0);
    let protocol = match protocol {
        None | Some("tcp") => Some(Protocol::Tcp),
        Some("udp") => Some(Protocol::Udp),
        Some(_) => None,
    };
    if let (Some(number), Some(protocol)) = (number, protocol) {
        return Some(Port { number, protocol });
    }
    problems.push(
        Problem::error("jobs::invalid_port", entry.value_range(), format!("`{text}` is not a valid port"))
            .with_label("invalid port")
            .with_help("write a number from 1 to 65535, optionally with a protocol: `8000`, `8000/tcp` or `53/udp`"),
    );
    None
}

fn parse_schedule(
    fields: &Fields<'_>,
    job_name: &str,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Option<schedule::Schedule> {
    let (text, entry) = fields.text(Key::Schedule, problems)?;
    match schedule::parse(&text, context.tool, job_name) {
        Ok(parsed) => {
            for warning in schedule::warnings(&parsed) {
                problems.push(
                    Problem::warning("jobs::schedule", entry.value_range(), warning)
                        .with_label("this schedule"),
                );
            }
            Some(parsed)
        }
        Err(error) => {
            let span = error
                .range
                .and_then(|range| scalar_text_range(entry.value, &text, range))
                .unwrap_or_else(|| entry.value_range());
            problems.push(
                Problem::error("jobs::invalid_schedule", span, error.message)
                    .with_label("invalid schedule")
                    .with_optional_help(error.help.or_else(|| {
                        Some("write five fields (minute hour day-of-month month day-of-week), e.g. `17 3 * * *`, or one of `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`".to_owned())
                    })),
            );
            None
        }
    }
}

/// Maps a byte range inside a scalar's value to the file, when the scalar's source text is the value itself
/// (plain, or quoted without escapes).
fn scalar_text_range(node: &Node, text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let start = node.span.start.offset
        + match node.style {
            Style::Plain => 0,
            Style::SingleQuoted | Style::DoubleQuoted => 1,
            _ => return None,
        };
    let single_line = node.span.start.line == node.span.end.line;
    if !single_line || !matches!(node.value, Value::Str(_)) || text.contains(['\\', '\'', '"']) {
        return None;
    }
    Some(start + range.start..start + range.end)
}

/// Keys that only some kinds accept.
fn check_keys_for_kind(fields: &Fields<'_>, kind: &JobKind, problems: &mut Vec<Problem>) {
    let long_running = matches!(kind, JobKind::Continuous(_) | JobKind::Webservice(_));
    let rules: [(Key, bool, &str); 9] = [
        (Key::Port, long_running, "continuous jobs"),
        (Key::Replicas, long_running, "continuous jobs"),
        (Key::HealthCheckScript, long_running, "continuous jobs"),
        (Key::HealthCheckHttp, long_running, "continuous jobs"),
        (
            Key::Publish,
            matches!(kind, JobKind::Continuous(_)),
            "continuous jobs",
        ),
        (
            Key::Timeout,
            matches!(kind, JobKind::Scheduled { .. }),
            "scheduled jobs",
        ),
        (
            Key::Timezone,
            matches!(kind, JobKind::Scheduled { .. }),
            "scheduled jobs",
        ),
        (Key::Retry, !long_running, "one-off and scheduled jobs"),
        (
            Key::Rerun,
            matches!(kind, JobKind::OneOff { .. }),
            "one-off jobs",
        ),
    ];
    for (key, allowed, kinds) in rules {
        if allowed {
            continue;
        }
        if let Some(entry) = fields.get(key) {
            problems.push(
                Problem::error(
                    "jobs::not_for_kind",
                    entry.range(),
                    format!(
                        "`{key}` is only valid for {kinds}, and this is a {} job",
                        kind.label()
                    ),
                )
                .with_label(format!("not valid for a {} job", kind.label()))
                .with_help(kind_help(key)),
            );
        }
    }
}

fn kind_help(key: Key) -> String {
    match key {
        Key::Port
        | Key::Replicas
        | Key::HealthCheckScript
        | Key::HealthCheckHttp
        | Key::Publish => {
            format!("add `continuous: true` to make this a continuous job, or remove `{key}`")
        }
        Key::Timeout | Key::Timezone => format!("add a `schedule`, or remove `{key}`"),
        _ => format!("remove `{key}`"),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::image::ImageTable;
    use crate::config::{Context, Job, JobKind, SourceFile, load};

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
    fn image_and_abbreviation_warnings_do_not_fail() {
        assert_eq!(warnings("  comm: x\n"), ["jobs::abbreviated_key"]);
        assert_eq!(
            warnings("  command: x\n  image: python2.7\n"),
            ["jobs::duplicate_key", "jobs::unknown_image"]
        );
    }

    #[test]
    fn job_names_follow_kubernetes_rules() {
        assert!(super::is_dns_subdomain("task1.1"));
        assert!(super::is_dns_subdomain("a-b"));
        for name in ["", "A", "a_b", "-a", "a-", "a..b", ".a"] {
            assert!(!super::is_dns_subdomain(name), "{name:?}");
        }
    }
}
