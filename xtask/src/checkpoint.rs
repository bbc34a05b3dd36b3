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
use crate::manifest::{ChapterId, Mode};
use crate::out::{outln, shell_word};
use crate::repo::CourseRepo;

/// The `--json` shape of `checkpoint NN`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    id: ChapterId,
    title: &'a str,
    mode: Mode,
    /// The chapter's start (`locate::Checkpoint::start`), under the name
    /// `parent` the JSON has always used.
    #[serde(rename = "parent")]
    start: &'a locate::CommitInfo,
    /// The previous chapter's end, when its learner code is not the start's.
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_end: Option<&'a locate::CommitInfo>,
    target: &'a locate::CommitInfo,
    /// Files the layer changes, with git's one-letter status (A, M, D, T).
    files: Vec<ChangedFile>,
    focused_test: &'a str,
    /// Further files the lab takes from the target (`labFiles`).
    lab_files: Vec<&'a str>,
    commands: Commands,
}

#[derive(Serialize)]
struct ChangedFile {
    status: char,
    path: String,
}

#[derive(Serialize)]
struct Commands {
    practice: String,
    run: String,
    diff: String,
}

impl cli::Checkpoint {
    /// Runs the command.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let (id, json) = (self.id, self.json);
        let manifest = chapter::find(&repo.checkpoints_dir(), id)?.load()?;
        let checkpoint = locate::locate(&repo.git, id)?;
        chapter::check_target(repo, &manifest, &checkpoint)?;
        // The answer is the teaching files: nothing of the tooling (a
        // re-cut's start carries a different one) or the benchmarks.
        let teaching = manifest.teaching_files.iter();
        let teaching: Vec<_> = teaching.map(|file| shell_word(file.as_str())).collect();
        let (start, target) = (&checkpoint.start, &checkpoint.target);
        let report = Report {
            id: manifest.id,
            title: &manifest.title,
            mode: manifest.mode,
            start,
            previous_end: checkpoint.previous_end.as_ref(),
            target,
            files: changed_files(repo, &checkpoint)?,
            focused_test: manifest.focused_test.as_str(),
            lab_files: manifest
                .lab_files
                .iter()
                .map(|file| file.as_str())
                .collect(),
            commands: Commands {
                practice: format!("cargo xtask practice {id} ./lab"),
                run: manifest.run.join(" "),
                diff: format!(
                    "git diff {} {} -- {}",
                    start.short,
                    target.short,
                    teaching.join(" ")
                ),
            },
        };
        if json {
            crate::out::json(&report);
        } else {
            print_text(&report);
        }
        Ok(())
    }
}

/// The learner's files that differ between start and target.
fn changed_files(repo: &CourseRepo, checkpoint: &Checkpoint) -> Result<Vec<ChangedFile>> {
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
            ChangedFile { status, path }
        })
        .collect())
}

/// The learner's view: where the chapter starts and ends, named by what
/// they are, and the diff only after asking for a prediction.
fn print_text(report: &Report<'_>) {
    outln!(
        "{}",
        say::checkpoint_heading(report.id, report.title, report.mode)
    );
    let (start, previous_end) = (report.start, report.previous_end);
    let ends = say::checkpoint_ends(report.id, start, previous_end, report.target);
    outln!("{ends}");
    outln!();
    outln!("{}", say::layer_changes(report.files.len()));
    for file in &report.files {
        outln!("  {} {}", file.status, file.path);
    }
    outln!();
    outln!(
        "{}",
        say::checkpoint_commands(
            report.focused_test,
            &report.lab_files,
            &report.commands.practice,
            &report.commands.run
        )
    );
    outln!();
    outln!("{}", say::predict_then_diff(&report.commands.diff));
}
