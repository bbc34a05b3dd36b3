//! The commits a re-cut appends, as tree objects before anything moves; the
//! replays are `git merge-tree --write-tree`.

use git2::{Commit, ObjectType, Oid, Repository, Tree, TreeEntry};

use super::git::Git;
use super::report::{describe, restore_command};
use crate::chapter::ChapterFolder;
use crate::error::{self, Error, Result};
use crate::locate::{self, Checkpoint};
use crate::manifest::ChapterId;
use crate::repo::CourseRepo;
use crate::worlds;

/// A commit `recut` appends: its message and its learner world (a tree
/// holding learner paths only; the tooling is added when it is committed).
pub struct Cut {
    pub message: String,
    pub learner: Oid,
}

/// Works out every commit of a re-cut, as tree objects, before anything moves.
pub struct Planner<'a, 'r> {
    pub repo: &'r CourseRepo,
    pub git: &'a Git,
    pub head: &'a Commit<'r>,
    /// The work tree's learner world: chapter NN's new end state.
    pub worktree: Oid,
    pub only: bool,
    pub notes: &'a mut Vec<String>,
}

impl Planner<'_, '_> {
    /// The restore commit, the `course(NN):` commit and the replays; refuses
    /// a re-cut that changes nothing or leaves a layer empty.
    pub fn plan(&mut self, chapters: &[ChapterFolder], position: usize) -> Result<Vec<Cut>> {
        let chapter = &chapters[position];
        let id = chapter.id;
        let own = locate::locate_if_cut(&self.repo.git, id)?;
        let (start, from) = self.starting_point(&chapters[..position], id, own.as_ref())?;
        if start == self.worktree {
            return Err(Error::bad_input(format!(
                "chapter {id}'s layer would be empty: the work tree's learner world is its \
                 starting point ({from}); make the chapter's changes in the work tree first; \
                 nothing was changed"
            )));
        }
        let mut unchanged = match &own {
            Some(checkpoint) => {
                self.learner_of(checkpoint.parent.oid)? == start
                    && self.learner_of(checkpoint.target.oid)? == self.worktree
            }
            None => false,
        };
        let subject = match &own {
            Some(checkpoint) => checkpoint.target.subject.clone(),
            None => format!("{} {}", id.commit_prefix(), chapter.load()?.title),
        };
        let mut cuts = vec![
            Cut {
                message: format!(
                    "Restore chapter {id}'s starting point, to re-cut it\n\n\
                     Learner's world: {from}.\nTooling: as at {}.\n\
                     Made by `cargo xtask recut {id}`.\n",
                    describe(self.head)
                ),
                learner: start,
            },
            // The old body described the old layer: only the subject carries over.
            Cut {
                message: format!(
                    "{subject}\n\nThe chapter's layer as the work tree holds it, cut on top of \
                     its starting point.\nMade by `cargo xtask recut {id}`.\n"
                ),
                learner: self.worktree,
            },
        ];
        let mut last = None;
        let later = chapters[position + 1..].iter().filter(|_| !self.only);
        for later in later.map(|chapter| chapter.id) {
            let Some(checkpoint) = locate::locate_if_cut(&self.repo.git, later)? else {
                self.notes.push(format!(
                    "chapter {later} was never cut (no `{}` commit): nothing to replay",
                    later.commit_prefix()
                ));
                continue;
            };
            last = Some((later, checkpoint.target.clone()));
            let ours = cuts[cuts.len() - 1].learner;
            let ancestor = self.learner_of(checkpoint.parent.oid)?;
            unchanged &= ancestor == ours;
            let replayed = self.replay(id, later, &checkpoint, ancestor, ours)?;
            if replayed == ours {
                // The work tree already held the layer (most likely a later
                // chapter's end state).
                let own = own.as_ref().map(|own| &own.target);
                let tree = own.and_then(|own| Some((own, self.repo.tree_of(own.oid).ok()?)));
                let how = tree.map(|(own, tree)| restore_command(&own.short, &tree));
                let how = how.map(|how| format!(" (e.g. `{how}`)"));
                return Err(Error::bad_input(format!(
                    "re-cutting chapter {id} would leave chapter {later}'s layer empty: the work \
                     tree already holds all of chapter {later}'s changes. Bring the work tree's \
                     learner world to chapter {id}'s end state first{} and edit that, or re-cut \
                     chapter {later} instead; nothing was changed",
                    how.unwrap_or_default()
                )));
            }
            let old = self.repo.git.find_commit(checkpoint.target.oid);
            let old = old.map_err(error::git("cannot read a chapter's commit"))?;
            let old = String::from_utf8_lossy(old.message_bytes());
            cuts.push(Cut {
                message: format!(
                    "{}\n\nReplayed onto the re-cut chapter {id} by `cargo xtask recut {id}`.\n",
                    old.trim_end()
                ),
                learner: replayed,
            });
        }
        // A later commit's learner changes are in no chapter's layer.
        if let Some((last, target)) = last
            && self.learner_of(target.oid)? != self.learner_of(self.head.id())?
        {
            return Err(Error::bad_input(format!(
                "HEAD's learner world is not chapter {last}'s end state ({} {}): the commits \
                 after it changed the learner's files, and replaying chapter {last}'s layer would \
                 drop those changes. Re-cut chapter {last} first (`cargo xtask recut {last}` with \
                 HEAD's learner world in the work tree), then chapter {id}; nothing was changed",
                target.short, target.subject
            )));
        }
        if unchanged {
            return Err(Error::bad_input(format!(
                "nothing to re-cut: the work tree's learner world is chapter {id}'s end state, \
                 the chapter starts where it should, and every later chapter already builds on it; \
                 edit the learner's world (the course crate or the workspace files) first"
            )));
        }
        Ok(cuts)
    }

    /// Chapter `id`'s starting point and where it comes from.
    fn starting_point(
        &self,
        earlier: &[ChapterFolder],
        id: ChapterId,
        own: Option<&Checkpoint>,
    ) -> Result<(Oid, String)> {
        if let Some(previous) = earlier.last() {
            let checkpoint = locate::locate(&self.repo.git, previous.id).map_err(|error| {
                error.context(format!(
                    "chapter {id} starts from chapter {}'s end state, which does not locate",
                    previous.id
                ))
            })?;
            let target = &checkpoint.target;
            let from = format!(
                "chapter {}'s end state, {} {}",
                previous.id, target.short, target.subject
            );
            return Ok((self.learner_of(target.oid)?, from));
        }
        let (base, from) = match own {
            Some(checkpoint) => (
                checkpoint.parent.oid,
                format!(
                    "chapter {id}'s previous starting point, {} {}",
                    checkpoint.parent.short, checkpoint.parent.subject
                ),
            ),
            None => (self.head.id(), format!("HEAD, {}", describe(self.head))),
        };
        let base = find_tree(&self.repo.git, self.learner_of(base)?)?;
        let worktree = find_tree(&self.repo.git, self.worktree)?;
        let is_file = |entry: &TreeEntry<'_>| entry.kind() == Some(ObjectType::Blob);
        let folders = base.iter().filter(|entry| !is_file(entry));
        let start = tree_of_entries(
            &self.repo.git,
            folders.chain(worktree.iter().filter(is_file)),
        )?;
        Ok((
            start,
            format!("{from}, with the top-level files from the work tree"),
        ))
    }

    /// Replays chapter `later`'s old layer onto `ours` (three-way merge).
    fn replay(
        &self,
        recut: ChapterId,
        later: ChapterId,
        checkpoint: &Checkpoint,
        ancestor: Oid,
        ours: Oid,
    ) -> Result<Oid> {
        let theirs = self.learner_of(checkpoint.target.oid)?;
        // merge-tree (before git 2.40) merges commits and finds their base
        // itself: the three learner worlds as commits, on a common parent.
        let commit = |tree: Oid, parent: &[&str]| {
            let tree = tree.to_string();
            let args = [&["commit-tree", &tree, "-m", "recut scratch"], parent].concat();
            self.git.oid(&args, "").map(|id| id.to_string())
        };
        let base = commit(ancestor, &[])?;
        let ours = commit(ours, &["-p", &base])?;
        let theirs = commit(theirs, &["-p", &base])?;
        let mut args = vec!["merge-tree", "--write-tree", "--name-only", "--no-messages"];
        args.extend([ours.as_str(), theirs.as_str()]);
        let done = self.git.call(&args, "")?;
        let stdout = String::from_utf8_lossy(&done.stdout);
        let mut lines = stdout.lines();
        let tree = lines.next().and_then(|line| Oid::from_str(line).ok());
        match (done.status.code(), tree) {
            (Some(0), Some(tree)) => Ok(tree),
            (Some(1), Some(_)) => {
                let mut files: Vec<&str> = lines.collect();
                files.dedup();
                let target = self.repo.tree_of(checkpoint.target.oid)?;
                Err(Error::check_failed(format!(
                    "chapter {later}'s layer does not replay onto the re-cut chapter {recut}: \
                     conflicts in {files}.\n\
                     Nothing was changed: no branch moved, the index and the work tree are as they were.\n\
                     To re-cut both chapters:\n  \
                     1. cargo xtask recut {recut} --only   (chapter {later} keeps its old checkpoint for now)\n  \
                     2. bring the work tree's learner world to chapter {later}'s end state and make it fit, e.g.\n       \
                        {restore}\n  \
                     3. cargo xtask recut {later}   (it starts from the new chapter {recut} and replays the chapters after it)",
                    files = files.join(", "),
                    restore = restore_command(&checkpoint.target.short, &target),
                )))
            }
            _ => Err(super::git::failure(&args, &done)),
        }
    }

    /// The learner world of `commit`: its tree without the tooling.
    pub fn learner_of(&self, commit: Oid) -> Result<Oid> {
        learner_of(&self.repo.git, &self.repo.tree_of(commit)?)
    }
}

/// A new tree of top-level `entries`.
fn tree_of_entries<'t>(
    repo: &Repository,
    entries: impl IntoIterator<Item = TreeEntry<'t>>,
) -> Result<Oid> {
    let failed = |error| error::git("cannot build a tree")(error);
    let mut builder = repo.treebuilder(None).map_err(failed)?;
    for entry in entries {
        (builder.insert(entry.name_bytes(), entry.id(), entry.filemode())).map_err(failed)?;
    }
    builder.write().map_err(failed)
}

/// The learner world of `tree`: its entries without the tooling.
pub fn learner_of(repo: &Repository, tree: &Tree<'_>) -> Result<Oid> {
    let learner = tree
        .iter()
        .filter(|entry| !worlds::is_tooling(entry.name_bytes()));
    tree_of_entries(repo, learner)
}

/// A commit's tree: `learner` plus the tooling of `tooling`.
pub fn compose(repo: &Repository, learner: Oid, tooling: &Tree<'_>) -> Result<Oid> {
    let tooling = tooling
        .iter()
        .filter(|entry| worlds::is_tooling(entry.name_bytes()));
    tree_of_entries(repo, find_tree(repo, learner)?.iter().chain(tooling))
}

pub fn find_tree(repo: &Repository, tree: Oid) -> Result<Tree<'_>> {
    repo.find_tree(tree)
        .map_err(error::git(format!("cannot read tree {tree}")))
}
