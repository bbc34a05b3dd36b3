//! Noticing edits in a practice folder by polling: no platform file-watcher,
//! so it also works where inotify doesn't (network folders, WSL).

use crate::signals;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use walkdir::WalkDir;

pub const POLL: Duration = Duration::from_millis(300);
/// How long the folder must stay unchanged before a rerun: an editor's
/// save-rename-chmod burst counts once.
pub const QUIET: Duration = Duration::from_millis(250);

/// Every file's size and modification time under a folder but `target/` and `.git`.
pub struct Watcher {
    root: PathBuf,
    seen: BTreeMap<PathBuf, (u64, Option<SystemTime>)>,
}

impl Watcher {
    /// Starts watching `root` from its current state.
    pub fn new(root: &Path) -> Self {
        Watcher {
            root: root.to_path_buf(),
            seen: scan(root),
        }
    }

    /// True when anything changed since the last call (or since `new`).
    fn changed(&mut self) -> bool {
        let now = scan(&self.root);
        let changed = now != self.seen;
        self.seen = now;
        changed
    }

    /// Waits for a change, then `quiet`; false when `deadline` passed, a
    /// signal came or nobody reads stdout.
    pub fn wait(&mut self, poll: Duration, quiet: Duration, deadline: Option<Instant>) -> bool {
        let mut last_change = None;
        loop {
            if signals::received().is_some() {
                return false;
            }
            if self.changed() {
                last_change = Some(Instant::now());
            }
            match last_change {
                Some(at) if at.elapsed() >= quiet => return true,
                Some(_) => thread::sleep(poll.min(quiet)),
                None if deadline.is_some_and(|deadline| Instant::now() >= deadline)
                    || crate::out::stdout_reader_gone() =>
                {
                    return false;
                }
                None => thread::sleep(poll),
            }
        }
    }
}

fn scan(root: &Path) -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
    lab_files(root)
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            Some((entry.into_path(), (meta.len(), meta.modified().ok())))
        })
        .collect()
}

/// Every non-folder entry below `lab` but `target/` and `.git`.
pub fn lab_files(lab: &Path) -> impl Iterator<Item = walkdir::DirEntry> {
    WalkDir::new(lab)
        .min_depth(1)
        .into_iter()
        .filter_entry(move |entry| {
            entry.path().strip_prefix(lab).ok() != Some(Path::new(crate::repo::TARGET_DIR))
                && entry.file_name() != ".git"
        })
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_type().is_dir())
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
