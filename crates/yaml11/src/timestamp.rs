//! `!!timestamp` values: what PyYAML builds (`datetime.date` or `datetime.datetime`) and how
//! Python prints them.

use std::fmt;

/// A date, or a date and time, as PyYAML constructs `!!timestamp`.
///
/// `Display` is Python's `str()`: `2024-01-01`, `2001-12-14 21:59:43.100000-05:00`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Timestamp {
    /// Year, 1 to 9999.
    pub year: u16,
    /// Month, 1 to 12.
    pub month: u8,
    /// Day of the month.
    pub day: u8,
    /// The time of day; `None` for a plain date (Python's `datetime.date`).
    pub time: Option<TimeOfDay>,
}

/// The time part of a [`Timestamp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeOfDay {
    /// Hour, 0 to 23.
    pub hour: u8,
    /// Minute, 0 to 59.
    pub minute: u8,
    /// Second, 0 to 59.
    pub second: u8,
    /// Microseconds; PyYAML keeps the first six fraction digits.
    pub microsecond: u32,
    /// Offset from UTC in minutes (`Z` is 0); `None` for a naive datetime.
    pub offset_minutes: Option<i32>,
}

impl Timestamp {
    /// Seconds since 0001-01-01 in UTC (aware) or local wall time (naive), with microseconds,
    /// so equal instants compare equal as Python's `==` does for aware datetimes.
    pub(crate) fn instant_micros(&self) -> i128 {
        let days = days_before_year(i64::from(self.year))
            + days_before_month(i64::from(self.year), self.month)
            + i64::from(self.day);
        let mut micros = i128::from(days) * 86_400_000_000;
        if let Some(time) = self.time {
            let seconds =
                i64::from(time.hour) * 3600 + i64::from(time.minute) * 60 + i64::from(time.second)
                    - i64::from(time.offset_minutes.unwrap_or(0)) * 60;
            micros += i128::from(seconds) * 1_000_000 + i128::from(time.microsecond);
        }
        micros
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{:04}-{:02}-{:02}",
            self.year, self.month, self.day
        )?;
        let Some(time) = self.time else {
            return Ok(());
        };
        write!(
            formatter,
            " {:02}:{:02}:{:02}",
            time.hour, time.minute, time.second
        )?;
        if time.microsecond != 0 {
            write!(formatter, ".{:06}", time.microsecond)?;
        }
        if let Some(offset) = time.offset_minutes {
            let sign = if offset < 0 { '-' } else { '+' };
            let offset = offset.unsigned_abs();
            write!(formatter, "{sign}{:02}:{:02}", offset / 60, offset % 60)?;
        }
        Ok(())
    }
}

/// Builds a timestamp from text as PyYAML's `construct_yaml_timestamp` does; the error is the
/// message Python raises (PyYAML itself fails with a bare `ValueError` or `AttributeError`).
pub(crate) fn parse(text: &str) -> Result<Timestamp, String> {
    let mut cursor = Cursor {
        bytes: text.as_bytes(),
        position: 0,
    };
    let not_a_timestamp = || format!("{} is not a timestamp", crate::integer::python_repr(text));
    let year = cursor.digits(4, 4).ok_or_else(not_a_timestamp)?;
    cursor.expect(b'-').ok_or_else(not_a_timestamp)?;
    let month = cursor.digits(1, 2).ok_or_else(not_a_timestamp)?;
    cursor.expect(b'-').ok_or_else(not_a_timestamp)?;
    let day = cursor.digits(1, 2).ok_or_else(not_a_timestamp)?;
    let time = if cursor.at_end() {
        None
    } else {
        if !cursor.eat(b'T') && !cursor.eat(b't') && cursor.blanks() == 0 {
            return Err(not_a_timestamp());
        }
        let hour = cursor.digits(1, 2).ok_or_else(not_a_timestamp)?;
        cursor.expect(b':').ok_or_else(not_a_timestamp)?;
        let minute = cursor.digits(2, 2).ok_or_else(not_a_timestamp)?;
        cursor.expect(b':').ok_or_else(not_a_timestamp)?;
        let second = cursor.digits(2, 2).ok_or_else(not_a_timestamp)?;
        let mut microsecond = 0;
        if cursor.eat(b'.') {
            let start = cursor.position;
            while cursor.peek().is_some_and(|byte| byte.is_ascii_digit()) {
                cursor.position += 1;
            }
            let fraction = &text[start..cursor.position];
            let kept: String = fraction.chars().take(6).collect();
            microsecond = format!("{kept:0<6}").parse().unwrap_or(0);
        }
        // Blanks are only allowed before a zone, as in PyYAML's regexp.
        let before_zone = cursor.position;
        cursor.blanks();
        let offset_minutes = if cursor.eat(b'Z') {
            Some(0)
        } else if let Some(sign @ (b'+' | b'-')) = cursor.peek() {
            cursor.position += 1;
            let hours = cursor.digits(1, 2).ok_or_else(not_a_timestamp)?;
            let minutes = if cursor.eat(b':') {
                cursor.digits(2, 2).ok_or_else(not_a_timestamp)?
            } else {
                0
            };
            let total = i32::try_from(hours * 60 + minutes).unwrap_or(i32::MAX);
            Some(if sign == b'-' { -total } else { total })
        } else {
            cursor.position = before_zone;
            None
        };
        if !cursor.at_end() {
            return Err(not_a_timestamp());
        }
        if let Some(offset) = offset_minutes
            && offset.unsigned_abs() >= 24 * 60
        {
            return Err(format!(
                "offset must be a timedelta strictly between -timedelta(hours=24) and timedelta(hours=24), not {}",
                python_timedelta(offset)
            ));
        }
        if hour > 23 {
            return Err("hour must be in 0..23".to_owned());
        }
        if minute > 59 {
            return Err("minute must be in 0..59".to_owned());
        }
        if second > 59 {
            return Err("second must be in 0..59".to_owned());
        }
        Some(TimeOfDay {
            hour: small(hour),
            minute: small(minute),
            second: small(second),
            microsecond,
            offset_minutes,
        })
    };
    if !(1..=9999).contains(&year) {
        return Err(format!("year {year} is out of range"));
    }
    if !(1..=12).contains(&month) {
        return Err("month must be in 1..12".to_owned());
    }
    let month = small(month);
    let year = u16::try_from(year).unwrap_or(1);
    if day < 1 || day > u32::from(days_in_month(i64::from(year), month)) {
        return Err("day is out of range for month".to_owned());
    }
    Ok(Timestamp {
        year,
        month,
        day: small(day),
        time,
    })
}

/// Narrows a value already checked to be below 100.
fn small(value: u32) -> u8 {
    u8::try_from(value).unwrap_or(u8::MAX)
}

/// Python's `repr()` of a `timedelta` of whole minutes, for the offset error message.
fn python_timedelta(minutes: i32) -> String {
    let seconds = i64::from(minutes) * 60;
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    match (days, rest) {
        (0, rest) => format!("datetime.timedelta(seconds={rest})"),
        (days, 0) => format!("datetime.timedelta(days={days})"),
        (days, rest) => format!("datetime.timedelta(days={days}, seconds={rest})"),
    }
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: u8) -> u8 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_before_year(year: i64) -> i64 {
    let previous = year - 1;
    previous * 365 + previous / 4 - previous / 100 + previous / 400
}

fn days_before_month(year: i64, month: u8) -> i64 {
    (1..month)
        .map(|earlier| i64::from(days_in_month(year, earlier)))
        .sum()
}

struct Cursor<'text> {
    bytes: &'text [u8],
    position: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn at_end(&self) -> bool {
        self.position >= self.bytes.len()
    }

    fn eat(&mut self, expected: u8) -> bool {
        let found = self.peek() == Some(expected);
        if found {
            self.position += 1;
        }
        found
    }

    fn expect(&mut self, expected: u8) -> Option<()> {
        self.eat(expected).then_some(())
    }

    fn blanks(&mut self) -> usize {
        let start = self.position;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.position += 1;
        }
        self.position - start
    }

    /// Reads between `minimum` and `maximum` ASCII digits, greedily.
    fn digits(&mut self, minimum: usize, maximum: usize) -> Option<u32> {
        let start = self.position;
        let mut value = 0_u32;
        while self.position - start < maximum
            && let Some(byte) = self.peek().filter(u8::is_ascii_digit)
        {
            value = value * 10 + u32::from(byte - b'0');
            self.position += 1;
        }
        (self.position - start >= minimum).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        parse(text).map_or_else(|error| format!("error: {error}"), |value| value.to_string())
    }

    #[test]
    fn prints_dates_and_datetimes_as_python() {
        assert_eq!(shown("2024-01-01"), "2024-01-01");
        assert_eq!(shown("2001-1-2"), "2001-01-02");
        assert_eq!(
            shown("2001-12-14t21:59:43.10-05:00"),
            "2001-12-14 21:59:43.100000-05:00"
        );
        assert_eq!(
            shown("2001-12-14 21:59:43.10 Z"),
            "2001-12-14 21:59:43.100000+00:00"
        );
        assert_eq!(shown("2001-12-15 2:59:43"), "2001-12-15 02:59:43");
        assert_eq!(
            shown("2001-12-14T21:59:43.1234567+5"),
            "2001-12-14 21:59:43.123456+05:00"
        );
        assert_eq!(shown("2001-12-14 21:59:43.000"), "2001-12-14 21:59:43");
    }

    #[test]
    fn rejects_impossible_dates_as_python_does() {
        assert_eq!(shown("2024-02-30"), "error: day is out of range for month");
        assert_eq!(shown("2024-02-29"), "2024-02-29");
        assert_eq!(shown("2023-02-29"), "error: day is out of range for month");
        assert_eq!(shown("0000-01-01"), "error: year 0 is out of range");
        assert_eq!(shown("2024-13-01"), "error: month must be in 1..12");
        assert_eq!(shown("2024-01-01 24:00:00"), "error: hour must be in 0..23");
        assert!(shown("2024-01-01 10:00:00 +24").starts_with("error: offset must be"));
        assert!(shown("foo").starts_with("error: 'foo' is not a timestamp"));
    }

    #[test]
    fn equal_instants_have_equal_micros() {
        let utc = parse("2001-12-15 02:59:43Z")
            .ok()
            .map(|value| value.instant_micros());
        let eastern = parse("2001-12-14 21:59:43-05:00")
            .ok()
            .map(|value| value.instant_micros());
        assert_eq!(utc, eastern);
    }
}
