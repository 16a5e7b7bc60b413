//! Finding and reading the jobs file: `-f FILE`, else `./jobs.yaml`, else `$HOME/jobs.yaml` (SPEC §9).

use std::path::{Path, PathBuf};

use crate::cli::{Error, GlobalArgs};
use crate::config::MAX_FILE_BYTES;
use crate::render::fingerprint::matching_files;
use crate::watch::files::read_regular;

/// The path of the jobs file the command should use.
pub(crate) fn locate(global: &GlobalArgs) -> Result<PathBuf, Error> {
    if let Some(file) = &global.file {
        return Ok(file.clone());
    }
    let mut searched = vec![PathBuf::from("jobs.yaml")];
    if let Some(home) = std::env::var_os("HOME") {
        searched.push(Path::new(&home).join("jobs.yaml"));
    }
    searched
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .ok_or(Error::NoJobsFile { searched })
}

/// Reads the file's bytes, at most one byte more than a jobs file may have, so that a huge file is refused
/// without reading it all; a FIFO, a device or a directory is refused without blocking on it.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, Error> {
    read_regular(path, MAX_FILE_BYTES as u64 + 1).map_err(|source| Error::ReadFile {
        path: path.to_owned(),
        source,
    })
}

/// Counts the regular files a `trigger-files` pattern matches relative to `directory`; an unreadable match
/// counts as none, so validation reports the pattern.
pub(crate) fn count_matches(directory: &Path, pattern: &str) -> usize {
    matching_files(directory, pattern).map_or(0, |files| files.len())
}

/// The directory holding the jobs file: the base of `trigger-files` and, on the local cluster, the tool's home.
pub(crate) fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}
