//! Finding a chapter's checkpoint commits: the newest commit reachable from
//! HEAD whose subject starts with `course(NN):` is the target, and its first
//! parent is the parent. "Newest" is by committer time, which is also the
//! topological order whenever clocks move forward; the walk stops at the
//! first match, so a recent chapter is found without reading old history.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use git2::{Commit, Oid, Repository};
use serde::Serialize;

use crate::error::{self, Error, Result};
use crate::learner_text::basic as say;
use crate::manifest::{ChapterId, Mode};
use crate::repo::short_id;

/// A chapter's two commits.
#[derive(Debug, Clone, Serialize)]
pub struct Checkpoint {
    pub parent: CommitInfo,
    pub target: CommitInfo,
}

impl Checkpoint {
    /// The commit a practice folder starts from: the parent when rebuilding,
    /// the target when observing.
    pub fn base(&self, mode: Mode) -> &CommitInfo {
        match mode {
            Mode::Rebuild => &self.parent,
            Mode::Observe => &self.target,
        }
    }
}

/// One commit, as the tool prints it.
#[derive(Debug, Clone, Serialize)]
pub struct CommitInfo {
    /// The full id.
    pub id: String,
    /// The id abbreviated to [`crate::repo::SHORT_ID_LEN`] characters (as
    /// `git log --oneline` would).
    pub short: String,
    pub subject: String,
    #[serde(skip)]
    pub oid: Oid,
}

impl CommitInfo {
    fn of(commit: &Commit<'_>) -> Self {
        CommitInfo {
            id: commit.id().to_string(),
            short: short_id(commit.id()),
            subject: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
                .into_owned(),
            oid: commit.id(),
        }
    }
}

/// Locates chapter `id` in the history of HEAD.
pub fn locate(repo: &Repository, id: ChapterId) -> Result<Checkpoint> {
    let prefix = id.commit_prefix();
    let target = find_target(repo, prefix.as_bytes())?.ok_or_else(|| {
        Error::bad_input(say::no_checkpoint_commit(
            &id.to_string(),
            &prefix,
            repo.is_shallow(),
        ))
    })?;
    let (chapter, short) = (id.to_string(), short_id(target.id()));
    let parent = match target.parent_count() {
        0 if repo.is_shallow() => {
            return Err(Error::bad_input(say::target_parent_not_fetched(
                &chapter, &short,
            )));
        }
        0 => return Err(Error::bad_input(say::target_is_root(&chapter, &short))),
        _ => target
            .parent(0)
            .map_err(|_| Error::bad_input(say::target_parent_missing(&chapter, &short)))?,
    };
    Ok(Checkpoint {
        parent: CommitInfo::of(&parent),
        target: CommitInfo::of(&target),
    })
}

/// Walks the history from HEAD newest first (by committer time), reading
/// each commit once, and returns the first whose subject has `prefix`.
fn find_target<'r>(repo: &'r Repository, prefix: &[u8]) -> Result<Option<Commit<'r>>> {
    let head = repo
        .head()
        .and_then(|head| head.peel_to_commit())
        .map_err(error::git("cannot read HEAD"))?;
    let mut seen = HashSet::from([head.id()]);
    let mut queue = BinaryHeap::from([Newest::new(head, 0)]);
    let mut order = 0;
    while let Some(Newest { commit, .. }) = queue.pop() {
        if commit.message_bytes().starts_with(prefix) {
            return Ok(Some(commit));
        }
        for parent in commit.parent_ids() {
            if seen.insert(parent) {
                let parent = repo
                    .find_commit(parent)
                    .map_err(error::git(format!("cannot read commit {parent}")))?;
                order += 1;
                queue.push(Newest::new(parent, order));
            }
        }
    }
    Ok(None)
}

/// A commit ordered by committer time, newest first; ties keep walk order.
struct Newest<'r> {
    time: i64,
    order: Reverse<u64>,
    commit: Commit<'r>,
}

impl<'r> Newest<'r> {
    fn new(commit: Commit<'r>, order: u64) -> Self {
        Newest {
            time: commit.time().seconds(),
            order: Reverse(order),
            commit,
        }
    }
}

impl PartialEq for Newest<'_> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.order) == (other.time, other.order)
    }
}

impl Eq for Newest<'_> {}

impl PartialOrd for Newest<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Newest<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time, self.order).cmp(&(other.time, other.order))
    }
}

/// Locates chapter `id`, or `None` when no commit reachable from HEAD is its
/// checkpoint yet (a chapter that was never cut). A shallow clone may hide
/// the checkpoint, so there the answer is [`locate`]'s.
pub fn locate_if_cut(repo: &Repository, id: ChapterId) -> Result<Option<Checkpoint>> {
    let cut = find_target(repo, id.commit_prefix().as_bytes())?.is_some();
    if cut || repo.is_shallow() {
        locate(repo, id).map(Some)
    } else {
        Ok(None)
    }
}
