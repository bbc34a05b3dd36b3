//! Keeping cargo honest about a lab's sources (README, "Freshness"): cargo
//! trusts file times, so a lab file replaced by an older copy (`cp -p`)
//! would let it reuse a test binary built from what was there before. A
//! record in the lab's target folder ([`RECORD`]) holds a hash of the lab's
//! files as the last check's build saw them and a [`Stamp`] of each local
//! artifact it left; unless both still match, [`prepare`] runs `cargo clean
//! -p` for the lab's own packages. The record is removed before the runs
//! and written anew after them ([`Builds::record`]).

use std::collections::BTreeMap;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::libtest::Artifact;
use crate::runner::Invocation;
use crate::safe_fs;
use crate::watch;

/// The record's name in the lab's target folder.
const RECORD: &str = "xtask-check.json";

/// What the last check's build saw and left.
#[derive(Serialize, Deserialize)]
struct Record {
    /// [`lab_hash`] of the lab when it was built.
    lab: u64,
    /// Each local artifact's path and [`Stamp`].
    artifacts: BTreeMap<String, Stamp>,
}

/// Who a file is, as far as a later build would change it: its size,
/// modification time (seconds, nanoseconds) and inode.
type Stamp = (u64, i64, i64, u64);

fn stamp(path: &str) -> Option<Stamp> {
    let meta = fs::symlink_metadata(path).ok()?;
    Some((meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()))
}

/// Makes the next run in `target` build the lab's own packages from what
/// `lab` holds now, unless the record shows cargo's build of them is
/// already that (see the module doc).
pub fn prepare(lab: &Path, target: &Path, timeout: Duration) -> Result<Builds> {
    let lab_before = lab_hash(lab)?;
    let recorded = fs::read(target.join(RECORD)).ok();
    let recorded: Option<Record> = recorded.and_then(|text| serde_json::from_slice(&text).ok());
    remove_record(target)?;
    let vouched = recorded.filter(|record| {
        record.lab == lab_before
            && record
                .artifacts
                .iter()
                .all(|(path, recorded)| stamp(path) == Some(*recorded))
    });
    let vouched = match vouched {
        Some(record) => record.artifacts.into_keys().collect(),
        None => {
            let packages = local_packages(lab);
            if !packages.is_empty() {
                let mut command = vec!["cargo".to_string(), "clean".to_string()];
                for package in packages {
                    command.extend(["-p".to_string(), package]);
                }
                Invocation {
                    command: &command,
                    extra: &[],
                    dir: lab,
                    target_dir: target,
                    timeout,
                }
                .run()?;
            }
            Vec::new()
        }
    };
    Ok(Builds {
        vouched,
        lab_before,
    })
}

/// One hash of every lab file: its path, its mode (file type and
/// permissions) and its content (a symlink's target), `target/` left out.
fn lab_hash(lab: &Path) -> Result<u64> {
    let mut files = BTreeMap::new();
    for entry in watch::lab_files(lab) {
        let relative = entry.path().strip_prefix(lab).unwrap_or(entry.path());
        let content = if entry.file_type().is_symlink() {
            let shown = say::cannot_read(&entry.path().display().to_string());
            let target = fs::read_link(entry.path()).map_err(crate::error::io(shown))?;
            target.into_os_string().into_encoded_bytes()
        } else if entry.file_type().is_file() {
            // Without following a symlink put there meanwhile, and without
            // waiting on a FIFO.
            safe_fs::read_inside(lab, relative)
                .map_err(|refusal| Error::bad_input(say::refusal(&refusal)))?
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let mode = entry.metadata().map_or(0, |meta| meta.mode());
        files.insert(relative.to_path_buf(), (mode, hash(&content)));
    }
    Ok(hash(&files))
}

fn hash(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

fn remove_record(target: &Path) -> Result<()> {
    match fs::remove_file(target.join(RECORD)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(crate::error::io(
            say::cannot_write(&target.join(RECORD).display().to_string()),
        )(error)),
        _ => Ok(()),
    }
}

/// The names of the packages whose manifests are in the lab (`[package]`'s
/// `name` of every `Cargo.toml` outside `target/`): the workspace's members
/// and local path dependencies inside the lab.
fn local_packages(lab: &Path) -> Vec<String> {
    let manifests = watch::lab_files(lab)
        .filter(|entry| entry.file_type().is_file() && entry.file_name() == "Cargo.toml");
    manifests
        .filter_map(|entry| fs::read_to_string(entry.path()).ok())
        .filter_map(|text| package_name(&text))
        .collect()
}

/// `name` in the `[package]` table of a `Cargo.toml`.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "name"
        {
            return Some(value.trim().trim_matches(['"', '\'']).to_string());
        }
    }
    None
}

/// The local artifacts the record vouched for, and the lab as the runs
/// found it.
pub struct Builds {
    vouched: Vec<String>,
    lab_before: u64,
}

impl Builds {
    /// Writes the record of this check's build in `target` (`artifacts`:
    /// the runs'), unless a run timed out or the lab changed while the runs
    /// read it.
    pub fn record<'a>(
        self,
        lab: &Path,
        target: &Path,
        artifacts: impl Iterator<Item = &'a Artifact>,
        timed_out: bool,
    ) -> Result<()> {
        if timed_out || lab_hash(lab)? != self.lab_before {
            return Ok(());
        }
        let built = artifacts
            .filter(|artifact| artifact.is_local() && !artifact.fresh)
            .flat_map(|artifact| artifact.filenames.iter().cloned());
        let record = Record {
            lab: self.lab_before,
            artifacts: self
                .vouched
                .into_iter()
                .chain(built)
                .filter_map(|path| Some((path.clone(), stamp(&path)?)))
                .collect(),
        };
        let text = serde_json::to_string(&record).expect("a record serializes");
        let shown = target.join(RECORD).display().to_string();
        remove_record(target)?;
        fs::create_dir_all(target)
            .and_then(|()| fs::write(target.join(RECORD), text))
            .map_err(crate::error::io(say::cannot_write(&shown)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_lab_hash_sees_content_and_kind_not_times() {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path();
        fs::create_dir_all(lab.join("course/src")).unwrap();
        fs::create_dir_all(lab.join("target")).unwrap();
        fs::write(lab.join("course/src/lib.rs"), "a").unwrap();
        let first = lab_hash(lab).unwrap();
        fs::write(lab.join("target/noise"), "build output").unwrap();
        assert_eq!(lab_hash(lab).unwrap(), first, "target/ is left out");
        fs::write(lab.join("course/src/lib.rs"), "b").unwrap();
        let second = lab_hash(lab).unwrap();
        assert_ne!(second, first);
        fs::File::options()
            .write(true)
            .open(lab.join("course/src/lib.rs"))
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH)
            .unwrap();
        assert_eq!(lab_hash(lab).unwrap(), second, "a time is no content");
        fs::set_permissions(
            lab.join("course/src/lib.rs"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_ne!(lab_hash(lab).unwrap(), second, "an executable bit is");
    }
}
