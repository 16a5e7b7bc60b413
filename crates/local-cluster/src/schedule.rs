//! CronJob schedules, checked the way the API server's cron parser (robfig/cron `ParseStandard`) checks them:
//! five fields (minute, hour, day of month, month, day of week) with lists, ranges, steps and names, or an `@`
//! descriptor. Error texts follow the parser's, since they end up in 422 messages.

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
    if let Some(descriptor) = schedule.strip_prefix('@') {
        return match descriptor {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => {
                Ok(())
            }
            every if every.starts_with("every ") => check_duration(&every["every ".len()..]),
            _ => Err(format!("unrecognized descriptor: {schedule}")),
        };
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, (min, max, names)) in fields.iter().zip(FIELDS) {
        for part in field.split(',') {
            check_range(part, min, max, names)?;
        }
    }
    Ok(())
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

fn check_range(expression: &str, min: u32, max: u32, names: &[&str]) -> Result<(), String> {
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
    if let Some(step) = range_and_step.get(1) {
        let step = number(step, &[])?;
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
    Ok(())
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
