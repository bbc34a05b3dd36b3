//! `compare NN DIR`: once the chapter is complete in a practice folder, each
//! teaching file of the learner beside the reference answer (the target's),
//! as a diff, with one line per file saying how far apart they are. Before
//! that it refuses; `--anyway` insists.
//!
//! "Complete" is `check`'s verdict, not a second opinion: compare calls
//! [`crate::check::position`] and reads its typed result (a signal or the
//! timeout ends its runs as it ends check's). The learner's files are read
//! without following a symlink.

use std::io::IsTerminal;
use std::path::Path;

use git2::{DiffOptions, Patch};

use crate::chapter;
use crate::cli;
use crate::error::{self, Error, Result};
use crate::learner_text as say;
use crate::locate;
use crate::manifest::{Manifest, RepoPath};
use crate::out::{self, noteln, outln, shell_word};
use crate::repo::CourseRepo;
use crate::tree;

/// One teaching file, the learner's and the answer's.
struct Pair {
    path: RepoPath,
    /// `None` when the lab has no such file.
    mine: Option<String>,
    answer: String,
}

impl cli::Compare {
    /// Runs the command: exit 1 (and nothing shown) while the chapter is not
    /// complete in DIR, unless `--anyway`.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let manifest = chapter::find(&repo.checkpoints_dir(), self.id)?.load()?;
        let checkpoint = locate::locate(&repo.git, self.id)?;
        chapter::check_target(repo, &manifest, &checkpoint)?;
        let lab = crate::lab_dir::find_lab(repo, &self.dir, &manifest, "compare")?;
        if !self.anyway {
            self.require_complete(repo, &manifest, &lab)?;
        }
        let answers = repo.tree_of(checkpoint.target.oid)?;
        let pairs = manifest
            .teaching_files
            .iter()
            .map(|path| {
                let answer = tree::file_at(&repo.git, &answers, path.as_str())?.unwrap_or_default();
                Ok(Pair {
                    path: path.clone(),
                    mine: chapter::read_text_inside(
                        &lab,
                        Path::new(path.as_str()),
                        [say::compare_symlink, say::compare_not_readable],
                        say::compare_not_utf8,
                    )?,
                    answer: String::from_utf8_lossy(&answer).into_owned(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        print(
            self.anyway,
            &manifest,
            &shell_word(&self.dir.display().to_string()),
            &pairs,
        )
    }

    /// Refuses unless `check NN DIR` calls the chapter complete: what is
    /// still red, and how to look anyway.
    fn require_complete(&self, repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> Result<()> {
        let dir = shell_word(&self.dir.display().to_string());
        noteln!("{}", say::compare_checking(&dir));
        let position = crate::check::position(repo, manifest, lab, self.limit.duration())?;
        if position.complete() {
            return Ok(());
        }
        let (passed, expected) = position.passed();
        let verdict = say::compare_verdict(passed, expected, &position.red_steps());
        let id = manifest.id.to_string();
        let anyway = format!("cargo xtask compare {id} {dir} --anyway");
        Err(Error::check_failed(say::compare_refused(
            &id, &dir, &verdict, &anyway,
        )))
    }
}

/// How one diff line is shown: its colour on a terminal.
#[derive(Clone, Copy)]
enum Paint {
    Plain,
    Removed,
    Added,
    Hunk,
}

fn paint(text: &str, paint: Paint, colour: bool) -> String {
    let code = match paint {
        Paint::Plain => return text.to_string(),
        Paint::Removed => "31",
        Paint::Added => "32",
        Paint::Hunk => "36",
    };
    if colour {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn print(anyway: bool, manifest: &Manifest, lab: &str, pairs: &[Pair]) -> Result<()> {
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let id = manifest.id.to_string();
    outln!("{}", say::compare_heading(&id, &manifest.title, lab));
    outln!("{}", say::COMPARE_LEGEND);
    let mut distances = Vec::new();
    for pair in pairs {
        let mine = pair.mine.as_deref().unwrap_or_default();
        let patch = Patch::from_buffers(
            mine.as_bytes(),
            Some(Path::new(pair.path.as_str())),
            pair.answer.as_bytes(),
            Some(Path::new(pair.path.as_str())),
            Some(&mut DiffOptions::new()),
        )
        .map_err(error::git(format!("cannot diff {}", pair.path)))?;
        let (_, added, removed) = patch
            .line_stats()
            .map_err(error::git(format!("cannot diff {}", pair.path)))?;
        distances.push(say::compare_distance(
            pair.path.as_str(),
            pair.mine.as_ref().map(|mine| mine.lines().count()),
            pair.answer.lines().count(),
            removed,
            added,
        ));
        if added + removed == 0 {
            continue;
        }
        outln!("\n{}", say::compare_file(pair.path.as_str()));
        print_hunks(&patch, colour)?;
    }
    outln!("\n{}", say::COMPARE_SUMMARY);
    for line in distances {
        outln!("{line}");
    }
    let closing = if anyway {
        say::COMPARE_CLOSING_ANYWAY
    } else {
        say::COMPARE_CLOSING
    };
    outln!("\n{closing}");
    out::flush();
    Ok(())
}

/// The patch's hunks: a header, then each line with its `-`, `+` or space.
fn print_hunks(patch: &Patch<'_>, colour: bool) -> Result<()> {
    for hunk in 0..patch.num_hunks() {
        let (header, lines) = patch
            .hunk(hunk)
            .map_err(error::git("cannot read a diff hunk"))?;
        let header = String::from_utf8_lossy(header.header());
        outln!("{}", paint(header.trim_end(), Paint::Hunk, colour));
        for index in 0..lines {
            let line = patch
                .line_in_hunk(hunk, index)
                .map_err(error::git("cannot read a diff line"))?;
            let content = String::from_utf8_lossy(line.content());
            let content = content.trim_end_matches('\n');
            let (mark, how) = match line.origin() {
                '-' => ('-', Paint::Removed),
                '+' => ('+', Paint::Added),
                ' ' => (' ', Paint::Plain),
                // "\ No newline at end of file" and the like: not a line of either file.
                _ => continue,
            };
            outln!("{}", paint(&format!("{mark}{content}"), how, colour));
        }
    }
    Ok(())
}
