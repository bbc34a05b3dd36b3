//! Git trees: git's file modes ([`file_mode`]), writing a tree into a folder
//! byte for byte from the object database, and listing one. Entry names that
//! could escape the folder are refused; every file and folder is created
//! fresh, so nothing is written through a symlink.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree, TreeEntry};

use crate::destination::failed;
use crate::error::{self, Error, Result};
use crate::learner_text::PracticeStep;
use crate::signals;

// Git's file modes, as tree entries and index entries carry them: the one
// vocabulary of the tooling (no `git2::FileMode`, no raw literals elsewhere).

pub const MODE_TREE: i32 = 0o040000;
pub const MODE_FILE: i32 = 0o100644;
/// A plain file in git's legacy group-writable mode.
pub const MODE_GROUP_WRITABLE: i32 = 0o100664;
pub const MODE_EXECUTABLE: i32 = 0o100755;
/// A symlink: the blob is the link's target.
pub const MODE_SYMLINK: i32 = 0o120000;
/// A submodule: the id is a commit of another repository.
pub const MODE_GITLINK: i32 = 0o160000;

/// The git mode of a regular file with these permission bits: git looks at
/// the owner's execute bit only.
pub fn file_mode(permissions: u32) -> i32 {
    if permissions & 0o100 != 0 {
        MODE_EXECUTABLE
    } else {
        MODE_FILE
    }
}

/// `mode` with git's legacy group-writable mode read as a plain file.
pub fn normal_mode(mode: i32) -> i32 {
    if mode == MODE_GROUP_WRITABLE {
        MODE_FILE
    } else {
        mode
    }
}

#[derive(Debug, Default)]
pub struct Written {
    pub files: usize,
    pub symlinks: usize,
    /// Submodules (gitlinks), written as empty folders.
    pub submodules: Vec<String>,
}

/// One entry of [`list_tree`]: a blob (file or symlink) and its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub oid: Oid,
    pub mode: i32,
}

/// Writes `tree` into the empty folder `dest`, leaving out what `skip` accepts.
pub fn write_tree(
    repo: &Repository,
    tree: &Tree<'_>,
    dest: &Path,
    skip: &dyn Fn(&[u8]) -> bool,
) -> Result<Written> {
    let mut written = Written::default();
    walk(repo, tree, &mut Vec::new(), skip, &mut |at, entry| {
        let path = dest.join(OsStr::from_bytes(at));
        let shown = String::from_utf8_lossy(at);
        let failed = failed(PracticeStep::Write, &path);
        match entry.filemode() {
            MODE_TREE => fs::create_dir(&path).map_err(failed)?,
            MODE_GITLINK => {
                fs::create_dir(&path).map_err(failed)?;
                written.submodules.push(shown.into_owned());
            }
            MODE_SYMLINK => {
                let target = read_blob(repo, entry.id(), &shown)?;
                symlink(OsStr::from_bytes(&target), &path).map_err(failed)?;
                written.symlinks += 1;
            }
            mode => {
                let content = read_blob(repo, entry.id(), &shown)?;
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(if mode == MODE_EXECUTABLE {
                        0o755
                    } else {
                        0o644
                    })
                    .open(&path)
                    .and_then(|mut file| file.write_all(&content))
                    .map_err(failed)?;
                written.files += 1;
            }
        }
        Ok(())
    })?;
    Ok(written)
}

/// Every blob of `tree` (files and symlinks) by path, leaving out what `skip` accepts.
pub fn list_tree(
    repo: &Repository,
    tree: &Tree<'_>,
    skip: &dyn Fn(&[u8]) -> bool,
) -> Result<BTreeMap<PathBuf, Blob>> {
    let mut blobs = BTreeMap::new();
    walk(repo, tree, &mut Vec::new(), skip, &mut |at, entry| {
        let (oid, mode) = (entry.id(), entry.filemode());
        if mode != MODE_TREE && mode != MODE_GITLINK {
            blobs.insert(PathBuf::from(OsStr::from_bytes(at)), Blob { oid, mode });
        }
        Ok(())
    })?;
    Ok(blobs)
}

/// Calls `visit` for every entry of `tree` `skip` does not accept, folders first.
fn walk(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &mut Vec<u8>,
    skip: &dyn Fn(&[u8]) -> bool,
    visit: &mut dyn FnMut(&[u8], &TreeEntry<'_>) -> Result<()>,
) -> Result<()> {
    for entry in tree.iter() {
        signals::check()?;
        let len = prefix.len();
        if len > 0 {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(entry.name_bytes());
        check_name(entry.name_bytes(), prefix)?;
        if !skip(prefix) {
            visit(prefix, &entry)?;
            if entry.filemode() == MODE_TREE {
                let shown = String::from_utf8_lossy(prefix);
                let subtree = repo
                    .find_tree(entry.id())
                    .map_err(error::git(format!("cannot read tree `{shown}`")))?;
                walk(repo, &subtree, prefix, skip, visit)?;
            }
        }
        prefix.truncate(len);
    }
    Ok(())
}

fn check_name(name: &[u8], path: &[u8]) -> Result<()> {
    let problem = if name.is_empty() {
        "an empty name"
    } else if name == b"." || name == b".." {
        "a name that points outside its folder"
    } else if name.contains(&b'/') || name.contains(&0) {
        "a name containing `/` or NUL"
    } else if name.eq_ignore_ascii_case(b".git") {
        "a `.git` entry"
    } else {
        return Ok(());
    };
    Err(Error::bad_input(format!(
        "refusing crafted tree entry `{}` ({problem}): nothing was written outside the practice folder; \
         the commit is not a valid checkpoint",
        String::from_utf8_lossy(path)
    )))
}

fn read_blob(repo: &Repository, oid: Oid, shown: &str) -> Result<Vec<u8>> {
    let blob = repo.find_blob(oid).map_err(error::git(format!(
        "cannot read `{shown}` from the object database"
    )))?;
    Ok(blob.content().to_vec())
}

pub fn file_at(repo: &Repository, tree: &Tree<'_>, path: &str) -> Result<Option<Vec<u8>>> {
    blob_at(tree, path)
        .map(|blob| read_blob(repo, blob.oid, path))
        .transpose()
}

/// The blob (file or symlink) at `path` in `tree`, if there is one.
pub fn blob_at(tree: &Tree<'_>, path: &str) -> Option<Blob> {
    let entry = tree.get_path(Path::new(path)).ok()?;
    (entry.kind() == Some(ObjectType::Blob)).then(|| Blob {
        oid: entry.id(),
        mode: entry.filemode(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_owners_execute_bit_makes_a_file_executable() {
        assert_eq!(file_mode(0o100755), MODE_EXECUTABLE);
        assert_eq!(file_mode(0o744), MODE_EXECUTABLE);
        assert_eq!(file_mode(0o700), MODE_EXECUTABLE);
        assert_eq!(file_mode(0o644), MODE_FILE);
        // Group or others may execute, the owner may not: git commits 100644.
        assert_eq!(file_mode(0o654), MODE_FILE);
        assert_eq!(file_mode(0o645), MODE_FILE);
        assert_eq!(file_mode(0o611), MODE_FILE);
        assert_eq!(normal_mode(MODE_GROUP_WRITABLE), MODE_FILE);
        assert_eq!(normal_mode(MODE_SYMLINK), MODE_SYMLINK);
    }

    #[test]
    fn the_constants_are_gits_own_modes() {
        for (ours, git) in [
            (MODE_TREE, git2::FileMode::Tree),
            (MODE_FILE, git2::FileMode::Blob),
            (MODE_GROUP_WRITABLE, git2::FileMode::BlobGroupWritable),
            (MODE_EXECUTABLE, git2::FileMode::BlobExecutable),
            (MODE_SYMLINK, git2::FileMode::Link),
            (MODE_GITLINK, git2::FileMode::Commit),
        ] {
            assert_eq!(ours, i32::from(git));
        }
    }
}
