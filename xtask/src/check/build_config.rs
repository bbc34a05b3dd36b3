//! Whether the lab builds the way its base does: the base tree with the
//! `labFiles` from the target over it (a chapter that adds a dependency
//! hands out the target's `Cargo.toml`). A run is trusted only when every
//! `Cargo.toml` the lab got from the base is still the base's, byte for byte
//! (a `[[test]]` entry can point the focused test's name at another file),
//! and the lab holds no build configuration the base lacks:
//! a `.cargo/` folder (a `runner` can print any report), a `build.rs` or a
//! toolchain file, in the lab's root, a package folder or any folder
//! between them. Configuration above the lab (a parent folder's
//! `.cargo/config.toml`, cargo's home, the environment) is the learner's
//! own machine setup, outside the threat model: it is never read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::tests_intact::root_text;
use crate::error::{self, Result};
use crate::locate;
use crate::manifest::Manifest;
use crate::out::shell_word;
use crate::repo::CourseRepo;
use crate::safe_fs;
use crate::tree;
use crate::worlds;

/// The names cargo or rustup read build configuration from, in a folder.
const CONFIG_NAMES: [&str; 4] = [
    ".cargo",
    "build.rs",
    "rust-toolchain",
    "rust-toolchain.toml",
];

/// A file of the lab's build configuration that is not the base's.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ChangedConfig {
    pub(super) path: String,
    pub(super) change: Change,
    /// The shell command that brings the base's state back.
    pub(super) restore: String,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum Change {
    /// It differs from the base's.
    Changed,
    /// It is gone from the lab.
    Missing,
    /// The base has none.
    Added,
}

/// The lab's build configuration that is not the base's; empty when the
/// base cannot be read (then the tests cannot be verified either).
pub(super) fn changed_build_config(
    repo: &CourseRepo,
    manifest: &Manifest,
    lab: &Path,
) -> Result<Vec<ChangedConfig>> {
    let Ok(checkpoint) = locate::locate(&repo.git, manifest.id) else {
        return Ok(Vec::new());
    };
    let base = checkpoint.base(manifest.mode);
    let base_tree = repo.tree_of(base.oid)?;
    let mut blobs = tree::list_tree(&repo.git, &base_tree, &worlds::is_tooling)?;
    let target_tree = repo.tree_of(checkpoint.target.oid)?;
    let mut from_target = BTreeSet::new();
    for file in &manifest.lab_files {
        if let Some(blob) = tree::blob_at(&target_tree, file.as_str()) {
            from_target.insert(PathBuf::from(file.as_str()));
            blobs.insert(PathBuf::from(file.as_str()), blob);
        }
    }
    let folders = package_folders(blobs.keys());
    let lab_path = |path: &Path| shell_word(&lab.join(path).display().to_string());
    let mut changed = Vec::new();
    for (path, blob) in &blobs {
        let teaching = manifest
            .teaching_files
            .iter()
            .any(|file| Path::new(file.as_str()) == path);
        if teaching || !is_build_config(path, &folders) {
            continue;
        }
        let expected = repo
            .git
            .find_blob(blob.oid)
            .map_err(error::git(format!("cannot read `{}`", path.display())))?;
        // A symlink or a folder in its place is no copy of the base's file.
        let actual = safe_fs::read_inside(lab, path);
        let change = match actual {
            Ok(Some(content)) if content == expected.content() => continue,
            Ok(None) => Change::Missing,
            _ => Change::Changed,
        };
        let commit = if from_target.contains(path) {
            &checkpoint.target
        } else {
            base
        };
        changed.push(ChangedConfig {
            path: path.display().to_string(),
            change,
            restore: format!(
                "git -C {} show {} > {}",
                shell_word(&root_text(&repo.root)),
                shell_word(&format!("{}:{}", commit.short, path.display())),
                lab_path(path),
            ),
        });
    }
    for folder in &folders {
        for name in CONFIG_NAMES {
            let path = folder.join(name);
            let in_lab = lab.join(&path).symlink_metadata().is_ok();
            let in_base = blobs.keys().any(|blob| blob.starts_with(&path));
            if in_lab && !in_base {
                changed.push(ChangedConfig {
                    path: path.display().to_string(),
                    change: Change::Added,
                    restore: format!("rm -r {}", lab_path(&path)),
                });
            }
        }
    }
    changed.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changed)
}

/// The lab's root, every folder of the base holding a `Cargo.toml`, and
/// every folder between them.
fn package_folders<'p>(paths: impl Iterator<Item = &'p PathBuf>) -> BTreeSet<PathBuf> {
    let mut folders = BTreeSet::from([PathBuf::new()]);
    for path in paths.filter(|path| path.file_name() == Some("Cargo.toml".as_ref())) {
        folders.extend(path.ancestors().skip(1).map(Path::to_path_buf));
    }
    folders
}

/// True for a `Cargo.toml` anywhere, and for what [`CONFIG_NAMES`] name
/// (or hold) in one of `folders`.
fn is_build_config(path: &Path, folders: &BTreeSet<PathBuf>) -> bool {
    path.file_name() == Some("Cargo.toml".as_ref())
        || path.ancestors().any(|config| {
            let named = config
                .file_name()
                .is_some_and(|name| CONFIG_NAMES.iter().any(|config| name == *config));
            named
                && config
                    .parent()
                    .is_some_and(|folder| folders.contains(folder))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_configuration_is_cargo_toml_anywhere_and_the_rest_in_package_folders() {
        let paths = [
            PathBuf::from("Cargo.toml"),
            PathBuf::from("course/Cargo.toml"),
        ];
        let folders = package_folders(paths.iter());
        assert_eq!(
            folders,
            BTreeSet::from([PathBuf::new(), PathBuf::from("course")])
        );
        let config = |path: &str| is_build_config(Path::new(path), &folders);
        assert!(config("course/Cargo.toml"));
        assert!(config("course/build.rs"));
        assert!(config("rust-toolchain.toml"));
        assert!(config("course/.cargo/config.toml"));
        assert!(!config("course/src/build.rs"), "a module named build");
        assert!(!config("course/src/lib.rs"));
    }
}
