//! The texts of a re-cut: commit messages, the advice on a conflict, and
//! how paths and commits are shown.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use git2::{Commit, Tree};

use crate::locate::Checkpoint;
use crate::manifest::ChapterId;
use crate::worlds;

/// The message of the commit restoring chapter `id`'s starting point.
pub fn restore_message(id: ChapterId, from: &str, head: &Commit<'_>) -> String {
    format!(
        "Restore chapter {id}'s starting point, to re-cut it\n\n\
         Learner's world: {from}.\n\
         Tooling: as at {}.\n\
         Made by `cargo xtask recut {id}`.\n",
        describe(head)
    )
}

/// Why chapter `later` does not replay, and how to re-cut both chapters.
pub fn conflict_message(
    recut: ChapterId,
    later: ChapterId,
    checkpoint: &Checkpoint,
    files: &[String],
    target: &Tree<'_>,
) -> String {
    format!(
        "chapter {later}'s layer does not replay onto the re-cut chapter {recut}: \
         conflicts in {files}.\n\
         Nothing was changed: no branch moved, the index and the work tree are as they were.\n\
         To re-cut both chapters:\n  \
         1. cargo xtask recut {recut} --only   (chapter {later} keeps its old checkpoint for now)\n  \
         2. bring the work tree's learner world to chapter {later}'s end state and make it fit, e.g.\n       \
            {restore}\n  \
         3. cargo xtask recut {later}   (it starts from the new chapter {recut} and replays the chapters after it)",
        files = files.join(", "),
        restore = restore_command(&checkpoint.target.short, target),
    )
}

/// The git command that brings the work tree's learner world to `tree`
/// (of commit `short`): its top-level learner entries, restored without
/// overlay, so files it lacks are removed.
pub fn restore_command(short: &str, tree: &Tree<'_>) -> String {
    let paths: Vec<String> = tree
        .iter()
        .filter(|entry| worlds::is_learner(entry.name_bytes()))
        .map(|entry| shown(entry.name_bytes()))
        .collect();
    format!("git restore --source={short} -- {}", paths.join(" "))
}

/// `abc1234 subject`, as `git log --oneline` shows a commit.
pub fn describe(commit: &Commit<'_>) -> String {
    let subject = String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default());
    format!("{} {subject}", crate::repo::short_id(commit.id()))
}

/// `prefix/name`, or `name` at the top.
pub fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = prefix.to_vec();
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// A repository path (bytes) as a `Path`.
pub fn repo_path(path: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(path))
}

/// A repository path for messages.
pub fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_joined_as_git_writes_them() {
        assert_eq!(join(b"", b"Cargo.toml"), b"Cargo.toml");
        assert_eq!(join(b"course/src", b"lib.rs"), b"course/src/lib.rs");
        assert_eq!(shown(b"caf\xc3\xa9/\xff"), "café/\u{fffd}");
        assert_eq!(repo_path(b"a/b"), Path::new("a/b"));
    }

    #[test]
    fn the_restore_command_names_only_learner_paths() {
        let dir = tempfile::tempdir().unwrap();
        let git = git2::Repository::init(dir.path()).unwrap();
        let blob = git.blob(b"x").unwrap();
        let mut builder = git.treebuilder(None).unwrap();
        for name in ["Cargo.toml", "course", "checkpoints", "xtask", "README.md"] {
            builder.insert(name, blob, crate::tree::MODE_FILE).unwrap();
        }
        let tree = git.find_tree(builder.write().unwrap()).unwrap();
        assert_eq!(
            restore_command("abc1234", &tree),
            "git restore --source=abc1234 -- Cargo.toml course"
        );
    }
}
