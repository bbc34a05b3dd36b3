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
    // The root as the user would type it (no trailing `/`).
    let root = repo.root.components().as_path().display().to_string();
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
            let restore = format!(
                "git -C {} show {} > {}",
                shell_word(&root),
                shell_word(&format!("{}:{test}", checkpoint.target.short)),
                shell_word(&test.under(lab).display().to_string()),
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

/// How `step`'s own test file differs from the target's, if it has one
/// and it does.
pub(super) fn own_test_change<'c>(
    step: &Step,
    changed: &'c [ChangedTest],
) -> Option<&'c ChangedTest> {
    let file = step.test_file.as_ref()?;
    changed.iter().find(|changed| changed.path == file.as_str())
}

/// How to bring a deleted focused test back (`changed`: the lab's changed
/// tests, which name it when the target could be read).
pub(super) fn restore_hint(manifest: &Manifest, changed: &[ChangedTest]) -> String {
    let test = manifest.focused_test.as_str();
    match changed.iter().find(|changed| changed.path == test) {
        Some(changed) => say::focused_test_missing(test, &changed.restore),
        None => say::focused_test_missing_no_history(test, &manifest.id.to_string()),
    }
}
