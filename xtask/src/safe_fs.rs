//! Reading and writing a file below a folder without following symlinks:
//! each component is opened with `openat(…, O_NOFOLLOW)` from the one
//! before. The root itself is trusted.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

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
    /// Not a regular file where one is read: refused, never waited on.
    NotAFile,
    /// The path is absolute, empty or has a `..`.
    NotRelative,
    Io(io::Error),
}

impl Refusal {
    fn new(at: &Path, reason: Reason) -> Self {
        Refusal {
            at: at.to_path_buf(),
            reason,
        }
    }

    /// A failed open of `name` in `folder` (at `at`).
    fn opening(folder: &OwnedFd, name: &OsStr, at: &Path, errno: Errno) -> Self {
        let reason = match errno {
            _ if rustix::fs::readlinkat(folder, name, Vec::new()).is_ok() => Reason::Symlink,
            Errno::NOTDIR => Reason::NotAFolder,
            errno => Reason::Io(errno.into()),
        };
        Refusal::new(at, reason)
    }

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

/// A refusal is bad input (exit 2), unless the machine failed (exit 3).
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

/// Makes `rel` below `root` a real folder (creating what is missing,
/// refusing a symlink on the way) and returns its path.
pub fn folder_inside(root: &Path, rel: &Path) -> Result<PathBuf, Refusal> {
    open_folders(root, &names(rel)?, true)?;
    Ok(root.join(rel))
}

/// The content of the regular file `rel` below `root`, `None` when it does
/// not exist; refuses a symlink anywhere and a non-regular file. Creates nothing.
pub fn read_inside(root: &Path, rel: &Path) -> Result<Option<Vec<u8>>, Refusal> {
    let names = names(rel)?;
    let (last, folders) = names.split_last().expect("names() is never empty");
    let Some(folder) = open_folders(root, folders, false)? else {
        return Ok(None);
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut file = match rustix::fs::openat(&folder, *last, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(Refusal::opening(&folder, last, rel, errno)),
    };
    let io = |error| Refusal::new(rel, Reason::Io(error));
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(Refusal::new(rel, Reason::Folder));
    }
    if !meta.is_file() {
        return Err(Refusal::new(rel, Reason::NotAFile));
    }
    let mut content = Vec::new();
    file.read_to_end(&mut content).map_err(io)?;
    Ok(Some(content))
}

/// Writes `content` to `rel` below `root` with mode `mode` (less umask),
/// creating missing folders and replacing a file there, never followed.
pub fn write_inside(root: &Path, rel: &Path, content: &[u8], mode: u32) -> Result<(), Refusal> {
    let names = names(rel)?;
    let (last, folders) = names.split_last().expect("names() is never empty");
    let folder = open_folders(root, folders, true)?.expect("folders are created");
    let io = |error: io::Error| Refusal::new(rel, Reason::Io(error));
    match rustix::fs::unlinkat(&folder, *last, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => {}
        Err(Errno::ISDIR) => return Err(Refusal::new(rel, Reason::Folder)),
        Err(errno) => return Err(io(errno.into())),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&folder, *last, flags, Mode::from_raw_mode(mode));
    File::from(fd.map_err(|errno| io(errno.into()))?)
        .write_all(content)
        .map_err(io)
}

/// The names of `rel`'s components; only plain names (and `.`) are allowed.
fn names(rel: &Path) -> Result<Vec<&OsStr>, Refusal> {
    let mut names = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => return Err(Refusal::new(rel, Reason::NotRelative)),
        }
    }
    if names.is_empty() {
        return Err(Refusal::new(rel, Reason::NotRelative));
    }
    Ok(names)
}

/// Opens `root`, then each of `folders` without following symlinks (`create`s missing ones).
fn open_folders(root: &Path, folders: &[&OsStr], create: bool) -> Result<Option<OwnedFd>, Refusal> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut folder = rustix::fs::open(root, flags, Mode::empty())
        .map_err(|errno| Refusal::new(Path::new("."), Reason::Io(errno.into())))?;
    let mut at = PathBuf::new();
    for name in folders {
        at.push(name);
        let open = |folder: &OwnedFd| {
            rustix::fs::openat(folder, *name, flags | OFlags::NOFOLLOW, Mode::empty())
        };
        folder = match open(&folder) {
            Ok(next) => next,
            Err(Errno::NOENT) if !create => return Ok(None),
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(&folder, *name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(Refusal::new(&at, Reason::Io(errno.into()))),
                }
                open(&folder).map_err(|errno| Refusal::opening(&folder, name, &at, errno))?
            }
            Err(errno) => return Err(Refusal::opening(&folder, name, &at, errno)),
        };
    }
    Ok(Some(folder))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::fs;
    use std::os::unix::fs::symlink;

    use rustix::fs::FileType;

    /// Makes a fifo at `path`, for tests of what is never waited on.
    fn make_fifo(path: &Path) -> io::Result<()> {
        let mode = Mode::from_raw_mode(0o644);
        Ok(rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            FileType::Fifo,
            mode,
            0,
        )?)
    }

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
        assert!(
            read_inside(&root, Path::new("missing/file"))
                .unwrap()
                .is_none()
        );
        assert!(!root.join("missing").exists(), "no folder made by a read");
    }

    #[test]
    fn a_fifo_is_refused_at_once_however_it_is_opened() {
        let (_holder, root, _) = setup();
        make_fifo(&root.join("real/fifo")).unwrap();
        let started = std::time::Instant::now();
        let refusal = read_inside(&root, Path::new("real/fifo")).unwrap_err();
        assert!(matches!(refusal.reason, Reason::NotAFile), "{refusal}");
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
    fn a_read_follows_no_symlink_and_opens_no_folder() {
        let (_holder, root, _) = setup();
        for (rel, at) in [
            ("real/secret-link", "real/secret-link"),
            ("link/secret", "link"),
        ] {
            let refusal = read_inside(&root, Path::new(rel)).unwrap_err();
            assert!(refusal.is_symlink(), "{rel}: {refusal}");
            assert_eq!(refusal.at, Path::new(at));
        }
        let refusal = read_inside(&root, Path::new("real")).unwrap_err();
        assert!(matches!(refusal.reason, Reason::Folder), "{refusal}");
    }

    #[test]
    fn a_denied_permission_is_the_environments_failure() {
        let refusal = Refusal::new(
            Path::new("x"),
            Reason::Io(io::Error::from(io::ErrorKind::PermissionDenied)),
        );
        assert_eq!(Error::from(refusal).exit_code(), 3);
        let missing = Reason::Io(io::Error::from(io::ErrorKind::NotFound));
        for reason in [Reason::Symlink, Reason::NotAFile, missing] {
            let refusal = Refusal::new(Path::new("x"), reason);
            assert_eq!(Error::from(refusal).exit_code(), 2);
        }
        assert!(!Refusal::new(Path::new("x"), Reason::Folder).is_symlink());
    }

    #[test]
    fn folders_are_made_and_never_through_a_symlink() {
        let (_holder, root, _) = setup();
        let made = folder_inside(&root, Path::new("a/b")).unwrap();
        assert_eq!(made, root.join("a/b"));
        assert!(made.is_dir());
        assert!(
            folder_inside(&root, Path::new("link/b"))
                .unwrap_err()
                .is_symlink()
        );
    }
}
