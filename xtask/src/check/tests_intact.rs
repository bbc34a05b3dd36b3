//! Whether the test files the lab got from the target (the focused test, a
//! step's own test file) are still the target's, byte for byte, and the
//! command that writes a changed or missing one back.

use std::path::Path;

use super::ChangedTest;
use crate::error::Result;
use crate::learner_text as say;
use crate::locate;
use crate::manifest::{Manifest, Step};
use crate::out::shell_word;
use crate::repo::CourseRepo;
use crate::safe_fs;
use crate::tree;

/// The lab's test files from the target that are changed or missing, and
/// whether the target could be read to tell.
pub(super) fn changed_tests(
    repo: &CourseRepo,
    manifest: &Manifest,
    lab: &Path,
) -> Result<(Vec<ChangedTest>, bool)> {
    let Ok(checkpoint) = locate::locate(&repo.git, manifest.id) else {
        return Ok((Vec::new(), false));
    };
    let target_tree = repo.tree_of(checkpoint.target.oid)?;
    let mut changed = Vec::new();
    let mut verified = true;
    for test in manifest.lab_tests() {
        let Some(expected) = tree::file_at(&repo.git, &target_tree, test.as_str())? else {
            verified = false;
            continue;
        };
        // A symlink or a folder in its place is no copy of the target's file.
        let actual = safe_fs::read_inside(lab, Path::new(test.as_str()));
        let missing = matches!(actual, Ok(None));
        if actual.ok().flatten().as_deref() != Some(expected.as_slice()) {
            let restore = restore_command(
                &repo.root,
                &checkpoint.target.short,
                test.as_str(),
                &test.under(lab),
            );
            changed.push(ChangedTest {
                path: test.to_string(),
                missing,
                restore,
            });
        }
    }
    Ok((changed, verified))
}

/// The shell command that writes `path` as commit `commit` has it to
/// `dest`: `git -C ROOT show COMMIT:PATH > DEST`, every word quoted as the
/// shell needs, the root as the user would type it (no trailing `/`).
fn restore_command(root: &Path, commit: &str, path: &str, dest: &Path) -> String {
    let root = root.display().to_string();
    let root = match root.trim_end_matches('/') {
        "" => &root,
        trimmed => trimmed,
    };
    format!(
        "git -C {} show {} > {}",
        shell_word(root),
        shell_word(&format!("{commit}:{path}")),
        shell_word(&dest.display().to_string()),
    )
}

/// True when `step`'s own test file is gone from the lab.
pub(super) fn test_file_missing(step: &Step, changed: &[ChangedTest]) -> bool {
    step.test_file.as_ref().is_some_and(|file| {
        changed
            .iter()
            .any(|changed| changed.missing && changed.path == file.as_str())
    })
}

/// True when `step` has no test file of its own, or it is the target's.
pub(super) fn test_file_intact(step: &Step, changed: &[ChangedTest]) -> bool {
    step.test_file
        .as_ref()
        .is_none_or(|file| !changed.iter().any(|changed| changed.path == file.as_str()))
}

/// How to bring a deleted focused test back.
pub(super) fn restore_hint(repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> String {
    let test = &manifest.focused_test;
    match locate::locate(&repo.git, manifest.id) {
        Ok(checkpoint) => say::focused_test_missing(
            test.as_str(),
            &restore_command(
                &repo.root,
                &checkpoint.target.short,
                test.as_str(),
                &test.under(lab),
            ),
        ),
        Err(_) => say::focused_test_missing_no_history(test.as_str(), &manifest.id.to_string()),
    }
}
