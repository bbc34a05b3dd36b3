//! The position from the runs' reports.

use std::collections::{BTreeSet, HashSet};

use super::run::RunResult;
use super::{ErrorAt, Position, StepStatus, Suite, tests_intact, trace};
use crate::libtest::{Failure, Report};
use crate::manifest::{Manifest, StepGroup};
use crate::runner::Captured;

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
    position.errors = errors_at(ran().map(|(report, _)| report), tracer);
    position.steps = (manifest.step_groups().iter())
        .map(|group| step_status(manifest, group, runs, position))
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
        .find(|(report, captured)| unexplained(report, captured))
        .map(|(report, _)| report.text.clone());
}

pub(super) fn judge_suite(
    position: &mut Position,
    (report, captured): &(Report, Captured),
    tracer: &trace::Tracer<'_>,
) {
    let passed = report.passed.len();
    let green = captured.success && report.failed.is_empty() && passed >= 1;
    let ran = passed + report.failed.len();
    // Cargo's `error: test failed, to rerun pass `--test agent_loop``.
    let rerun = (report.text.lines())
        .find_map(|line| line.split_once("to rerun pass `")?.1.split_once('`'))
        .map(|(args, _)| format!("cargo test {args}"));
    position.suite = Some(Suite {
        passed,
        ran,
        green,
        reused: false,
        rerun,
    });
    position.timed_out = captured.timed_out;
    position.compiled = report.compiled && report.ran;
    position.errors = errors_at([report], tracer);
    // Cargo stops at the first test binary that fails: its first by name.
    let first = report.failed.iter().min_by(|a, b| a.name.cmp(&b.name));
    position.first_failure = first.cloned();
    position.complete = green;
    position.output = format!("{}\n{}", position.output, report.text);
    position.unexplained = unexplained(report, captured).then(|| report.text.clone());
}

/// True for a run that failed with no compile error, failing test or timeout.
fn unexplained(report: &Report, captured: &Captured) -> bool {
    !captured.success && !captured.timed_out && report.failed.is_empty() && report.errors.is_empty()
}

fn report_of<'r>(runs: &'r [RunResult<'_>], command: &[String]) -> Option<&'r Report> {
    let run = runs.iter().find(|run| run.command == command)?;
    run.ran.as_ref().map(|(report, _)| report)
}

/// Every compile error of the runs, once, with where its fix goes.
fn errors_at<'r>(
    reports: impl IntoIterator<Item = &'r Report>,
    tracer: &trace::Tracer<'_>,
) -> Vec<ErrorAt> {
    let mut seen = HashSet::new();
    reports
        .into_iter()
        .flat_map(|report| &report.errors)
        .filter(|error| seen.insert((&error.rendered, &error.message)))
        .map(|error| ErrorAt {
            message: error.message.clone(),
            location: error.location.clone(),
            advice: tracer.advice(error),
            rendered: error.rendered.clone(),
        })
        .collect()
}

/// The first failing test in the chapter's order (focused run, then the
/// steps'), with the step's id when it is a step run's.
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

/// A step's row: green when each entry's tests ran, all passed, as many as
/// expected, and its own test file is the target's.
fn step_status(
    manifest: &Manifest,
    group: &StepGroup<'_>,
    runs: &[RunResult<'_>],
    position: &Position,
) -> StepStatus {
    let mut passed = BTreeSet::new();
    let mut failed: Vec<(&[String], &Failure)> = Vec::new();
    let mut green = true;
    for step in &group.entries {
        let run = step.run(manifest);
        let report = report_of(runs, run);
        let (passed_here, ran_here) = report.map_or((0, 0), |report| report.count(&step.filter));
        green &= ran_here >= 1
            && passed_here == ran_here
            && passed_here == step.expected_tests
            && tests_intact::own_test_change(step, &position.changed_tests).is_none();
        let Some(report) = report else { continue };
        // The same test under two entries of one run counts once.
        let selected = |name: &String| name.contains(&step.filter);
        passed.extend(
            report
                .passed
                .iter()
                .filter(|n| selected(n))
                .map(|n| (run, n)),
        );
        for failure in report.failed.iter().filter(|f| selected(&f.name)) {
            if !failed.contains(&(run, failure)) {
                failed.push((run, failure));
            }
        }
    }
    let unwritten: Vec<_> = failed
        .iter()
        .map(|(_, failure)| failure.unwritten())
        .collect();
    let mut not_written = Vec::new();
    if unwritten.iter().all(|named| !named.is_empty()) {
        // In the chapter's order, a step the manifest lacks last.
        let groups = manifest.step_groups();
        let at = |step: &String| groups.iter().position(|group| group.id == step);
        not_written = unwritten.into_iter().flatten().map(|u| u.step).collect();
        not_written.sort_by_key(|step| (at(step).unwrap_or(usize::MAX), step.clone()));
        not_written.dedup();
    }
    StepStatus {
        id: group.id.to_string(),
        title: group.title.map(String::from),
        filters: group
            .entries
            .iter()
            .map(|step| step.filter.clone())
            .collect(),
        own_run: (group.entries.iter()).any(|step| step.run(manifest) != manifest.run.as_slice()),
        passed: passed.len(),
        ran: passed.len() + failed.len(),
        expected: group.expected_tests(manifest),
        green,
        not_written,
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
        let captured = crate::runner::Captured {
            success: true,
            output: String::new(),
            stdout: String::new(),
            timed_out: false,
        };
        let runs = [RunResult {
            command: &manifest.run,
            ran: Some((report, captured)),
        }];
        let status = step_status(&manifest, &manifest.step_groups()[0], &runs, &position);
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
