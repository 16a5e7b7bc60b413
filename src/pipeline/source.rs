//! Where a plan's jobs come from: the jobs file, the tool it belongs to, and the directory its relative paths
//! (`trigger-files`, file logs) start from; reading the file (never blocking on a FIFO or device) and loading its
//! content against an image table.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::trigger_files::matching_files;
use crate::config::diagnostic::render as render_problems;
use crate::config::image::ImageTable;
use crate::config::{self, Context, JobsFile};
use crate::model::ToolName;

/// Reads a jobs file's bytes, at most one byte more than a jobs file may have, so that a huge file is refused
/// without reading it all; a FIFO, a device or a directory is refused without blocking on it.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    read_regular(path, config::MAX_FILE_BYTES as u64 + 1)
}

/// Reads at most `limit` bytes of the regular file at `path` (through symlinks). Anything else is refused with
/// [`std::io::ErrorKind::InvalidInput`] and never blocks: the file is opened non-blocking and checked after it is
/// open, so a FIFO put there in the meantime does not block either (opening a FIFO to read waits for a writer).
fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use rustix::fs::{Mode, OFlags};
    let file = std::fs::File::from(rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "it is {}, not a regular file: a jobs file must be a regular file (or a symlink to one)",
                kind_of(kind)
            ),
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a file that is not a regular file is, for messages.
fn kind_of(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Where the jobs come from.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub tool: ToolName,
    /// The file's directory, absolute.
    pub directory: PathBuf,
}

impl Source {
    /// Reads the jobs file (see [`read_file`]).
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        read_file(&self.path)
    }

    /// The jobs file `path` of `tool`.
    pub fn new(path: PathBuf, tool: ToolName) -> Self {
        let directory = directory_of(&path);
        // The local cluster's pods run in the directory: it must not depend on where they are started from.
        let directory = std::path::absolute(&directory).unwrap_or(directory);
        Self {
            path,
            tool,
            directory,
        }
    }

    /// Loads `bytes` (the file's content) with `images`. An invalid file gives every problem, rendered (in
    /// colour when `color`). With `allow_empty` an empty list (`[]`) is a file without jobs.
    pub fn load(
        &self,
        bytes: &[u8],
        images: &ImageTable,
        allow_empty: bool,
        color: bool,
    ) -> Result<JobsFile, String> {
        let count_trigger_files = |pattern: &str| count_matches(&self.directory, pattern);
        let context = Context {
            tool: self.tool.as_str(),
            images,
            count_trigger_files: Some(&count_trigger_files),
        };
        let loaded = config::decode(self.path.display().to_string(), bytes.to_vec())
            .and_then(|source| config::load(source, &context));
        match loaded {
            Ok(file) => Ok(file),
            Err(invalid)
                if allow_empty
                    && invalid.problems.iter().all(|problem| {
                        !problem.is_error() || problem.code == config::EMPTY_LIST
                    }) =>
            {
                Ok(JobsFile {
                    source: invalid.source,
                    jobs: Vec::new(),
                    warnings: invalid
                        .problems
                        .into_iter()
                        .filter(|problem| !problem.is_error())
                        .collect(),
                })
            }
            Err(invalid) => Err(render_problems(&invalid.source, &invalid.problems, color)),
        }
    }
}

/// Counts the regular files a `trigger-files` pattern matches relative to `directory`; an unreadable match
/// counts as none, so validation reports the pattern.
pub fn count_matches(directory: &Path, pattern: &str) -> usize {
    matching_files(directory, pattern).map_or(0, |files| files.len())
}

/// The directory holding the jobs file: the base of `trigger-files` and, on the local cluster, the tool's home.
pub fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}
