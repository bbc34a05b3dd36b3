//! Writing a re-cut: the commits as objects ([`append`]), then the work
//! tree, the branch and the index together ([`Transaction`]), all or
//! nothing.
//!
//! Order: every check and every write that can fail for lack of space or
//! permission comes first and shows nothing (the new files and the new index
//! are staged in the git dir, `index.lock` is held). Then the work tree is
//! swapped by renames, each recorded; the branch moves by compare-and-swap
//! (the commit point); the staged index replaces the old one by rename. A
//! failure or signal before the commit point undoes the swap; a failure of
//! the index rename moves the branch back and undoes the swap.

use std::path::Path;

use git2::{Commit, ErrorCode, Oid, Repository, Signature};

use super::Branch;
use super::changes::{self, Change};
use super::index::{self, Lock};
use super::plan::{Cut, compose, find_tree};
use super::report::{AS_THEY_WERE, unchanged};
use super::snapshot;
use super::worktree::{self, Journal, Staging};
use crate::error::{self, Error, Result};
use crate::manifest::ChapterId;
use crate::signals;
use crate::tree;

/// Commits `cuts` one on another on top of `head`, as objects only: no
/// reference moves here.
pub fn append(
    git: &Repository,
    signature: &Signature<'_>,
    head: &Commit<'_>,
    cuts: &[Cut],
) -> Result<Vec<Oid>> {
    let tooling = head.tree().map_err(error::git("cannot read HEAD's tree"))?;
    let mut parent = head.clone();
    let mut commits = Vec::with_capacity(cuts.len());
    for cut in cuts {
        signals::check()?;
        let tree = find_tree(git, compose(git, cut.learner, &tooling)?)?;
        let id = git
            .commit(None, signature, signature, &cut.message, &tree, &[&parent])
            .map_err(error::git("cannot write a commit"))?;
        parent = git
            .find_commit(id)
            .map_err(error::git(format!("cannot read commit {id}")))?;
        commits.push(id);
    }
    Ok(commits)
}

/// Moves the branch, the index and the work tree's learner world to
/// `new_head` together.
pub struct Transaction<'a> {
    pub git: &'a Repository,
    pub root: &'a Path,
    pub branch: Branch,
    pub id: ChapterId,
    /// The learner world the work tree holds (the snapshot's tree).
    pub worktree: Oid,
    pub new_head: Oid,
}

impl Transaction<'_> {
    /// Runs the transaction under `lock`. An error says in its message
    /// whether everything is as it was (nearly always) or what is not.
    pub fn run(&self, lock: Lock) -> Result<()> {
        let (changes, staging, staged_index) = self.prepare().map_err(unchanged)?;
        self.swap_and_move(lock, &changes, staging, &staged_index)
    }

    /// Every check and every write of the transaction that shows nothing:
    /// the changes, the staged files and the staged index.
    fn prepare(&self) -> Result<(Vec<Change>, Staging, std::path::PathBuf)> {
        let git = self.git;
        let new_tree = git
            .find_commit(self.new_head)
            .and_then(|commit| commit.tree())
            .map_err(error::git("cannot read the new tree"))?;
        let snapshot = changes::learner_blobs(git, &find_tree(git, self.worktree)?)?;
        let wanted = changes::learner_blobs(git, &new_tree)?;
        let changes = changes::between(&snapshot, &wanted);
        refuse_conversions(git, &changes)?;
        changes::check(self.root, &snapshot, &changes)?;
        let staging = Staging::create(git, self.root)?;
        worktree::stage(git, &staging, &changes)?;
        let staged_index = index::stage(git, staging.dir(), &new_tree, &wanted)?;
        signals::check()?;
        Ok((changes, staging, staged_index))
    }

    /// Swaps the work tree, moves the branch (the commit point) and installs
    /// the index; undoes the swap on a failure before the index is in.
    fn swap_and_move(
        &self,
        mut lock: Lock,
        changes: &[Change],
        mut staging: Staging,
        staged_index: &Path,
    ) -> Result<()> {
        let mut journal = Journal::default();
        let swapped = worktree::swap(
            self.root,
            &staging,
            changes,
            &mut journal,
            &mut signals::check,
        );
        if let Err(error) = swapped.and_then(|()| self.move_branch(self.branch.head, self.new_head))
        {
            return Err(undo(journal, &mut staging, error));
        }
        // The branch moved: the re-cut is complete once the index follows.
        if let Err(error) = lock.install(staged_index) {
            if let Err(back) = self.move_branch(self.new_head, self.branch.head) {
                staging.keep();
                return Err(Error::environment(format!(
                    "the branch points at the re-cut commits, but the index could not follow \
                     ({error}) and the branch could not be moved back ({back}): the work tree \
                     is at the new state, the index is as it was; run `git reset --mixed` to \
                     bring the index to HEAD (the old files are in {})",
                    staging.dir().display()
                )));
            }
            return Err(undo(journal, &mut staging, error));
        }
        worktree::tidy(self.root, changes);
        Ok(())
    }

    /// Moves the branch from `from` to `to`, only if it is still at `from`
    /// (compare-and-swap), with a reflog entry.
    fn move_branch(&self, from: Oid, to: Oid) -> Result<()> {
        let (id, name) = (self.id, &self.branch.name);
        let log = if to == self.new_head {
            format!("recut {id}: re-cut chapter {id} on top of {from}")
        } else {
            format!("recut {id}: undone, back to {to}")
        };
        self.git
            .reference_matching(name, to, true, from, &log)
            .map(drop)
            .map_err(|error| {
                if error.code() == ErrorCode::Modified {
                    Error::bad_input(format!(
                        "{name} moved while recut ran; run recut again"
                    ))
                } else {
                    error::git(format!("cannot move {name}"))(error)
                }
            })
    }
}

/// Refuses a change that writes a file whose git attributes ask for a
/// conversion (the snapshot checked the files it read).
fn refuse_conversions(git: &Repository, changes: &[Change]) -> Result<()> {
    for change in changes {
        if let Some(new) = change.new
            && new.mode != tree::MODE_SYMLINK
        {
            let path = change.path.as_os_str().as_encoded_bytes();
            snapshot::refuse_conversion(git, path).map_err(|error| {
                error.context("the new HEAD would write a file git converts")
            })?;
        }
    }
    Ok(())
}

/// Undoes the swap recorded in `journal` after `error`, and says so.
fn undo(journal: Journal, staging: &mut Staging, error: Error) -> Error {
    let failures = worktree::rollback(journal);
    if failures.is_empty() {
        return error.context(format!("recut undid every change ({AS_THEY_WERE})"));
    }
    staging.keep();
    Error::environment(format!(
        "{error}; recut could not undo every change ({}): the branch and the index are as \
         they were, but the work tree is partly changed; its old files are in {}",
        failures.join("; "),
        staging.dir().display()
    ))
}
