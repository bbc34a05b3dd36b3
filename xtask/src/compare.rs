//! `compare NN DIR`: once `check`'s [`crate::check::position`] says the
//! chapter is complete (or with `--anyway`), each teaching file beside the
//! target's, as a diff, with one line per file saying how far apart.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::Path;

use git2::{DiffDelta, DiffHunk, DiffLine, Patch};

use crate::chapter;
use crate::cli;
use crate::error::{self, Error, Result};
use crate::learner_text as say;
use crate::locate;
use crate::manifest::{Manifest, RepoPath};
use crate::out::{self, noteln, outln, shell_word};
use crate::repo::CourseRepo;
use crate::tree;

impl cli::Compare {
    /// Runs the command: exit 1 while the chapter is not complete, unless `--anyway`.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let folder = chapter::find(&repo.checkpoints_dir(), self.id)?;
        let manifest = folder.load()?;
        let starter = folder.starter(&manifest)?;
        let checkpoint = locate::locate(&repo.git, self.id)?;
        chapter::check_target(repo, &manifest, &checkpoint)?;
        let lab = crate::lab_dir::find_lab(repo, &self.dir, &manifest, "compare")?;
        if !self.anyway {
            self.require_complete(repo, &manifest, &lab)?;
        }
        let answers = repo.tree_of(checkpoint.target.oid)?;
        // Every file is read before anything is shown.
        let mut files = Vec::new();
        for path in manifest.teaching_files.iter().map(RepoPath::as_str) {
            let answer = tree::file_at(&repo.git, &answers, path)?.unwrap_or_default();
            let mine = chapter::read_text_inside(
                &lab,
                Path::new(path),
                [say::compare_symlink, say::compare_not_readable],
                say::compare_not_utf8,
            )?;
            files.push((path, mine, String::from_utf8_lossy(&answer).into_owned()));
        }
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let (id, dir) = (manifest.id.to_string(), self.dir.display().to_string());
        outln!(
            "{}",
            say::compare_heading(&id, &manifest.title, &shell_word(&dir))
        );
        outln!("{}", say::COMPARE_LEGEND);
        let mut distances = Vec::new();
        for (path, mine, answer) in &files {
            let old = mine.as_deref().unwrap_or_default().as_bytes();
            let (name, failed) = (Some(Path::new(path)), format!("cannot diff {path}"));
            let mut patch = Patch::from_buffers(old, name, answer.as_bytes(), name, None)
                .map_err(error::git(&failed))?;
            let (_, added, removed) = patch.line_stats().map_err(error::git(&failed))?;
            let given = starter_lines(&starter, path);
            let from_starter = removed_lines(&patch)?
                .filter(|line| given.contains(line.trim()))
                .count();
            let (mine, answer) = (
                mine.as_ref().map(|mine| mine.lines().count()),
                answer.lines().count(),
            );
            let counts = (removed, from_starter, added);
            distances.push(say::compare_distance(path, mine, answer, counts));
            if added + removed > 0 {
                outln!("\n{}", say::compare_file(path));
                print_hunks(&mut patch, colour)?;
            }
        }
        outln!("\n{}", say::COMPARE_SUMMARY);
        for line in distances {
            outln!("{line}");
        }
        let closing = if self.anyway {
            say::COMPARE_CLOSING_ANYWAY
        } else {
            say::COMPARE_CLOSING
        };
        outln!("\n{closing}");
        out::flush();
        Ok(())
    }

    /// Refuses unless `check` calls the chapter complete.
    fn require_complete(&self, repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> Result<()> {
        let dir = shell_word(&self.dir.display().to_string());
        noteln!("{}", say::compare_checking(&dir));
        let position = crate::check::position(repo, manifest, lab, self.limit.duration())?;
        if position.complete() {
            return Ok(());
        }
        let (passed, expected) = position.passed();
        let red_steps = position.red_steps();
        let verdict = say::compare_verdict(passed, expected, &red_steps, position.suite_failed());
        let id = manifest.id.to_string();
        Err(Error::check_failed(say::compare_refused(
            &id, &dir, &verdict,
        )))
    }
}

/// The non-blank lines, trimmed, the starter gave for `path`.
fn starter_lines(starter: &[(RepoPath, Vec<u8>)], path: &str) -> HashSet<String> {
    let given = starter.iter().find(|(file, _)| file.as_str() == path);
    let text = given.map(|(_, content)| String::from_utf8_lossy(content));
    let lines = text.iter().flat_map(|text| text.lines().map(str::trim));
    lines
        .filter(|line| !line.is_empty())
        .map(String::from)
        .collect()
}

/// The lines only the learner's side of `patch` has.
fn removed_lines(patch: &Patch<'_>) -> Result<impl Iterator<Item = String>> {
    let mut lines = Vec::new();
    for hunk in 0..patch.num_hunks() {
        let count = patch
            .num_lines_in_hunk(hunk)
            .map_err(error::git("cannot read a diff"))?;
        for at in 0..count {
            let line = patch
                .line_in_hunk(hunk, at)
                .map_err(error::git("cannot read a diff"))?;
            if line.origin() == '-' {
                lines.push(String::from_utf8_lossy(line.content()).into_owned());
            }
        }
    }
    Ok(lines.into_iter())
}

/// The patch's hunks: a header, then each line with its `-`, `+` or space.
fn print_hunks(patch: &mut Patch<'_>, colour: bool) -> Result<()> {
    let print = &mut |_: DiffDelta<'_>, _: Option<DiffHunk<'_>>, line: DiffLine<'_>| {
        let (mark, colour) = match line.origin() {
            'H' => ("", colour.then_some("36")),
            '-' => ("-", colour.then_some("31")),
            '+' => ("+", colour.then_some("32")),
            ' ' => (" ", None),
            // The file header, "\ No newline at end of file" and the like.
            _ => return true,
        };
        let content = String::from_utf8_lossy(line.content());
        let text = format!("{mark}{}", content.trim_end_matches('\n'));
        match colour {
            Some(code) => outln!("\x1b[{code}m{text}\x1b[0m"),
            None => outln!("{text}"),
        }
        true
    };
    patch
        .print(print)
        .map_err(error::git("cannot print a diff"))
}
