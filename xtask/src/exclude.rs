//! Keeping a practice folder inside the work tree out of git: one pattern
//! that matches that folder alone, in the exclude file git actually reads,
//! appended as one whole line in one write, so two runs at once never lose
//! each other's line. The file is git's own, read and written as git does.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use git2::Repository;

use crate::error::{self, Error, Result};
use crate::learner_text as say;

/// The exclude file, below the common git folder.
const EXCLUDE_FILE: &str = "info/exclude";

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
/// there already.
pub fn add(git: &Repository, pattern: &[u8]) -> Result<Excluded> {
    add_in(git.commondir(), pattern)
}

/// [`add`] for the common git folder `git_dir`.
fn add_in(git_dir: &Path, pattern: &[u8]) -> Result<Excluded> {
    let file = git_dir.join(EXCLUDE_FILE);
    let cannot = |error: io::Error| {
        let message = say::exclude_unusable(&file.display().to_string(), &error.to_string());
        if error::is_environment(&error) {
            Error::environment(message)
        } else {
            Error::bad_input(message)
        }
    };
    let existing = match fs::read(&file) {
        Ok(existing) => existing,
        Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(cannot(error)),
    };
    let shown = String::from_utf8_lossy(pattern).into_owned();
    let present = existing
        .split(|&byte| byte == b'\n')
        .any(|line| line.strip_suffix(b"\r").unwrap_or(line) == pattern);
    if !present {
        let mut line = Vec::new();
        if !existing.is_empty() && !existing.ends_with(b"\n") {
            line.push(b'\n');
        }
        line.extend_from_slice(pattern);
        line.push(b'\n');
        fs::create_dir_all(git_dir.join("info"))
            .and_then(|()| OpenOptions::new().append(true).create(true).open(&file))
            .and_then(|mut opened| opened.write_all(&line))
            .map_err(cannot)?;
    }
    Ok(Excluded {
        pattern: shown,
        file,
        added: !present,
    })
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
        add_in(dir, b"/lab/")
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
}
