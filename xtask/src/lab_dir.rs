//! Finding the lab a learner command is pointed at (`check NN DIR`,
//! `compare NN DIR`): DIR against the current folder, then the repository
//! root; the repository itself and folders that are not labs are refused.

use std::path::{Path, PathBuf};

use crate::chapter;
use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::manifest::Manifest;
use crate::out::{display_path, escape_control};
use crate::repo::CourseRepo;

/// Resolves DIR against the current folder, then against the repository
/// root; refuses the repository itself and folders that are not labs.
pub fn find_lab(repo: &CourseRepo, dir: &Path, manifest: &Manifest) -> Result<PathBuf> {
    let here = std::env::current_dir().unwrap_or_default();
    let root = repo.canonical_root.clone();
    let id = manifest.id.to_string();
    let found = [here.join(dir), repo.root.join(dir)]
        .into_iter()
        .find(|candidate| candidate.is_dir())
        .and_then(|candidate| candidate.canonicalize().ok());
    let Some(lab) = found else {
        return Err(Error::bad_input(say::no_such_lab(
            &escape_control(&dir.display().to_string()),
            &id,
            &root.display().to_string(),
            &labs_in_sight(&here, &root),
        )));
    };
    if lab == root || root.starts_with(&lab) {
        return Err(Error::bad_input(say::is_the_repository(
            &escape_control(&lab.display().to_string()),
            &id,
            &labs_in_sight(&here, &root),
        )));
    }
    if !is_lab(&lab) {
        return Err(Error::bad_input(say::not_a_lab(
            &escape_control(&lab.display().to_string()),
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
