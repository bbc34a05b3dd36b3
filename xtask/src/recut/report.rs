//! What a re-cut tells the author, and the final `verify`.
//!
//! Every way a re-cut ends says in one line where the branch, the index and
//! the work tree are: all as they were ([`AS_THEY_WERE`]) or all at the new
//! state ([`AT_NEW`]). Its exit status never depends on whether anyone reads
//! its output: when standard output is closed (`recut … | true`) or full,
//! the rest of the report (verify's table included) goes to `/dev/null`,
//! `verify` still runs, and its verdict is the exit status.

use std::fmt;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::time::Duration;

use git2::Repository;

use super::Appended;
use super::text::describe;
use crate::cli::DEFAULT_TIMEOUT_SECS;
use crate::error::{self, Error, Result};
use crate::out::{self, noteln};
use crate::repo::CourseRepo;
use crate::signals;
use crate::verify;

/// Where everything is after a re-cut that stopped before its commit point.
pub const AS_THEY_WERE: &str = "the branch, the index and the work tree are all as they were";
/// Where everything is after a complete re-cut.
pub const AT_NEW: &str = "the branch, the index and the work tree are all at the new state";

/// Standard output as the report sees it: once a write failed, everything
/// after it is discarded, and the failure is remembered.
#[derive(Default)]
pub struct Output {
    failed: Option<Error>,
}

impl Output {
    /// Writes one line; a failure sends the rest of the report nowhere.
    fn line(&mut self, args: fmt::Arguments<'_>) {
        if self.failed.is_some() {
            return;
        }
        if let Err(error) = out::write_line(args) {
            discard_stdout();
            self.failed = Some(error);
        }
    }

    /// The report's own verdict on its output: a closed stdout is no error
    /// (nobody wanted the report), a full one is (exit 1).
    pub fn finish(self) -> Result<()> {
        match self.failed {
            Some(error) if !error.is_silent() => Err(error.context(format!(
                "the re-cut is complete ({AT_NEW}), but its report could not be written"
            ))),
            _ => Ok(()),
        }
    }
}

/// Points standard output at `/dev/null`, so that later writes (verify's
/// table) succeed and nothing ends early because its output went nowhere.
fn discard_stdout() {
    let Ok(null) = OpenOptions::new().write(true).open("/dev/null") else {
        return;
    };
    // SAFETY: dup2 only replaces descriptor 1 with a duplicate of `null`,
    // which is open for the whole call; no Rust object owns descriptor 1
    // exclusively (std's stdout writes to it by number).
    unsafe {
        libc::dup2(null.as_raw_fd(), libc::STDOUT_FILENO);
    }
}

/// The commits a re-cut appended, and where everything is now.
pub fn print_commits(output: &mut Output, git: &Repository, appended: &Appended) -> Result<()> {
    let branch = &appended.branch;
    let shown_branch = branch
        .name
        .strip_prefix("refs/heads/")
        .unwrap_or(&branch.name);
    let old_head = git
        .find_commit(branch.head)
        .map_err(error::git("cannot read the old HEAD"))?;
    output.line(format_args!(
        "Re-cut on {shown_branch}, on top of {}:",
        describe(&old_head)
    ));
    for id in &appended.commits {
        let commit = git
            .find_commit(*id)
            .map_err(error::git(format!("cannot read commit {id}")))?;
        output.line(format_args!("  {}", describe(&commit)));
    }
    for note in &appended.notes {
        output.line(format_args!("note: {note}"));
    }
    output.line(format_args!(
        "The re-cut is complete: {AT_NEW} (the learner's files match HEAD; tooling files \
         and their index entries were left as they were)."
    ));
    Ok(())
}

/// Runs `verify` on every chapter; its verdict is recut's.
pub fn verify(output: &mut Output, repo: &CourseRepo) -> Result<()> {
    output.line(format_args!(""));
    output.line(format_args!(
        "Verifying every chapter (skip this with --no-verify)…"
    ));
    let options = verify::Options {
        ids: Vec::new(),
        timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
    };
    let verdict = verify::run(repo, &options).and_then(|report| report.show(false));
    let Err(error) = verdict else { return Ok(()) };
    if error.exit_code() > 128 {
        return Err(ended(error.context(format!(
            "the re-cut is complete ({AT_NEW}), but verify was interrupted"
        ))));
    }
    if error.is_silent() {
        return Err(Error::check_failed(format!(
            "the re-cut is complete ({AT_NEW}), but verify's report could not be written \
             (standard output was closed), so whether every checkpoint is honest is unknown: \
             run `cargo xtask verify`"
        )));
    }
    let what = format!("the re-cut commits are in place, but verify failed ({AT_NEW})");
    // The branch has moved, so bad input found by verify is no longer
    // "nothing was changed" (exit 2): it is a failed check (exit 1).
    Err(if error.exit_code() == 2 {
        Error::check_failed(format!("{what}: {error}"))
    } else {
        error.context(what)
    })
}

/// Passes `error` on, unless a signal caused it: then says in one line where
/// everything is and exits now with 128 + the signal, as the signal section
/// would (this way the line is the last word).
pub fn ended(error: Error) -> Error {
    if error.exit_code() <= 128 {
        return error;
    }
    let error = if error.to_string().contains(AT_NEW) {
        error
    } else {
        unchanged(error)
    };
    noteln!("error: {error}");
    std::process::exit(i32::from(error.exit_code()))
}

/// `error`, saying that nothing changed unless it already says so: for
/// every error before the work tree is touched.
pub fn unchanged(error: Error) -> Error {
    let message = error.to_string();
    if message.contains(AS_THEY_WERE) || message.to_lowercase().contains("nothing was changed") {
        error
    } else {
        error.context(format!("nothing was changed ({AS_THEY_WERE})"))
    }
}

/// Exits (as [`ended`]) when a signal arrived after the re-cut completed.
pub fn exit_if_interrupted(what: &str) {
    if let Some(signal) = signals::received() {
        ended(
            Error::interrupted(signal)
                .context(format!("the re-cut is complete ({AT_NEW}); {what}")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_stdout_is_no_error_but_a_full_one_is() {
        let closed = Output {
            failed: Some(Error::stdout(std::io::ErrorKind::BrokenPipe.into())),
        };
        assert!(closed.finish().is_ok());
        let full = Output {
            failed: Some(Error::stdout(std::io::ErrorKind::StorageFull.into())),
        };
        assert_eq!(full.finish().unwrap_err().exit_code(), 1);
        assert!(Output::default().finish().is_ok());
    }

    #[test]
    fn errors_that_are_not_signals_pass_through_unchanged() {
        let error = ended(Error::bad_input("refused; nothing was changed"));
        assert_eq!(error.exit_code(), 2);
        assert_eq!(error.to_string(), "refused; nothing was changed");
    }
}
