//! The keys a job mapping may have, and what to suggest for keys it may not.
//!
//! The key set is the union of every upstream era plus our extensions (SPEC §3). Upstream parses each job with
//! argparse, which also accepts an unambiguous prefix of a long option (`comm:` for `command:`); we accept those
//! too, with a warning, so that every file upstream accepts still loads.

use std::fmt;

/// A key of a job mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Name,
    Command,
    Image,
    Schedule,
    Continuous,
    Webservice,
    Wait,
    Emails,
    Retry,
    Timeout,
    Mem,
    Cpu,
    Filelog,
    NoFilelog,
    FilelogStdout,
    FilelogStderr,
    Mount,
    Port,
    Replicas,
    HealthCheckScript,
    HealthCheckHttp,
    Publish,
    Trigger,
    TriggerFiles,
    Rerun,
    Timezone,
}

impl Key {
    /// Every key, in the order the documentation lists them.
    pub const ALL: [Key; 26] = [
        Key::Name,
        Key::Command,
        Key::Image,
        Key::Schedule,
        Key::Continuous,
        Key::Webservice,
        Key::Wait,
        Key::Emails,
        Key::Retry,
        Key::Timeout,
        Key::Mem,
        Key::Cpu,
        Key::Filelog,
        Key::NoFilelog,
        Key::FilelogStdout,
        Key::FilelogStderr,
        Key::Mount,
        Key::Port,
        Key::Replicas,
        Key::HealthCheckScript,
        Key::HealthCheckHttp,
        Key::Publish,
        Key::Trigger,
        Key::TriggerFiles,
        Key::Rerun,
        Key::Timezone,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Key::Name => "name",
            Key::Command => "command",
            Key::Image => "image",
            Key::Schedule => "schedule",
            Key::Continuous => "continuous",
            Key::Webservice => "webservice",
            Key::Wait => "wait",
            Key::Emails => "emails",
            Key::Retry => "retry",
            Key::Timeout => "timeout",
            Key::Mem => "mem",
            Key::Cpu => "cpu",
            Key::Filelog => "filelog",
            Key::NoFilelog => "no-filelog",
            Key::FilelogStdout => "filelog-stdout",
            Key::FilelogStderr => "filelog-stderr",
            Key::Mount => "mount",
            Key::Port => "port",
            Key::Replicas => "replicas",
            Key::HealthCheckScript => "health-check-script",
            Key::HealthCheckHttp => "health-check-http",
            Key::Publish => "publish",
            Key::Trigger => "trigger",
            Key::TriggerFiles => "trigger-files",
            Key::Rerun => "rerun",
            Key::Timezone => "timezone",
        }
    }

    /// Whether upstream's `run` command has this key as a long option (and so accepts abbreviations of it).
    /// `name` is a positional argument upstream; the last four are our extensions.
    fn is_upstream_option(self) -> bool {
        !matches!(
            self,
            Key::Name | Key::Trigger | Key::TriggerFiles | Key::Rerun | Key::Timezone
        )
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a key in a job mapping turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Lookup {
    Exact(Key),
    /// An unambiguous prefix of an upstream option, which argparse accepts.
    Abbreviation(Key),
    Unknown {
        help: Option<String>,
    },
}

/// Well-known mistakes and what to say about them.
const MISTAKES: &[(&str, &str)] = &[
    ("memory", "the key for memory is `mem`, e.g. `mem: 1Gi`"),
    ("env", ENVIRONMENT_HELP),
    ("envvars", ENVIRONMENT_HELP),
    ("environment", ENVIRONMENT_HELP),
    ("cmd", "the key is `command`"),
    (
        "args",
        "put the arguments into `command`, e.g. `command: ./bot.py --verbose`",
    ),
    ("cron", "the key is `schedule`, e.g. `schedule: \"@daily\"`"),
    (
        "ports",
        "the key is `port`, and a job exposes one port, e.g. `port: 8000`",
    ),
    ("retries", "the key is `retry`, a number from 0 to 5"),
    (
        "time-zone",
        "the key is `timezone`, e.g. `timezone: Europe/Berlin`",
    ),
    (
        "tz",
        "the key is `timezone`, e.g. `timezone: Europe/Berlin`",
    ),
    (
        "type",
        "the kind of job follows from its keys: `schedule` makes it scheduled, `continuous: true` continuous, neither a one-off",
    ),
    (
        "log",
        "file logging is on by default for pre-built images; use `no-filelog: true` to turn it off",
    ),
    (
        "health-check",
        "use `health-check-script` or `health-check-http`",
    ),
];

const ENVIRONMENT_HELP: &str = "environment variables are not set in jobs.yaml: store them with the envvars service \
     (`toolforge envvars create NAME VALUE`) and every job of the tool sees them";

/// Looks a key up: exact name, argparse-style abbreviation, or unknown with a suggestion.
pub(super) fn lookup(text: &str) -> Lookup {
    if let Some(key) = Key::ALL.into_iter().find(|key| key.as_str() == text) {
        return Lookup::Exact(key);
    }
    if let Some((_, help)) = MISTAKES.iter().find(|(mistake, _)| *mistake == text) {
        return Lookup::Unknown {
            help: Some((*help).to_owned()),
        };
    }
    let prefixed: Vec<Key> = Key::ALL
        .into_iter()
        .filter(|key| {
            key.is_upstream_option() && !text.is_empty() && key.as_str().starts_with(text)
        })
        .collect();
    match prefixed.as_slice() {
        [key] => return Lookup::Abbreviation(*key),
        [_, _, ..] => {
            let names: Vec<String> = prefixed.iter().map(|key| format!("`{key}`")).collect();
            return Lookup::Unknown {
                help: Some(format!("`{text}` could be any of {}", names.join(", "))),
            };
        }
        [] => {}
    }
    Lookup::Unknown {
        help: nearest(text).map(|key| format!("did you mean `{key}`?")),
    }
}

/// The known key closest to `text`, if any is close enough to be a plausible typo.
fn nearest(text: &str) -> Option<Key> {
    let lowered = text.to_lowercase().replace('_', "-");
    Key::ALL
        .into_iter()
        .map(|key| (strsim::damerau_levenshtein(&lowered, key.as_str()), key))
        .filter(|(distance, key)| {
            *distance <= (key.as_str().len() / 3).max(1) || lowered == key.as_str()
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, key)| key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_keys_are_found() {
        for key in Key::ALL {
            assert_eq!(lookup(key.as_str()), Lookup::Exact(key));
        }
    }

    #[test]
    fn unambiguous_prefixes_of_upstream_options_are_abbreviations() {
        assert_eq!(lookup("comm"), Lookup::Abbreviation(Key::Command));
        assert_eq!(lookup("cont"), Lookup::Abbreviation(Key::Continuous));
        assert_eq!(lookup("email"), Lookup::Abbreviation(Key::Emails));
        assert_eq!(lookup("time"), Lookup::Abbreviation(Key::Timeout));
    }

    #[test]
    fn ambiguous_prefixes_and_extension_prefixes_are_unknown() {
        let Lookup::Unknown { help: Some(help) } = lookup("file") else {
            panic!("`file` is ambiguous");
        };
        assert!(help.contains("`filelog-stdout`"), "{help}");
        // `name` is positional upstream and `trigger` is ours: neither has abbreviations.
        assert!(matches!(lookup("nam"), Lookup::Unknown { .. }));
        assert!(matches!(lookup("trig"), Lookup::Unknown { .. }));
    }

    #[test]
    fn known_mistakes_get_specific_help() {
        let Lookup::Unknown { help: Some(help) } = lookup("memory") else {
            panic!("`memory` is not a key");
        };
        assert!(help.contains("`mem`"));
        let Lookup::Unknown { help: Some(help) } = lookup("env") else {
            panic!("`env` is not a key");
        };
        assert!(help.contains("envvars"));
    }

    #[test]
    fn typos_get_the_nearest_key() {
        assert_eq!(
            lookup("shedule"),
            Lookup::Unknown {
                help: Some("did you mean `schedule`?".into())
            }
        );
        assert_eq!(
            lookup("filelog_stdout"),
            Lookup::Unknown {
                help: Some("did you mean `filelog-stdout`?".into())
            }
        );
        assert_eq!(lookup("xyzzy"), Lookup::Unknown { help: None });
    }
}
