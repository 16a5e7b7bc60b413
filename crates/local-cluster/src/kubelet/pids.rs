//! The process kubelet's record of the container processes it runs, kept in a private file beside the state
//! file (`<state file>.pids`), so that a cluster killed without a chance to stop them (SIGKILL, a crash) finds
//! them when it starts again and stops them before its kubelet starts new ones — as a node restart takes its
//! containers down — instead of leaving a second copy of every continuous job running.
//!
//! Each line is `<pid> <start time>`: the start time (field 22 of `/proc/<pid>/stat`, clock ticks since boot)
//! tells the recorded process from an unrelated one that got its pid later, which is left alone. Every container
//! process leads its own process group, which is what gets the signals.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};

/// How long the previous life's processes get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);
/// How often their end is checked during the grace period.
const POLL: Duration = Duration::from_millis(20);

/// Where a cluster serving `state_file` records its container processes: `state.json` → `state.json.pids`.
pub(crate) fn pid_file(state_file: &Path) -> PathBuf {
    let mut path = state_file.as_os_str().to_owned();
    path.push(".pids");
    PathBuf::from(path)
}

/// A live (not zombie) process's start time.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3, the state; field 22 is then `fields[19]`.
    if fields.first() == Some(&"Z") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

fn signal_group(pid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        // Already gone is what we want.
        let _ = kill_process_group(pid, signal);
    }
}

/// The recorded processes of one kubelet.
#[derive(Debug)]
pub(crate) struct PidFile {
    path: PathBuf,
    /// What the file says, to write it only when that changes.
    written: Vec<(u32, u64)>,
}

impl PidFile {
    pub(crate) fn new(path: PathBuf) -> Self {
        PidFile {
            path,
            written: Vec::new(),
        }
    }

    /// Records `pids` (those still alive) as the running container processes.
    pub(crate) fn record(&mut self, pids: impl Iterator<Item = u32>) {
        let mut processes: Vec<(u32, u64)> = pids
            .filter_map(|pid| start_time(pid).map(|at| (pid, at)))
            .collect();
        processes.sort_unstable();
        if processes == self.written {
            return;
        }
        let text = processes.iter().fold(String::new(), |mut text, (pid, at)| {
            let _ = writeln!(text, "{pid} {at}");
            text
        });
        match crate::private_files::write(&self.path, text) {
            Ok(()) => self.written = processes,
            Err(error) => tracing::warn!(%error, path = %self.path.display(),
                "failed to record the container processes"),
        }
    }
}

/// Stops the container processes a previous life of the cluster recorded in `path` and left running: SIGTERM to
/// each process group, SIGKILL after [`GRACE`] to what is left; then forgets them.
pub(crate) async fn stop_previous(path: &Path) {
    let Ok(text) = fs::read_to_string(path) else {
        return;
    };
    let left: Vec<u32> = text
        .lines()
        .filter_map(|line| {
            let (pid, at) = line.split_once(' ')?;
            let pid: u32 = pid.parse().ok()?;
            (start_time(pid) == Some(at.parse().ok()?)).then_some(pid)
        })
        .collect();
    if !left.is_empty() {
        tracing::info!(
            count = left.len(),
            "stopping the container processes of the previous run"
        );
    }
    for pid in &left {
        signal_group(*pid, Signal::TERM);
    }
    let deadline = tokio::time::Instant::now() + GRACE;
    while left.iter().any(|pid| start_time(*pid).is_some())
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(POLL).await;
    }
    // Also the rest of each group, which may outlive its leader.
    for pid in &left {
        signal_group(*pid, Signal::KILL);
    }
    if let Err(error) = crate::private_files::write(path, "") {
        tracing::warn!(%error, "failed to clear the record of container processes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_time_identifies_a_live_process() {
        let me = std::process::id();
        let at = start_time(me).expect("this process lives");
        assert_eq!(start_time(me), Some(at));
        assert_eq!(start_time(u32::MAX), None);
    }
}
