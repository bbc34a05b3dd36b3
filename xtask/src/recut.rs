//! `recut NN`: re-cuts chapter NN from the work tree's learner world and
//! replays every later chapter on top (SPEC §4, §5). For course authors.
//!
//! The work tree's learner world — every path that is not tooling
//! ([`worlds`]), as git would commit it: files with their executable bit,
//! symlinks as symlinks (never followed), without what git ignores (a
//! tracked file counts even when an ignore rule matches it) — is chapter NN's
//! new end state. The work tree counts, not the index: staged and unstaged
//! learner changes alike. On top of HEAD, without touching the existing
//! history, `recut` appends:
//!
//! 1. a **restore commit** holding NN's starting point: the learner world of
//!    the target of the nearest earlier chapter in `checkpoints/`. The first
//!    chapter has no earlier chapter: its starting point is the learner world
//!    of its current parent (of HEAD, when it was never cut) **with the
//!    top-level files taken from the work tree** — the files directly at the
//!    root, such as `Cargo.toml`, `Cargo.lock` and `.gitignore`, not folders.
//!    That is how a change to the workspace files reaches every checkpoint:
//!    make it in the work tree and re-cut the first chapter; every later
//!    chapter is replayed on top.
//! 2. a **`course(NN):` commit** with the work tree's learner world, under
//!    the subject of NN's current target (`course(NN): <title>` for a chapter
//!    that was never cut);
//! 3. unless `--only`, for each later chapter MM, a **`course(MM):` commit**
//!    that replays MM's old layer (old parent → old target, learner paths
//!    only) onto the new state by a three-way merge, under MM's old message.
//!    A later chapter that was never cut has nothing to replay and is skipped.
//!
//! Every new commit's tooling is HEAD's, so tooling never conflicts. All
//! commits are built as objects first; the branch moves once, at the end, by
//! compare-and-swap. Then the index entries and work-tree files of learner
//! paths are brought to the new HEAD (nothing is lost: the work tree's learner
//! world is in the `course(NN):` commit); tooling files and their index
//! entries stay exactly as they were. Unless `--no-verify`, `verify` then
//! runs on every chapter.
//!
//! Exit codes: 2 when the input can't be used and nothing was changed
//! (detached or unborn HEAD, a merge or rebase in progress, unresolved
//! conflicts in the index, an unknown chapter, no `user.name`/`user.email`,
//! nothing to re-cut, or a re-cut that would leave a chapter's layer empty —
//! typically a work tree that still holds a later chapter's end state); 1
//! when a later chapter's layer conflicts with the new state (nothing was
//! changed: no branch moved, the index and the work tree are as they were;
//! the message names the chapter, every conflicting file and what to do), or
//! when the final `verify` fails (the new commits are in place).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::build::CheckoutBuilder;
use git2::{
    Commit, ErrorCode, FileMode, Index, IndexEntry, IndexTime, ObjectType, Oid, Repository,
    RepositoryState, Signature, Tree, TreeEntry,
};

use crate::chapter::{self, ChapterFolder};
use crate::cli;
use crate::error::{self, Error, Result};
use crate::locate::{self, Checkpoint};
use crate::manifest::ChapterId;
use crate::out::outln;
use crate::repo::CourseRepo;
use crate::tree;
use crate::worlds;

impl cli::Recut {
    /// Runs the command: appends the re-cut commits, moves the branch, brings
    /// the learner's world of the work tree to the new HEAD, then verifies.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let git = &repo.git;
        let branch = current_branch(git)?;
        let (chapters, position) = chapter_position(repo, self.id)?;
        let signature = signature(git)?;
        let head = git
            .find_commit(branch.head)
            .map_err(error::git("cannot read HEAD's commit"))?;
        let mut index = resolved_index(git)?;
        let (worktree, mut notes) = snapshot(git, &index, &repo.root)?;

        let cuts = Planner {
            git,
            head: &head,
            worktree,
            only: self.only,
            notes: &mut notes,
        }
        .plan(&chapters, position)?;
        let commits = append(git, &signature, &head, &cuts)?;
        let new_head = *commits.last().unwrap_or(&branch.head);
        move_branch(git, &branch, new_head, self.id)?;
        checkout_learner(git, new_head, worktree, &mut index)?;

        print_commits(git, &branch, &head, &commits, &notes)?;
        if self.no_verify {
            return Ok(());
        }
        outln!()?;
        outln!("Verifying every chapter (skip this with --no-verify)…")?;
        cli::Verify {
            ids: Vec::new(),
            json: false,
            timeout: 600,
        }
        .run(repo)
        .map_err(|error| {
            let what = "the re-cut commits are in place, but verify failed";
            // The branch has moved, so bad input found by verify is no longer
            // "nothing was changed" (exit 2): it is a failed check (exit 1).
            if error.exit_code() == 2 {
                Error::check_failed(format!("{what}: {error}"))
            } else {
                error.context(what)
            }
        })
    }
}

/// The repository's index, refused while it holds unresolved conflicts.
fn resolved_index(git: &Repository) -> Result<Index> {
    let mut index = git.index().map_err(error::git("cannot read the index"))?;
    index
        .read(false)
        .map_err(error::git("cannot read the index"))?;
    if index.has_conflicts() {
        return Err(Error::bad_input(
            "the index has unresolved conflicts: resolve or reset them first; nothing was changed",
        ));
    }
    Ok(index)
}

/// The work tree's learner world as a tree object, and notes on what was
/// left out.
fn snapshot(git: &Repository, index: &Index, root: &Path) -> Result<(Oid, Vec<String>)> {
    let mut snapshot = Snapshot {
        git,
        index,
        notes: Vec::new(),
    };
    let tree = match snapshot.folder(root, b"")? {
        Some(tree) => tree,
        None => empty_tree(git)?,
    };
    Ok((tree, snapshot.notes))
}

/// The branch HEAD points to and its commit.
struct Branch {
    name: String,
    head: Oid,
}

/// The branch to append to, refusing every state where moving it is wrong.
fn current_branch(git: &Repository) -> Result<Branch> {
    if let Some(operation) = in_progress(git.state()) {
        return Err(Error::bad_input(format!(
            "{operation} is in progress: finish or abort it first; nothing was changed"
        )));
    }
    let detached = git
        .head_detached()
        .map_err(error::git("cannot read HEAD"))?;
    if detached {
        return Err(Error::bad_input(
            "HEAD is detached: recut appends to a branch, so switch to one first \
             (e.g. `git switch main`); nothing was changed",
        ));
    }
    let head = git
        .find_reference("HEAD")
        .map_err(error::git("cannot read HEAD"))?;
    let name = head
        .symbolic_target()
        .map_err(error::git("cannot read the branch HEAD names"))?
        .ok_or_else(|| Error::bad_input("HEAD does not name a branch: switch to one first"))?
        .to_string();
    match git.refname_to_id(&name) {
        Ok(id) => Ok(Branch { name, head: id }),
        Err(error) if error.code() == ErrorCode::NotFound => Err(Error::bad_input(format!(
            "{name} has no commits yet: commit the course first; nothing was changed"
        ))),
        Err(error) => Err(error::git(format!("cannot read {name}"))(error)),
    }
}

/// The operation that `state` says is unfinished, if any.
fn in_progress(state: RepositoryState) -> Option<&'static str> {
    match state {
        RepositoryState::Clean => None,
        RepositoryState::Merge => Some("a merge"),
        RepositoryState::Revert | RepositoryState::RevertSequence => Some("a revert"),
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => Some("a cherry-pick"),
        RepositoryState::Bisect => Some("a bisect"),
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => Some("a rebase"),
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => Some("a `git am`"),
    }
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

/// The author and committer of the new commits, from git's configuration.
fn signature(git: &Repository) -> Result<Signature<'static>> {
    git.signature().map_err(|error| {
        Error::bad_input(format!(
            "recut commits in your name, but git has no usable identity here ({}): \
             set it with `git config user.name \"Your Name\"` and \
             `git config user.email you@example.com`; nothing was changed",
            error.message()
        ))
    })
}

/// The work tree's learner world, written into the object database the way
/// git would commit it.
struct Snapshot<'a> {
    git: &'a Repository,
    /// What is tracked: a tracked file is committed even when an ignore rule
    /// matches it, as git does.
    index: &'a Index,
    /// What was left out and why, for the author.
    notes: Vec<String>,
}

impl Snapshot<'_> {
    /// The tree of the folder `dir` (repository path `prefix`), or `None`
    /// when nothing in it is committed.
    fn folder(&mut self, dir: &Path, prefix: &[u8]) -> Result<Option<Oid>> {
        let mut builder = self
            .git
            .treebuilder(None)
            .map_err(error::git("cannot build a tree"))?;
        let entries =
            fs::read_dir(dir).map_err(error::io(format!("cannot read {}", dir.display())))?;
        for entry in entries {
            let entry = entry.map_err(error::io(format!("cannot read {}", dir.display())))?;
            let name = entry.file_name();
            let name = name.as_bytes();
            let path = join(prefix, name);
            if name == b".git" || worlds::is_tooling(&path) {
                continue;
            }
            if let Some((oid, mode)) = self.entry(&entry.path(), &path)? {
                builder.insert(name, oid, mode).map_err(error::git(format!(
                    "cannot add `{}` to a tree",
                    shown(&path)
                )))?;
            }
        }
        if builder.is_empty() {
            return Ok(None);
        }
        builder.write().map(Some).map_err(error::git(format!(
            "cannot write the tree of `{}`",
            shown(prefix)
        )))
    }

    /// One entry of a folder: a file, a symlink (its target, not what it
    /// points to), a folder or a submodule; `None` when git would leave it out.
    fn entry(&mut self, on_disk: &Path, path: &[u8]) -> Result<Option<(Oid, i32)>> {
        let meta = fs::symlink_metadata(on_disk)
            .map_err(error::io(format!("cannot inspect {}", on_disk.display())))?;
        let kind = meta.file_type();
        if kind.is_dir() {
            return self.subfolder(on_disk, path);
        }
        if !(kind.is_file() || kind.is_symlink()) || self.ignored(path, false)? {
            return Ok(None);
        }
        let (content, mode) = if kind.is_symlink() {
            let target = fs::read_link(on_disk).map_err(error::io(format!(
                "cannot read symlink {}",
                on_disk.display()
            )))?;
            (target.into_os_string().into_vec(), FileMode::Link)
        } else {
            let content = fs::read(on_disk)
                .map_err(error::io(format!("cannot read {}", on_disk.display())))?;
            let executable = meta.permissions().mode() & 0o100 != 0;
            let mode = if executable {
                FileMode::BlobExecutable
            } else {
                FileMode::Blob
            };
            (content, mode)
        };
        let oid = self
            .git
            .blob(&content)
            .map_err(error::git(format!("cannot store `{}`", shown(path))))?;
        Ok(Some((oid, mode.into())))
    }

    fn subfolder(&mut self, on_disk: &Path, path: &[u8]) -> Result<Option<(Oid, i32)>> {
        let commit: i32 = FileMode::Commit.into();
        if let Some(entry) = self.index.get_path(repo_path(path), 0)
            && entry.mode as i32 == commit
        {
            return Ok(Some((entry.id, commit)));
        }
        if fs::symlink_metadata(on_disk.join(".git")).is_ok() {
            self.notes.push(format!(
                "`{}` is a repository of its own and no submodule: left out",
                shown(path)
            ));
            return Ok(None);
        }
        if self.ignored(path, true)? {
            return Ok(None);
        }
        let tree = self.folder(on_disk, path)?;
        Ok(tree.map(|oid| (oid, FileMode::Tree.into())))
    }

    /// True when git ignores `path`: an ignore rule matches it and nothing
    /// there is tracked.
    fn ignored(&self, path: &[u8], folder: bool) -> Result<bool> {
        let mut asked = path.to_vec();
        if folder {
            asked.push(b'/');
        }
        let matched = self
            .git
            .is_path_ignored(repo_path(&asked))
            .map_err(error::git(format!(
                "cannot read the ignore rules for `{}`",
                shown(path)
            )))?;
        let tracked = if folder {
            self.index.find_prefix(asked.as_slice()).is_ok()
        } else {
            self.index.get_path(repo_path(path), 0).is_some()
        };
        Ok(matched && !tracked)
    }
}

/// A commit `recut` appends: its message and its learner world (a tree
/// holding learner paths only; the tooling is added when it is committed).
struct Cut {
    message: String,
    learner: Oid,
}

/// Works out every commit of a re-cut, as tree objects, before anything moves.
struct Planner<'a, 'r> {
    git: &'r Repository,
    head: &'a Commit<'r>,
    /// The work tree's learner world: chapter NN's new end state.
    worktree: Oid,
    only: bool,
    notes: &'a mut Vec<String>,
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
    fn plan(&mut self, chapters: &[ChapterFolder], position: usize) -> Result<Vec<Cut>> {
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
        let subject = match &own {
            Some(checkpoint) => checkpoint.target.subject.clone(),
            None => format!("{} {}", id.commit_prefix(), chapter.load()?.title),
        };
        // The old body described the old layer: only the subject carries over.
        let message = format!(
            "{subject}\n\nThe chapter's layer as the work tree holds it, cut on top of its \
             starting point.\nMade by `cargo xtask recut {id}`.\n"
        );
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
                message,
                learner: self.worktree,
            },
        ];
        let later = if self.only {
            &[][..]
        } else {
            &chapters[position + 1..]
        };
        for chapter in later {
            let Some(checkpoint) = locate::locate_if_cut(self.git, chapter.id)? else {
                self.notes.push(format!(
                    "chapter {} was never cut (no `{}` commit): nothing to replay",
                    chapter.id,
                    chapter.id.commit_prefix()
                ));
                continue;
            };
            let ours = cuts[cuts.len() - 1].learner;
            let ancestor = self.learner_of(checkpoint.parent.oid)?;
            unchanged &= ancestor == ours;
            let replayed = self.replay(id, chapter.id, &checkpoint, ancestor, ours)?;
            if replayed == ours {
                return Err(self.emptied(id, chapter.id, own.as_ref()));
            }
            let old = message_of(self.git, checkpoint.target.oid)?;
            cuts.push(Cut {
                message: format!(
                    "{}\n\nReplayed onto the re-cut chapter {id} by `cargo xtask recut {id}`.\n",
                    old.trim_end()
                ),
                learner: replayed,
            });
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
        let theirs = self.learner_of(checkpoint.target.oid)?;
        let mut merged = self
            .git
            .merge_trees(
                &self.tree(ancestor)?,
                &self.tree(ours)?,
                &self.tree(theirs)?,
                None,
            )
            .map_err(error::git(format!("cannot replay chapter {later}")))?;
        if merged.has_conflicts() {
            let files = conflicting_files(&merged)?;
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
fn pick(git: &Repository, parts: &[(&Tree<'_>, Keep<'_>)]) -> Result<Oid> {
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
fn compose(git: &Repository, learner: Oid, tooling: &Tree<'_>) -> Result<Oid> {
    let learner = find_tree(git, learner)?;
    pick(
        git,
        &[
            (&learner, &|_| true),
            (tooling, &|entry| worlds::is_tooling(entry.name_bytes())),
        ],
    )
}

/// Commits `cuts` one on another on top of `head`, as objects only: no
/// reference moves here.
fn append(
    git: &Repository,
    signature: &Signature<'_>,
    head: &Commit<'_>,
    cuts: &[Cut],
) -> Result<Vec<Oid>> {
    let tooling = head.tree().map_err(error::git("cannot read HEAD's tree"))?;
    let mut parent = head.clone();
    let mut commits = Vec::with_capacity(cuts.len());
    for cut in cuts {
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

/// Moves the branch from its old commit to `to`, only if nobody moved it
/// meanwhile (compare-and-swap), with a reflog entry.
fn move_branch(git: &Repository, branch: &Branch, to: Oid, id: ChapterId) -> Result<()> {
    let log = format!("recut {id}: re-cut chapter {id} on top of {}", branch.head);
    git.reference_matching(&branch.name, to, true, branch.head, &log)
        .map(drop)
        .map_err(|error| {
            if error.code() == ErrorCode::Modified {
                Error::bad_input(format!(
                    "{} moved while recut ran: nothing was changed; run recut again",
                    branch.name
                ))
            } else {
                error::git(format!("cannot move {}", branch.name))(error)
            }
        })
}

/// Brings the work-tree files and index entries of every learner path to
/// commit `to`; tooling paths are not touched. The paths are every learner
/// path of the new HEAD, of the snapshot just committed and of the index,
/// so files the new HEAD no longer has are removed too.
fn checkout_learner(git: &Repository, to: Oid, worktree: Oid, index: &mut Index) -> Result<()> {
    let target = git
        .find_commit(to)
        .map_err(error::git(format!("cannot read commit {to}")))?;
    let new_tree = target
        .tree()
        .map_err(error::git("cannot read the new tree"))?;
    let wanted = learner_blobs(git, &new_tree)?;
    let committed = learner_blobs(git, &find_tree(git, worktree)?)?;
    let mut paths: BTreeSet<Vec<u8>> = wanted.iter().map(|(path, _)| path.clone()).collect();
    paths.extend(committed.into_iter().map(|(path, _)| path));
    paths.extend(
        index
            .iter()
            .map(|entry| entry.path)
            .filter(|path| worlds::is_learner(path)),
    );
    if paths.is_empty() {
        // No paths would mean every path, tooling included.
        return Ok(());
    }
    let mut checkout = CheckoutBuilder::new();
    checkout
        .force()
        .remove_untracked(true)
        .disable_pathspec_match(true);
    for path in paths {
        checkout.path(path);
    }
    git.checkout_tree(target.as_object(), Some(&mut checkout))
        .and_then(|()| sync_learner_index(index, &new_tree, wanted))
        .map_err(|error| {
            Error::bad_input(format!(
                "the branch now points at the re-cut commits, but updating the work tree or the index failed: {}; \
                 run `git status` and restore the learner's files from HEAD",
                error.message()
            ))
        })
}

/// Every learner blob (file, symlink) of `tree`: path → (id, mode).
fn learner_blobs(git: &Repository, tree: &Tree<'_>) -> Result<Vec<(Vec<u8>, tree::Blob)>> {
    let listed = tree::list_tree(git, tree, &worlds::is_tooling)?;
    Ok(listed
        .into_iter()
        .map(|(path, blob)| (path.into_os_string().into_vec(), blob))
        .collect())
}

/// Sets the index's learner entries to `tree`'s, leaving every tooling entry
/// as it is. Checkout leaves the index entry of a file alone when the file
/// already matches, so this does what it didn't. New entries carry no stat
/// data, so git compares their content on its next look (as after
/// `git reset -- <paths>`).
fn sync_learner_index(
    index: &mut Index,
    tree: &Tree<'_>,
    wanted: Vec<(Vec<u8>, tree::Blob)>,
) -> Result<(), git2::Error> {
    let stale: Vec<Vec<u8>> = index
        .iter()
        .map(|entry| entry.path)
        .filter(|path| worlds::is_learner(path) && tree.get_path(repo_path(path)).is_err())
        .collect();
    for path in stale {
        index.remove_path(repo_path(&path))?;
    }
    for (path, blob) in wanted {
        let mode = blob.mode as u32;
        let current = index.get_path(repo_path(&path), 0);
        if current.is_some_and(|entry| entry.id == blob.oid && entry.mode == mode) {
            continue;
        }
        let never = IndexTime::new(0, 0);
        index.add(&IndexEntry {
            ctime: never,
            mtime: never,
            dev: 0,
            ino: 0,
            mode,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: blob.oid,
            flags: 0,
            flags_extended: 0,
            path,
        })?;
    }
    index.write()
}

fn print_commits(
    git: &Repository,
    branch: &Branch,
    old_head: &Commit<'_>,
    commits: &[Oid],
    notes: &[String],
) -> Result<()> {
    let shown_branch = branch
        .name
        .strip_prefix("refs/heads/")
        .unwrap_or(&branch.name);
    outln!(
        "Re-cut on {shown_branch}, on top of {}:",
        describe(old_head)
    )?;
    for id in commits {
        let commit = git
            .find_commit(*id)
            .map_err(error::git(format!("cannot read commit {id}")))?;
        outln!("  {}", describe(&commit))?;
    }
    for note in notes {
        outln!("note: {note}")?;
    }
    outln!(
        "The learner's files in the work tree and the index now match HEAD; \
         tooling files and their index entries were left as they were."
    )?;
    Ok(())
}

fn restore_message(id: ChapterId, from: &str, head: &Commit<'_>) -> String {
    format!(
        "Restore chapter {id}'s starting point, to re-cut it\n\n\
         Learner's world: {from}.\n\
         Tooling: as at {}.\n\
         Made by `cargo xtask recut {id}`.\n",
        describe(head)
    )
}

/// Every path of a merge's conflicts, sorted.
fn conflicting_files(merged: &Index) -> Result<Vec<String>> {
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
    Ok(files.into_iter().collect())
}

fn conflict_message(
    recut: ChapterId,
    later: ChapterId,
    checkpoint: &Checkpoint,
    files: &[String],
    target: &Tree<'_>,
) -> String {
    format!(
        "chapter {later}'s layer does not replay onto the re-cut chapter {recut}: \
         conflicts in {files}.\n\
         Nothing was changed: no branch moved, the index and the work tree are as they were.\n\
         To re-cut both chapters:\n  \
         1. cargo xtask recut {recut} --only   (chapter {later} keeps its old checkpoint for now)\n  \
         2. bring the work tree's learner world to chapter {later}'s end state and make it fit, e.g.\n       \
            {restore}\n  \
         3. cargo xtask recut {later}   (it starts from the new chapter {recut} and replays the chapters after it)",
        files = files.join(", "),
        restore = restore_command(&checkpoint.target.short, target),
    )
}

/// The git command that brings the work tree's learner world to `tree`
/// (of commit `short`): its top-level learner entries, restored without
/// overlay, so files it lacks are removed.
fn restore_command(short: &str, tree: &Tree<'_>) -> String {
    let paths: Vec<String> = tree
        .iter()
        .filter(|entry| worlds::is_learner(entry.name_bytes()))
        .map(|entry| shown(entry.name_bytes()))
        .collect();
    format!("git restore --source={short} -- {}", paths.join(" "))
}

/// The full message of `commit`.
fn message_of(git: &Repository, commit: Oid) -> Result<String> {
    let commit = git
        .find_commit(commit)
        .map_err(error::git(format!("cannot read commit {commit}")))?;
    Ok(String::from_utf8_lossy(commit.message_bytes()).into_owned())
}

/// `abc1234 subject`, as `git log --oneline` shows a commit.
fn describe(commit: &Commit<'_>) -> String {
    let subject = String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default());
    format!("{} {subject}", &commit.id().to_string()[..7])
}

fn find_tree(git: &Repository, tree: Oid) -> Result<Tree<'_>> {
    git.find_tree(tree)
        .map_err(error::git(format!("cannot read tree {tree}")))
}

fn empty_tree(git: &Repository) -> Result<Oid> {
    git.treebuilder(None)
        .and_then(|builder| builder.write())
        .map_err(error::git("cannot write the empty tree"))
}

fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = prefix.to_vec();
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

fn repo_path(path: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(path))
}

fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}
