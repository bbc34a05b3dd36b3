//! What a re-cut tells the author, in one line for every way it ends, and
//! the final `verify`, which decides the exit status.

use git2::{Commit, Repository, Tree};

use super::Appended;
use crate::error::{self, Error, Result};
use crate::out::{noteln, outln};
use crate::repo::CourseRepo;
use crate::runner::DEFAULT_TIMEOUT;
use crate::verify;
use crate::worlds;

/// Where everything is after a re-cut that stopped before it staged anything.
pub const AS_THEY_WERE: &str = "the branch, the index and the work tree are all as they were";
/// Where everything is after a complete re-cut.
pub const AT_NEW: &str = "the branch, the index and the work tree are all at the new state";
/// Where everything is when the branch did not move after the index took
/// the work tree's learner files.
pub const STAGED: &str = "the branch and the work tree are as they were, and the index holds \
                          the work tree's learner files (staged, as `git add -A` would); \
                          nothing is lost";

/// `error`, saying that nothing changed unless it already says so.
pub fn unchanged(error: Error) -> Error {
    let message = error.to_string();
    if message.contains(AS_THEY_WERE) || message.to_lowercase().contains("nothing was changed") {
        error
    } else {
        error.context(format!("nothing was changed ({AS_THEY_WERE})"))
    }
}

/// Passes `error` on, unless a signal caused it: then prints it and exits
/// with 128 + the signal, so its line is the last word.
pub fn ended(error: Error) -> Error {
    if error.exit_code() <= 128 {
        return error;
    }
    noteln!("error: {error}");
    std::process::exit(i32::from(error.exit_code()))
}

/// The commits a re-cut appended, and where everything is now.
pub fn print_commits(git: &Repository, appended: &Appended) -> Result<()> {
    let shown_branch = appended.branch.trim_start_matches("refs/heads/");
    let find = |id| {
        git.find_commit(id)
            .map_err(error::git(format!("cannot read commit {id}")))
    };
    outln!(
        "Re-cut on {shown_branch}, on top of {}:",
        describe(&find(appended.old)?)
    );
    for id in &appended.commits {
        outln!("  {}", describe(&find(*id)?));
    }
    for note in &appended.notes {
        outln!("note: {note}");
    }
    outln!(
        "The re-cut is complete: {AT_NEW} (tooling files and their index entries were left \
         as they were)."
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

/// The git command that restores the work tree's learner world to `tree`
/// (of commit `short`), removing the files it lacks.
pub fn restore_command(short: &str, tree: &Tree<'_>) -> String {
    let paths: Vec<String> = tree
        .iter()
        .filter(|entry| !worlds::is_tooling(entry.name_bytes()))
        .map(|entry| String::from_utf8_lossy(entry.name_bytes()).into_owned())
        .collect();
    format!("git restore --source={short} -- {}", paths.join(" "))
}

/// `abc1234 subject`, as `git log --oneline` shows a commit.
pub fn describe(commit: &Commit<'_>) -> String {
    let subject = String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default());
    format!("{} {subject}", crate::repo::short_id(commit.id()))
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

    #[test]
    fn the_restore_command_names_only_learner_paths() {
        let dir = tempfile::tempdir().unwrap();
        let git = git2::Repository::init(dir.path()).unwrap();
        let blob = git.blob(b"x").unwrap();
        let mut builder = git.treebuilder(None).unwrap();
        for name in ["Cargo.toml", "course", "checkpoints", "xtask", "README.md"] {
            builder.insert(name, blob, crate::tree::MODE_FILE).unwrap();
        }
        let tree = git.find_tree(builder.write().unwrap()).unwrap();
        assert_eq!(
            restore_command("abc1234", &tree),
            "git restore --source=abc1234 -- Cargo.toml course"
        );
    }
}
