//! Finding and reading the jobs file: `-f FILE`, else `./jobs.yaml`, else `$HOME/jobs.yaml` (SPEC §9).

use std::path::{Path, PathBuf};

use crate::cli::{Error, GlobalArgs};

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

/// Reads the file's bytes ([`crate::pipeline::source::read_file`]).
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, Error> {
    crate::pipeline::source::read_file(path).map_err(|source| Error::ReadFile {
        path: path.to_owned(),
        source,
    })
}
