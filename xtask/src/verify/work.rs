//! The work folder `target/xtask-verify/` and what proofs do in it: fresh
//! folders, labs as `practice` writes them, the target's tree, and running
//! a command in one of them.
//!
//! One cargo target folder is shared by all runs so dependencies build once.
//! That is safe because every folder is written fresh right before its first
//! build (newer than anything cargo has built) and no folder is modified
//! afterwards: a fault gets its own copy, so an interrupted run leaves no
//! fault applied anywhere. Nothing on the way to a folder may be a symlink
//! or anything but a folder (exit 2); an old folder, or a link in its
//! place, is removed without following anything inside it.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Chapter;
use super::lock::{self, Lock};
use crate::error::{self, Error, Result};
use crate::lab;
use crate::libtest::{self, Report};
use crate::manifest::{ChapterId, Manifest};
use crate::out::noteln;
use crate::repo::CourseRepo;
use crate::runner::{Captured, Invocation};
use crate::safe_fs;
use crate::tree;
use crate::worlds;

/// Where verify works, below the repository root.
pub const WORK_FOLDER: &str = "target/xtask-verify";
/// The shared cargo target folder, in the work folder.
const CARGO_TARGET: &str = "cargo-target";

/// The work folder, locked for this run.
pub(super) struct Work<'a> {
    pub repo: &'a CourseRepo,
    root: PathBuf,
    cargo_target: PathBuf,
    timeout: Duration,
    _lock: Lock,
}

impl<'a> Work<'a> {
    /// Makes and locks the work folder with a folder per chapter of `ids`.
    pub fn open(repo: &'a CourseRepo, ids: &[ChapterId], timeout: Duration) -> Result<Work<'a>> {
        let refused = |refusal| work_refused(repo, refusal);
        let root = safe_fs::folder_inside(&repo.root, Path::new(WORK_FOLDER)).map_err(refused)?;
        let lock = lock::take(&root)?;
        let cargo_target =
            safe_fs::folder_inside(&root, Path::new(CARGO_TARGET)).map_err(refused)?;
        for id in ids {
            safe_fs::folder_inside(&root, Path::new(&id.to_string())).map_err(refused)?;
        }
        Ok(Work {
            repo,
            root,
            cargo_target,
            timeout,
            _lock: lock,
        })
    }

    /// An empty folder `name` for one proof of `chapter`, written fresh.
    fn fresh_folder(&self, chapter: &Chapter, name: &str) -> Result<PathBuf> {
        let chapter_work = safe_fs::folder_inside(&self.root, Path::new(&chapter.id().to_string()))
            .map_err(|refusal| work_refused(self.repo, refusal))?;
        let dir = chapter_work.join(name);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&dir),
            Ok(_) => fs::remove_file(&dir),
            Err(_) => Ok(()),
        }
        .map_err(error::io(format!("cannot clear {}", dir.display())))?;
        fs::create_dir(&dir).map_err(error::io(format!("cannot create {}", dir.display())))?;
        Ok(dir)
    }

    /// A lab as `practice` writes it for `manifest` (the chapter's, or a
    /// proof's variant of it), with every file it takes from the target
    /// ([`Manifest::target_files`]).
    pub fn lab(&self, chapter: &Chapter, name: &str, manifest: &Manifest) -> Result<PathBuf> {
        let dir = self.fresh_folder(chapter, name)?;
        lab::build(
            self.repo,
            manifest,
            &chapter.checkpoint,
            &chapter.handout,
            &dir,
            None,
        )?;
        Ok(dir)
    }

    /// The target's learner world in a fresh folder.
    pub fn target(&self, chapter: &Chapter, name: &str) -> Result<PathBuf> {
        let dir = self.fresh_folder(chapter, name)?;
        let tree = self.repo.tree_of(chapter.checkpoint.target.oid)?;
        tree::write_tree(&self.repo.git, &tree, &dir, &worlds::is_tooling)?;
        Ok(dir)
    }

    /// Runs `program` (and `extra`) in `dir`, showing the command first. A
    /// run past the timeout is a failure.
    pub fn run(
        &self,
        chapter: &Chapter,
        proof: &str,
        dir: &Path,
        program: &[String],
        extra: &[String],
    ) -> Result<Captured> {
        let invocation = Invocation {
            command: program,
            extra,
            dir,
            target_dir: &self.cargo_target,
            timeout: self.timeout,
        };
        let shown = dir.strip_prefix(&self.repo.root).unwrap_or(dir);
        progress(
            chapter.id(),
            &format!("{proof}: `{}` in {}", invocation.display(), shown.display()),
        );
        let run = invocation.run()?;
        if run.timed_out {
            return Err(Error::check_failed(format!(
                "`{}` ran past {}s and was stopped",
                invocation.display(),
                self.timeout.as_secs()
            )));
        }
        Ok(run)
    }

    /// Runs and requires success; the error quotes the first problem.
    /// Returns what libtest reported and the whole output.
    pub fn passing(
        &self,
        chapter: &Chapter,
        proof: &str,
        dir: &Path,
        program: &[String],
        extra: &[String],
    ) -> Result<(Report, String)> {
        let run = self.run(chapter, proof, dir, program, extra)?;
        let report = libtest::parse(&run.output);
        if run.success {
            return Ok((report, run.output));
        }
        let shown = program
            .iter()
            .chain(extra)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ");
        Err(Error::check_failed(match report.failed.first() {
            Some(failure) if report.compiled => {
                format!("`{shown}` fails `{}`: {}", failure.name, failure.message)
            }
            _ => format!("`{shown}` failed:\n{}", tail(&run.output)),
        }))
    }
}

/// A work folder that would pass through a symlink, or that is not a
/// folder (a FIFO, a file): nothing is written there.
fn work_refused(repo: &CourseRepo, refusal: safe_fs::Refusal) -> Error {
    Error::bad_input(format!(
        "cannot use {} as verify's work folder: {refusal}; verify never writes through a symlink \
         nor opens anything but its own folders there (remove it, e.g. `rm -r target`, and run \
         verify again)",
        repo.root.join(WORK_FOLDER).display()
    ))
}

/// One progress line on stderr, its control characters escaped (a failing
/// test's message can hold colour codes).
pub(super) fn progress(id: ChapterId, message: &str) {
    noteln!("[{id}] {}", crate::out::escape_control_lines(message));
}

/// The last lines of a command's output.
pub(super) fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}
