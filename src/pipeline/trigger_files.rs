//! Reading the files `trigger-files` patterns match, relative to the jobs file's directory: the file-system side
//! of the fingerprint (`crate::render::fingerprint` hashes what is read here).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::render::{TriggerFile, TriggerFiles};

/// Why the trigger files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TriggerFilesError {
    #[error("`{pattern}` is not a valid glob pattern")]
    Pattern {
        pattern: String,
        #[source]
        source: glob::PatternError,
    },
    #[error("failed to read `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reads the regular files each pattern matches inside `directory` (the jobs file's directory).
pub fn read_trigger_files<'a>(
    directory: &Path,
    patterns: impl IntoIterator<Item = &'a str>,
) -> Result<TriggerFiles, TriggerFilesError> {
    let mut files = TriggerFiles::default();
    for pattern in patterns.into_iter().collect::<BTreeSet<_>>() {
        let mut matched = Vec::new();
        for path in matching_files(directory, pattern)? {
            let contents = std::fs::read(&path).map_err(|source| TriggerFilesError::Read {
                path: path.clone(),
                source,
            })?;
            matched.push(TriggerFile {
                path: relative_path(directory, &path),
                contents,
            });
        }
        files.insert(pattern, matched);
    }
    Ok(files)
}

/// The regular files a `trigger-files` pattern matches below `directory` (directories are skipped).
pub fn matching_files(directory: &Path, pattern: &str) -> Result<Vec<PathBuf>, TriggerFilesError> {
    let base = glob::Pattern::escape(&directory.to_string_lossy());
    let paths =
        glob::glob(&format!("{base}/{pattern}")).map_err(|source| TriggerFilesError::Pattern {
            pattern: pattern.to_owned(),
            source,
        })?;
    let mut files = Vec::new();
    for entry in paths {
        let path = entry.map_err(|error| TriggerFilesError::Read {
            path: error.path().to_owned(),
            source: error.into(),
        })?;
        if path.is_file() {
            files.push(path);
        }
    }
    Ok(files)
}

/// `path` relative to `directory`, with `/` between components whatever the platform.
fn relative_path(directory: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(directory).unwrap_or(path);
    relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::trigger_digest;

    #[test]
    fn reads_matched_files_relative_to_the_directory() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::create_dir(directory.path().join("src")).unwrap();
        std::fs::write(directory.path().join("src/bot.py"), "print('hi')\n").unwrap();
        std::fs::write(directory.path().join("src/notes.txt"), "x").unwrap();
        std::fs::create_dir(directory.path().join("src/dir.py")).unwrap();
        let files = read_trigger_files(directory.path(), ["src/*.py", "none/*"]).unwrap();
        assert_eq!(
            files.matched_by("src/*.py").unwrap(),
            [TriggerFile {
                path: "src/bot.py".to_owned(),
                contents: b"print('hi')\n".to_vec(),
            }]
        );
        assert_eq!(files.matched_by("none/*").unwrap(), []);
        assert_eq!(files.matched_by("other"), None);
    }

    #[test]
    fn the_same_files_give_the_same_digest_in_another_directory() {
        let digests: Vec<_> = (0..2)
            .map(|_| {
                let directory = tempfile::tempdir().unwrap();
                std::fs::write(directory.path().join("a.txt"), "same").unwrap();
                let files = read_trigger_files(directory.path(), ["*.txt"]).unwrap();
                let matched: Vec<_> = files.matched_by("*.txt").unwrap().iter().collect();
                trigger_digest(None, &matched)
            })
            .collect();
        assert_eq!(digests[0], digests[1]);
    }
}
