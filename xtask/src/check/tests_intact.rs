//! Whether the lab's test files from the target are still the target's,
//! and `check --restore-tests`.

use std::path::Path;

use super::ChangedTest;
use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::locate;
use crate::manifest::{Manifest, RepoPath, Step};
use crate::out::{relative_or_absolute, shell_word};
use crate::repo::CourseRepo;
use crate::safe_fs;
use crate::tree;

/// The lab's test files that are not the target's, and false when the
/// target lacks one (the lab's tests cannot all be verified).
#[allow(clippy::type_complexity)]
fn not_the_targets<'m>(
    repo: &CourseRepo,
    manifest: &'m Manifest,
    lab: &Path,
) -> Result<Option<(Vec<(&'m RepoPath, Vec<u8>, bool)>, bool)>> {
    let Ok(checkpoint) = locate::locate(&repo.git, manifest.id) else {
        return Ok(None);
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
            changed.push((test, expected, missing));
        }
    }
    Ok(Some((changed, verified)))
}

/// The lab's changed or missing test files, and whether the target could tell.
pub(super) fn changed_tests(
    repo: &CourseRepo,
    manifest: &Manifest,
    lab: &Path,
) -> Result<(Vec<ChangedTest>, bool)> {
    let Some((changed, verified)) = not_the_targets(repo, manifest, lab)? else {
        return Ok((Vec::new(), false));
    };
    // The command a learner types at the repository root, as for `compare`.
    let lab_word = shell_word(&relative_or_absolute(lab, &repo.canonical_root));
    let restore = format!(
        "cargo xtask check {} {lab_word} --restore-tests",
        manifest.id
    );
    let changed = changed.into_iter().map(|(test, _, missing)| ChangedTest {
        path: test.to_string(),
        missing,
        restore: restore.clone(),
    });
    Ok((changed.collect(), verified))
}

/// Writes the target's version of every changed or missing lab test file.
pub(super) fn restore(repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> Result<Vec<String>> {
    let Some((changed, _)) = not_the_targets(repo, manifest, lab)? else {
        let id = manifest.id.to_string();
        return Err(Error::bad_input(say::cannot_restore_tests(&id)));
    };
    let mut restored = Vec::new();
    for (test, content, _) in changed {
        safe_fs::write_inside(lab, Path::new(test.as_str()), &content, 0o644).map_err(
            |refusal| {
                let message = say::cannot_restore_test(test.as_str(), &say::refusal(&refusal));
                match Error::from(refusal).exit_code() {
                    3 => Error::environment(message),
                    _ => Error::bad_input(message),
                }
            },
        )?;
        restored.push(test.to_string());
    }
    Ok(restored)
}

/// How `step`'s own test file differs from the target's, if it does.
pub(super) fn own_test_change<'c>(
    step: &Step,
    changed: &'c [ChangedTest],
) -> Option<&'c ChangedTest> {
    let file = step.test_file.as_ref()?;
    changed.iter().find(|changed| changed.path == file.as_str())
}

/// How to bring a deleted focused test back.
pub(super) fn restore_hint(manifest: &Manifest, changed: &[ChangedTest]) -> String {
    let test = manifest.focused_test.as_str();
    match changed.iter().find(|changed| changed.path == test) {
        Some(changed) => say::focused_test_missing(test, &changed.restore),
        None => say::focused_test_missing_no_history(test, &manifest.id.to_string()),
    }
}
