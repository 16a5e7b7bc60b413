//! Schedules of scheduled jobs: upstream's cron dialect and its five `@` macros.
//!
//! [`parse`] accepts and rejects exactly what upstream's jobs-api accepts and rejects (`tjf/core/cron.py`, reference
//! §1.5) and returns both the text the user wrote and the expression Kubernetes receives. The macros are spread over
//! their period with upstream's deterministic per-(tool, job) randomisation, which needs Python's own random number
//! generator, reproduced in `python_random`. [`warnings`] points out schedules that run rarely or never.
//!
//! This module does not compute run times (the `CronJob` controller does) and knows nothing of YAML: the caller
//! passes the schedule string and turns a [`ScheduleError`] into a diagnostic with its byte range.
//!
//! Where the reference leaves room, these are the readings this module implements:
//! - A value starting with `@` is a macro and is matched exactly as written: case-sensitively and before any
//!   lower-casing or trimming (the reference lower-cases only explicit expressions), so `@Daily` and `"@daily "` are
//!   invalid at-macros and `" @daily"` is an expression with one field.
//! - Explicit expressions are split the way Python's `str.split()` splits: on runs of any whitespace (tabs and
//!   newlines included), ignoring leading and trailing whitespace.
//! - The `actual` expression is the lower-cased fields joined by single spaces, each field kept as written: leading
//!   zeros stay (`02 07 * * *` stays `02 07 * * *`; Kubernetes reads them as numbers too), day names stay names and
//!   a day-of-week `7` stays `7`.
//! - Numbers are ASCII digits. Python's `int()` would also take `+5`, `1_0` and non-ASCII digits, but Kubernetes
//!   refuses those, so accepting them would only move the failure to apply time.
//! - Day names (`sun`…`sat`) and `7` are whole list items only: not range ends, not the start of a step.
//! - A single value `N` is bounds-checked like the range `N-N`, and the start of a step `N/S` like a single value,
//!   which yields upstream's two bound messages ("Start value … must be at least …", "End value … must be at most
//!   …"). Messages the reference does not quote (not a number, step bounds, wrong field count details) are ours, in
//!   upstream's style.

mod python_random;

use std::fmt;
use std::ops::Range;

use self::python_random::PythonRandom;

/// The macros upstream accepts, exactly as they must be written.
pub const MACROS: [&str; 5] = ["@hourly", "@daily", "@weekly", "@monthly", "@yearly"];

/// The standard expression behind each of [`MACROS`], in the same order; the fields that are not `*` get
/// randomised.
const MACRO_EXPRESSIONS: [&str; 5] = [
    "0 * * * *",
    "0 0 * * *",
    "0 0 * * 0",
    "0 0 1 * *",
    "0 0 1 1 *",
];

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
    Ok(Schedule {
        expression: text.to_owned(),
        actual,
    })
}

/// Replaces a macro's pinned fields with upstream's deterministic random values.
fn expand_macro(text: &str, tool: &str, job: &str) -> Result<String, ScheduleError> {
    let Some(index) = MACROS.iter().position(|&name| name == text) else {
        return Err(ScheduleError {
            message: format!(
                "Invalid at-macro '{text}', supported macros are: {}",
                MACROS.join(", ")
            ),
            range: Some(0..text.len()),
            help: macro_help(text),
        });
    };
    let mut random = PythonRandom::from_str_seed(&format!("{tool} {job}"));
    // Draws happen in field order, minute first, and only for pinned fields: that order is part of upstream's
    // results.
    let fields: Vec<String> = MACRO_EXPRESSIONS[index]
        .split(' ')
        .zip(&FIELDS)
        .map(|(value, field)| {
            if value == "*" {
                value.to_owned()
            } else {
                random.randint(field.min, field.max).to_string()
            }
        })
        .collect();
    Ok(fields.join(" "))
}

/// Suggests the intended macro for an invalid one.
fn macro_help(text: &str) -> Option<String> {
    let trimmed = text.trim_matches(is_python_whitespace);
    if MACROS.contains(&trimmed) {
        return Some(format!("remove the whitespace around `{trimmed}`"));
    }
    let lower = trimmed.to_lowercase();
    if MACROS.contains(&lower.as_str()) {
        return Some(format!("macros are case-sensitive: write `{lower}`"));
    }
    let help = match lower.as_str() {
        "@annually" => "write `@yearly`".to_owned(),
        "@midnight" => "write `@daily`".to_owned(),
        "@reboot" => {
            "Kubernetes has no `@reboot`; a continuous job runs whenever it is not running"
                .to_owned()
        }
        every if every.starts_with("@every") => {
            "`@every` is not supported; use a step, like `*/10 * * * *` for every 10 minutes"
                .to_owned()
        }
        _ => {
            let closest = MACROS
                .iter()
                .map(|name| (strsim::levenshtein(name, &lower), name))
                .min()
                .filter(|(distance, _)| *distance <= 2)?;
            format!("did you mean `{}`?", closest.1)
        }
    };
    Some(help)
}

/// One of the five fields of a cron expression.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
    },
    Field {
        name: "day of month",
        min: 1,
        max: 31,
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
    },
    Field {
        name: "day of week",
        min: 0,
        max: 6,
    },
];

/// Index of the day-of-week field in [`FIELDS`], the only one that takes names.
const DAY_OF_WEEK: usize = 4;

/// Day names in day-of-week order, Sunday = 0.
const DAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Month names, which upstream does not accept; used only to suggest the number.
const MONTH_NAMES: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Validates an explicit expression and returns its normalised form.
fn normalise_expression(text: &str) -> Result<String, ScheduleError> {
    let fields = split_python_whitespace(text);
    if fields.len() != FIELDS.len() {
        return Err(wrong_field_count(&fields));
    }
    for ((start, value), (index, field)) in fields.iter().zip(FIELDS.iter().enumerate()) {
        check_field(index, field, value).map_err(|problem| problem.at(*start))?;
    }
    // Every accepted field is ASCII, so ASCII lower-casing is all of Python's `str.lower()` that can apply.
    let lowered: Vec<String> = fields
        .iter()
        .map(|(_, value)| value.to_ascii_lowercase())
        .collect();
    Ok(lowered.join(" "))
}

fn wrong_field_count(fields: &[(usize, &str)]) -> ScheduleError {
    let end_of = |(start, value): &(usize, &str)| start + value.len();
    let (range, help) = match fields {
        [] => (None, None),
        [first, ..] if fields.len() > FIELDS.len() => {
            let extra = &fields[FIELDS.len()];
            let last = fields.last().unwrap_or(first);
            (
                Some(extra.0..end_of(last)),
                Some("a schedule has five fields: minute, hour, day of month, month and day of week; there is no field for seconds or years".to_owned()),
            )
        }
        [first, ..] => {
            let last = fields.last().unwrap_or(first);
            let help = if first.1.starts_with('@') {
                format!(
                    "a macro must be the whole value: remove the whitespace around `{}`",
                    first.1
                )
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
fn check_field(index: usize, field: &Field, value: &str) -> Result<(), Problem> {
    let mut offset = 0;
    for item in value.split(',') {
        check_item(index, field, &item.to_ascii_lowercase()).map_err(|mut problem| {
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
fn check_item(index: usize, field: &Field, item: &str) -> Result<(), Problem> {
    if item == "*" {
        return Ok(());
    }
    if let Some((base, step)) = item.split_once('/') {
        if let Some((start, end)) = base.split_once('-') {
            return Err(
                Problem::new("Step syntax is not supported with ranges", 0..item.len())
                    .help(range_step_help(field, item, start, end, step)),
            );
        }
        if base != "*" {
            let start = number(index, field, base, item, 0)?;
            check_bounds(field, &start, 0..base.len())?;
        }
        let step_range = base.len() + 1..item.len();
        let step_number = number(index, field, step, item, step_range.start)?;
        if step_number.value < 1 {
            return Err(Problem::new(
                format!("Step value {step_number} must be at least 1"),
                step_range,
            ));
        }
        if step_number.value > field.max {
            return Err(Problem::new(
                format!("Step value {step_number} must be at most {}", field.max),
                step_range,
            )
            .help(format!("{} steps go from 1 to {}", field.name, field.max)));
        }
        return Ok(());
    }
    if let Some((start_text, end_text)) = item.split_once('-') {
        let end_offset = start_text.len() + 1;
        let start = number(index, field, start_text, item, 0)?;
        let end = number(index, field, end_text, item, end_offset)?;
        if start.value < field.min {
            return Err(Problem::new(
                format!("Start value {start} must be at least {}", field.min),
                0..start_text.len(),
            )
            .help(bounds_help(field)));
        }
        if end.value > field.max {
            let problem = Problem::new(
                format!("End value {end} must be at most {}", field.max),
                end_offset..item.len(),
            );
            return Err(
                if index == DAY_OF_WEEK && end.value == 7 && start.value > 0 {
                    problem.help(format!("Sunday is `0` in ranges: write `{start}-6,0`"))
                } else {
                    problem.help(bounds_help(field))
                },
            );
        }
        if end.value < start.value {
            // Upstream's message says "smaller" where it means "larger"; kept word for word.
            return Err(Problem::new(
                format!("End value {end} must be smaller than start value {start}"),
                0..item.len(),
            )
            .help(format!(
                "ranges go from low to high and do not wrap around; write `{start}-{},{}-{end}`",
                field.max, field.min
            )));
        }
        return Ok(());
    }
    if index == DAY_OF_WEEK && (item == "7" || DAY_NAMES.contains(&item)) {
        return Ok(());
    }
    let value = number(index, field, item, item, 0)?;
    check_bounds(field, &value, 0..item.len())
}

/// Checks a single value like upstream checks the range `N-N`.
fn check_bounds(field: &Field, value: &Number, range: Range<usize>) -> Result<(), Problem> {
    if value.value < field.min {
        return Err(Problem::new(
            format!("Start value {value} must be at least {}", field.min),
            range,
        )
        .help(bounds_help(field)));
    }
    if value.value > field.max {
        return Err(Problem::new(
            format!("End value {value} must be at most {}", field.max),
            range,
        )
        .help(bounds_help(field)));
    }
    Ok(())
}

fn bounds_help(field: &Field) -> String {
    format!(
        "the {} goes from {} to {}",
        field.name, field.min, field.max
    )
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
    index: usize,
    field: &Field,
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
    let problem = Problem::new(format!("Invalid {} value '{text}'", field.name), range);
    let day = DAY_NAMES.iter().position(|&name| name == text);
    let month = MONTH_NAMES.iter().position(|&name| name == text);
    let help = if index == DAY_OF_WEEK && (day.is_some() || text == "7") {
        day_name_help(item)
    } else if let (Some(month), 3) = (month, index) {
        format!("month names are not supported: write `{}`", month + 1)
    } else if text.is_empty() {
        "every item between commas, and both ends of a range, need a value".to_owned()
    } else {
        format!(
            "a {} is `*`, a number from {} to {}, a range like `{}-{}` or a step like `*/2`, or a comma list of these",
            field.name,
            field.min,
            field.max,
            field.min,
            field.min + 1
        )
    };
    Err(problem.help(help))
}

/// Help for a day name (or `7`) used inside a range or step: the same item with numbers, when that is valid.
fn day_name_help(item: &str) -> String {
    let day_number = |text: &str| -> Option<u32> {
        match DAY_NAMES.iter().position(|&name| name == text) {
            Some(position) => u32::try_from(position).ok(),
            None if text == "7" => Some(0),
            None => text.parse().ok().filter(|value| *value <= 6),
        }
    };
    let suggestion = if let Some((start, end)) = item.split_once('-') {
        match (day_number(start), day_number(end)) {
            (Some(start), Some(0)) if start > 0 => Some(format!("{start}-6,0")),
            (Some(start), Some(end)) if start <= end => Some(format!("{start}-{end}")),
            _ => None,
        }
    } else if let Some((start, step)) = item.split_once('/') {
        day_number(start).map(|start| format!("{start}/{step}"))
    } else {
        None
    };
    match suggestion {
        Some(suggestion) => {
            format!("day names are accepted only as single values; use `{suggestion}`")
        }
        None => {
            "day names are accepted only as single values; use numbers, Sunday = 0 to Saturday = 6"
                .to_owned()
        }
    }
}

/// Help for `A-B/S`: the same times as a list, or the step alone.
fn range_step_help(field: &Field, item: &str, start: &str, end: &str, step: &str) -> String {
    let parsed = (
        start.parse::<u32>(),
        end.parse::<u32>(),
        step.parse::<u32>(),
    );
    let (Ok(start), Ok(end), Ok(step)) = parsed else {
        return "use a list like `1,6,11` or a step like `*/5`".to_owned();
    };
    if step == 0 || start > end || start < field.min || end > field.max {
        return format!("use a list like `1,6,11` or a step like `*/{step}`");
    }
    if step == 1 {
        return format!("write `{start}-{end}`");
    }
    let picked: Vec<u32> = (start..=end)
        .step_by(usize::try_from(step).unwrap_or(usize::MAX))
        .collect();
    let final_pick = picked.last().copied().unwrap_or(start);
    let list = picked
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if final_pick + step > field.max {
        // Nothing past `end` would be picked anyway, so `start/step` (start to the field's maximum) is the same.
        format!("write `{start}/{step}`, which means the same, or the list `{list}`")
    } else {
        format!("write `{item}` as a list like `{list}` or use `*/{step}`")
    }
}

/// Points out schedules that run rarely or never, or that Kubernetes will refuse although upstream accepts them.
///
/// Only the `actual` expression is examined; a [`Schedule`] that did not come from [`parse`] may get no warnings.
#[must_use]
pub fn warnings(schedule: &Schedule) -> Vec<String> {
    let fields = split_python_whitespace(&schedule.actual);
    let [_, _, day_of_month, month, day_of_week] = fields.as_slice() else {
        return Vec::new();
    };
    let subject = if schedule.expression.starts_with('@') {
        format!(
            "`{}` became `{}`, which",
            schedule.expression, schedule.actual
        )
    } else {
        format!("`{}`", schedule.actual)
    };
    let mut warnings = Vec::new();
    if day_of_week.1.split(',').any(|item| item == "7") {
        warnings.push(format!(
            "{subject} uses `7` for Sunday, which upstream accepts but Kubernetes refuses (its days of the week go from 0 to 6); write `0`"
        ));
    }
    if let Some(warning) = calendar_warning(&subject, day_of_month.1, month.1, day_of_week.1) {
        warnings.push(warning);
    }
    warnings
}

/// Days in each month in the longest year, so that 29 February counts as a date that exists.
const MONTH_LENGTHS: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const MONTH_DISPLAY_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Warns when the days of the month do not exist in (some of) the months.
fn calendar_warning(
    subject: &str,
    day_of_month: &str,
    month: &str,
    day_of_week: &str,
) -> Option<String> {
    // With both day fields restricted, cron runs on either, and the day of the week always comes round.
    if !is_unrestricted(day_of_week) || is_unrestricted(day_of_month) {
        return None;
    }
    let days = values(&FIELDS[2], day_of_month)?;
    let months = values(&FIELDS[3], month)?;
    let first_day = *days.first()?;
    let month_has_day = |month: u32| month_length(month).is_some_and(|length| first_day <= length);
    let running: Vec<u32> = months
        .iter()
        .copied()
        .filter(|&month| month_has_day(month))
        .collect();
    if running.is_empty() {
        let reason = match (days.as_slice(), months.as_slice()) {
            ([day], [month]) => format!("{} has no day {day}", month_name(*month)?),
            _ => "none of its months has any of its days".to_owned(),
        };
        return Some(format!("{subject} never runs: {reason}"));
    }
    if first_day == 29 && running == [2] {
        return Some(format!("{subject} runs only in leap years"));
    }
    let february_skipped = first_day == 29 && running.contains(&2);
    if running.len() < months.len() || february_skipped {
        return Some(format!(
            "{subject} runs only in months that have day {first_day}"
        ));
    }
    None
}

/// Days in `month` (1 to 12) in a leap year.
fn month_length(month: u32) -> Option<u32> {
    MONTH_LENGTHS
        .get(usize::try_from(month.checked_sub(1)?).ok()?)
        .copied()
}

/// The English name of `month` (1 to 12).
fn month_name(month: u32) -> Option<&'static str> {
    MONTH_DISPLAY_NAMES
        .get(usize::try_from(month.checked_sub(1)?).ok()?)
        .copied()
}

/// Whether a field is `*` for the purpose of cron's day matching (Kubernetes treats `*/1` the same).
fn is_unrestricted(field: &str) -> bool {
    field.split(',').any(|item| item == "*" || item == "*/1")
}

/// The sorted values a valid field of the day-of-month or month selects; `None` if it is not valid.
fn values(field: &Field, text: &str) -> Option<Vec<u32>> {
    let mut selected = Vec::new();
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((base, step)) => (base, step.parse::<u32>().ok().filter(|&step| step > 0)?),
            None => (item, 1),
        };
        let (start, end) = match range.split_once('-') {
            Some((start, end)) => (start.parse().ok()?, end.parse().ok()?),
            None if range == "*" => (field.min, field.max),
            None if item.contains('/') => (range.parse().ok()?, field.max),
            None => {
                let value = range.parse().ok()?;
                (value, value)
            }
        };
        if start < field.min || end > field.max {
            return None;
        }
        selected.extend((start..=end).step_by(usize::try_from(step).ok()?));
    }
    selected.sort_unstable();
    selected.dedup();
    Some(selected)
}
