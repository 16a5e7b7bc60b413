//! `@every <duration>`: the Go duration syntax robfig/cron hands to `time.ParseDuration`.

use crate::Error;

/// The units Go durations take; `ms` comes before `m` so that it is read whole.
const UNITS: [&str; 7] = ["ns", "us", "µs", "ms", "s", "m", "h"];

/// Checks a duration such as `1h30m`: numbers (with an optional fraction), each followed by a unit.
pub(crate) fn check(text: &str) -> Result<(), Error> {
    let invalid = || Error::Duration(text.to_owned());
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
        let unit = UNITS
            .iter()
            .find(|unit| rest.starts_with(**unit))
            .ok_or_else(invalid)?;
        rest = &rest[unit.len()..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_numbers_with_units() {
        for text in ["1h", "1h30m", "90s", "1.5h", "500ms", "10µs", "1us", "3ns"] {
            assert_eq!(check(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn refuses_missing_numbers_and_units() {
        for text in ["", " ", "h", "1", "1d", "1h30", "soon"] {
            assert_eq!(
                check(text),
                Err(Error::Duration(text.to_owned())),
                "{text:?}"
            );
        }
    }
}
