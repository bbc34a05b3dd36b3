//! Finding the course repository that contains the current directory.

use std::path::{Path, PathBuf};

use git2::{ErrorCode, Oid, Repository, Tree};

use crate::error::{self, Error, Result};

/// The folder of the chapter folders, at the repository root.
pub const CHECKPOINTS_DIR: &str = "checkpoints";

/// Cargo's build folder, at the root of a workspace (the repository's, a lab's).
pub const TARGET_DIR: &str = "target";

/// How many hex digits of a commit id the tool shows (as `git log --oneline`).
pub const SHORT_ID_LEN: usize = 7;

/// Commit `id` abbreviated to [`SHORT_ID_LEN`] hex digits.
pub fn short_id(id: Oid) -> String {
    let mut text = id.to_string();
    text.truncate(SHORT_ID_LEN);
    text
}

/// The course repository and its work tree.
pub struct CourseRepo {
    pub git: Repository,
    /// The root of the work tree: where `checkpoints/` lives.
    pub root: PathBuf,
    /// [`CourseRepo::root`] with every symlink resolved (or `root` itself
    /// when it cannot be resolved), computed once: compare paths with this.
    pub canonical_root: PathBuf,
}

impl CourseRepo {
    /// Discovers the repository containing `start` (usually the current
    /// directory), so the tool works from any subfolder.
    pub fn discover(start: &Path) -> Result<Self> {
        let git = Repository::discover(start).map_err(|error| match error.code() {
            ErrorCode::NotFound => Error::bad_input(crate::learner_text::basic::not_in_repository(
                &start.display().to_string(),
            )),
            ErrorCode::Owner => Error::bad_input(format!(
                "the repository at {} is owned by another user, so git refuses to open it; \
                 if you trust it, run `git config --global --add safe.directory {}`",
                owned_repository(start).display(),
                crate::out::shell_word(&owned_repository(start).to_string_lossy())
            )),
            _ => Error::bad_input(format!(
                "cannot open the git repository containing {}: {}",
                start.display(),
                error.message()
            )),
        })?;
        let Some(workdir) = git.workdir().map(Path::to_path_buf) else {
            return Err(Error::bad_input(format!(
                "{} is a bare repository: xtask needs a work tree with checkpoints/",
                git.path().display()
            )));
        };
        // libgit2 can name the wrong work tree for a `--separate-git-dir`
        // clone; the folder holding the `.git` link above `start` is the one.
        let root = work_tree_holding(start, &workdir).unwrap_or(workdir);
        let head_is_unborn = match git.head() {
            Ok(_) => false,
            Err(error) => matches!(error.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound),
        };
        let empty = git.is_empty().unwrap_or(false);
        if head_is_unborn && !empty {
            let branch = git
                .find_reference("HEAD")
                .ok()
                .and_then(|head| head.symbolic_target().ok().flatten().map(str::to_string))
                .unwrap_or_else(|| "HEAD".to_string());
            let branch = branch.strip_prefix("refs/heads/").unwrap_or(&branch);
            return Err(Error::bad_input(crate::learner_text::basic::unborn_head(
                branch,
            )));
        }
        if head_is_unborn || empty {
            return Err(Error::bad_input(
                crate::learner_text::basic::repository_without_commits(&root.display().to_string()),
            ));
        }
        let canonical_root = root.canonicalize().unwrap_or_else(|_| root.clone());
        Ok(CourseRepo {
            git,
            root,
            canonical_root,
        })
    }

    /// The folder holding one subfolder per chapter.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.root.join(CHECKPOINTS_DIR)
    }

    /// The tree of `commit`.
    pub fn tree_of(&self, commit: Oid) -> Result<Tree<'_>> {
        self.git
            .find_commit(commit)
            .and_then(|commit| commit.tree())
            .map_err(error::git(format!("cannot read the tree of {commit}")))
    }
}

/// The work tree git refused to open from `start`: the nearest folder (from
/// `start` up) holding a `.git`, which is the path `safe.directory` names.
fn owned_repository(start: &Path) -> PathBuf {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start
        .ancestors()
        .find(|folder| folder.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
        .or_else(|| Repository::discover_path(&start, [] as [&Path; 0]).ok())
        .unwrap_or(start)
}

/// The folder at or above `start` that holds a `.git` entry, when `start` is
/// not inside `workdir` (as libgit2 reports it).
fn work_tree_holding(start: &Path, workdir: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    let workdir = workdir.canonicalize().ok()?;
    if start.starts_with(&workdir) {
        return None;
    }
    start
        .ancestors()
        .find(|folder| folder.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_id_is_the_first_seven_hex_digits() {
        let id = Oid::from_str("0123456789abcdef0123456789abcdef01234567").unwrap();
        assert_eq!(short_id(id), "0123456");
    }
}
