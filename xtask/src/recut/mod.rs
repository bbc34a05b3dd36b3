//! `recut NN`: re-cuts chapter NN from the work tree's learner world and
//! replays every later chapter on top (SPEC §4, §5). For course authors.
//!
//! The work tree's learner world — every path that is not tooling
//! ([`worlds`]), as git would commit it: files with their executable bit,
//! symlinks as symlinks (never followed), without what git ignores (a
//! tracked file counts even when an ignore rule matches it) — is chapter NN's
//! new end state. The work tree counts, not the index: staged and unstaged
//! learner changes alike. A symlink that is absolute or leads out of the
//! work tree, or that stands where the chapter has a folder today, is
//! refused ([`links`]): the chapter's files would leave its history. On top
//! of HEAD, without touching the existing
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
//! Every new commit's tooling is HEAD's, so tooling never conflicts.
//!
//! The modules, in the order a re-cut runs them:
//! [`preflight`] refuses what recut cannot do faithfully (a detached, unborn
//! or doubly symbolic HEAD, a sparse checkout, `core.fileMode=false`, …);
//! [`snapshot`] reads the work tree's learner world into objects; [`plan`]
//! works out the commits as trees ([`merge`] finds the folder/file
//! conflicts git's merge of trees misses); [`apply`] writes them and moves the
//! branch, the index and the work tree together, all or nothing ([`changes`]
//! says what the work tree must change, [`worktree`] changes it reversibly,
//! [`index`] holds git's index lock and prepares the new index); [`report`]
//! prints the result and runs `verify`.
//!
//! **All or nothing.** Until the branch moves, nothing the author can see
//! changes except inside `.git`: `index.lock` is held from the start, the
//! commits are objects, new files and the new index are staged in a folder
//! of the git dir. The work tree's files are then swapped in by renames,
//! each recorded, the branch moves by compare-and-swap, and the new index
//! replaces the old by rename. A failure or a signal (SIGINT, SIGTERM,
//! SIGHUP, SIGQUIT) before the branch moved undoes every rename; after it,
//! the few remaining renames finish. Either way one line says which: the
//! branch, the index and the work tree are all as they were, or all at the
//! new state. (SIGKILL or a power cut during the swap cannot be handled: the
//! old files are then in `.git/xtask-recut-<pid>/old/`, and the next re-cut
//! refuses to start until the author has looked at them.) Standard output
//! going nowhere changes nothing of this: the report goes to `/dev/null`
//! from the first failed write, `verify` still runs and decides the exit
//! status.
//!
//! Exit codes: 2 when the input can't be used and nothing was changed
//! (detached or unborn HEAD, a merge or rebase in progress, unresolved
//! conflicts in the index, a locked index, an unknown chapter, no
//! `user.name`/`user.email`, nothing to re-cut, a re-cut that would leave a
//! chapter's layer empty, or something recut cannot represent faithfully);
//! 1 when a later chapter's layer conflicts with the new state (nothing was
//! changed; the message names the chapter, every conflicting file and what
//! to do), or when the final `verify` fails (the new commits are in place);
//! 3 for a disk or permission failure (undone); 128 + n after signal n.

mod apply;
mod changes;
mod index;
mod links;
mod merge;
mod plan;
mod preflight;
mod report;
mod snapshot;
mod text;
mod worktree;

use git2::{Oid, Repository, Signature};

use crate::chapter::{self, ChapterFolder};
use crate::cli;
use crate::error::{self, Error, Result};
use crate::manifest::ChapterId;
use crate::repo::CourseRepo;
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
    /// Runs the command: appends the re-cut commits, moves the branch, the
    /// index and the learner's world of the work tree to the new HEAD
    /// together, then verifies.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        // From here on a signal is recorded, not fatal: recut holds git's
        // index lock and may be half way through a swap it must undo.
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
    /// and the work tree. An error says where they are: as they were, unless
    /// it says otherwise.
    fn cut(&self, repo: &CourseRepo) -> Result<Appended> {
        let lock = index::Lock::take(&repo.git).map_err(report::unchanged)?;
        worktree::Staging::refuse_leftovers(&repo.git).map_err(report::unchanged)?;
        let (prepared, appended) = self.prepare(repo).map_err(report::unchanged)?;
        prepared.run(lock)?;
        Ok(appended)
    }

    /// Reads the work tree and writes the new commits as objects: nothing
    /// outside the object database changes.
    fn prepare<'r>(&self, repo: &'r CourseRepo) -> Result<(apply::Transaction<'r>, Appended)> {
        let git = &repo.git;
        let branch = preflight::branch(git)?;
        preflight::representable(git)?;
        let (chapters, position) = chapter_position(repo, self.id)?;
        let signature = signature(git)?;
        let current = preflight::resolved_index(git)?;
        let head = git
            .find_commit(branch.head)
            .map_err(error::git("cannot read HEAD's commit"))?;
        let chapter = chapter_today(git, &head, self.id)?;
        let snapshot = snapshot::take(git, &current, &repo.root, &chapter)?;
        let mut notes = snapshot.notes;
        let cuts = plan::Planner {
            git,
            head: &head,
            worktree: snapshot.tree,
            only: self.only,
            notes: &mut notes,
        }
        .plan(&chapters, position)?;
        let commits = apply::append(git, &signature, &head, &cuts)?;
        let transaction = apply::Transaction {
            git,
            root: &repo.root,
            branch: Branch {
                name: branch.name.clone(),
                head: branch.head,
            },
            id: self.id,
            worktree: snapshot.tree,
            new_head: *commits.last().unwrap_or(&branch.head),
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

/// Chapter `id` and the learner world it ends with today: its target, or
/// HEAD's tree when it was never cut.
fn chapter_today<'r>(
    git: &'r Repository,
    head: &git2::Commit<'r>,
    id: ChapterId,
) -> Result<links::Chapter<'r>> {
    let end = match crate::locate::locate_if_cut(git, id)? {
        Some(checkpoint) => git
            .find_commit(checkpoint.target.oid)
            .and_then(|c| c.tree()),
        None => head.tree(),
    };
    Ok(links::Chapter {
        id,
        end: end.map_err(error::git(format!("cannot read chapter {id}'s tree")))?,
    })
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
