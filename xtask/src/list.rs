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
        let json = self.json;
        let rows: Vec<Row> = chapter::all(&repo.checkpoints_dir())?
            .into_iter()
            .map(|chapter| {
                let title = chapter.load().map(|manifest| manifest.title);
                let located = locate::locate(&repo.git, chapter.id);
                let problem = match (&title, &located) {
                    (Err(error), _) => Some(error.to_string()),
                    (_, Err(error)) => Some(error.to_string()),
                    _ => None,
                };
                let (parent, target) = match located {
                    Ok(checkpoint) => (Some(checkpoint.parent), Some(checkpoint.target)),
                    Err(_) => (None, None),
                };
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
        if json {
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
            match (&row.title, &row.parent, &row.target) {
                (None, _, _) => {
                    outln!("{}  (manifest does not load)", row.id);
                    outln!("    {problem}");
                }
                (Some(title), Some(parent), Some(target)) => {
                    outln!("{}  {}", row.id, escape_control(title));
                    for (role, commit) in [("parent", parent), ("target", target)] {
                        let subject = escape_control(&commit.subject);
                        outln!("    {role} {}  {subject}", commit.short);
                    }
                }
                (Some(title), _, _) => outln!(
                    "{}  {}\n    does not locate: {problem}",
                    row.id,
                    escape_control(title)
                ),
            }
        }
        Ok(())
    }
}
