//! A chapter's folder under `checkpoints/` (manifest, guide, hints) and the
//! tutor protocol, read without following a symlink.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::locate::Checkpoint;
use crate::manifest::{self, ChapterId, Manifest, RepoPath};
use crate::out::noteln;
use crate::repo::{CHECKPOINTS_DIR, CourseRepo};
use crate::safe_fs;
use crate::tree;

pub const MANIFEST_FILE: &str = "checkpoint.json";
/// The learner's guide; a practice folder holds it at its root, under the same name.
pub const GUIDE_FILE: &str = "LEARNING.md";
/// The chapter's starter: teaching files under their lab paths.
pub const STARTER_DIR: &str = "starter";
/// The course's tutor protocol for AI assistants, copied to every lab's root.
pub const TUTOR_FILE: &str = "AGENTS.md";

pub struct ChapterFolder {
    pub id: ChapterId,
    pub dir: PathBuf,
    /// The repository root, below which every read stays.
    root: PathBuf,
}

/// What a practice folder hands out besides the trees: the guide, the tutor
/// protocol and the starter files.
#[derive(Debug, Clone)]
pub struct Handout {
    pub guide: String,
    pub tutor: Option<String>,
    pub starter: Vec<(RepoPath, Vec<u8>)>,
}

impl ChapterFolder {
    /// Reads a text file of the repository, never through a symlink.
    fn read_text(&self, relative: &Path) -> Result<Option<String>> {
        read_text_inside(
            &self.root,
            relative,
            [say::chapter_file_symlink, say::chapter_file_unreadable],
            say::chapter_file_not_utf8,
        )
    }

    /// Reads the file `name` of this folder: its path as shown, and its text.
    pub fn read(&self, name: &str, missing: fn(&str) -> String) -> Result<(String, String)> {
        let path = self.dir.strip_prefix(&self.root).unwrap_or(&self.dir);
        let path = path.join(name);
        let shown = path.display().to_string();
        match self.read_text(&path)? {
            Some(text) => Ok((shown, text)),
            None => Err(Error::bad_input(missing(&shown))),
        }
    }

    /// Reads what a practice folder of `manifest`'s chapter hands out.
    pub fn handout(&self, manifest: &Manifest) -> Result<Handout> {
        let (_, guide) = self.read(GUIDE_FILE, say::chapter_file_missing)?;
        let tutor = self.read_text(&Path::new(CHECKPOINTS_DIR).join(TUTOR_FILE))?;
        let starter = self.starter(manifest)?;
        Ok(Handout {
            guide,
            tutor,
            starter,
        })
    }

    /// The chapter's starter files, each one of `manifest`'s teaching files,
    /// read without following a symlink.
    pub fn starter(&self, manifest: &Manifest) -> Result<Vec<(RepoPath, Vec<u8>)>> {
        let folder = self.dir.join(STARTER_DIR);
        let from_root = folder.strip_prefix(&self.root).unwrap_or(&folder);
        if fs::symlink_metadata(&folder).is_err() {
            return Ok(Vec::new());
        }
        // Walking only names the files: each is read below, refusing a
        // symlink on the way (the folder itself one).
        let unreadable = |why: &str| {
            let shown = from_root.display().to_string();
            Error::bad_input(say::chapter_file_unreadable(&shown, why))
        };
        let walk = walkdir::WalkDir::new(&folder).min_depth(1);
        let mut files = Vec::new();
        for entry in walk.sort_by_file_name() {
            let entry = entry.map_err(|error| unreadable(&error.to_string()))?;
            if entry.file_type().is_dir() {
                continue;
            }
            let relative = entry.path().strip_prefix(&folder).unwrap_or(entry.path());
            let shown = from_root.join(relative).display().to_string();
            let teaching = relative.to_str().and_then(|path| {
                manifest
                    .teaching_files
                    .iter()
                    .find(|file| file.as_str() == path)
            });
            let Some(teaching) = teaching else {
                return Err(Error::bad_input(say::starter_not_teaching(
                    &shown,
                    manifest.id,
                )));
            };
            let content = safe_fs::read_inside(&self.root, &from_root.join(relative))
                .map_err(|refusal| {
                    Error::bad_input(if refusal.is_symlink() {
                        say::chapter_file_symlink(&shown, &refusal.at.display().to_string())
                    } else {
                        say::chapter_file_unreadable(&shown, &say::refusal(&refusal))
                    })
                })?
                .unwrap_or_default();
            files.push((teaching.clone(), content));
        }
        Ok(files)
    }

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
/// `None` when it does not exist.
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

/// Checks that the target has every file the manifest names, and warns
/// about an [`idle_layer`].
pub fn check_target(repo: &CourseRepo, manifest: &Manifest, checkpoint: &Checkpoint) -> Result<()> {
    let tree = repo.tree_of(checkpoint.target.oid)?;
    let missing: Vec<String> = manifest
        .target_files()
        .into_iter()
        .chain(&manifest.teaching_files)
        .filter(|path| !matches!(tree::file_at(&repo.git, &tree, path.as_str()), Ok(Some(_))))
        .map(|path| format!("`{path}`"))
        .collect();
    if !missing.is_empty() {
        let lacks = say::target_lacks_files(manifest.id, &missing, &checkpoint.target.short);
        return Err(Error::bad_input(lacks));
    }
    if let Some(idle) = idle_layer(repo, manifest, checkpoint)? {
        noteln!("{}{idle}", say::note_prefix());
    }
    Ok(())
}

/// What to say when the target's layer changes no teaching file.
pub fn idle_layer(
    repo: &CourseRepo,
    manifest: &Manifest,
    checkpoint: &Checkpoint,
) -> Result<Option<String>> {
    let (parent, target) = (
        repo.tree_of(checkpoint.parent.oid)?,
        repo.tree_of(checkpoint.target.oid)?,
    );
    let blob = |tree: &git2::Tree<'_>, path: &RepoPath| {
        tree.get_path(Path::new(path.as_str()))
            .ok()
            .map(|entry| entry.id())
    };
    let teaching = &manifest.teaching_files;
    let idle = !teaching.is_empty()
        && (teaching.iter()).all(|path| blob(&parent, path) == blob(&target, path));
    let target = &checkpoint.target;
    let subject = crate::out::escape_control(&target.subject);
    Ok(idle.then(|| say::idle_layer(manifest.id, &target.short, &subject)))
}
