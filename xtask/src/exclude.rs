//! Keeping a practice folder inside the work tree out of git: one pattern
//! that matches that folder alone, in the exclude file git actually reads,
//! added under a lock so concurrent runs never lose each other's line.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use git2::Repository;

use crate::error::{self, Error, Result};
use crate::signals;

/// How long to wait for another run's lock on the exclude file.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The line added (or found) in an exclude file.
#[derive(Debug)]
pub struct Excluded {
    /// The pattern, for messages (lossy when the name is not UTF-8).
    pub pattern: String,
    /// The exclude file.
    pub file: PathBuf,
    /// False when the file already held the pattern.
    pub added: bool,
}

/// The gitignore pattern that matches the folder `relative` (relative to
/// the work tree's root) and nothing else: anchored with a leading `/`,
/// folders only with a trailing `/`, and `\`, `*`, `?`, `[` escaped. The
/// leading `/` also keeps a name starting with `#` or `!` from being a
/// comment or a negation, and the trailing `/` keeps trailing spaces. A name
/// with a newline cannot be written in a pattern: that is bad input.
pub fn pattern_for(relative: &Path) -> Result<Vec<u8>> {
    let mut pattern = Vec::new();
    for component in relative.components() {
        let Component::Normal(name) = component else {
            return Err(Error::bad_input(format!(
                "cannot exclude {}: not a plain path below the work tree",
                relative.display()
            )));
        };
        pattern.push(b'/');
        for &byte in name.as_bytes() {
            match byte {
                b'\n' => {
                    return Err(Error::bad_input(format!(
                        "the folder name {:?} contains a newline, which no git exclude pattern can \
                         express: choose a name without one; nothing was touched",
                        relative.display().to_string()
                    )));
                }
                b'\\' | b'*' | b'?' | b'[' => pattern.extend_from_slice(&[b'\\', byte]),
                _ => pattern.push(byte),
            }
        }
    }
    if pattern.is_empty() {
        return Err(Error::bad_input(
            "cannot exclude the work tree's root itself",
        ));
    }
    pattern.push(b'/');
    Ok(pattern)
}

/// Adds `pattern` (from [`pattern_for`]) to `<common git dir>/info/exclude`,
/// the file git reads for every worktree of the repository, unless it is
/// there already. Holds `info/exclude.lock` (created with `create_new`)
/// meanwhile; waits up to ten seconds for another run's lock.
pub fn add(git: &Repository, pattern: &[u8]) -> Result<Excluded> {
    let info = git.commondir().join("info");
    let file = info.join("exclude");
    fs::create_dir_all(&info).map_err(error::io(format!("cannot create {}", info.display())))?;
    let _lock = Lock::acquire(info.join("exclude.lock"))?;
    let existing = match fs::read(&file) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == ErrorKind::NotFound => Vec::new(),
        Err(error) => {
            return Err(Error::bad_input(format!(
                "cannot read {}: {error}",
                file.display()
            )));
        }
    };
    let shown = String::from_utf8_lossy(pattern).into_owned();
    let present = existing
        .split(|&byte| byte == b'\n')
        .any(|line| line.strip_suffix(b"\r").unwrap_or(line) == pattern);
    if present {
        return Ok(Excluded {
            pattern: shown,
            file,
            added: false,
        });
    }
    let mut line = Vec::new();
    if !existing.is_empty() && !existing.ends_with(b"\n") {
        line.push(b'\n');
    }
    line.extend_from_slice(pattern);
    line.push(b'\n');
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(&file)
        .and_then(|mut exclude| exclude.write_all(&line))
        .map_err(error::io(format!("cannot write {}", file.display())))?;
    Ok(Excluded {
        pattern: shown,
        file,
        added: true,
    })
}

/// A lock file we created; removed when dropped. Never removes another's.
struct Lock(PathBuf);

impl Lock {
    fn acquire(path: PathBuf) -> Result<Self> {
        let started = Instant::now();
        loop {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(Lock(path));
                }
                Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
                Err(error) => {
                    return Err(Error::bad_input(format!(
                        "cannot create {}: {error}",
                        path.display()
                    )));
                }
            }
            signals::check()?;
            if started.elapsed() > LOCK_WAIT {
                return Err(Error::bad_input(format!(
                    "{} has existed for {}s: another practice run is adding its folder to the exclude file; \
                     if none is running, delete {} and run again",
                    path.display(),
                    LOCK_WAIT.as_secs(),
                    path.display()
                )));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(path: &str) -> String {
        String::from_utf8(pattern_for(Path::new(path)).unwrap()).unwrap()
    }

    #[test]
    fn patterns_are_anchored_escaped_folders() {
        assert_eq!(pattern("lab"), "/lab/");
        assert_eq!(pattern("labs/first"), "/labs/first/");
        assert_eq!(pattern("*"), r"/\*/");
        assert_eq!(pattern("lab[1]"), r"/lab\[1]/");
        assert_eq!(pattern("q?"), r"/q\?/");
        assert_eq!(pattern(r"back\slash"), r"/back\\slash/");
        assert_eq!(pattern("#hash"), "/#hash/");
        assert_eq!(pattern("!bang"), "/!bang/");
        assert_eq!(pattern("trailing "), "/trailing /");
        assert!(pattern_for(Path::new("a\nb")).is_err());
        assert!(pattern_for(Path::new("")).is_err());
        assert!(pattern_for(Path::new("../x")).is_err());
    }
}
