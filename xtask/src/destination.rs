//! Where a practice folder goes: DIR is checked before anything is written,
//! built in a staging folder beside it and renamed into place (an empty DIR
//! is filled in place); a failed run removes what it made.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, ErrorKind};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use tempfile::TempDir;

use crate::error::{self, Error, Result};
use crate::learner_text::{self as say, PracticeStep};
use crate::repo::CourseRepo;

#[derive(Debug)]
pub struct Destination {
    /// DIR as an absolute path: its existing part with symlinks resolved,
    /// then the names that do not exist yet, as typed (`..` applied).
    pub path: PathBuf,
    /// The missing folders between the existing part and DIR, innermost first.
    missing_parents: Vec<PathBuf>,
    /// DIR exists (as an empty folder, once [`Destination::check`] passed).
    exists: bool,
}

/// The error for `practice` failing to do `step` at `path`.
pub fn failed(step: PracticeStep, path: &Path) -> impl FnOnce(io::Error) -> Error {
    error::io_said(move |error| say::practice_io(step, &path.display().to_string(), error))
}

impl Destination {
    /// Resolves `dir` from `here` (canonical); creates nothing.
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

    /// Refuses a DIR that cannot be a new lab. Touches nothing.
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

    /// Creates the missing folders to DIR, removed on drop unless kept.
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

    /// A new, empty staging folder beside DIR, removed when dropped.
    pub fn staging(&self) -> Result<TempDir> {
        let folder = self.path.parent().unwrap_or(Path::new("/"));
        tempfile::Builder::new()
            .prefix(".practice-")
            .tempdir_in(folder)
            .map_err(failed(PracticeStep::Staging, folder))
    }

    /// Puts the staging folder's content at DIR: renamed, or moved into an
    /// existing empty DIR (keeping its inode); if DIR filled meanwhile, this
    /// copy is removed and DIR left as it is.
    pub fn move_into_place(&self, staging: TempDir) -> Result<()> {
        let moved = if self.exists {
            fill(staging.path(), &self.path)
        } else {
            // Renamed away: nothing is left to remove.
            fs::rename(staging.path(), &self.path).map(|()| drop(staging.keep()))
        };
        let Err(error) = moved else { return Ok(()) };
        match Errno::from_io_error(&error) {
            Some(Errno::NOTEMPTY | Errno::EXIST | Errno::NOTDIR | Errno::LOOP) => {
                let shown = self.path.display().to_string();
                Err(Error::bad_input(say::dir_filled_meanwhile(&shown)))
            }
            _ => Err(failed(PracticeStep::MoveIntoPlace, &self.path)(error)),
        }
    }
}

/// Moves every entry of `content` into `dir`, replacing nothing; on a
/// failure those already moved go back.
fn fill(content: &Path, dir: &Path) -> io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let from = rustix::fs::open(content, flags, Mode::empty())?;
    let to = rustix::fs::open(dir, flags, Mode::empty())?;
    let names = fs::read_dir(content)?
        .map(|entry| entry.map(|entry| entry.file_name()))
        .collect::<io::Result<Vec<OsString>>>()?;
    for (done, name) in names.iter().enumerate() {
        if let Err(error) = rename_no_replace(&from, name, &to) {
            for name in names[..done].iter().rev() {
                let _ = rename_no_replace(&to, name, &from);
            }
            return Err(error);
        }
    }
    Ok(())
}

/// Renames `name` from `from` to `to`, with EEXIST when `to` has that name.
fn rename_no_replace(from: &OwnedFd, name: &OsStr, to: &OwnedFd) -> io::Result<()> {
    match rustix::fs::renameat_with(from, name, to, name, RenameFlags::NOREPLACE) {
        // A file system without RENAME_NOREPLACE (NFS): look, then rename.
        Err(Errno::INVAL) => match rustix::fs::statat(to, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Err(Errno::EXIST.into()),
            Err(Errno::NOENT) => Ok(rustix::fs::renameat(from, name, to, name)?),
            Err(errno) => Err(errno.into()),
        },
        done => Ok(done?),
    }
}

/// Folders made on the way to DIR, removed (if empty) on drop unless kept.
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
    fn an_existing_folder_is_filled_and_left_as_it_was_if_it_cannot_be() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let holder = tempfile::tempdir().unwrap();
        let content = holder.path().join("content");
        let dir = holder.path().join("dir");
        fs::create_dir_all(content.join("course/src")).unwrap();
        fs::write(content.join("Cargo.toml"), "[workspace]\n").unwrap();
        fs::write(content.join("course/src/lib.rs"), "").unwrap();
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o710)).unwrap();
        let inode = fs::metadata(&dir).unwrap().ino();
        fill(&content, &dir).unwrap();
        let meta = fs::metadata(&dir).unwrap();
        assert_eq!((meta.ino(), meta.mode() & 0o7777), (inode, 0o710));
        assert!(dir.join("course/src/lib.rs").is_file());
        assert_eq!(fs::read_dir(&content).unwrap().count(), 0);

        // Something appeared in DIR meanwhile: nothing is replaced, and what
        // was moved goes back.
        let again = holder.path().join("again");
        fs::create_dir_all(again.join("a")).unwrap();
        fs::create_dir_all(again.join("z")).unwrap();
        let taken = holder.path().join("taken");
        fs::create_dir_all(&taken).unwrap();
        fs::write(taken.join("z"), "theirs\n").unwrap();
        let error = fill(&again, &taken).unwrap_err();
        assert_eq!(Errno::from_io_error(&error), Some(Errno::EXIST), "{error}");
        assert_eq!(fs::read_to_string(taken.join("z")).unwrap(), "theirs\n");
        assert_eq!(
            fs::read_dir(&taken).unwrap().count(),
            1,
            "only theirs is left"
        );
        assert!(again.join("a").is_dir() && again.join("z").is_dir());

        // DIR replaced by a symlink meanwhile: not followed, nothing moved.
        let elsewhere = holder.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let link = holder.path().join("link");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let error = fill(&again, &link).unwrap_err();
        let refused = Errno::from_io_error(&error);
        assert!(
            matches!(refused, Some(Errno::NOTDIR | Errno::LOOP)),
            "{error}"
        );
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert_eq!(fs::read_dir(&again).unwrap().count(), 2);
    }
}
