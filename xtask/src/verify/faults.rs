//! **faults**: each declared fault, written into one private copy of the
//! target (never through a symlink) and taken out again, makes its
//! `failingTest` fail in the run that holds it.

use std::path::Path;

use super::Chapter;
use super::work::{Work, progress};
use crate::error::{Error, Result};
use crate::libtest;
use crate::manifest::Fault;
use crate::safe_fs;

/// Every fault is caught; the problems of all of them are reported at once.
pub(super) fn faults(work: &Work, chapter: &Chapter) -> Result<String> {
    let dir = work.target(chapter, "faults")?;
    let mut problems = Vec::new();
    for fault in &chapter.manifest.faults {
        problems.extend(caught(work, chapter, &dir, fault)?);
    }
    if problems.is_empty() {
        Ok(format!("{} fault(s) caught", chapter.manifest.faults.len()))
    } else {
        Err(Error::check_failed(problems.join("; ")))
    }
}

/// Applies `fault` to the copy in `dir`, runs its run and takes it out:
/// `None` when its test caught it, else what went wrong.
fn caught(work: &Work, chapter: &Chapter, dir: &Path, fault: &Fault) -> Result<Option<String>> {
    let file = Path::new(fault.file.as_str());
    let id = &fault.id;
    let refused = |refusal| Error::from(refusal).context(format!("fault `{id}` in the target"));
    let bytes = safe_fs::read_inside(dir, file)
        .map_err(refused)?
        .ok_or_else(|| {
            Error::check_failed(format!("fault {id}: {} is not in the target", fault.file))
        })?;
    let original = String::from_utf8_lossy(&bytes);
    let found = original.matches(fault.find.as_str()).count();
    if found != 1 {
        return Ok(Some(format!(
            "fault `{id}`: its `find` text occurs {found} times in {} (it must occur exactly once)",
            fault.file
        )));
    }
    let faulty = original.replacen(&fault.find, &fault.replace, 1);
    safe_fs::write_inside(dir, file, faulty.as_bytes(), 0o644).map_err(refused)?;
    progress(chapter.id(), &format!("faults: `{id}` in {}", fault.file));
    let run = fault.run(&chapter.manifest);
    let ran = work.run(chapter, "faults", dir, run);
    safe_fs::write_inside(dir, file, &bytes, 0o644).map_err(refused)?;
    let report = libtest::parse(&ran?.output);
    if !report.compiled {
        return Ok(Some(format!(
            "fault `{id}` does not compile: make it a behaviour change"
        )));
    }
    if report.failed_test(&fault.failing_test) {
        return Ok(None);
    }
    let failing: Vec<String> = (report.failed.iter())
        .map(|failure| format!("`{}`", failure.name))
        .collect();
    let seen = match failing.is_empty() {
        true => "every test passed".to_string(),
        false => format!("failing: {}", failing.join(", ")),
    };
    Ok(Some(format!(
        "fault `{id}` was not caught by `{}` in `{}` ({seen}): strengthen the focused test",
        fault.failing_test,
        run.join(" ")
    )))
}
