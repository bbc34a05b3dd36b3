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
use crate::manifest::{Mode, RepoPath};
use crate::repo::CourseRepo;
use crate::safe_fs;
use crate::tree;
use crate::worlds;

/// A practice folder holds nothing it should not.
pub(super) fn leak(work: &Work, chapter: &Chapter) -> Result<String> {
    progress(chapter.id(), "leak: writing a practice folder");
    let dir = work.lab(chapter, "leak", &chapter.manifest)?;
    let files = practice_files(&dir)?;
    let mut problems = differences(work.repo, chapter, &dir, &files)?;
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
        let kind = entry.file_type();
        if kind.is_dir() {
            continue;
        }
        let path = entry.path();
        let relative = path
            .strip_prefix(dir)
            .expect("walkdir stays below its root")
            .to_path_buf();
        let read = error::io(format!("cannot read {}", path.display()));
        let (bytes, mode, content) = if kind.is_symlink() {
            let target = fs::read_link(path).map_err(read)?;
            (
                target.as_os_str().as_bytes().to_vec(),
                tree::MODE_SYMLINK,
                None,
            )
        } else if kind.is_file() {
            let meta = entry.metadata().map_err(|error| {
                Error::check_failed(format!("cannot inspect {}: {error}", path.display()))
            })?;
            // Never through a symlink, never waiting on a FIFO put there meanwhile.
            let content = safe_fs::read_inside(dir, &relative)
                .map_err(|refusal| Error::check_failed(format!("cannot read {refusal}")))?
                .unwrap_or_default();
            (
                content.clone(),
                tree::file_mode(meta.permissions().mode()),
                Some(content),
            )
        } else {
            return Err(Error::check_failed(format!(
                "{} is neither a file, a folder nor a symlink",
                relative.display()
            )));
        };
        let oid =
            Oid::hash_object(ObjectType::Blob, &bytes).map_err(error::git("cannot hash a file"))?;
        files.push(PracticeFile {
            relative,
            blob: (oid, mode),
            content,
        });
    }
    Ok(files)
}

/// What a practice folder's files must be: the base tree's blobs, the
/// files from the target and the handout.
struct Expected {
    base: BTreeMap<PathBuf, tree::Blob>,
    /// Each file from the target (a lab test, a lab file) and its blob there.
    from_target: BTreeMap<PathBuf, Option<tree::Blob>>,
    guide: String,
    tutor: Option<String>,
    /// The base commit's short id, for messages.
    base_short: String,
}

impl Expected {
    fn new(repo: &CourseRepo, chapter: &Chapter) -> Result<Expected> {
        let manifest = &chapter.manifest;
        let base = chapter.checkpoint.base(manifest.mode);
        let base_tree = repo.tree_of(base.oid)?;
        let target_tree = repo.tree_of(chapter.checkpoint.target.oid)?;
        let target = tree::list_tree(&repo.git, &target_tree, &|_| false)?;
        let from_target = manifest
            .target_files()
            .into_iter()
            .map(|test| {
                let path = PathBuf::from(test.as_str());
                let blob = target.get(&path).copied();
                (path, blob)
            })
            .collect();
        Ok(Expected {
            base: tree::list_tree(&repo.git, &base_tree, &worlds::is_tooling)?,
            from_target,
            // verify's labs are built without a pointer to a real place.
            guide: crate::learner_text::guide_with_header(
                manifest,
                &chapter.checkpoint,
                None,
                &chapter.handout.guide,
            ),
            tutor: chapter.handout.tutor.clone(),
            base_short: base.short.clone(),
        })
    }

    /// What is wrong with one file of the practice folder, if anything.
    fn problem(&self, file: &PracticeFile) -> Option<String> {
        let relative = &file.relative;
        let shown = relative.display();
        let handout = if relative == Path::new(chapter::GUIDE_FILE) {
            Some((Some(&self.guide), "the chapter's guide with its header"))
        } else if relative == Path::new(chapter::TUTOR_FILE) && self.tutor.is_some() {
            Some((self.tutor.as_ref(), "the course's tutor protocol"))
        } else {
            None
        };
        if let Some((wanted, what)) = handout {
            let same = file.content.as_deref() == wanted.map(String::as_bytes);
            return (!same).then(|| format!("{shown} is not {what}"));
        }
        let (wanted, from) = match self.from_target.get(relative) {
            Some(blob) => (blob.as_ref(), "the target's version"),
            None => (self.base.get(relative), "the base tree"),
        };
        let Some(wanted) = wanted else {
            return Some(format!(
                "{shown} is not in {}'s learner world",
                self.base_short
            ));
        };
        (file.blob != (wanted.oid, tree::normal_mode(wanted.mode)))
            .then(|| format!("{shown} differs from {from}"))
    }

    /// The files from the target and base files the practice folder lacks.
    fn missing(&self, files: &[PracticeFile]) -> Vec<String> {
        let seen: BTreeSet<&PathBuf> = files.iter().map(|file| &file.relative).collect();
        let handed = self.from_target.keys().filter(|file| !seen.contains(file));
        let base = self
            .base
            .keys()
            .filter(|path| !seen.contains(path) && !self.from_target.contains_key(*path));
        handed
            .map(|file| format!("{} from the target is missing", file.display()))
            .chain(base.map(|path| format!("{} from the base tree is missing", path.display())))
            .collect()
    }
}

/// Compares a practice folder with the trees it was made from: no tooling,
/// no `.git`, every file the base tree's, the target's or the handout's.
fn differences(
    repo: &CourseRepo,
    chapter: &Chapter,
    dir: &Path,
    files: &[PracticeFile],
) -> Result<Vec<String>> {
    let expected = Expected::new(repo, chapter)?;
    let mut problems = Vec::new();
    for forbidden in worlds::TOOLING.iter().chain([&".git"]) {
        if fs::symlink_metadata(dir.join(forbidden)).is_ok() {
            problems.push(format!("the practice folder holds `{forbidden}`"));
        }
    }
    problems.extend(files.iter().filter_map(|file| expected.problem(file)));
    problems.extend(expected.missing(files));
    Ok(problems)
}

/// The files a practice folder may name the layer's public names in: the
/// files from the target and the guide, and in `observe` mode the teaching
/// files themselves.
fn allowed(chapter: &Chapter) -> Vec<PathBuf> {
    let manifest = &chapter.manifest;
    let mut allowed: Vec<PathBuf> = manifest
        .target_files()
        .into_iter()
        .map(|test| PathBuf::from(test.as_str()))
        .collect();
    allowed.push(PathBuf::from(chapter::GUIDE_FILE));
    if manifest.mode == Mode::Observe {
        allowed.extend(
            manifest
                .teaching_files
                .iter()
                .map(|file| PathBuf::from(file.as_str())),
        );
    }
    allowed
}

/// The public names the layer adds to its teaching files, with the file
/// that adds each.
fn added_names(repo: &CourseRepo, chapter: &Chapter) -> Result<BTreeMap<String, String>> {
    let parent = repo.tree_of(chapter.checkpoint.parent.oid)?;
    let target = repo.tree_of(chapter.checkpoint.target.oid)?;
    let names_in = |tree: &git2::Tree<'_>, path: &str| -> Result<BTreeSet<String>> {
        let source = tree::file_at(&repo.git, tree, path)?.unwrap_or_default();
        Ok(public_names(&String::from_utf8_lossy(&source))
            .into_iter()
            .collect())
    };
    let mut before = BTreeSet::new();
    for teaching in &chapter.manifest.teaching_files {
        before.extend(names_in(&parent, teaching.as_str())?);
    }
    let mut added = BTreeMap::new();
    for teaching in &chapter.manifest.teaching_files {
        for name in names_in(&target, teaching.as_str())? {
            if !before.contains(&name) {
                added.entry(name).or_insert_with(|| teaching.to_string());
            }
        }
    }
    Ok(added)
}

/// Every file of the practice folder but the allowed ones that mentions one
/// of `names` as a whole word where the parent's version of that file does
/// not (a word the starting point already had, like a module `tool` before
/// chapter 06 adds `Tool`s, gives nothing away).
fn name_leaks(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
    names: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    let allowed = allowed(chapter);
    let parent = repo.tree_of(chapter.checkpoint.parent.oid)?;
    let mut problems = Vec::new();
    for file in files
        .iter()
        .filter(|file| !allowed.contains(&file.relative))
    {
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
                    "`{name}` (added to {teaching} by the layer) appears in {}",
                    file.relative.display()
                ));
            }
        }
    }
    Ok(problems)
}

/// Every file of the practice folder (but a teaching file in `observe`
/// mode) whose content, whitespace aside, is a teaching file's content at
/// the target.
fn answer_copies(
    repo: &CourseRepo,
    chapter: &Chapter,
    files: &[PracticeFile],
) -> Result<Vec<String>> {
    let manifest = &chapter.manifest;
    let target = &chapter.checkpoint.target;
    let tree = repo.tree_of(target.oid)?;
    let mut answers: HashMap<Vec<u8>, &RepoPath> = HashMap::new();
    for teaching in &manifest.teaching_files {
        let content = tree::file_at(&repo.git, &tree, teaching.as_str())?.unwrap_or_default();
        let squeezed = without_whitespace(&content);
        if !squeezed.is_empty() {
            answers.entry(squeezed).or_insert(teaching);
        }
    }
    let observed = |path: &Path| {
        manifest.mode == Mode::Observe
            && manifest
                .teaching_files
                .iter()
                .any(|file| Path::new(file.as_str()) == path)
    };
    let mut problems = Vec::new();
    for file in files.iter().filter(|file| !observed(&file.relative)) {
        let Some(content) = &file.content else {
            continue;
        };
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
