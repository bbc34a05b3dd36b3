//! Keeping cargo honest about a lab's sources, without a record of our own.
//!
//! Cargo decides that a local package is unchanged when none of its source
//! files is newer than the dep-info file its last build left in
//! `target/*/.fingerprint/`. A lab file replaced by an older copy (`cp -p`,
//! a restored backup, an editor that keeps times) keeps its old time, so
//! cargo would reuse the test binary built from what was there before — by
//! `check` or by a `cargo test` the learner ran in the lab: a false green.
//! `check` cannot know what that last build saw (cargo keeps times, not
//! content, and anything may have run in between), so before each check:
//!
//! 1. [`age_fingerprints`] sets the dep-info files of the lab's own
//!    packages (those whose `Cargo.toml` is in the lab) to [`aged`] (one
//!    second after the epoch). Every source with a real time is then newer,
//!    so cargo rebuilds the course crate and its tests and nothing else.
//!    (Aging a registry dependency's dep-info would rebuild it too when it
//!    includes a file its build script generates, as serde does: 20 s.)
//!    A source dated at or before [`aged`] gets the current time instead:
//!    the only learner files touched. Touching every source instead would
//!    be as honest, but an open editor then warns "changed on disk" (or
//!    refuses to save) after every check.
//!
//!    Also ruled out: hashing the sources and comparing with what cargo's
//!    fingerprint saw — stable cargo records times, not content (content
//!    hashes need the unstable `-Zchecksum-freshness`).
//!
//!    Every file opened inside `target/` is opened without following a
//!    symlink at its end, and a linked `.fingerprint` folder is refused; the
//!    folders on the way are checked, then read by path (a race with another
//!    process swapping them is not defended against).
//! 2. [`Builds::reused`] proves it worked from cargo's own JSON messages:
//!    every local artifact of the run must be `"fresh": false`, or built
//!    earlier in the same check (a step's run reuses the focused run's
//!    library). If cargo reused one anyway (a cargo whose fingerprints live
//!    elsewhere, e.g. a `build.build-dir` of the learner's config), `check`
//!    cleans that package and runs again.
//!
//! The cost: each check rebuilds the course crate even when nothing changed.
//! Measured on chapter 03's green lab (2 cores shared, load average ~16):
//! an unchanged lab checks in 1.4–2.0 s instead of 0.15–0.25 s; after an
//! edit cargo rebuilds the crate anyway (1.4 s for `cargo test` alone), so
//! `--watch` costs nothing more. Nothing is stored, so there is no hash to
//! keep stable.
//!
//! A symlink or non-regular file (a FIFO) where a dep-info file should be is
//! refused with exit 2, never waited on.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{self, Error, Result};
use crate::learner_text as say;
use crate::libtest::Report;
use crate::watch;

/// How long after the epoch the time is that dep-info files get ([`aged`]).
const AGED_AFTER_EPOCH: Duration = Duration::from_secs(1);

/// The time dep-info files get: older than any real source file.
pub fn aged() -> SystemTime {
    UNIX_EPOCH + AGED_AFTER_EPOCH
}

/// Makes cargo rebuild every local package of `lab` on its next run in
/// `target` (see the module doc).
pub fn age_fingerprints(lab: &Path, target: &Path) -> Result<()> {
    let now = SystemTime::now();
    for entry in watch::lab_files(lab).filter(|entry| entry.file_type().is_file()) {
        let ancient = entry
            .metadata()
            .ok()
            .and_then(|meta| meta.modified().ok())
            .is_some_and(|time| time <= aged());
        if ancient {
            let path = entry.path();
            let file = open_regular(path)
                .map_err(error::io(say::cannot_touch(&path.display().to_string())))?;
            if let Some(file) = file {
                file.set_modified(now)
                    .map_err(error::io(say::cannot_touch(&path.display().to_string())))?;
            }
        }
    }
    let packages = local_packages(lab);
    for profile in real_folders(target)? {
        // `target/debug/.fingerprint`, and `target/<triple>/debug/.fingerprint`.
        let mut fingerprints = vec![profile.join(".fingerprint")];
        for inner in real_folders(&profile)? {
            fingerprints.push(inner.join(".fingerprint"));
        }
        for folder in fingerprints {
            if fs::symlink_metadata(&folder).is_ok_and(|meta| meta.file_type().is_symlink()) {
                return Err(refused(lab, &folder, say::A_SYMLINK.to_string()));
            }
            for unit in real_folders(&folder)? {
                if is_unit_of(&unit, &packages) {
                    age_dep_info(lab, &unit)?;
                }
            }
        }
    }
    Ok(())
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

/// True when the fingerprint folder `unit` (`<package>-<hash>`) belongs to
/// one of `packages`.
fn is_unit_of(unit: &Path, packages: &[String]) -> bool {
    let name = unit.file_name().unwrap_or_default().to_string_lossy();
    name.rsplit_once('-')
        .is_some_and(|(package, _)| packages.iter().any(|known| known == package))
}

/// Sets every `dep-*` file of one unit's fingerprint folder to [`aged`].
fn age_dep_info(lab: &Path, unit: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(unit) else {
        return Ok(());
    };
    for entry in entries.filter_map(|entry| entry.ok()) {
        if !entry.file_name().to_string_lossy().starts_with("dep-") {
            continue;
        }
        let path = entry.path();
        let refused = |why: String| refused(lab, &path, why);
        match open_regular(&path) {
            Ok(Some(file)) => file
                .set_modified(aged())
                .map_err(error::io(say::cannot_touch(&path.display().to_string())))?,
            Ok(None) => return Err(refused(say::NOT_A_REGULAR_FILE.to_string())),
            Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
                return Err(refused(say::A_SYMLINK.to_string()));
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(refused(error.to_string())),
        }
    }
    Ok(())
}

/// The refusal of `path` in the lab's target folder, saying `why`.
fn refused(lab: &Path, path: &Path, why: String) -> Error {
    let shown = path.strip_prefix(lab).unwrap_or(path);
    Error::bad_input(say::target_file_refused(
        &lab.display().to_string(),
        &shown.display().to_string(),
        &why,
    ))
}

/// Opens `path` for reading without following a symlink at its end and
/// without waiting on a FIFO; `None` when it is not a regular file.
fn open_regular(path: &Path) -> io::Result<Option<File>> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    Ok(file.metadata()?.is_file().then_some(file))
}

/// The folders directly in `folder` that are folders themselves, not
/// symlinks to one (never followed); none when `folder` is missing.
fn real_folders(folder: &Path) -> Result<Vec<std::path::PathBuf>> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(error) if error::is_environment(&error) => {
            return Err(error::io(say::cannot_read(&folder.display().to_string()))(
                error,
            ));
        }
        Err(_) => return Ok(Vec::new()),
    };
    Ok(entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.path())
        .collect())
}

/// What the runs of one check built, to tell a unit this check built from
/// one cargo reused from before.
#[derive(Default)]
pub struct Builds {
    built: HashSet<String>,
}

impl Builds {
    /// Takes in a run's artifacts and returns the local packages (cargo
    /// package ids) whose units cargo reused from a build this check did not
    /// make: their output may not be what the lab holds now.
    pub fn reused(&mut self, report: &Report) -> Vec<String> {
        let mut reused: Vec<String> = Vec::new();
        for artifact in report
            .artifacts
            .iter()
            .filter(|artifact| artifact.is_local())
        {
            if !artifact.fresh {
                self.built.extend(artifact.filenames.iter().cloned());
                continue;
            }
            let ours = !artifact.filenames.is_empty()
                && artifact
                    .filenames
                    .iter()
                    .all(|file| self.built.contains(file));
            if !ours && !reused.contains(&artifact.package_id) {
                reused.push(artifact.package_id.clone());
            }
        }
        reused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libtest::Artifact;

    fn artifact(id: &str, fresh: bool, file: &str) -> Artifact {
        Artifact {
            package_id: id.to_string(),
            fresh,
            filenames: vec![file.to_string()],
        }
    }

    #[test]
    fn a_reused_local_unit_is_reported_unless_this_check_built_it() {
        let mut builds = Builds::default();
        let local = "path+file:///lab/course#0.1.0";
        let first = Report {
            artifacts: vec![
                artifact("registry+https://x#serde@1.0.0", true, "serde.rlib"),
                artifact(local, false, "libcourse.rlib"),
                artifact(local, true, "message_ir-1"),
            ],
            ..Report::default()
        };
        assert_eq!(builds.reused(&first), [local]);
        let second = Report {
            artifacts: vec![
                artifact(local, true, "libcourse.rlib"),
                artifact(local, false, "wire-1"),
            ],
            ..Report::default()
        };
        assert!(builds.reused(&second).is_empty());
    }

    #[test]
    fn dep_info_files_are_aged_and_a_fifo_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path();
        let unit = lab.join("target/debug/.fingerprint/course-1");
        fs::create_dir_all(&unit).unwrap();
        fs::write(unit.join("dep-lib-course"), "x").unwrap();
        fs::write(unit.join("lib-course"), "x").unwrap();
        let registry = lab.join("target/debug/.fingerprint/serde-2");
        fs::create_dir_all(&registry).unwrap();
        fs::write(registry.join("dep-lib-serde"), "x").unwrap();
        fs::write(
            lab.join("Cargo.toml"),
            "[workspace]\nname = \"no\"\n[package]\nname = \"course\"\n",
        )
        .unwrap();
        fs::create_dir_all(lab.join("src")).unwrap();
        fs::write(lab.join("src/lib.rs"), "x").unwrap();
        let ancient = lab.join("src/old.rs");
        fs::write(&ancient, "x").unwrap();
        File::options()
            .write(true)
            .open(&ancient)
            .unwrap()
            .set_modified(UNIX_EPOCH)
            .unwrap();

        age_fingerprints(lab, &lab.join("target")).unwrap();
        let time = |path: &Path| fs::metadata(path).unwrap().modified().unwrap();
        assert_eq!(time(&unit.join("dep-lib-course")), aged());
        assert!(
            time(&unit.join("lib-course")) > aged(),
            "only dep-info files"
        );
        assert!(
            time(&registry.join("dep-lib-serde")) > aged(),
            "only the lab's own packages"
        );
        assert!(time(&lab.join("src/lib.rs")) > aged());
        assert!(
            time(&ancient) > aged(),
            "a source older than AGED is touched"
        );

        let fifo = unit.join("dep-test-x");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let error = age_fingerprints(lab, &lab.join("target")).unwrap_err();
        assert_eq!(error.exit_code(), 2, "{error}");
        fs::remove_file(&fifo).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &fifo).unwrap();
        let error = age_fingerprints(lab, &lab.join("target")).unwrap_err();
        assert_eq!(error.exit_code(), 2, "{error}");

        // A linked `.fingerprint` is refused, its target's files untouched.
        fs::remove_file(&fifo).unwrap();
        let other = tempfile::tempdir().unwrap();
        let elsewhere = other.path().join("elsewhere");
        fs::rename(lab.join("target/debug/.fingerprint"), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, lab.join("target/debug/.fingerprint")).unwrap();
        let outside = elsewhere.join("course-1/dep-lib-course");
        let before = time(&outside);
        let error = age_fingerprints(lab, &lab.join("target")).unwrap_err();
        assert_eq!(error.exit_code(), 2, "{error}");
        assert_eq!(time(&outside), before);
    }
}
