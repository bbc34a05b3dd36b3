//! **leak** — a practice folder, written as `practice` writes it, holds the
//! learner's world of its base commit, the files handed out from the target
//! (the focused test, each step's own test file and the `labFiles`) and the
//! handout; no tooling, no `.git`, and no answer in any form:
//!
//! * no public name the layer adds to the teaching files appears outside
//!   the files from the target and the guide ([`super::names`] reads the
//!   names);
//! * no file holds a teaching file's target content (compared without
//!   whitespace), under any name — also a teaching file the layer leaves
//!   unchanged, whose answer is then already at the parent.
//!
//! In `observe` mode the practice folder is the target on purpose: its
//! teaching files may hold the answer, every other file may not.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid};

use super::Chapter;
use super::names::{contains_word, public_names};
use super::work::{Work, progress};
use crate::chapter;
use crate::error::{self, Error, Result};
use crate::manifest::Mode;
use crate::repo::CourseRepo;
use crate::tree;
use crate::worlds;

/// A practice folder holds nothing it should not.
pub(super) fn leak(work: &Work, chapter: &Chapter) -> Result<String> {
    progress(chapter.id(), "leak: writing a practice folder");
    let dir = work.lab(chapter, "leak", &chapter.manifest)?;
    let files = practice_files(&dir)?;
    let mut problems = differences(work.repo, chapter, &files)?;
    let names = added_names(work.repo, chapter)?;
    problems.extend(name_leaks(work.repo, chapter, &files, &names)?);
    problems.extend(answer_copies(work.repo, chapter, &files)?);
    if problems.is_empty() {
        Ok(format!(
            "no tooling, history or answer; none of the layer's {} public name(s)",
            names.len()
        ))
    } else {
        Err(Error::check_failed(problems.join("; ")))
    }
}

/// One file (or symlink) of the practice folder.
struct PracticeFile {
    /// The path below the practice folder.
    relative: PathBuf,
    /// The blob id and git mode it would have.
    blob: (Oid, i32),
    /// A regular file's content (a symlink has none).
    content: Option<Vec<u8>>,
}

/// Every file and symlink below `dir`, read once, nothing followed.
fn practice_files(dir: &Path) -> Result<Vec<PracticeFile>> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry.map_err(|error| {
            Error::check_failed(format!("cannot walk {}: {error}", dir.display()))
        })?;
        let path = entry.path();
        let read = error::io(format!("cannot read {}", path.display()));
        let kind = entry.file_type();
        let (bytes, mode, content) = if kind.is_dir() {
            continue;
        } else if kind.is_symlink() {
            let target = fs::read_link(path).map_err(read)?;
            let bytes = target.as_os_str().as_bytes().to_vec();
            (bytes, tree::MODE_SYMLINK, None)
        } else {
            let meta = fs::symlink_metadata(path).map_err(read)?;
            let content = fs::read(path).map_err(error::io("cannot read a practice file"))?;
            let mode = tree::file_mode(meta.permissions().mode());
            (content.clone(), mode, Some(content))
        };
        let oid =
            Oid::hash_object(ObjectType::Blob, &bytes).map_err(error::git("cannot hash a file"))?;
        files.push(PracticeFile {
            relative: path.strip_prefix(dir).unwrap_or(path).to_path_buf(),
            blob: (oid, mode),
            content,
        });
    }
    Ok(files)
}

/// What is wrong with the practice folder's files beside the trees and the
/// handout it was made from: each must be the base tree's (no tooling, no
/// `.git`), the target's (the files from the target) or the handout's, and
/// none may be missing.
fn differences(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
) -> Result<Vec<String>> {
    let manifest = &chapter.manifest;
    let base = chapter.checkpoint.base(manifest.mode);
    let base_tree = repo.tree_of(base.oid)?;
    let mut expected = tree::list_tree(&repo.git, &base_tree, &worlds::is_tooling)?;
    let target_tree = repo.tree_of(chapter.checkpoint.target.oid)?;
    let target = tree::list_tree(&repo.git, &target_tree, &|_| false)?;
    for file in manifest.target_files() {
        let path = PathBuf::from(file.as_str());
        if let Some(blob) = target.get(&path) {
            expected.insert(path, *blob);
        }
    }
    // verify's labs are built without a pointer to a real place.
    let guide = crate::learner_text::guide_with_header(
        manifest,
        &chapter.checkpoint,
        None,
        &chapter.handout.guide,
    );
    let mut handout = vec![(chapter::GUIDE_FILE, Some(guide))];
    if chapter.handout.tutor.is_some() {
        handout.push((chapter::TUTOR_FILE, chapter.handout.tutor.clone()));
    }
    let mut problems = Vec::new();
    for file in files {
        let shown = file.relative.display();
        let given = handout
            .iter()
            .find(|(name, _)| file.relative == Path::new(name));
        if let Some((_, wanted)) = given {
            if file.content.as_deref() != wanted.as_deref().map(str::as_bytes) {
                problems.push(format!("{shown} is not the handout practice writes"));
            }
        } else if let Some(wanted) = expected.get(&file.relative) {
            if file.blob != (wanted.oid, tree::normal_mode(wanted.mode)) {
                problems.push(format!("{shown} differs from the tree it was written from"));
            }
        } else {
            problems.push(format!("{shown} is not in {}'s learner world", base.short));
        }
    }
    let seen: BTreeSet<&PathBuf> = files.iter().map(|file| &file.relative).collect();
    let missing = expected.keys().filter(|path| !seen.contains(path));
    problems.extend(missing.map(|path| format!("{} is missing", path.display())));
    Ok(problems)
}

/// The files a practice folder may hand out the answer in: the files from
/// the target and the guide, and in `observe` mode the teaching files.
fn exempt(chapter: &Chapter) -> Vec<PathBuf> {
    let manifest = &chapter.manifest;
    let mut exempt = manifest.target_files();
    if manifest.mode == Mode::Observe {
        exempt.extend(&manifest.teaching_files);
    }
    let exempt = exempt.into_iter().map(|file| PathBuf::from(file.as_str()));
    exempt.chain([PathBuf::from(chapter::GUIDE_FILE)]).collect()
}

/// The public names the layer adds to its teaching files, with the file
/// that adds each.
fn added_names(repo: &CourseRepo, chapter: &Chapter) -> Result<BTreeMap<String, String>> {
    let parent = repo.tree_of(chapter.checkpoint.parent.oid)?;
    let target = repo.tree_of(chapter.checkpoint.target.oid)?;
    let mut before = BTreeSet::new();
    let mut added = BTreeMap::new();
    for teaching in &chapter.manifest.teaching_files {
        let source = tree::file_at(&repo.git, &parent, teaching.as_str())?.unwrap_or_default();
        before.extend(public_names(&String::from_utf8_lossy(&source)));
    }
    for teaching in &chapter.manifest.teaching_files {
        let source = tree::file_at(&repo.git, &target, teaching.as_str())?.unwrap_or_default();
        for name in public_names(&String::from_utf8_lossy(&source)) {
            if !before.contains(&name) {
                added.entry(name).or_insert_with(|| teaching.to_string());
            }
        }
    }
    Ok(added)
}

/// Every file of the practice folder but the exempt ones that mentions one
/// of `names` as a whole word where the parent's version of that file does
/// not (a word the starting point already had, like a module `tool` before
/// chapter 06 adds `Tool`s, gives nothing away).
fn name_leaks(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
    names: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    let exempt = exempt(chapter);
    let parent = repo.tree_of(chapter.checkpoint.parent.oid)?;
    let mut problems = Vec::new();
    for file in files.iter().filter(|file| !exempt.contains(&file.relative)) {
        let Some(content) = &file.content else {
            continue;
        };
        let text = String::from_utf8_lossy(content);
        let relative = file.relative.to_string_lossy();
        let before = tree::file_at(&repo.git, &parent, &relative)?.unwrap_or_default();
        let before = String::from_utf8_lossy(&before);
        for (name, teaching) in names {
            if contains_word(&text, name) && !contains_word(&before, name) {
                problems.push(format!(
                    "`{name}` (added to {teaching} by the layer) appears in {relative}"
                ));
            }
        }
    }
    Ok(problems)
}

/// Every file of the practice folder but the exempt ones whose content,
/// whitespace aside, is a teaching file's content at the target.
fn answer_copies(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
) -> Result<Vec<String>> {
    let manifest = &chapter.manifest;
    let target = &chapter.checkpoint.target;
    let tree = repo.tree_of(target.oid)?;
    let mut answers = HashMap::new();
    for teaching in &manifest.teaching_files {
        let content = tree::file_at(&repo.git, &tree, teaching.as_str())?.unwrap_or_default();
        let squeezed = without_whitespace(&content);
        if !squeezed.is_empty() {
            answers.entry(squeezed).or_insert(teaching);
        }
    }
    let exempt = exempt(chapter);
    let mut problems = Vec::new();
    for file in files.iter().filter(|file| !exempt.contains(&file.relative)) {
        let content = file.content.as_deref().unwrap_or_default();
        let Some(teaching) = answers.get(&without_whitespace(content)) else {
            continue;
        };
        let shown = file.relative.display();
        problems.push(if Path::new(teaching.as_str()) == file.relative {
            format!(
                "{shown} is already the answer: the layer leaves this teaching file as it is at \
                 {}, so the practice folder hands it out (list only files the learner writes \
                 in `teachingFiles`)",
                chapter.checkpoint.base(manifest.mode).short
            )
        } else {
            format!(
                "{shown} holds the answer: the content of {teaching} at the target {}",
                target.short
            )
        });
    }
    Ok(problems)
}

/// `bytes` without ASCII whitespace: a copy re-indented or with other line
/// endings is still the same answer.
fn without_whitespace(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(|byte| !byte.is_ascii_whitespace())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_does_not_disguise_an_answer() {
        let answer = b"pub fn add(a: i32) -> i32 {\n    a\n}\n";
        let disguised = b"pub fn add(a: i32) -> i32 {\r\n\ta\r\n}";
        assert_eq!(without_whitespace(answer), without_whitespace(disguised));
        assert_ne!(
            without_whitespace(answer),
            without_whitespace(b"pub fn add(a: i32) -> i32 { b }")
        );
    }
}
