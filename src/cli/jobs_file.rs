//! Finding and reading the jobs file: `-f FILE`, else `./jobs.yaml`, else `$HOME/jobs.yaml` (SPEC §9).

use std::path::{Path, PathBuf};

use crate::cli::{Error, GlobalArgs};
use crate::config::MAX_FILE_BYTES;
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
