//! What recut refuses before it touches anything: every repository state in
//! which appending to the branch would be wrong, and every setting under
//! which the work tree does not say faithfully what git would commit.

use git2::RepositoryState;
use git2::{Config, ErrorCode, Index, IndexEntryExtendedFlag, ReferenceType, Repository};

use super::Branch;
use crate::error::{self, Error, Result};

/// The end of every refusal: nothing moved.
const UNCHANGED: &str = "nothing was changed";

/// The branch to append to, refusing every state where moving it is wrong:
/// an unfinished operation, a detached HEAD, a HEAD naming something that
/// is not a branch or naming a symbolic reference, an unborn branch.
pub fn branch(git: &Repository) -> Result<Branch> {
    if let Some(operation) = in_progress(git.state()) {
        return Err(Error::bad_input(format!(
            "{operation} is in progress: finish or abort it first; {UNCHANGED}"
        )));
    }
    let head = git
        .find_reference("HEAD")
        .map_err(error::git("cannot read HEAD"))?;
    let Some(name) = head
        .symbolic_target_bytes()
        .map(|name| String::from_utf8_lossy(name).into_owned())
    else {
        let at = head.target().map(crate::repo::short_id).unwrap_or_default();
        return Err(Error::bad_input(format!(
            "HEAD is detached (at {at}): recut appends to a branch, so switch to one first \
             (e.g. `git switch main`); {UNCHANGED}"
        )));
    };
    if !name.starts_with("refs/heads/") {
        return Err(Error::bad_input(format!(
            "HEAD points to `{name}`, which is not a branch: recut appends to a branch \
             (refs/heads/…), so switch to one first; {UNCHANGED}"
        )));
    }
    match git.find_reference(&name) {
        Ok(reference) if reference.kind() == Some(ReferenceType::Symbolic) => {
            let to = reference
                .symbolic_target_bytes()
                .map(|to| String::from_utf8_lossy(to).into_owned())
                .unwrap_or_default();
            Err(Error::bad_input(format!(
                "HEAD points to `{name}`, which is itself a symbolic reference (to `{to}`): \
                 recut moves one branch by name and will not move one through another; \
                 switch to the branch itself (`git switch {}`); {UNCHANGED}",
                to.strip_prefix("refs/heads/").unwrap_or(&to)
            )))
        }
        Ok(reference) => match reference.target() {
            Some(id) => Ok(Branch { name, head: id }),
            None => Err(Error::bad_input(format!("`{name}` names no commit"))),
        },
        Err(error) if error.code() == ErrorCode::NotFound => Err(Error::bad_input(format!(
            "HEAD names the branch `{}`, which has no commits yet (an unborn branch): \
             recut appends to the course's history, so switch to the branch that holds it \
             (e.g. `git switch main`); {UNCHANGED}",
            name.trim_start_matches("refs/heads/")
        ))),
        Err(error) => Err(error::git(format!("cannot read {name}"))(error)),
    }
}

/// The operation that `state` says is unfinished, if any.
fn in_progress(state: RepositoryState) -> Option<&'static str> {
    match state {
        RepositoryState::Clean => None,
        RepositoryState::Merge => Some("a merge"),
        RepositoryState::Revert | RepositoryState::RevertSequence => Some("a revert"),
        RepositoryState::CherryPick | RepositoryState::CherryPickSequence => Some("a cherry-pick"),
        RepositoryState::Bisect => Some("a bisect"),
        RepositoryState::Rebase
        | RepositoryState::RebaseInteractive
        | RepositoryState::RebaseMerge => Some("a rebase"),
        RepositoryState::ApplyMailbox | RepositoryState::ApplyMailboxOrRebase => Some("a `git am`"),
    }
}

/// Refuses the settings under which the work tree is not what git would
/// commit: a sparse checkout (the files outside the cone are missing on
/// disk), `core.fileMode=false` (the executable bits on disk mean nothing),
/// `core.symlinks=false` (symlinks are plain files), `core.autocrlf` (line
/// endings are converted on the way in and out).
pub fn representable(git: &Repository) -> Result<()> {
    let config = git
        .config()
        .map_err(error::git("cannot read git's configuration"))?;
    refuse_settings(&config)
}

fn refuse_settings(config: &Config) -> Result<()> {
    let flag = |name: &str| config.get_bool(name).ok();
    if flag("core.sparseCheckout") == Some(true) {
        return Err(sparse("core.sparseCheckout is true"));
    }
    if flag("core.fileMode") == Some(false) {
        return Err(Error::bad_input(format!(
            "core.fileMode is false here, so the executable bits in the work tree do not say \
             what git commits, and recut commits what the work tree holds: re-cut in a clone \
             where `git config core.fileMode` is true; {UNCHANGED}"
        )));
    }
    if flag("core.symlinks") == Some(false) {
        return Err(Error::bad_input(format!(
            "core.symlinks is false here, so symlinks are plain files in the work tree and \
             recut would commit them as such: re-cut where symlinks work; {UNCHANGED}"
        )));
    }
    let autocrlf = config
        .get_string("core.autocrlf")
        .unwrap_or_default()
        .to_ascii_lowercase();
    if ["true", "input", "yes", "on", "1"].contains(&autocrlf.as_str()) {
        return Err(Error::bad_input(format!(
            "core.autocrlf is `{autocrlf}` here: git converts line endings when it commits \
             and checks out, and recut commits and writes files byte for byte, so the \
             checkpoints would differ from a `git add`; re-cut with \
             `git -c core.autocrlf=false` settings (e.g. `git config core.autocrlf false`); \
             {UNCHANGED}"
        )));
    }
    Ok(())
}

fn sparse(why: &str) -> Error {
    Error::bad_input(format!(
        "this is a sparse checkout ({why}): the files outside it are missing from the work \
         tree, and recut, which takes the work tree as the learner's world, would commit \
         their deletion; run `git sparse-checkout disable` first; {UNCHANGED}"
    ))
}

/// The repository's index, refused while it holds unresolved conflicts or
/// entries a sparse checkout leaves out of the work tree (`skip-worktree`).
pub fn resolved_index(git: &Repository) -> Result<Index> {
    let mut index = git.index().map_err(error::git("cannot read the index"))?;
    index
        .read(true)
        .map_err(error::git("cannot read the index"))?;
    if index.has_conflicts() {
        return Err(Error::bad_input(format!(
            "the index has unresolved conflicts: resolve or reset them first; {UNCHANGED}"
        )));
    }
    let skipped = IndexEntryExtendedFlag::SKIP_WORKTREE.bits();
    if let Some(entry) = index
        .iter()
        .find(|entry| entry.flags_extended & skipped != 0)
    {
        return Err(sparse(&format!(
            "`{}` is marked skip-worktree",
            String::from_utf8_lossy(&entry.path)
        )));
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_with(settings: &[(&str, &str)]) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let mut config = Config::open(&path).unwrap();
        for (name, value) in settings {
            config.set_str(name, value).unwrap();
        }
        (dir, Config::open(&path).unwrap())
    }

    #[test]
    fn settings_that_change_what_git_commits_are_refused() {
        for (name, value, needle) in [
            ("core.sparseCheckout", "true", "sparse checkout"),
            ("core.fileMode", "false", "core.fileMode is false"),
            ("core.symlinks", "false", "core.symlinks is false"),
            ("core.autocrlf", "input", "core.autocrlf is `input`"),
            ("core.autocrlf", "true", "core.autocrlf is `true`"),
        ] {
            let (_dir, config) = config_with(&[(name, value)]);
            let error = refuse_settings(&config).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{name}");
            assert!(error.to_string().contains(needle), "{name}: {error}");
            assert!(error.to_string().contains(UNCHANGED), "{name}: {error}");
        }
    }

    #[test]
    fn gits_defaults_are_accepted() {
        let (_dir, config) = config_with(&[
            ("core.fileMode", "true"),
            ("core.autocrlf", "false"),
            ("core.sparseCheckout", "false"),
        ]);
        refuse_settings(&config).unwrap();
        let (_dir, empty) = config_with(&[]);
        refuse_settings(&empty).unwrap();
    }

    #[test]
    fn every_unfinished_operation_is_named() {
        assert_eq!(in_progress(RepositoryState::Clean), None);
        assert_eq!(in_progress(RepositoryState::Merge), Some("a merge"));
        assert_eq!(
            in_progress(RepositoryState::RebaseInteractive),
            Some("a rebase")
        );
    }

    fn repo() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        let signature = git2::Signature::now("T", "t@example.com").unwrap();
        let tree = git.treebuilder(None).unwrap().write().unwrap();
        {
            let tree = git.find_tree(tree).unwrap();
            git.commit(Some("HEAD"), &signature, &signature, "first", &tree, &[])
                .unwrap();
        }
        (dir, git)
    }

    #[test]
    fn head_must_name_a_branch_directly() {
        let (_dir, git) = repo();
        let head = git.head().unwrap().target().unwrap();
        let name = git.head().unwrap().name().unwrap().to_string();
        assert_eq!(branch(&git).unwrap().head, head);

        git.reference_symbolic("refs/heads/alias", &name, true, "test")
            .unwrap();
        git.set_head("refs/heads/alias").unwrap();
        let error = branch(&git).unwrap_err().to_string();
        assert!(error.contains("itself a symbolic reference"), "{error}");
        assert!(error.contains(&format!("to `{name}`")), "{error}");

        git.set_head("refs/heads/unborn").unwrap();
        let error = branch(&git).unwrap_err().to_string();
        assert!(
            error.contains("`unborn`, which has no commits yet"),
            "{error}"
        );

        git.set_head_detached(head).unwrap();
        let error = branch(&git).unwrap_err().to_string();
        assert!(error.contains(&format!(
            "HEAD is detached (at {})",
            crate::repo::short_id(head)
        )));
    }
}
