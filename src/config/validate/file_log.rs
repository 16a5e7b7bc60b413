//! File logging keys (`filelog`, `no-filelog`, `filelog-stdout`, `filelog-stderr`) and `trigger-files`.

use crate::config::diagnostic::Problem;
use crate::config::fields::{Entry, Fields, Flag};
use crate::config::image::ImageName;
use crate::config::job::{FileLog, JobKind, Mount};
use crate::config::keys::Key;

use super::Context;

pub(super) fn file_log(fields: &Fields<'_>, problems: &mut Vec<Problem>) -> FileLog {
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
    FileLog {
        enabled,
        stdout: fields
            .text(Key::FilelogStdout, problems)
            .map(|(text, _)| text),
        stderr: fields
            .text(Key::FilelogStderr, problems)
            .map(|(text, _)| text),
    }
}

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
    match mount {
        Some((Mount::None, entry)) => problems.push(
            Problem::error(
                "jobs::filelog_needs_mount",
                entry.range(),
                "file logging requires `mount: all`",
            )
            .with_label("log files live on the tool's storage, which `mount: none` leaves out")
            .with_help("use `mount: all`, or remove `filelog: true`"),
        ),
        None if image.is_some_and(|(_, name)| name.is_build_service()) => {
            if let Some(entry) = fields.get(Key::Filelog) {
                // Upstream's jobs-api refuses this with 400 and these words: a build-service image mounts
                // nothing by default, and the log files live on the tool's storage.
                problems.push(
                    Problem::error(
                        "jobs::filelog_needs_mount",
                        entry.range(),
                        "File logging is only available with --mount=all",
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
