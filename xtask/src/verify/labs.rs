//! **parent**, **red**, **green** and **steps** (README, "verify's proofs"):
//! a run in which no lab test ran proves nothing and fails.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::Chapter;
use super::work::{Work, tail};
use crate::chapter::{self, Handout};
use crate::checkpoint::{self, Role};
use crate::error::{self, Error, Result};
use crate::libtest::{self, Report};
use crate::manifest::{self, Manifest, Mode, Step};

/// The command that runs a learner workspace's whole test suite.
fn suite() -> Vec<String> {
    ["cargo", "test", "--workspace"].map(String::from).to_vec()
}

/// The lab without any lab test or starter is a working workspace.
pub(super) fn parent(work: &Work, chapter: &Chapter) -> Result<String> {
    let is_build_file = |file: &&manifest::RepoPath| {
        let name = Path::new(file.as_str()).file_name();
        name == Some("Cargo.toml".as_ref()) || name == Some("Cargo.lock".as_ref())
    };
    let manifest = Manifest {
        mode: Mode::Rebuild,
        lab_files: (chapter.manifest.lab_files.iter())
            .filter(is_build_file)
            .cloned()
            .collect(),
        ..chapter.manifest.clone()
    };
    // The starting point itself: a starter may need the learner's changes
    // to files it leaves out (chapter 05's `types.rs`) to build.
    let handout = Handout {
        starter: Vec::new(),
        ..chapter.handout.clone()
    };
    let dir = work.lab(chapter, "parent", &manifest, &handout)?;
    let tests = chapter.manifest.lab_tests();
    for test in &tests {
        let path = test.under(&dir);
        fs::remove_file(&path).map_err(error::io(format!("cannot remove {}", path.display())))?;
    }
    let report = work.passing(chapter, "parent", &dir, &suite())?;
    Ok(format!(
        "{} test(s) pass at {} without the {} lab test file(s)",
        report.passed.len(),
        chapter.checkpoint.parent.short,
        tests.len()
    ))
}

/// With the lab tests, every run of the chapter fails at the parent.
pub(super) fn red(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = &chapter.manifest;
    let parent = &chapter.checkpoint.parent.short;
    let rebuild = Manifest {
        mode: Mode::Rebuild,
        ..manifest.clone()
    };
    let dir = work.lab(chapter, "red", &rebuild, &chapter.handout)?;
    let runs = manifest.runs();
    for (index, run) in runs.iter().enumerate() {
        let captured = work.run(chapter, "red", &dir, run)?;
        let shown = run.join(" ");
        if captured.success {
            return Err(Error::check_failed(format!(
                "the parent {parent} already passes `{shown}`: it must fail before the chapter's layer"
            )));
        }
        let report = libtest::parse(&captured.output);
        if report.compiled && report.failed.is_empty() {
            return Err(Error::check_failed(format!(
                "`{shown}` fails at the parent {parent}, but by neither a compile error nor a \
                 failing test, so it proves nothing (does `run` name a test that exists?):\n{}",
                tail(&captured.output)
            )));
        }
        let missing: Vec<String> = (manifest.red.iter())
            .filter(|red| index == 0 && !captured.output.contains(red.as_str()))
            .map(|red| format!("`{}`", manifest::shown(red)))
            .collect();
        if !missing.is_empty() {
            return Err(Error::check_failed(format!(
                "the parent fails, but its output lacks {}",
                missing.join(", ")
            )));
        }
    }
    Ok(format!(
        "{} run(s) fail at {parent}, with all {} red string(s)",
        runs.len(),
        manifest.red.len()
    ))
}

/// The target (with the lab's tutor file) passes every run with its counts
/// and its whole suite, and a lab keeps no parent file the layer changes.
pub(super) fn green(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = &chapter.manifest;
    let dir = work.target(chapter, "green")?;
    // A lab's root holds the tutor file, and the answer must pass there too
    // (an example that reads the folder it runs in finds it).
    if let Some(tutor) = &chapter.handout.tutor {
        let file = Path::new(chapter::TUTOR_FILE);
        crate::safe_fs::write_inside(&dir, file, tutor.as_bytes(), 0o644)
            .map_err(|refusal| Error::from(refusal).context("the tutor file in the target"))?;
    }
    let mut shown = Vec::new();
    for (index, run) in manifest.runs().into_iter().enumerate() {
        let report = work.passing(chapter, "green", &dir, run)?;
        // The chapter's run has `expectedTests`; a step's own run has the
        // count of its step without a filter, if any.
        let unfiltered = |step: &&Step| step.run(manifest) == run && step.filter.is_empty();
        let step = manifest.steps.iter().find(unfiltered);
        let expected = match index {
            0 => manifest.expected_tests,
            _ => step.map(|step| step.expected_tests),
        };
        let what = format!("`{}`", run.join(" "));
        let passed = counted(&report, expected, &what)?;
        shown.push(format!("{passed} in {what}"));
    }
    let suite = work.passing(chapter, "green", &dir, &suite())?;
    // A lab keeps the parent's version of a file the layer changes but does
    // not hand out, and check runs the lab's whole suite: the answer there
    // must be the target's suite, less the files the layer adds.
    let files = checkpoint::changed_files(work.repo, manifest, &chapter.checkpoint, &[])?;
    let kept = (files.iter())
        .filter(|file| file.role == Role::Repository && file.status != 'A')
        .map(|file| format!("`{}`", file.path))
        .collect::<Vec<_>>();
    if manifest.mode == Mode::Rebuild && !kept.is_empty() {
        return Err(Error::check_failed(format!(
            "the layer changes {}, which a lab keeps as the parent has it: check runs the lab's \
             whole suite, so the answer would fail or pass there on an old file; list it in \
             `labFiles` or leave it unchanged",
            kept.join(", ")
        )));
    }
    Ok(format!(
        "{} and {} test(s) in all pass at {}",
        shown.join(", "),
        suite.passed.len(),
        chapter.checkpoint.target.short
    ))
}

/// Each step's filter passes exactly its count.
pub(super) fn steps(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = &chapter.manifest;
    if manifest.steps.is_empty() {
        return Ok("no steps declared".to_string());
    }
    let dir = work.target(chapter, "steps")?;
    let mut shown = Vec::new();
    for group in manifest.step_groups() {
        // The distinct tests the step's entries select, by run: `check`
        // counts them as one row of `expected_tests`.
        let mut selected = BTreeSet::new();
        for step in &group.entries {
            let mut command = step.run(manifest).to_vec();
            let label = match step.filter.as_str() {
                "" => "(all)".into(),
                filter => {
                    command.push(filter.to_string());
                    manifest::shown(filter)
                }
            };
            let what = format!("step {} ({label})", manifest::shown(&step.id));
            let report = work
                .passing(chapter, "steps", &dir, &command)
                .map_err(|error| error.context(&what))?;
            let passed = counted(&report, Some(step.expected_tests), &what)?;
            let expected = step.expected_tests;
            shown.push(format!(
                "{} {label} {passed}/{expected}",
                manifest::shown(&step.id)
            ));
            let run = step.run(manifest);
            selected.extend(report.passed.into_iter().map(|name| (run, name)));
        }
        let expected = group.expected_tests(manifest);
        if selected.len() != expected {
            return Err(Error::check_failed(format!(
                "step {} selects {} distinct test(s), but check counts {expected} for its row \
                 (an entry with an empty filter counts its run's tests, other entries add \
                 theirs): make its entries select distinct tests",
                manifest::shown(group.id),
                selected.len()
            )));
        }
    }
    Ok(shown.join(", "))
}

/// How many tests passed: at least one, none ignored, `expected` when given.
fn counted(report: &Report, expected: Option<usize>, what: &str) -> Result<usize> {
    let passed = report.passed.len();
    if !report.ignored.is_empty() {
        let ignored: Vec<String> = report.ignored.iter().map(|n| format!("`{n}`")).collect();
        return Err(Error::check_failed(format!(
            "{what} ignored {}: every lab test must run (remove `#[ignore]`)",
            ignored.join(", ")
        )));
    }
    if passed == 0 {
        return Err(Error::check_failed(format!(
            "{what} ran no test: a run in which no test ran proves nothing (does the filter \
             match a test, was a test renamed?)"
        )));
    }
    match expected {
        Some(expected) if passed != expected => Err(Error::check_failed(format!(
            "{what} passed {passed} test(s), expected exactly {expected}"
        ))),
        _ => Ok(passed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_counts_only_when_a_test_ran_and_none_was_ignored() {
        let output = "running 3 tests\ntest adds ... ok\ntest slow ... ignored\n\
                      test later ... ignored, not yet\ntest result: ok. 1 passed; 0 failed; 2 ignored\n";
        let error = counted(&libtest::parse(output), Some(1), "run").unwrap_err();
        assert!(
            error.to_string().contains("ignored `slow`, `later`"),
            "{error}"
        );

        let none = "running 0 tests\ntest result: ok. 0 passed; 0 failed\n";
        for expected in [None, Some(0)] {
            let error = counted(&libtest::parse(none), expected, "run").unwrap_err();
            assert!(error.to_string().contains("ran no test"), "{error}");
        }

        let two = libtest::parse("test a ... ok\ntest b ... ok\n");
        assert_eq!(counted(&two, None, "run").unwrap(), 2);
        assert_eq!(counted(&two, Some(2), "run").unwrap(), 2);
        let error = counted(&two, Some(3), "run").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("passed 2 test(s), expected exactly 3")
        );
    }
}
