//! The work folder `target/xtask-verify/`: fresh folders, labs, the target's
//! tree and runs in them, sharing one cargo target folder. Every folder is
//! written fresh before its first build and not modified after (but the
//! faults' copy); nothing on the way may be a symlink (exit 2).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Chapter;
use crate::chapter::Handout;
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
const WORK_FOLDER: &str = "target/xtask-verify";

/// The work folder, locked for this run.
pub(super) struct Work<'a> {
    pub repo: &'a CourseRepo,
    root: PathBuf,
    cargo_target: PathBuf,
    timeout: Duration,
    _lock: File,
}

impl<'a> Work<'a> {
    /// Makes and locks the work folder with a folder per chapter of `ids`.
    pub fn open(repo: &'a CourseRepo, ids: &[ChapterId], timeout: Duration) -> Result<Work<'a>> {
        let folder = |root: &Path, name: &str| {
            safe_fs::folder_inside(root, Path::new(name)).map_err(|refusal| {
                Error::bad_input(format!(
                    "cannot use {} as verify's work folder: {refusal}; verify never writes \
                     through a symlink nor opens anything but its own folders there (remove it, \
                     e.g. `rm -r target`, and run verify again)",
                    repo.root.join(WORK_FOLDER).display()
                ))
            })
        };
        let root = folder(&repo.root, WORK_FOLDER)?;
        let lock = lock(&root)?;
        let cargo_target = folder(&root, "cargo-target")?;
        for id in ids {
            folder(&root, &id.to_string())?;
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
        let dir = self.root.join(chapter.id().to_string()).join(name);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&dir),
            Ok(_) => fs::remove_file(&dir),
            Err(_) => Ok(()),
        }
        .map_err(error::io(format!("cannot clear {}", dir.display())))?;
        fs::create_dir(&dir).map_err(error::io(format!("cannot create {}", dir.display())))?;
        Ok(dir)
    }

    /// A lab as `practice` writes it for `manifest` with `handout`.
    pub fn lab(
        &self,
        chapter: &Chapter,
        name: &str,
        manifest: &Manifest,
        handout: &Handout,
    ) -> Result<PathBuf> {
        let dir = self.fresh_folder(chapter, name)?;
        let checkpoint = &chapter.checkpoint;
        lab::build(self.repo, manifest, checkpoint, handout, &dir, None)?;
        Ok(dir)
    }

    /// The target's learner world in a fresh folder.
    pub fn target(&self, chapter: &Chapter, name: &str) -> Result<PathBuf> {
        let dir = self.fresh_folder(chapter, name)?;
        let tree = self.repo.tree_of(chapter.checkpoint.target.oid)?;
        tree::write_tree(&self.repo.git, &tree, &dir, &worlds::is_tooling)?;
        Ok(dir)
    }

    /// Runs `command` in `dir`, showing it first; a timeout is a failure.
    pub fn run(
        &self,
        chapter: &Chapter,
        proof: &str,
        dir: &Path,
        command: &[String],
    ) -> Result<Captured> {
        let invocation = Invocation {
            command,
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
    pub fn passing(
        &self,
        chapter: &Chapter,
        proof: &str,
        dir: &Path,
        command: &[String],
    ) -> Result<Report> {
        let run = self.run(chapter, proof, dir, command)?;
        let report = libtest::parse(&run.output);
        if run.success {
            return Ok(report);
        }
        let shown = command.join(" ");
        Err(Error::check_failed(match report.failed.first() {
            Some(failure) if report.compiled => {
                format!("`{shown}` fails `{}`: {}", failure.name, failure.message)
            }
            _ => format!("`{shown}` failed:\n{}", tail(&run.output)),
        }))
    }
}

/// Takes the `flock` of the work folder `root` until the file is dropped:
/// one verify per repository at a time, released even on SIGKILL.
fn lock(root: &Path) -> Result<File> {
    let path = root.join("lock");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(error::io(format!(
            "cannot open verify's lock file {} (remove it and run verify again)",
            path.display()
        )))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Error::bad_input(format!(
            "another `cargo xtask verify` is running in this repository (it holds {}): \
             wait for it to finish, then run verify again",
            path.display()
        ))),
        Err(TryLockError::Error(error)) => {
            Err(error::io(format!("cannot lock {}", path.display()))(error))
        }
    }
}

/// One progress line on stderr, its control characters escaped.
pub(super) fn progress(id: ChapterId, message: &str) {
    noteln!("[{id}] {}", crate::out::escape_control_lines(message));
}

pub(super) fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_lock_file_is_taken_and_a_held_one_refused() {
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("lock"), "999999999\n").unwrap();
        let held = lock(work.path()).unwrap();
        let refused = lock(work.path()).map(|_| ()).unwrap_err();
        assert_eq!(refused.exit_code(), 2);
        assert!(refused.to_string().contains("another"), "{refused}");
        drop(held);
        assert!(lock(work.path()).is_ok());
    }
}
