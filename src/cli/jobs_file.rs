//! Finding and reading the jobs file: `-f FILE`, else `./jobs.yaml`, else `$HOME/jobs.yaml` (SPEC §9).

use std::fs;
use std::path::{Path, PathBuf};

use crate::cli::{Error, GlobalArgs};
use crate::config::{MAX_FILE_BYTES, SourceFile};

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

/// Reads the file, refusing oversized and non-UTF-8 files before parsing.
pub(crate) fn read(path: &Path) -> Result<SourceFile, Error> {
    let read_error = |source| Error::ReadFile {
        path: path.to_owned(),
        source,
    };
    let size = fs::metadata(path).map_err(read_error)?.len();
    if usize::try_from(size).map_or(true, |size| size > MAX_FILE_BYTES) {
        return Err(Error::FileTooLarge {
            path: path.to_owned(),
            size,
            max: MAX_FILE_BYTES,
        });
    }
    let bytes = fs::read(path).map_err(read_error)?;
    let text = String::from_utf8(bytes).map_err(|error| Error::NotUtf8 {
        path: path.to_owned(),
        offset: error.utf8_error().valid_up_to(),
    })?;
    // PyYAML skips a byte-order mark; so do we.
    let text = text
        .strip_prefix('\u{feff}')
        .map(str::to_owned)
        .unwrap_or(text);
    Ok(SourceFile::new(path.display().to_string(), text))
}

/// Counts the regular files a `trigger-files` pattern matches relative to `directory`.
pub(crate) fn count_matches(directory: &Path, pattern: &str) -> usize {
    let full = format!(
        "{}/{pattern}",
        glob::Pattern::escape(&directory.to_string_lossy())
    );
    glob::glob(&full).map_or(0, |paths| {
        paths
            .filter_map(Result::ok)
            .filter(|path| path.is_file())
            .count()
    })
}

/// The directory holding the jobs file: the base of `trigger-files` and, on the local cluster, the tool's home.
pub(crate) fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}
