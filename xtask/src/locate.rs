//! Finding a chapter's checkpoint commits: the newest commit reachable from
//! HEAD whose subject starts with `course(NN):` is the target, and its first
//! parent is the parent. The chapter's start is named by the previous
//! chapter's `course(MM):` commit when the parent holds its learner world
//! (recut's restore commit does), so a learner meets one name for it. "Newest" is by committer time, which is also the
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
    /// The target's first parent, as git has it.
    pub parent: CommitInfo,
    pub target: CommitInfo,
    /// The chapter's start, one name for it: the previous chapter's
    /// `course(NN):` commit when the parent holds the same learner world
    /// (a re-cut puts its restore commit between them), else the parent.
    pub start: CommitInfo,
    /// The previous chapter's `course(NN):` commit when the start's learner
    /// world is not its: then both are named.
    pub previous_end: Option<CommitInfo>,
}

impl Checkpoint {
    /// The commit a practice folder starts from: the start when rebuilding,
    /// the target when observing. Only its learner world is read.
    pub fn base(&self, mode: Mode) -> &CommitInfo {
        match mode {
            Mode::Rebuild => &self.start,
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
    let head = head_commit(repo)?;
    let target =
        newest(repo, head, |subject| subject.starts_with(prefix.as_bytes()))?.ok_or_else(|| {
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
            .map_err(|_| Error::bad_input(say::target_parent_not_fetched(&chapter, &short)))?,
    };
    let previous = if is_earlier_checkpoint(parent.message_bytes(), id) {
        None
    } else {
        newest(repo, parent.clone(), |subject| {
            is_earlier_checkpoint(subject, id)
        })?
    };
    let (start, previous_end) = match previous {
        Some(previous) if same_learner_world(&previous, &parent)? => (previous, None),
        previous => (
            parent.clone(),
            previous.map(|previous| CommitInfo::of(&previous)),
        ),
    };
    Ok(Checkpoint {
        parent: CommitInfo::of(&parent),
        target: CommitInfo::of(&target),
        start: CommitInfo::of(&start),
        previous_end,
    })
}

fn head_commit(repo: &Repository) -> Result<Commit<'_>> {
    repo.head()
        .and_then(|head| head.peel_to_commit())
        .map_err(error::git("cannot read HEAD"))
}

/// True when `subject` is an earlier chapter's checkpoint: `course(NN):`
/// with NN below `id`.
fn is_earlier_checkpoint(subject: &[u8], id: ChapterId) -> bool {
    let Some(rest) = subject.strip_prefix(b"course(") else {
        return false;
    };
    let Some(end) = rest.iter().position(|&byte| byte == b')') else {
        return false;
    };
    rest.get(end + 1) == Some(&b':')
        && std::str::from_utf8(&rest[..end])
            .ok()
            .and_then(|number| number.parse::<ChapterId>().ok())
            .is_some_and(|earlier| earlier < id)
}

/// True when two commits hold the same learner world (the tooling is told
/// apart by its top-level names, so the top-level entries decide).
fn same_learner_world(a: &Commit<'_>, b: &Commit<'_>) -> Result<bool> {
    let learner = |commit: &Commit<'_>| -> Result<Vec<(Vec<u8>, Oid, i32)>> {
        let tree = commit.tree().map_err(error::git(format!(
            "cannot read the tree of {}",
            commit.id()
        )))?;
        Ok(tree
            .iter()
            .filter(|entry| crate::worlds::is_learner(entry.name_bytes()))
            .map(|entry| (entry.name_bytes().to_vec(), entry.id(), entry.filemode()))
            .collect())
    };
    Ok(learner(a)? == learner(b)?)
}

/// Walks the history from `from` newest first (by committer time), reading
/// each commit once, and returns the first whose message `wanted` takes.
fn newest<'r>(
    repo: &'r Repository,
    from: Commit<'r>,
    wanted: impl Fn(&[u8]) -> bool,
) -> Result<Option<Commit<'r>>> {
    let mut seen = HashSet::from([from.id()]);
    let mut queue = BinaryHeap::from([Newest::new(from, 0)]);
    let mut order = 0;
    while let Some(Newest { commit, .. }) = queue.pop() {
        if wanted(commit.message_bytes()) {
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
    let head = head_commit(repo)?;
    let prefix = id.commit_prefix();
    let cut = newest(repo, head, |subject| subject.starts_with(prefix.as_bytes()))?.is_some();
    if cut || repo.is_shallow() {
        locate(repo, id).map(Some)
    } else {
        Ok(None)
    }
}
