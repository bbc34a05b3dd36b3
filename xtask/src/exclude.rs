//! Keeping a practice folder inside the work tree out of git: one pattern
//! that matches that folder alone, in the exclude file git actually reads,
//! added under a lock so concurrent runs never lose each other's line.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use git2::Repository;

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::safe_fs::{self, Open, Refusal};
use crate::signals;

/// How long to wait for another run's lock on the exclude file.
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// The exclude file, below the common git folder.
const EXCLUDE_FILE: &str = "info/exclude";
/// Its lock, held while a run adds its line.
const LOCK_FILE: &str = "info/exclude.lock";

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
            return Err(Error::bad_input(say::exclude_not_plain(
                &relative.display().to_string(),
            )));
        };
        pattern.push(b'/');
        for &byte in name.as_bytes() {
            match byte {
                b'\n' => {
                    return Err(Error::bad_input(say::exclude_newline(
                        &relative.display().to_string(),
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
/// there already. Holds `info/exclude.lock` (created new) meanwhile; waits
/// up to ten seconds for another run's lock. Neither file is opened through
/// a symlink, and a fifo or other non-regular file there is refused at
/// once (exit 2), never waited on.
pub fn add(git: &Repository, pattern: &[u8]) -> Result<Excluded> {
    add_in(git.commondir(), pattern, LOCK_WAIT)
}

/// [`add`] for the common git folder `git_dir`, waiting `wait` for a lock.
fn add_in(git_dir: &Path, pattern: &[u8], wait: Duration) -> Result<Excluded> {
    let file = git_dir.join(EXCLUDE_FILE);
    let rel = Path::new(EXCLUDE_FILE);
    let _lock = Lock::acquire(git_dir, Path::new(LOCK_FILE), wait)?;
    let existing = safe_fs::read_inside(git_dir, rel)
        .map_err(|refusal| refused(git_dir, refusal))?
        .unwrap_or_default();
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
    safe_fs::open_inside(git_dir, rel, Open::Append)
        .map_err(|refusal| refused(git_dir, refusal))?
        .write_all(&line)
        .map_err(crate::error::io_said(|error| {
            say::practice_io(say::PracticeStep::Write, &file.display().to_string(), error)
        }))?;
    Ok(Excluded {
        pattern: shown,
        file,
        added: true,
    })
}

/// The error for a file of the git folder that cannot be used.
fn refused(git_dir: &Path, refusal: Refusal) -> Error {
    let shown = git_dir.join(&refusal.at).display().to_string();
    let message = say::exclude_unusable(&shown, &say::refusal(&refusal));
    if Error::from(refusal).exit_code() == 3 {
        Error::environment(message)
    } else {
        Error::bad_input(message)
    }
}

/// A lock file we created; removed when dropped. Never removes another's.
struct Lock {
    git_dir: PathBuf,
    rel: PathBuf,
}

impl Lock {
    /// Creates `rel` below `git_dir`, waiting up to `wait` while another
    /// run's lock file is there. Something there that no run of ours makes
    /// (a symlink, a fifo, a folder) is refused at once, never waited on.
    fn acquire(git_dir: &Path, rel: &Path, wait: Duration) -> Result<Self> {
        let started = Instant::now();
        let path = git_dir.join(rel);
        loop {
            match safe_fs::open_inside(git_dir, rel, Open::CreateNew) {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(Lock {
                        git_dir: git_dir.to_path_buf(),
                        rel: rel.to_path_buf(),
                    });
                }
                // Another run's lock file (a regular file): wait for it.
                Err(refusal) if refusal.is_already_there() => {}
                // A symlink, a fifo, a folder: no run of ours made it.
                Err(refusal) => return Err(refused(git_dir, refusal)),
            }
            signals::check()?;
            if started.elapsed() > wait {
                return Err(Error::bad_input(say::exclude_lock_stale(
                    &path.display().to_string(),
                    wait.as_secs(),
                )));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = safe_fs::remove_inside(&self.git_dir, &self.rel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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

    /// A git folder as `git init` leaves it, with `info/` as given.
    fn git_dir(exclude: Option<&[u8]>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(content) = exclude {
            fs::create_dir(dir.path().join("info")).unwrap();
            fs::write(dir.path().join(EXCLUDE_FILE), content).unwrap();
        }
        dir
    }

    fn add_lab(dir: &Path) -> Result<Excluded> {
        add_in(dir, b"/lab/", Duration::from_secs(2))
    }

    fn exclude_of(dir: &Path) -> String {
        fs::read_to_string(dir.join(EXCLUDE_FILE)).unwrap()
    }

    #[test]
    fn a_repository_without_an_exclude_file_gets_one_with_the_line() {
        let dir = git_dir(None);
        let excluded = add_lab(dir.path()).unwrap();
        assert!(excluded.added);
        assert_eq!(excluded.file, dir.path().join(EXCLUDE_FILE));
        assert_eq!(exclude_of(dir.path()), "/lab/\n");
        assert!(!dir.path().join(LOCK_FILE).exists(), "the lock is gone");
    }

    #[test]
    fn the_same_pattern_twice_leaves_one_line() {
        let dir = git_dir(Some(b"# git's own comment\n"));
        assert!(add_lab(dir.path()).unwrap().added);
        assert!(!add_lab(dir.path()).unwrap().added);
        assert_eq!(exclude_of(dir.path()), "# git's own comment\n/lab/\n");
        // A line written with CRLF counts too.
        let dir = git_dir(Some(b"/lab/\r\n"));
        assert!(!add_lab(dir.path()).unwrap().added);
        assert_eq!(exclude_of(dir.path()), "/lab/\r\n");
    }

    #[test]
    fn a_file_without_a_final_newline_gets_the_line_on_a_line_of_its_own() {
        let dir = git_dir(Some(b"/mine/"));
        add_lab(dir.path()).unwrap();
        assert_eq!(exclude_of(dir.path()), "/mine/\n/lab/\n");
        let dir = git_dir(Some(b""));
        add_lab(dir.path()).unwrap();
        assert_eq!(exclude_of(dir.path()), "/lab/\n");
    }

    #[test]
    fn a_symlinked_or_special_exclude_file_is_refused_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("elsewhere");
        fs::write(&target, "theirs\n").unwrap();
        type Maker<'a> = &'a dyn Fn(&Path);
        let makers: [(&str, Maker); 3] = [
            ("symlink", &|path| {
                std::os::unix::fs::symlink(&target, path).unwrap()
            }),
            ("fifo", &|path| safe_fs::make_fifo(path).unwrap()),
            ("folder", &|path| fs::create_dir(path).unwrap()),
        ];
        for (what, make) in makers {
            let dir = git_dir(None);
            fs::create_dir(dir.path().join("info")).unwrap();
            make(&dir.path().join(EXCLUDE_FILE));
            let started = Instant::now();
            let error = add_lab(dir.path()).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{what}: {error}");
            assert!(
                error.to_string().contains("info/exclude"),
                "{what}: {error}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{what}: no wait"
            );
            assert!(
                !dir.path().join(LOCK_FILE).exists(),
                "{what}: the lock is gone"
            );
        }
        assert_eq!(fs::read_to_string(&target).unwrap(), "theirs\n");
        // A symlinked `info` folder is not followed either.
        let dir = git_dir(None);
        std::os::unix::fs::symlink(outside.path(), dir.path().join("info")).unwrap();
        let error = add_lab(dir.path()).unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        assert!(!outside.path().join("exclude").exists());
        assert!(!outside.path().join("exclude.lock").exists());
    }

    #[test]
    fn a_stale_lock_times_out_and_stays() {
        let dir = git_dir(Some(b""));
        fs::write(dir.path().join(LOCK_FILE), "12345\n").unwrap();
        let started = Instant::now();
        let error = add_in(dir.path(), b"/lab/", Duration::from_millis(300)).unwrap_err();
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(300), "waited {took:?}");
        assert!(took < Duration::from_secs(5), "waited {took:?}");
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("exclude.lock"), "{error}");
        assert_eq!(
            fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(),
            "12345\n",
            "another run's lock is never removed"
        );
        assert_eq!(exclude_of(dir.path()), "");
        // A lock that goes away while we wait is taken.
        let path = dir.path().join(LOCK_FILE);
        let remover = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            fs::remove_file(path).unwrap();
        });
        add_in(dir.path(), b"/lab/", Duration::from_secs(5)).unwrap();
        remover.join().unwrap();
        assert_eq!(exclude_of(dir.path()), "/lab/\n");
    }

    #[test]
    fn a_symlink_or_fifo_as_the_lock_is_refused_at_once() {
        let outside = tempfile::tempdir().unwrap();
        let dir = git_dir(Some(b""));
        std::os::unix::fs::symlink(outside.path().join("x"), dir.path().join(LOCK_FILE)).unwrap();
        let fifo_dir = git_dir(Some(b""));
        safe_fs::make_fifo(&fifo_dir.path().join(LOCK_FILE)).unwrap();
        for (dir, needle) in [(&dir, "symlink"), (&fifo_dir, "not a regular file")] {
            let started = Instant::now();
            let error = add_in(dir.path(), b"/lab/", Duration::from_secs(5)).unwrap_err();
            assert!(started.elapsed() < Duration::from_secs(2), "{error}");
            assert_eq!(error.exit_code(), 2, "{error}");
            assert!(error.to_string().contains("exclude.lock"), "{error}");
            assert!(error.to_string().contains(needle), "{error}");
            assert!(fs::symlink_metadata(dir.path().join(LOCK_FILE)).is_ok());
            assert_eq!(exclude_of(dir.path()), "");
        }
        assert!(!outside.path().join("x").exists());
    }
}
