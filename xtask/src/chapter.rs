//! A chapter's folder under `checkpoints/`: its manifest, its learner's
//! guide and its hints. This module knows the folder's file names.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::locate::Checkpoint;
use crate::manifest::{ChapterId, Manifest};

/// The manifest of a chapter folder.
pub const MANIFEST_FILE: &str = "checkpoint.json";
/// The learner's guide; a practice folder holds it at its root, under the same name.
pub const GUIDE_FILE: &str = "LEARNING.md";
/// The hint ladder (authoring material: it never reaches a practice folder).
pub const HINTS_FILE: &str = "hints.md";

/// A chapter folder under `checkpoints/` and its manifest file.
pub struct ChapterFolder {
    pub id: ChapterId,
    pub dir: PathBuf,
}

impl ChapterFolder {
    /// The manifest path, for messages.
    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join(MANIFEST_FILE)
    }

    /// The learner's guide of this chapter.
    pub fn guide_path(&self) -> PathBuf {
        self.dir.join(GUIDE_FILE)
    }

    /// Reads and checks the manifest. Errors give the file, line and column.
    pub fn load(&self) -> Result<Manifest> {
        let path = self.manifest_path();
        let text = fs::read_to_string(&path).map_err(|error| {
            Error::bad_input(format!("cannot read {}: {error}", path.display()))
        })?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|error| {
            Error::bad_input(format!(
                "{}:{}:{}: malformed manifest: {error}; fix it (fields are listed in README.md)",
                path.display(),
                error.line(),
                error.column()
            ))
        })?;
        if manifest.id != self.id.to_string() {
            return Err(Error::bad_input(format!(
                "{}: `id` is \"{}\" but the folder is checkpoints/{}: make them agree",
                path.display(),
                manifest.id,
                self.id
            )));
        }
        if manifest.run.is_empty() {
            return Err(Error::bad_input(format!(
                "{}: `run` is empty: give the command that runs the focused test",
                path.display()
            )));
        }
        Ok(manifest)
    }
}

/// Every chapter folder under `checkpoints_dir`, in order.
pub fn all(checkpoints_dir: &Path) -> Result<Vec<ChapterFolder>> {
    let entries = match fs::read_dir(checkpoints_dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(Error::bad_input(format!(
                "cannot read {}: {error}",
                checkpoints_dir.display()
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
            })
        })
        .collect();
    chapters.sort_by_key(|chapter| chapter.id);
    Ok(chapters)
}

/// The folder of chapter `id`, or a bad-input error listing the chapters that exist.
pub fn find(checkpoints_dir: &Path, id: ChapterId) -> Result<ChapterFolder> {
    let all = all(checkpoints_dir)?;
    let known: Vec<String> = all.iter().map(|chapter| chapter.id.to_string()).collect();
    all.into_iter()
        .find(|chapter| chapter.id == id)
        .ok_or_else(|| {
            let existing = if known.is_empty() {
                format!("{} holds no chapter folders", checkpoints_dir.display())
            } else {
                format!("chapters that exist: {}", known.join(", "))
            };
            Error::bad_input(format!("unknown chapter {id}: {existing}"))
        })
}

impl ChapterFolder {
    /// The hint ladder of this chapter.
    pub fn hints_path(&self) -> PathBuf {
        self.dir.join(HINTS_FILE)
    }
}

/// The guide with a header naming the chapter, its commits and focused test.
pub fn guide_with_header(manifest: &Manifest, checkpoint: &Checkpoint, guide: &str) -> String {
    format!(
        "> 第 {id} 章 · {title}\n\
         > 起点 parent: `{parent}` {parent_subject}\n\
         > 终点 target: `{target}` {target_subject}\n\
         > 聚焦测试: `{test}`\n\n{guide}",
        id = manifest.id,
        title = manifest.title,
        parent = checkpoint.parent.short,
        parent_subject = checkpoint.parent.subject,
        target = checkpoint.target.short,
        target_subject = checkpoint.target.subject,
        test = manifest.focused_test,
    )
}
