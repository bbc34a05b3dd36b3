//! Changing the work tree so that every step can be undone.
//!
//! New files and symlinks are first written into a staging folder inside
//! the git dir ([`Staging`], [`stage`]): a full disk or an unwritable git
//! dir fails there, before the work tree shows anything. [`swap`] then only
//! renames: each old file or symlink is moved into the staging folder, each
//! staged one moved into place, folders are made or removed as the new
//! tree needs; every step goes into a [`Journal`]. [`rollback`] walks the
//! journal backwards, which needs no disk space. Nothing is ever opened
//! through a path inside the work tree except by rename, unlink and mkdir
//! of the entry itself, so a symlink is moved, never followed.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use git2::Repository;

use super::changes::Change;
use crate::error::{self, Error, Result};
use crate::signals;
use crate::tree;

/// The name of a staging folder, before the process id.
const STAGING_PREFIX: &str = "xtask-recut-";

/// A private folder in the git dir for the new files and the old ones,
/// removed when dropped unless [`Staging::keep`] was called.
pub struct Staging {
    dir: PathBuf,
    keep: bool,
}

impl Staging {
    /// Creates `<git dir>/xtask-recut-<pid>/`. The git dir must be on the
    /// work tree's file system: files move between them by rename.
    pub fn create(git: &Repository, root: &Path) -> Result<Staging> {
        let dir = git
            .path()
            .join(format!("xtask-recut-{}", std::process::id()));
        let same_device = |a: &Path, b: &Path| -> Result<bool> {
            let device = |path: &Path| {
                fs::metadata(path)
                    .map(|meta| meta.dev())
                    .map_err(error::io(format!("cannot inspect {}", path.display())))
            };
            Ok(device(a)? == device(b)?)
        };
        if !same_device(git.path(), root)? {
            return Err(Error::bad_input(format!(
                "the git dir {} is on another file system than the work tree {}: recut swaps \
                 files in by rename so that it can undo every step, which needs both on one; \
                 nothing was changed: the branch, the index and the work tree are all as they were",
                git.path().display(),
                root.display()
            )));
        }
        let staging = Staging { dir, keep: false };
        for folder in [staging.dir.clone(), staging.new_dir(), staging.old_dir()] {
            fs::DirBuilder::new()
                .mode(0o700)
                .create(&folder)
                .map_err(error::io(format!("cannot create {}", folder.display())))?;
        }
        Ok(staging)
    }

    /// Refuses to start while a staging folder of an earlier re-cut is
    /// left in the git dir: that re-cut was killed (SIGKILL, power cut)
    /// half way through its swap, and the folder holds the only copy of the
    /// work-tree files it had moved away. Call it holding the index lock,
    /// so no other re-cut is running.
    pub fn refuse_leftovers(git: &Repository) -> Result<()> {
        let entries = fs::read_dir(git.path())
            .map_err(error::io(format!("cannot read {}", git.path().display())))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.as_bytes().starts_with(STAGING_PREFIX.as_bytes()) {
                return Err(Error::bad_input(leftover_message(&entry.path())));
            }
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Leaves the folder in place: it holds the only copy of old files.
    pub fn keep(&mut self) {
        self.keep = true;
    }

    fn new_dir(&self) -> PathBuf {
        self.dir.join("new")
    }

    fn old_dir(&self) -> PathBuf {
        self.dir.join("old")
    }

    /// Where change `n`'s new content is staged.
    fn new_path(&self, n: usize) -> PathBuf {
        self.new_dir().join(n.to_string())
    }

    /// Where change `n`'s old file is kept until the re-cut is complete.
    fn old_path(&self, n: usize) -> PathBuf {
        self.old_dir().join(n.to_string())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// What is in the way at `path`, a name of recut's staging folders, and
/// what to do. Only a folder holding an `old` folder is a killed re-cut's.
fn leftover_message(path: &Path) -> String {
    let shown = path.display();
    let meta = fs::symlink_metadata(path).ok();
    let is_dir = |path: &Path| fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
    let what = match meta {
        Some(meta) if meta.is_symlink() => "is a symlink, not a folder a re-cut made",
        Some(meta) if !meta.is_dir() => "is not a folder: no re-cut made it",
        _ if !is_dir(&path.join("old")) => "is a folder without the re-cut's files",
        _ => {
            return format!(
                "{shown} is left from a re-cut that was killed half way: its `old` folder holds \
                 work-tree files that re-cut had moved away, numbered in path order, and \
                 `new` the files it was about to write. Bring the learner's files back \
                 (e.g. `git status`, then copy what is missing from `old`), remove the \
                 folder, and run recut again; nothing was changed"
            );
        }
    };
    format!(
        "{shown} {what}, but recut keeps its staging folders under that name, so it does not \
         start: check what it is, remove it (`rm -r` on a folder; a symlink is removed with \
         `rm {shown}`, which leaves what it points to alone) and run recut again; nothing was \
         changed"
    )
}

/// Writes the new content of every change into the staging folder.
pub fn stage(git: &Repository, staging: &Staging, changes: &[Change]) -> Result<()> {
    for (n, change) in changes.iter().enumerate() {
        let Some(new) = change.new else { continue };
        signals::check()?;
        let shown = change.path.display();
        let blob = git
            .find_blob(new.oid)
            .map_err(error::git(format!("cannot read `{shown}`")))?;
        let path = staging.new_path(n);
        let written = if new.mode == tree::MODE_SYMLINK {
            symlink(std::ffi::OsStr::from_bytes(blob.content()), &path)
        } else {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .mode(tree::permissions_for(new.mode))
                .open(&path)
                .and_then(|mut file| file.write_all(blob.content()))
        };
        written.map_err(error::io(format!(
            "cannot stage the new `{shown}` in {}",
            staging.dir().display()
        )))?;
    }
    Ok(())
}

/// One step of [`swap`], as [`rollback`] undoes it.
#[derive(Debug)]
enum Step {
    /// The old file or symlink at `path` was moved to `backup`.
    MovedAway { path: PathBuf, backup: PathBuf },
    /// The empty folder `path` (with permission bits `mode`) was removed.
    RemovedDir { path: PathBuf, mode: u32 },
    /// The folder `path` was made.
    MadeDir { path: PathBuf },
    /// A staged file or symlink was moved to `path`.
    Placed { path: PathBuf },
}

/// The steps [`swap`] took, in order.
#[derive(Debug, Default)]
pub struct Journal {
    steps: Vec<Step>,
}

/// Moves every change into the work tree below `root`: the old blobs out
/// first, then the new ones in. `before_step` runs before each step (the
/// caller's signal check); its error, like any other, stops the swap with
/// the journal holding every step taken.
pub fn swap(
    root: &Path,
    staging: &Staging,
    changes: &[Change],
    journal: &mut Journal,
    before_step: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    for (n, change) in changes.iter().enumerate() {
        if change.old.is_none() {
            continue;
        }
        before_step()?;
        let path = root.join(&change.path);
        let backup = staging.old_path(n);
        rename(&path, &backup)?;
        journal.steps.push(Step::MovedAway { path, backup });
    }
    for (n, change) in changes.iter().enumerate() {
        if change.new.is_none() {
            continue;
        }
        before_step()?;
        let path = root.join(&change.path);
        make_parents(root, &change.path, journal)?;
        remove_empty_folder(&path, journal)?;
        rename(&staging.new_path(n), &path)?;
        journal.steps.push(Step::Placed { path });
    }
    Ok(())
}

/// Makes the missing folders above repository path `path`.
fn make_parents(root: &Path, path: &Path, journal: &mut Journal) -> Result<()> {
    let mut folder = root.to_path_buf();
    let parents: Vec<_> = path
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .collect();
    for part in parents {
        folder.push(part);
        match fs::symlink_metadata(&folder) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => {
                return Err(Error::bad_input(format!(
                    "{} is no longer a folder",
                    folder.display()
                )));
            }
            Err(error) if error.kind() == ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error::io(format!("cannot inspect {}", folder.display()))(
                    error,
                ));
            }
        }
        fs::create_dir(&folder)
            .map_err(error::io(format!("cannot create {}", folder.display())))?;
        journal.steps.push(Step::MadeDir {
            path: folder.clone(),
        });
    }
    Ok(())
}

/// Removes the folder at `path`, deepest first, when a file must take its
/// place; its blobs were moved away already, so only empty folders remain.
fn remove_empty_folder(path: &Path, journal: &mut Journal) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {}
        _ => return Ok(()),
    }
    for entry in walkdir::WalkDir::new(path).contents_first(true) {
        let entry = entry.map_err(|error| {
            Error::bad_input(format!("cannot read {}: {error}", path.display()))
        })?;
        let folder = entry.path().to_path_buf();
        let mode = entry
            .metadata()
            .map(|meta| meta.permissions().mode())
            .unwrap_or(0o755);
        fs::remove_dir(&folder).map_err(error::io(format!(
            "cannot remove the folder {}",
            folder.display()
        )))?;
        journal.steps.push(Step::RemovedDir { path: folder, mode });
    }
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(error::io(format!(
        "cannot move {} to {}",
        from.display(),
        to.display()
    )))
}

/// Undoes every step of `journal`, last first. Returns what could not be
/// undone (empty when the work tree is as it was).
pub fn rollback(journal: Journal) -> Vec<String> {
    let mut failures = Vec::new();
    for step in journal.steps.into_iter().rev() {
        let undone = match &step {
            Step::Placed { path } => fs::remove_file(path),
            Step::MadeDir { path } => fs::remove_dir(path),
            Step::RemovedDir { path, mode } => fs::create_dir(path)
                .and_then(|()| fs::set_permissions(path, fs::Permissions::from_mode(*mode))),
            Step::MovedAway { path, backup } => fs::rename(backup, path),
        };
        if let Err(error) = undone {
            failures.push(format!("{step:?}: {error}"));
        }
    }
    failures
}

/// After a complete re-cut: removes the folders that removed files left
/// empty, as git does. A folder that still holds something stays.
pub fn tidy(root: &Path, changes: &[Change]) {
    for change in changes.iter().filter(|change| change.new.is_none()) {
        let mut folder = change.path.parent();
        while let Some(path) = folder.filter(|path| !path.as_os_str().is_empty()) {
            if fs::remove_dir(root.join(path)).is_err() {
                break;
            }
            folder = path.parent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Blob;

    struct World {
        dir: tempfile::TempDir,
        git: Repository,
    }

    impl World {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let git = Repository::init(dir.path()).unwrap();
            World { dir, git }
        }

        fn root(&self) -> &Path {
            self.dir.path()
        }

        fn write(&self, path: &str, content: &str) {
            let path = self.root().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }

        fn blob(&self, content: &str, mode: i32) -> Blob {
            Blob {
                oid: self.git.blob(content.as_bytes()).unwrap(),
                mode,
            }
        }

        /// Every file and folder below the root outside `.git`, with its content.
        fn files(&self) -> Vec<(String, Option<Vec<u8>>)> {
            walkdir::WalkDir::new(self.root())
                .min_depth(1)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|entry| entry.file_name() != ".git")
                .map(|entry| {
                    let entry = entry.unwrap();
                    let path = entry.path().strip_prefix(self.root()).unwrap();
                    let content = entry
                        .file_type()
                        .is_file()
                        .then(|| fs::read(entry.path()).unwrap());
                    (path.to_string_lossy().into_owned(), content)
                })
                .collect()
        }
    }

    fn change(path: &str, old: Option<Blob>, new: Option<Blob>) -> Change {
        Change {
            path: PathBuf::from(path),
            old,
            new,
        }
    }

    /// A re-cut touching every kind of step: a file replaced, a file
    /// removed, a file added in a new folder, a folder replaced by a file.
    fn scenario(world: &World) -> Vec<Change> {
        world.write("course/src/lib.rs", "old lib");
        world.write("course/gone.rs", "gone");
        world.write("course/dir/inner.rs", "inner");
        vec![
            change(
                "course/dir",
                None,
                Some(world.blob("now a file", tree::MODE_FILE)),
            ),
            change(
                "course/dir/inner.rs",
                Some(world.blob("inner", tree::MODE_FILE)),
                None,
            ),
            change(
                "course/gone.rs",
                Some(world.blob("gone", tree::MODE_FILE)),
                None,
            ),
            change(
                "course/new/deep/added.rs",
                None,
                Some(world.blob("added", tree::MODE_EXECUTABLE)),
            ),
            change(
                "course/src/lib.rs",
                Some(world.blob("old lib", tree::MODE_FILE)),
                Some(world.blob("new lib", tree::MODE_FILE)),
            ),
        ]
    }

    #[test]
    fn a_complete_swap_leaves_the_new_tree_and_no_staging() {
        let world = World::new();
        let changes = scenario(&world);
        let staging = Staging::create(&world.git, world.root()).unwrap();
        let staging_dir = staging.dir().to_path_buf();
        stage(&world.git, &staging, &changes).unwrap();
        let mut journal = Journal::default();
        swap(world.root(), &staging, &changes, &mut journal, &mut || {
            Ok(())
        })
        .unwrap();
        tidy(world.root(), &changes);
        drop(staging);

        let content = |path: &str| fs::read(world.root().join(path)).unwrap();
        assert_eq!(content("course/dir"), b"now a file");
        assert_eq!(content("course/src/lib.rs"), b"new lib");
        assert_eq!(content("course/new/deep/added.rs"), b"added");
        let mode = fs::metadata(world.root().join("course/new/deep/added.rs"))
            .unwrap()
            .mode();
        assert!(tree::is_executable(mode));
        assert!(!world.root().join("course/gone.rs").exists());
        assert!(!staging_dir.exists());
    }

    #[test]
    fn a_failure_at_any_step_is_undone_completely() {
        // 3 old blobs moved away, 3 new ones placed; at `steps` none fails.
        let steps = 6;
        for fail_at in 0..=steps {
            let world = World::new();
            let changes = scenario(&world);
            let before = world.files();
            let staging = Staging::create(&world.git, world.root()).unwrap();
            stage(&world.git, &staging, &changes).unwrap();
            let mut journal = Journal::default();
            let mut step = 0;
            let result = swap(world.root(), &staging, &changes, &mut journal, &mut || {
                step += 1;
                if step > fail_at {
                    Err(Error::interrupted(libc::SIGTERM))
                } else {
                    Ok(())
                }
            });
            if fail_at < steps {
                assert!(result.is_err(), "step {fail_at}");
            }
            let failures = rollback(journal);
            assert!(failures.is_empty(), "{failures:?}");
            assert_eq!(world.files(), before, "undone after step {fail_at}");
        }
    }

    #[test]
    fn a_symlink_is_moved_never_followed() {
        let world = World::new();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "outside").unwrap();
        symlink(outside.path(), world.root().join("link")).unwrap();
        let target = outside.path().to_string_lossy().into_owned();
        let changes = vec![
            change("link", Some(world.blob(&target, tree::MODE_SYMLINK)), None),
            change(
                "link/secret",
                None,
                Some(world.blob("mine", tree::MODE_FILE)),
            ),
        ];
        let staging = Staging::create(&world.git, world.root()).unwrap();
        stage(&world.git, &staging, &changes).unwrap();
        swap(
            world.root(),
            &staging,
            &changes,
            &mut Journal::default(),
            &mut || Ok(()),
        )
        .unwrap();
        assert_eq!(fs::read(outside.path().join("secret")).unwrap(), b"outside");
        assert_eq!(fs::read(world.root().join("link/secret")).unwrap(), b"mine");
        assert!(
            fs::symlink_metadata(world.root().join("link"))
                .unwrap()
                .is_dir()
        );
    }

    #[test]
    fn staging_fails_before_the_work_tree_changes() {
        let world = World::new();
        let changes = scenario(&world);
        let before = world.files();
        let staging = Staging::create(&world.git, world.root()).unwrap();
        // Something already where the first new file would be staged.
        fs::write(staging.new_path(0), "in the way").unwrap();
        assert!(stage(&world.git, &staging, &changes).is_err());
        assert_eq!(world.files(), before);
    }
}
