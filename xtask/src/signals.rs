//! SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal closed) and SIGQUIT
//! (Ctrl-\), handled so that nothing is left behind.
//!
//! Outside a [`Deferred`] section a signal ends the process at once, as it
//! would by default: there is nothing to clean up. Inside one (a child
//! process runs, a practice folder is half written, a fault is applied) the
//! handler only records the signal. The section's code notices it
//! ([`check`], [`interrupted`]), stops its children, removes what it made and
//! returns [`Error::interrupted`]; when the last section ends, the process
//! exits with 128 + the signal (130 for SIGINT, 143 for SIGTERM, 129 for
//! SIGHUP, 131 for SIGQUIT), the code a shell reports for a command the
//! signal ended.

use std::io::Write;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use libc::c_int;

use crate::error::{Error, Result};

/// The signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// How many [`Deferred`] sections are open.
static SECTIONS: AtomicUsize = AtomicUsize::new(0);

/// The signals that ask the process to stop.
const HANDLED: [c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Installs the handlers for the [`HANDLED`] signals; call once, first thing
/// in `main`. A signal this process was started with ignored (`nohup`, a
/// background job) stays ignored.
pub fn install() {
    for signal in HANDLED {
        // SAFETY: sigaction with a zeroed struct, an empty mask and a handler
        // that only touches atomics and calls `_exit`, all async-signal-safe.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handle as extern "C" fn(c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn handle(signal: c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    if SECTIONS.load(Ordering::SeqCst) == 0 {
        // SAFETY: `_exit` is async-signal-safe; nothing needs cleaning up.
        unsafe { libc::_exit(128 + signal) }
    }
}

/// The signal that asked the process to stop, if one arrived.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// True once one of the [`HANDLED`] signals arrived.
#[allow(dead_code)] // for loops that stop on their own terms (verify, check --watch)
pub fn interrupted() -> bool {
    received().is_some()
}

/// `Err(Error::interrupted(..))` once a signal arrived: put it, with `?`, in
/// every loop of a [`Deferred`] section.
pub fn check() -> Result<()> {
    match received() {
        Some(signal) => Err(Error::interrupted(signal)),
        None => Ok(()),
    }
}

/// Ends the process now with 128 + the signal if one arrived, after a line
/// on stderr. For a loop that holds nothing to undo (e.g. `--watch` between
/// runs); inside a section, return [`check`]'s error instead so cleanups run.
pub fn exit_if_interrupted() {
    if let Some(signal) = received() {
        exit_now(signal);
    }
}

/// While a value of this type lives, the [`HANDLED`] signals are recorded
/// instead of ending the process, so the code holding it can clean up.
/// Create it *before* what it protects, so it is dropped after it:
///
/// ```ignore
/// let _section = signals::defer();
/// let staging = TempDir::new()?; // removed on the way out, then we exit
/// ```
#[must_use = "the section ends when this value is dropped"]
pub struct Deferred(());

/// Opens a [`Deferred`] section.
pub fn defer() -> Deferred {
    SECTIONS.fetch_add(1, Ordering::SeqCst);
    Deferred(())
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if SECTIONS.fetch_sub(1, Ordering::SeqCst) == 1 {
            // The last section closed: everything is cleaned up.
            exit_if_interrupted();
        }
    }
}

fn exit_now(signal: i32) -> ! {
    let _ = writeln!(std::io::stderr(), "error: {}", Error::interrupted(signal));
    std::process::exit(i32::from(Error::interrupted(signal).exit_code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_those_a_shell_reports() {
        assert_eq!(Error::interrupted(libc::SIGINT).exit_code(), 130);
        assert_eq!(Error::interrupted(libc::SIGTERM).exit_code(), 143);
        assert_eq!(Error::interrupted(libc::SIGHUP).exit_code(), 129);
        assert_eq!(Error::interrupted(libc::SIGQUIT).exit_code(), 131);
        assert!(
            Error::interrupted(libc::SIGINT)
                .to_string()
                .contains("SIGINT")
        );
    }
}
