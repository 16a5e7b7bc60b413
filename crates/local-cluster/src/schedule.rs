//! CronJob schedules, checked the way the API server's cron parser (robfig/cron `ParseStandard`) checks them:
//! five fields (minute, hour, day of month, month, day of week) with lists, ranges, steps and names, or an `@`
//! descriptor. Error texts follow the parser's, since they end up in 422 messages. [`parse`] also gives the
//! CronJob controller the set of matching minutes.

/// Field bounds and the names each field accepts.
const FIELDS: [(u32, u32, &[&str]); 5] = [
    (0, 59, &[]),
    (0, 23, &[]),
    (1, 31, &[]),
    (
        1,
        12,
        &[
            "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
        ],
    ),
    (0, 6, &["sun", "mon", "tue", "wed", "thu", "fri", "sat"]),
];

/// Checks a schedule; the error is the parser's message.
pub(crate) fn check(schedule: &str) -> Result<(), String> {
    match schedule.strip_prefix('@') {
        Some(every) if every.starts_with("every ") => check_duration(&every["every ".len()..]),
        _ => parse(schedule).map(|_| ()),
    }
}

/// The minutes a schedule matches: one bit per allowed value of each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    fields: [u64; 5],
    /// Whether day of month and day of week were `*`/`?`: if both are restricted, either may match.
    day_of_month_any: bool,
    day_of_week_any: bool,
}

impl Schedule {
    /// Whether the schedule fires at this wall-clock minute.
    pub(crate) fn matches(&self, time: jiff::civil::DateTime) -> bool {
        let bit = |field: usize, value: i8| {
            u32::try_from(value).is_ok_and(|v| self.fields[field] & (1 << v) != 0)
        };
        let day_of_month = bit(2, time.day());
        let day_of_week = bit(4, time.weekday().to_sunday_zero_offset());
        let day = if self.day_of_month_any || self.day_of_week_any {
            day_of_month && day_of_week
        } else {
            day_of_month || day_of_week
        };
        bit(0, time.minute()) && bit(1, time.hour()) && bit(3, time.month()) && day
    }
}

/// Parses a schedule (five fields or a descriptor other than `@every`, which only [`check`] accepts).
pub(crate) fn parse(schedule: &str) -> Result<Schedule, String> {
    let expanded = match schedule.strip_prefix('@') {
        Some("yearly" | "annually") => "0 0 1 1 *",
        Some("monthly") => "0 0 1 * *",
        Some("weekly") => "0 0 * * 0",
        Some("daily" | "midnight") => "0 0 * * *",
        Some("hourly") => "0 * * * *",
        Some(_) => return Err(format!("unrecognized descriptor: {schedule}")),
        None => schedule,
    };
    let fields: Vec<&str> = expanded.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let mut bits = [0_u64; 5];
    // A field is "any" when it is `*` or `?` without a step, as robfig/cron's star bit says.
    let mut any = [false; 5];
    for (index, (field, (min, max, names))) in fields.iter().zip(FIELDS).enumerate() {
        for part in field.split(',') {
            let (start, end, step) = check_range(part, min, max, names)?;
            any[index] |= step == 1 && (part.starts_with('*') || part.starts_with('?'));
            for value in (start..=end).step_by(usize::try_from(step).unwrap_or(usize::MAX)) {
                bits[index] |= 1 << value;
            }
        }
    }
    Ok(Schedule {
        fields: bits,
        day_of_month_any: any[2],
        day_of_week_any: any[4],
    })
}

fn number(text: &str, names: &[&str]) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    if let Some(index) = names.iter().position(|n| *n == lower) {
        // Month names start at 1, weekday names at 0.
        let offset = u32::from(names.len() == 12);
        return u32::try_from(index)
            .map(|i| i + offset)
            .map_err(|e| e.to_string());
    }
    match text.parse::<i64>() {
        Ok(value) if value < 0 => Err(format!("negative number ({value}) not allowed: {text}")),
        Ok(value) => u32::try_from(value)
            .map_err(|_| format!("failed to parse int from {text}: value out of range")),
        Err(_) => Err(format!(
            "failed to parse int from {text}: strconv.Atoi: parsing \"{text}\": invalid syntax"
        )),
    }
}

/// Checks one range of a field; returns its start, end and step.
fn check_range(
    expression: &str,
    min: u32,
    max: u32,
    names: &[&str],
) -> Result<(u32, u32, u32), String> {
    let range_and_step: Vec<&str> = expression.split('/').collect();
    if range_and_step.len() > 2 {
        return Err(format!("too many slashes: {expression}"));
    }
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
        (min, max)
    } else {
        let start = number(low_and_high[0], names)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, number(low_and_high[1], names)?),
            _ => return Err(format!("too many hyphens: {expression}")),
        }
    };
    let mut step = 1;
    if let Some(text) = range_and_step.get(1) {
        step = number(text, &[])?;
        if low_and_high.len() == 1 && !matches!(low_and_high[0], "*" | "?") {
            end = max;
        }
        if step == 0 {
            return Err(format!(
                "step of range should be a positive number: {expression}"
            ));
        }
    }
    if start < min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({min}): {expression}"
        ));
    }
    if end > max {
        return Err(format!(
            "end of range ({end}) above maximum ({max}): {expression}"
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expression}"
        ));
    }
    Ok((start, end, step))
}

/// Go duration syntax for `@every`: numbers with units `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`.
fn check_duration(text: &str) -> Result<(), String> {
    let invalid =
        || format!("failed to parse duration @every {text}: time: invalid duration \"{text}\"");
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(invalid());
        }
        rest = &rest[digits..];
        let unit = ["ns", "us", "µs", "ms", "s", "m", "h"]
            .iter()
            .find(|u| rest.starts_with(**u))
            .ok_or_else(invalid)?;
        rest = &rest[unit.len()..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_the_api_server_accepts() {
        for schedule in [
            "* * * * *",
            "*/5 0-6 1,15 JAN-mar sun",
            "0 3 * * 1-5",
            "5/10 * * * ?",
            "@daily",
            "@every 1h30m",
        ] {
            assert_eq!(check(schedule), Ok(()), "{schedule}");
        }
    }

    #[test]
    fn schedules_match_the_minutes_cron_runs_them() {
        let at = |text: &str| text.parse::<jiff::civil::DateTime>().expect("valid time");
        let every_five = parse("*/5 * * * *").expect("valid");
        assert!(every_five.matches(at("2026-03-02T10:05")));
        assert!(!every_five.matches(at("2026-03-02T10:06")));
        // 2026-03-02 is a Monday: with both day fields restricted, either matches.
        let either = parse("0 0 15 * mon").expect("valid");
        assert!(either.matches(at("2026-03-02T00:00")));
        assert!(either.matches(at("2026-03-15T00:00")));
        assert!(!either.matches(at("2026-03-03T00:00")));
        // With a step the day-of-week field is not a star, so either day matches again.
        let stepped = parse("0 0 1 * */2").expect("valid");
        assert!(stepped.matches(at("2026-03-03T00:00")), "Tuesday is day 2");
        assert!(
            parse("@hourly")
                .expect("valid")
                .matches(at("2026-03-03T07:00"))
        );
        assert!(parse("@every 1h").is_err(), "only check accepts @every");
    }

    #[test]
    fn refuses_with_the_parser_messages() {
        let cases = [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("61 * * * *", "end of range (61) above maximum (59): 61"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-3 * * * *",
                "beginning of range (5) beyond end of range (3): 5-3",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            ("1/2/3 * * * *", "too many slashes: 1/2/3"),
            ("@often", "unrecognized descriptor: @often"),
        ];
        for (schedule, message) in cases {
            assert_eq!(check(schedule), Err(message.to_owned()), "{schedule}");
        }
        assert!(check("@every soon").is_err());
    }
}
