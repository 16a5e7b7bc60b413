//! Changes to the jobs file and its trigger files, from the file system.
//!
//! The *directory* is watched, not the file: editors save by writing a temporary file and renaming it over the
//! old one (a new inode: a watch on the file itself would go deaf) or by truncating and writing in place; both
//! show up as events on the file's name in its directory. Reads (ours included) and metadata changes are not
//! changes. Only the jobs file and files matching a `trigger-files` pattern count; anything else in the
//! directory (a tool's home also holds its jobs' logs) is ignored. The watch is not recursive: trigger files in
//! subdirectories are picked up by the periodic resync.
//!
//! A jobs file that is a symlink is watched through to its target: the target's directory is watched too, so
//! that an edit of the target is seen at once, and the link is resolved again whenever it changes.
//!
//! Where notifications do not work — NFS, where the file is written on another machine, as on Toolforge — the
//! file itself is read once per interval instead (`--poll`), by path, and compared with what it held; no API
//! request.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// The changed paths that matter, as they happen.
pub(super) struct FileEvents {
    receiver: mpsc::UnboundedReceiver<PathBuf>,
    /// Dropping it stops the watch.
    watcher: Option<RecommendedWatcher>,
    /// When the jobs file is a symlink: its target (resolved) and whether the target's directory is watched.
    target: Option<(PathBuf, bool)>,
    /// The task polling the file (`--poll`), stopped on drop.
    poller: Option<tokio::task::JoinHandle<()>>,
    directory: PathBuf,
    file_name: Option<std::ffi::OsString>,
    patterns: Vec<glob::Pattern>,
}

impl FileEvents {
    /// Watches the directory of `file` (or polls `file` every `poll`).
    pub(super) fn start(file: &Path, poll: Option<Duration>) -> Result<Self, notify::Error> {
        let file = std::path::absolute(file)?;
        let directory = file
            .parent()
            .map_or_else(|| PathBuf::from("/"), Path::to_owned);
        let (sender, receiver) = mpsc::unbounded_channel();
        let notified = sender.clone();
        let handler = move |result: notify::Result<Event>| match result {
            Ok(event) if is_change(event.kind) => {
                for path in event.paths {
                    // The receiver is gone only when the daemon is ending.
                    let _ = notified.send(path);
                }
            }
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "file watch error"),
        };
        let (watcher, poller) = if let Some(interval) = poll {
            (
                None,
                Some(tokio::spawn(poll_file(file.clone(), interval, sender))),
            )
        } else {
            let mut watcher = RecommendedWatcher::new(handler, notify::Config::default())?;
            watcher.watch(&directory, RecursiveMode::NonRecursive)?;
            (Some(watcher), None)
        };
        let mut events = Self {
            receiver,
            watcher,
            target: None,
            poller,
            directory,
            file_name: file.file_name().map(ToOwned::to_owned),
            patterns: Vec::new(),
        };
        events.follow_link();
        Ok(events)
    }

    /// The jobs file's path in its directory.
    fn file(&self) -> Option<PathBuf> {
        self.file_name
            .as_ref()
            .map(|name| self.directory.join(name))
    }

    /// Resolves the jobs file when it is a symlink, and watches the target's directory instead of the previous
    /// target's (if any). A link that cannot be resolved (dangling, not there yet) is resolved again when it
    /// changes.
    fn follow_link(&mut self) {
        let Some(file) = self.file() else { return };
        let target = std::fs::symlink_metadata(&file)
            .is_ok_and(|metadata| metadata.file_type().is_symlink())
            .then(|| std::fs::canonicalize(&file).ok())
            .flatten();
        if self.target.as_ref().map(|(path, _)| path) == target.as_ref() {
            return;
        }
        if let Some((old, true)) = self.target.take()
            && let (Some(watcher), Some(directory)) = (&mut self.watcher, old.parent())
            && let Err(error) = watcher.unwatch(directory)
        {
            tracing::debug!(%error, directory = %directory.display(), "cannot stop watching the old link target");
        }
        self.target = target.map(|target| {
            let directory = target.parent().map(Path::to_owned);
            let watched = match (&mut self.watcher, directory) {
                (Some(watcher), Some(directory)) if directory != self.directory => {
                    match watcher.watch(&directory, RecursiveMode::NonRecursive) {
                        Ok(()) => true,
                        Err(error) => {
                            tracing::warn!(%error, directory = %directory.display(), "cannot watch the directory of the jobs file's target; its edits are seen at the next resync");
                            false
                        }
                    }
                }
                _ => false,
            };
            (target, watched)
        });
    }

    /// Sets the `trigger-files` patterns (relative to the directory) whose files count as changes; invalid
    /// patterns were reported by validation and are skipped.
    pub(super) fn set_patterns(&mut self, patterns: &[String]) {
        self.patterns = patterns
            .iter()
            .filter_map(|pattern| glob::Pattern::new(pattern).ok())
            .collect();
    }

    /// The next changed path that matters; `None` once the watch ended. Cancel-safe.
    pub(super) async fn changed(&mut self) -> Option<PathBuf> {
        loop {
            let path = self.receiver.recv().await?;
            if self.file().as_ref() == Some(&path) {
                // The link itself changed: it may point elsewhere now.
                self.follow_link();
            }
            if self.matters(&path) {
                return Some(path);
            }
        }
    }

    fn matters(&self, path: &Path) -> bool {
        if path.file_name() == self.file_name.as_deref() && path.parent() == Some(&self.directory) {
            return true;
        }
        if self
            .target
            .as_ref()
            .is_some_and(|(target, _)| target == path)
        {
            return true;
        }
        let Ok(relative) = path.strip_prefix(&self.directory) else {
            return false;
        };
        self.patterns
            .iter()
            .any(|pattern| pattern.matches_path(relative))
    }
}

impl Drop for FileEvents {
    fn drop(&mut self) {
        if let Some(poller) = &self.poller {
            poller.abort();
        }
    }
}

/// Reads `file` every `interval` and reports it when its content (or its absence) changed. By path, so a rename
/// over it is seen like a write.
async fn poll_file(file: PathBuf, interval: Duration, sender: mpsc::UnboundedSender<PathBuf>) {
    // NFS reads can block: off the runtime's threads.
    let read = |file: PathBuf| async move {
        tokio::task::spawn_blocking(move || crate::pipeline::source::read_file(&file).ok())
            .await
            .ok()
            .flatten()
    };
    let mut last = read(file.clone()).await;
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let now = read(file.clone()).await;
        if now != last {
            last = now;
            if sender.send(file.clone()).is_err() {
                return;
            }
        }
    }
}

/// Whether an event can have changed a file's content: not reads, not metadata.
fn is_change(kind: EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Any
        | EventKind::Create(_)
        | EventKind::Modify(_)
        | EventKind::Remove(_)
        | EventKind::Other => true,
    }
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, DataChange, MetadataKind, RemoveKind, RenameMode};

    use super::*;

    #[test]
    fn reads_and_metadata_are_not_changes() {
        let changes = [
            EventKind::Create(CreateKind::File),
            EventKind::Modify(ModifyKind::Data(DataChange::Any)),
            EventKind::Modify(ModifyKind::Name(RenameMode::To)),
            EventKind::Remove(RemoveKind::File),
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
        ];
        let not_changes = [
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
        ];
        assert!(changes.into_iter().all(is_change));
        assert!(!not_changes.into_iter().any(is_change));
    }

    #[tokio::test]
    async fn only_the_jobs_file_and_trigger_files_matter() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("jobs.yaml");
        let mut events = FileEvents::start(&file, None).unwrap();
        events.set_patterns(&["*.sql".to_owned()]);
        let directory = std::path::absolute(directory.path()).unwrap();
        assert!(events.matters(&directory.join("jobs.yaml")));
        assert!(events.matters(&directory.join("schema.sql")));
        assert!(!events.matters(&directory.join("bot.out")));
        assert!(!events.matters(&directory.join("jobs.yaml.swp")));
        assert!(!events.matters(Path::new("/elsewhere/jobs.yaml")));
    }
}
