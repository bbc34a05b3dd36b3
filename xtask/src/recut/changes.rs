//! What the work tree must change to hold the new HEAD's learner world, and
//! the checks that make changing it safe, all before anything is written.
//!
//! The work tree holds the snapshot (the learner world recut just read) plus
//! what git leaves out of it (ignored files, nested repositories). The
//! changes are the blobs where the snapshot and the new learner world
//! differ. Each is checked on disk first: every folder on its way must be a
//! real folder (a symlink there, ignored or not, is never written through),
//! the file it replaces or removes must still be what the snapshot read, and
//! nothing outside the snapshot may be overwritten or removed (an ignored
//! file in the way is refused, never overwritten silently).

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Tree};

use crate::error::{self, Error, Result};
use crate::tree::{self, Blob};
use crate::worlds;

/// A learner blob as it is in the work tree (`old`) and as the new HEAD has
/// it (`new`); `None` where there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub old: Option<Blob>,
    pub new: Option<Blob>,
}

/// Learner blobs by path.
pub type Blobs = BTreeMap<PathBuf, Blob>;

/// Every learner blob (file, symlink) of `tree`.
pub fn learner_blobs(git: &Repository, tree: &Tree<'_>) -> Result<Blobs> {
    tree::list_tree(git, tree, &worlds::is_tooling)
}

/// The changes from `old` to `new`, by path. Equal content under git's two
/// plain-file modes is no change.
pub fn between(old: &Blobs, new: &Blobs) -> Vec<Change> {
    let mut changes = Vec::new();
    for (path, blob) in old {
        match new.get(path) {
            Some(next) if same(blob, next) => {}
            next => changes.push(Change {
                path: path.clone(),
                old: Some(*blob),
                new: next.copied(),
            }),
        }
    }
    for (path, blob) in new {
        if !old.contains_key(path) {
            changes.push(Change {
                path: path.clone(),
                old: None,
                new: Some(*blob),
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

fn same(a: &Blob, b: &Blob) -> bool {
    a.oid == b.oid && tree::normal_mode(a.mode) == tree::normal_mode(b.mode)
}

/// Checks every change against the work tree below `root` (see the module
/// docs); `snapshot` is what the work tree held when recut read it.
pub fn check(root: &Path, snapshot: &Blobs, changes: &[Change]) -> Result<()> {
    for change in changes {
        let below_a_new_folder = check_folders_on_the_way(root, snapshot, &change.path)?;
        let on_disk = root.join(&change.path);
        match &change.old {
            Some(old) => check_unchanged(&on_disk, &change.path, old)?,
            None if below_a_new_folder => {}
            None => check_free(&on_disk, &change.path, snapshot)?,
        }
    }
    Ok(())
}

/// Every folder above `path` is a real folder, missing, or a blob of the
/// snapshot that a change removes (the new HEAD has a folder there). True
/// in the last two cases: the folder will be new, so `path` will be free.
fn check_folders_on_the_way(root: &Path, snapshot: &Blobs, path: &Path) -> Result<bool> {
    let mut above = PathBuf::new();
    let parents: Vec<_> = path
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .collect();
    for part in parents {
        above.push(part);
        let meta = match fs::symlink_metadata(root.join(&above)) {
            Ok(meta) => meta,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(true),
            Err(error) => return Err(inspect_error(&above, error)),
        };
        if meta.is_dir() {
            continue;
        }
        if snapshot.contains_key(&above) {
            return Ok(true);
        }
        let what = if meta.file_type().is_symlink() {
            "a symlink that is not part of the learner's world (ignored or left out); recut \
             never writes through a symlink"
        } else {
            "a file git ignores; recut never overwrites an ignored file"
        };
        return Err(refusal(format!(
            "the new HEAD has `{}`, but `{}` in the work tree is {what}",
            path.display(),
            above.display()
        )));
    }
    Ok(false)
}

/// The file at `on_disk` is still the blob `old` the snapshot read.
fn check_unchanged(on_disk: &Path, path: &Path, old: &Blob) -> Result<()> {
    let now = match blob_on_disk(on_disk) {
        Ok(now) => now,
        Err(error) if error.kind() == ErrorKind::NotFound => None,
        Err(error) => return Err(inspect_error(path, error)),
    };
    if now.is_some_and(|now| same(&now, old)) {
        return Ok(());
    }
    Err(refusal(format!(
        "`{}` changed in the work tree while recut ran; run recut again",
        path.display()
    )))
}

/// Nothing is at `on_disk`, or a folder holding only blobs of the snapshot
/// (the new HEAD has a file where the work tree has that folder).
fn check_free(on_disk: &Path, path: &Path, snapshot: &Blobs) -> Result<()> {
    let meta = match fs::symlink_metadata(on_disk) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(inspect_error(path, error)),
    };
    if !meta.is_dir() {
        return Err(refusal(format!(
            "the new HEAD has `{}`, and the work tree holds a file there that git ignores \
             (or that appeared while recut ran); recut never overwrites it silently: move it \
             away first",
            path.display()
        )));
    }
    for entry in walkdir::WalkDir::new(on_disk).min_depth(1) {
        let entry = entry.map_err(|error| {
            Error::bad_input(format!("cannot read {}: {error}", on_disk.display()))
        })?;
        let inside = path.join(entry.path().strip_prefix(on_disk).unwrap_or(entry.path()));
        if !entry.file_type().is_dir() && !snapshot.contains_key(&inside) {
            return Err(refusal(format!(
                "the new HEAD has the file `{}` where the work tree has a folder, and that \
                 folder holds `{}`, which is not part of the learner's world (ignored or \
                 left out); recut never removes it silently: move it away first",
                path.display(),
                inside.display()
            )));
        }
    }
    Ok(())
}

/// The blob a file or symlink on disk would be, `None` for anything else.
fn blob_on_disk(on_disk: &Path) -> std::io::Result<Option<Blob>> {
    let meta = fs::symlink_metadata(on_disk)?;
    let (content, mode) = if meta.file_type().is_symlink() {
        let target = fs::read_link(on_disk)?;
        (target.as_os_str().as_bytes().to_vec(), tree::MODE_SYMLINK)
    } else if meta.is_file() {
        let content = read_no_follow(on_disk)?;
        (content, tree::file_mode(meta.mode()))
    } else {
        return Ok(None);
    };
    let oid = Oid::hash_object(ObjectType::Blob, &content).map_err(std::io::Error::other)?;
    Ok(Some(Blob { oid, mode }))
}

fn read_no_follow(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let mut content = Vec::new();
    file.read_to_end(&mut content)?;
    Ok(content)
}

fn inspect_error(path: &Path, error: std::io::Error) -> Error {
    error::io(format!("cannot inspect `{}`", path.display()))(error)
}

fn refusal(why: String) -> Error {
    Error::bad_input(format!(
        "{why}; nothing was changed: the branch, the index and the work tree are all as they were"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown_path(path: &Path) -> String {
        super::super::text::shown(path.as_os_str().as_bytes())
    }
    use std::os::unix::fs::symlink;

    fn blob(content: &str, mode: i32) -> Blob {
        Blob {
            oid: Oid::hash_object(ObjectType::Blob, content.as_bytes()).unwrap(),
            mode,
        }
    }

    fn blobs(entries: &[(&str, &str, i32)]) -> Blobs {
        entries
            .iter()
            .map(|(path, content, mode)| (PathBuf::from(path), blob(content, *mode)))
            .collect()
    }

    #[test]
    fn changes_are_the_blobs_that_differ() {
        let old = blobs(&[
            ("a", "same", tree::MODE_FILE),
            ("b", "old", tree::MODE_FILE),
            ("c", "gone", tree::MODE_FILE),
            ("d", "#!", tree::MODE_FILE),
            ("g", "legacy", tree::MODE_FILE),
        ]);
        let new = blobs(&[
            ("a", "same", tree::MODE_FILE),
            ("b", "new", tree::MODE_FILE),
            ("d", "#!", tree::MODE_EXECUTABLE),
            ("e", "added", tree::MODE_SYMLINK),
            ("g", "legacy", tree::MODE_GROUP_WRITABLE),
        ]);
        let changed: Vec<_> = between(&old, &new)
            .into_iter()
            .map(|change| {
                (
                    shown_path(&change.path),
                    change.old.is_some(),
                    change.new.is_some(),
                )
            })
            .collect();
        assert_eq!(
            changed,
            [
                ("b".to_string(), true, true),
                ("c".to_string(), true, false),
                ("d".to_string(), true, true),
                ("e".to_string(), false, true),
            ]
        );
    }

    fn work_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
        dir
    }

    fn add(path: &str, content: &str) -> Change {
        Change {
            path: PathBuf::from(path),
            old: None,
            new: Some(blob(content, tree::MODE_FILE)),
        }
    }

    #[test]
    fn a_symlink_on_the_way_is_never_written_through() {
        let dir = work_tree(&[("course/src/lib.rs", "lib")]);
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), dir.path().join("course/gen")).unwrap();
        let snapshot = blobs(&[("course/src/lib.rs", "lib", tree::MODE_FILE)]);

        let error = check(dir.path(), &snapshot, &[add("course/gen/new.rs", "x")])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`course/gen` in the work tree is a symlink"),
            "{error}"
        );

        // A symlink the snapshot holds is replaced by the new folder instead.
        let snapshot = blobs(&[
            ("course/src/lib.rs", "lib", tree::MODE_FILE),
            (
                "course/gen",
                &outside.path().to_string_lossy(),
                tree::MODE_SYMLINK,
            ),
        ]);
        check(dir.path(), &snapshot, &[add("course/gen/new.rs", "x")]).unwrap();
    }

    #[test]
    fn an_ignored_file_in_the_way_is_refused() {
        let dir = work_tree(&[
            ("course/src/gen.rs", "generated"),
            ("course/x/keep.log", ""),
        ]);
        let snapshot = Blobs::new();
        let error = check(dir.path(), &snapshot, &[add("course/src/gen.rs", "new")])
            .unwrap_err()
            .to_string();
        assert!(error.contains("that git ignores"), "{error}");
        assert!(error.contains("all as they were"), "{error}");
        let error = check(dir.path(), &snapshot, &[add("course/x", "file")])
            .unwrap_err()
            .to_string();
        assert!(error.contains("`course/x/keep.log`"), "{error}");
    }

    #[test]
    fn a_file_of_the_snapshot_may_become_a_folder() {
        let dir = work_tree(&[("course/notes", "a file now")]);
        let snapshot = blobs(&[("course/notes", "a file now", tree::MODE_FILE)]);
        let changes = [
            Change {
                path: PathBuf::from("course/notes"),
                old: Some(blob("a file now", tree::MODE_FILE)),
                new: None,
            },
            add("course/notes/deep/one.md", "x"),
        ];
        check(dir.path(), &snapshot, &changes).unwrap();
    }

    #[test]
    fn a_file_edited_since_the_snapshot_is_refused() {
        let dir = work_tree(&[("a.rs", "edited")]);
        let change = Change {
            path: PathBuf::from("a.rs"),
            old: Some(blob("read", tree::MODE_FILE)),
            new: None,
        };
        let error = check(dir.path(), &Blobs::new(), std::slice::from_ref(&change))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("changed in the work tree while recut ran"),
            "{error}"
        );
        fs::write(dir.path().join("a.rs"), "read").unwrap();
        check(dir.path(), &Blobs::new(), &[change]).unwrap();
    }
}
