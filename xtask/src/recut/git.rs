//! The git binary recut builds on (2.38 or newer, `merge-tree --write-tree`):
//! a failed call becomes one error naming the command and git's words.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use git2::Oid;

use crate::error::{Error, Result};
use crate::out::noteln;
use crate::signals;
use crate::worlds;

/// What git writes when the machine, not the input, failed it.
const ENVIRONMENT: [&str; 9] = [
    "unable to write",
    "No space left on device",
    "Permission denied",
    "Operation not permitted",
    "insufficient permission",
    "Read-only file system",
    "Disk quota exceeded",
    "File too large",
    "Too many open files",
];

/// The git binary, run in `root`, on the repository's index or another.
pub struct Git {
    root: PathBuf,
    index: Option<PathBuf>,
}

impl Git {
    /// The git on PATH, refused when it is missing or older than 2.38.
    pub fn find(root: &Path) -> Result<Git> {
        let git = Git {
            root: root.to_path_buf(),
            index: None,
        };
        let version = git.run(&["--version"]);
        let found = version.as_deref().ok().and_then(parse_version);
        if found.is_some_and(|found| found >= (2, 38)) {
            return Ok(git);
        }
        let said = version.map_or_else(|error| error.to_string(), |said| format!("`{said}`"));
        Err(Error::bad_input(format!(
            "recut builds on git 2.38 or newer (`merge-tree --write-tree`), and the git on PATH \
             said {said}: put git 2.38 or newer on PATH; nothing was changed"
        )))
    }

    /// The same git, on the index file `index` (`GIT_INDEX_FILE`).
    pub fn on_index(&self, index: &Path) -> Git {
        Git {
            root: self.root.clone(),
            index: Some(index.to_path_buf()),
        }
    }

    /// Runs `git ARGS`: its stdout, trimmed; its warnings are passed on.
    pub fn run(&self, args: &[impl AsRef<str>]) -> Result<String> {
        let done = self.call(args, "")?;
        if !done.status.success() {
            return Err(failure(args, &done));
        }
        let stderr = String::from_utf8_lossy(&done.stderr);
        for warning in stderr.lines().filter(|line| line.starts_with("warning:")) {
            noteln!("note: git {warning}");
        }
        Ok(String::from_utf8_lossy(&done.stdout).trim_end().to_string())
    }

    /// Runs `git ARGS` with `input` on stdin, for the object id it prints.
    pub fn oid(&self, args: &[&str], input: &str) -> Result<Oid> {
        let done = self.call(args, input)?;
        let stdout = String::from_utf8_lossy(&done.stdout);
        match Oid::from_str(stdout.lines().next().unwrap_or_default()) {
            Ok(id) if done.status.success() => Ok(id),
            _ => Err(failure(args, &done)),
        }
    }

    /// Runs `git ARGS` to its end, whatever its exit code; an error only
    /// when it could not run. A signal to recut alone does not stop it.
    pub fn call(&self, args: &[impl AsRef<str>], input: &str) -> Result<Output> {
        let mut command = Command::new("git");
        command.arg("-C").arg(&self.root);
        command.args(args.iter().map(AsRef::as_ref));
        // Messages recut reads (and classifies) in one language.
        command.env("LC_ALL", "C").env_remove("LANGUAGE");
        if let Some(index) = &self.index {
            command.env("GIT_INDEX_FILE", index);
        }
        let mut child = (command.stdin(Stdio::piped()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| Error::bad_input(format!("cannot run `{}`: {error}", shown(args))))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A git that reads no input closes the pipe; its exit code counts.
            let _ = stdin.write_all(input.as_bytes());
        }
        child.wait_with_output().map_err(|error| {
            Error::environment(format!("cannot wait for `{}`: {error}", shown(args)))
        })
    }
}

/// The error for `git ARGS` that ended as `done` did, git's message on one
/// line, with the exit code the failure calls for.
pub fn failure(args: &[impl AsRef<str>], done: &Output) -> Error {
    if let Some(signal) = signals::received() {
        return Error::interrupted(signal);
    }
    let stderr = String::from_utf8_lossy(&done.stderr);
    let said: Vec<&str> = (stderr.lines().map(str::trim))
        .filter(|line| !line.is_empty() && !line.starts_with("hint:"))
        .take(3)
        .collect();
    let why = match done.status.code() {
        None => "a signal ended it".to_string(),
        Some(code) if said.is_empty() => format!("it exited with {code}"),
        Some(_) => said.join(" "),
    };
    let message = format!("`{}` failed: {why}", shown(args));
    if done.status.code().is_none() || ENVIRONMENT.iter().any(|text| stderr.contains(text)) {
        Error::environment(message)
    } else {
        Error::bad_input(message)
    }
}

/// `git ARGS -- <the learner's world>`: every path but the tooling.
pub fn on_learner(args: &[&str]) -> Vec<String> {
    let excluded = worlds::TOOLING.iter().map(|top| format!(":(exclude){top}"));
    let learner = ["--", "."].into_iter().map(str::to_string).chain(excluded);
    args.iter()
        .map(|arg| arg.to_string())
        .chain(learner)
        .collect()
}

/// `git ARGS`, as the author would type it (the learner pathspec as `.`).
fn shown(args: &[impl AsRef<str>]) -> String {
    let args: Vec<&str> = (args.iter().map(AsRef::as_ref))
        .filter(|arg| !arg.starts_with(":(exclude)"))
        .collect();
    format!("git {}", args.join(" "))
}

/// (major, minor) of `git --version`'s answer.
fn parse_version(answer: &str) -> Option<(u32, u32)> {
    let number = answer.strip_prefix("git version ")?;
    let mut parts = number.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_as_git_prints_them() {
        assert_eq!(parse_version("git version 2.47.3"), Some((2, 47)));
        assert_eq!(
            parse_version("git version 2.39.2 (Apple Git-143)"),
            Some((2, 39))
        );
        assert_eq!(parse_version("git version 2.45.0.windows.1"), Some((2, 45)));
        assert!(parse_version("git version 2.9.5").unwrap() < (2, 38));
        assert_eq!(parse_version("hub version 2.14"), None);
    }

    #[test]
    fn a_full_disk_under_git_is_the_environments() {
        let done = |stderr: &str| Output {
            status: std::os::unix::process::ExitStatusExt::from_raw(128 << 8),
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
        };
        let full = failure(
            &["read-tree"],
            &done("error: unable to write file x: No space left on device\nhint: y\n"),
        );
        assert_eq!(full.exit_code(), 3);
        assert_eq!(
            full.to_string(),
            "`git read-tree` failed: error: unable to write file x: No space left on device"
        );
        let locked = failure(
            &["add"],
            &done("fatal: Unable to create 'i.lock': File exists."),
        );
        assert_eq!(locked.exit_code(), 2);
    }
}
