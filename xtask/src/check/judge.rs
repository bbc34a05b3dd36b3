//! The position from the runs' reports: whether it compiled, each compile
//! error once with the teaching file where its fix goes, each step's row,
//! the first failing test, and whether the whole chapter is complete.

use std::path::Path;

use super::run::RunResult;
use super::{ErrorAt, Position, StepStatus, tests_intact, trace};
use crate::libtest::{Failure, Report};
use crate::manifest::{Manifest, Step};
use crate::runner::Captured;
use crate::safe_fs;

/// Fills in the position from the runs' reports.
pub(super) fn judge(
    manifest: &Manifest,
    position: &mut Position,
    runs: &[RunResult<'_>],
    crate_root: Option<&trace::CrateRoot>,
) {
    let report_of = |command: &[String]| {
        runs.iter()
            .find(|run| run.command == command)
            .and_then(|run| run.report.as_ref())
    };
    let report = focused(runs).0;
    position.timed_out = runs
        .iter()
        .filter_map(|run| run.captured.as_ref())
        .any(|captured| captured.timed_out);
    position.compiled = runs
        .iter()
        .filter_map(|run| run.report.as_ref())
        .all(|report| report.compiled && report.ran);
    position.passed = report.passed.len();
    position.ran = report.passed.len() + report.failed.len();
    position.errors = errors_at(manifest, &position.lab, runs, crate_root);
    position.steps = manifest
        .steps
        .iter()
        .map(|step| step_status(manifest, step, report_of(step.run(manifest)), position))
        .collect();
    (position.first_failure, position.first_failure_step) = first_failure(manifest, runs);
    position.complete = complete(manifest, position, runs);
    position.output = output(runs);
    position.unexplained = unexplained(runs);
}

/// The focused run's report and capture; it comes first and always runs.
fn focused<'r>(runs: &'r [RunResult<'_>]) -> (&'r Report, &'r Captured) {
    let main = &runs[0];
    let report = main.report.as_ref().expect("the focused run always runs");
    let captured = main.captured.as_ref().expect("the focused run always runs");
    (report, captured)
}

/// The whole chapter passes: the focused tests (at least one, as many as
/// expected, none failed), every run, every step, in time, and the lab's
/// test files are the target's.
fn complete(manifest: &Manifest, position: &Position, runs: &[RunResult<'_>]) -> bool {
    let (report, captured) = focused(runs);
    let focused_green = captured.success
        && report.failed.is_empty()
        && position.passed >= 1
        && manifest
            .expected_tests
            .is_none_or(|count| position.passed == count);
    let runs_green = runs
        .iter()
        .filter_map(|run| run.captured.as_ref())
        .all(|captured| captured.success);
    focused_green
        && runs_green
        && !position.timed_out
        && position.steps.iter().all(|step| step.green)
        && position.changed_tests.is_empty()
        && position.changed_build_config.is_empty()
        && position.tests_verified
}

/// The runs' output as a person reads it: libtest's text, else all of it.
fn output(runs: &[RunResult<'_>]) -> String {
    runs.iter()
        .filter_map(|run| {
            let text = &run.report.as_ref()?.text;
            Some(if text.is_empty() {
                run.captured.as_ref()?.output.clone()
            } else {
                text.clone()
            })
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The output of the first run that failed with neither a compile error
/// nor a failing test.
fn unexplained(runs: &[RunResult<'_>]) -> Option<String> {
    runs.iter().find_map(|run| {
        let (report, captured) = (run.report.as_ref()?, run.captured.as_ref()?);
        let unexplained = !captured.success
            && !captured.timed_out
            && report.failed.is_empty()
            && report.errors.is_empty();
        unexplained.then(|| {
            if report.text.is_empty() {
                captured.output.clone()
            } else {
                report.text.clone()
            }
        })
    })
}

/// Every compile error of the runs, once, with the teaching file where its
/// fix goes: from the target's crate root when the error is about what it
/// declares ([`trace::CrateRoot::advice`]), else from the spans and imports.
fn errors_at(
    manifest: &Manifest,
    lab: &Path,
    runs: &[RunResult<'_>],
    crate_root: Option<&trace::CrateRoot>,
) -> Vec<ErrorAt> {
    let imports = trace::imports(manifest, lab);
    let teaching = &manifest.teaching_files;
    let mut errors: Vec<ErrorAt> = Vec::new();
    for report in runs.iter().filter_map(|run| run.report.as_ref()) {
        for error in &report.errors {
            let seen = errors
                .iter()
                .any(|known| known.rendered == error.rendered && known.message == error.message);
            if seen {
                continue;
            }
            let advice = crate_root
                .and_then(|root| root.advice(error, teaching, lab))
                .unwrap_or_else(|| {
                    let file = trace::teaching_file_for(error, teaching, &imports);
                    trace::Advice {
                        file: file.map(|file| file.to_string()),
                        missing: file.is_some_and(|file| {
                            safe_fs::read_inside(lab, Path::new(file.as_str()))
                                .is_ok_and(|f| f.is_none())
                        }),
                        ..trace::Advice::default()
                    }
                });
            errors.push(ErrorAt {
                message: error.message.clone(),
                location: error.location.clone(),
                teaching_file: advice.file,
                teaching_file_missing: advice.missing,
                declarations: advice.declarations,
                new_file: advice.new_file,
                rendered: error.rendered.clone(),
            });
        }
    }
    errors
}

/// The first failing test: the focused run's, else the first step run's
/// (with that step's id). Tests run in parallel and finish in any order, so
/// "first" is the chapter's order: a failure of the earliest step whose
/// filter selects one, by name among several.
fn first_failure(manifest: &Manifest, runs: &[RunResult<'_>]) -> (Option<Failure>, Option<String>) {
    let failed_in = |command: &[String]| {
        let report = runs
            .iter()
            .find(|run| run.command == command)
            .and_then(|run| run.report.as_ref())?;
        let mut failed: Vec<&Failure> = report.failed.iter().collect();
        failed.sort_by(|a, b| a.name.cmp(&b.name));
        let in_step_order = manifest
            .steps
            .iter()
            .filter(|step| step.run(manifest) == command)
            .find_map(|step| failed.iter().find(|f| f.name.contains(&step.filter)));
        in_step_order.or(failed.first()).copied()
    };
    if let Some(failure) = failed_in(&manifest.run) {
        return (Some(failure.clone()), None);
    }
    manifest
        .steps
        .iter()
        .filter(|step| step.run.is_some())
        .find_map(|step| {
            Some((
                Some(failed_in(step.run(manifest))?.clone()),
                Some(step.id.clone()),
            ))
        })
        .unwrap_or((None, None))
}

/// A step is green when its tests ran (at least one), all passed, as many
/// as it expects, its own test file (if any) is the target's, and the lab
/// builds the way its base does.
fn step_status(
    manifest: &Manifest,
    step: &Step,
    report: Option<&Report>,
    position: &Position,
) -> StepStatus {
    let (passed, ran) = report.map_or((0, 0), |report| report.count(&step.filter));
    let trusted = tests_intact::test_file_intact(step, &position.changed_tests)
        && position.changed_build_config.is_empty();
    StepStatus {
        id: step.id.clone(),
        shown_id: crate::manifest::shown(&step.id).into_owned(),
        title: step.title.clone(),
        filter: step.filter.clone(),
        own_run: step.run(manifest) != manifest.run.as_slice(),
        passed,
        ran,
        expected: step.expected_tests,
        green: ran >= 1 && passed == ran && passed == step.expected_tests && trusted,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_step_in_which_no_test_ran_is_red_whatever_it_expects() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "id": "01", "title": "t", "focusedTest": "t.rs", "teachingFiles": [],
            "run": ["cargo", "test"],
            "steps": [{"id": "1.1", "filter": "renamed", "expectedTests": 0}]
        }))
        .unwrap();
        let position = Position {
            focused_test_present: true,
            tests_verified: true,
            compiled: true,
            ..Position::default()
        };
        let report = Report {
            passed: vec!["adds".to_string()],
            ..Report::default()
        };
        let status = step_status(&manifest, &manifest.steps[0], Some(&report), &position);
        assert_eq!((status.passed, status.ran, status.green), (0, 0, false));
    }
    #[test]
    fn the_first_failure_is_the_earliest_steps_whatever_order_they_finished_in() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "id": "01", "title": "t", "focusedTest": "t.rs", "teachingFiles": [],
            "run": ["cargo", "test"],
            "steps": [
                {"id": "1.1", "filter": "lab1_1", "expectedTests": 1},
                {"id": "1.2", "filter": "lab1_2", "expectedTests": 2},
                {"id": "1.3", "filter": "", "expectedTests": 3}
            ]
        }))
        .unwrap();
        let failure = |name: &str| Failure {
            name: name.to_string(),
            message: String::new(),
        };
        let report = Report {
            failed: vec![
                failure("lab1_3_c"),
                failure("lab1_2_b"),
                failure("lab1_2_a"),
            ],
            ..Report::default()
        };
        let runs = [RunResult {
            command: &manifest.run,
            report: Some(report),
            captured: None,
        }];
        let (first, step) = first_failure(&manifest, &runs);
        assert_eq!(first.map(|f| f.name), Some("lab1_2_a".to_string()));
        assert_eq!(step, None, "a failure of the focused run names no step run");
    }
}
