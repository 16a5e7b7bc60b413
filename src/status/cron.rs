//! When a CronJob runs next: the standard five-field cron expressions Kubernetes accepts (lists, ranges, steps,
//! month and day names), evaluated in the CronJob's time zone, for the "Next:" of `show` and `list -o long`.
//!
//! Only what the status needs: the expression a scheduled job's CronJob carries (upstream's macros are already
//! expanded to five fields by then). An expression this module cannot read has no next time, never an error.

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, ToSpan};

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// How far ahead to look: long enough for a 29 February that falls on a given weekday.
const HORIZON_DAYS: i32 = 366 * 28;

/// A parsed expression: one bit per allowed value of each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cron {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    /// Both day fields are restricted: a day matches when either does (cron's rule).
    either_day: bool,
}

/// The first time strictly after `after` that `expression` matches in `time_zone` (UTC when `None`); `None` when
/// the expression cannot be read or never matches.
pub fn next_after(
    expression: &str,
    time_zone: Option<&str>,
    after: Timestamp,
) -> Option<Timestamp> {
    let cron = parse(expression)?;
    let zone = match time_zone {
        Some(name) => TimeZone::get(name).ok()?,
        None => TimeZone::UTC,
    };
    let start = after.to_zoned(zone.clone()).datetime();
    let mut time = start
        .checked_add(1.minute())
        .ok()?
        .with()
        .second(0)
        .subsec_nanosecond(0)
        .build()
        .ok()?;
    let end = start.checked_add(Span::new().days(HORIZON_DAYS)).ok()?;
    while time < end {
        if !cron.day_matches(time) {
            time = time
                .date()
                .tomorrow()
                .ok()?
                .to_datetime(jiff::civil::Time::midnight());
        } else if !bit(cron.hours, time.hour()) {
            time = time
                .with()
                .minute(0)
                .build()
                .ok()?
                .checked_add(1.hour())
                .ok()?;
        } else if !bit(cron.minutes, time.minute()) {
            time = time.checked_add(1.minute()).ok()?;
        } else {
            return zone
                .to_ambiguous_zoned(time)
                .compatible()
                .ok()
                .map(|zoned| zoned.timestamp());
        }
    }
    None
}

impl Cron {
    fn day_matches(&self, time: DateTime) -> bool {
        let month = bit(self.months, time.month());
        let day_of_month = bit(self.days_of_month, time.day());
        let day_of_week = bit(self.days_of_week, time.weekday().to_sunday_zero_offset());
        let day = if self.either_day {
            day_of_month || day_of_week
        } else {
            day_of_month && day_of_week
        };
        month && day
    }
}

fn bit(set: u64, value: i8) -> bool {
    u32::try_from(value).is_ok_and(|value| set & (1 << value) != 0)
}

fn parse(expression: &str) -> Option<Cron> {
    let fields: Vec<&str> = expression.split_whitespace().collect();
    let [minute, hour, day_of_month, month, day_of_week] = fields.as_slice() else {
        return None;
    };
    let mut weekdays = field(day_of_week, 0, 7, &DAYS, 0)?;
    // Day 7 is Sunday too.
    if weekdays & (1 << 7) != 0 {
        weekdays |= 1;
    }
    Some(Cron {
        minutes: field(minute, 0, 59, &[], 0)?,
        hours: field(hour, 0, 23, &[], 0)?,
        days_of_month: field(day_of_month, 1, 31, &[], 1)?,
        months: field(month, 1, 12, &MONTHS, 1)?,
        days_of_week: weekdays,
        either_day: !day_of_month.starts_with('*') && !day_of_week.starts_with('*'),
    })
}

/// One field: comma-separated `*`, `N`, `N-M`, each with an optional `/STEP`; `names[i]` stands for `i + first`.
fn field(text: &str, low: u32, high: u32, names: &[&str], first: u32) -> Option<u64> {
    let value = |text: &str| -> Option<u32> {
        let lower = text.to_ascii_lowercase();
        if let Some(index) = names.iter().position(|name| *name == lower) {
            return u32::try_from(index).ok().map(|index| index + first);
        }
        text.parse()
            .ok()
            .filter(|value| (low..=high).contains(value))
    };
    let mut set = 0_u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, step.parse::<u32>().ok().filter(|step| *step > 0)?),
            None => (item, 1),
        };
        let (start, end) = if range == "*" {
            (low, high)
        } else if let Some((start, end)) = range.split_once('-') {
            (value(start)?, value(end)?)
        } else {
            let start = value(range)?;
            (start, if step > 1 { high } else { start })
        };
        if start > end {
            return None;
        }
        for allowed in (start..=end).step_by(usize::try_from(step).ok()?) {
            set |= 1 << allowed;
        }
    }
    Some(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn next(expression: &str, after: &str) -> Option<String> {
        next_after(expression, None, at(after)).map(|time| time.to_string())
    }

    #[test]
    fn daily_runs_the_same_day_or_the_next() {
        assert_eq!(
            next("17 3 * * *", "2026-11-30T02:00:00Z").unwrap(),
            "2026-11-30T03:17:00Z"
        );
        assert_eq!(
            next("17 3 * * *", "2026-11-30T03:17:00Z").unwrap(),
            "2026-12-01T03:17:00Z"
        );
    }

    #[test]
    fn steps_lists_ranges_and_names() {
        assert_eq!(
            next("*/15 * * * *", "2026-11-30T10:01:30Z").unwrap(),
            "2026-11-30T10:15:00Z"
        );
        assert_eq!(
            next("0 9-17/4 * * mon-fri", "2026-11-28T00:00:00Z").unwrap(),
            "2026-11-30T09:00:00Z"
        );
        assert_eq!(
            next("0 9,21 * * 1", "2026-11-28T00:00:00Z").unwrap(),
            "2026-11-30T09:00:00Z"
        );
        assert_eq!(
            next("0 0 1 jan *", "2026-11-28T00:00:00Z").unwrap(),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 * * 7", "2026-11-28T00:00:00Z").unwrap(),
            "2026-11-29T00:00:00Z"
        );
    }

    #[test]
    fn restricted_day_fields_match_either() {
        // The 1st of the month, or any Monday.
        assert_eq!(
            next("0 0 1 * 1", "2026-11-24T00:00:00Z").unwrap(),
            "2026-11-30T00:00:00Z"
        );
    }

    #[test]
    fn leap_days_and_time_zones() {
        assert_eq!(
            next("0 0 29 2 *", "2026-03-01T00:00:00Z").unwrap(),
            "2028-02-29T00:00:00Z"
        );
        let berlin = next_after(
            "0 6 * * *",
            Some("Europe/Berlin"),
            at("2026-11-30T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(berlin.to_string(), "2026-11-30T05:00:00Z");
    }

    #[test]
    fn unreadable_expressions_have_no_next_time() {
        assert_eq!(next("@daily", "2026-11-30T00:00:00Z"), None);
        assert_eq!(next("61 * * * *", "2026-11-30T00:00:00Z"), None);
        assert_eq!(next("0 0 31 2 *", "2026-11-30T00:00:00Z"), None);
    }
}
