//! The symlinks a re-cut refuses to commit: one whose target is absolute or
//! leaves the work tree (the files it stands for would not be in the
//! commit: `mv course/tests /outside && ln -s /outside course/tests` takes
//! every test out of the chapter's history), and one where the chapter's
//! current end state has a folder (committing it deletes the folder's files
//! from the chapter and, replayed, from every later one).

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use git2::{ObjectType, Tree};

use super::text::{repo_path, shown};
use crate::error::{Error, Result};
use crate::manifest::ChapterId;

/// How many symlinks inside the work tree a target may pass through.
const MAX_HOPS: usize = 40;

/// The chapter being re-cut and the learner world it ends with today (its
/// target, or HEAD's tree when it was never cut).
pub struct Chapter<'t> {
    pub id: ChapterId,
    pub end: Tree<'t>,
}

/// Refuses the symlink at repository path `path` (below `root`) pointing to
/// `target`, when it leaves the work tree or replaces a folder of `chapter`.
pub fn refuse(root: &Path, path: &[u8], target: &Path, chapter: &Chapter<'_>) -> Result<()> {
    let folder: Vec<OsString> = repo_path(path)
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .map(|part| part.as_os_str().to_owned())
        .collect();
    let leaves = if target.is_absolute() {
        Some("absolute")
    } else if resolve(root, folder, target, 0).is_none() {
        Some("outside the work tree")
    } else {
        None
    };
    if let Some(how) = leaves {
        return Err(Error::bad_input(format!(
            "`{}` is a symlink to `{}` ({how}): a commit would hold the link, not the files it \
             points to, so the chapter's files would leave its history. Put the files \
             themselves there (e.g. `rm {p} && cp -R <target> {p}`), or point the link inside \
             the work tree; nothing was changed",
            shown(path),
            target.display(),
            p = shown(path),
        )));
    }
    let replaced = chapter.end.get_path(repo_path(path));
    if replaced.is_ok_and(|entry| entry.kind() == Some(ObjectType::Tree)) {
        return Err(Error::bad_input(format!(
            "`{p}` is a symlink where chapter {id} has a folder: committing it would delete the \
             folder's files from chapter {id} and every later chapter. Put the folder back \
             (e.g. `rm {p} && git restore --source=<chapter {id}'s commit> -- {p}`) and edit \
             the files in it; nothing was changed",
            p = shown(path),
            id = chapter.id,
        )));
    }
    Ok(())
}

/// Where `target`, read in the folder `at` (components below `root`),
/// leads, following the symlinks it passes inside the work tree; `None`
/// when it leaves the work tree, or passes too many symlinks.
fn resolve(
    root: &Path,
    mut at: Vec<OsString>,
    target: &Path,
    hops: usize,
) -> Option<Vec<OsString>> {
    if target.is_absolute() || hops > MAX_HOPS {
        return None;
    }
    for part in target.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                at.pop()?;
            }
            Component::Normal(name) => {
                at.push(name.to_owned());
                let here: PathBuf = root.join(at.iter().collect::<PathBuf>());
                if let Ok(next) = std::fs::read_link(&here) {
                    at.pop();
                    at = resolve(root, at, &next, hops + 1)?;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_target_is_followed_through_the_work_trees_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("course/src")).unwrap();
        symlink("..", root.join("course/up")).unwrap();
        let inside = |folder: &[&str], target: &str| {
            let folder = folder.iter().map(OsString::from).collect();
            resolve(root, folder, Path::new(target), 0).is_some()
        };
        assert!(inside(&["course"], "src/lib.rs"));
        assert!(inside(&["course"], "../Cargo.toml"));
        assert!(inside(&["course"], "up/course/up"));
        assert!(!inside(&["course"], "../.."));
        assert!(!inside(&["course"], "up/../x"), "`up` is the root already");
        assert!(!inside(&["course"], "/etc"));
        symlink("self", root.join("course/self")).unwrap();
        assert!(!inside(&["course"], "self/x"), "a loop");
    }
}
