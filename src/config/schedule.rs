//! Schedules of scheduled jobs: upstream's cron dialect and its five `@` macros.
//!
//! [`parse`] accepts and rejects exactly what upstream's jobs-api accepts and rejects (`tjf/core/cron.py`, reference
//! §1.5) and returns both the text the user wrote and the expression Kubernetes receives. The macros are spread over
//! their period with upstream's deterministic per-(tool, job) randomisation, which needs Python's own random number
//! generator, reproduced in `python_random`. [`warnings()`] points out schedules that run rarely or never.
//!
//! This module does not compute run times (the `CronJob` controller does) and knows nothing of YAML: the caller
//! passes the schedule string and turns a [`ScheduleError`] into a diagnostic with its byte range.
//!
//! The generic cron knowledge (the fields, their bounds and names, what each macro stands for) is `toolforge_cron`'s,
//! the parser Kubernetes' reading lives in, and every `actual` expression must parse there (a debug assertion and
//! the tests check it). The grammar is this module's own: upstream's differs from robfig/cron's on purpose (no
//! range with a step, no `?`, no month names, day names only as whole items, `7` for Sunday) and its errors point
//! at part of an item with upstream's words, so sharing robfig's item splitting would change what is refused or how.
//!
//! Where the reference leaves room, these are the readings this module implements:
//! - A value starting with `@` is a macro and is matched exactly as written: case-sensitively and before any
//!   lower-casing or trimming (the reference lower-cases only explicit expressions), so `@Daily` and `"@daily "` are
//!   invalid at-macros and `" @daily"` is an expression with one field.
//! - Explicit expressions are split the way Python's `str.split()` splits: on runs of any whitespace (tabs and
//!   newlines included), ignoring leading and trailing whitespace.
//! - The `actual` expression is the lower-cased fields joined by single spaces, each field kept as written: leading
//!   zeros stay (`02 07 * * *` stays `02 07 * * *`; Kubernetes reads them as numbers too) and day names stay names,
//!   but a day-of-week item `7` becomes `0`: upstream accepts `7` for Sunday and passes it on, and Kubernetes 1.33
//!   (robfig/cron's standard parser, days 0 to 6) refuses it with 422; `0` runs on the day the user meant.
//! - Numbers are ASCII digits. Python's `int()` would also take `+5`, `1_0` and non-ASCII digits, but Kubernetes
//!   refuses those, so accepting them would only move the failure to apply time.
//! - Day names (`sun`…`sat`) and `7` are whole list items only: not range ends, not the start of a step.
//! - A single value `N` is bounds-checked like the range `N-N`, and the start of a step `N/S` like a single value,
//!   which yields upstream's two bound messages ("Start value … must be at least …", "End value … must be at most
//!   …"). Messages the reference does not quote (not a number, step bounds, wrong field count details) are ours, in
//!   upstream's style.

mod help;
mod python_random;
mod warnings;

use std::fmt;
use std::ops::Range;

use toolforge_cron::Field;

use self::python_random::PythonRandom;

pub use self::warnings::warnings;

/// The macros upstream accepts, exactly as they must be written.
pub const MACROS: [&str; 5] = ["@hourly", "@daily", "@weekly", "@monthly", "@yearly"];

/// A validated schedule: what the user wrote and what Kubernetes gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The schedule as written by the user, preserved for the `jobs.toolforge.org/cron-expression` annotation.
    pub expression: String,
    /// The normalised five fields joined by single spaces, macros expanded with upstream's randomisation.
    pub actual: String,
}

/// Why a schedule is invalid, with the part of it to underline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ScheduleError {
    /// Upstream's wording where it exists, e.g. "Step syntax is not supported with ranges".
    pub message: String,
    /// Byte range inside the parsed text of the offending field or value; `None` when the text is blank.
    pub range: Option<Range<usize>>,
    /// How to fix it, when there is something specific to say.
    pub help: Option<String>,
}

/// Parses a schedule the way upstream's jobs-api does. `tool` and `job` seed the macro randomisation.
pub fn parse(text: &str, tool: &str, job: &str) -> Result<Schedule, ScheduleError> {
    let actual = if text.starts_with('@') {
        expand_macro(text, tool, job)?
    } else {
        normalise_expression(text)?
    };
    // What upstream accepts, normalised, must be what Kubernetes' parser reads, or a valid file fails at apply time.
    debug_assert_eq!(
        toolforge_cron::check(&actual),
        Ok(()),
        "`{text}` became `{actual}`"
    );
    Ok(Schedule {
        expression: text.to_owned(),
        actual,
    })
}

/// Replaces a macro's pinned fields with upstream's deterministic random values.
fn expand_macro(text: &str, tool: &str, job: &str) -> Result<String, ScheduleError> {
    // Each macro stands for the same five fields as the descriptor Kubernetes knows by that name; the fields that
    // are not `*` get randomised.
    let Some(standard) = MACROS
        .contains(&text)
        .then(|| toolforge_cron::descriptor(text))
        .flatten()
    else {
        return Err(ScheduleError {
            message: format!(
                "Invalid at-macro '{text}', supported macros are: {}",
                MACROS.join(", ")
            ),
            range: Some(0..text.len()),
            help: help::macro_help(text),
        });
    };
    let mut random = PythonRandom::from_str_seed(&format!("{tool} {job}"));
    // Draws happen in field order, minute first, and only for pinned fields: that order is part of upstream's
    // results.
    let fields: Vec<String> = standard
        .split(' ')
        .zip(Field::ALL)
        .map(|(value, field)| {
            if value == "*" {
                value.to_owned()
            } else {
                random.randint(field.min(), field.max()).to_string()
            }
        })
        .collect();
    Ok(fields.join(" "))
}

/// Validates an explicit expression and returns its normalised form.
fn normalise_expression(text: &str) -> Result<String, ScheduleError> {
    let fields = split_python_whitespace(text);
    if fields.len() != Field::ALL.len() {
        return Err(wrong_field_count(&fields));
    }
    for ((start, value), field) in fields.iter().zip(Field::ALL) {
        check_field(field, value).map_err(|problem| problem.at(*start))?;
    }
    // Every accepted field is ASCII, so ASCII lower-casing is all of Python's `str.lower()` that can apply.
    let lowered: Vec<String> = fields
        .iter()
        .zip(Field::ALL)
        .map(|((_, value), field)| {
            let value = value.to_ascii_lowercase();
            if field == Field::DayOfWeek {
                sunday_as_zero(&value)
            } else {
                value
            }
        })
        .collect();
    Ok(lowered.join(" "))
}

/// Rewrites the day-of-week items `7` (Sunday, which upstream accepts) as `0`: Kubernetes' parser takes days 0 to
/// 6 only and refuses `7` with 422, so passing it through would make a valid file fail at apply time.
fn sunday_as_zero(day_of_week: &str) -> String {
    day_of_week
        .split(',')
        .map(|item| if item == "7" { "0" } else { item })
        .collect::<Vec<_>>()
        .join(",")
}

fn wrong_field_count(fields: &[(usize, &str)]) -> ScheduleError {
    let end_of = |(start, value): &(usize, &str)| start + value.len();
    let (range, help) = match fields {
        [] => (None, None),
        [first, ..] if fields.len() > Field::ALL.len() => {
            let extra = &fields[Field::ALL.len()];
            let last = fields.last().unwrap_or(first);
            (
                Some(extra.0..end_of(last)),
                Some("a schedule has five fields: minute, hour, day of month, month and day of week; there is no field for seconds or years".to_owned()),
            )
        }
        [first, ..] => {
            let last = fields.last().unwrap_or(first);
            let help = if fields.len() == 1 && MACROS.contains(&first.1) {
                format!(
                    "a macro must be the whole value: remove the whitespace around `{}`",
                    first.1
                )
            } else if first.1.starts_with('@') {
                "a macro must be the whole value, without whitespace around it".to_owned()
            } else {
                "a schedule has five fields: minute, hour, day of month, month and day of week, like `0 3 * * *`".to_owned()
            };
            (Some(first.0..end_of(last)), Some(help))
        }
    };
    ScheduleError {
        message: format!(
            "Expected to find 5 space-separated values, found {}",
            fields.len()
        ),
        range,
        help,
    }
}

/// Splits like Python's `str.split()` without arguments, returning each field with its byte offset.
fn split_python_whitespace(text: &str) -> Vec<(usize, &str)> {
    let mut fields = Vec::new();
    let mut start = None;
    for (offset, character) in text.char_indices() {
        match (start, is_python_whitespace(character)) {
            (Some(begin), true) => {
                fields.push((begin, &text[begin..offset]));
                start = None;
            }
            (None, false) => start = Some(offset),
            _ => {}
        }
    }
    if let Some(begin) = start {
        fields.push((begin, &text[begin..]));
    }
    fields
}

/// Python's `str.isspace()`: Unicode `White_Space` plus the four ASCII information separators.
fn is_python_whitespace(character: char) -> bool {
    character.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&character)
}

/// A problem inside one field, with its range relative to the field until [`Problem::at`] places it.
struct Problem {
    message: String,
    range: Range<usize>,
    help: Option<String>,
}

impl Problem {
    fn new(message: impl Into<String>, range: Range<usize>) -> Self {
        Self {
            message: message.into(),
            range,
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Moves the range right by `offset` bytes and turns it into the public error.
    fn at(self, offset: usize) -> ScheduleError {
        ScheduleError {
            message: self.message,
            range: Some(self.range.start + offset..self.range.end + offset),
            help: self.help,
        }
    }
}

/// Checks every comma-separated item of one field.
fn check_field(field: Field, value: &str) -> Result<(), Problem> {
    let mut offset = 0;
    for item in value.split(',') {
        check_item(field, &item.to_ascii_lowercase()).map_err(|mut problem| {
            problem.range = problem.range.start + offset..problem.range.end + offset;
            problem
        })?;
        offset += item.len() + 1;
    }
    Ok(())
}

/// Checks one list item: `*`, `N`, `A-B`, `*/S` or `N/S` (plus day names and `7` for the day of week).
///
/// `item` is lower-cased with ASCII rules, which keeps byte offsets unchanged.
fn check_item(field: Field, item: &str) -> Result<(), Problem> {
    if item == "*" {
        return Ok(());
    }
    if let Some((base, step)) = item.split_once('/') {
        if let Some((start, end)) = base.split_once('-') {
            return Err(
                Problem::new("Step syntax is not supported with ranges", 0..item.len())
                    .help(help::range_step_help(field, item, start, end, step)),
            );
        }
        if base != "*" {
            let start = number(field, base, item, 0)?;
            check_bounds(field, &start, 0..base.len())?;
        }
        let step_range = base.len() + 1..item.len();
        let step_number = number(field, step, item, step_range.start)?;
        if step_number.value < 1 {
            return Err(Problem::new(
                format!("Step value {step_number} must be at least 1"),
                step_range,
            ));
        }
        if step_number.value > field.max() {
            return Err(Problem::new(
                format!("Step value {step_number} must be at most {}", field.max()),
                step_range,
            )
            .help(format!(
                "{} steps go from 1 to {}",
                field.name(),
                field.max()
            )));
        }
        return Ok(());
    }
    if let Some((start_text, end_text)) = item.split_once('-') {
        let end_offset = start_text.len() + 1;
        let start = number(field, start_text, item, 0)?;
        let end = number(field, end_text, item, end_offset)?;
        if start.value < field.min() {
            return Err(Problem::new(
                format!("Start value {start} must be at least {}", field.min()),
                0..start_text.len(),
            )
            .help(help::bounds_help(field)));
        }
        if end.value > field.max() {
            let problem = Problem::new(
                format!("End value {end} must be at most {}", field.max()),
                end_offset..item.len(),
            );
            return Err(
                if field == Field::DayOfWeek && end.value == 7 && start.value > 0 {
                    problem.help(format!(
                        "Sunday is `0` in ranges: write `{}`",
                        help::through_sunday(start.value)
                    ))
                } else {
                    problem.help(help::bounds_help(field))
                },
            );
        }
        if end.value < start.value {
            // Upstream's message says "smaller" where it means "larger"; kept word for word.
            return Err(Problem::new(
                format!("End value {end} must be smaller than start value {start}"),
                0..item.len(),
            )
            .help(help::wrap_around_help(field, start.value, end.value)));
        }
        return Ok(());
    }
    if field == Field::DayOfWeek && (item == "7" || field.value_of_name(item).is_some()) {
        return Ok(());
    }
    let value = number(field, item, item, 0)?;
    check_bounds(field, &value, 0..item.len())
}

/// Checks a single value like upstream checks the range `N-N`.
fn check_bounds(field: Field, value: &Number, range: Range<usize>) -> Result<(), Problem> {
    if value.value < field.min() {
        return Err(Problem::new(
            format!("Start value {value} must be at least {}", field.min()),
            range,
        )
        .help(help::bounds_help(field)));
    }
    if value.value > field.max() {
        return Err(Problem::new(
            format!("End value {value} must be at most {}", field.max()),
            range,
        )
        .help(help::bounds_help(field)));
    }
    Ok(())
}

/// A decimal number as `int()` reads it from ASCII digits: leading zeros allowed, any size.
struct Number<'a> {
    /// The digits without leading zeros (`"0"` for zero), which is how Python prints the parsed number.
    digits: &'a str,
    /// The value, saturated at `u32::MAX`: anything that large is above every field's maximum anyway.
    value: u32,
}

impl fmt::Display for Number<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.digits)
    }
}

/// Reads `text`, found at `offset` inside `item`, as a number of `field`, explaining what is wrong if it is not one.
fn number<'a>(
    field: Field,
    text: &'a str,
    item: &str,
    offset: usize,
) -> Result<Number<'a>, Problem> {
    if !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()) {
        let trimmed = text.trim_start_matches('0');
        let digits = if trimmed.is_empty() { "0" } else { trimmed };
        let value = digits.parse().unwrap_or(u32::MAX);
        return Ok(Number { digits, value });
    }
    let range = if text.is_empty() {
        0..item.len()
    } else {
        offset..offset + text.len()
    };
    let problem = Problem::new(format!("Invalid {} value '{text}'", field.name()), range);
    // Names are looked up only to explain: upstream takes day names as whole items (see `check_item`) and month
    // names not at all.
    let name_value = field.value_of_name(text);
    let help = if field == Field::DayOfWeek && name_value.is_some() {
        help::day_name_help(item)
    } else if let (Field::Month, Some(month)) = (field, name_value) {
        format!("month names are not supported: write `{month}`")
    } else if text.is_empty() {
        "every item between commas, and both ends of a range, need a value".to_owned()
    } else {
        format!(
            "a {} is `*`, a number from {} to {}, a range like `{}-{}` or a step like `*/2`, or a comma list of these",
            field.name(),
            field.min(),
            field.max(),
            field.min(),
            field.min() + 1
        )
    };
    Err(problem.help(help))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::python_random::oracle::{json_lines, python, sample_names};
    use super::*;

    fn actual(text: &str) -> String {
        parse(text, "tool", "job")
            .unwrap_or_else(|error| panic!("{text:?} should be accepted: {error:?}"))
            .actual
    }

    fn error(text: &str) -> ScheduleError {
        match parse(text, "tool", "job") {
            Ok(schedule) => panic!("{text:?} should be rejected, got {schedule:?}"),
            Err(error) => error,
        }
    }

    /// The text the error's range underlines.
    fn underlined(text: &str) -> &str {
        let range = error(text).range.expect("the error has a range");
        &text[range]
    }

    #[test]
    fn expands_macros_like_the_reference_test_vectors() {
        let vectors = [
            (
                "some-tool",
                "some-job",
                [
                    "56 * * * *",
                    "56 6 * * *",
                    "56 6 * * 6",
                    "56 6 25 * *",
                    "56 6 25 9 *",
                ],
            ),
            (
                "tf-test",
                "cronjobtest",
                [
                    "13 * * * *",
                    "13 13 * * *",
                    "13 13 * * 0",
                    "13 13 2 * *",
                    "13 13 2 1 *",
                ],
            ),
            (
                "mytool",
                "myjob",
                [
                    "55 * * * *",
                    "55 7 * * *",
                    "55 7 * * 0",
                    "55 7 1 * *",
                    "55 7 1 8 *",
                ],
            ),
        ];
        for (tool, job, expected) in vectors {
            for (name, expected) in MACROS.iter().zip(expected) {
                let schedule = parse(name, tool, job).expect("macros are valid");
                assert_eq!(schedule.actual, expected, "{name} for {tool}/{job}");
                assert_eq!(schedule.expression, *name);
                assert_eq!(toolforge_cron::check(&schedule.actual), Ok(()));
            }
        }
    }

    /// Upstream's expansion written in Python (seed `"<tool> <job>"`, `randint` for every field that is not `*`, in
    /// field order) is the oracle for 50 varied tool and job names, non-ASCII ones included.
    #[test]
    fn expands_macros_like_python_for_varied_names() {
        const SCRIPT: &str = r#"
import json, random, sys
bounds = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]
standard = ["0 * * * *", "0 0 * * *", "0 0 * * 0", "0 0 1 * *", "0 0 1 1 *"]
for line in sys.stdin:
    tool, job = json.loads(line)
    out = []
    for expression in standard:
        r = random.Random(f"{tool} {job}")
        fields = expression.split(" ")
        out.append(" ".join(f if f == "*" else str(r.randint(*b)) for f, b in zip(fields, bounds)))
    print("|".join(out))
"#;
        let pairs = sample_names(50);
        let rows: Vec<Vec<String>> = pairs
            .iter()
            .map(|(tool, job)| vec![tool.clone(), job.clone()])
            .collect();
        let expected = python(SCRIPT, &json_lines(&rows));
        let expected: Vec<&str> = expected.lines().collect();
        assert_eq!(expected.len(), pairs.len());
        for ((tool, job), expected) in pairs.iter().zip(expected) {
            let ours: Vec<String> = MACROS
                .iter()
                .map(|name| parse(name, tool, job).expect("macros are valid").actual)
                .collect();
            assert_eq!(ours.join("|"), expected, "tool {tool:?}, job {job:?}");
        }
    }

    #[test]
    fn macro_expansion_depends_on_tool_and_job_in_that_order() {
        let forward = parse("@yearly", "a", "b").expect("valid").actual;
        let swapped = parse("@yearly", "b", "a").expect("valid").actual;
        assert_ne!(forward, swapped);
        assert_eq!(forward, parse("@yearly", "a", "b").expect("valid").actual);
    }

    #[test]
    fn rejects_unknown_macros_with_upstreams_message() {
        for text in [
            "@reboot",
            "@annually",
            "@midnight",
            "@every 5m",
            "@",
            "@Daily",
            "@daily ",
            "@daily\n",
        ] {
            let error = error(text);
            assert_eq!(
                error.message,
                format!(
                    "Invalid at-macro '{text}', supported macros are: @hourly, @daily, @weekly, @monthly, @yearly"
                )
            );
            assert_eq!(error.range, Some(0..text.len()), "{text:?}");
        }
    }

    #[test]
    fn matches_macros_case_sensitively_and_without_trimming() {
        assert_eq!(
            error("@DAILY").help.as_deref(),
            Some("macros are case-sensitive: write `@daily`")
        );
        assert_eq!(
            error("@daily ").help.as_deref(),
            Some("remove the whitespace around `@daily`")
        );
        let leading = error(" @daily");
        assert_eq!(
            leading.message,
            "Expected to find 5 space-separated values, found 1"
        );
        assert_eq!(leading.range, Some(1..7));
        assert_eq!(
            leading.help.as_deref(),
            Some("a macro must be the whole value: remove the whitespace around `@daily`")
        );
    }

    #[test]
    fn explains_whitespace_around_something_that_looks_like_a_macro() {
        assert_eq!(
            error(" @reboot").help.as_deref(),
            Some("a macro must be the whole value, without whitespace around it")
        );
        assert_eq!(
            error("@daily 0").message,
            "Invalid at-macro '@daily 0', supported macros are: @hourly, @daily, @weekly, @monthly, @yearly"
        );
    }

    #[test]
    fn suggests_day_numbers_for_names_in_ranges_with_steps() {
        assert_eq!(
            error("0 0 * * mon-fri/2").help.as_deref(),
            Some("write `1/2`, which means the same, or the list `1,3,5`")
        );
        assert_eq!(
            error("0 0 * * mon-thu/2").help.as_deref(),
            Some("write `mon-thu/2` as a list like `1,3` or use `*/2`")
        );
        assert_eq!(
            error("0 0 * * 1-7/2").help.as_deref(),
            Some("use a list like `1,6,11` or a step like `*/5`")
        );
        assert_eq!(
            error("1-30/0 * * * *").help.as_deref(),
            Some("use a list like `1,6,11` or a step like `*/5`")
        );
        assert_eq!(
            error("0 0 * * fri-mon").help.as_deref(),
            Some(
                "day names are accepted only as single values; use numbers, Sunday = 0 to Saturday = 6"
            )
        );
    }

    #[test]
    fn suggests_the_macro_meant() {
        let help = |text| error(text).help;
        assert_eq!(help("@annually").as_deref(), Some("write `@yearly`"));
        assert_eq!(help("@midnight").as_deref(), Some("write `@daily`"));
        assert_eq!(help("@dialy").as_deref(), Some("did you mean `@daily`?"));
        assert_eq!(help("@hourl").as_deref(), Some("did you mean `@hourly`?"));
        assert!(help("@reboot").is_some_and(|help| help.contains("continuous job")));
        assert!(help("@every 1h").is_some_and(|help| help.contains("`@every` is not supported")));
        assert_eq!(help("@something-else"), None);
    }

    #[test]
    fn accepts_and_normalises_explicit_expressions() {
        let cases = [
            ("0 0 * * *", "0 0 * * *"),
            ("*/5 * * * *", "*/5 * * * *"),
            ("5/15 * * * *", "5/15 * * * *"),
            ("0,15,30,45 8-18 * * 1-5", "0,15,30,45 8-18 * * 1-5"),
            ("59 23 31 12 6", "59 23 31 12 6"),
            ("0 0 1 1 0", "0 0 1 1 0"),
            ("*/59 */23 */31 */12 */6", "*/59 */23 */31 */12 */6"),
            ("*/1 * * * *", "*/1 * * * *"),
            // Leading zeros are read as numbers and kept as written.
            ("02 07 * * *", "02 07 * * *"),
            ("0 00 * * *", "0 00 * * *"),
            ("000059 * * * *", "000059 * * * *"),
            // Runs of any whitespace separate fields; surrounding whitespace is ignored.
            ("0   0 * *  *", "0 0 * * *"),
            ("  0 0 * * *  ", "0 0 * * *"),
            ("0\t0\t*\t*\t*", "0 0 * * *"),
            ("0 0 * * *\n", "0 0 * * *"),
            ("0\u{a0}0\u{3000}*\u{1f}*\u{85}*", "0 0 * * *"),
            // Day names and 7 as single values, lower-cased.
            ("0 0 * * sun", "0 0 * * sun"),
            ("0 0 * * MON,wed,Fri", "0 0 * * mon,wed,fri"),
            ("0 0 * * TUE,thu,sat", "0 0 * * tue,thu,sat"),
            // `7` is Sunday for upstream, but Kubernetes takes only 0 to 6: it is rendered as `0`.
            ("0 0 * * 7", "0 0 * * 0"),
            ("0 0 * * 1,7", "0 0 * * 1,0"),
            ("0 0 * * 5,7,sun", "0 0 * * 5,0,sun"),
            ("0 7 7 7 7", "0 7 7 7 0"),
            ("0 0 * * 0-6", "0 0 * * 0-6"),
            ("0 0 * * 3-3", "0 0 * * 3-3"),
            ("0 0 * * *,1", "0 0 * * *,1"),
        ];
        for (text, expected) in cases {
            assert_eq!(actual(text), expected, "{text:?}");
            let schedule = parse(text, "tool", "job").expect("valid");
            assert_eq!(
                schedule.expression, text,
                "the user's text is kept verbatim"
            );
            assert_eq!(toolforge_cron::check(&schedule.actual), Ok(()), "{text:?}");
        }
    }

    #[test]
    fn splits_on_exactly_the_characters_python_treats_as_whitespace() {
        let expected = python(
            "print(' '.join(str(c) for c in range(0x110000) if chr(c).isspace()))",
            "",
        );
        let ours: Vec<String> = (0..=0x10_ffff_u32)
            .filter_map(char::from_u32)
            .filter(|&character| is_python_whitespace(character))
            .map(|character| u32::from(character).to_string())
            .collect();
        assert_eq!(ours.join(" "), expected.trim_end());
    }

    #[test]
    fn splits_like_python_str_split() {
        let samples = [
            "",
            " ",
            "a",
            " a  b\tc\n",
            "\u{1c}x\u{85}y\u{2028}",
            "é ü\u{a0}中",
            "\u{200b}a b",
            "a\u{180e}b",
        ];
        let rows: Vec<Vec<String>> = samples
            .iter()
            .map(|text| vec![(*text).to_owned()])
            .collect();
        let expected = python(
            "import json, sys\nfor line in sys.stdin: print(json.dumps(json.loads(line)[0].split()))",
            &json_lines(&rows),
        );
        for (text, expected) in samples.iter().zip(expected.lines()) {
            let ours: Vec<&str> = split_python_whitespace(text)
                .into_iter()
                .map(|(_, field)| field)
                .collect();
            let expected: Vec<String> = serde_json::from_str(expected).expect("python prints JSON");
            assert_eq!(ours, expected, "{text:?}");
        }
    }

    #[test]
    fn requires_exactly_five_fields() {
        let cases = [
            ("", 0),
            ("   ", 0),
            ("0", 1),
            ("0 0 * *", 4),
            ("0 0 0 * * *", 6),
            ("0 0 * * * 2026 x", 7),
        ];
        for (text, count) in cases {
            assert_eq!(
                error(text).message,
                format!("Expected to find 5 space-separated values, found {count}")
            );
        }
        assert_eq!(error("").range, None);
        assert_eq!(error("   ").range, None);
        assert_eq!(underlined(" 0 0 * * "), "0 0 * *");
        assert_eq!(underlined("0 0 * * * 2026  x "), "2026  x");
        assert!(
            error("0 0 0 * * *")
                .help
                .is_some_and(|help| help.contains("no field for seconds"))
        );
        assert!(
            error("0 0 * *")
                .help
                .is_some_and(|help| help.contains("like `0 3 * * *`"))
        );
    }

    /// Every reject rule: the text, upstream's message, the underlined text and the help where there is one.
    const REJECTIONS: [(&str, &str, &str, Option<&str>); 34] = [
        (
            "1-30/5 * * * *",
            "Step syntax is not supported with ranges",
            "1-30/5",
            Some("write `1-30/5` as a list like `1,6,11,16,21,26` or use `*/5`"),
        ),
        (
            "0 0 * * 1-5/2",
            "Step syntax is not supported with ranges",
            "1-5/2",
            Some("write `1/2`, which means the same, or the list `1,3,5`"),
        ),
        (
            "0 8-17/1 * * *",
            "Step syntax is not supported with ranges",
            "8-17/1",
            Some("write `8-17`"),
        ),
        (
            "0,10-20/x * * * *",
            "Step syntax is not supported with ranges",
            "10-20/x",
            Some("use a list like `1,6,11` or a step like `*/5`"),
        ),
        ("*/0 * * * *", "Step value 0 must be at least 1", "0", None),
        (
            "*/60 * * * *",
            "Step value 60 must be at most 59",
            "60",
            Some("minute steps go from 1 to 59"),
        ),
        (
            "0 0 * * */7",
            "Step value 7 must be at most 6",
            "7",
            Some("day of week steps go from 1 to 6"),
        ),
        (
            "0 */24 * * *",
            "Step value 24 must be at most 23",
            "24",
            Some("hour steps go from 1 to 23"),
        ),
        ("5/x * * * *", "Invalid minute value 'x'", "x", None),
        (
            "60 * * * *",
            "End value 60 must be at most 59",
            "60",
            Some("the minute goes from 0 to 59"),
        ),
        (
            "0 24 * * *",
            "End value 24 must be at most 23",
            "24",
            Some("the hour goes from 0 to 23"),
        ),
        (
            "0 0 0 * *",
            "Start value 0 must be at least 1",
            "0",
            Some("the day of month goes from 1 to 31"),
        ),
        ("0 0 32 * *", "End value 32 must be at most 31", "32", None),
        (
            "0 0 * 0 *",
            "Start value 0 must be at least 1",
            "0",
            Some("the month goes from 1 to 12"),
        ),
        ("0 0 * 13 *", "End value 13 must be at most 12", "13", None),
        (
            "0 0 * * 8",
            "End value 8 must be at most 6",
            "8",
            Some("the day of week goes from 0 to 6"),
        ),
        ("0 0 * * 07", "End value 7 must be at most 6", "07", None),
        (
            "0060 * * * *",
            "End value 60 must be at most 59",
            "0060",
            None,
        ),
        (
            "99999999999999999999999 * * * *",
            "End value 99999999999999999999999 must be at most 59",
            "99999999999999999999999",
            None,
        ),
        (
            "70/5 * * * *",
            "End value 70 must be at most 59",
            "70",
            None,
        ),
        ("0 0 0-5 * *", "Start value 0 must be at least 1", "0", None),
        (
            "0 20-25 * * *",
            "End value 25 must be at most 23",
            "25",
            None,
        ),
        (
            "0 22-2 * * *",
            "End value 2 must be smaller than start value 22",
            "22-2",
            Some("ranges go from low to high and do not wrap around; write `22-23,0-2`"),
        ),
        (
            "0 23-2 * * *",
            "End value 2 must be smaller than start value 23",
            "23-2",
            Some("ranges go from low to high and do not wrap around; write `23,0-2`"),
        ),
        (
            "0 0 * * 6-0",
            "End value 0 must be smaller than start value 6",
            "6-0",
            Some("ranges go from low to high and do not wrap around; write `6,0`"),
        ),
        (
            "60-59 * * * *",
            "End value 59 must be smaller than start value 60",
            "60-59",
            Some("the minute goes from 0 to 59"),
        ),
        (
            "0 0 * * 1-7",
            "End value 7 must be at most 6",
            "7",
            Some("Sunday is `0` in ranges: write `1-6,0`"),
        ),
        (
            "0 0 * * 6-7",
            "End value 7 must be at most 6",
            "7",
            Some("Sunday is `0` in ranges: write `6,0`"),
        ),
        (
            "0 0 * * mon-fri",
            "Invalid day of week value 'mon'",
            "mon",
            Some("day names are accepted only as single values; use `1-5`"),
        ),
        (
            "0 0 * * sat-sun",
            "Invalid day of week value 'sat'",
            "sat",
            Some("day names are accepted only as single values; use `6,0`"),
        ),
        (
            "0 0 * * 1-sun",
            "Invalid day of week value 'sun'",
            "sun",
            Some("day names are accepted only as single values; use `1-6,0`"),
        ),
        (
            "0 0 * * sun/2",
            "Invalid day of week value 'sun'",
            "sun",
            Some("day names are accepted only as single values; use `0/2`"),
        ),
        (
            "0 0 * jan *",
            "Invalid month value 'jan'",
            "jan",
            Some("month names are not supported: write `1`"),
        ),
        (
            "0 0 * 1-DEC *",
            "Invalid month value 'dec'",
            "DEC",
            Some("month names are not supported: write `12`"),
        ),
    ];

    #[test]
    fn rejects_invalid_fields_with_messages_ranges_and_help() {
        for (text, message, underline, help) in REJECTIONS {
            let error = error(text);
            assert_eq!(error.message, message, "{text:?}");
            assert_eq!(underlined(text), underline, "{text:?}");
            if let Some(help) = help {
                assert_eq!(error.help.as_deref(), Some(help), "{text:?}");
            }
        }
    }

    #[test]
    fn rejects_what_is_not_a_plain_number() {
        let cases = [
            ("x * * * *", "Invalid minute value 'x'", "x"),
            ("+5 * * * *", "Invalid minute value '+5'", "+5"),
            ("1_0 * * * *", "Invalid minute value '1_0'", "1_0"),
            ("٣ * * * *", "Invalid minute value '٣'", "٣"),
            ("-5 * * * *", "Invalid minute value ''", "-5"),
            ("5- * * * *", "Invalid minute value ''", "5-"),
            ("1,,2 * * * *", "Invalid minute value ''", ""),
            ("1, * * * *", "Invalid minute value ''", ""),
            ("1-2-3 * * * *", "Invalid minute value '2-3'", "2-3"),
            ("*/5/2 * * * *", "Invalid minute value '5/2'", "5/2"),
            ("*-5 * * * *", "Invalid minute value '*'", "*"),
            ("? * * * *", "Invalid minute value '?'", "?"),
            ("0 0 L * *", "Invalid day of month value 'l'", "L"),
            ("0 0 * * 5#3", "Invalid day of week value '5#3'", "5#3"),
            ("0 0 mon * *", "Invalid day of month value 'mon'", "mon"),
            ("0 mon * * *", "Invalid hour value 'mon'", "mon"),
            (
                "0 0 * * sunday",
                "Invalid day of week value 'sunday'",
                "sunday",
            ),
            ("0 0 * * 7/1", "End value 7 must be at most 6", "7"),
            (
                "0 0 * * \u{212a}",
                "Invalid day of week value '\u{212a}'",
                "\u{212a}",
            ),
            (
                "TZ=UTC 0 * * * *",
                "Expected to find 5 space-separated values, found 6",
                "*",
            ),
        ];
        for (text, message, underline) in cases {
            assert_eq!(error(text).message, message, "{text:?}");
            assert_eq!(underlined(text), underline, "{text:?}");
        }
        assert_eq!(
            error("x * * * *").help.as_deref(),
            Some(
                "a minute is `*`, a number from 0 to 59, a range like `0-1` or a step like `*/2`, or a comma list of these"
            )
        );
        assert_eq!(
            error("1,,2 * * * *").help.as_deref(),
            Some("every item between commas, and both ends of a range, need a value")
        );
    }

    #[test]
    fn reports_the_first_invalid_field_and_item() {
        let text = "0 24 32 * *";
        assert_eq!(error(text).message, "End value 24 must be at most 23");
        assert_eq!(underlined("1,2,99 * * * *"), "99");
        assert_eq!(underlined("1 2 3 4 5,6,9"), "9");
        assert_eq!(underlined("0 0 * * MON,TUE,7,8"), "8");
    }

    #[test]
    fn error_ranges_index_the_original_text_after_non_ascii_whitespace() {
        let text = "0\u{3000}0\u{a0}*  *\u{2028}8";
        assert_eq!(underlined(text), "8");
        assert_eq!(error(text).message, "End value 8 must be at most 6");
    }

    #[test]
    fn displays_the_message() {
        assert_eq!(
            error("0 0 * 13 *").to_string(),
            "End value 13 must be at most 12"
        );
    }

    fn cron_like() -> impl Strategy<Value = String> {
        proptest::string::string_regex(r"[0-9*/,\-@ \tA-Za-z\u{a0}é]{0,40}").expect("a valid regex")
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_errors_point_inside_the_text(text in any::<String>(), tool in any::<String>(), job in any::<String>()) {
            if let Err(error) = parse(&text, &tool, &job)
                && let Some(range) = error.range
            {
                prop_assert!(text.get(range).is_some());
            }
        }

        #[test]
        fn accepted_expressions_are_five_fields_and_stable(text in cron_like()) {
            match parse(&text, "tool", "job") {
                Ok(schedule) => {
                    prop_assert_eq!(schedule.actual.split(' ').count(), 5);
                    prop_assert_eq!(toolforge_cron::check(&schedule.actual), Ok(()));
                    prop_assert_eq!(parse(&schedule.actual, "other", "tool").map(|again| again.actual), Ok(schedule.actual.clone()));
                    let _ = warnings(&schedule);
                }
                Err(error) => {
                    let range = error.range.unwrap_or(0..0);
                    prop_assert!(text.get(range.clone()).is_some(), "{:?} in {:?}", range, text);
                }
            }
        }

        #[test]
        fn macros_always_expand_to_valid_expressions(tool in any::<String>(), job in any::<String>(), index in 0..5_usize) {
            let schedule = parse(MACROS[index], &tool, &job).expect("macros are valid");
            prop_assert_eq!(toolforge_cron::check(&schedule.actual), Ok(()));
            prop_assert_eq!(parse(&schedule.actual, &tool, &job).map(|again| again.actual), Ok(schedule.actual.clone()));
        }
    }
}
