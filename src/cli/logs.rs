//! `toolforge-jobs logs NAME [--follow] [-l N]`: what a job printed.
//!
//! With file logging on (the default for pre-built images) the output is in the job's log files in the tool's
//! home (`NAME.out`, `NAME.err`, or `filelog-stdout`/`filelog-stderr`), read from the paths the live object
//! names, the stdout file to our stdout and the stderr file to our stderr (one file for both goes to stdout);
//! `--follow` keeps reading what is appended, as `tail -f` does. Without file logging the pods' logs are read
//! through the API (`pods/log`), every pod of the job oldest first, as upstream's logs lines:
//! `<time> [<pod>] [<container>] <message>`; `--follow` follows them until the containers stop. `--since` and
//! `--until` (a time, or a duration before now, as upstream's) keep the pods' lines written in that window; log
//! files have no times, so they are printed whole, with a warning.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use futures::StreamExt as _;
use jiff::Timestamp;

use crate::cli::live_jobs::{self, LiveJob, LiveNamespace};
use crate::cli::{Error, GlobalArgs};
use crate::output::{ExitStatus, Printer};
use crate::pipeline::pod_logs::{self, LogTime, Window};

/// How often `--follow` looks for new lines in a log file.
const FILE_FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The job's name
    #[arg(value_parser = crate::cli::job_name)]
    pub name: String,

    /// Keep printing new lines as they are written (upstream's `-f`; here `-f` is the global `--file`)
    #[arg(long)]
    pub follow: bool,

    /// Only the last N lines (of each file, or of each pod)
    #[arg(short = 'l', long = "last", value_name = "N")]
    pub last: Option<usize>,

    /// Only pod log lines from this time on: RFC 3339 (`2026-03-02T21:29:55+01:00`) or a duration ago (`1h32m`)
    #[arg(long, value_name = "TIME", value_parser = parse_log_time)]
    pub since: Option<LogTime>,

    /// Only pod log lines up to this time: RFC 3339 or a duration ago, as `--since`
    #[arg(long, value_name = "TIME", value_parser = parse_log_time)]
    pub until: Option<LogTime>,
}

fn parse_log_time(text: &str) -> Result<LogTime, String> {
    LogTime::parse(text)
}

pub(crate) async fn run(
    global: &GlobalArgs,
    args: &LogsArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let live = live_jobs::read(global).await?;
    let job = live_jobs::job(&live, &args.name)?;
    let canonical = &job.read_back.job;
    if canonical.filelog {
        if args.since.is_some() || args.until.is_some() {
            printer.message(
                "warning: `--since` and `--until` apply to pod logs only; log files have no times: printing them whole\n",
            )?;
        }
        let mut files: Vec<(PathBuf, Stream)> = [
            (&canonical.filelog_stdout, Stream::Stdout),
            (&canonical.filelog_stderr, Stream::Stderr),
        ]
        .into_iter()
        .filter_map(|(path, stream)| Some((PathBuf::from(path.as_ref()?), stream)))
        .collect();
        // One file for both streams is the job's output: it goes to stdout.
        files.dedup_by(|later, earlier| later.0 == earlier.0);
        return file_logs(&files, args, printer).await;
    }
    pod_logs(&live, &job, args, printer).await
}

/// Where a log file is printed: the job's stdout file to our stdout, its stderr file to our stderr, so that
/// `2>/dev/null` or `2>errors.log` keeps the two apart as they were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn print(self, printer: Printer, text: &str) -> std::io::Result<()> {
        match self {
            Stream::Stdout => printer.data(text),
            Stream::Stderr => printer.message(text),
        }
    }
}

/// The job's log files, each to its [`Stream`]: each one's (last) lines, then with `--follow` what gets appended
/// to any of them.
async fn file_logs(
    files: &[(PathBuf, Stream)],
    args: &LogsArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let mut offsets = Vec::new();
    for (path, stream) in files {
        if !path.exists() {
            printer.message(&format!("no log at {} yet\n", path.display()))?;
            offsets.push(0);
            continue;
        }
        let text = read_from(path, 0).await.map_err(|source| Error::ReadFile {
            path: path.clone(),
            source,
        })?;
        stream.print(
            printer,
            &last_lines(&String::from_utf8_lossy(&text), args.last),
        )?;
        offsets.push(text.len() as u64);
    }
    if !args.follow {
        return Ok(ExitStatus::Success);
    }
    loop {
        tokio::time::sleep(FILE_FOLLOW_INTERVAL).await;
        for ((path, stream), offset) in files.iter().zip(&mut offsets) {
            let appended = read_from(path, *offset)
                .await
                .map_err(|source| Error::ReadFile {
                    path: path.clone(),
                    source,
                })?;
            *offset += appended.len() as u64;
            stream.print(printer, &String::from_utf8_lossy(&appended))?;
        }
    }
}

/// The bytes of `path` after `offset`; nothing when it does not exist (yet), everything when it was truncated.
async fn read_from(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    let path = path.to_owned();
    let read = move || {
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let length = file.metadata()?.len();
        file.seek(SeekFrom::Start(if length < offset { 0 } else { offset }))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    tokio::task::spawn_blocking(read)
        .await
        .map_err(std::io::Error::other)?
}

/// The last `count` lines of `text` (all without a count), each ending in a newline.
fn last_lines(text: &str, count: Option<usize>) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let skip = count.map_or(0, |count| lines.len().saturating_sub(count));
    lines[skip..]
        .iter()
        .flat_map(|line| [*line, "\n"])
        .collect()
}

/// The pods' logs through the API, every pod's in turn, or all of them at once with `--follow`.
async fn pod_logs(
    live: &LiveNamespace,
    job: &LiveJob,
    args: &LogsArgs,
    printer: Printer,
) -> Result<ExitStatus, Error> {
    let pods = pod_logs::pods(live, job);
    if pods.is_empty() {
        return Err(Error::NoLogs {
            name: job.name().to_owned(),
        });
    }
    let now = Timestamp::now();
    let window = Window {
        since: args.since.map(|since| since.at(now)),
        until: args.until.map(|until| until.at(now)),
    };
    let params = window.params(args.follow, args.last, now);
    let streams = pod_logs::streams(live, &pods, &params, window)
        .await
        .map_err(|error| Error::PodLog {
            pod: error.pod,
            source: error.source,
        })?;
    // Without `--follow` every stream ends: print them pod after pod. With `--follow`, as the lines come.
    let mut merged = if args.follow {
        futures::stream::select_all(streams).boxed()
    } else {
        futures::stream::iter(streams).flatten().boxed()
    };
    while let Some(entry) = merged.next().await {
        let entry = entry.map_err(|error| Error::PodLog {
            pod: error.pod,
            source: error.source,
        })?;
        printer.data(&format!("{}\n", entry.line()))?;
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines("a\nb\nc\n", Some(2)), "b\nc\n");
        assert_eq!(last_lines("a\nb", None), "a\nb\n");
        assert_eq!(last_lines("", Some(3)), "");
    }
}
