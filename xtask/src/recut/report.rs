//! What a re-cut tells the author, and the final `verify`.
//!
//! Every way a re-cut ends says in one line where the branch, the index and
//! the work tree are: all as they were ([`AS_THEY_WERE`]) or all at the new
//! state ([`AT_NEW`]). Its exit status never depends on whether anyone reads
//! its output: when standard output is closed (`recut … | true`) or full,
//! the rest of the report (verify's table included) is not written, `verify`
//! still runs, and its verdict is the exit status.

use git2::Repository;

use super::Appended;
use super::text::describe;
use crate::error::{self, Error, Result};
use crate::out::{self, noteln, outln};
use crate::repo::CourseRepo;
use crate::runner::DEFAULT_TIMEOUT;
use crate::signals;
use crate::verify;

/// Where everything is after a re-cut that stopped before its commit point.
pub const AS_THEY_WERE: &str = "the branch, the index and the work tree are all as they were";
/// Where everything is after a complete re-cut.
pub const AT_NEW: &str = "the branch, the index and the work tree are all at the new state";

/// After the report: a lost report (a full stdout) changes no verdict, and
/// this one line on stderr says where everything is, since the report
/// could not. (A failed write to stdout never ends a command: [`out`]
/// remembers it, so the report and verify after it carry on.)
pub fn say_if_lost() {
    if let Some(error) = out::stdout_lost() {
        noteln!(
            "note: the re-cut is complete ({AT_NEW}), but its report could not be written: \
             cannot write to standard output: {error}"
        );
        out::stdout_loss_reported();
    }
}

/// The commits a re-cut appended, and where everything is now.
pub fn print_commits(git: &Repository, appended: &Appended) -> Result<()> {
    let branch = &appended.branch;
    let shown_branch = branch
        .name
        .strip_prefix("refs/heads/")
        .unwrap_or(&branch.name);
    let old_head = git
        .find_commit(branch.head)
        .map_err(error::git("cannot read the old HEAD"))?;
    outln!(
        "Re-cut on {shown_branch}, on top of {}:",
        describe(&old_head)
    );
    for id in &appended.commits {
        let commit = git
            .find_commit(*id)
            .map_err(error::git(format!("cannot read commit {id}")))?;
        outln!("  {}", describe(&commit));
    }
    for note in &appended.notes {
        outln!("note: {note}");
    }
    outln!(
        "The re-cut is complete: {AT_NEW} (the learner's files match HEAD; tooling files \
         and their index entries were left as they were)."
    );
    Ok(())
}

/// Runs `verify` on every chapter; its verdict is recut's.
pub fn verify(repo: &CourseRepo) -> Result<()> {
    outln!();
    outln!("Verifying every chapter (skip this with --no-verify)…");
    let options = verify::Options {
        ids: Vec::new(),
        timeout: DEFAULT_TIMEOUT,
    };
    let verdict = verify::run(repo, &options).and_then(|report| report.show(false));
    let Err(error) = verdict else { return Ok(()) };
    if error.exit_code() > 128 {
        return Err(ended(error.context(format!(
            "the re-cut is complete ({AT_NEW}), but verify was interrupted"
        ))));
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
    fn errors_that_are_not_signals_pass_through_unchanged() {
        let error = ended(Error::bad_input("refused; nothing was changed"));
        assert_eq!(error.exit_code(), 2);
        assert_eq!(error.to_string(), "refused; nothing was changed");
    }
}
