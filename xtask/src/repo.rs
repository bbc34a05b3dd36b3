//! Finding the course repository that contains the current directory.

use std::path::{Path, PathBuf};

use git2::{ErrorCode, Oid, Repository, Tree};

use crate::error::{self, Error, Result};
use crate::learner_text::basic as say;

/// The folder of the chapter folders, at the repository root.
pub const CHECKPOINTS_DIR: &str = "checkpoints";

/// Cargo's build folder, at the root of a workspace (the repository's, a lab's).
pub const TARGET_DIR: &str = "target";

/// Commit `id` abbreviated to 7 hex digits (as `git log --oneline`).
pub fn short_id(id: Oid) -> String {
    id.to_string()[..7].to_string()
}

/// The course repository and its work tree.
pub struct CourseRepo {
    pub git: Repository,
    /// The root of the work tree: where `checkpoints/` lives.
    pub root: PathBuf,
    /// [`CourseRepo::root`] with every symlink resolved: compare paths with this.
    pub canonical_root: PathBuf,
}

impl CourseRepo {
    /// Discovers the repository containing `start`, from any subfolder.
    pub fn discover(start: &Path) -> Result<Self> {
        let git = Repository::discover(start).map_err(|error| match error.code() {
            ErrorCode::NotFound => {
                Error::bad_input(say::not_in_repository(&start.display().to_string()))
            }
            ErrorCode::Owner => {
                // The path `safe.directory` names: the folder holding the `.git`.
                let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
                let owned = (start.ancestors())
                    .find(|folder| folder.join(".git").symlink_metadata().is_ok())
                    .unwrap_or(&start);
                Error::bad_input(format!(
                    "the repository at {} is owned by another user, so git refuses to open it; \
                     if you trust it, run `git config --global --add safe.directory {}`",
                    owned.display(),
                    crate::out::shell_word(&owned.to_string_lossy())
                ))
            }
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
        // libgit2 names the git folder's parent as the work tree of a
        // `--separate-git-dir` clone: the folder at or above `start` holding
        // the `.git` (folder or link) is the one.
        let root = work_tree_holding(start).unwrap_or(workdir);
        let unborn = matches!(git.head(), Err(error)
            if matches!(error.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound));
        if unborn {
            return Err(Error::bad_input(if git.is_empty().unwrap_or(false) {
                say::repository_without_commits(&root.display().to_string())
            } else {
                let head = git.find_reference("HEAD").ok();
                let branch = head.as_ref().and_then(|head| head.symbolic_target().ok()?);
                let branch = branch.unwrap_or("HEAD");
                say::unborn_head(branch.strip_prefix("refs/heads/").unwrap_or(branch))
            }));
        }
        let canonical_root = root.canonicalize().unwrap_or_else(|_| root.clone());
        Ok(CourseRepo {
            git,
            root,
            canonical_root,
        })
    }

    pub fn checkpoints_dir(&self) -> PathBuf {
        self.root.join(CHECKPOINTS_DIR)
    }

    pub fn tree_of(&self, commit: Oid) -> Result<Tree<'_>> {
        self.git
            .find_commit(commit)
            .and_then(|commit| commit.tree())
            .map_err(error::git(format!("cannot read the tree of {commit}")))
    }
}

/// The folder at or above `start` that holds a `.git` entry.
fn work_tree_holding(start: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    start
        .ancestors()
        .find(|folder| folder.join(".git").symlink_metadata().is_ok())
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
