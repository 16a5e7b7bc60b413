//! Where a plan's jobs come from: the jobs file, the tool it belongs to, and the directory its relative paths
//! (`trigger-files`, file logs) start from; and loading the file's content against an image table.

use std::path::{Path, PathBuf};

use super::trigger_files::matching_files;
use crate::config::diagnostic::render as render_problems;
use crate::config::image::ImageTable;
use crate::config::{self, Context, JobsFile};
use crate::model::ToolName;

/// Where the jobs come from.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub tool: ToolName,
    /// The file's directory, absolute.
    pub directory: PathBuf,
}

impl Source {
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
