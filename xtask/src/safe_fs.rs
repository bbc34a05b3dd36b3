//! Reading and writing a file below a folder without following symlinks.
//!
//! A practice folder holds the symlinks of a tree, and a chapter folder holds
//! whatever the repository's author committed: a symlink on the way
//! (`course -> /elsewhere`, `course -> ..`, `checkpoints/03/LEARNING.md ->
//! /etc/passwd`) must never make xtask write or read outside. Each
//! component below the root is opened with `openat(…, O_NOFOLLOW)` from
//! the folder opened just before it, so a symlink is refused even if it
//! appears while we walk: there is no gap between checking and using. The
//! root itself is trusted and may be reached through symlinks.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::{self, Error};

/// Why a path below a root could not be used.
#[derive(Debug)]
pub struct Refusal {
    /// The offending path, relative to the root (a prefix of the path asked for).
    pub at: PathBuf,
    pub reason: Reason,
}

/// What was found at [`Refusal::at`].
#[derive(Debug)]
pub enum Reason {
    /// A symlink, on the way or at the end: never followed.
    Symlink,
    /// Something other than a folder on the way.
    NotAFolder,
    /// A folder where a file was asked for.
    Folder,
    /// Not a regular file (a fifo, a socket, a device) where one is opened:
    /// refused at once, never waited on.
    NotAFile,
    /// The path is absolute, empty or has a `..`.
    NotRelative,
    Io(io::Error),
}

impl Refusal {
    fn new(at: PathBuf, reason: Reason) -> Self {
        Refusal { at, reason }
    }

    /// True when a symlink was refused.
    pub fn is_symlink(&self) -> bool {
        matches!(self.reason, Reason::Symlink)
    }

    /// True when the file (or a folder on the way) does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(&self.reason, Reason::Io(error) if error.kind() == io::ErrorKind::NotFound)
    }

    /// True when [`Open::CreateNew`] found the file there already.
    pub fn is_already_there(&self) -> bool {
        matches!(&self.reason, Reason::Io(error) if error.kind() == io::ErrorKind::AlreadyExists)
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.at.display();
        match &self.reason {
            Reason::Symlink => write!(f, "`{at}` is a symlink, which is never followed"),
            Reason::NotAFolder => write!(f, "`{at}` is not a folder"),
            Reason::Folder => write!(f, "`{at}` is a folder, not a file"),
            Reason::NotAFile => write!(
                f,
                "`{at}` is not a regular file (a fifo, socket or device is never opened)"
            ),
            Reason::NotRelative => write!(
                f,
                "`{at}` is not a relative path that stays inside its folder"
            ),
            Reason::Io(error) => write!(f, "`{at}`: {error}"),
        }
    }
}

impl std::error::Error for Refusal {}

/// A refusal is bad input (exit 2), unless the machine failed (a full disk,
/// a denied permission: exit 3).
impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Self {
        match &refusal.reason {
            Reason::Io(io_error) if error::is_environment(io_error) => {
                Error::environment(refusal.to_string())
            }
            _ => Error::bad_input(refusal.to_string()),
        }
    }
}

/// How [`open_inside`] opens a file. Every way refuses a symlink anywhere
/// below the root and anything but a regular file at the end (a fifo is
/// never waited on), and creates missing folders on the way except [`Open::Read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Read an existing file; missing: [`Refusal::is_not_found`]. No folder is created.
    Read,
    /// Append, creating the file (mode 0o644 less the umask) if missing.
    Append,
    /// Create a new file for writing; there already: [`Refusal::is_already_there`].
    CreateNew,
}

/// Opens the regular file `rel` below `root` as `how` says, without
/// following a symlink and without waiting on a fifo.
pub fn open_inside(root: &Path, rel: &Path, how: Open) -> Result<File, Refusal> {
    let names = names(rel)?;
    let (last, folders) = names.split_last().expect("names() is never empty");
    let create = how != Open::Read;
    let at = || rel.to_path_buf();
    let Some(folder) = open_folders(root, folders, create)? else {
        let missing = io::Error::from(io::ErrorKind::NotFound);
        return Err(Refusal::new(at(), Reason::Io(missing)));
    };
    let flags = match how {
        Open::Read => OFlags::RDONLY,
        Open::Append => OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE,
        Open::CreateNew => OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
    };
    let flags = flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = open_at(&folder, last, flags, 0o644)
        .map_err(|error| explain(&folder, last, at(), error, true))?;
    let file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|error| Refusal::new(at(), Reason::Io(error)))?;
    if meta.is_dir() {
        return Err(Refusal::new(at(), Reason::Folder));
    }
    if !meta.is_file() {
        return Err(Refusal::new(at(), Reason::NotAFile));
    }
    // A regular file ignores O_NONBLOCK; cleared all the same, so the file
    // behaves as any other once handed out.
    let plain = rustix::fs::fcntl_getfl(&file).map(|flags| flags - OFlags::NONBLOCK);
    plain
        .and_then(|flags| rustix::fs::fcntl_setfl(&file, flags))
        .map_err(|errno| Refusal::new(at(), Reason::Io(errno.into())))?;
    Ok(file)
}

/// Removes the file or symlink `rel` below `root` (never what a symlink
/// points at, never a folder); a missing one is no error.
pub fn remove_inside(root: &Path, rel: &Path) -> Result<(), Refusal> {
    let names = names(rel)?;
    let (last, folders) = names.split_last().expect("names() is never empty");
    let Some(folder) = open_folders(root, folders, false)? else {
        return Ok(());
    };
    match rustix::fs::unlinkat(&folder, *last, AtFlags::empty()) {
        Ok(()) => Ok(()),
        Err(errno) if errno == rustix::io::Errno::NOENT => Ok(()),
        Err(errno) => Err(explain(
            &folder,
            last,
            rel.to_path_buf(),
            errno.into(),
            true,
        )),
    }
}

/// Makes `rel` below `root` a real folder and returns its path: creates what
/// is missing and refuses a symlink (or anything but a folder) on the way.
/// For folders the tool then uses by path, such as work and build folders
/// that a checked-out tree or an earlier run could have replaced by a link.
pub fn folder_inside(root: &Path, rel: &Path) -> Result<PathBuf, Refusal> {
    let names = names(rel)?;
    open_folders(root, &names, true)?;
    Ok(root.join(rel))
}

/// The content of the regular file `rel` below `root`, or `None` when it (or
/// a folder on the way) does not exist. Refuses a symlink anywhere below
/// `root`, and anything but a regular file at the end. Creates nothing.
pub fn read_inside(root: &Path, rel: &Path) -> Result<Option<Vec<u8>>, Refusal> {
    let mut file = match open_inside(root, rel, Open::Read) {
        Ok(file) => file,
        Err(refusal) if refusal.is_not_found() => return Ok(None),
        Err(refusal) => return Err(refusal),
    };
    let mut content = Vec::new();
    file.read_to_end(&mut content)
        .map_err(|error| Refusal::new(rel.to_path_buf(), Reason::Io(error)))?;
    Ok(Some(content))
}

/// Writes `content` to a new file `rel` below `root` with permission bits
/// `mode` (less the umask). Missing folders on the way are created; a
/// symlink on the way is refused. A file or symlink already at `rel` is
/// replaced (unlinked, never followed); a folder there is refused.
pub fn write_inside(root: &Path, rel: &Path, content: &[u8], mode: u32) -> Result<(), Refusal> {
    let names = names(rel)?;
    let (last, folders) = names.split_last().expect("names() is never empty");
    let folder = open_folders(root, folders, true)?.expect("folders are created");
    let at = || rel.to_path_buf();
    match rustix::fs::statat(&folder, *last, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if kind(&stat) == FileType::Directory => {
            return Err(Refusal::new(at(), Reason::Folder));
        }
        Ok(_) => rustix::fs::unlinkat(&folder, *last, AtFlags::empty())
            .map_err(|errno| Refusal::new(at(), Reason::Io(errno.into())))?,
        Err(errno) if errno == rustix::io::Errno::NOENT => {}
        Err(errno) => return Err(Refusal::new(at(), Reason::Io(errno.into()))),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = open_at(&folder, last, flags, mode)
        .map_err(|error| explain(&folder, last, at(), error, true))?;
    File::from(fd)
        .write_all(content)
        .map_err(|error| Refusal::new(at(), Reason::Io(error)))
}

/// The names of `rel`'s components; only plain names (and `.`) are allowed.
fn names(rel: &Path) -> Result<Vec<&OsStr>, Refusal> {
    let mut names = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => return Err(Refusal::new(rel.to_path_buf(), Reason::NotRelative)),
        }
    }
    if names.is_empty() {
        return Err(Refusal::new(rel.to_path_buf(), Reason::NotRelative));
    }
    Ok(names)
}

/// Opens `root`, then each of `folders` below it without following
/// symlinks. A missing folder is created when `create`, else `None`.
fn open_folders(root: &Path, folders: &[&OsStr], create: bool) -> Result<Option<OwnedFd>, Refusal> {
    let folder_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut folder = rustix::fs::open(root, folder_flags, Mode::empty())
        .map_err(|errno| Refusal::new(PathBuf::from("."), Reason::Io(errno.into())))?;
    let mut at = PathBuf::new();
    for name in folders {
        at.push(name);
        let flags = folder_flags | OFlags::NOFOLLOW;
        let next = match open_at(&folder, name, flags, 0) {
            Ok(next) => next,
            Err(error) if error.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                match rustix::fs::mkdirat(&folder, *name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(errno) => return Err(Refusal::new(at, Reason::Io(errno.into()))),
                }
                open_at(&folder, name, flags, 0)
                    .map_err(|error| explain(&folder, name, at.clone(), error, false))?
            }
            Err(error) => return Err(explain(&folder, name, at, error, false)),
        };
        folder = next;
    }
    Ok(Some(folder))
}

/// Turns a failed open of `name` (the `last` component, or a folder on the
/// way) into the reason: a symlink, not a folder, not a file, or the error.
fn explain(folder: &OwnedFd, name: &OsStr, at: PathBuf, error: io::Error, last: bool) -> Refusal {
    let Ok(stat) = rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) else {
        return Refusal::new(at, Reason::Io(error));
    };
    let reason = match kind(&stat) {
        FileType::Symlink => Reason::Symlink,
        FileType::Directory if last => Reason::Folder,
        FileType::RegularFile if !last => Reason::NotAFolder,
        FileType::Directory | FileType::RegularFile => Reason::Io(error),
        _ if last => Reason::NotAFile,
        _ => Reason::NotAFolder,
    };
    Refusal::new(at, reason)
}

fn kind(stat: &rustix::fs::Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

fn open_at(folder: &OwnedFd, name: &OsStr, flags: OFlags, mode: u32) -> io::Result<OwnedFd> {
    rustix::fs::openat(folder, name, flags, Mode::from_raw_mode(mode)).map_err(io::Error::from)
}

/// Makes a fifo at `path`, for tests of what is never waited on.
/// The first entry below `dir` (at any depth, never following a link) that
/// is a symlink, or anything but a folder or a regular file (a FIFO, a
/// socket, a device); a missing or unreadable folder holds none. For a build
/// folder a tool hands to cargo, which would write through a link it finds
/// there, or block on a FIFO.
pub fn first_unsafe_entry(dir: &Path) -> Option<PathBuf> {
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .follow_links(false)
        .into_iter()
        .filter_map(|entry| entry.ok())
        .find(|entry| {
            let kind = entry.file_type();
            !(kind.is_dir() || kind.is_file())
        })
        .map(|entry| entry.into_path())
}

#[cfg(test)]
pub fn make_fifo(path: &Path) -> io::Result<()> {
    let mode = Mode::from_raw_mode(0o644);
    Ok(rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        FileType::Fifo,
        mode,
        0,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_or_fifo_anywhere_in_a_build_folder_is_found_and_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("debug/deps")).unwrap();
        std::fs::write(root.join("debug/deps/a.d"), "").unwrap();
        assert_eq!(first_unsafe_entry(root), None);
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(outside.path().join("inside")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x"), root.join("debug/deps/b.d")).unwrap();
        assert_eq!(first_unsafe_entry(root), Some(root.join("debug/deps/b.d")));
        std::fs::remove_file(root.join("debug/deps/b.d")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("debug/deps/c.d"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(first_unsafe_entry(root), Some(root.join("debug/deps/c.d")));
        assert_eq!(first_unsafe_entry(&root.join("missing")), None);
    }
    use std::fs;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let holder = tempfile::tempdir().unwrap();
        let root = holder.path().join("root");
        let outside = holder.path().join("outside");
        fs::create_dir_all(root.join("real")).unwrap();
        fs::create_dir_all(outside.join("sub")).unwrap();
        fs::write(outside.join("secret"), "secret\n").unwrap();
        fs::write(outside.join("sub/secret"), "secret\n").unwrap();
        fs::write(root.join("real/file"), "mine\n").unwrap();
        symlink(&outside, root.join("link")).unwrap();
        symlink("..", root.join("real/up")).unwrap();
        symlink(outside.join("secret"), root.join("real/secret-link")).unwrap();
        (holder, root, outside)
    }

    #[test]
    fn reads_refuse_every_symlink_below_the_root() {
        let (_holder, root, _) = setup();
        let read = |rel: &str| read_inside(&root, Path::new(rel));
        assert_eq!(read("real/file").unwrap().unwrap(), b"mine\n");
        assert_eq!(read("./real/file").unwrap().unwrap(), b"mine\n");
        assert!(read("real/missing").unwrap().is_none());
        assert!(read("missing/file").unwrap().is_none());
        for (rel, at) in [
            ("link/secret", "link"),
            ("link/sub/secret", "link"),
            ("real/up/real/file", "real/up"),
            ("real/secret-link", "real/secret-link"),
        ] {
            let refusal = read(rel).unwrap_err();
            assert!(refusal.is_symlink(), "{rel}: {refusal}");
            assert_eq!(refusal.at, Path::new(at), "{rel}");
        }
        assert!(matches!(read("real").unwrap_err().reason, Reason::Folder));
        assert!(matches!(
            read("real/file/x").unwrap_err().reason,
            Reason::NotAFolder
        ));
        for bad in ["../root/real/file", "/etc/passwd", "", "real/../real/file"] {
            assert!(
                matches!(read(bad).unwrap_err().reason, Reason::NotRelative),
                "{bad}"
            );
        }
    }

    #[test]
    fn writes_create_folders_replace_files_and_refuse_symlinks_on_the_way() {
        let (holder, root, outside) = setup();
        let write = |rel: &str| write_inside(&root, Path::new(rel), b"new\n", 0o644);
        write("a/b/c.txt").unwrap();
        assert_eq!(fs::read(root.join("a/b/c.txt")).unwrap(), b"new\n");
        write("real/file").unwrap();
        assert_eq!(fs::read(root.join("real/file")).unwrap(), b"new\n");
        // A symlink at the end is replaced by a file; its target is untouched.
        write("real/secret-link").unwrap();
        assert!(
            fs::symlink_metadata(root.join("real/secret-link"))
                .unwrap()
                .is_file()
        );
        for (rel, at) in [
            ("link/secret", "link"),
            ("link/new/x", "link"),
            ("real/up/x", "real/up"),
        ] {
            let refusal = write(rel).unwrap_err();
            assert!(refusal.is_symlink(), "{rel}: {refusal}");
            assert_eq!(refusal.at, Path::new(at));
        }
        assert!(matches!(write("real").unwrap_err().reason, Reason::Folder));
        assert_eq!(fs::read(outside.join("secret")).unwrap(), b"secret\n");
        assert_eq!(fs::read(outside.join("sub/secret")).unwrap(), b"secret\n");
        assert!(!outside.join("new").exists());
        assert!(!holder.path().join("x").exists());
    }

    #[test]
    fn reading_creates_nothing_on_the_way() {
        let (_holder, root, _) = setup();
        assert!(
            read_inside(&root, Path::new("missing/deeper/file"))
                .unwrap()
                .is_none()
        );
        let refusal = open_inside(&root, Path::new("missing/file"), Open::Read).unwrap_err();
        assert!(refusal.is_not_found(), "{refusal}");
        assert!(!root.join("missing").exists(), "no folder made by a read");
        remove_inside(&root, Path::new("missing/file")).unwrap();
        assert!(
            !root.join("missing").exists(),
            "no folder made by a removal"
        );
    }

    #[test]
    fn a_fifo_is_refused_at_once_however_it_is_opened() {
        let (_holder, root, _) = setup();
        make_fifo(&root.join("real/fifo")).unwrap();
        let started = std::time::Instant::now();
        let refusal = read_inside(&root, Path::new("real/fifo")).unwrap_err();
        assert!(matches!(refusal.reason, Reason::NotAFile), "{refusal}");
        for how in [Open::Read, Open::Append, Open::CreateNew] {
            let refusal = open_inside(&root, Path::new("real/fifo"), how).unwrap_err();
            assert!(
                matches!(refusal.reason, Reason::NotAFile),
                "{how:?}: {refusal}"
            );
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        // A fifo on the way (a lab's `target` replaced by one) is not a folder.
        let refusal = read_inside(&root, Path::new("real/fifo/x")).unwrap_err();
        assert!(matches!(refusal.reason, Reason::NotAFolder), "{refusal}");
        let refusal = folder_inside(&root, Path::new("real/fifo")).unwrap_err();
        assert!(matches!(refusal.reason, Reason::NotAFolder), "{refusal}");
        let error = Error::from(refusal);
        assert_eq!(error.exit_code(), 2);
    }

    #[test]
    fn each_way_of_opening_does_what_it_says_and_follows_no_symlink() {
        let (_holder, root, outside) = setup();
        let open = |rel: &str, how| open_inside(&root, Path::new(rel), how);
        open("new/log", Open::Append)
            .unwrap()
            .write_all(b"a\n")
            .unwrap();
        open("new/log", Open::Append)
            .unwrap()
            .write_all(b"b\n")
            .unwrap();
        assert_eq!(fs::read(root.join("new/log")).unwrap(), b"a\nb\n");
        open("new/lock", Open::CreateNew).unwrap();
        assert!(
            open("new/lock", Open::CreateNew)
                .unwrap_err()
                .is_already_there()
        );
        for how in [Open::Read, Open::Append, Open::CreateNew] {
            for (rel, at) in [
                ("real/secret-link", "real/secret-link"),
                ("link/secret", "link"),
            ] {
                let refusal = open(rel, how).unwrap_err();
                assert!(refusal.is_symlink(), "{how:?} {rel}: {refusal}");
                assert_eq!(refusal.at, Path::new(at));
            }
            assert!(
                matches!(open("real", how).unwrap_err().reason, Reason::Folder),
                "{how:?}"
            );
        }
        remove_inside(&root, Path::new("real/secret-link")).unwrap();
        assert!(fs::symlink_metadata(root.join("real/secret-link")).is_err());
        assert!(
            remove_inside(&root, Path::new("link/secret"))
                .unwrap_err()
                .is_symlink()
        );
        assert_eq!(fs::read(outside.join("secret")).unwrap(), b"secret\n");
        assert!(!outside.join("lock").exists() && !outside.join("log").exists());
    }

    #[test]
    fn a_denied_permission_is_the_environments_failure() {
        let refusal = Refusal::new(
            PathBuf::from("x"),
            Reason::Io(io::Error::from(io::ErrorKind::PermissionDenied)),
        );
        assert_eq!(Error::from(refusal).exit_code(), 3);
        let missing = Reason::Io(io::Error::from(io::ErrorKind::NotFound));
        for reason in [Reason::Symlink, Reason::NotAFile, missing] {
            let refusal = Refusal::new(PathBuf::from("x"), reason);
            assert_eq!(Error::from(refusal).exit_code(), 2);
        }
        assert!(!Refusal::new(PathBuf::from("x"), Reason::Folder).is_symlink());
    }

    #[test]
    fn folders_are_made_and_removals_touch_only_what_is_there() {
        let (_holder, root, _) = setup();
        let made = folder_inside(&root, Path::new("a/b")).unwrap();
        assert_eq!(made, root.join("a/b"));
        assert!(made.is_dir());
        assert!(
            folder_inside(&root, Path::new("link/b"))
                .unwrap_err()
                .is_symlink()
        );
        // A missing file in an existing folder is no error; a folder is
        // never removed.
        remove_inside(&root, Path::new("real/missing")).unwrap();
        let refusal = remove_inside(&root, Path::new("real")).unwrap_err();
        assert!(matches!(refusal.reason, Reason::Folder), "{refusal}");
        assert!(root.join("real/file").is_file());
        remove_inside(&root, Path::new("real/file")).unwrap();
        assert!(!root.join("real/file").exists());
    }
}
