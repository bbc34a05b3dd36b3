//! Git's index during a re-cut: `index.lock` is held from the first read to
//! the last write, so no other git process changes the index meanwhile and
//! a locked index is refused before anything happens; the new index is
//! written beside the staged files and replaces the old one by rename, the
//! way git itself commits an index (`index.lock` → `index`).

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use git2::{Index, IndexEntry, IndexTime, Repository, Tree};

use super::changes::Blobs;
use crate::error::{self, Error, Result};
use crate::worlds;

/// Git's lock on the index, created by us; removed when dropped unless the
/// new index was installed through it.
pub struct Lock {
    lock: PathBuf,
    index: PathBuf,
    held: bool,
}

impl Lock {
    /// Creates `index.lock`, refusing when it exists: another git process
    /// is at work, or one crashed.
    pub fn take(git: &Repository) -> Result<Lock> {
        let index = git.path().join("index");
        let lock = git.path().join("index.lock");
        match OpenOptions::new().write(true).create_new(true).open(&lock) {
            Ok(_) => Ok(Lock {
                lock,
                index,
                held: true,
            }),
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                Err(Error::bad_input(format!(
                    "the index is locked: {} exists, so another git process is working in this \
                     repository or one crashed; wait for it to finish (or, when no git process \
                     runs, remove the file) and run recut again; nothing was changed: the \
                     branch, the index and the work tree are all as they were",
                    lock.display()
                )))
            }
            Err(error) => Err(error::io(format!("cannot create {}", lock.display()))(
                error,
            )),
        }
    }

    /// Replaces the index with `staged` (a file in the git dir): `staged`
    /// becomes `index.lock`, which becomes `index`.
    pub fn install(&mut self, staged: &Path) -> Result<()> {
        fs::rename(staged, &self.lock).map_err(error::io(format!(
            "cannot move the new index to {}",
            self.lock.display()
        )))?;
        fs::rename(&self.lock, &self.index).map_err(error::io(format!(
            "cannot move the new index to {}",
            self.index.display()
        )))?;
        self.held = false;
        Ok(())
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if self.held {
            let _ = fs::remove_file(&self.lock);
        }
    }
}

/// Writes the new index into `folder`: the current index (`git`'s, read
/// from disk) with every learner entry set to `tree`'s blobs (`wanted`),
/// every tooling entry as it was. Returns its path.
pub fn stage(git: &Repository, folder: &Path, tree: &Tree<'_>, wanted: &Blobs) -> Result<PathBuf> {
    let path = folder.join("index");
    let current = git.path().join("index");
    match fs::copy(&current, &path) {
        Ok(_) => {}
        Err(error) if error.kind() == ErrorKind::NotFound => {}
        Err(error) => {
            return Err(error::io(format!("cannot copy {}", current.display()))(
                error,
            ));
        }
    }
    let mut index = Index::open(&path).map_err(error::git("cannot read the index"))?;
    sync_learner_entries(&mut index, tree, wanted)
        .and_then(|()| index.write())
        .map_err(error::git("cannot write the new index"))?;
    Ok(path)
}

/// Sets the index's learner entries to `tree`'s, leaving every tooling entry
/// as it is. An entry that already matches keeps its stat data; new entries
/// carry none, so git compares their content on its next look (as after
/// `git reset -- <paths>`).
fn sync_learner_entries(
    index: &mut Index,
    tree: &Tree<'_>,
    wanted: &Blobs,
) -> Result<(), git2::Error> {
    let stale: Vec<Vec<u8>> = index
        .iter()
        .map(|entry| entry.path)
        .filter(|path| {
            worlds::is_learner(path) && tree.get_path(super::text::repo_path(path)).is_err()
        })
        .collect();
    for path in stale {
        index.remove_path(super::text::repo_path(&path))?;
    }
    for (path, blob) in wanted {
        let mode = blob.mode as u32;
        let current = index.get_path(path, 0);
        if current.is_some_and(|entry| entry.id == blob.oid && entry.mode == mode) {
            continue;
        }
        let never = IndexTime::new(0, 0);
        index.add(&IndexEntry {
            ctime: never,
            mtime: never,
            dev: 0,
            ino: 0,
            mode,
            uid: 0,
            gid: 0,
            file_size: 0,
            id: blob.oid,
            flags: 0,
            flags_extended: 0,
            path: path.as_os_str().as_encoded_bytes().to_vec(),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree;

    fn repo() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        (dir, git)
    }

    #[test]
    fn a_locked_index_is_refused_and_our_lock_is_released() {
        let (_dir, git) = repo();
        let lock = Lock::take(&git).unwrap();
        let error = Lock::take(&git).err().unwrap();
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("index.lock exists"), "{error}");
        drop(lock);
        assert!(!git.path().join("index.lock").exists());
        drop(Lock::take(&git).unwrap());
    }

    #[test]
    fn the_new_index_keeps_tooling_entries_and_replaces_learner_ones() {
        let (dir, git) = repo();
        for (path, content) in [("checkpoints/01/x", "tooling"), ("course/old.rs", "old")] {
            let file = dir.path().join(path);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(file, content).unwrap();
        }
        let mut index = git.index().unwrap();
        index.add_path(Path::new("checkpoints/01/x")).unwrap();
        index.add_path(Path::new("course/old.rs")).unwrap();
        index.write().unwrap();

        let new = git.blob(b"new").unwrap();
        let mut course = git.treebuilder(None).unwrap();
        course.insert("new.rs", new, tree::MODE_FILE).unwrap();
        let mut root = git.treebuilder(None).unwrap();
        root.insert("course", course.write().unwrap(), tree::MODE_TREE)
            .unwrap();
        let tree = git.find_tree(root.write().unwrap()).unwrap();
        let wanted = tree::list_tree(&git, &tree, &worlds::is_tooling).unwrap();

        let staging = tempfile::tempdir_in(git.path()).unwrap();
        let staged = stage(&git, staging.path(), &tree, &wanted).unwrap();
        let mut lock = Lock::take(&git).unwrap();
        lock.install(&staged).unwrap();
        drop(lock);

        let mut index = git.index().unwrap();
        index.read(true).unwrap();
        let paths: Vec<String> = index
            .iter()
            .map(|entry| String::from_utf8(entry.path).unwrap())
            .collect();
        assert_eq!(paths, ["checkpoints/01/x", "course/new.rs"]);
        assert!(!git.path().join("index.lock").exists());
    }
}
