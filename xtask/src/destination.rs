//! Where a practice folder goes. DIR is resolved and checked before
//! anything is written; the folders made on the way to it are removed again
//! if the run does not finish; the folder is built in a staging folder
//! beside it (`.NAME.practice-<random>`, removed on an error or an
//! interrupt) and renamed into place. An existing empty DIR is kept (its
//! mode, owner and inode): the content's entries are moved into it, and
//! moved back out if one cannot be.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use tempfile::TempDir;

use crate::error::{self, Error, Result};
use crate::learner_text::{self as say, PracticeStep};
use crate::repo::CourseRepo;

/// What marks a staging folder's name: `.NAME` + this + `<random>`.
const STAGING_MARK: &str = ".practice-";
/// How many bytes of DIR's name a staging folder's name keeps, so a DIR
/// name up to the 255-byte limit still leaves room for the rest.
const NAME_KEPT: usize = 100;

/// DIR, resolved.
#[derive(Debug)]
pub struct Destination {
    /// DIR as an absolute path: its existing part with symlinks resolved,
    /// then the names that do not exist yet, as typed (`..` applied).
    pub path: PathBuf,
    /// The folders between the existing part and DIR that do not exist yet,
    /// outermost first.
    missing_parents: Vec<PathBuf>,
    /// DIR exists (as an empty folder, once [`Destination::check`] passed).
    exists: bool,
}

impl Destination {
    /// Resolves `dir` from `here` (the current directory, canonical).
    /// Nothing is created: a missing `a/../b` is simply `b`.
    pub fn resolve(dir: &Path, here: &Path) -> Result<Self> {
        let mut existing = if dir.is_absolute() {
            PathBuf::from("/")
        } else {
            here.to_path_buf()
        };
        let mut missing: Vec<OsString> = Vec::new();
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
                        Err(error) if error.kind() == ErrorKind::NotFound => {
                            missing.push(name.to_os_string());
                        }
                        Err(error) => {
                            return Err(error::io_said(|error| {
                                say::practice_io(
                                    PracticeStep::Inspect,
                                    &next.display().to_string(),
                                    error,
                                )
                            })(error));
                        }
                    }
                }
                Component::Normal(name) => missing.push(name.to_os_string()),
            }
        }
        let exists = missing.is_empty();
        let mut path = existing;
        let mut missing_parents = Vec::new();
        for (index, name) in missing.iter().enumerate() {
            path.push(name);
            if index + 1 < missing.len() {
                missing_parents.push(path.clone());
            }
        }
        Ok(Destination {
            path,
            missing_parents,
            exists,
        })
    }

    /// Refuses a DIR inside any `.git` or the repository's git folders, the
    /// current folder, the repository or a folder containing it, a file, and
    /// a folder that is not empty. Touches nothing.
    pub fn check(&self, repo: &CourseRepo, here: &Path) -> Result<()> {
        let dir = &self.path;
        let shown = dir.display();
        let git_folders = [repo.git.path(), repo.git.commondir()].map(|folder| {
            folder
                .canonicalize()
                .unwrap_or_else(|_| folder.to_path_buf())
        });
        let in_git = dir.components().any(|component| {
            matches!(component, Component::Normal(name) if name.as_encoded_bytes().eq_ignore_ascii_case(b".git"))
        }) || git_folders.iter().any(|folder| dir.starts_with(folder));
        if in_git {
            return Err(Error::bad_input(say::dir_in_git(&shown.to_string())));
        }
        if dir == here {
            return Err(Error::bad_input(say::dir_is_current(&shown.to_string())));
        }
        if repo.canonical_root.starts_with(dir) {
            return Err(Error::bad_input(say::dir_is_repository(&shown.to_string())));
        }
        if self.exists {
            check_empty_folder(dir)?;
        }
        Ok(())
    }

    /// The folder that will hold DIR.
    fn folder(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("/"))
    }

    /// DIR's own name.
    pub fn name(&self) -> &OsStr {
        self.path.file_name().unwrap_or(OsStr::new("practice"))
    }

    /// Creates the missing folders on the way to DIR. They are removed
    /// again when the returned value is dropped, unless it is kept.
    pub fn create_parents(&self) -> Result<CreatedFolders> {
        let mut created = CreatedFolders(Vec::new());
        for folder in &self.missing_parents {
            match fs::create_dir(folder) {
                Ok(()) => created.0.push(folder.clone()),
                // A concurrent run made it: theirs, not ours to remove.
                Err(error) if error.kind() == ErrorKind::AlreadyExists && folder.is_dir() => {}
                Err(error) => {
                    return Err(error::io_said(|error| {
                        say::practice_io(
                            PracticeStep::CreateParent,
                            &folder.display().to_string(),
                            error,
                        )
                    })(error));
                }
            }
        }
        Ok(created)
    }

    /// A new, empty staging folder beside DIR.
    pub fn staging(&self) -> Result<Staging> {
        let staging = tempfile::Builder::new()
            .prefix(&staging_prefix(self.name()))
            .rand_bytes(8)
            .tempdir_in(self.folder())
            .map_err(error::io_said(|error| {
                say::practice_io(
                    PracticeStep::Staging,
                    &self.folder().display().to_string(),
                    error,
                )
            }))?;
        Ok(Staging(staging))
    }

    /// Puts the finished staging folder's content at DIR: the folder renamed
    /// to DIR when DIR did not exist, else its entries moved into the
    /// existing empty DIR, which keeps its mode and owner. If DIR was
    /// created or filled in the meantime (another run was faster), this
    /// run's copy is removed and DIR left as it is.
    pub fn move_into_place(&self, staging: Staging) -> Result<()> {
        let moved = if self.exists {
            fill(staging.path(), &self.path)
        } else {
            fs::rename(staging.path(), &self.path)
        };
        if moved.is_ok() && !self.exists {
            // Renamed away: nothing is left to remove.
            let _ = staging.0.keep();
        }
        match moved {
            Ok(()) => Ok(()),
            Err(error)
                if matches!(
                    Errno::from_io_error(&error),
                    Some(Errno::NOTEMPTY | Errno::EXIST | Errno::NOTDIR | Errno::LOOP)
                ) =>
            {
                Err(Error::bad_input(say::dir_filled_meanwhile(
                    &self.path.display().to_string(),
                )))
            }
            Err(error) => Err(error::io_said(|error| {
                say::practice_io(
                    PracticeStep::MoveIntoPlace,
                    &self.path.display().to_string(),
                    error,
                )
            })(error)),
        }
    }
}

/// A staging folder: removed with all it holds when dropped.
pub struct Staging(TempDir);

impl Staging {
    /// The folder to build the practice folder's content in.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Moves every entry of `content` into the existing folder `dir` (opened
/// without following a symlink), never replacing anything there. If one
/// cannot be moved, those already moved go back, so `dir` is left as it was.
fn fill(content: &Path, dir: &Path) -> std::io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let from = rustix::fs::open(content, flags, Mode::empty())?;
    let to = rustix::fs::open(dir, flags, Mode::empty())?;
    let names = fs::read_dir(content)?
        .map(|entry| entry.map(|entry| entry.file_name()))
        .collect::<std::io::Result<Vec<OsString>>>()?;
    let mut moved: Vec<&OsString> = Vec::new();
    for name in &names {
        if let Err(error) = rename_no_replace(&from, name, &to) {
            for name in moved.iter().rev() {
                let _ = rename_no_replace(&to, name, &from);
            }
            return Err(error);
        }
        moved.push(name);
    }
    Ok(())
}

/// Renames `name` from folder `from` to folder `to`, failing with EEXIST
/// when `to` has an entry of that name.
fn rename_no_replace(from: &OwnedFd, name: &OsStr, to: &OwnedFd) -> std::io::Result<()> {
    match rustix::fs::renameat_with(from, name, to, name, RenameFlags::NOREPLACE) {
        // A file system without RENAME_NOREPLACE: look, then rename.
        Err(Errno::INVAL) => match rustix::fs::statat(to, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Err(Errno::EXIST.into()),
            Err(Errno::NOENT) => Ok(rustix::fs::renameat(from, name, to, name)?),
            Err(errno) => Err(errno.into()),
        },
        done => Ok(done?),
    }
}

/// Refuses a destination that holds anything: existing work is never overwritten.
fn check_empty_folder(dir: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(dir).map_err(error::io_said(|error| {
        say::practice_io(PracticeStep::Inspect, &dir.display().to_string(), error)
    }))?;
    if !meta.is_dir() {
        return Err(Error::bad_input(say::dir_not_a_folder(
            &dir.display().to_string(),
        )));
    }
    let mut entries = fs::read_dir(dir).map_err(error::io_said(|error| {
        say::practice_io(PracticeStep::Read, &dir.display().to_string(), error)
    }))?;
    if entries.next().is_some() {
        return Err(Error::bad_input(say::dir_not_empty(
            &dir.display().to_string(),
        )));
    }
    Ok(())
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

/// `.NAME.practice-`, the start of every staging folder's name for a DIR
/// named `name`; NAME is cut to [`NAME_KEPT`] bytes (at a character's start).
fn staging_prefix(name: &OsStr) -> OsString {
    let name = name.as_bytes();
    let mut end = name.len().min(NAME_KEPT);
    // A UTF-8 continuation byte (0b10xxxxxx) is no character's start.
    while end > 0 && end < name.len() && name[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    let mut prefix = Vec::with_capacity(end + 1 + STAGING_MARK.len());
    prefix.push(b'.');
    prefix.extend_from_slice(&name[..end]);
    prefix.extend_from_slice(STAGING_MARK.as_bytes());
    OsString::from_vec(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_name_is_cut_at_a_character_start() {
        assert_eq!(
            staging_prefix(OsStr::new(&"a".repeat(240))),
            OsString::from(format!(".{}.practice-", "a".repeat(100)))
        );
        // 33 three-byte characters are 99 bytes; a 34th would pass 100.
        assert_eq!(
            staging_prefix(OsStr::new(&"练".repeat(80))),
            OsString::from(format!(".{}.practice-", "练".repeat(33)))
        );
        // Nothing but continuation bytes: cut to nothing, never below it.
        assert_eq!(
            staging_prefix(OsStr::from_bytes(&[0x80; 120])).as_bytes(),
            b"..practice-"
        );
        let not_utf8 = OsStr::from_bytes(b"\xff\xfe lab");
        assert_eq!(
            staging_prefix(not_utf8).as_bytes(),
            b".\xff\xfe lab.practice-"
        );
    }

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
        assert_eq!(dest.missing_parents, [here.join("a"), here.join("a/b")]);

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
