//! The kind of a job (one-off, scheduled, continuous, webservice), the keys that decide it, and the keys that
//! only some kinds accept.

use std::ops::Range;

use yaml11::{Node, Style, Value};

use crate::config::diagnostic::Problem;
use crate::config::fields::{Fields, Flag, python_int};
use crate::config::job::{JobKind, Rerun};
use crate::config::keys::Key;
use crate::config::schedule;

use super::service::service;
use super::{Context, DEFAULT_WAIT_SECONDS};

/// Which of `schedule`, `continuous`, `webservice` and `wait` decide the kind.
pub(super) fn kind(
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
        // Go on as the first kind, so the job's other problems are reported in this run too.
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
                Value::Str(text) if python_int(text).is_ok() => {
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
