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

use std::ffi::{CString, OsStr};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use crate::error::Error;

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
    /// Not a regular file (a fifo, a device) where one is read.
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
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.at.display();
        match &self.reason {
            Reason::Symlink => write!(f, "`{at}` is a symlink, which is never followed"),
            Reason::NotAFolder => write!(f, "`{at}` is not a folder"),
            Reason::Folder => write!(f, "`{at}` is a folder, not a file"),
            Reason::NotAFile => write!(f, "`{at}` is not a regular file"),
            Reason::NotRelative => write!(
                f,
                "`{at}` is not a relative path that stays inside its folder"
            ),
            Reason::Io(error) => write!(f, "`{at}`: {error}"),
        }
    }
}

impl std::error::Error for Refusal {}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Self {
        Error::bad_input(refusal.to_string())
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
/// `root`, and anything but a regular file at the end.
pub fn read_inside(root: &Path, rel: &Path) -> Result<Option<Vec<u8>>, Refusal> {
    let names = names(rel)?;
    let (last, folders) = names.split_last().expect("names() is never empty");
    let Some(folder) = open_folders(root, folders, false)? else {
        return Ok(None);
    };
    let at = || rel.to_path_buf();
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let fd = match open_at(&folder, last, flags, 0) {
        Ok(fd) => fd,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(explain(&folder, last, at(), error)),
    };
    let mut file = File::from(fd);
    let meta = file
        .metadata()
        .map_err(|error| Refusal::new(at(), Reason::Io(error)))?;
    if !meta.is_file() {
        return Err(Refusal::new(at(), Reason::NotAFile));
    }
    let mut content = Vec::new();
    file.read_to_end(&mut content)
        .map_err(|error| Refusal::new(at(), Reason::Io(error)))?;
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
    match stat_at(&folder, last) {
        Ok(stat) if is(&stat, libc::S_IFDIR) => return Err(Refusal::new(at(), Reason::Folder)),
        Ok(_) => unlink_at(&folder, last).map_err(|error| Refusal::new(at(), Reason::Io(error)))?,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(Refusal::new(at(), Reason::Io(error))),
    }
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let fd =
        open_at(&folder, last, flags, mode).map_err(|error| explain(&folder, last, at(), error))?;
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
    let mut folder: OwnedFd = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(root)
        .map(OwnedFd::from)
        .map_err(|error| Refusal::new(PathBuf::from("."), Reason::Io(error)))?;
    let mut at = PathBuf::new();
    for name in folders {
        at.push(name);
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let next = match open_at(&folder, name, flags, 0) {
            Ok(next) => next,
            Err(error) if error.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                match make_folder_at(&folder, name) {
                    Ok(()) => {}
                    Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(error) => return Err(Refusal::new(at, Reason::Io(error))),
                }
                open_at(&folder, name, flags, 0)
                    .map_err(|error| explain(&folder, name, at.clone(), error))?
            }
            Err(error) => return Err(explain(&folder, name, at, error)),
        };
        folder = next;
    }
    Ok(Some(folder))
}

/// Turns a failed open into the reason: a symlink, not a folder, or the error.
fn explain(folder: &OwnedFd, name: &OsStr, at: PathBuf, error: io::Error) -> Refusal {
    match stat_at(folder, name) {
        Ok(stat) if is(&stat, libc::S_IFLNK) => Refusal::new(at, Reason::Symlink),
        Ok(stat) if !is(&stat, libc::S_IFDIR) && !is(&stat, libc::S_IFREG) => {
            Refusal::new(at, Reason::NotAFolder)
        }
        Ok(_) if error.raw_os_error() == Some(libc::ENOTDIR) => {
            Refusal::new(at, Reason::NotAFolder)
        }
        _ => Refusal::new(at, Reason::Io(error)),
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn is(stat: &libc::stat, kind: libc::mode_t) -> bool {
    stat.st_mode & libc::S_IFMT == kind
}

fn open_at(folder: &OwnedFd, name: &OsStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let name = c_name(name)?;
    // SAFETY: a valid folder descriptor and a NUL-terminated name; the
    // returned descriptor is owned by the OwnedFd.
    let fd = unsafe {
        libc::openat(
            folder.as_raw_fd(),
            name.as_ptr(),
            flags,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat_at(folder: &OwnedFd, name: &OsStr) -> io::Result<libc::stat> {
    let name = c_name(name)?;
    // SAFETY: zeroed is a valid `stat`; fstatat fills it or fails.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    let done = unsafe {
        libc::fstatat(
            folder.as_raw_fd(),
            name.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if done < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(stat)
}

fn make_folder_at(folder: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: a valid folder descriptor and a NUL-terminated name.
    if unsafe { libc::mkdirat(folder.as_raw_fd(), name.as_ptr(), 0o755) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn unlink_at(folder: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let name = c_name(name)?;
    // SAFETY: a valid folder descriptor and a NUL-terminated name; without
    // AT_REMOVEDIR only a non-folder entry is removed, never followed.
    if unsafe { libc::unlinkat(folder.as_raw_fd(), name.as_ptr(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(matches!(read("real").unwrap_err().reason, Reason::NotAFile));
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
}
