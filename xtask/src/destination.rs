//! Where a practice folder goes. DIR is resolved and checked before
//! anything is written; the folders made on the way to it are removed again
//! if the run does not finish; the folder is built in a staging folder
//! beside it (`.NAME.practice-<pid>-<random>`, marked by a file inside that
//! holds the pid, the content in a folder of its own beside the mark so no
//! file of a tree can be taken for it) and renamed into place, and a later
//! run into the same DIR removes the staging folders of runs that died. An
//! existing empty DIR is kept (its mode, owner and inode): the content's
//! entries are moved into it, and moved back out if one cannot be.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use tempfile::TempDir;

use crate::error::{self, Error, Result};
use crate::learner_text::{self as say, PracticeStep};
use crate::out;
use crate::repo::CourseRepo;
use crate::safe_fs::{self, Open};

/// What marks a staging folder's name: `.NAME` + this + `<pid>-<random>`.
const STAGING_MARK: &str = ".practice-";
/// The file in every staging folder, holding the pid of the run that made
/// it: only a folder with this file is ever removed as a dead run's.
const MARKER: &str = ".xtask-staging";
/// The folder in every staging folder that holds the practice folder's
/// content, apart from the [`MARKER`]: a tree may hold a file of any name.
const CONTENT: &str = "content";
/// How many bytes of DIR's name a staging folder's name keeps, so a DIR
/// name up to the 255-byte limit still leaves room for the rest.
const NAME_KEPT: usize = 100;

/// The folder that will hold DIR and its staging folder, with DIR's name:
/// where [`remove_stale_staging`] looks, and for which staging folders.
#[derive(Debug, Clone, Copy)]
pub struct Parent<'a> {
    pub folder: &'a Path,
    pub name: &'a OsStr,
}

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
                                    PracticeStep::Resolve,
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

    /// The folder that will hold DIR (and its staging folder), with DIR's name.
    pub fn parent(&self) -> Parent<'_> {
        Parent {
            folder: self.folder(),
            name: self.name(),
        }
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

    /// A new staging folder beside DIR, with its [`MARKER`] and
    /// its empty [`Staging::content`] folder.
    pub fn staging(&self) -> Result<Staging> {
        let pid = std::process::id();
        let mut prefix = staging_prefix(self.name());
        prefix.push(format!("{pid}-"));
        let staging = tempfile::Builder::new()
            .prefix(&prefix)
            .rand_bytes(8)
            .tempdir_in(self.folder())
            .map_err(error::io_said(|error| {
                say::practice_io(
                    PracticeStep::Staging,
                    &self.folder().display().to_string(),
                    error,
                )
            }))?;
        let marker = staging.path().join(MARKER);
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
            .and_then(|mut file| file.write_all(pid.to_string().as_bytes()))
            .map_err(error::io_said(|error| {
                say::practice_io(PracticeStep::Write, &marker.display().to_string(), error)
            }))?;
        let content = staging.path().join(CONTENT);
        fs::create_dir(&content).map_err(error::io_said(|error| {
            say::practice_io(PracticeStep::Write, &content.display().to_string(), error)
        }))?;
        Ok(Staging(staging))
    }

    /// Puts the finished staging content at DIR: renamed to DIR when DIR did
    /// not exist, else moved entry by entry into the existing empty DIR,
    /// which keeps its mode and owner. If DIR was created or filled in the
    /// meantime (another run was faster), this run's copy is removed and DIR
    /// left as it is. The staging folder goes when `staging` is dropped.
    pub fn move_into_place(&self, staging: Staging) -> Result<()> {
        let content = staging.content();
        let moved = if self.exists {
            fill(&content, &self.path)
        } else {
            fs::rename(&content, &self.path)
        };
        drop(staging);
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
    pub fn content(&self) -> PathBuf {
        self.0.path().join(CONTENT)
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

/// Removes the staging folders for DIR that runs which have since died left
/// behind (killed with SIGKILL, or a power cut). A folder counts only if its
/// name is `.NAME.practice-<pid>-<random>` for DIR's name, it is a real
/// folder owned by this user, its [`MARKER`] (a file, not a symlink) holds
/// that same pid, and no process `<pid>` exists. Anything else is left alone,
/// however much it looks like one (`.rust.practice-2024-notes`).
pub fn remove_stale_staging(parent: Parent<'_>) {
    let Ok(entries) = fs::read_dir(parent.folder) else {
        return;
    };
    let prefix = staging_prefix(parent.name);
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.filter_map(|entry| entry.ok()) {
        let name = entry.file_name();
        let Some(pid) = staging_pid(name.as_bytes(), prefix.as_bytes()) else {
            continue;
        };
        let path = entry.path();
        let ours = fs::symlink_metadata(&path).is_ok_and(|meta| is_own_folder(&meta, me));
        if ours
            && marker_pid(&path) == Some(pid)
            && !process_exists(pid)
            && fs::remove_dir_all(&path).is_ok()
        {
            out::note(format_args!(
                "note: removed {}, left by an earlier practice run that did not finish",
                path.display()
            ));
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

/// The pid in a staging folder's name, if `name` is one that starts with
/// `prefix` (see [`staging_prefix`]).
fn staging_pid(name: &[u8], prefix: &[u8]) -> Option<i32> {
    let tail = std::str::from_utf8(name.strip_prefix(prefix)?).ok()?;
    let (pid, random) = tail.split_once('-')?;
    let random_ok = !random.is_empty() && random.bytes().all(|b| b.is_ascii_alphanumeric());
    // `parse` refuses an empty pid; the digits check refuses a sign.
    let pid_ok = pid.bytes().all(|b| b.is_ascii_digit());
    if random_ok && pid_ok {
        pid.parse().ok().filter(|&pid| pid > 0)
    } else {
        None
    }
}

/// True when `meta` (not following a symlink) is a real folder owned by
/// user `me`: only such a folder may be a staging folder of ours.
fn is_own_folder(meta: &fs::Metadata, me: u32) -> bool {
    meta.is_dir() && meta.uid() == me
}

/// The pid in staging folder `folder`'s [`MARKER`], read without following
/// a symlink or waiting on a fifo; `None` when there is none or it holds
/// anything else. (It only counts when it equals the pid in the folder's
/// name, which [`staging_pid`] keeps positive.)
fn marker_pid(folder: &Path) -> Option<i32> {
    let file = safe_fs::open_inside(folder, Path::new(MARKER), Open::Read).ok()?;
    let mut text = String::new();
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// True unless process `pid` is known to be gone (ESRCH); false for a pid
/// that names no single process (0 or below).
fn process_exists(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid.max(0)) else {
        return false;
    };
    rustix::process::test_kill_process(pid) != Err(Errno::SRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_names_are_recognised_for_their_dir_alone() {
        let lab = staging_prefix(OsStr::new("lab"));
        let pid = |name: &str| staging_pid(name.as_bytes(), lab.as_bytes());
        assert_eq!(pid(".lab.practice-123-AbC123xy"), Some(123));
        assert_eq!(pid(".lab.practice-7-a"), Some(7));
        for other in [
            "lab.practice-1-a",
            ".lab.practice-draft",
            ".lab.practice-12-",
            ".lab.practice--abc",
            ".lab.practice-0-abc",
            ".lab.practice-1-a/b",
            ".lab.practice-1-a-b",
            ".other.practice-1-a",
            ".labs.practice-1-a",
            ".lab.practice-5.practice-1-a",
        ] {
            assert_eq!(pid(other), None, "{other}");
        }
        let spaced = staging_prefix(OsStr::new("my lab"));
        assert_eq!(
            staging_pid(b".my lab.practice-7-a", spaced.as_bytes()),
            Some(7)
        );
    }

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
    fn only_a_marked_folder_of_a_dead_run_is_removed() {
        let holder = tempfile::tempdir().unwrap();
        let parent = holder.path();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        ended.wait().unwrap();
        let dead = ended.id();
        let folder = |name: String, marker: Option<&str>| {
            let path = parent.join(name);
            fs::create_dir(&path).unwrap();
            if let Some(content) = marker {
                fs::write(path.join(MARKER), content).unwrap();
            }
            path
        };
        let stale = folder(format!(".lab.practice-{dead}-a1"), Some(&dead.to_string()));
        let unmarked = folder(format!(".lab.practice-{dead}-a2"), None);
        let garbled = folder(format!(".lab.practice-{dead}-a3"), Some("not a pid"));
        let linked = folder(format!(".lab.practice-{dead}-a4"), None);
        fs::write(parent.join("pid"), dead.to_string()).unwrap();
        std::os::unix::fs::symlink(parent.join("pid"), linked.join(MARKER)).unwrap();

        remove_stale_staging(Parent {
            folder: parent,
            name: OsStr::new("lab"),
        });
        assert!(!stale.exists());
        for kept in [unmarked, garbled, linked] {
            assert!(kept.exists(), "{}", kept.display());
        }
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
    fn a_live_process_exists_and_an_ended_one_does_not() {
        assert!(process_exists(std::process::id() as i32));
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        ended.wait().unwrap();
        assert!(!process_exists(ended.id() as i32));
        assert!(!process_exists(0) && !process_exists(-1));
    }

    #[test]
    fn only_a_real_folder_of_this_user_counts_as_ours() {
        let holder = tempfile::tempdir().unwrap();
        let folder = holder.path().join("folder");
        let file = holder.path().join("file");
        fs::create_dir(&folder).unwrap();
        fs::write(&file, "").unwrap();
        std::os::unix::fs::symlink(&folder, holder.path().join("link")).unwrap();
        let me = rustix::process::geteuid().as_raw();
        let meta = |name: &str| fs::symlink_metadata(holder.path().join(name)).unwrap();
        assert!(is_own_folder(&meta("folder"), me));
        assert!(!is_own_folder(&meta("folder"), me + 1), "another user's");
        assert!(!is_own_folder(&meta("file"), me));
        assert!(!is_own_folder(&meta("link"), me));
    }

    #[test]
    fn a_symlink_or_file_looking_like_a_dead_runs_staging_folder_stays() {
        let holder = tempfile::tempdir().unwrap();
        let parent = holder.path().join("parent");
        let elsewhere = holder.path().join("elsewhere");
        fs::create_dir_all(&parent).unwrap();
        fs::create_dir_all(&elsewhere).unwrap();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        ended.wait().unwrap();
        let dead = ended.id();
        fs::write(elsewhere.join(MARKER), dead.to_string()).unwrap();
        fs::write(elsewhere.join("work.rs"), "precious\n").unwrap();
        let link = parent.join(format!(".lab.practice-{dead}-l1"));
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let file = parent.join(format!(".lab.practice-{dead}-f1"));
        fs::write(&file, dead.to_string()).unwrap();

        remove_stale_staging(Parent {
            folder: &parent,
            name: OsStr::new("lab"),
        });
        assert!(fs::symlink_metadata(&link).is_ok(), "the symlink stays");
        assert!(file.is_file(), "the file stays");
        assert_eq!(
            fs::read_to_string(elsewhere.join("work.rs")).unwrap(),
            "precious\n"
        );
    }

    #[test]
    fn a_fifo_as_the_marker_is_no_marker_and_is_not_waited_on() {
        let holder = tempfile::tempdir().unwrap();
        let folder = holder.path().join(".lab.practice-1-a");
        fs::create_dir(&folder).unwrap();
        crate::safe_fs::make_fifo(&folder.join(MARKER)).unwrap();
        assert_eq!(marker_pid(&folder), None);
        fs::remove_file(folder.join(MARKER)).unwrap();
        fs::write(folder.join(MARKER), "42\n").unwrap();
        assert_eq!(marker_pid(&folder), Some(42));
    }

    #[test]
    fn an_existing_folder_is_filled_and_left_as_it_was_if_it_cannot_be() {
        use std::os::unix::fs::PermissionsExt;
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
