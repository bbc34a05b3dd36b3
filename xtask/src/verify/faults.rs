//! **faults** — each declared fault, applied to a private copy of the
//! target, makes its `failingTest` fail in the run that holds it: the
//! chapter's run, or the own run of the step the fault names. The fault is
//! written into the copy only, never through a symlink of the target tree.

use std::path::Path;

use super::Chapter;
use super::work::{Work, progress};
use crate::error::{Error, Result};
use crate::libtest;
use crate::manifest::{Fault, RepoPath};
use crate::safe_fs;

/// Every fault is caught; the problems of all of them are reported at once.
pub(super) fn faults(work: &Work, chapter: &Chapter) -> Result<String> {
    let mut problems = Vec::new();
    for (index, fault) in chapter.manifest.faults.iter().enumerate() {
        if let Some(problem) = caught(work, chapter, index, fault)? {
            problems.push(problem);
        }
    }
    if problems.is_empty() {
        Ok(format!("{} fault(s) caught", chapter.manifest.faults.len()))
    } else {
        Err(Error::check_failed(problems.join("; ")))
    }
}

/// Applies fault number `index` to a fresh copy of the target and runs its
/// run: `None` when its test caught it, else what went wrong.
fn caught(work: &Work, chapter: &Chapter, index: usize, fault: &Fault) -> Result<Option<String>> {
    let manifest = &chapter.manifest;
    let dir = work.target(chapter, &format!("fault-{index}"))?;
    let file = Path::new(fault.file.as_str());
    let refused = |refusal: safe_fs::Refusal| fault_refused(&fault.id, &fault.file, refusal);
    let original = safe_fs::read_inside(&dir, file)
        .map_err(refused)?
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .ok_or_else(|| {
            Error::check_failed(format!(
                "fault {}: {} is not in the target",
                fault.id, fault.file
            ))
        })?;
    let found = original.matches(fault.find.as_str()).count();
    if found != 1 {
        return Ok(Some(format!(
            "fault `{}`: its `find` text occurs {found} times in {} (it must occur exactly once)",
            fault.id, fault.file
        )));
    }
    let faulty = original.replacen(&fault.find, &fault.replace, 1);
    safe_fs::write_inside(&dir, file, faulty.as_bytes(), 0o644).map_err(refused)?;
    progress(
        chapter.id(),
        &format!("faults: `{}` in {}", fault.id, fault.file),
    );
    let run = work.run(chapter, "faults", &dir, fault.run(manifest), &[])?;
    let report = libtest::parse(&run.output);
    if !report.compiled {
        return Ok(Some(format!(
            "fault `{}` does not compile: make it a behaviour change",
            fault.id
        )));
    }
    if report.failed_test(&fault.failing_test) {
        return Ok(None);
    }
    let seen = if report.failed.is_empty() {
        "every test passed".to_string()
    } else {
        let failing: Vec<String> = report
            .failed
            .iter()
            .map(|failure| format!("`{}`", failure.name))
            .collect();
        format!("failing: {}", failing.join(", "))
    };
    Ok(Some(format!(
        "fault `{}` was not caught by `{}` in `{}` ({seen}): strengthen the focused test",
        fault.id,
        fault.failing_test,
        fault.run(manifest).join(" ")
    )))
}

/// A fault's file that is a symlink (or lies behind one) in the target tree:
/// faults are only ever written into the private copy.
fn fault_refused(id: &str, file: &RepoPath, refusal: safe_fs::Refusal) -> Error {
    let why = if refusal.is_symlink() {
        format!("passes through the symlink `{}`", refusal.at.display())
    } else {
        refusal.to_string()
    };
    Error::bad_input(format!(
        "fault `{id}`: {file} {why} in the target tree: faults are applied to real files only"
    ))
}
