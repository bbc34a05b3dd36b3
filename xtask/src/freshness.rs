//! Keeping cargo honest about a lab's sources, through cargo's supported
//! interface only.
//!
//! Cargo decides that a local package is unchanged from file times. A lab
//! file replaced by an older copy (`cp -p`, a restored backup, an editor
//! that keeps times) keeps its old time, so cargo would reuse the test
//! binary built from what was there before — by `check` or by a `cargo
//! test` the learner ran in the lab: a false green. So `check` keeps one
//! record in the lab's target folder ([`RECORD`]): a hash of every lab file
//! (path, kind, content; `target/` left out) as its last build saw them, and
//! the size, time and inode of each local artifact that build left (the
//! files cargo's JSON `compiler-artifact` messages name).
//!
//! 1. [`prepare`]: when the lab's files or those artifacts are not what the
//!    record says (an edit, a build of the learner's, an older copy
//!    restored, no record), `cargo clean -p` for the lab's own packages
//!    (those whose `Cargo.toml` is in the lab), so cargo rebuilds them from
//!    what the lab holds now; registry dependencies are left alone. The
//!    record is removed before anything runs, so an interrupted check
//!    leaves none.
//! 2. [`Builds::record`]: after the runs, the record is written anew, if the
//!    lab's files did not change while they ran, naming the local artifacts
//!    the runs built (`"fresh": false`) and those the old record vouched for.
//!
//! The cost: an unchanged lab checks about as fast as a plain `cargo test`
//! (cargo has nothing to rebuild); after an edit cargo rebuilds the crate,
//! as it would anyway, plus one `cargo clean -p` (see `xtask/BENCHMARKS.md`).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use git2::{ObjectType, Oid};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::libtest::Artifact;
use crate::runner::Invocation;
use crate::safe_fs;
use crate::watch;

/// The record's name in the lab's target folder.
pub const RECORD: &str = "xtask-check.json";

/// What the last check's build saw and left.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Record {
    /// [`lab_hash`] of the lab when it was built.
    lab: String,
    /// Each local artifact's path and [`Stamp`].
    artifacts: BTreeMap<String, Stamp>,
}

/// Who a file is, as far as a later build would change it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    inode: u64,
}

impl Stamp {
    fn of(path: &str) -> Option<Stamp> {
        let meta = fs::symlink_metadata(path).ok()?;
        Some(Stamp {
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            inode: meta.ino(),
        })
    }
}

/// Makes the next run in `target` build the lab's own packages from what
/// `lab` holds now, unless the record shows cargo's build of them is
/// already that (see the module doc). Returns what the runs may reuse.
pub fn prepare(lab: &Path, target: &Path, timeout: Duration) -> Result<Builds> {
    let lab_before = lab_hash(lab)?;
    let recorded = read_record(target);
    remove_record(target)?;
    let vouched = recorded.filter(|record| {
        record.lab == lab_before.to_string()
            && record
                .artifacts
                .iter()
                .all(|(path, stamp)| Stamp::of(path) == Some(*stamp))
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

/// One hash of every lab file: its path, its kind (a symlink's target, an
/// executable bit) and its content, `target/` left out.
fn lab_hash(lab: &Path) -> Result<Oid> {
    let mut files: Vec<(String, Oid)> = Vec::new();
    for entry in watch::lab_files(lab) {
        let path = entry.path();
        let shown = path.strip_prefix(lab).unwrap_or(path).display().to_string();
        let unreadable = |error: std::io::Error| {
            crate::error::io(say::cannot_read(&path.display().to_string()))(error)
        };
        let (kind, content) = if entry.file_type().is_symlink() {
            let target = fs::read_link(path).map_err(unreadable)?;
            ("link", target.into_os_string().into_encoded_bytes())
        } else if entry.file_type().is_file() {
            // Without following a symlink put there meanwhile, and without
            // waiting on a FIFO.
            let content = safe_fs::read_inside(lab, path.strip_prefix(lab).unwrap_or(path))
                .map_err(|refusal| Error::bad_input(say::refusal(&refusal)))?
                .unwrap_or_default();
            let executable = entry
                .metadata()
                .is_ok_and(|meta| meta.permissions().mode() & 0o111 != 0);
            (if executable { "exec" } else { "file" }, content)
        } else {
            ("other", Vec::new())
        };
        let blob = Oid::hash_object(ObjectType::Blob, &content)
            .map_err(crate::error::git("cannot hash a lab file"))?;
        files.push((format!("{kind} {shown}"), blob));
    }
    files.sort();
    let listing: String = files
        .iter()
        .map(|(name, blob)| format!("{blob} {name}\n"))
        .collect();
    Oid::hash_object(ObjectType::Blob, listing.as_bytes())
        .map_err(crate::error::git("cannot hash the lab"))
}

fn read_record(target: &Path) -> Option<Record> {
    let text = fs::read(target.join(RECORD)).ok()?;
    serde_json::from_slice(&text).ok()
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
    lab_before: Oid,
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
            lab: self.lab_before.to_string(),
            artifacts: self
                .vouched
                .into_iter()
                .chain(built)
                .filter_map(|path| Stamp::of(&path).map(|stamp| (path, stamp)))
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
