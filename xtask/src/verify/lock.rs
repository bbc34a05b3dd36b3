//! One `verify` per repository at a time, and what a killed one left behind.
//!
//! The lock is an OS lock (`flock`) on `target/xtask-verify/lock`: the OS
//! releases it when its holder dies, even by SIGKILL, so a stale lock file
//! (whatever pid it records) never stops the next run. The file records the
//! holder's pid, only to name it to a second run. It is opened without
//! following a symlink and without waiting on a FIFO; anything but a regular
//! file there is refused (exit 2).
//!
//! A verify killed by SIGKILL cannot stop the commands it started (each runs
//! in a process group of its own): cargo and a test may still run, building
//! into verify's cargo folder and holding files of the folders the next run
//! rewrites. Once it holds the lock, the next run ends every process whose
//! environment names verify's cargo folder (`CARGO_TARGET_DIR`, which only
//! verify's own commands carry); no other verify of this repository can be
//! running then.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

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

/// How long [`end_leftovers`] keeps looking for processes that are still
/// starting (a cargo that spawns a test while it is being ended).
const LEFTOVER_ROUNDS: usize = 50;

/// Ends (SIGKILL) every process of this user whose environment sets
/// `CARGO_TARGET_DIR` to `cargo_target`: what a killed verify of this
/// repository left running. Call it holding the lock. Returns how many.
pub fn end_leftovers(cargo_target: &Path) -> usize {
    let Ok(target) = std::path::absolute(cargo_target) else {
        return 0;
    };
    let mut wanted = b"CARGO_TARGET_DIR=".to_vec();
    wanted.extend_from_slice(target.as_os_str().as_encoded_bytes());
    let mut ended = 0;
    for _ in 0..LEFTOVER_ROUNDS {
        let found = processes_with(&wanted);
        if found.is_empty() {
            break;
        }
        for pid in found {
            if kill(pid) {
                ended += 1;
            }
        }
        wait_briefly();
    }
    ended
}

/// The pids whose environment holds the entry `wanted`, leaving out this
/// process and the ones that started it (a `cargo run` of xtask with that
/// variable set by hand).
fn processes_with(wanted: &[u8]) -> Vec<i32> {
    let ours = ancestry();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| !ours.contains(pid))
        .filter(|pid| {
            // Another user's environment is not readable: never theirs.
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|&byte| byte == 0)
                    .any(|entry| entry == wanted)
            })
        })
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}

/// This process and its ancestors, by pid.
fn ancestry() -> Vec<u32> {
    let mut pids = vec![std::process::id()];
    while let Some(parent) = parent_of(*pids.last().expect("never empty")) {
        if parent <= 1 || pids.contains(&parent) {
            break;
        }
        pids.push(parent);
    }
    pids
}

/// The parent of `pid`, from `/proc/PID/stat` (the field after the state,
/// which follows the command name in parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    fields.nth(1)?.parse().ok()
}

/// Sends SIGKILL to `pid`; true when it was sent.
fn kill(pid: i32) -> bool {
    rustix::process::Pid::from_raw(pid).is_some_and(|pid| {
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).is_ok()
    })
}

/// A pause for killed processes to die (their environment then reads empty).
fn wait_briefly() {
    std::thread::sleep(Duration::from_millis(20));
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

    #[test]
    fn leftovers_are_the_processes_whose_environment_names_the_cargo_folder() {
        use std::os::unix::process::ExitStatusExt;
        use std::process::Command;
        let work = tempfile::tempdir().unwrap();
        let target = work.path().join("cargo-target");
        let sleep = |target: &Path| {
            Command::new("sleep")
                .arg("120")
                .env("CARGO_TARGET_DIR", target)
                .spawn()
                .unwrap()
        };
        let mut leftover = sleep(&target);
        let mut other = sleep(&work.path().join("cargo-target-2"));
        assert_eq!(end_leftovers(&target), 1);
        assert_eq!(leftover.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert!(
            other.try_wait().unwrap().is_none(),
            "another folder's process runs on"
        );
        other.kill().unwrap();
        other.wait().unwrap();
        assert_eq!(end_leftovers(&target), 0);
    }

    #[test]
    fn this_process_and_its_ancestors_are_never_leftovers() {
        let ours = ancestry();
        assert_eq!(
            ours[..2],
            [std::process::id(), std::os::unix::process::parent_id()]
        );
        // Our parent (the test harness) started us with our environment.
        let environ = std::fs::read("/proc/self/environ").unwrap();
        let entry = environ.split(|&byte| byte == 0).next().unwrap();
        let found = processes_with(entry);
        assert!(
            ours.iter().all(|pid| !found.contains(&(*pid as i32))),
            "{found:?}"
        );
    }
}
