//! Noticing edits in a practice folder by polling: no platform file-watcher,
//! so it also works where inotify doesn't (network folders, WSL).

use crate::signals;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use walkdir::WalkDir;

/// How often the folder is scanned.
pub const POLL: Duration = Duration::from_millis(300);
/// How long the folder must stay unchanged before a rerun: an editor's
/// save-rename-chmod burst counts once.
pub const QUIET: Duration = Duration::from_millis(250);

/// Remembers every file's size and modification time under a folder,
/// leaving out the build output in `target/` and any `.git`.
pub struct Watcher {
    root: PathBuf,
    seen: BTreeMap<PathBuf, (u64, Option<SystemTime>)>,
}

impl Watcher {
    /// Starts watching `root` from its current state.
    pub fn new(root: &Path) -> Self {
        let mut watcher = Watcher {
            root: root.to_path_buf(),
            seen: BTreeMap::new(),
        };
        watcher.seen = watcher.scan();
        watcher
    }

    fn scan(&self) -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
        lab_files(&self.root)
            .filter_map(|entry| {
                let meta = entry.metadata().ok()?;
                Some((entry.into_path(), (meta.len(), meta.modified().ok())))
            })
            .collect()
    }

    /// True when anything changed since the last call (or since `new`).
    pub fn changed(&mut self) -> bool {
        let now = self.scan();
        let changed = now != self.seen;
        self.seen = now;
        changed
    }

    /// Waits for a change, then until the folder has been quiet for `quiet`.
    /// Returns false if `deadline` passes with no change, a signal asked
    /// the process to stop, or nobody reads standard output any more.
    pub fn wait(&mut self, poll: Duration, quiet: Duration, deadline: Option<Instant>) -> bool {
        while !self.changed() {
            let late = deadline.is_some_and(|deadline| Instant::now() >= deadline);
            if late || signals::received().is_some() || crate::out::stdout_reader_gone() {
                return false;
            }
            thread::sleep(poll);
        }
        let mut last_change = Instant::now();
        loop {
            if signals::received().is_some() {
                return false;
            }
            thread::sleep(poll.min(quiet));
            if self.changed() {
                last_change = Instant::now();
            } else if last_change.elapsed() >= quiet {
                return true;
            }
        }
    }
}

/// Every entry below `lab` that is not a folder (files and symlinks, not
/// followed), leaving out the build output in the top-level `target/` and
/// any `.git`: what a learner edits.
pub fn lab_files(lab: &Path) -> impl Iterator<Item = walkdir::DirEntry> {
    WalkDir::new(lab)
        .min_depth(1)
        .into_iter()
        .filter_entry(move |entry| !is_ignored(lab, entry.path()))
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_type().is_dir())
}

fn is_ignored(root: &Path, path: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(root) else {
        return false;
    };
    relative == Path::new(crate::repo::TARGET_DIR)
        || path.file_name().is_some_and(|name| name == ".git")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const TEST_POLL: Duration = Duration::from_millis(20);
    const TEST_QUIET: Duration = Duration::from_millis(60);

    fn soon() -> Option<Instant> {
        Some(Instant::now() + Duration::from_millis(200))
    }

    #[test]
    fn a_burst_of_edits_triggers_exactly_one_rerun() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("src/lib.rs"), "a").unwrap();
        let mut watcher = Watcher::new(dir.path());
        assert!(
            !watcher.wait(TEST_POLL, TEST_QUIET, soon()),
            "nothing changed yet"
        );

        fs::write(dir.path().join("src/lib.rs"), "ab").unwrap();
        fs::write(dir.path().join("src/new.rs"), "c").unwrap();
        assert!(
            watcher.wait(TEST_POLL, TEST_QUIET, soon()),
            "the edit triggers a rerun"
        );
        assert!(!watcher.wait(TEST_POLL, TEST_QUIET, soon()), "and only one");

        fs::remove_file(dir.path().join("src/new.rs")).unwrap();
        assert!(
            watcher.wait(TEST_POLL, TEST_QUIET, soon()),
            "a deletion counts too"
        );
    }

    #[test]
    fn build_output_and_git_do_not_trigger_a_rerun() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("target/debug")).unwrap();
        fs::create_dir_all(dir.path().join(".git")).unwrap();
        let mut watcher = Watcher::new(dir.path());
        fs::write(dir.path().join("target/debug/out"), "x").unwrap();
        fs::write(dir.path().join(".git/index"), "x").unwrap();
        assert!(!watcher.wait(TEST_POLL, TEST_QUIET, soon()));
        fs::create_dir_all(dir.path().join("course/target")).unwrap();
        fs::write(dir.path().join("course/target/kept.rs"), "x").unwrap();
        assert!(
            watcher.wait(TEST_POLL, TEST_QUIET, soon()),
            "only the top-level target/ is build output"
        );
    }
}
