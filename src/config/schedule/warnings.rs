//! Warnings about valid schedules that run rarely or never.
//!
//! Upstream's `@monthly` and `@yearly` may land on day 29 to 31, and `@yearly` even on a date that does not exist;
//! explicit expressions can do the same. Nothing here rejects a schedule: upstream accepts all of these.

use toolforge_cron::Field;

use super::{Schedule, split_python_whitespace};

/// Points out schedules that run rarely or never.
///
/// Only the `actual` expression is examined; a [`Schedule`] that did not come from [`parse`](super::parse) may get no warnings.
#[must_use]
pub fn warnings(schedule: &Schedule) -> Vec<String> {
    let fields = split_python_whitespace(&schedule.actual);
    let [_, _, (_, day_of_month), (_, month), (_, day_of_week)] = fields.as_slice() else {
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
    if let Some(warning) = calendar_warning(&subject, day_of_month, month, day_of_week) {
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
    let days = values(Field::DayOfMonth, day_of_month)?;
    let months = values(Field::Month, month)?;
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

/// The sorted numbers a valid day-of-month or month field selects; `None` if it is not valid.
fn values(field: Field, text: &str) -> Option<Vec<u32>> {
    let mut selected = Vec::new();
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((base, step)) => (base, step.parse::<u32>().ok().filter(|&step| step > 0)?),
            None => (item, 1),
        };
        let (start, end) = match range.split_once('-') {
            Some((start, end)) => (start.parse().ok()?, end.parse().ok()?),
            None if range == "*" => (field.min(), field.max()),
            None if item.contains('/') => (range.parse().ok()?, field.max()),
            None => {
                let value = range.parse().ok()?;
                (value, value)
            }
        };
        if start < field.min() || end > field.max() {
            return None;
        }
        selected.extend((start..=end).step_by(usize::try_from(step).ok()?));
    }
    selected.sort_unstable();
    selected.dedup();
    Some(selected)
}

#[cfg(test)]
mod tests {
    use jiff::civil::Date;

    use super::*;
    use crate::config::schedule::parse;

    fn warnings_for(expression: &str, actual: &str) -> Vec<String> {
        warnings(&Schedule {
            expression: expression.to_owned(),
            actual: actual.to_owned(),
        })
    }

    #[test]
    fn warns_when_an_expanded_macro_lands_on_a_day_some_months_lack() {
        assert_eq!(
            warnings_for("@monthly", "12 3 30 * *"),
            ["`@monthly` became `12 3 30 * *`, which runs only in months that have day 30"]
        );
        assert_eq!(
            warnings_for("@monthly", "12 3 29 * *"),
            ["`@monthly` became `12 3 29 * *`, which runs only in months that have day 29"]
        );
        assert_eq!(
            warnings_for("@yearly", "5 4 30 2 *"),
            ["`@yearly` became `5 4 30 2 *`, which never runs: February has no day 30"]
        );
        assert_eq!(
            warnings_for("@yearly", "5 4 31 4 *"),
            ["`@yearly` became `5 4 31 4 *`, which never runs: April has no day 31"]
        );
        assert_eq!(
            warnings_for("@yearly", "5 4 29 2 *"),
            ["`@yearly` became `5 4 29 2 *`, which runs only in leap years"]
        );
    }

    #[test]
    fn stays_quiet_for_dates_every_month_or_year_has() {
        for (expression, actual) in [
            ("@monthly", "12 3 28 * *"),
            ("@yearly", "5 4 31 1 *"),
            ("@yearly", "5 4 30 11 *"),
            ("@daily", "5 4 * * *"),
            ("@weekly", "5 4 * * 3"),
            ("0 0 */2 * *", "0 0 */2 * *"),
            ("0 0 1-31 2 *", "0 0 1-31 2 *"),
            ("0 0 31 1,3 *", "0 0 31 1,3 *"),
        ] {
            assert_eq!(
                warnings_for(expression, actual),
                Vec::<String>::new(),
                "{actual}"
            );
        }
    }

    #[test]
    fn checks_explicit_expressions_too() {
        assert_eq!(
            warnings_for("0 0 31 * *", "0 0 31 * *"),
            ["`0 0 31 * *` runs only in months that have day 31"]
        );
        assert_eq!(
            warnings_for("0 0 31 1-12/2 *", "0 0 31 1-12/2 *"),
            ["`0 0 31 1-12/2 *` runs only in months that have day 31"]
        );
        assert_eq!(
            warnings_for("0 0 29 1,2 *", "0 0 29 1,2 *"),
            ["`0 0 29 1,2 *` runs only in months that have day 29"]
        );
        assert_eq!(
            warnings_for("0 0 29,30 2 *", "0 0 29,30 2 *"),
            ["`0 0 29,30 2 *` runs only in leap years"]
        );
        assert_eq!(
            warnings_for("0 0 31 2,4 *", "0 0 31 2,4 *"),
            ["`0 0 31 2,4 *` never runs: none of its months has any of its days"]
        );
        assert_eq!(
            warnings_for("0 0 30/1 2 *", "0 0 30/1 2 *"),
            ["`0 0 30/1 2 *` never runs: none of its months has any of its days"]
        );
    }

    #[test]
    fn a_restricted_day_of_week_keeps_the_schedule_running() {
        // Cron runs when either day field matches if both are restricted.
        assert_eq!(
            warnings_for("0 0 31 2 1", "0 0 31 2 1"),
            Vec::<String>::new()
        );
        assert_eq!(
            warnings_for("0 0 31 2 */1", "0 0 31 2 */1"),
            ["`0 0 31 2 */1` never runs: February has no day 31"]
        );
    }

    #[test]
    fn seven_for_sunday_is_rendered_as_zero_and_needs_no_warning() {
        let schedule = super::super::parse("0 0 * * 1,7", "tool", "job").expect("valid");
        assert_eq!(schedule.actual, "0 0 * * 1,0");
        assert_eq!(warnings(&schedule), Vec::<String>::new());
        assert_eq!(
            warnings_for("0 0 * * 0,sun", "0 0 * * 0,sun"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn ignores_schedules_that_did_not_come_from_parse() {
        for actual in [
            "",
            "garbage",
            "0 0 99 * *",
            "0 0 31 2",
            "0 0 x-y/z 2 *",
            "0 0 */0 2 *",
        ] {
            assert_eq!(
                warnings_for(actual, actual),
                Vec::<String>::new(),
                "{actual:?}"
            );
        }
    }

    /// Expands `@monthly` and `@yearly` for many job names and checks each warning against the calendar.
    #[test]
    fn expanded_macro_warnings_agree_with_the_calendar() {
        let mut seen = [0_usize; 3];
        for number in 0..3000 {
            let job = format!("job-{number}");
            let yearly = parse("@yearly", "tool", &job).expect("macros are valid");
            let fields: Vec<i8> = yearly
                .actual
                .split(' ')
                .skip(2)
                .take(2)
                .map(|field| field.parse().expect("@yearly pins day and month"))
                .collect();
            let (day, month) = (fields[0], fields[1]);
            let in_leap_year = Date::new(2024, month, day).is_ok();
            let in_common_year = Date::new(2023, month, day).is_ok();
            let found = warnings(&yearly);
            let expected = match (in_leap_year, in_common_year) {
                (false, _) => Some((0, "never runs")),
                (true, false) => Some((1, "runs only in leap years")),
                (true, true) => None,
            };
            match expected {
                Some((kind, text)) => {
                    seen[kind] += 1;
                    assert_eq!(found.len(), 1, "{}", yearly.actual);
                    assert!(found[0].contains(text), "{found:?}");
                }
                None => assert!(found.is_empty(), "{found:?}"),
            }

            let monthly = parse("@monthly", "tool", &job).expect("macros are valid");
            let day: u32 = monthly
                .actual
                .split(' ')
                .nth(2)
                .and_then(|field| field.parse().ok())
                .expect("@monthly pins the day");
            let found = warnings(&monthly);
            if day >= 29 {
                seen[2] += 1;
                assert_eq!(
                    found,
                    [format!(
                        "`@monthly` became `{}`, which runs only in months that have day {day}",
                        monthly.actual
                    )]
                );
            } else {
                assert!(found.is_empty(), "{found:?}");
            }
        }
        assert!(
            seen.iter().all(|&count| count > 0),
            "every kind of warning occurs: {seen:?}"
        );
    }
}
