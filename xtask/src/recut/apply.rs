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
                    Error::bad_input(format!("{name} moved while recut ran; run recut again"))
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
            snapshot::refuse_conversion(git, path)
                .map_err(|error| error.context("the new HEAD would write a file git converts"))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A repository with one commit of `course/lib.rs` and `xtask/main.rs`,
    /// checked out, and a new commit (not on the branch) that changes the
    /// learner's file.
    struct Setup {
        dir: tempfile::TempDir,
        git: Repository,
        old: Oid,
        new: Oid,
        worktree: Oid,
    }

    fn setup() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        for (path, content) in [("course/lib.rs", "old"), ("xtask/main.rs", "tool")] {
            let file = dir.path().join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, content).unwrap();
        }
        let mut index = git.index().unwrap();
        index.add_path(Path::new("course/lib.rs")).unwrap();
        index.add_path(Path::new("xtask/main.rs")).unwrap();
        index.write().unwrap();
        let signature = Signature::now("T", "t@example.com").unwrap();
        let (old, new, worktree) = {
            let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
            let old = git
                .commit(Some("HEAD"), &signature, &signature, "old", &tree, &[])
                .unwrap();
            let head = git.find_commit(old).unwrap();
            let learner = git.blob(b"new").unwrap();
            let mut course = git.treebuilder(None).unwrap();
            course.insert("lib.rs", learner, tree::MODE_FILE).unwrap();
            course.insert("added.rs", learner, tree::MODE_FILE).unwrap();
            let mut root = git.treebuilder(None).unwrap();
            root.insert("course", course.write().unwrap(), tree::MODE_TREE)
                .unwrap();
            let cut = Cut {
                message: "course(01): new".into(),
                learner: root.write().unwrap(),
            };
            let commits = append(&git, &signature, &head, &[cut]).unwrap();
            let snapshot = head.tree().unwrap().get_name("course").unwrap().id();
            let mut root = git.treebuilder(None).unwrap();
            root.insert("course", snapshot, tree::MODE_TREE).unwrap();
            (old, commits[0], root.write().unwrap())
        };
        Setup {
            dir,
            git,
            old,
            new,
            worktree,
        }
    }

    impl Setup {
        fn transaction(&self) -> Transaction<'_> {
            let name = self.git.head().unwrap().name().unwrap().to_string();
            Transaction {
                git: &self.git,
                root: self.dir.path(),
                branch: Branch {
                    name,
                    head: self.old,
                },
                id: "01".parse().unwrap(),
                worktree: self.worktree,
                new_head: self.new,
            }
        }

        fn read(&self, path: &str) -> Option<String> {
            fs::read_to_string(self.dir.path().join(path)).ok()
        }
    }

    #[test]
    fn appended_commits_keep_heads_tooling() {
        let setup = setup();
        let commit = setup.git.find_commit(setup.new).unwrap();
        assert_eq!(commit.parent_id(0).unwrap(), setup.old);
        let tree = commit.tree().unwrap();
        assert!(tree.get_path(Path::new("xtask/main.rs")).is_ok());
        assert!(tree.get_path(Path::new("course/added.rs")).is_ok());
    }

    #[test]
    fn the_branch_the_index_and_the_work_tree_move_together() {
        let setup = setup();
        let lock = Lock::take(&setup.git).unwrap();
        setup.transaction().run(lock).unwrap();

        assert_eq!(setup.git.head().unwrap().target(), Some(setup.new));
        assert_eq!(setup.read("course/lib.rs").as_deref(), Some("new"));
        assert_eq!(setup.read("course/added.rs").as_deref(), Some("new"));
        let mut index = setup.git.index().unwrap();
        index.read(true).unwrap();
        let entry = index.get_path(Path::new("course/added.rs"), 0).unwrap();
        assert_eq!(entry.id, setup.git.blob(b"new").unwrap());
        assert!(!setup.git.path().join("index.lock").exists());
    }

    #[test]
    fn a_branch_moved_meanwhile_undoes_the_swap() {
        let setup = setup();
        let index_before = fs::read(setup.git.path().join("index")).unwrap();
        // Someone else moves the branch after recut read it.
        let name = setup.git.head().unwrap().name().unwrap().to_string();
        setup
            .git
            .reference(&name, setup.new, true, "someone else")
            .unwrap();
        let lock = Lock::take(&setup.git).unwrap();
        let error = setup.transaction().run(lock).unwrap_err().to_string();

        assert!(error.contains("moved while recut ran"), "{error}");
        assert!(error.contains(AS_THEY_WERE), "{error}");
        assert_eq!(setup.read("course/lib.rs").as_deref(), Some("old"));
        assert_eq!(setup.read("course/added.rs"), None);
        assert_eq!(
            fs::read(setup.git.path().join("index")).unwrap(),
            index_before
        );
        assert!(!setup.git.path().join("index.lock").exists());
    }
}
