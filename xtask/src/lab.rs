//! Building a lab: the folder a learner practises a chapter in. `practice`
//! builds one for the learner and `verify`'s leak proof builds the same, so
//! the two can never drift apart.
//!
//! A lab holds the base tree (the parent's when rebuilding, the target's
//! when observing) without the tooling, the target's files for the chapter
//! ([`Manifest::target_files`]: the focused test, each step's own test file
//! and the `labFiles`, each over the base's version), the chapter's guide
//! with a header and the course's tutor protocol. Nothing else from the
//! target, so the answer never leaks. Nothing is written through a symlink
//! of the base tree: one on the way to a file is refused; one at a file's or
//! the guide's own path is replaced, never followed.

use std::path::Path;

use crate::chapter::{self, Handout};
use crate::error::{Error, Result};
use crate::learner_text::{self as say, LabPointer};
use crate::locate::Checkpoint;
use crate::manifest::Manifest;
use crate::out::escape_control;
use crate::repo::CourseRepo;
use crate::safe_fs::{self, Refusal};
use crate::tree::{self, Written};
use crate::worlds;

/// Writes a lab's content into the empty folder `dest` and says what the
/// base tree held. `pointer`, when given, puts the lab's real commands in
/// the guide's header (`practice` knows where the lab will be; `verify`'s
/// labs have no such place).
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
    for file in manifest.target_files() {
        let file = file.as_str();
        let content = tree::file_at(git, &target_tree, file)?.ok_or_else(|| {
            Error::bad_input(say::target_lacks_files(
                manifest.id,
                &[format!("`{file}`")],
                &checkpoint.target.short,
            ))
        })?;
        safe_fs::write_inside(dest, Path::new(file), &content, 0o644)
            .map_err(|refusal| refused(&refusal, &base_name, file))?;
    }

    let with_header = say::guide_with_header(manifest, checkpoint, pointer, &handout.guide);
    let handed_out = std::iter::once((chapter::GUIDE_FILE, with_header.as_str())).chain(
        handout
            .tutor
            .as_deref()
            .map(|tutor| (chapter::TUTOR_FILE, tutor)),
    );
    for (file, content) in handed_out {
        safe_fs::write_inside(dest, Path::new(file), content.as_bytes(), 0o644)
            .map_err(|refusal| refused(&refusal, &base_name, file))?;
    }
    Ok(written)
}

/// The error for a file the lab cannot take.
fn refused(refusal: &Refusal, base: &str, file: &str) -> Error {
    if refusal.is_symlink() {
        Error::bad_input(say::lab_tree_symlink(
            base,
            &refusal.at.display().to_string(),
            file,
        ))
    } else {
        Error::bad_input(say::lab_cannot_add(file, base, &say::refusal(refusal)))
    }
}
