//! `recut NN`: re-cuts chapter NN from the work tree's learner world and
//! replays every later chapter on top (SPEC §4, §5). For course authors.
//!
//! The work tree's learner world — every path that is not tooling
//! ([`worlds`]), as `git add -A` would commit it — is chapter NN's new end
//! state. On top of HEAD, without touching the existing history, `recut`
//! appends:
//!
//! 1. a **restore commit** holding NN's starting point: the learner world of
//!    the target of the nearest earlier chapter in `checkpoints/`. The first
//!    chapter has no earlier chapter: its starting point is the learner world
//!    of its current parent (of HEAD, when it was never cut) **with the
//!    top-level files taken from the work tree** (`Cargo.toml`, `Cargo.lock`,
//!    `.gitignore`: files, not folders), so a change to the workspace files
//!    reaches every checkpoint by re-cutting the first chapter.
//! 2. a **`course(NN):` commit** with the work tree's learner world, under
//!    the subject of NN's current target (`course(NN): <title>` for a chapter
//!    that was never cut);
//! 3. unless `--only`, for each later chapter MM, a **`course(MM):` commit**
//!    that replays MM's old layer (old parent → old target, learner paths
//!    only) onto the new state by git's three-way merge, under MM's old
//!    message. A later chapter that was never cut has nothing to replay.
//!
//! Every new commit's tooling is HEAD's, so tooling never conflicts.
//!
//! **On git's plumbing** ([`git`]), so git's own rules for sparse checkouts,
//! symlinks, filters, ignored files and locks hold. The work tree is read
//! with a temporary copy of the index (`git add -A`, `git write-tree`); the
//! commits are objects (`git commit-tree`, `git merge-tree --write-tree`
//! for the replays), worked out in [`plan`]. Nothing the author sees has
//! changed until then. Then, in [`Transaction::run`]: git's up-to-date checks
//! on the copy (`read-tree -n`), the index takes the work tree's learner
//! files (`git add -A`), the branch moves by compare-and-swap (`git
//! update-ref NEW OLD`: the commit point), and `git read-tree -u -m CUT NEW`
//! brings the index and the work tree from the new `course(NN):` commit to
//! the new HEAD — refusing, as git does, to overwrite a change it has not
//! seen. The author's uncommitted tooling edits stay uncommitted (the two
//! trees agree on the tooling, so git keeps the index's and the work
//! tree's). Any failure ends in one line saying where things are.
//!
//! Exit codes: 2 refused (nothing changed, or as the line says); 1 a later
//! chapter's layer conflicts (nothing changed; the message names the
//! chapter, every conflicting file and the `--only` commands), or the final
//! `verify` failed (the new commits are in place); 3 for a disk or
//! permission failure; 128 + n after signal n.

mod git;
mod plan;
mod report;

use std::fs;
use std::path::Path;

use git2::{ErrorCode, Oid, Repository, RepositoryState};

use self::git::{Git, on_learner};
use self::report::{AT_NEW, STAGED, unchanged};
use crate::chapter::{self, ChapterFolder};
use crate::cli;
use crate::error::{self, Error, Result};
use crate::manifest::ChapterId;
use crate::repo::{CourseRepo, short_id};
use crate::signals;

/// The branch HEAD points to and its commit.
#[derive(Debug)]
pub struct Branch {
    /// The full reference name, e.g. `refs/heads/main`.
    pub name: String,
    pub head: Oid,
}

/// What a completed re-cut appended, for the report.
struct Appended {
    branch: Branch,
    commits: Vec<Oid>,
    notes: Vec<String>,
}

impl cli::Recut {
    /// Runs the command: appends the re-cut commits, moves the branch, then
    /// the index and the work tree, then verifies.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        // From here on a signal is recorded, not fatal: recut stops at the
        // next step before the commit point, or finishes after it.
        let _section = signals::defer();
        let appended = self.cut(repo).map_err(report::ended)?;
        report::print_commits(&repo.git, &appended)?;
        report::exit_if_interrupted("verify did not run");
        if !self.no_verify {
            report::verify(repo)?;
        }
        report::say_if_lost();
        Ok(())
    }

    /// Everything up to and including the move of the branch, the index
    /// and the work tree. Every error says where they are.
    fn cut(&self, repo: &CourseRepo) -> Result<Appended> {
        let (transaction, mut appended) = self.prepare(repo).map_err(unchanged)?;
        transaction.run()?;
        let changed = transaction.changed_meanwhile()?;
        if !changed.is_empty() {
            appended.notes.push(format!(
                "changed while recut ran, so not in the re-cut commits (kept, uncommitted): {}",
                changed.join(", ")
            ));
        }
        Ok(appended)
    }

    /// Reads the work tree and writes the new commits as objects: nothing
    /// outside the object database changes.
    fn prepare(&self, repo: &CourseRepo) -> Result<(Transaction, Appended)> {
        let git = Git::find(&repo.root)?;
        let branch = branch(&repo.git)?;
        let (chapters, position) = chapter_position(repo, self.id)?;
        identity(&git)?;
        let head = repo
            .git
            .find_commit(branch.head)
            .map_err(error::git("cannot read HEAD's commit"))?;
        let mut notes = Vec::new();
        let copy = tempfile::tempdir().map_err(error::io("cannot create a temporary folder"))?;
        let index = copy.path().join("index");
        let worktree = snapshot(repo, &git, &index, &mut notes)?;
        signals::check()?;
        let cuts = plan::Planner {
            repo: &repo.git,
            git: &git,
            head: &head,
            worktree,
            only: self.only,
            notes: &mut notes,
        }
        .plan(&chapters, position)?;
        let tooling = head.tree().map_err(error::git("cannot read HEAD's tree"))?;
        let mut commits = Vec::with_capacity(cuts.len());
        let mut parent = branch.head;
        for cut in &cuts {
            signals::check()?;
            let tree = plan::compose(&repo.git, cut.learner, &tooling)?.to_string();
            let id = git.run_with_input(
                &["commit-tree", &tree, "-p", &parent.to_string(), "-F", "-"],
                &cut.message,
            )?;
            parent = Oid::from_str(&id)
                .map_err(|_| Error::bad_input(format!("git commit-tree said `{id}`")))?;
            commits.push(parent);
        }
        signals::check()?;
        let transaction = Transaction {
            git,
            copy,
            id: self.id,
            branch: branch.name.clone(),
            old: branch.head,
            cut: commits[1],
            new: parent,
        };
        Ok((
            transaction,
            Appended {
                branch,
                commits,
                notes,
            },
        ))
    }
}

/// What git says when it refuses to update the work tree (and wrote nothing).
const REFUSED: [&str; 5] = [
    "not uptodate",
    "would be overwritten",
    "would be removed",
    "would be lost",
    "index.lock",
];

/// Moves the branch, the index and the work tree to the new HEAD, the way
/// git moves them (see the [module](self) docs).
struct Transaction {
    git: Git,
    /// The temporary copy of the index that read the work tree.
    copy: tempfile::TempDir,
    id: ChapterId,
    branch: String,
    old: Oid,
    /// The new `course(NN):` commit: the work tree's learner world.
    cut: Oid,
    new: Oid,
}

impl Transaction {
    fn run(&self) -> Result<()> {
        let (old, cut, new) = (
            self.old.to_string(),
            self.cut.to_string(),
            self.new.to_string(),
        );
        let copy = self.git.on_index(&self.copy.path().join("index"));
        // What git would refuse now (an untracked file in the way) is
        // refused before anything changes.
        copy.run(&["read-tree", "-n", "-u", "-m", &cut, &new])
            .and_then(|_| signals::check())
            .and_then(|()| self.git.run(&on_learner(&["add", "-A"])))
            .map_err(unchanged)?;
        // read-tree takes a file whose stat data is stale for a changed one.
        let log = format!(
            "recut {}: re-cut chapter {} on top of {old}",
            self.id, self.id
        );
        self.git
            .run(&["update-index", "-q", "--refresh"])
            .and_then(|_| {
                self.git
                    .run(&["update-ref", "-m", &log, &self.branch, &new, &old])
            })
            .map_err(|error| error.context(format!("{} did not move ({STAGED})", self.branch)))?;
        // The commit point has passed: from here on, a signal waits.
        let Err(error) = self.git.run(&["read-tree", "-u", "-m", &cut, &new]) else {
            return Ok(());
        };
        let said = error.to_string();
        if !REFUSED.iter().any(|text| said.contains(text)) {
            return Err(Error::environment(format!(
                "the branch has the re-cut commits (HEAD is {}), but git could not bring the \
                 index and the work tree to them: {error}; nothing uncommitted was overwritten \
                 (git replaces only files it has seen); once that is fixed, see `git status` \
                 and bring the learner's files to HEAD with `git restore --source=HEAD \
                 --staged --worktree -- <path>`",
                short_id(self.new)
            )));
        }
        // git refused (an edit saved meanwhile, a lock): the branch goes back.
        let undo = format!("recut {}: undone, back to {old}", self.id);
        match self
            .git
            .run(&["update-ref", "-m", &undo, &self.branch, &old, &new])
        {
            Ok(_) => Err(error.context(format!(
                "git refused to update the work tree, so recut moved {} back ({STAGED}); \
                 run recut again",
                self.branch
            ))),
            Err(back) => Err(Error::environment(format!(
                "{error}; and recut could not move {} back ({back}): the branch has the \
                 re-cut commits, the work tree is as it was, and the index holds its learner files",
                self.branch
            ))),
        }
    }

    /// The learner files that differ from the new HEAD after the re-cut:
    /// edits saved while recut ran, which git kept.
    fn changed_meanwhile(&self) -> Result<Vec<String>> {
        let args = on_learner(&["diff", "--name-only", "HEAD"]);
        let changed = self
            .git
            .run(&args)
            .map_err(|error| error.context(format!("the re-cut is complete ({AT_NEW}), but")))?;
        Ok(changed.lines().map(str::to_string).collect())
    }
}

/// The work tree's learner world as a tree, read by `git` on a copy of the
/// repository's index (its stat data and sparse-checkout bits included, so
/// what git does not see is not taken for a deletion).
fn snapshot(repo: &CourseRepo, git: &Git, to: &Path, notes: &mut Vec<String>) -> Result<Oid> {
    let index = repo.git.path().join("index");
    if index.exists() {
        fs::copy(&index, to).map_err(error::io(format!("cannot copy {}", index.display())))?;
    }
    let copy = git.on_index(to);
    copy.run(&["update-index", "-q", "--refresh"])?;
    let args = on_learner(&["add", "-A"]);
    let done = copy.call(&args, "")?;
    if done.code != Some(0) {
        return Err(git::failure(&args, &done));
    }
    notes.extend(
        done.stderr
            .lines()
            .filter(|line| line.starts_with("warning:"))
            .map(|line| format!("git {line}")),
    );
    let tree = copy.run(&["write-tree"])?;
    let tree = Oid::from_str(&tree)
        .map_err(|_| Error::bad_input(format!("git write-tree said `{tree}`")))?;
    let tree = plan::find_tree(&repo.git, tree)?;
    plan::learner_of(&repo.git, &tree)
}

/// The branch to append to, refusing every state where moving it is wrong:
/// an unfinished operation, unresolved conflicts, a detached HEAD, a HEAD
/// naming something that is not a branch, an unborn branch.
fn branch(git: &Repository) -> Result<Branch> {
    let operation = match git.state() {
        RepositoryState::Clean => None,
        RepositoryState::Merge => Some("a merge"),
        RepositoryState::Revert | RepositoryState::RevertSequence => Some("a revert"),
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => Some("a cherry-pick"),
        RepositoryState::Bisect => Some("a bisect"),
        _ => Some("a rebase or `git am`"),
    };
    if let Some(operation) = operation {
        return Err(Error::bad_input(format!(
            "{operation} is in progress: finish or abort it first"
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
    let Some(name) = head
        .symbolic_target_bytes()
        .map(|name| String::from_utf8_lossy(name).into_owned())
    else {
        let at = head.target().map(short_id).unwrap_or_default();
        return Err(Error::bad_input(format!(
            "HEAD is detached (at {at}): recut appends to a branch, so switch to one first \
             (e.g. `git switch main`)"
        )));
    };
    let Some(shown) = name.strip_prefix("refs/heads/") else {
        return Err(Error::bad_input(format!(
            "HEAD points to `{name}`, which is not a branch: recut appends to a branch \
             (refs/heads/…), so switch to one first"
        )));
    };
    match git.refname_to_id(&name) {
        Ok(head) => Ok(Branch { name, head }),
        Err(error) if error.code() == ErrorCode::NotFound => Err(Error::bad_input(format!(
            "HEAD names the branch `{shown}`, which has no commits yet (an unborn branch): \
             recut appends to the course's history, so switch to the branch that holds it \
             (e.g. `git switch main`)"
        ))),
        Err(error) => Err(error::git(format!("cannot read {name}"))(error)),
    }
}

/// Refuses to commit without a configured identity (git would guess one
/// from the user and host names).
fn identity(git: &Git) -> Result<()> {
    git.run(&["-c", "user.useConfigOnly=true", "var", "GIT_AUTHOR_IDENT"])
        .map(drop)
        .map_err(|error| {
            Error::bad_input(format!(
                "recut commits in your name, but git has no usable identity here ({error}): \
                 set it with `git config user.name \"Your Name\"` and \
                 `git config user.email you@example.com`"
            ))
        })
}

/// Every chapter of `checkpoints/`, in order, and where chapter `id` is.
fn chapter_position(repo: &CourseRepo, id: ChapterId) -> Result<(Vec<ChapterFolder>, usize)> {
    let dir = repo.checkpoints_dir();
    let chapters = chapter::all(&dir)?;
    match chapters.iter().position(|chapter| chapter.id == id) {
        Some(position) => Ok((chapters, position)),
        None => Err(chapter::find(&dir, id)
            .err()
            .unwrap_or_else(|| Error::bad_input(format!("unknown chapter {id}")))),
    }
}
