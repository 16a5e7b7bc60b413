//! Files only their owner may read: the state file, keys, kubeconfigs, logs and pid files of a local cluster are
//! created 0600 in directories made 0700, whatever the umask, and files that already exist with wider modes are
//! narrowed (SPEC §10: on a shared host nobody else may read the cluster's credentials or objects).

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::Path;

/// The mode of every private file.
pub const FILE_MODE: u32 = 0o600;
/// The mode of every private directory.
pub const DIRECTORY_MODE: u32 = 0o700;

/// Creates `directory` (and missing parents) 0700; an existing directory is narrowed to 0700.
pub fn create_directory(directory: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIRECTORY_MODE)
        .create(directory)?;
    fs::set_permissions(directory, fs::Permissions::from_mode(DIRECTORY_MODE))
}

/// Opens `path` for writing, truncated, 0600 (an existing file is narrowed first).
pub fn create(path: &Path) -> io::Result<fs::File> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        // Truncated below, once the file is known to be ours.
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)?;
    // Someone else's file (made in a shared directory before us) stays readable to them whatever its mode: refuse
    // it before writing, even as root, whom fchmod would not stop.
    if file.metadata()?.uid() != rustix::process::geteuid().as_raw() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the file belongs to another user",
        ));
    }
    // `mode` applies only when the file is new; an older file keeps its mode unless narrowed here.
    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
    file.set_len(0)?;
    Ok(file)
}

/// Writes `contents` to `path` as a private file.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> io::Result<()> {
    create(path)?.write_all(contents.as_ref())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("exists").permissions().mode() & 0o777
    }

    #[test]
    fn new_and_existing_files_and_directories_become_private() {
        let root = tempfile::tempdir().expect("temp dir");
        let directory = root.path().join("a/b");
        create_directory(&directory).expect("created");
        assert_eq!(mode(&directory), 0o700);
        fs::set_permissions(&directory, fs::Permissions::from_mode(0o755)).expect("chmod");
        create_directory(&directory).expect("exists already");
        assert_eq!(mode(&directory), 0o700);

        let file = directory.join("key");
        fs::write(&file, "old").expect("written");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).expect("chmod");
        write(&file, "new").expect("rewritten");
        assert_eq!(mode(&file), 0o600);
        assert_eq!(fs::read_to_string(&file).expect("read"), "new");
    }

    #[test]
    fn another_users_file_is_not_written() {
        if !rustix::process::geteuid().is_root() {
            return; // only root can make a file that belongs to someone else
        }
        let root = tempfile::tempdir().expect("temp dir");
        let file = root.path().join("kubeconfig");
        fs::write(&file, "theirs").expect("written");
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).expect("chown");
        let error = write(&file, "secret").expect_err("refused");
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(fs::read_to_string(&file).expect("read"), "theirs");
    }
}
