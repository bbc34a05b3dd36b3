//! Building a lab, for `practice` and `verify`'s leak proof alike: the base
//! tree without the tooling, the target's [`Manifest::target_files`], the
//! starter when rebuilding, the guide and the tutor protocol; nothing else
//! from the target. A symlink on the way to one of these files is refused.

use std::path::Path;

use crate::chapter::{self, Handout};
use crate::error::{Error, Result};
use crate::learner_text::{self as say, LabPointer};
use crate::locate::Checkpoint;
use crate::manifest::{Manifest, Mode};
use crate::out::escape_control;
use crate::repo::CourseRepo;
use crate::safe_fs;
use crate::tree::{self, Written};
use crate::worlds;

/// Writes a lab into the empty folder `dest` and says what the base tree
/// held; `pointer` puts the lab's real commands in the guide's header.
pub fn build(
    repo: &CourseRepo,
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    handout: &Handout,
    dest: &Path,
    pointer: Option<&LabPointer<'_>>,
) -> Result<Written> {
    let git = &repo.git;
    let base = checkpoint.base(manifest.mode);
    let base_name = format!("{} {}", base.short, escape_control(&base.subject));
    let base_tree = repo.tree_of(base.oid)?;
    // The lab's `target/` is cargo's: a course tree's own `target` entries
    // (a link there would have cargo build through it) never reach it.
    let skip = |path: &[u8]| {
        worlds::is_tooling(path)
            || path.split(|&byte| byte == b'/').next() == Some(crate::repo::TARGET_DIR.as_bytes())
    };
    let written = tree::write_tree(git, &base_tree, dest, &skip)?;

    let target_tree = repo.tree_of(checkpoint.target.oid)?;
    let mut files = Vec::new();
    for file in manifest.target_files() {
        let file = file.as_str();
        let content = tree::file_at(git, &target_tree, file)?.ok_or_else(|| {
            let missing = [format!("`{file}`")];
            let short = &checkpoint.target.short;
            Error::bad_input(say::target_lacks_files(manifest.id, &missing, short))
        })?;
        files.push((file, content));
    }
    if manifest.mode == Mode::Rebuild {
        let starter = handout.starter.iter();
        files.extend(starter.map(|(file, content)| (file.as_str(), content.clone())));
    }
    let guide = say::guide_with_header(manifest, checkpoint, pointer, &handout.guide);
    files.push((chapter::GUIDE_FILE, guide.into_bytes()));
    if let Some(tutor) = &handout.tutor {
        files.push((chapter::TUTOR_FILE, tutor.as_bytes().to_vec()));
    }
    for (file, content) in files {
        safe_fs::write_inside(dest, Path::new(file), &content, 0o644).map_err(|refusal| {
            let at = refusal.at.display().to_string();
            Error::bad_input(if refusal.is_symlink() {
                say::lab_tree_symlink(&base_name, &at, file)
            } else {
                say::lab_cannot_add(file, &base_name, &say::refusal(&refusal))
            })
        })?;
    }
    Ok(written)
}
