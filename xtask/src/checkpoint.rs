//! `checkpoint NN`: where a chapter starts and ends, and how to practise it.
//! The answer is one `git diff` away, so the diff command comes last, after
//! a line asking the learner to predict it first.

use git2::Delta;
use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::{self, Result};
use crate::learner_text as say;
use crate::locate::{self, Checkpoint};
use crate::manifest::{ChapterId, Manifest, Mode, RepoPath};
use crate::out::{outln, shell_line};
use crate::repo::CourseRepo;

/// The `--json` shape of `checkpoint NN`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report<'a> {
    pub id: ChapterId,
    pub title: &'a str,
    pub mode: Mode,
    /// The chapter's start (`locate::Checkpoint::start`), under the name
    /// `parent` the JSON has always used.
    #[serde(rename = "parent")]
    pub start: &'a locate::CommitInfo,
    /// The previous chapter's end, when its learner code is not the start's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_end: Option<&'a locate::CommitInfo>,
    pub target: &'a locate::CommitInfo,
    /// Files the layer changes, with git's one-letter status (A, M, D, T).
    pub files: Vec<ChangedFile>,
    pub focused_test: &'a str,
    /// Further files the lab takes from the target (`labFiles`).
    pub lab_files: Vec<&'a str>,
    pub commands: Commands,
}

#[derive(Serialize)]
pub struct ChangedFile {
    pub status: char,
    pub path: String,
    pub role: Role,
    /// True for a teaching file the chapter's starter begins.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub starter: bool,
}

/// Where a file the layer changes goes for a learner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A teaching file: the learner writes it.
    Teaching,
    /// Handed to the lab from the target: a test file or a lab file.
    Lab,
    /// Stays in the repository (its own tests): never in a lab.
    Repository,
}

#[derive(Serialize)]
pub struct Commands {
    pub practice: String,
    pub run: String,
    pub diff: String,
}

impl cli::Checkpoint {
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let (id, json) = (self.id, self.json);
        let folder = chapter::find(&repo.checkpoints_dir(), id)?;
        let manifest = folder.load()?;
        let checkpoint = locate::locate(&repo.git, id)?;
        chapter::check_target(repo, &manifest, &checkpoint)?;
        let (start, target) = (&checkpoint.start, &checkpoint.target);
        let report = Report {
            id: manifest.id,
            title: &manifest.title,
            mode: manifest.mode,
            start,
            previous_end: checkpoint.previous_end.as_ref(),
            target,
            files: changed_files(repo, &manifest, &checkpoint, &folder.starter(&manifest)?)?,
            focused_test: manifest.focused_test.as_str(),
            lab_files: manifest
                .lab_files
                .iter()
                .map(|file| file.as_str())
                .collect(),
            commands: Commands {
                practice: format!("cargo xtask practice {id} ./lab"),
                run: shell_line(&manifest.run),
                // The answer is the teaching files: nothing of the tooling (a
                // re-cut's start carries a different one) or the benchmarks.
                diff: format!(
                    "git diff {} {} -- {}",
                    start.short,
                    target.short,
                    shell_line(manifest.teaching_files.iter().map(RepoPath::as_str))
                ),
            },
        };
        if json {
            crate::out::json(&report);
        } else {
            outln!("{}", say::checkpoint_report(&report));
        }
        Ok(())
    }
}

/// The learner's files that differ between start and target, with their roles.
pub fn changed_files(
    repo: &CourseRepo,
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    starter: &[(RepoPath, Vec<u8>)],
) -> Result<Vec<ChangedFile>> {
    let has = |files: Vec<&RepoPath>, path: &str| files.iter().any(|file| file.as_str() == path);
    let old = repo.tree_of(checkpoint.start.oid)?;
    let new = repo.tree_of(checkpoint.target.oid)?;
    let diff = repo
        .git
        .diff_tree_to_tree(Some(&old), Some(&new), None)
        .map_err(error::git("cannot diff parent and target"))?;
    Ok(diff
        .deltas()
        .filter(|delta| {
            [delta.old_file(), delta.new_file()]
                .iter()
                .filter_map(|file| file.path_bytes())
                .any(|path| !crate::worlds::is_tooling(path))
        })
        .map(|delta| {
            let file = match delta.status() {
                Delta::Deleted => delta.old_file(),
                _ => delta.new_file(),
            };
            let path = String::from_utf8_lossy(file.path_bytes().unwrap_or_default());
            // No rename detection: a renamed file is one deleted, one added.
            let status = match delta.status() {
                Delta::Added => 'A',
                Delta::Deleted => 'D',
                Delta::Modified => 'M',
                Delta::Typechange => 'T',
                _ => '?',
            };
            let path = path.into_owned();
            let role = if has(manifest.teaching_files.iter().collect(), &path) {
                Role::Teaching
            } else if has(manifest.target_files(), &path) {
                Role::Lab
            } else {
                Role::Repository
            };
            let starter = manifest.mode == Mode::Rebuild
                && starter.iter().any(|(file, _)| file.as_str() == path);
            ChangedFile {
                status,
                path,
                role,
                starter,
            }
        })
        .collect())
}
