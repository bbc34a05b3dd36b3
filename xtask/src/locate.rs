//! A chapter's checkpoint commits: the first `course(NN):` commit from HEAD
//! in topological order is the target, its first parent the parent.

use git2::{Commit, Oid, Repository, Sort};
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
    /// The previous chapter's `course(NN):` commit when the parent holds the
    /// same learner world, else the parent.
    pub start: CommitInfo,
    /// The previous chapter's `course(NN):` commit when the start's learner
    /// world is not its: then both are named.
    pub previous_end: Option<CommitInfo>,
}

impl Checkpoint {
    /// The commit a lab starts from: the start, or the target when observing.
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
    pub id: String,
    /// As `git log --oneline` abbreviates it.
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

pub fn locate(repo: &Repository, id: ChapterId) -> Result<Checkpoint> {
    locate_cut(repo, id)?.ok_or_else(|| {
        Error::bad_input(say::no_checkpoint_commit(
            &id.to_string(),
            &id.commit_prefix(),
            repo.is_shallow(),
        ))
    })
}

/// Locates chapter `id`, or `None` when it was never cut. A shallow clone
/// may hide the checkpoint, so there the answer is [`locate`]'s.
pub fn locate_if_cut(repo: &Repository, id: ChapterId) -> Result<Option<Checkpoint>> {
    if repo.is_shallow() {
        locate(repo, id).map(Some)
    } else {
        locate_cut(repo, id)
    }
}

fn locate_cut(repo: &Repository, id: ChapterId) -> Result<Option<Checkpoint>> {
    let head = repo
        .head()
        .and_then(|head| head.peel_to_commit())
        .map_err(error::git("cannot read HEAD"))?;
    let prefix = id.commit_prefix();
    let Some(target) = newest(repo, &head, |subject| {
        subject.starts_with(prefix.as_bytes())
    })?
    else {
        return Ok(None);
    };
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
        newest(repo, &parent, |subject| is_earlier_checkpoint(subject, id))?
    };
    let (start, previous_end) = match previous {
        Some(previous) if same_learner_world(&previous, &parent)? => (previous, None),
        previous => (parent.clone(), previous.as_ref().map(CommitInfo::of)),
    };
    Ok(Some(Checkpoint {
        parent: CommitInfo::of(&parent),
        target: CommitInfo::of(&target),
        start: CommitInfo::of(&start),
        previous_end,
    }))
}

/// True when `subject` is `course(NN):` with NN below `id`.
fn is_earlier_checkpoint(subject: &[u8], id: ChapterId) -> bool {
    String::from_utf8_lossy(subject)
        .strip_prefix("course(")
        .and_then(|rest| rest.split_once("):"))
        .and_then(|(number, _)| number.parse::<ChapterId>().ok())
        .is_some_and(|earlier| earlier < id)
}

/// True when two commits hold the same top-level learner entries.
fn same_learner_world(a: &Commit<'_>, b: &Commit<'_>) -> Result<bool> {
    let learner = |commit: &Commit<'_>| -> Result<Vec<(Vec<u8>, Oid, i32)>> {
        let tree = commit.tree().map_err(error::git(format!(
            "cannot read the tree of {}",
            commit.id()
        )))?;
        Ok(tree
            .iter()
            .filter(|entry| !crate::worlds::is_tooling(entry.name_bytes()))
            .map(|entry| (entry.name_bytes().to_vec(), entry.id(), entry.filemode()))
            .collect())
    };
    Ok(learner(a)? == learner(b)?)
}

/// The first commit from `from` back, in topological order, whose message
/// `wanted` takes, whatever the committer times say.
fn newest<'r>(
    repo: &'r Repository,
    from: &Commit<'r>,
    wanted: impl Fn(&[u8]) -> bool,
) -> Result<Option<Commit<'r>>> {
    let failed = |error| error::git("cannot walk the history")(error);
    let mut walk = repo.revwalk().map_err(failed)?;
    walk.set_sorting(Sort::TOPOLOGICAL).map_err(failed)?;
    walk.push(from.id()).map_err(failed)?;
    for id in walk {
        let id = id.map_err(failed)?;
        let commit = repo
            .find_commit(id)
            .map_err(error::git(format!("cannot read commit {id}")))?;
        if wanted(commit.message_bytes()) {
            return Ok(Some(commit));
        }
    }
    Ok(None)
}
