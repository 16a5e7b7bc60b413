//! CronJob schedules, read the way the API server reads them (robfig/cron's `ParseStandard`). The parser is the
//! workspace's `toolforge-cron` crate, which `status` and the jobs.yaml loader's tests share; this module only fits
//! it to the local cluster: validation puts the parser's message into a 422, the CronJob controller tests minutes
//! against a [`Schedule`].

pub(crate) use toolforge_cron::Schedule;

/// Checks a schedule; the error is the parser's message.
pub(crate) fn check(schedule: &str) -> Result<(), String> {
    toolforge_cron::check(schedule).map_err(|error| error.to_string())
}

/// Parses a schedule (five fields or a descriptor other than `@every`, which only [`check`] accepts).
pub(crate) fn parse(schedule: &str) -> Result<Schedule, toolforge_cron::Error> {
    Schedule::parse(schedule)
}
