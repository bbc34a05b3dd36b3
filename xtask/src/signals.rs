//! SIGINT, SIGTERM, SIGHUP and SIGQUIT: outside a [`Deferred`] section they
//! end the process; inside one they are recorded ([`check`]) and, once the
//! last section ends, the process exits with 128 + the signal.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use libc::c_int;
use rustix::process::Signal;

use crate::error::{Error, Result};

/// The signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// How many [`Deferred`] sections are open.
static SECTIONS: AtomicUsize = AtomicUsize::new(0);

const HANDLED: [Signal; 4] = [Signal::INT, Signal::TERM, Signal::HUP, Signal::QUIT];

/// Installs the handlers, first thing in `main`; an inherited SIGHUP
/// "ignore" (`nohup`) stays. Raw `sigaction`: rustix has no safe one.
pub fn install() {
    // SAFETY: sigaction(2) with zeroed (valid) structs and a handler that
    // only touches atomics and calls `_exit`, all async-signal-safe; no
    // other thread runs yet.
    unsafe {
        for signal in HANDLED.map(Signal::as_raw) {
            let mut old: libc::sigaction = std::mem::zeroed();
            let queried = libc::sigaction(signal, std::ptr::null(), &mut old) == 0;
            if signal == libc::SIGHUP && queried && old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handle as extern "C" fn(c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
        // Ignored, a write past `ulimit -f` fails with EFBIG (exit 3, cleanups
        // run) instead of ending the process mid-write; SIG_IGN survives
        // exec, so the children fail the same way.
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

extern "C" fn handle(signal: c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    if SECTIONS.load(Ordering::SeqCst) == 0 {
        // SAFETY: `_exit` is async-signal-safe and ends the process at once;
        // outside a section nothing needs cleaning up.
        unsafe { libc::_exit(128 + signal) }
    }
}

/// The signal that asked the process to stop, if one arrived.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|&signal| signal != 0)
}

/// `Err(Error::interrupted(..))` once a signal arrived.
pub fn check() -> Result<()> {
    received().map_or(Ok(()), |signal| Err(Error::interrupted(signal)))
}

/// Ends the process with 128 + the signal if one arrived, for a loop that
/// holds nothing to undo.
pub fn exit_if_interrupted() {
    if let Some(signal) = received() {
        let error = Error::interrupted(signal);
        let prefix = crate::learner_text::basic::error_prefix();
        crate::out::note(format_args!("{prefix}{error}"));
        std::process::exit(i32::from(error.exit_code()))
    }
}

/// While this lives, signals are recorded instead of ending the process;
/// create it before what it protects.
#[must_use = "the section ends when this value is dropped"]
pub struct Deferred(());

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_those_a_shell_reports() {
        let code = |signal: Signal| Error::interrupted(signal.as_raw()).exit_code();
        assert_eq!(code(Signal::INT), 130);
        assert_eq!(code(Signal::TERM), 143);
        assert_eq!(code(Signal::HUP), 129);
        assert_eq!(code(Signal::QUIT), 131);
        assert!(
            Error::interrupted(Signal::INT.as_raw())
                .to_string()
                .contains("SIGINT")
        );
    }
}
