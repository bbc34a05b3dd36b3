//! One `verify` per repository at a time, and what a killed one left behind.
//!
//! The lock is an OS lock (`flock`) on `target/xtask-verify/lock`: the OS
//! releases it when its holder dies, even by SIGKILL, so a stale lock file
//! never stops the next run. It is opened without following a symlink;
//! anything but a regular file there is refused (exit 2).

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{self, Error, Result};

/// The lock file's name in the work folder.
pub const LOCK_FILE: &str = "lock";

/// Holds the work folder's lock until dropped.
pub struct Lock {
    _file: File,
}

/// Takes the lock of the work folder `work`.
pub fn take(work: &Path) -> Result<Lock> {
    let path = work.join(LOCK_FILE);
    let file = open_regular(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(Lock { _file: file }),
        Err(TryLockError::WouldBlock) => Err(Error::bad_input(format!(
            "another `cargo xtask verify` is running in this repository (it holds {}): \
             wait for it to finish, then run verify again",
            path.display()
        ))),
        Err(TryLockError::Error(error)) => {
            Err(error::io(format!("cannot lock {}", path.display()))(error))
        }
    }
}

/// Opens (or creates) the regular file `path` for reading and writing,
/// never through a symlink at its name and never waiting on a FIFO.
fn open_regular(path: &Path) -> Result<File> {
    let refused = |what: &str| {
        Error::bad_input(format!(
            "{} is {what}: verify's lock file must be a regular file; remove it \
             (`rm {}`) and run verify again",
            path.display(),
            crate::out::shell_word(&path.display().to_string())
        ))
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(libc::ELOOP) => refused("a symlink, which verify never follows"),
            Some(libc::EISDIR) => refused("a folder"),
            Some(libc::ENXIO) => refused("not a regular file"),
            _ => error::io(format!("cannot open the lock file {}", path.display()))(error),
        })?;
    let meta = file
        .metadata()
        .map_err(error::io(format!("cannot inspect {}", path.display())))?;
    if !meta.is_file() {
        return Err(refused("not a regular file (a FIFO, a socket or a device)"));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_lock_file_is_taken_and_a_held_one_refused() {
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join(LOCK_FILE), "999999999\n").unwrap();
        let lock = take(work.path()).unwrap();
        let refused = take(work.path()).map(|_| ()).unwrap_err();
        assert_eq!(refused.exit_code(), 2);
        assert!(refused.to_string().contains("another"), "{refused}");
        drop(lock);
        assert!(take(work.path()).is_ok());
    }
}
