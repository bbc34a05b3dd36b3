//! Keeping cargo honest about a lab's sources (README, "Freshness"): cargo
//! trusts file times, so a file replaced by an older copy (`cp -p`) could
//! reuse a stale test binary. [`RECORD`] holds each lab file's mode and hash
//! and a [`Stamp`] of each artifact of check's last build; while those match,
//! [`prepare`] makes the changed files newer, else it runs `cargo clean -p`.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use git2::{ObjectType, Oid};
use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, UTIME_NOW, UTIME_OMIT};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::libtest::Artifact;
use crate::runner::Invocation;
use crate::safe_fs;
use crate::watch;

const RECORD: &str = "xtask-check.json";

/// What the last check's build saw and left.
#[derive(Serialize, Deserialize)]
struct Record {
    /// [`lab_files`] of the lab when it was built.
    files: Files,
    /// When the record was written (ns since the epoch), after its builds.
    written: u64,
    /// Each local artifact's path and [`Stamp`].
    artifacts: BTreeMap<String, Stamp>,
    /// True when every run compiled.
    #[serde(default)]
    compiled: bool,
    /// How many tests the lab's whole suite passed, when it passed.
    #[serde(default)]
    suite_passed: Option<usize>,
}

/// Each lab file's path (lossy), mode and blob id (a symlink's: its
/// target), `target/` left out.
type Files = BTreeMap<String, (u32, String)>;

/// A file's size, modification time (s, ns) and inode.
type Stamp = (u64, i64, i64, u64);

fn stamp(path: &str) -> Option<Stamp> {
    let meta = fs::symlink_metadata(path).ok()?;
    Some((meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()))
}

/// Makes the next run in `target` build from what `lab` holds now (see the
/// module doc).
pub fn prepare(lab: &Path, target: &Path, timeout: Duration) -> Result<Builds> {
    let files = lab_files(lab)?;
    let recorded = fs::read(target.join(RECORD)).ok();
    let recorded: Option<Record> = recorded.and_then(|text| serde_json::from_slice(&text).ok());
    remove_record(target)?;
    let ours = recorded.filter(|record| {
        (record.artifacts.iter()).all(|(path, recorded)| stamp(path) == Some(*recorded))
    });
    let (vouched, edited_after_compiling, suite_passed) = match ours {
        Some(record) if make_newer(lab, &files, &record) => {
            let edited = record.files != files;
            let suite_passed = record.suite_passed.filter(|_| !edited);
            let vouched = record.artifacts.into_keys().collect();
            (vouched, record.compiled && edited, suite_passed)
        }
        _ => {
            clean(lab, target, timeout)?;
            (Vec::new(), false, None)
        }
    };
    Ok(Builds {
        vouched,
        files_before: files,
        edited_after_compiling,
        suite_passed,
    })
}

/// Makes each changed regular file newer than the record; false when that
/// cannot work (a changed symlink, a time not set): clean the build.
fn make_newer(lab: &Path, files: &Files, record: &Record) -> bool {
    let written = UNIX_EPOCH + Duration::from_nanos(record.written);
    let now = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        },
    };
    let changed = files
        .iter()
        .filter(|(path, file)| record.files.get(*path) != Some(file));
    changed.into_iter().all(|(path, _)| {
        let path = lab.join(path);
        let Ok(meta) = fs::symlink_metadata(&path) else {
            return false;
        };
        meta.is_file()
            && (meta.modified().is_ok_and(|time| time > written)
                || rustix::fs::utimensat(CWD, &path, &now, AtFlags::SYMLINK_NOFOLLOW).is_ok())
    })
}

/// `cargo clean -p` for the lab's own packages.
fn clean(lab: &Path, target: &Path, timeout: Duration) -> Result<()> {
    let packages = local_packages(lab);
    if packages.is_empty() {
        return Ok(());
    }
    let mut command = vec!["cargo".to_string(), "clean".to_string()];
    for package in packages {
        command.extend(["-p".to_string(), package]);
    }
    Invocation {
        command: &command,
        dir: lab,
        target_dir: target,
        timeout,
    }
    .run()?;
    Ok(())
}

fn lab_files(lab: &Path) -> Result<Files> {
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
        let blob = Oid::hash_object(ObjectType::Blob, &content)
            .map_err(crate::error::git("cannot hash a lab file"))?;
        let relative = relative.to_string_lossy().into_owned();
        files.insert(relative, (mode, blob.to_string()));
    }
    Ok(files)
}

fn remove_record(target: &Path) -> Result<()> {
    match fs::remove_file(target.join(RECORD)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(crate::error::io(
            say::cannot_write(&target.join(RECORD).display().to_string()),
        )(error)),
        _ => Ok(()),
    }
}

/// The `[package]` names of every `Cargo.toml` in the lab.
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

/// The artifacts the record vouched for, and the lab as the runs found it.
pub struct Builds {
    vouched: Vec<String>,
    files_before: Files,
    /// True when the lab changed since a check that compiled every run.
    pub edited_after_compiling: bool,
    /// The suite's passed tests when it passed in the vouched build and
    /// the lab is unchanged since.
    pub suite_passed: Option<usize>,
}

impl Builds {
    /// Writes the record of this check's build, unless a run timed out or
    /// the lab changed while the runs read it.
    pub fn record<'a>(
        self,
        lab: &Path,
        target: &Path,
        artifacts: impl Iterator<Item = &'a Artifact>,
        timed_out: bool,
        compiled: bool,
        suite_passed: Option<usize>,
    ) -> Result<()> {
        if timed_out || lab_files(lab)? != self.files_before {
            return Ok(());
        }
        let built = artifacts
            .filter(|artifact| artifact.is_local() && !artifact.fresh)
            .flat_map(|artifact| artifact.filenames.iter().cloned());
        let written = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let record = Record {
            files: self.files_before,
            written: u64::try_from(written.as_nanos()).unwrap_or(u64::MAX),
            artifacts: self
                .vouched
                .into_iter()
                .chain(built)
                .filter_map(|path| Some((path.clone(), stamp(&path)?)))
                .collect(),
            compiled,
            suite_passed,
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
    fn lab_files_see_content_and_kind_not_times() {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path();
        fs::create_dir_all(lab.join("course/src")).unwrap();
        fs::create_dir_all(lab.join("target")).unwrap();
        fs::write(lab.join("course/src/lib.rs"), "a").unwrap();
        let first = lab_files(lab).unwrap();
        fs::write(lab.join("target/noise"), "build output").unwrap();
        assert_eq!(lab_files(lab).unwrap(), first, "target/ is left out");
        fs::write(lab.join("course/src/lib.rs"), "b").unwrap();
        let second = lab_files(lab).unwrap();
        assert_ne!(second, first);
        fs::File::options()
            .write(true)
            .open(lab.join("course/src/lib.rs"))
            .unwrap()
            .set_modified(UNIX_EPOCH)
            .unwrap();
        assert_eq!(lab_files(lab).unwrap(), second, "a time is no content");
        fs::set_permissions(
            lab.join("course/src/lib.rs"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_ne!(lab_files(lab).unwrap(), second, "an executable bit is");
    }

    #[test]
    fn only_changed_files_older_than_the_record_are_made_newer() {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path();
        for name in ["same.rs", "old.rs", "new.rs"] {
            fs::write(lab.join(name), "before").unwrap();
        }
        let mut record = Record {
            files: lab_files(lab).unwrap(),
            written: 1_700_000_000 * 1_000_000_000,
            artifacts: BTreeMap::new(),
            compiled: true,
            suite_passed: None,
        };
        let long_ago = UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        let later = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
        for (name, time) in [
            ("same.rs", long_ago),
            ("old.rs", long_ago),
            ("new.rs", later),
        ] {
            if name != "same.rs" {
                fs::write(lab.join(name), "after").unwrap();
            }
            let file = fs::File::options()
                .write(true)
                .open(lab.join(name))
                .unwrap();
            file.set_modified(time).unwrap();
        }
        assert!(make_newer(lab, &lab_files(lab).unwrap(), &record));
        let time = |name: &str| fs::metadata(lab.join(name)).unwrap().modified().unwrap();
        assert_eq!(time("same.rs"), long_ago, "unchanged: left alone");
        assert!(time("old.rs") > later, "changed and older: made newer");
        assert_eq!(
            time("new.rs"),
            later,
            "changed and newer already: left alone"
        );

        std::os::unix::fs::symlink("old.rs", lab.join("link.rs")).unwrap();
        record.files = BTreeMap::new();
        assert!(
            !make_newer(lab, &lab_files(lab).unwrap(), &record),
            "a symlink: clean"
        );
    }
}
