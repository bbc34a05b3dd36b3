//! Finding the lab DIR names, and how to bring its focused test back.

use std::path::{Path, PathBuf};

use crate::chapter;
use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::locate;
use crate::manifest::Manifest;
use crate::out::display_path;
use crate::repo::CourseRepo;

/// Resolves DIR against the current folder, then against the repository
/// root; refuses the repository itself and folders that are not labs.
pub(super) fn find_lab(repo: &CourseRepo, dir: &Path, manifest: &Manifest) -> Result<PathBuf> {
    let here = std::env::current_dir().unwrap_or_default();
    let root = repo
        .root
        .canonicalize()
        .unwrap_or_else(|_| repo.root.clone());
    let id = manifest.id.to_string();
    let found = [here.join(dir), repo.root.join(dir)]
        .into_iter()
        .find(|candidate| candidate.is_dir())
        .and_then(|candidate| candidate.canonicalize().ok());
    let Some(lab) = found else {
        return Err(Error::bad_input(say::no_such_lab(
            &dir.display().to_string(),
            &id,
            &root.display().to_string(),
            &labs_in_sight(&here, &root),
        )));
    };
    if lab == root || root.starts_with(&lab) {
        return Err(Error::bad_input(say::is_the_repository(
            &lab.display().to_string(),
            &id,
            &labs_in_sight(&here, &root),
        )));
    }
    if !is_lab(&lab) {
        return Err(Error::bad_input(say::not_a_lab(
            &lab.display().to_string(),
            &id,
            &labs_in_sight(&here, &root),
        )));
    }
    Ok(lab)
}

/// A practice folder: a learner's workspace with the chapter's guide.
fn is_lab(dir: &Path) -> bool {
    dir.join(chapter::GUIDE_FILE).is_file() && dir.join("Cargo.toml").is_file()
}

/// The labs directly below the current folder and the repository root.
fn labs_in_sight(here: &Path, root: &Path) -> Vec<String> {
    let mut labs: Vec<String> = [here, root]
        .into_iter()
        .filter_map(|folder| std::fs::read_dir(folder).ok())
        .flatten()
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| is_lab(path))
        .map(|path| display_path(&path))
        .collect();
    labs.sort();
    labs.dedup();
    labs
}

/// How to bring a deleted focused test back.
pub(super) fn restore_hint(repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> String {
    let test = &manifest.focused_test;
    match locate::locate(&repo.git, manifest.id) {
        Ok(checkpoint) => say::focused_test_missing(
            test.as_str(),
            &repo.root.display().to_string(),
            &checkpoint.target.short,
            &lab.display().to_string(),
        ),
        Err(_) => say::focused_test_missing_no_history(test.as_str(), &manifest.id.to_string()),
    }
}
