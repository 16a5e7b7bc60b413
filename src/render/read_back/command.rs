//! Reading a container command back into the job's command and log paths, in every format upstream ever wrote.
//!
//! - current (v2) and `command-new-format` v1 objects with file logging:
//!   `["/bin/sh", "-c", "--", "exec 1>>OUT;exec 2>>ERR;CMD"]`;
//! - legacy v1 objects: `CMD 1>>OUT 2>>ERR` inside the shell, where `/dev/null` for both means "no file log";
//! - no file logging: `["/bin/sh", "-c", "--", "CMD"]`, or for build-service images the `launcher …` words;
//! - anything else (hand-written): the words joined with shell quoting.
//!
//! Relative log paths are resolved against the home, as the shell would (its working directory).

use crate::render::canonical::{absolute_in, without_launcher};
use crate::render::command::SHELL;
use crate::render::shell;

/// The command and log paths found in a container command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct ParsedCommand {
    pub(super) command: Option<String>,
    /// Both paths, when the command logs to files.
    pub(super) logs: Option<(String, String)>,
}

/// How the object says its command is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CommandFormat {
    /// Label `jobs.toolforge.org/filelog: yes`, or the v1 label `jobs.toolforge.org/command-new-format: yes`.
    pub(super) filelog_label: bool,
    /// Label `app.kubernetes.io/version` is `1` (or missing, which upstream reads as `1`).
    pub(super) legacy: bool,
    pub(super) build_service: bool,
}

/// Parses `command` + `args` of a container.
pub(super) fn parse(words: &[String], format: CommandFormat, home: &str) -> ParsedCommand {
    let shell_text = match words {
        [a, b, c, text]
            if [a, b, c]
                .iter()
                .zip(SHELL)
                .all(|(word, expected)| *word == expected) =>
        {
            Some(text.as_str())
        }
        [a, b, text] if a == SHELL[0] && b == SHELL[1] => Some(text.as_str()),
        _ => None,
    };
    let parsed = match shell_text {
        Some(text) if format.filelog_label || format.legacy => new_format(text, home)
            .or_else(|| format.legacy.then(|| legacy_format(text, home)).flatten())
            .unwrap_or_else(|| plain(text)),
        Some(text) => plain(text),
        None if words.is_empty() => ParsedCommand::default(),
        None => plain(&shell::join(words)),
    };
    if format.build_service {
        ParsedCommand {
            command: parsed
                .command
                .map(|command| without_launcher(&command).to_owned()),
            ..parsed
        }
    } else {
        parsed
    }
}

fn plain(text: &str) -> ParsedCommand {
    ParsedCommand {
        command: Some(text.to_owned()),
        logs: None,
    }
}

/// `exec 1>>OUT;exec 2>>ERR;CMD`; the command may itself contain `;`.
fn new_format(text: &str, home: &str) -> Option<ParsedCommand> {
    let mut parts = text.splitn(3, ';');
    let stdout = parts.next()?.strip_prefix("exec 1>>")?;
    let stderr = parts.next()?.strip_prefix("exec 2>>")?;
    let command = parts.next().unwrap_or_default();
    Some(ParsedCommand {
        command: Some(command.to_owned()),
        logs: Some((absolute_in(home, stdout), absolute_in(home, stderr))),
    })
}

/// `CMD 1>>OUT 2>>ERR`, the format before 2022.
fn legacy_format(text: &str, home: &str) -> Option<ParsedCommand> {
    let (rest, stderr) = text.rsplit_once(" 2>>")?;
    let (command, stdout) = rest.rsplit_once(" 1>>")?;
    let (stdout, stderr) = (stdout.trim(), stderr.trim());
    let logs = if stdout == "/dev/null" && stderr == "/dev/null" {
        None
    } else {
        Some((absolute_in(home, stdout), absolute_in(home, stderr)))
    };
    Some(ParsedCommand {
        command: Some(command.to_owned()),
        logs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: &str = "/data/project/mytool";

    fn words(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    fn format(filelog_label: bool, legacy: bool, build_service: bool) -> CommandFormat {
        CommandFormat {
            filelog_label,
            legacy,
            build_service,
        }
    }

    #[test]
    fn reads_the_file_logging_wrapper() {
        let parsed = parse(
            &words(&[
                "/bin/sh",
                "-c",
                "--",
                "exec 1>>/data/project/mytool/bot.out;exec 2>>logs/bot.err;cd src; ./bot.py",
            ]),
            format(true, false, false),
            HOME,
        );
        assert_eq!(parsed.command.as_deref(), Some("cd src; ./bot.py"));
        assert_eq!(
            parsed.logs,
            Some((
                "/data/project/mytool/bot.out".to_owned(),
                "/data/project/mytool/logs/bot.err".to_owned()
            ))
        );
    }

    #[test]
    fn reads_the_plain_shell_wrapper() {
        let parsed = parse(
            &words(&["/bin/sh", "-c", "--", "./bot.py --x"]),
            format(false, false, false),
            HOME,
        );
        assert_eq!(
            parsed,
            ParsedCommand {
                command: Some("./bot.py --x".into()),
                logs: None
            }
        );
    }

    #[test]
    fn reads_legacy_redirections_and_dev_null() {
        let logged = parse(
            &words(&["/bin/sh", "-c", "--", "./run.sh 1>>task.out 2>>task.err"]),
            format(false, true, false),
            HOME,
        );
        assert_eq!(logged.command.as_deref(), Some("./run.sh"));
        assert_eq!(
            logged.logs,
            Some((
                "/data/project/mytool/task.out".into(),
                "/data/project/mytool/task.err".into()
            ))
        );
        let silent = parse(
            &words(&["/bin/sh", "-c", "--", "./run.sh 1>>/dev/null 2>>/dev/null"]),
            format(false, true, false),
            HOME,
        );
        assert_eq!(
            silent,
            ParsedCommand {
                command: Some("./run.sh".into()),
                logs: None
            }
        );
    }

    #[test]
    fn build_service_commands_lose_the_launcher() {
        let split = parse(
            &words(&["launcher", "bot", "--lang", "a b"]),
            format(false, false, true),
            HOME,
        );
        assert_eq!(split.command.as_deref(), Some("bot --lang 'a b'"));
        let wrapped = parse(
            &words(&[
                "/bin/sh",
                "-c",
                "--",
                "exec 1>>/x.out;exec 2>>/x.err;launcher bot",
            ]),
            format(true, false, true),
            HOME,
        );
        assert_eq!(wrapped.command.as_deref(), Some("bot"));
    }

    #[test]
    fn hand_written_commands_are_joined() {
        let parsed = parse(
            &words(&["python3", "bot.py", "a b"]),
            format(false, false, false),
            HOME,
        );
        assert_eq!(parsed.command.as_deref(), Some("python3 bot.py 'a b'"));
        assert_eq!(
            parse(&[], format(false, false, false), HOME),
            ParsedCommand::default()
        );
    }
}
