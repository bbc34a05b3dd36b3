//! A chapter's folder under `checkpoints/`: its manifest, its learner's
//! guide and its hints, and the course's tutor protocol beside the chapter
//! folders, read without following a symlink anywhere below the repository
//! root.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::locate::Checkpoint;
use crate::manifest::{self, ChapterId, Manifest};
use crate::repo::{CHECKPOINTS_DIR, CourseRepo};
use crate::safe_fs;
use crate::tree;

/// The manifest of a chapter folder.
pub const MANIFEST_FILE: &str = "checkpoint.json";
/// The learner's guide; a practice folder holds it at its root, under the same name.
pub const GUIDE_FILE: &str = "LEARNING.md";
/// The course's tutor protocol for AI coding assistants, in `checkpoints/`;
/// every practice folder gets a copy at its root under the same name.
pub const TUTOR_FILE: &str = "AGENTS.md";

/// A chapter folder under `checkpoints/`.
pub struct ChapterFolder {
    pub id: ChapterId,
    pub dir: PathBuf,
    /// The repository root, below which every read stays.
    root: PathBuf,
}

/// What a practice folder hands the learner besides the code: the chapter's
/// guide and, when the course has one, the tutor protocol.
#[derive(Debug, Clone)]
pub struct Handout {
    pub guide: String,
    pub tutor: Option<String>,
}

impl ChapterFolder {
    /// Reads a text file of the repository (`relative` to its root), never
    /// through a symlink; `None` when it does not exist.
    fn read_text(&self, relative: &Path) -> Result<Option<String>> {
        read_text_inside(
            &self.root,
            relative,
            [say::chapter_file_symlink, say::chapter_file_unreadable],
            say::chapter_file_not_utf8,
        )
    }

    /// Reads the file `name` of this folder: its path as messages show it,
    /// and its text; `missing` says that it does not exist.
    pub fn read(&self, name: &str, missing: fn(&str) -> String) -> Result<(String, String)> {
        let path = self.dir.strip_prefix(&self.root).unwrap_or(&self.dir);
        let path = path.join(name);
        let shown = path.display().to_string();
        match self.read_text(&path)? {
            Some(text) => Ok((shown, text)),
            None => Err(Error::bad_input(missing(&shown))),
        }
    }

    /// Reads the guide and the tutor protocol a practice folder hands out.
    pub fn handout(&self) -> Result<Handout> {
        let (_, guide) = self.read(GUIDE_FILE, say::chapter_file_missing)?;
        let tutor = self.read_text(&Path::new(CHECKPOINTS_DIR).join(TUTOR_FILE))?;
        Ok(Handout { guide, tutor })
    }

    /// Reads and checks the manifest.
    pub fn load(&self) -> Result<Manifest> {
        let (shown, text) = self.read(MANIFEST_FILE, say::chapter_file_missing)?;
        // A byte-order mark is invisible in an editor: read past it.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let manifest: Manifest = serde_json::from_str(text).map_err(|error| {
            let message = error.to_string();
            let explained = manifest::closest_key_hint(&message).unwrap_or(message);
            Error::bad_input(say::manifest_malformed(
                &shown,
                error.line(),
                error.column(),
                &crate::out::escape_control(&explained),
            ))
        })?;
        let mut problems = manifest.problems();
        if manifest.id != self.id {
            problems.insert(
                0,
                format!(
                    "`id` is \"{}\" but the folder is checkpoints/{}: make them agree",
                    manifest.id, self.id
                ),
            );
        }
        if problems.is_empty() {
            Ok(manifest)
        } else {
            Err(Error::bad_input(say::manifest_problems(&shown, &problems)))
        }
    }
}

/// Every chapter folder under `checkpoints_dir`, in order.
pub fn all(checkpoints_dir: &Path) -> Result<Vec<ChapterFolder>> {
    let root = checkpoints_dir.parent().unwrap_or(checkpoints_dir);
    let entries = match fs::read_dir(checkpoints_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(Error::bad_input(say::checkpoints_unreadable(
                &checkpoints_dir.display().to_string(),
                &error,
            )));
        }
    };
    let mut chapters: Vec<ChapterFolder> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().join(MANIFEST_FILE).is_file())
        .filter_map(|entry| {
            let id = entry.file_name().to_str()?.parse().ok()?;
            Some(ChapterFolder {
                id,
                dir: entry.path(),
                root: root.to_path_buf(),
            })
        })
        .collect();
    chapters.sort_by(|a, b| (a.id, &a.dir).cmp(&(b.id, &b.dir)));
    if let Some(pair) = chapters.windows(2).find(|pair| pair[0].id == pair[1].id) {
        return Err(Error::bad_input(say::two_folders_for_one_chapter(
            &pair[0].dir.display().to_string(),
            &pair[1].dir.display().to_string(),
            pair[0].id,
        )));
    }
    Ok(chapters)
}

/// The folder of chapter `id`, or an error listing the chapters that exist.
pub fn find(checkpoints_dir: &Path, id: ChapterId) -> Result<ChapterFolder> {
    let all = all(checkpoints_dir)?;
    let known: Vec<String> = all.iter().map(|chapter| chapter.id.to_string()).collect();
    let dir = checkpoints_dir.display().to_string();
    let unknown = || Error::bad_input(say::unknown_chapter(id, &known, &dir));
    all.into_iter()
        .find(|chapter| chapter.id == id)
        .ok_or_else(unknown)
}

/// Reads the text file `relative` below `root`, never through a symlink;
/// `None` when it does not exist. The sentences say a symlink on the way
/// (path, link), another refusal (path, why) and text that is not UTF-8.
pub fn read_text_inside(
    root: &Path,
    relative: &Path,
    [symlink, unreadable]: [fn(&str, &str) -> String; 2],
    not_utf8: fn(&str) -> String,
) -> Result<Option<String>> {
    let shown = relative.display().to_string();
    let bytes = safe_fs::read_inside(root, relative).map_err(|refusal| {
        Error::bad_input(if refusal.is_symlink() {
            symlink(&shown, &refusal.at.display().to_string())
        } else {
            unreadable(&shown, &say::refusal(&refusal))
        })
    })?;
    let text = bytes.map(|bytes| String::from_utf8(bytes).map_err(|_| not_utf8(&shown)));
    text.transpose().map_err(Error::bad_input)
}

/// Checks the manifest against the target commit: the focused test, every
/// step's own test file, every teaching file and every lab file must be
/// files there.
pub fn check_target(repo: &CourseRepo, manifest: &Manifest, checkpoint: &Checkpoint) -> Result<()> {
    let tree = repo.tree_of(checkpoint.target.oid)?;
    let missing: Vec<String> = manifest
        .target_files()
        .into_iter()
        .chain(&manifest.teaching_files)
        .filter(|path| !matches!(tree::file_at(&repo.git, &tree, path.as_str()), Ok(Some(_))))
        .map(|path| format!("`{path}`"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let lacks = say::target_lacks_files(manifest.id, &missing, &checkpoint.target.short);
    Err(Error::bad_input(lacks))
}
