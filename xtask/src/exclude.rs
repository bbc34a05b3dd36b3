//! Keeping a practice folder inside the work tree out of git: one line in
//! `<common git dir>/info/exclude`, appended in one write.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{self, Error, Result};
use crate::learner_text as say;

/// The line added (or found) in an exclude file.
#[derive(Debug)]
pub struct Excluded {
    /// The pattern, for messages (lossy when the name is not UTF-8).
    pub pattern: String,
    pub file: PathBuf,
    /// False when the file already held the pattern.
    pub added: bool,
}

/// The gitignore pattern matching the folder `relative` alone: anchored
/// `/`, trailing `/`, with `\`, `*`, `?`, `[` escaped; a newline is bad input.
pub fn pattern_for(relative: &Path) -> Result<Vec<u8>> {
    let mut pattern = Vec::new();
    for name in relative {
        pattern.push(b'/');
        for &byte in name.as_bytes() {
            match byte {
                b'\n' => {
                    let shown = relative.display().to_string();
                    return Err(Error::bad_input(say::exclude_newline(&shown)));
                }
                b'\\' | b'*' | b'?' | b'[' => pattern.extend_from_slice(&[b'\\', byte]),
                _ => pattern.push(byte),
            }
        }
    }
    pattern.push(b'/');
    Ok(pattern)
}

/// Adds `pattern` to the exclude file of `git_dir` unless it is there.
pub fn add(git_dir: &Path, pattern: &[u8]) -> Result<Excluded> {
    let file = git_dir.join("info/exclude");
    let append = || -> io::Result<bool> {
        let existing = match fs::read(&file) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
            read => read?,
        };
        let present = existing
            .split(|&byte| byte == b'\n')
            .any(|line| line.strip_suffix(b"\r").unwrap_or(line) == pattern);
        if present {
            return Ok(false);
        }
        let mut line = [pattern, b"\n"].concat();
        if !existing.is_empty() && !existing.ends_with(b"\n") {
            line.insert(0, b'\n');
        }
        fs::create_dir_all(git_dir.join("info"))?;
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(&file)?
            .write_all(&line)?;
        Ok(true)
    };
    let added = append().map_err(error::io_said(|error| {
        say::exclude_unusable(&file.display().to_string(), &error.to_string())
    }))?;
    Ok(Excluded {
        pattern: String::from_utf8_lossy(pattern).into_owned(),
        file,
        added,
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
    }

    /// A git folder as `git init` leaves it, with `info/` as given.
    fn git_dir(exclude: Option<&[u8]>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(content) = exclude {
            fs::create_dir(dir.path().join("info")).unwrap();
            fs::write(dir.path().join("info/exclude"), content).unwrap();
        }
        dir
    }

    fn add_lab(dir: &Path) -> Result<Excluded> {
        add(dir, b"/lab/")
    }

    fn exclude_of(dir: &Path) -> String {
        fs::read_to_string(dir.join("info/exclude")).unwrap()
    }

    #[test]
    fn a_repository_without_an_exclude_file_gets_one_with_the_line() {
        let dir = git_dir(None);
        let excluded = add_lab(dir.path()).unwrap();
        assert!(excluded.added);
        assert_eq!(excluded.file, dir.path().join("info/exclude"));
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
