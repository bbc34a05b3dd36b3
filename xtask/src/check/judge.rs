//! The position from the runs' reports: whether it compiled, each compile
//! error once with the teaching file where its fix goes, each step's row,
//! the first failing test, and whether the whole chapter is complete.

use std::collections::HashSet;

use super::run::RunResult;
use super::{ErrorAt, Position, StepStatus, tests_intact, trace};
use crate::libtest::{Failure, Report};
use crate::manifest::{Manifest, Step};

/// Fills in the position from the runs' reports.
pub(super) fn judge(
    manifest: &Manifest,
    position: &mut Position,
    runs: &[RunResult<'_>],
    tracer: &trace::Tracer<'_>,
) {
    let ran = || runs.iter().filter_map(|run| run.ran.as_ref());
    // The focused run comes first and always runs.
    let (report, _) = runs[0].ran.as_ref().expect("the focused run always runs");
    position.timed_out = ran().any(|(_, captured)| captured.timed_out);
    position.compiled = ran().all(|(report, _)| report.compiled && report.ran);
    position.passed = report.passed.len();
    position.ran = report.passed.len() + report.failed.len();
    position.errors = errors_at(runs, tracer);
    position.steps = manifest
        .steps
        .iter()
        .map(|step| {
            step_status(
                manifest,
                step,
                report_of(runs, step.run(manifest)),
                position,
            )
        })
        .collect();
    (position.first_failure, position.first_failure_step) = first_failure(manifest, runs);
    // The focused tests (at least one, as many as expected, none failed),
    // every run, every step, in time, and the lab's tests are the target's.
    position.complete = report.failed.is_empty()
        && position.passed >= 1
        && manifest
            .expected_tests
            .is_none_or(|count| position.passed == count)
        && ran().all(|(_, captured)| captured.success)
        && !position.timed_out
        && position.steps.iter().all(|step| step.green)
        && position.changed_tests.is_empty()
        && position.tests_verified;
    position.output = ran()
        .map(|(report, _)| report.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    // The first run that failed with neither a compile error nor a failing test.
    position.unexplained = ran()
        .find(|(report, captured)| {
            !captured.success
                && !captured.timed_out
                && report.failed.is_empty()
                && report.errors.is_empty()
        })
        .map(|(report, _)| report.text.clone());
}

/// The report of the run of `command`, unless it was skipped.
fn report_of<'r>(runs: &'r [RunResult<'_>], command: &[String]) -> Option<&'r Report> {
    let run = runs.iter().find(|run| run.command == command)?;
    run.ran.as_ref().map(|(report, _)| report)
}

/// Every compile error of the runs, once, with the teaching file where its
/// fix goes ([`trace`]).
fn errors_at(runs: &[RunResult<'_>], tracer: &trace::Tracer<'_>) -> Vec<ErrorAt> {
    let mut seen = HashSet::new();
    runs.iter()
        .filter_map(|run| run.ran.as_ref())
        .flat_map(|(report, _)| &report.errors)
        .filter(|error| seen.insert((&error.rendered, &error.message)))
        .map(|error| ErrorAt {
            message: error.message.clone(),
            location: error.location.clone(),
            advice: tracer.advice(error),
            rendered: error.rendered.clone(),
        })
        .collect()
}

/// The first failing test: the focused run's, else the first step run's
/// (with that step's id). Tests run in parallel and finish in any order, so
/// "first" is the chapter's order: a failure of the earliest step whose
/// filter selects one, by name among several.
fn first_failure(manifest: &Manifest, runs: &[RunResult<'_>]) -> (Option<Failure>, Option<String>) {
    let failed_in = |command: &[String]| {
        let report = report_of(runs, command)?;
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
/// as it expects, and its own test file (if any) is the target's.
fn step_status(
    manifest: &Manifest,
    step: &Step,
    report: Option<&Report>,
    position: &Position,
) -> StepStatus {
    let (passed, ran) = report.map_or((0, 0), |report| report.count(&step.filter));
    StepStatus {
        id: step.id.clone(),
        title: step.title.clone(),
        filter: step.filter.clone(),
        own_run: step.run(manifest) != manifest.run.as_slice(),
        passed,
        ran,
        expected: step.expected_tests,
        green: ran >= 1
            && passed == ran
            && passed == step.expected_tests
            && tests_intact::own_test_change(step, &position.changed_tests).is_none(),
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
        let captured = crate::runner::Captured {
            success: false,
            output: String::new(),
            stdout: String::new(),
            timed_out: false,
        };
        let runs = [RunResult {
            command: &manifest.run,
            ran: Some((report, captured)),
        }];
        let (first, step) = first_failure(&manifest, &runs);
        assert_eq!(first.map(|f| f.name), Some("lab1_2_a".to_string()));
        assert_eq!(step, None, "a failure of the focused run names no step run");
    }
}
