//! `recut NN`: re-cuts chapter NN from the work tree and replays every later
//! chapter on git's plumbing ([`git`]); see AUTHORING.md, "Re-cutting a chapter".

mod git;
mod plan;
mod report;

use std::path::Path;

use git2::{ErrorCode, Oid, Repository, RepositoryState};

use self::git::{Git, on_learner};
use self::report::{AT_NEW, STAGED, unchanged};
use crate::chapter;
use crate::cli;
use crate::error::{self, Error, Result};
use crate::out::noteln;
use crate::repo::{CourseRepo, short_id};
use crate::signals;

/// What git says when it refuses to update the work tree (and wrote nothing).
/// (`would be overwritten`, `would be removed`, `would be lost`.)
const REFUSED: [&str; 3] = ["not uptodate", "would be ", "index.lock"];

/// What a completed re-cut appended, for the report.
struct Appended {
    /// The branch's full name (`refs/heads/main`) and its old head.
    branch: String,
    old: Oid,
    commits: Vec<Oid>,
    notes: Vec<String>,
}

impl cli::Recut {
    /// Runs the command: appends the commits, moves branch, index and work tree, verifies.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        // From here on a signal is recorded, not fatal: recut stops at the
        // next step before the commit point, or finishes after it.
        let _section = signals::defer();
        let appended = self.cut(repo).map_err(report::ended)?;
        report::print_commits(&repo.git, &appended)?;
        if let Some(signal) = signals::received() {
            let at = format!("the re-cut is complete ({AT_NEW}); verify did not run");
            return Err(report::ended(Error::interrupted(signal).context(at)));
        }
        if !self.no_verify {
            report::verify(repo)?;
        }
        // A lost report (a full stdout) changes no verdict: this one line
        // says where everything is, since the report could not.
        if let Some(error) = crate::out::stdout_lost() {
            noteln!(
                "note: the re-cut is complete ({AT_NEW}), but its report could not be written: \
                 cannot write to standard output: {error}"
            );
            crate::out::stdout_loss_reported();
        }
        Ok(())
    }

    /// Everything up to the move of the branch, index and work tree.
    fn cut(&self, repo: &CourseRepo) -> Result<Appended> {
        let copy = tempfile::tempdir().map_err(error::io("cannot create a temporary folder"))?;
        let index = copy.path().join("index");
        let (git, mut appended) = self.prepare(repo, &index).map_err(unchanged)?;
        self.apply(&git, &index, &appended)?;
        let changed = git
            .run(&on_learner(&["diff", "--name-only", "HEAD"]))
            .map_err(|error| error.context(format!("the re-cut is complete ({AT_NEW}), but")))?;
        if !changed.is_empty() {
            appended.notes.push(format!(
                "changed while recut ran, so not in the re-cut commits (kept, uncommitted): {}",
                changed.replace('\n', ", ")
            ));
        }
        Ok(appended)
    }

    /// Reads the work tree into `index` and writes the new commits as objects.
    fn prepare(&self, repo: &CourseRepo, index: &Path) -> Result<(Git, Appended)> {
        let git = Git::find(&repo.root)?;
        let (branch, old) = branch(&repo.git)?;
        let chapters = chapter::all(&repo.checkpoints_dir())?;
        let Some(position) = chapters.iter().position(|chapter| chapter.id == self.id) else {
            return Err(chapter::find(&repo.checkpoints_dir(), self.id)
                .err()
                .unwrap_or_else(|| Error::bad_input(format!("unknown chapter {}", self.id))));
        };
        git.run(&["-c", "user.useConfigOnly=true", "var", "GIT_AUTHOR_IDENT"])
            .map_err(|error| {
                Error::bad_input(format!(
                    "recut commits in your name, but git has no usable identity here ({error}): \
                     set it with `git config user.name \"Your Name\"` and \
                     `git config user.email you@example.com`"
                ))
            })?;
        let head = repo
            .git
            .find_commit(old)
            .map_err(error::git("cannot read HEAD's commit"))?;
        let real = repo.git.path().join("index");
        if real.exists() {
            // The copy keeps the index's time: git compares the content of a
            // file changed in the index's last second ("racy git"), which a
            // copy made later would hide (a same-size edit went unseen).
            let copied = std::fs::copy(&real, index).and_then(|_| {
                let time = std::fs::metadata(&real)?.modified()?;
                std::fs::File::options()
                    .write(true)
                    .open(index)?
                    .set_modified(time)
            });
            copied.map_err(error::io(format!("cannot copy {}", real.display())))?;
        }
        let copy = git.on_index(index);
        copy.run(&on_learner(&["add", "-A"]))?;
        copy.run(&["update-index", "-q", "--refresh"])?;
        let tree = plan::find_tree(&repo.git, copy.oid(&["write-tree"], "")?)?;
        let mut notes = Vec::new();
        let cuts = plan::Planner {
            repo,
            git: &git,
            head: &head,
            worktree: plan::learner_of(&repo.git, &tree)?,
            only: self.only,
            notes: &mut notes,
        }
        .plan(&chapters, position)?;
        let tooling = head.tree().map_err(error::git("cannot read HEAD's tree"))?;
        let mut commits = Vec::with_capacity(cuts.len());
        let mut parent = old;
        for cut in &cuts {
            signals::check()?;
            let tree = plan::compose(&repo.git, cut.learner, &tooling)?.to_string();
            let args = ["commit-tree", &tree, "-p", &parent.to_string(), "-F", "-"];
            parent = git.oid(&args, &cut.message)?;
            commits.push(parent);
        }
        let appended = Appended {
            branch,
            old,
            commits,
            notes,
        };
        Ok((git, appended))
    }

    /// Moves the branch to NEW (`update-ref NEW OLD`, the commit point) and
    /// the index and work tree from CUT to NEW with `read-tree -u -m`, after
    /// git's up-to-date checks on the copy `index`.
    fn apply(&self, git: &Git, index: &Path, appended: &Appended) -> Result<()> {
        let (name, id, commits) = (&appended.branch, self.id, &appended.commits);
        let ends = [appended.old, commits[1], commits[commits.len() - 1]];
        let [old, cut, new] = ends.map(|oid| oid.to_string());
        // What git would refuse now (an untracked file in the way) is
        // refused before anything changes.
        git.on_index(index)
            .run(&["read-tree", "-n", "-u", "-m", &cut, &new])
            .and_then(|_| signals::check())
            .and_then(|()| git.run(&on_learner(&["add", "-A"])))
            .map_err(unchanged)?;
        // read-tree takes a file whose stat data is stale for a changed one.
        let log = format!("recut {id}: re-cut chapter {id} on top of {old}");
        git.run(&["update-index", "-q", "--refresh"])
            .and_then(|_| git.run(&["update-ref", "-m", &log, name, &new, &old]))
            .map_err(|error| error.context(format!("{name} did not move ({STAGED})")))?;
        // The commit point has passed: from here on, a signal waits.
        let Err(error) = git.run(&["read-tree", "-u", "-m", &cut, &new]) else {
            return Ok(());
        };
        let said = error.to_string();
        if !REFUSED.iter().any(|text| said.contains(text)) {
            let what = format!(
                "the branch has the re-cut commits (HEAD is {}), but git could not bring the \
                 index and the work tree to them (nothing uncommitted was overwritten: git \
                 replaces only files it has seen; once the cause is fixed, see `git status` and \
                 bring the learner's files to HEAD with `git restore --source=HEAD --staged \
                 --worktree -- <path>`)",
                &new[..7]
            );
            return Err(match error.exit_code() {
                code if code > 128 => error.context(what),
                _ => Error::environment(format!("{what}: {error}")),
            });
        }
        // git refused (an edit saved meanwhile, a lock): the branch goes back.
        let undo = format!("recut {id}: undone, back to {old}");
        match git.run(&["update-ref", "-m", &undo, name, &old, &new]) {
            Ok(_) => Err(error.context(format!(
                "git refused to update the work tree, so recut moved {name} back ({STAGED}); \
                 run recut again"
            ))),
            Err(back) => Err(Error::environment(format!(
                "{error}; and recut could not move {name} back ({back}): the branch has the \
                 re-cut commits, the work tree is as it was, and the index holds its learner files"
            ))),
        }
    }
}

/// The branch to append to, its full name and head; refuses an unfinished
/// operation, conflicts, a detached HEAD or an unborn branch.
fn branch(git: &Repository) -> Result<(String, Oid)> {
    let state = git.state();
    if state != RepositoryState::Clean {
        let state = format!("{state:?}").to_lowercase();
        return Err(Error::bad_input(format!(
            "a git {state} is in progress (see `git status`): finish or abort it first"
        )));
    }
    let conflicts = git.index().map(|index| index.has_conflicts());
    if conflicts.map_err(error::git("cannot read the index"))? {
        return Err(Error::bad_input(
            "the index has unresolved conflicts: resolve or reset them first",
        ));
    }
    let head = git
        .find_reference("HEAD")
        .map_err(error::git("cannot read HEAD"))?;
    let Some(name) = head.symbolic_target_bytes() else {
        let at = head.target().map(short_id).unwrap_or_default();
        return Err(Error::bad_input(format!(
            "HEAD is detached (at {at}): recut appends to a branch, so switch to one first \
             (e.g. `git switch main`)"
        )));
    };
    let name = String::from_utf8_lossy(name).into_owned();
    let shown = name.strip_prefix("refs/heads/").unwrap_or(&name);
    match git.refname_to_id(&name) {
        Ok(head) => Ok((name, head)),
        Err(error) if error.code() == ErrorCode::NotFound => Err(Error::bad_input(format!(
            "HEAD names the branch `{shown}`, which has no commits yet (an unborn branch): \
             recut appends to the course's history, so switch to the branch that holds it \
             (e.g. `git switch main`)"
        ))),
        Err(error) => Err(error::git(format!("cannot read {name}"))(error)),
    }
}
