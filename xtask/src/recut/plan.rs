//! Which commits a re-cut appends, worked out as tree objects before
//! anything moves: the restore commit, the `course(NN):` commit and one
//! replayed commit per later chapter (see the [module](super) docs).

use std::collections::BTreeSet;

use git2::{Commit, Index, ObjectType, Oid, Repository, Tree, TreeEntry};

use super::merge;
use super::text::{conflict_message, describe, restore_command, restore_message, shown};
use crate::chapter::ChapterFolder;
use crate::error::{self, Error, Result};
use crate::locate::{self, Checkpoint};
use crate::manifest::ChapterId;
use crate::worlds;

/// A commit `recut` appends: its message and its learner world (a tree
/// holding learner paths only; the tooling is added when it is committed).
pub struct Cut {
    pub message: String,
    pub learner: Oid,
}

/// Works out every commit of a re-cut, as tree objects, before anything moves.
pub struct Planner<'a, 'r> {
    pub git: &'r Repository,
    pub head: &'a Commit<'r>,
    /// The work tree's learner world: chapter NN's new end state.
    pub worktree: Oid,
    pub only: bool,
    pub notes: &'a mut Vec<String>,
}

/// Where a chapter starts: a learner world and where it comes from.
struct Start {
    learner: Oid,
    from: String,
}

impl<'r> Planner<'_, 'r> {
    /// The restore commit, the `course(NN):` commit and the replayed later
    /// chapters. Refuses a re-cut that would change no checkpoint, and one
    /// that would leave a chapter's layer empty (never an honest checkpoint).
    pub fn plan(&mut self, chapters: &[ChapterFolder], position: usize) -> Result<Vec<Cut>> {
        let chapter = &chapters[position];
        let id = chapter.id;
        let own = locate::locate_if_cut(self.git, id)?;
        let start = self.starting_point(&chapters[..position], id, own.as_ref())?;
        if start.learner == self.worktree {
            return Err(Error::bad_input(format!(
                "chapter {id}'s layer would be empty: the work tree's learner world is its \
                 starting point ({}); make the chapter's changes in the work tree first; \
                 nothing was changed",
                start.from
            )));
        }
        let mut unchanged = match &own {
            Some(checkpoint) => {
                self.learner_of(checkpoint.parent.oid)? == start.learner
                    && self.learner_of(checkpoint.target.oid)? == self.worktree
            }
            None => false,
        };
        let mut cuts = vec![
            Cut {
                message: restore_message(id, &start.from, self.head),
                learner: start.learner,
            },
            Cut {
                message: self.chapter_message(chapter, own.as_ref())?,
                learner: self.worktree,
            },
        ];
        let later = if self.only {
            &[][..]
        } else {
            &chapters[position + 1..]
        };
        for chapter in later {
            if let Some(cut) =
                self.replay_later(id, chapter.id, own.as_ref(), &mut unchanged, &cuts)?
            {
                cuts.push(cut);
            }
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

    /// The message of the `course(NN):` commit: the subject of the chapter's
    /// current target, or `course(NN): <title>`. The old body described the
    /// old layer: only the subject carries over.
    fn chapter_message(&self, chapter: &ChapterFolder, own: Option<&Checkpoint>) -> Result<String> {
        let id = chapter.id;
        let subject = match own {
            Some(checkpoint) => checkpoint.target.subject.clone(),
            None => format!("{} {}", id.commit_prefix(), chapter.load()?.title),
        };
        Ok(format!(
            "{subject}\n\nThe chapter's layer as the work tree holds it, cut on top of its \
             starting point.\nMade by `cargo xtask recut {id}`.\n"
        ))
    }

    /// The commit replaying chapter `later` onto the last of `cuts`, or
    /// `None` (with a note) when `later` was never cut. Clears `unchanged`
    /// when the later chapter's old parent is not the new state.
    fn replay_later(
        &mut self,
        id: ChapterId,
        later: ChapterId,
        own: Option<&Checkpoint>,
        unchanged: &mut bool,
        cuts: &[Cut],
    ) -> Result<Option<Cut>> {
        let Some(checkpoint) = locate::locate_if_cut(self.git, later)? else {
            self.notes.push(format!(
                "chapter {later} was never cut (no `{}` commit): nothing to replay",
                later.commit_prefix()
            ));
            return Ok(None);
        };
        let ours = cuts[cuts.len() - 1].learner;
        let ancestor = self.learner_of(checkpoint.parent.oid)?;
        *unchanged &= ancestor == ours;
        let replayed = self.replay(id, later, &checkpoint, ancestor, ours)?;
        if replayed == ours {
            return Err(self.emptied(id, later, own));
        }
        let old = message_of(self.git, checkpoint.target.oid)?;
        Ok(Some(Cut {
            message: format!(
                "{}\n\nReplayed onto the re-cut chapter {id} by `cargo xtask recut {id}`.\n",
                old.trim_end()
            ),
            learner: replayed,
        }))
    }

    /// Why a later chapter's replayed layer came out empty: the work tree
    /// already held it (most likely a later chapter's end state).
    fn emptied(&self, recut: ChapterId, later: ChapterId, own: Option<&Checkpoint>) -> Error {
        let how = match own.map(|checkpoint| (checkpoint, self.tree_of(checkpoint.target.oid))) {
            Some((checkpoint, Ok(tree))) => format!(
                " (e.g. `{}`)",
                restore_command(&checkpoint.target.short, &tree)
            ),
            _ => String::new(),
        };
        Error::bad_input(format!(
            "re-cutting chapter {recut} would leave chapter {later}'s layer empty: the work tree \
             already holds all of chapter {later}'s changes. Bring the work tree's learner world \
             to chapter {recut}'s end state first{how} and edit that, or re-cut chapter {later} \
             instead; nothing was changed"
        ))
    }

    /// Chapter `id`'s starting point: the end state of the nearest earlier
    /// chapter, or for the first chapter its previous starting point with
    /// the top-level files of the work tree.
    fn starting_point(
        &self,
        earlier: &[ChapterFolder],
        id: ChapterId,
        own: Option<&Checkpoint>,
    ) -> Result<Start> {
        if let Some(previous) = earlier.last() {
            let checkpoint = locate::locate(self.git, previous.id).map_err(|error| {
                error.context(format!(
                    "chapter {id} starts from chapter {}'s end state, which does not locate",
                    previous.id
                ))
            })?;
            return Ok(Start {
                learner: self.learner_of(checkpoint.target.oid)?,
                from: format!(
                    "chapter {}'s end state, {} {}",
                    previous.id, checkpoint.target.short, checkpoint.target.subject
                ),
            });
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
        let base = self.tree(self.learner_of(base)?)?;
        let worktree = self.tree(self.worktree)?;
        let learner = pick(
            self.git,
            &[
                (&base, &|entry| entry.kind() != Some(ObjectType::Blob)),
                (&worktree, &|entry| entry.kind() == Some(ObjectType::Blob)),
            ],
        )?;
        Ok(Start {
            learner,
            from: format!("{from}, with the top-level files from the work tree"),
        })
    }

    /// Replays chapter `later`'s old layer onto `ours` by a three-way merge
    /// of learner worlds; a conflict ends the re-cut before anything moved.
    fn replay(
        &self,
        recut: ChapterId,
        later: ChapterId,
        checkpoint: &Checkpoint,
        ancestor: Oid,
        ours: Oid,
    ) -> Result<Oid> {
        let (ancestor, ours) = (self.tree(ancestor)?, self.tree(ours)?);
        let theirs = self.tree(self.learner_of(checkpoint.target.oid)?)?;
        let mut merged = self
            .git
            .merge_trees(&ancestor, &ours, &theirs, None)
            .map_err(error::git(format!("cannot replay chapter {later}")))?;
        let mut files = conflicting_files(&merged)?;
        files.extend(merge::folder_file_conflicts(
            self.git, &ancestor, &ours, &theirs,
        )?);
        if !files.is_empty() {
            let files: Vec<String> = files.into_iter().collect();
            let target = self.tree_of(checkpoint.target.oid)?;
            return Err(Error::check_failed(conflict_message(
                recut, later, checkpoint, &files, &target,
            )));
        }
        merged.write_tree_to(self.git).map_err(error::git(format!(
            "cannot write chapter {later}'s replayed tree"
        )))
    }

    /// The learner world of `commit`: its tree without the tooling.
    fn learner_of(&self, commit: Oid) -> Result<Oid> {
        let tree = self.tree_of(commit)?;
        pick(
            self.git,
            &[(&tree, &|entry| worlds::is_learner(entry.name_bytes()))],
        )
    }

    fn tree_of(&self, commit: Oid) -> Result<Tree<'r>> {
        self.git
            .find_commit(commit)
            .and_then(|commit| commit.tree())
            .map_err(error::git(format!("cannot read the tree of {commit}")))
    }

    fn tree(&self, tree: Oid) -> Result<Tree<'r>> {
        find_tree(self.git, tree)
    }
}

/// A predicate on the top-level entries of a tree.
type Keep<'k> = &'k dyn Fn(&TreeEntry<'_>) -> bool;

/// A new tree of the top-level entries each part keeps. The worlds are told
/// apart by top-level names ([`worlds::is_tooling`]), so a folder is taken
/// whole.
pub fn pick(git: &Repository, parts: &[(&Tree<'_>, Keep<'_>)]) -> Result<Oid> {
    let mut builder = git
        .treebuilder(None)
        .map_err(error::git("cannot build a tree"))?;
    for (tree, keep) in parts {
        for entry in tree.iter().filter(|entry| keep(entry)) {
            builder
                .insert(entry.name_bytes(), entry.id(), entry.filemode())
                .map_err(error::git("cannot build a tree"))?;
        }
    }
    builder.write().map_err(error::git("cannot write a tree"))
}

/// A commit's tree: `learner` plus HEAD's tooling.
pub fn compose(git: &Repository, learner: Oid, tooling: &Tree<'_>) -> Result<Oid> {
    let learner = find_tree(git, learner)?;
    pick(
        git,
        &[
            (&learner, &|_| true),
            (tooling, &|entry| worlds::is_tooling(entry.name_bytes())),
        ],
    )
}

/// Every path of a merge's conflicts, sorted.
fn conflicting_files(merged: &Index) -> Result<BTreeSet<String>> {
    let mut files = BTreeSet::new();
    let conflicts = merged
        .conflicts()
        .map_err(error::git("cannot read the merge's conflicts"))?;
    for conflict in conflicts {
        let conflict = conflict.map_err(error::git("cannot read the merge's conflicts"))?;
        for entry in [conflict.ancestor, conflict.our, conflict.their]
            .into_iter()
            .flatten()
        {
            files.insert(shown(&entry.path));
        }
    }
    Ok(files)
}

/// The full message of `commit`.
fn message_of(git: &Repository, commit: Oid) -> Result<String> {
    let commit = git
        .find_commit(commit)
        .map_err(error::git(format!("cannot read commit {commit}")))?;
    Ok(String::from_utf8_lossy(commit.message_bytes()).into_owned())
}

/// The tree `tree`.
pub fn find_tree(git: &Repository, tree: Oid) -> Result<Tree<'_>> {
    git.find_tree(tree)
        .map_err(error::git(format!("cannot read tree {tree}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{self, MODE_FILE, MODE_TREE};
    use std::fs;

    /// A repository whose work tree and commits are built by the test.
    struct Course {
        dir: tempfile::TempDir,
        git: Repository,
    }

    impl Course {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let git = Repository::init(dir.path()).unwrap();
            Course { dir, git }
        }

        /// Commits `files` (path, content) on HEAD as the whole tree.
        fn commit(&self, subject: &str, files: &[(&str, &str)]) -> Oid {
            let mut index = Index::new().unwrap();
            for (path, content) in files {
                let entry = git2::IndexEntry {
                    ctime: git2::IndexTime::new(0, 0),
                    mtime: git2::IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode: MODE_FILE as u32,
                    uid: 0,
                    gid: 0,
                    file_size: 0,
                    id: self.git.blob(content.as_bytes()).unwrap(),
                    flags: 0,
                    flags_extended: 0,
                    path: path.as_bytes().to_vec(),
                };
                index.add(&entry).unwrap();
            }
            let tree = self
                .git
                .find_tree(index.write_tree_to(&self.git).unwrap())
                .unwrap();
            let signature = git2::Signature::now("T", "t@example.com").unwrap();
            let parent = self
                .git
                .head()
                .ok()
                .map(|head| head.peel_to_commit().unwrap());
            let parents: Vec<&Commit<'_>> = parent.iter().collect();
            self.git
                .commit(
                    Some("HEAD"),
                    &signature,
                    &signature,
                    subject,
                    &tree,
                    &parents,
                )
                .unwrap()
        }

        fn chapters(&self, ids: &[&str]) -> Vec<ChapterFolder> {
            for id in ids {
                let dir = self.dir.path().join("checkpoints").join(id);
                fs::create_dir_all(&dir).unwrap();
                let manifest = format!(
                    r#"{{"id":"{id}","title":"t{id}","focusedTest":"course/f{id}.rs","teachingFiles":["course/lib.rs"],"run":["cargo","test"]}}"#
                );
                fs::write(dir.join("checkpoint.json"), manifest).unwrap();
            }
            crate::chapter::all(&self.dir.path().join("checkpoints")).unwrap()
        }

        fn learner(&self, files: &[(&str, &str)]) -> Oid {
            let commit = self.commit("scratch", files);
            let tree = self.git.find_commit(commit).unwrap().tree().unwrap();
            pick(
                &self.git,
                &[(&tree, &|entry| worlds::is_learner(entry.name_bytes()))],
            )
            .unwrap()
        }

        fn files(&self, tree: Oid) -> Vec<(String, Vec<u8>)> {
            let tree = self.git.find_tree(tree).unwrap();
            tree::list_tree(&self.git, &tree, &|_| false)
                .unwrap()
                .into_iter()
                .map(|(path, blob)| {
                    let content = self.git.find_blob(blob.oid).unwrap().content().to_vec();
                    (path.to_string_lossy().into_owned(), content)
                })
                .collect()
        }
    }

    #[test]
    fn a_commit_is_the_learner_world_plus_heads_tooling() {
        let course = Course::new();
        let head = course.commit(
            "head",
            &[
                ("course/lib.rs", "head"),
                ("xtask/main.rs", "tool"),
                ("README.md", "r"),
            ],
        );
        let learner = course.learner(&[("course/lib.rs", "new"), ("Cargo.toml", "w")]);
        let tooling = course.git.find_commit(head).unwrap().tree().unwrap();
        let composed = compose(&course.git, learner, &tooling).unwrap();
        assert_eq!(
            course.files(composed),
            [
                ("Cargo.toml".to_string(), b"w".to_vec()),
                ("README.md".to_string(), b"r".to_vec()),
                ("course/lib.rs".to_string(), b"new".to_vec()),
                ("xtask/main.rs".to_string(), b"tool".to_vec()),
            ]
        );
        let top = course.git.find_tree(composed).unwrap();
        assert_eq!(top.get_name("course").unwrap().filemode(), MODE_TREE);
    }

    #[test]
    fn re_cutting_the_first_chapter_restores_its_start_and_replays_the_next() {
        let course = Course::new();
        course.commit("skeleton", &[("Cargo.toml", "w"), ("course/lib.rs", "")]);
        course.commit(
            "course(01): one",
            &[("Cargo.toml", "w"), ("course/lib.rs", "one\n")],
        );
        course.commit(
            "course(02): two",
            &[
                ("Cargo.toml", "w"),
                ("course/lib.rs", "one\n"),
                ("course/two.rs", "2"),
            ],
        );
        let head = course.git.head().unwrap().peel_to_commit().unwrap();
        let chapters = course.chapters(&["01", "02"]);
        let worktree = course.learner(&[("Cargo.toml", "w2"), ("course/lib.rs", "ONE\n")]);
        let mut notes = Vec::new();
        let cuts = Planner {
            git: &course.git,
            head: &head,
            worktree,
            only: false,
            notes: &mut notes,
        }
        .plan(&chapters, 0)
        .unwrap();

        let subjects: Vec<&str> = cuts
            .iter()
            .map(|cut| cut.message.lines().next().unwrap())
            .collect();
        assert_eq!(
            subjects,
            [
                "Restore chapter 01's starting point, to re-cut it",
                "course(01): one",
                "course(02): two"
            ]
        );
        // The start: the old parent's crate with the work tree's top-level files.
        assert_eq!(
            course.files(cuts[0].learner),
            [
                ("Cargo.toml".to_string(), b"w2".to_vec()),
                ("course/lib.rs".to_string(), b"".to_vec()),
            ]
        );
        assert_eq!(cuts[1].learner, worktree);
        assert_eq!(
            course.files(cuts[2].learner),
            [
                ("Cargo.toml".to_string(), b"w2".to_vec()),
                ("course/lib.rs".to_string(), b"ONE\n".to_vec()),
                ("course/two.rs".to_string(), b"2".to_vec()),
            ]
        );
        assert!(notes.is_empty(), "{notes:?}");

        // The same work tree again as chapter 01's start: an empty layer.
        let mut notes = Vec::new();
        let error = Planner {
            git: &course.git,
            head: &head,
            worktree: cuts[0].learner,
            only: true,
            notes: &mut notes,
        }
        .plan(&chapters, 0)
        .err()
        .unwrap();
        assert!(
            error.to_string().contains("layer would be empty"),
            "{error}"
        );
    }
}
