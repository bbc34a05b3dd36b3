//! The proofs that run a lab's tests, each in a folder of its own:
//!
//! * **parent** — the lab without any lab test (the focused test and every
//!   step's own test file) builds and its whole test suite passes; of the
//!   `labFiles` it keeps only the build files (a `Cargo.toml` or
//!   `Cargo.lock`), since the others (the chapter's examples) need the
//!   answer;
//! * **red** — with the lab tests, the chapter's run and each step's own run
//!   fail, by a compile error or a failing test, and the chapter run's
//!   output holds every `red` string;
//! * **green** — at the target the chapter's run passes exactly
//!   `expectedTests`, each step's own run passes, and the whole workspace's
//!   tests pass;
//! * **steps** — at the target each step's filter passes exactly its count,
//!   within the step's own run.
//!
//! A run in which no lab test ran (all ignored, a filter that matches
//! nothing, a renamed test) proves nothing: it fails, whatever the manifest's
//! counts say or omit.

use std::fs;
use std::path::Path;

use super::Chapter;
use super::work::{Work, tail};
use crate::error::{self, Error, Result};
use crate::libtest::{self, Report};
use crate::manifest::{self, Manifest, Mode, RepoPath, Step};

/// The command that runs a learner workspace's whole test suite.
pub const SUITE: [&str; 3] = ["cargo", "test", "--workspace"];

/// The lab without any lab test is a working workspace.
pub(super) fn parent(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = Manifest {
        mode: Mode::Rebuild,
        lab_files: chapter
            .manifest
            .lab_files
            .iter()
            .filter(|file| is_build_file(file))
            .cloned()
            .collect(),
        ..chapter.manifest.clone()
    };
    let dir = work.lab(chapter, "parent", &manifest)?;
    let tests = chapter.manifest.lab_tests();
    for test in &tests {
        let path = test.under(&dir);
        fs::remove_file(&path).map_err(error::io(format!("cannot remove {}", path.display())))?;
    }
    let (report, _) = work.passing(chapter, "parent", &dir, &suite(), &[])?;
    Ok(format!(
        "{} test(s) pass at {} without the {} lab test file(s)",
        report.passed.len(),
        chapter.checkpoint.parent.short,
        tests.len()
    ))
}

/// A `Cargo.toml` or `Cargo.lock`: a lab file the parent builds with.
fn is_build_file(file: &RepoPath) -> bool {
    let name = Path::new(file.as_str()).file_name();
    name == Some("Cargo.toml".as_ref()) || name == Some("Cargo.lock".as_ref())
}

/// With the lab tests, every run of the chapter fails at the parent.
pub(super) fn red(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = &chapter.manifest;
    let parent = &chapter.checkpoint.parent;
    let rebuild = Manifest {
        mode: Mode::Rebuild,
        ..manifest.clone()
    };
    let dir = work.lab(chapter, "red", &rebuild)?;
    let runs = manifest.runs();
    for (index, run) in runs.iter().enumerate() {
        let captured = work.run(chapter, "red", &dir, run, &[])?;
        let shown = run.join(" ");
        if captured.success {
            return Err(Error::check_failed(format!(
                "the parent {} already passes `{shown}`: it must fail before the chapter's layer",
                parent.short
            )));
        }
        let report = libtest::parse(&captured.output);
        if report.compiled && report.failed.is_empty() {
            return Err(Error::check_failed(format!(
                "`{shown}` fails at the parent {}, but by neither a compile error nor a failing \
                 test, so it proves nothing (does `run` name a test that exists?):\n{}",
                parent.short,
                tail(&captured.output)
            )));
        }
        if index == 0 {
            let missing: Vec<String> = manifest
                .red
                .iter()
                .filter(|red| !captured.output.contains(red.as_str()))
                .map(|red| format!("`{}`", manifest::shown(red)))
                .collect();
            if !missing.is_empty() {
                return Err(Error::check_failed(format!(
                    "the parent fails, but its output lacks {}",
                    missing.join(", ")
                )));
            }
        }
    }
    Ok(format!(
        "{} run(s) fail at {}, with all {} red string(s)",
        runs.len(),
        parent.short,
        manifest.red.len()
    ))
}

/// The target passes every run with its counts, and its whole suite.
pub(super) fn green(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = &chapter.manifest;
    let dir = work.target(chapter, "green")?;
    let (report, output) = work.passing(chapter, "green", &dir, &manifest.run, &[])?;
    let focused = counted(
        &report,
        &output,
        manifest.expected_tests,
        "the chapter's run",
    )?;
    let mut shown = vec![format!("{focused} focused")];
    for run in manifest.runs().into_iter().skip(1) {
        let (report, output) = work.passing(chapter, "green", &dir, run, &[])?;
        // A step of this run without a filter declares the run's count.
        let expected = manifest
            .steps
            .iter()
            .find(|step| step.run(manifest) == run && step.filter.is_empty())
            .map(|step| step.expected_tests);
        let what = format!("`{}`", run.join(" "));
        let passed = counted(&report, &output, expected, &what)?;
        shown.push(format!("{passed} in {what}"));
    }
    let (suite, _) = work.passing(chapter, "green", &dir, &suite(), &[])?;
    Ok(format!(
        "{} and {} test(s) in all pass at {}",
        shown.join(", "),
        suite.passed.len(),
        chapter.checkpoint.target.short
    ))
}

/// Each step's filter passes exactly its count, in a target folder of the
/// steps' own.
pub(super) fn steps(work: &Work, chapter: &Chapter) -> Result<String> {
    let manifest = &chapter.manifest;
    if manifest.steps.is_empty() {
        return Ok("no steps declared".to_string());
    }
    let dir = work.target(chapter, "steps")?;
    let mut shown = Vec::new();
    for step in &manifest.steps {
        let label = label(step);
        let filter: Vec<String> = Some(step.filter.clone())
            .filter(|filter| !filter.is_empty())
            .into_iter()
            .collect();
        let what = format!("step {} ({label})", manifest::shown(&step.id));
        let (report, output) = work
            .passing(chapter, "steps", &dir, step.run(manifest), &filter)
            .map_err(|error| error.context(&what))?;
        let passed = counted(&report, &output, Some(step.expected_tests), &what)?;
        shown.push(format!(
            "{} {label} {passed}/{}",
            manifest::shown(&step.id),
            step.expected_tests
        ));
    }
    Ok(shown.join(", "))
}

/// A step's filter as shown: `(all)` for the empty one.
fn label(step: &Step) -> String {
    if step.filter.is_empty() {
        "(all)".to_string()
    } else {
        manifest::shown(&step.filter).into_owned()
    }
}

/// How many tests passed in a run that must have run its tests: at least
/// one passed, none was ignored, and exactly `expected` when given.
fn counted(report: &Report, output: &str, expected: Option<usize>, what: &str) -> Result<usize> {
    let passed = report.passed.len();
    let ignored = ignored_tests(output);
    if !ignored.is_empty() {
        return Err(Error::check_failed(format!(
            "{what} ignored {}: every lab test must run (remove `#[ignore]`)",
            ignored
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
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

/// The tests libtest reports as ignored (`test NAME ... ignored`, with or
/// without a reason).
fn ignored_tests(output: &str) -> Vec<&str> {
    output
        .lines()
        .filter_map(|line| {
            let (name, status) = line.strip_prefix("test ")?.split_once(" ... ")?;
            status.starts_with("ignored").then_some(name)
        })
        .collect()
}

fn suite() -> Vec<String> {
    SUITE.iter().map(|word| word.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "running 3 tests\ntest adds ... ok\ntest slow ... ignored\n\
                          test later ... ignored, not yet\ntest result: ok. 1 passed; 0 failed; 2 ignored\n";

    #[test]
    fn ignored_tests_are_named_with_or_without_a_reason() {
        assert_eq!(ignored_tests(OUTPUT), ["slow", "later"]);
        assert!(ignored_tests("test adds ... ok\n").is_empty());
    }

    #[test]
    fn a_run_counts_only_when_a_test_ran_and_none_was_ignored() {
        let report = libtest::parse(OUTPUT);
        let error = counted(&report, OUTPUT, Some(1), "run").unwrap_err();
        assert!(
            error.to_string().contains("ignored `slow`, `later`"),
            "{error}"
        );

        let none = "running 0 tests\ntest result: ok. 0 passed; 0 failed\n";
        for expected in [None, Some(0)] {
            let error = counted(&libtest::parse(none), none, expected, "run").unwrap_err();
            assert!(error.to_string().contains("ran no test"), "{error}");
        }

        let two = "test a ... ok\ntest b ... ok\n";
        assert_eq!(counted(&libtest::parse(two), two, None, "run").unwrap(), 2);
        assert_eq!(
            counted(&libtest::parse(two), two, Some(2), "run").unwrap(),
            2
        );
        let error = counted(&libtest::parse(two), two, Some(3), "run").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("passed 2 test(s), expected exactly 3")
        );
    }
}
