//! Finding the lab of `check NN DIR` / `compare NN DIR`: DIR against the
//! current folder, then the repository root. `practice` writes
//! [`MARKER_FILE`] naming the chapter; a lab without one fits any chapter.

use std::path::{Path, PathBuf};

use crate::chapter;
use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::manifest::{ChapterId, Manifest};
use crate::out::{display_path, escape_control};
use crate::repo::CourseRepo;

/// The file at a lab's root that names its chapter.
pub const MARKER_FILE: &str = ".xtask-lab";

/// The chapter the lab at `lab` was made for, when its marker says so.
fn lab_chapter(lab: &Path) -> Option<ChapterId> {
    let text = crate::safe_fs::read_inside(lab, Path::new(MARKER_FILE)).ok()??;
    let text = String::from_utf8_lossy(&text);
    let line = text
        .lines()
        .find(|line| line.trim_start().starts_with("chapter"))?;
    let (_, value) = line.split_once('=')?;
    value.trim().trim_matches('"').parse().ok()
}

/// Resolves DIR against the current folder, then the repository root, and
/// refuses what is not a lab of this chapter (naming the `command` that fits).
pub fn find_lab(
    repo: &CourseRepo,
    dir: &Path,
    manifest: &Manifest,
    command: &str,
) -> Result<PathBuf> {
    let here = std::env::current_dir().unwrap_or_default();
    let root = &repo.canonical_root;
    let id = manifest.id.to_string();
    let labs = || labs_in_sight(&here, root);
    let show = |path: &Path| escape_control(&path.display().to_string()).into_owned();
    let found = [here.join(dir), repo.root.join(dir)]
        .into_iter()
        .find(|candidate| candidate.is_dir())
        .and_then(|candidate| candidate.canonicalize().ok());
    let Some(lab) = found else {
        let root = root.display().to_string();
        let message = say::no_such_lab(&show(dir), &id, &root, &labs());
        return Err(Error::bad_input(message));
    };
    let shown = show(&lab);
    if root.starts_with(&lab) {
        let message = say::is_the_repository(&shown, &id, &labs());
        return Err(Error::bad_input(message));
    }
    if !is_lab(&lab) {
        return Err(Error::bad_input(say::not_a_lab(&shown, &id, &labs())));
    }
    if let Some(chapter) = lab_chapter(&lab).filter(|chapter| *chapter != manifest.id) {
        let dir = crate::out::shell_word(&dir.display().to_string());
        let fits = format!("cargo xtask {command} {chapter} {dir}");
        let message = say::lab_of_another_chapter(&shown, &chapter.to_string(), &id, &fits);
        return Err(Error::bad_input(message));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_names_its_chapter_and_a_lab_without_one_names_none() {
        let lab = tempfile::tempdir().unwrap();
        assert_eq!(lab_chapter(lab.path()), None);
        let id: ChapterId = "04".parse().unwrap();
        std::fs::write(lab.path().join(MARKER_FILE), say::lab_marker("04")).unwrap();
        assert_eq!(lab_chapter(lab.path()), Some(id));
        std::fs::write(lab.path().join(MARKER_FILE), "chapter = nonsense\n").unwrap();
        assert_eq!(lab_chapter(lab.path()), None);
    }
}
