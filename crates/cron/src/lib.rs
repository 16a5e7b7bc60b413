//! `toolforge-cron`: cron schedules the way Kubernetes reads them.
//!
//! The API server and the CronJob controller parse `spec.schedule` with robfig/cron's standard parser: five fields
//! (minute, hour, day of month, month, day of week) with lists, ranges, steps, month and day names and `*`/`?`, or
//! one of the `@` descriptors. This crate is that reading, shared by everything in toolforge-jobs that looks at a
//! CronJob's schedule:
//!
//! - [`check`] says whether the API server accepts a schedule, with the parser's own error text (the local
//!   cluster's 422s);
//! - [`Schedule::parse`] gives the minutes a schedule runs at, [`Schedule::matches`] tests one (the local cluster's
//!   CronJob controller) and [`Schedule::next_after`] finds the next run in a time zone (`status`);
//! - [`Field`] and [`descriptor`] are the generic cron knowledge other dialects build on.
//!
//! It is not upstream's dialect: the jobs.yaml loader (`toolforge_jobs::config::schedule`) accepts less, words its
//! errors like upstream's jobs-api and spreads `@` macros over their period; what it produces is an expression this
//! crate reads. Nothing here knows about Kubernetes objects, YAML or the clock.
//!
//! ```
//! use jiff::{Timestamp, tz::TimeZone};
//! use toolforge_cron::Schedule;
//!
//! assert!(toolforge_cron::check("@every 90m").is_ok());
//! let error = toolforge_cron::check("0 24 * * *").unwrap_err();
//! assert_eq!(error.to_string(), "end of range (24) above maximum (23): 24");
//!
//! let weekdays = Schedule::parse("30 6 * * mon-fri")?;
//! let friday_evening: Timestamp = "2026-12-04T18:00:00Z".parse()?;
//! let next = weekdays.next_after(friday_evening, &TimeZone::get("Europe/Berlin")?);
//! assert_eq!(next.map(|time| time.to_string()).as_deref(), Some("2026-12-07T05:30:00Z"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod every;
mod field;
mod schedule;

pub use self::field::Field;
pub use self::schedule::{Error, Schedule, Sunday};

/// The `@` descriptors robfig/cron expands, and the five fields each stands for.
const DESCRIPTORS: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

/// The five-field expression a descriptor such as `@daily` stands for, matched exactly (case-sensitively, as
/// robfig/cron does); `None` for anything else, `@every` included.
pub fn descriptor(name: &str) -> Option<&'static str> {
    DESCRIPTORS
        .iter()
        .find(|(descriptor, _)| *descriptor == name)
        .map(|(_, fields)| *fields)
}

/// Checks a schedule the way the API server does: everything [`Schedule::parse`] reads, plus `@every <duration>`
/// with a Go duration (`@every 1h30m`).
///
/// `@every` is only validated: it runs at an interval from the previous run, not at calendar minutes, so it has no
/// [`Schedule`].
pub fn check(text: &str) -> Result<(), Error> {
    match text.strip_prefix("@every ") {
        Some(duration) => every::check(duration),
        None => Schedule::parse(text).map(drop),
    }
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
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/-2 * * * *", "negative number (-2) not allowed: -2"),
            ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
            ("@often", "unrecognized descriptor: @often"),
            ("@Daily", "unrecognized descriptor: @Daily"),
            (
                "@every soon",
                "failed to parse duration @every soon: time: invalid duration \"soon\"",
            ),
            (
                "@every 1d",
                "failed to parse duration @every 1d: time: invalid duration \"1d\"",
            ),
        ];
        for (schedule, message) in cases {
            assert_eq!(
                check(schedule).map_err(|error| error.to_string()),
                Err(message.to_owned()),
                "{schedule}"
            );
        }
    }

    #[test]
    fn descriptors_stand_for_five_fields() {
        assert_eq!(descriptor("@daily"), Some("0 0 * * *"));
        assert_eq!(descriptor("@annually"), descriptor("@yearly"));
        assert_eq!(descriptor("@every 1h"), None);
        for (name, fields) in DESCRIPTORS {
            assert!(Schedule::parse(fields).is_ok(), "{name}");
        }
    }
}
