//! File logging keys (`filelog`, `no-filelog`, `filelog-stdout`, `filelog-stderr`) and `trigger-files`.
//!
//! Upstream pastes the log paths unquoted into the container's shell command (`exec 1>>PATH;…`), so a path
//! with a shell metacharacter would run code or break the command: such paths are refused here, and the render
//! stays upstream's, byte for byte. Paths that leave the tool's home are allowed, with a warning.

use crate::config::diagnostic::Problem;
use crate::config::fields::{Entry, Fields, Flag};
use crate::config::image::ImageName;
use crate::config::job::{FileLog, JobKind, Mount};
use crate::config::keys::Key;

use super::Context;

pub(super) fn file_log(fields: &Fields<'_>, tool: &str, problems: &mut Vec<Problem>) -> FileLog {
    let filelog = fields.flag(Key::Filelog, Some("yes"), problems);
    let no_filelog = fields.flag(Key::NoFilelog, Some("true"), problems);
    let enabled = match (filelog, no_filelog) {
        (Flag::Set, Flag::Set) => {
            let entry = fields.get(Key::NoFilelog);
            problems.push(
                Problem::error(
                    "jobs::conflicting_keys",
                    entry.map_or(fields.span.clone(), |entry| entry.range()),
                    "`filelog` and `no-filelog` cannot both be set",
                )
                .with_label("conflicts with `filelog`")
                .with_help("keep one of the two"),
            );
            None
        }
        (Flag::Set, _) => Some(true),
        (_, Flag::Set) => Some(false),
        _ => None,
    };
    let mut path = |key| {
        let (text, entry) = fields.text(key, problems)?;
        check_log_path(key, &text, entry, tool, problems).then_some(text)
    };
    FileLog {
        enabled,
        stdout: path(Key::FilelogStdout),
        stderr: path(Key::FilelogStderr),
    }
}

/// Whether a character may appear in a log path pasted into a shell command: letters, digits and punctuation
/// that no POSIX shell gives a meaning to outside the start of a word.
fn is_plain(c: char) -> bool {
    c.is_alphanumeric() || "._/~+-@,=%:".contains(c)
}

/// Checks a `filelog-stdout`/`filelog-stderr` path: an error (and `false`) when it would not stay one word in
/// the shell; a warning when it leaves the tool's home `/data/project/<tool>` (relative paths start there).
fn check_log_path(
    key: Key,
    path: &str,
    entry: Entry<'_>,
    tool: &str,
    problems: &mut Vec<Problem>,
) -> bool {
    if let Some(bad) = path.chars().find(|c| !is_plain(*c)) {
        problems.push(
            Problem::error(
                "jobs::unsafe_log_path",
                entry.value_range(),
                format!("`{key}` path `{path}` contains {}, which the job's shell would interpret", describe(bad)),
            )
            .with_label("not a plain path")
            .with_help(
                "the path is pasted into the job's shell command as it is: use only letters, digits and \
                 `. _ / ~ + - @ , = % :`, e.g. `logs/bot.out`",
            ),
        );
        return false;
    }
    let home = format!("/data/project/{tool}");
    if !stays_in(&home, path) {
        problems.push(
            Problem::warning(
                "jobs::log_outside_home",
                entry.value_range(),
                format!("`{key}` path `{path}` is outside the tool's home `{home}`"),
            )
            .with_label("outside the home")
            .with_help(
                "the job can only write where the tool may; write a path relative to the home, e.g. `logs/bot.out`",
            ),
        );
    }
    true
}

/// Whether `path` (absolute, or relative to `home`) stays under `home` once `.` and `..` are resolved.
fn stays_in(home: &str, path: &str) -> bool {
    let relative = if path.starts_with('/') {
        match path.strip_prefix(home) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => return false,
        }
    } else {
        path
    };
    let mut depth: usize = 0;
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return false,
            },
            _ => depth += 1,
        }
    }
    true
}

/// A character for a message: visible ones quoted, the others by their code point.
fn describe(c: char) -> String {
    if c.is_whitespace() || c.is_control() {
        format!("the character U+{:04X}", u32::from(c))
    } else {
        format!("`{c}`")
    }
}

/// Upstream's sentence for file logging without `mount: all`.
pub const FILELOG_NEEDS_MOUNT: &str = "File logging is only available with --mount=all";

pub(super) fn check_file_log(
    fields: &Fields<'_>,
    kind: &JobKind,
    file_log: &FileLog,
    image: Option<&(String, ImageName)>,
    mount: Option<(Mount, Entry<'_>)>,
    problems: &mut Vec<Problem>,
) {
    if matches!(kind, JobKind::Webservice(_)) {
        for key in [
            Key::Filelog,
            Key::NoFilelog,
            Key::FilelogStdout,
            Key::FilelogStderr,
        ] {
            if let Some(entry) = fields.get(key) {
                problems.push(
                    Problem::error(
                        "jobs::not_for_kind",
                        entry.range(),
                        format!("`{key}` is not valid for webservice jobs"),
                    )
                    .with_label("webservice jobs log to the web service's log")
                    .with_help(format!("remove `{key}`")),
                );
            }
        }
        return;
    }
    if file_log.enabled != Some(true) {
        return;
    }
    // Upstream's jobs-api refuses file logging without the tool's storage with 400 and these words.
    match mount {
        Some((Mount::None, entry)) => problems.push(
            Problem::error(
                "jobs::filelog_needs_mount",
                entry.range(),
                FILELOG_NEEDS_MOUNT,
            )
            .with_label("log files live on the tool's storage, which `mount: none` leaves out")
            .with_help("use `mount: all`, or remove `filelog: true`"),
        ),
        None if image.is_some_and(|(_, name)| name.is_build_service()) => {
            if let Some(entry) = fields.get(Key::Filelog) {
                // A build-service image mounts nothing by default, and the log files live on the tool's storage.
                problems.push(
                    Problem::error(
                        "jobs::filelog_needs_mount",
                        entry.range(),
                        FILELOG_NEEDS_MOUNT,
                    )
                    .with_label("needs `mount: all`")
                    .with_help(
                        "build-service images do not mount the tool's storage, where log files live, unless told \
                         to: add `mount: all` to this job, or remove `filelog: true`",
                    ),
                );
            }
        }
        _ => {}
    }
}

pub(super) fn trigger_files(
    fields: &Fields<'_>,
    context: &Context<'_>,
    problems: &mut Vec<Problem>,
) -> Vec<String> {
    let Some((globs, _)) = fields.strings(Key::TriggerFiles, problems) else {
        return Vec::new();
    };
    let mut valid = Vec::with_capacity(globs.len());
    for (glob, span) in globs {
        let problem = if glob.is_empty() {
            Some("an empty pattern matches nothing")
        } else if glob.starts_with('/') {
            Some("patterns are relative to the directory of the jobs file")
        } else if glob.split('/').any(|part| part == "..") {
            Some("patterns may not leave the directory of the jobs file")
        } else if glob::Pattern::new(&glob).is_err() {
            Some("not a valid glob pattern")
        } else if context
            .count_trigger_files
            .is_some_and(|count| count(&glob) == 0)
        {
            Some("matches no files")
        } else {
            None
        };
        match problem {
            Some(message) => problems.push(
                Problem::error("jobs::invalid_trigger_files", span, format!("`trigger-files` entry `{glob}`: {message}"))
                    .with_label("invalid pattern")
                    .with_help("write paths or globs relative to the jobs file, e.g. `requirements.txt` or `src/**/*.py`"),
            ),
            None => valid.push(glob),
        }
    }
    valid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_pass_and_shell_syntax_does_not() {
        for path in [
            "bot.out",
            "logs/bot-1.out",
            "/data/project/t/x.err",
            "~x",
            "a+b@c,d=e%f:g",
            "überwachung.log",
        ] {
            assert!(path.chars().all(is_plain), "{path}");
        }
        for path in [
            "x.out; touch /tmp/INJECTED",
            "$HOME/x",
            "`id`",
            "a b",
            "x|y",
            "x&",
            "a>b",
            "x'y",
            "x\"y",
            "a\\b",
            "a*",
            "a?",
            "(x)",
            "a\nb",
            "a#b",
        ] {
            assert!(!path.chars().all(is_plain), "{path}");
        }
    }

    #[test]
    fn paths_leaving_the_home_are_found() {
        let home = "/data/project/t";
        for path in [
            "x.out",
            "logs/../x.out",
            "./a/b",
            "/data/project/t/x",
            "/data/project/t",
        ] {
            assert!(stays_in(home, path), "{path}");
        }
        for path in [
            "../x.out",
            "a/../../x",
            "/tmp/x.out",
            "/data/project/tx/y",
            "/data/project/t/../u/x",
        ] {
            assert!(!stays_in(home, path), "{path}");
        }
    }
}
