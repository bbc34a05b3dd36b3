//! One `verify` per repository at a time, and what a killed one left behind.
//!
//! The lock is an OS lock (`flock`) on `target/xtask-verify/lock`: the OS
//! releases it when its holder dies, even by SIGKILL, so a stale lock file
//! (whatever pid it records) never stops the next run. The file records the
//! holder's pid, only to name it to a second run. It is opened without
//! following a symlink; anything but a regular file there is refused
//! (exit 2).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::error::{self, Error, Result};

/// The lock file's name in the work folder.
pub const LOCK_FILE: &str = "lock";

/// Holds the work folder's lock until dropped.
pub struct Lock {
    _file: File,
}

/// Takes the lock of the work folder `work`, recording this process's pid.
pub fn take(work: &Path) -> Result<Lock> {
    let path = work.join(LOCK_FILE);
    let mut file = open_regular(&path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = recorded_pid(&mut file)
                .map(|pid| format!(" (pid {pid})"))
                .unwrap_or_default();
            return Err(Error::bad_input(format!(
                "another `cargo xtask verify`{holder} is running in this repository (it holds {}): \
                 wait for it to finish, then run verify again",
                path.display()
            )));
        }
        Err(TryLockError::Error(error)) => {
            return Err(error::io(format!("cannot lock {}", path.display()))(error));
        }
    }
    let pid = format!("{}\n", std::process::id());
    file.set_len(0)
        .and_then(|()| file.write_all_at(pid.as_bytes(), 0))
        .map_err(error::io(format!("cannot write {}", path.display())))?;
    Ok(Lock { _file: file })
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

/// The pid a lock file records, if it holds one.
fn recorded_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_lock_file_with_a_dead_pid_is_taken_and_records_the_new_holder() {
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join(LOCK_FILE), "999999999\n").unwrap();
        let lock = take(work.path()).unwrap();
        let recorded = std::fs::read_to_string(work.path().join(LOCK_FILE)).unwrap();
        assert_eq!(recorded, format!("{}\n", std::process::id()));
        let refused = take(work.path()).map(|_| ()).unwrap_err();
        assert_eq!(refused.exit_code(), 2);
        assert!(
            refused
                .to_string()
                .contains(&format!("(pid {})", std::process::id())),
            "{refused}"
        );
        drop(lock);
        assert!(take(work.path()).is_ok());
    }
}
