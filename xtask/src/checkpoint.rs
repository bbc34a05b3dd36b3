//! `checkpoint NN`: where a chapter starts and ends, and how to practise it.
//! The answer is one `git diff` away, so the diff command comes last, after
//! a line asking the learner to predict it first.

use git2::{Delta, DiffOptions};
use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::{self, Result};
use crate::learner_text as say;
use crate::locate::{self, Checkpoint};
use crate::manifest::{ChapterId, Manifest, Mode};
use crate::out::outln;
use crate::repo::CourseRepo;

/// The `--json` shape of `checkpoint NN`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    id: ChapterId,
    title: &'a str,
    mode: Mode,
    parent: &'a locate::CommitInfo,
    target: &'a locate::CommitInfo,
    /// Files the layer changes, with git's one-letter status (A, M, D, R, …).
    files: Vec<ChangedFile>,
    focused_test: &'a str,
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
        let files = changed_files(repo, &checkpoint)?;
        let report = Report {
            id: manifest.id,
            title: &manifest.title,
            mode: manifest.mode,
            parent: &checkpoint.parent,
            target: &checkpoint.target,
            files,
            focused_test: manifest.focused_test.as_str(),
            commands: commands(&manifest, &checkpoint),
        };
        if json {
            crate::out::json(&report);
        } else {
            print_text(&report);
        }
        Ok(())
    }
}

fn commands(manifest: &Manifest, checkpoint: &Checkpoint) -> Commands {
    Commands {
        practice: format!("cargo xtask practice {} ./lab", manifest.id),
        run: manifest.run.join(" "),
        diff: format!(
            "git diff {} {}",
            checkpoint.parent.short, checkpoint.target.short
        ),
    }
}

/// The files that differ between parent and target.
fn changed_files(repo: &CourseRepo, checkpoint: &Checkpoint) -> Result<Vec<ChangedFile>> {
    let old = repo.tree_of(checkpoint.parent.oid)?;
    let new = repo.tree_of(checkpoint.target.oid)?;
    let diff = repo
        .git
        .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut DiffOptions::new()))
        .map_err(error::git("cannot diff parent and target"))?;
    Ok(diff
        .deltas()
        .map(|delta| {
            let file = match delta.status() {
                Delta::Deleted => delta.old_file(),
                _ => delta.new_file(),
            };
            let path = file
                .path_bytes()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            ChangedFile {
                status: status_letter(delta.status()),
                path: path.into_owned(),
            }
        })
        .collect())
}

fn status_letter(status: Delta) -> char {
    match status {
        Delta::Added => 'A',
        Delta::Deleted => 'D',
        Delta::Modified => 'M',
        Delta::Renamed => 'R',
        Delta::Copied => 'C',
        Delta::Typechange => 'T',
        _ => '?',
    }
}

/// The learner's view: where the chapter starts and ends, named by what
/// they are, and the diff only after asking for a prediction.
fn print_text(report: &Report<'_>) {
    outln!(
        "{}",
        say::checkpoint_heading(report.id, report.title, report.mode)
    );
    let ends = [
        (say::START, say::chapter_start(report.id), report.parent),
        (say::END, say::end_of(report.id), report.target),
    ];
    for (role, what, commit) in ends {
        outln!(
            "{}",
            say::checkpoint_commit(role, &what, &commit.short, &commit.id)
        );
    }
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
            &report.commands.practice,
            &report.commands.run
        )
    );
    outln!();
    outln!("{}", say::predict_then_diff(&report.commands.diff));
}
