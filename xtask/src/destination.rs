//! Where a practice folder goes. DIR is resolved and checked before
//! anything is written; the folders made on the way to it are removed again
//! if the run does not finish; the folder is built in a staging folder
//! beside it (`.practice-<random>`, removed on an error or an interrupt) and
//! renamed into place.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Component, Path, PathBuf};

use rustix::io::Errno;
use tempfile::TempDir;

use crate::error::{self, Error, Result};
use crate::learner_text::{self as say, PracticeStep};
use crate::repo::CourseRepo;

/// DIR, resolved.
#[derive(Debug)]
pub struct Destination {
    /// DIR as an absolute path: its existing part with symlinks resolved,
    /// then the names that do not exist yet, as typed (`..` applied).
    pub path: PathBuf,
    /// The folders between the existing part and DIR that do not exist yet,
    /// innermost first.
    missing_parents: Vec<PathBuf>,
    /// DIR exists (as an empty folder, once [`Destination::check`] passed).
    exists: bool,
}

/// The error for `practice` failing to do `step` at `path`.
pub fn failed(step: PracticeStep, path: &Path) -> impl FnOnce(io::Error) -> Error {
    error::io_said(move |error| say::practice_io(step, &path.display().to_string(), error))
}

impl Destination {
    /// Resolves `dir` from `here` (the current directory, canonical).
    /// Nothing is created: a missing `a/../b` is simply `b`.
    pub fn resolve(dir: &Path, here: &Path) -> Result<Self> {
        let mut existing = here.to_path_buf();
        let mut missing: Vec<&OsStr> = Vec::new();
        for component in dir.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => {
                    existing = PathBuf::from("/");
                    missing.clear();
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    if missing.pop().is_none() {
                        existing.pop();
                    }
                }
                Component::Normal(name) if missing.is_empty() => {
                    let next = existing.join(name);
                    match fs::symlink_metadata(&next) {
                        Ok(_) => {
                            existing = next.canonicalize().map_err(|error| {
                                Error::bad_input(say::practice_io(
                                    PracticeStep::Inspect,
                                    &next.display().to_string(),
                                    &error,
                                ))
                            })?;
                        }
                        Err(error) if error.kind() == ErrorKind::NotFound => missing.push(name),
                        Err(error) => return Err(failed(PracticeStep::Inspect, &next)(error)),
                    }
                }
                Component::Normal(name) => missing.push(name),
            }
        }
        let path = missing.iter().fold(existing, |path, name| path.join(name));
        let parents = missing.len().saturating_sub(1);
        let missing_parents = path.ancestors().skip(1).take(parents);
        Ok(Destination {
            missing_parents: missing_parents.map(Path::to_path_buf).collect(),
            exists: missing.is_empty(),
            path,
        })
    }

    /// Refuses a DIR inside any `.git` or the repository's git folders, the
    /// current folder, the repository or a folder containing it, a file, and
    /// a folder that is not empty. Touches nothing.
    pub fn check(&self, repo: &CourseRepo, here: &Path) -> Result<()> {
        let dir = &self.path;
        let shown = dir.display().to_string();
        let canonical = |folder: &Path| folder.canonicalize().unwrap_or(folder.to_path_buf());
        let git_folders = [repo.git.path(), repo.git.commondir()].map(canonical);
        let in_git = dir.components().any(|component| {
            matches!(component, Component::Normal(name) if name.as_encoded_bytes().eq_ignore_ascii_case(b".git"))
        }) || git_folders.iter().any(|folder| dir.starts_with(folder));
        if in_git {
            return Err(Error::bad_input(say::dir_in_git(&shown)));
        }
        if dir == here {
            return Err(Error::bad_input(say::dir_is_current(&shown)));
        }
        if repo.canonical_root.starts_with(dir) {
            return Err(Error::bad_input(say::dir_is_repository(&shown)));
        }
        if !self.exists {
            return Ok(());
        }
        let meta = fs::symlink_metadata(dir).map_err(failed(PracticeStep::Inspect, dir))?;
        if !meta.is_dir() {
            return Err(Error::bad_input(say::dir_not_a_folder(&shown)));
        }
        let mut entries = fs::read_dir(dir).map_err(failed(PracticeStep::Read, dir))?;
        if entries.next().is_some() {
            return Err(Error::bad_input(say::dir_not_empty(&shown)));
        }
        Ok(())
    }

    /// Creates the missing folders on the way to DIR. They are removed
    /// again when the returned value is dropped, unless it is kept.
    pub fn create_parents(&self) -> Result<CreatedFolders> {
        let mut created = CreatedFolders(Vec::new());
        for folder in self.missing_parents.iter().rev() {
            match fs::create_dir(folder) {
                Ok(()) => created.0.push(folder.clone()),
                // A concurrent run made it: theirs, not ours to remove.
                Err(error) if error.kind() == ErrorKind::AlreadyExists && folder.is_dir() => {}
                Err(error) => return Err(failed(PracticeStep::CreateParent, folder)(error)),
            }
        }
        Ok(created)
    }

    /// A new, empty staging folder beside DIR, removed with all it holds
    /// when dropped.
    pub fn staging(&self) -> Result<TempDir> {
        let folder = self.path.parent().unwrap_or(Path::new("/"));
        tempfile::Builder::new()
            .prefix(".practice-")
            .tempdir_in(folder)
            .map_err(failed(PracticeStep::Staging, folder))
    }

    /// Renames the finished staging folder to DIR. An existing empty DIR is
    /// replaced, and its mode kept. If DIR was filled or made something else
    /// in the meantime (another run was faster), this run's copy is removed
    /// and DIR left as it is.
    pub fn move_into_place(&self, staging: TempDir) -> Result<()> {
        let failed = || failed(PracticeStep::MoveIntoPlace, &self.path);
        if self.exists
            && let Ok(meta) = fs::symlink_metadata(&self.path)
        {
            fs::set_permissions(staging.path(), meta.permissions()).map_err(failed())?;
        }
        let Err(error) = fs::rename(staging.path(), &self.path) else {
            // Renamed away: nothing is left to remove.
            let _ = staging.keep();
            return Ok(());
        };
        match Errno::from_io_error(&error) {
            Some(Errno::NOTEMPTY | Errno::EXIST | Errno::NOTDIR) => {
                let shown = self.path.display().to_string();
                Err(Error::bad_input(say::dir_filled_meanwhile(&shown)))
            }
            _ => Err(failed()(error)),
        }
    }
}

/// Folders a run created on the way to DIR; removed (if still empty),
/// innermost first, when dropped, unless [`CreatedFolders::keep`] was called.
#[must_use]
pub struct CreatedFolders(Vec<PathBuf>);

impl CreatedFolders {
    /// The run finished: the folders stay.
    pub fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for CreatedFolders {
    fn drop(&mut self) {
        for folder in self.0.iter().rev() {
            // Only an empty folder goes: a concurrent run may be using it.
            let _ = fs::remove_dir(folder);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolving_applies_dot_dot_to_missing_names_and_follows_existing_links() {
        let holder = tempfile::tempdir().unwrap();
        let here = holder.path().canonicalize().unwrap();
        fs::create_dir(here.join("real")).unwrap();
        std::os::unix::fs::symlink(here.join("real"), here.join("link")).unwrap();
        let resolve = |dir: &str| Destination::resolve(Path::new(dir), &here).unwrap();

        let dest = resolve("newparent/../x");
        assert_eq!(dest.path, here.join("x"));
        assert!(dest.missing_parents.is_empty() && !dest.exists);

        let dest = resolve("a/b/c");
        assert_eq!(dest.path, here.join("a/b/c"));
        assert_eq!(dest.missing_parents, [here.join("a/b"), here.join("a")]);

        // `new` is missing: `new/b` is below it even when `./b` exists.
        fs::create_dir(here.join("b")).unwrap();
        let dest = resolve("new/b");
        assert_eq!(dest.path, here.join("new/b"));
        assert_eq!(dest.missing_parents, [here.join("new")]);
        assert!(!dest.exists);
        let dest = resolve("new/../b");
        assert_eq!(dest.path, here.join("b"));
        assert!(dest.missing_parents.is_empty());
        assert!(
            dest.exists,
            "`..` undid the missing `new`: `b` is the existing one"
        );

        // A file on the way is no missing folder: it cannot be resolved.
        fs::write(here.join("file"), "").unwrap();
        let error = Destination::resolve(Path::new("file/lab"), &here).unwrap_err();
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("nothing was touched"), "{error}");

        assert_eq!(resolve("link/lab").path, here.join("real/lab"));
        assert_eq!(resolve("link/../x").path, here.join("x"));
        assert_eq!(resolve(".").path, here);
        assert!(resolve("real").exists);
        assert_eq!(resolve("/").path, Path::new("/"));
    }

    #[test]
    fn an_existing_empty_folder_is_replaced_and_one_filled_meanwhile_is_left_alone() {
        use std::os::unix::fs::PermissionsExt;
        let holder = tempfile::tempdir().unwrap();
        let here = holder.path().canonicalize().unwrap();
        let staged = |dest: &Destination| {
            let staging = dest.staging().unwrap();
            fs::write(staging.path().join("Cargo.toml"), "[workspace]\n").unwrap();
            staging
        };
        let dir = here.join("dir");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o710)).unwrap();
        let dest = Destination::resolve(Path::new("dir"), &here).unwrap();
        dest.move_into_place(staged(&dest)).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o710);
        assert!(dir.join("Cargo.toml").is_file());

        // Filled, or replaced by a symlink, meanwhile: nothing is replaced
        // or followed, and this run's copy is gone.
        let taken = here.join("taken");
        fs::create_dir(&taken).unwrap();
        let elsewhere = here.join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        for (name, meanwhile) in [("taken", None), ("link", Some(&elsewhere))] {
            let dest = Destination::resolve(Path::new(name), &here).unwrap();
            let staging = staged(&dest);
            match meanwhile {
                Some(target) => std::os::unix::fs::symlink(target, here.join(name)).unwrap(),
                None => fs::write(taken.join("z"), "theirs\n").unwrap(),
            }
            let error = dest.move_into_place(staging).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{name}: {error}");
        }
        assert_eq!(fs::read_to_string(taken.join("z")).unwrap(), "theirs\n");
        assert_eq!(fs::read_dir(&taken).unwrap().count(), 1);
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        let left: Vec<_> = fs::read_dir(&here).unwrap().collect();
        assert_eq!(left.len(), 4, "no staging folder left: {left:?}");
    }
}
