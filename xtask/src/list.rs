//! `list`: every chapter folder, and whether its checkpoint locates.

use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::Result;
use crate::locate::{self, CommitInfo};
use crate::out::{escape_control, outln};
use crate::repo::CourseRepo;

/// One row of `list --json`.
#[derive(Serialize)]
struct Row {
    id: String,
    title: Option<String>,
    located: bool,
    parent: Option<CommitInfo>,
    target: Option<CommitInfo>,
    /// Why the manifest did not load or the checkpoint did not locate.
    problem: Option<String>,
}

impl cli::List {
    /// Runs the command. A chapter that does not locate is reported, not fatal.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let rows: Vec<Row> = chapter::all(&repo.checkpoints_dir())?
            .into_iter()
            .map(|chapter| {
                let title = chapter.load().map(|manifest| manifest.title);
                let located = locate::locate(&repo.git, chapter.id);
                let problem = (title.as_ref().err()).or(located.as_ref().err());
                let problem = problem.map(ToString::to_string);
                let ends = located.map(|checkpoint| (checkpoint.parent, checkpoint.target));
                let (parent, target) = ends.ok().unzip();
                Row {
                    id: chapter.id.to_string(),
                    title: title.ok(),
                    located: parent.is_some(),
                    parent,
                    target,
                    problem,
                }
            })
            .collect();
        if self.json {
            crate::out::json(&rows);
            return Ok(());
        }
        if rows.is_empty() {
            outln!(
                "No chapters: {} holds no chapter folder with a {}",
                repo.checkpoints_dir().display(),
                chapter::MANIFEST_FILE
            );
        }
        for row in &rows {
            let problem = escape_control(row.problem.as_deref().unwrap_or_default());
            let Some(title) = &row.title else {
                outln!("{}  (manifest does not load)\n    {problem}", row.id);
                continue;
            };
            outln!("{}  {}", row.id, escape_control(title));
            let (Some(parent), Some(target)) = (&row.parent, &row.target) else {
                outln!("    does not locate: {problem}");
                continue;
            };
            for (role, commit) in [("parent", parent), ("target", target)] {
                let subject = escape_control(&commit.subject);
                outln!("    {role} {}  {subject}", commit.short);
            }
        }
        Ok(())
    }
}
