//! The optional state: a snapshot file (every object and the resourceVersion counter as one JSON document,
//! written atomically: temporary file, fsync, rename, fsync of the directory) plus a write-ahead log beside it
//! (`<state file>.log`, one JSON line per committed change, in resourceVersion order).
//!
//! A write is acknowledged only once durable: the store hands every committed change to the [`Journal`] under
//! its lock (so the log's order is the resourceVersion order), a writer thread appends what has accumulated and
//! fsyncs it once for all of it (group commit: writes in flight together share one fsync), and the API waits for
//! that before it responds ([`crate::registry::store::Store::durable`]). A kill at any moment therefore loses no
//! acknowledged write, and what it loses is always a suffix of the history. The log is folded into the snapshot
//! when it outgrows it, at start and at shutdown; start loads the snapshot, then replays the log's changes newer
//! than the snapshot, ignoring a torn last line (the write the kill interrupted, never acknowledged).
//!
//! Watch history is not persisted: clients resuming from an older version get 410 and relist, as after a real
//! API server's watch-cache reset. Both files are private (0600): they hold every object.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::registry::api_error::ApiError;
use crate::registry::meta;
use crate::registry::store::{Change, EventType, Store};

/// The log is folded into the snapshot once it is larger than the snapshot and than this, so rewriting the
/// snapshot costs a bounded multiple of what was appended.
const COMPACT_AT_LEAST: u64 = 1 << 20;

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    #[serde(rename = "resourceVersion")]
    resource_version: u64,
    objects: Vec<Value>,
}

/// One line of the log.
#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(rename = "resourceVersion")]
    resource_version: u64,
    /// `ADDED`, `MODIFIED` or `DELETED`, as in watch events.
    #[serde(rename = "type")]
    event: String,
    object: Value,
}

/// Restored content: the counter and the objects (their types are resolved by the store, which knows the
/// custom ones only once the definitions are loaded).
pub(crate) type Restored = (u64, Vec<Value>);

/// Identifies a stored object without knowing its type: the group of its `apiVersion`, its kind (unique in
/// a group, and objects are stored in one version), namespace and name.
fn identity(object: &Value) -> (String, String, String, String) {
    let text = |path: &[&str]| meta::str_at(object, path).unwrap_or_default().to_owned();
    let api_version = text(&["apiVersion"]);
    let group = api_version
        .rsplit_once('/')
        .map_or(String::new(), |(group, _)| group.to_owned());
    (
        group,
        text(&["kind"]),
        text(&["metadata", "namespace"]),
        text(&["metadata", "name"]),
    )
}

/// The write-ahead log of a state file: `state.json` → `state.json.log`.
fn log_path(state_file: &Path) -> PathBuf {
    let mut path = state_file.as_os_str().to_owned();
    path.push(".log");
    PathBuf::from(path)
}

fn invalid(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error)
}

/// Reads the snapshot and replays the log; nothing at all is an empty state (`None`).
pub(crate) fn load(path: &Path) -> io::Result<Option<Restored>> {
    let snapshot = match fs::read(path) {
        Ok(text) => Some(serde_json::from_slice::<StateFile>(&text).map_err(invalid)?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let log = match fs::read(log_path(path)) {
        Ok(log) => log,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    if snapshot.is_none() && log.is_empty() {
        return Ok(None);
    }
    let mut resource_version = snapshot.as_ref().map_or(0, |s| s.resource_version);
    let mut objects: BTreeMap<_, Value> = snapshot
        .into_iter()
        .flat_map(|s| s.objects)
        .map(|object| (identity(&object), object))
        .collect();
    let mut lines = log.split(|byte| *byte == b'\n').peekable();
    while let Some(line) = lines.next() {
        if lines.peek().is_none() {
            // After the last newline: empty, or the line a kill interrupted before its fsync (never acknowledged).
            if !line.is_empty() {
                tracing::warn!(
                    bytes = line.len(),
                    "ignoring the torn last line of the state log"
                );
            }
            break;
        }
        let entry: Entry = serde_json::from_slice(line).map_err(invalid)?;
        // Changes the snapshot already holds (a kill between writing it and emptying the log) are skipped.
        if entry.resource_version <= resource_version {
            continue;
        }
        resource_version = entry.resource_version;
        let key = identity(&entry.object);
        if entry.event == EventType::Deleted.as_str() {
            objects.remove(&key);
        } else {
            objects.insert(key, entry.object);
        }
    }
    Ok(Some((resource_version, objects.into_values().collect())))
}

/// Writes the snapshot atomically (readers see the old or the new file, never a partial one); returns its size.
pub(crate) fn save(path: &Path, resource_version: u64, objects: Vec<Value>) -> io::Result<u64> {
    let text = serde_json::to_vec(&StateFile {
        resource_version,
        objects,
    })
    .map_err(io::Error::other)?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let mut file = crate::private_files::create(&temporary)?;
    file.write_all(&text)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temporary, path)?;
    if let Some(directory) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Makes the rename itself durable; not every platform can open a directory, which is fine.
        if let Ok(directory) = fs::File::open(directory) {
            let _ = directory.sync_all();
        }
    }
    Ok(u64::try_from(text.len()).unwrap_or(u64::MAX))
}

/// How far the log is durable.
#[derive(Debug, Clone, Default)]
struct Durability {
    /// Every change up to this resourceVersion is durable.
    up_to: u64,
    /// Why the last write to disk failed; cleared once a later one succeeds.
    error: Option<Arc<str>>,
    /// The writer stopped: nothing queued from now on becomes durable.
    closed: bool,
}

/// Changes committed but not yet written.
#[derive(Debug, Default)]
struct Queue {
    changes: Vec<Arc<Change>>,
    stop: bool,
}

/// The store's side of the journal: where committed changes go, and how far they are durable.
#[derive(Debug)]
pub(crate) struct Journal {
    queue: Mutex<Queue>,
    wake: Condvar,
    durable: watch::Sender<Durability>,
}

impl Journal {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // The queue is a plain list: a panic elsewhere cannot leave it half-changed.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues committed changes for the log; called under the store lock, so in resourceVersion order.
    pub(crate) fn append(&self, changes: &[Arc<Change>]) {
        self.queue().changes.extend(changes.iter().cloned());
        self.wake.notify_one();
    }

    /// Waits until every change up to `resource_version` is durable.
    pub(crate) async fn wait(&self, resource_version: u64) -> Result<(), ApiError> {
        let mut durable = self.durable.subscribe();
        let state = durable
            .wait_for(|d| d.up_to >= resource_version || d.error.is_some() || d.closed)
            .await
            .map_err(|_| ApiError::internal("the state file writer stopped"))?;
        if state.up_to >= resource_version {
            return Ok(());
        }
        Err(ApiError::internal(match &state.error {
            Some(error) => format!("the write could not be persisted: {error}"),
            None => "the state file writer stopped".to_owned(),
        }))
    }

    fn report(&self, result: io::Result<u64>) {
        self.durable.send_modify(|d| match result {
            Ok(up_to) => {
                d.up_to = d.up_to.max(up_to);
                d.error = None;
            }
            Err(error) => {
                tracing::warn!(%error, "failed to write the local cluster state");
                d.error = Some(Arc::from(error.to_string()));
            }
        });
    }
}

/// The running writer of a state file; [`Writer::close`] compacts a last time.
#[derive(Debug)]
pub(crate) struct Writer {
    journal: Arc<Journal>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// Folds the restored state into a fresh snapshot, empties the log and starts journaling the store's changes.
    pub(crate) fn start(store: &Store, path: PathBuf) -> io::Result<Writer> {
        let journal = Arc::new(Journal {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            durable: watch::Sender::new(Durability::default()),
        });
        store.attach_journal(Arc::clone(&journal));
        let log = crate::private_files::create(&log_path(&path))?;
        let mut thread = LogThread {
            store: store.clone(),
            journal: Arc::clone(&journal),
            path,
            log,
            log_bytes: 0,
            snapshot_bytes: 0,
            broken: false,
        };
        thread.compact()?;
        let thread = std::thread::Builder::new()
            .name("state-log".to_owned())
            .spawn(move || thread.run())?;
        Ok(Writer {
            journal,
            thread: Some(thread),
        })
    }

    /// Writes what is queued, folds the log into the snapshot and stops.
    pub(crate) async fn close(mut self) {
        self.journal.queue().stop = true;
        self.journal.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            // A panicked writer has nothing left to save.
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

impl Drop for Writer {
    /// A cluster dropped without shutdown still stops its writer (which saves on its way out).
    fn drop(&mut self) {
        self.journal.queue().stop = true;
        self.journal.wake.notify_one();
    }
}

/// The writer thread's state.
struct LogThread {
    store: Store,
    journal: Arc<Journal>,
    path: PathBuf,
    log: fs::File,
    log_bytes: u64,
    snapshot_bytes: u64,
    /// The last write failed: the log may miss changes, so only a full snapshot can make the state whole again.
    broken: bool,
}

impl LogThread {
    fn run(mut self) {
        loop {
            let (batch, stop) = {
                let mut queue = self.journal.queue();
                while queue.changes.is_empty() && !queue.stop {
                    queue = self
                        .journal
                        .wake
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                (std::mem::take(&mut queue.changes), queue.stop)
            };
            let grown = self.log_bytes > COMPACT_AT_LEAST.max(self.snapshot_bytes);
            if stop || grown || self.broken {
                if let Err(error) = self.compact() {
                    self.broken = true;
                    self.journal.report(Err(error));
                }
            } else if let Some(last) = batch.last() {
                let result = self.append(&batch).map(|()| last.resource_version);
                self.broken = result.is_err();
                self.journal.report(result);
            }
            if stop {
                self.journal.durable.send_modify(|d| d.closed = true);
                return;
            }
        }
    }

    /// Appends changes to the log and fsyncs it once for all of them.
    fn append(&mut self, changes: &[Arc<Change>]) -> io::Result<()> {
        let mut text = Vec::new();
        for change in changes {
            // The stored text, shared with the store and every watch that sends the change.
            let object = change.json();
            text.extend_from_slice(
                format!(
                    "{{\"resourceVersion\":{},\"type\":\"{}\",\"object\":{object}}}\n",
                    change.resource_version,
                    change.event.as_str()
                )
                .as_bytes(),
            );
        }
        self.log.write_all(&text)?;
        self.log.sync_data()?;
        self.log_bytes += u64::try_from(text.len()).unwrap_or(u64::MAX);
        Ok(())
    }

    /// Writes the snapshot of the whole store and empties the log. The snapshot and the queue are taken under
    /// the store lock, so the snapshot holds exactly the queued changes and those before them.
    fn compact(&mut self) -> io::Result<()> {
        let (resource_version, objects) = self.store.read(|inner| {
            let objects = inner.all().map(|(_, object)| object).collect();
            self.journal.queue().changes.clear();
            (inner.resource_version(), objects)
        });
        self.snapshot_bytes = save(&self.path, resource_version, objects)?;
        self.log.set_len(0)?;
        self.log.rewind()?;
        self.log.sync_all()?;
        self.log_bytes = 0;
        self.broken = false;
        self.journal.report(Ok(resource_version));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn saves_atomically_and_loads_back() {
        let directory = tempfile::tempdir().expect("temp dir");
        let path = directory.path().join("state.json");
        assert!(load(&path).expect("missing is fine").is_none());
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}});
        let unknown = json!({"apiVersion": "x/v1", "kind": "Widget", "metadata": {"name": "w"}});
        save(&path, 42, vec![cm.clone(), unknown.clone()]).expect("saves");
        assert!(!directory.path().join("state.json.tmp").exists());
        let (rv, objects) = load(&path).expect("reads").expect("present");
        assert_eq!(rv, 42);
        assert_eq!(
            objects,
            [cm.clone(), unknown],
            "types are the store's business"
        );
        let store = Store::new(10, crate::clock::Clock::default());
        store.restore(rv, objects);
        let configmaps = crate::registry::resources::find("", "v1", "configmaps").expect("served");
        assert_eq!(store.list(configmaps).len(), 1);
        assert_eq!(
            store.read(|s| s.all().count()),
            1,
            "objects of types not served are skipped"
        );
    }

    #[test]
    fn the_log_replays_over_the_snapshot_and_a_torn_last_line_is_ignored() {
        let directory = tempfile::tempdir().expect("temp dir");
        let path = directory.path().join("state.json");
        let cm = |name: &str, rv: u64| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default", "resourceVersion": rv.to_string()}})
        };
        save(&path, 10, vec![cm("old", 5), cm("gone", 6)]).expect("saves");
        let line = |rv: u64, event: &str, object: &Value| {
            format!("{{\"resourceVersion\":{rv},\"type\":\"{event}\",\"object\":{object}}}\n")
        };
        let log = [
            // Already in the snapshot: skipped, or "old" would lose its newer state.
            line(9, "DELETED", &cm("old", 9)),
            line(11, "ADDED", &cm("new", 11)),
            line(12, "DELETED", &cm("gone", 12)),
            "{\"resourceVersion\":13,\"type\":\"ADD".to_owned(),
        ]
        .concat();
        fs::write(log_path(&path), log).expect("written");
        let (rv, objects) = load(&path).expect("reads").expect("present");
        assert_eq!(rv, 12);
        let names: Vec<&str> = objects.iter().map(crate::registry::meta::name).collect();
        assert_eq!(names, ["new", "old"]);

        fs::write(log_path(&path), "not json\n").expect("written");
        assert_eq!(
            load(&path)
                .expect_err("a complete bad line is corruption")
                .kind(),
            io::ErrorKind::InvalidData
        );
    }
}
