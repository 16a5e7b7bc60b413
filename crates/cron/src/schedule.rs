//! Five-field schedules: robfig/cron's standard parser, the minutes a schedule matches and its next run.
//!
//! The parser follows robfig/cron's `getRange` item by item and uses its error texts, since they end up word for
//! word in the API server's 422 messages. Where it departs, it keeps the local cluster's answers of old: the slash
//! count and a zero step are checked before the bounds (`70/0` is "step of range should be a positive number",
//! robfig/cron says "beginning of range (70) beyond end of range (59)"), and a number past `i64` is "invalid
//! syntax", one past `u32` "value out of range" (Go reads both up to `i64` and says "value out of range" beyond).

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Span, Timestamp, ToSpan};

use crate::{Field, descriptor};

/// How far [`Schedule::next_after`] looks ahead: long enough for a 29 February that falls on a given weekday.
const HORIZON_DAYS: i32 = 366 * 28;

/// Why a schedule does not parse, in robfig/cron's words (which are not this project's style on purpose: the API
/// server returns them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not five fields.
    #[error("expected exactly 5 fields, found {found}: [{fields}]")]
    FieldCount {
        /// How many fields there are.
        found: usize,
        /// The fields, joined by single spaces.
        fields: String,
    },
    /// An `@` word that is not a descriptor.
    #[error("unrecognized descriptor: {0}")]
    UnknownDescriptor(String),
    /// Not a Go duration after `@every ` (the text is what follows it).
    #[error("failed to parse duration @every {0}: time: invalid duration \"{0}\"")]
    Duration(String),
    /// An item with more than one `/`.
    #[error("too many slashes: {0}")]
    TooManySlashes(String),
    /// An item with more than one `-`.
    #[error("too many hyphens: {0}")]
    TooManyHyphens(String),
    /// A negative step (a leading `-` elsewhere splits the item into a range).
    #[error("negative number ({value}) not allowed: {text}")]
    Negative {
        /// The number.
        value: i64,
        /// The step as written.
        text: String,
    },
    /// Neither a number nor one of the field's names.
    #[error("failed to parse int from {0}: strconv.Atoi: parsing \"{0}\": invalid syntax")]
    NotANumber(String),
    /// A number too large for the parser.
    #[error("failed to parse int from {0}: value out of range")]
    OutOfRange(String),
    /// A step of zero.
    #[error("step of range should be a positive number: {0}")]
    ZeroStep(String),
    /// A value below the field's smallest.
    #[error("beginning of range ({start}) below minimum ({min}): {item}")]
    BelowMinimum {
        /// Where the range starts.
        start: u32,
        /// The field's smallest value.
        min: u32,
        /// The item as written.
        item: String,
    },
    /// A value above the field's largest.
    #[error("end of range ({end}) above maximum ({max}): {item}")]
    AboveMaximum {
        /// Where the range ends.
        end: u32,
        /// The field's largest value.
        max: u32,
        /// The item as written.
        item: String,
    },
    /// A range that runs backwards (`5-3`, or `N/STEP` with N above the maximum).
    #[error("beginning of range ({start}) beyond end of range ({end}): {item}")]
    Reversed {
        /// Where the range starts.
        start: u32,
        /// Where it ends.
        end: u32,
        /// The item as written.
        item: String,
    },
}

/// Which day-of-week numbers stand for Sunday.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sunday {
    /// Only `0`: robfig/cron's standard parser, hence the API server, which refuses `7`.
    Zero,
    /// `0` or `7`, as Vixie cron reads the field: `7` and `5-7` include Sunday, and so does `5/1` (5 to 7).
    ZeroOrSeven,
}

/// The minutes a schedule runs at: one bit per allowed value of each field, in [`Field::ALL`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    values: [u64; 5],
    /// Whether the day of month, and the day of week, is `*` or `?` (robfig/cron's star bit): only when neither
    /// is does a day match when either field does.
    day_of_month_star: bool,
    day_of_week_star: bool,
}

impl Schedule {
    /// Parses five fields or a descriptor (not `@every`, which has no calendar minutes; [`check`](crate::check)
    /// accepts it).
    pub fn parse(text: &str) -> Result<Self, Error> {
        let fields = if text.starts_with('@') {
            descriptor(text).ok_or_else(|| Error::UnknownDescriptor(text.to_owned()))?
        } else {
            text
        };
        Self::parse_fields(fields, Sunday::Zero)
    }

    /// Parses five whitespace-separated fields, nothing else (a descriptor is one field too few).
    pub fn parse_fields(text: &str, sunday: Sunday) -> Result<Self, Error> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != Field::ALL.len() {
            return Err(Error::FieldCount {
                found: fields.len(),
                fields: fields.join(" "),
            });
        }
        let mut values = [0_u64; 5];
        let mut star = [false; 5];
        for (index, (text, field)) in fields.iter().zip(Field::ALL).enumerate() {
            let max = match (field, sunday) {
                (Field::DayOfWeek, Sunday::ZeroOrSeven) => 7,
                _ => field.max(),
            };
            for item in text.split(',') {
                let range = Range::parse(item, field, max)?;
                star[index] |= range.star;
                for value in (range.start..=range.end)
                    .step_by(usize::try_from(range.step).unwrap_or(usize::MAX))
                {
                    values[index] |= 1 << value;
                }
            }
        }
        // Day 7 is Sunday, day 0.
        values[4] |= values[4] >> 7 & 1;
        Ok(Self {
            values,
            day_of_month_star: star[2],
            day_of_week_star: star[4],
        })
    }

    /// Whether the schedule runs at this wall-clock minute (seconds are not looked at).
    pub fn matches(&self, time: DateTime) -> bool {
        self.day_matches(time.date())
            && self.has(Field::Hour, time.hour())
            && self.has(Field::Minute, time.minute())
    }

    /// The first minute strictly after `after` at which the schedule runs in `zone`; `None` when there is none in
    /// the next 28 years (`0 0 31 2 *`).
    ///
    /// The search walks wall-clock time; a minute that a DST change skips runs at the same offset from the change
    /// (jiff's "compatible" reading: 02:30 in a gap is 03:30), and a repeated one at its first occurrence only.
    pub fn next_after(&self, after: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
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
            if !self.day_matches(time.date()) {
                time = time.date().tomorrow().ok()?.to_datetime(Time::midnight());
            } else if !self.has(Field::Hour, time.hour()) {
                time = time
                    .with()
                    .minute(0)
                    .build()
                    .ok()?
                    .checked_add(1.hour())
                    .ok()?;
            } else if !self.has(Field::Minute, time.minute()) {
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

    /// cron's day rule: the month must match, and the day of month and the day of week both, unless both are
    /// restricted, in which case either does (`0 0 1 * mon` runs on the 1st and on Mondays).
    fn day_matches(&self, date: Date) -> bool {
        let day_of_month = self.has(Field::DayOfMonth, date.day());
        let day_of_week = self.has(Field::DayOfWeek, date.weekday().to_sunday_zero_offset());
        let day = if self.day_of_month_star || self.day_of_week_star {
            day_of_month && day_of_week
        } else {
            day_of_month || day_of_week
        };
        self.has(Field::Month, date.month()) && day
    }

    fn has(&self, field: Field, value: i8) -> bool {
        u32::try_from(value).is_ok_and(|value| self.values[field as usize] & (1 << value) != 0)
    }
}

/// One list item of a field: `*`, `?`, `N` or `N-M`, with an optional `/STEP`.
struct Range {
    start: u32,
    end: u32,
    step: u32,
    /// `*` or `?` (`*-5` too: robfig/cron ignores what follows the star) without a step above 1.
    star: bool,
}

impl Range {
    /// Reads `item` of `field`, whose largest value is `max`, checking it the way robfig/cron's `getRange` does.
    fn parse(item: &str, field: Field, max: u32) -> Result<Self, Error> {
        let range_and_step: Vec<&str> = item.split('/').collect();
        if range_and_step.len() > 2 {
            return Err(Error::TooManySlashes(item.to_owned()));
        }
        let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
        let any = matches!(low_and_high[0], "*" | "?");
        let (start, mut end) = if any {
            (field.min(), max)
        } else {
            let start = number(low_and_high[0], Some(field))?;
            match low_and_high.len() {
                1 => (start, start),
                2 => (start, number(low_and_high[1], Some(field))?),
                _ => return Err(Error::TooManyHyphens(item.to_owned())),
            }
        };
        let mut step = 1;
        if let Some(text) = range_and_step.get(1) {
            step = number(text, None)?;
            // `N/STEP` runs from N to the end of the field.
            if low_and_high.len() == 1 && !any {
                end = max;
            }
            if step == 0 {
                return Err(Error::ZeroStep(item.to_owned()));
            }
        }
        if start < field.min() {
            return Err(Error::BelowMinimum {
                start,
                min: field.min(),
                item: item.to_owned(),
            });
        }
        if end > max {
            return Err(Error::AboveMaximum {
                end,
                max,
                item: item.to_owned(),
            });
        }
        if start > end {
            return Err(Error::Reversed {
                start,
                end,
                item: item.to_owned(),
            });
        }
        Ok(Self {
            start,
            end,
            step,
            star: any && step == 1,
        })
    }
}

/// A number, or a name of `names_of` (steps take no names), as robfig/cron's `parseIntOrName` reads it.
fn number(text: &str, names_of: Option<Field>) -> Result<u32, Error> {
    if let Some(value) = names_of.and_then(|field| field.value_of_name(text)) {
        return Ok(value);
    }
    match text.parse::<i64>() {
        Ok(value) if value < 0 => Err(Error::Negative {
            value,
            text: text.to_owned(),
        }),
        Ok(value) => u32::try_from(value).map_err(|_| Error::OutOfRange(text.to_owned())),
        Err(_) => Err(Error::NotANumber(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(text: &str) -> DateTime {
        text.parse().expect("a valid civil time")
    }

    fn schedule(text: &str) -> Schedule {
        Schedule::parse(text).unwrap_or_else(|error| panic!("{text:?}: {error}"))
    }

    #[test]
    fn schedules_match_the_minutes_cron_runs_them() {
        // (expression, wall-clock minute, runs); 2026-03-02 is a Monday.
        let cases = [
            ("*/5 * * * *", "2026-03-02T10:05", true),
            ("*/5 * * * *", "2026-03-02T10:06", false),
            ("5/10 * * * *", "2026-03-02T10:55", true),
            ("5/10 * * * *", "2026-03-02T10:00", false),
            ("0 9-17/4 * * *", "2026-03-02T13:00", true),
            ("0 9-17/4 * * *", "2026-03-02T18:00", false),
            ("0,30 * * * *", "2026-03-02T10:30", true),
            ("0 12 ? * *", "2026-03-02T12:00", true),
            ("0 0 * JAN-mar SUN-sat", "2026-03-02T00:00", true),
            ("0 0 * apr-dec *", "2026-03-02T00:00", false),
            ("*-5 * * * *", "2026-03-02T10:59", true),
            // Both day fields restricted: either matches.
            ("0 0 15 * mon", "2026-03-02T00:00", true),
            ("0 0 15 * mon", "2026-03-15T00:00", true),
            ("0 0 15 * mon", "2026-03-03T00:00", false),
            // A step takes the star away, so either day matches again: Tuesday is day 2.
            ("0 0 1 * */2", "2026-03-03T00:00", true),
            // `*/1` keeps it: the 1st and a Tuesday.
            ("0 0 1 * */1", "2026-03-03T00:00", false),
            ("0 0 1 * */1", "2026-03-01T00:00", true),
            // A star anywhere in the list counts.
            ("0 0 1 * 1,*", "2026-03-03T00:00", false),
            ("@hourly", "2026-03-03T07:00", true),
            ("@weekly", "2026-03-01T00:00", true),
            ("@weekly", "2026-03-02T00:00", false),
        ];
        for (expression, at, runs) in cases {
            assert_eq!(
                schedule(expression).matches(time(at)),
                runs,
                "{expression} at {at}"
            );
        }
    }

    /// Checks `(expression, after, next run)` cases in `zone`; `None` when it never runs.
    fn assert_next_runs(zone: &str, cases: &[(&str, &str, Option<&str>)]) {
        let zone = TimeZone::get(zone).expect("a known time zone");
        for (expression, after, expected) in cases {
            let after: Timestamp = after.parse().expect("a valid timestamp");
            let next = schedule(expression).next_after(after, &zone);
            assert_eq!(
                next.map(|next| next.to_string()).as_deref(),
                *expected,
                "{expression} after {after}"
            );
        }
    }

    #[test]
    fn next_runs_in_utc() {
        assert_next_runs(
            "UTC",
            &[
                (
                    "17 3 * * *",
                    "2026-11-30T02:00:00Z",
                    Some("2026-11-30T03:17:00Z"),
                ),
                (
                    "17 3 * * *",
                    "2026-11-30T03:17:00Z",
                    Some("2026-12-01T03:17:00Z"),
                ),
                (
                    "* * * * *",
                    "2026-11-30T10:01:30Z",
                    Some("2026-11-30T10:02:00Z"),
                ),
                (
                    "*/15 * * * *",
                    "2026-11-30T10:01:30Z",
                    Some("2026-11-30T10:15:00Z"),
                ),
                (
                    "0 9-17/4 * * mon-fri",
                    "2026-11-28T00:00:00Z",
                    Some("2026-11-30T09:00:00Z"),
                ),
                (
                    "0 9,21 * * 1",
                    "2026-11-28T00:00:00Z",
                    Some("2026-11-30T09:00:00Z"),
                ),
                (
                    "0 0 1 jan *",
                    "2026-11-28T00:00:00Z",
                    Some("2027-01-01T00:00:00Z"),
                ),
                (
                    "@monthly",
                    "2026-11-28T00:00:00Z",
                    Some("2026-12-01T00:00:00Z"),
                ),
                // The 1st of the month, or any Monday.
                (
                    "0 0 1 * 1",
                    "2026-11-24T00:00:00Z",
                    Some("2026-11-30T00:00:00Z"),
                ),
                // The 1st, or a Sunday, Tuesday, Thursday or Saturday: 2026-03-02 is a Monday.
                (
                    "0 0 1 * */2",
                    "2026-03-02T00:00:00Z",
                    Some("2026-03-03T00:00:00Z"),
                ),
                (
                    "0 0 29 2 *",
                    "2026-03-01T00:00:00Z",
                    Some("2028-02-29T00:00:00Z"),
                ),
                // In February: the 29th or a Monday.
                (
                    "0 0 29 2 mon",
                    "2026-03-01T00:00:00Z",
                    Some("2027-02-01T00:00:00Z"),
                ),
                ("0 0 31 2 *", "2026-11-30T00:00:00Z", None),
            ],
        );
    }

    #[test]
    fn next_runs_in_time_zones_and_across_dst_changes() {
        assert_next_runs(
            "America/New_York",
            &[
                (
                    "0 9 * * *",
                    "2026-07-01T00:00:00Z",
                    Some("2026-07-01T13:00:00Z"),
                ),
                (
                    "0 9 * * *",
                    "2026-12-01T00:00:00Z",
                    Some("2026-12-01T14:00:00Z"),
                ),
            ],
        );
        assert_next_runs(
            "Europe/Berlin",
            &[
                (
                    "0 6 * * *",
                    "2026-11-30T00:00:00Z",
                    Some("2026-11-30T05:00:00Z"),
                ),
                // Berlin springs forward at 02:00 on 2026-03-29: 02:30 does not exist and runs at 03:30 CEST.
                (
                    "30 2 * * *",
                    "2026-03-28T12:00:00Z",
                    Some("2026-03-29T01:30:00Z"),
                ),
                // It falls back at 03:00 on 2026-10-25: 02:30 happens twice and runs at the first, in CEST ...
                (
                    "30 2 * * *",
                    "2026-10-24T12:00:00Z",
                    Some("2026-10-25T00:30:00Z"),
                ),
                // ... and not again an hour later.
                (
                    "30 2 * * *",
                    "2026-10-25T00:30:00Z",
                    Some("2026-10-26T01:30:00Z"),
                ),
                // The walk is in wall-clock time, so the repeated hour (02:00 CET, 01:00Z) is not visited again.
                (
                    "0 * * * *",
                    "2026-10-25T00:00:00Z",
                    Some("2026-10-25T02:00:00Z"),
                ),
            ],
        );
    }

    #[test]
    fn sunday_may_be_seven_when_asked() {
        let vixie = |text| Schedule::parse_fields(text, Sunday::ZeroOrSeven).expect("valid");
        assert!(vixie("0 0 * * 7").matches(time("2026-03-01T00:00")));
        assert!(vixie("0 0 * * 5-7").matches(time("2026-03-01T00:00")));
        assert!(!vixie("0 0 * * 5-7").matches(time("2026-03-02T00:00")));
        assert_eq!(
            Schedule::parse_fields("0 0 * * 8", Sunday::ZeroOrSeven)
                .map_err(|error| error.to_string()),
            Err("end of range (8) above maximum (7): 8".to_owned())
        );
        assert_eq!(
            Schedule::parse_fields("0 0 * * 7", Sunday::Zero).map_err(|error| error.to_string()),
            Err("end of range (7) above maximum (6): 7".to_owned())
        );
    }

    #[test]
    fn only_parse_expands_descriptors() {
        assert_eq!(Schedule::parse("@daily"), Schedule::parse("0 0 * * *"));
        assert_eq!(Schedule::parse("@annually"), Schedule::parse("@yearly"));
        assert!(matches!(
            Schedule::parse_fields("@daily", Sunday::Zero),
            Err(Error::FieldCount { found: 1, .. })
        ));
        assert_eq!(
            Schedule::parse("@every 1h"),
            Err(Error::UnknownDescriptor("@every 1h".to_owned())),
            "only check accepts @every"
        );
    }

    #[test]
    fn refuses_items_with_the_parser_messages() {
        let cases = [
            ("0 0 * 13 *", "end of range (13) above maximum (12): 13"),
            (
                "0 0 * jan-foo *",
                "failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax",
            ),
            (
                "0 0 * * mon/tue",
                "failed to parse int from tue: strconv.Atoi: parsing \"tue\": invalid syntax",
            ),
            (
                "70/5 * * * *",
                "beginning of range (70) beyond end of range (59): 70/5",
            ),
            ("5/-1 * * * *", "negative number (-1) not allowed: -1"),
            (
                "1,,2 * * * *",
                "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax",
            ),
            (
                "0 0 * * sun-sat/0",
                "step of range should be a positive number: sun-sat/0",
            ),
            (
                "0 0 6-1 * *",
                "beginning of range (6) beyond end of range (1): 6-1",
            ),
            (
                "0\t0 *\n* * *",
                "expected exactly 5 fields, found 6: [0 0 * * * *]",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(
                Schedule::parse(text).map_err(|error| error.to_string()),
                Err(message.to_owned()),
                "{text:?}"
            );
        }
    }
}
