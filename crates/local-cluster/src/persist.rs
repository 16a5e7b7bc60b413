//! The optional state file: every object and the resourceVersion counter as one JSON document, written
//! atomically (temporary file, fsync, rename, fsync of the directory) shortly after changes and at shutdown,
//! and read back at start. Watch history is not persisted: clients resuming from an older version get 410 and
//! relist, as after a real API server's watch-cache reset. The file is private (0600): it holds every object.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::resources::{self, ResourceType};
use crate::store::Store;

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    #[serde(rename = "resourceVersion")]
    resource_version: u64,
    objects: Vec<Value>,
}

/// Restored content: the counter and the objects with their types.
pub(crate) type Restored = (u64, Vec<(&'static ResourceType, Value)>);

/// Reads a state file; a missing file is an empty state (`None`). Objects of types no longer served are skipped.
pub(crate) fn load(path: &Path) -> io::Result<Option<Restored>> {
    let text = match fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let state: StateFile =
        serde_json::from_slice(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let objects = state
        .objects
        .into_iter()
        .filter_map(|object| resources::of_object(&object).map(|r| (r, object)))
        .collect();
    Ok(Some((state.resource_version, objects)))
}

/// Writes the state atomically: readers see the old or the new file, never a partial one.
pub(crate) fn save(path: &Path, resource_version: u64, objects: Vec<Value>) -> io::Result<()> {
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
    Ok(())
}

async fn save_now(store: &Store, path: &Path) {
    let (resource_version, objects) = store.snapshot();
    let path = path.to_owned();
    let result = tokio::task::spawn_blocking(move || save(&path, resource_version, objects)).await;
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "failed to write the local cluster state file"),
        Err(e) => tracing::warn!(error = %e, "the state file writer task failed"),
    }
}

/// Saves after changes (coalescing bursts) until shutdown, then saves a last time.
pub(crate) async fn writer(store: Store, path: PathBuf, shutdown: CancellationToken) {
    let dirty = store.dirty();
    loop {
        tokio::select! {
            () = dirty.notified() => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                save_now(&store, &path).await;
            }
            () = shutdown.cancelled() => {
                save_now(&store, &path).await;
                return;
            }
        }
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
        save(&path, 42, vec![cm.clone(), unknown]).expect("saves");
        assert!(!directory.path().join("state.json.tmp").exists());
        let (rv, objects) = load(&path).expect("reads").expect("present");
        assert_eq!(rv, 42);
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].1, cm);
    }
}
