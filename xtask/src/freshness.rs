//! Keeping cargo honest about a lab's sources.
//!
//! Cargo decides that a source file is unchanged by its modification time.
//! A lab file replaced by an older copy (`cp -p`, an unpacked archive, a
//! restored backup) keeps its old time, so cargo would reuse the test binary
//! built from what was there before: a false green. Before each run, a file
//! whose content changed since the previous run but whose time is not newer
//! than that run gets the current time, so cargo sees the change. Files saved
//! normally (newer than the previous run) are never touched.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{self, Result};
use crate::watch;

/// What the previous run saw, kept in the lab's own target folder.
#[derive(Default, Serialize, Deserialize)]
struct Seen {
    /// When the previous run started, in nanoseconds since the epoch.
    started: u128,
    /// Each source file's content hash.
    files: BTreeMap<PathBuf, u64>,
}

const RECORD: &str = "xtask-sources.json";

/// Gives the current time to every file of `lab` (outside `target`) whose
/// content changed since the previous run without a newer time, then records
/// what this run sees.
pub fn refresh(lab: &Path, target: &Path) -> Result<()> {
    let record = target.join(RECORD);
    let previous: Seen = fs::read(&record)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let now = SystemTime::now();
    let mut seen = Seen {
        started: nanos(now),
        files: BTreeMap::new(),
    };
    let sources = watch::lab_files(lab).filter(|entry| entry.file_type().is_file());
    for entry in sources {
        let path = entry.into_path();
        let Ok(relative) = path.strip_prefix(lab).map(Path::to_path_buf) else {
            continue;
        };
        let Ok(content) = fs::read(&path) else {
            continue;
        };
        let hash = hash_of(&content);
        let changed = previous
            .files
            .get(&relative)
            .is_some_and(|&old| old != hash);
        let modified = fs::metadata(&path)
            .and_then(|meta| meta.modified())
            .map_or(0, nanos);
        if changed && modified <= previous.started {
            File::options()
                .write(true)
                .open(&path)
                .and_then(|file| file.set_modified(now))
                .map_err(error::io(format!(
                    "cannot update the time of {}",
                    path.display()
                )))?;
        }
        seen.files.insert(relative, hash);
    }
    let text = serde_json::to_vec(&seen).expect("the record serializes");
    fs::write(&record, text).map_err(error::io(format!("cannot write {}", record.display())))
}

fn hash_of(content: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    content.hash(&mut hasher);
    hasher.finish()
}

fn nanos(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}
