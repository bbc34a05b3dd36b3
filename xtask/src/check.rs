//! `check NN DIR`: does the lab compile (errors traced to a teaching file),
//! which steps are green, and the first failing test's deviation. Never
//! green on wrong work: its own target folder ([`freshness`]), the target's
//! test files ([`tests_intact`]), no run without tests, exit status as verdict.

mod judge;
mod report;
mod run;
mod tests_intact;
mod trace;

use std::io::IsTerminal;
use std::path::Path;

use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::{Error, Result};
use crate::freshness;
use crate::learner_text as say;
use crate::libtest::Failure;
use crate::manifest::Manifest;
use crate::out::{self, display_path, noteln, out, outln};
use crate::repo::CourseRepo;
use crate::signals;
use crate::watch::{self, Watcher};

/// The learner's position, as `--json` prints it: field names and chosen
/// values ASCII and stable.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    chapter: String,
    title: String,
    /// False when the focused test is not in the lab (nothing was run).
    focused_test_present: bool,
    /// The lab's test files that are not the target's (changed or missing).
    changed_tests: Vec<ChangedTest>,
    /// False when the target's test files could not be read: not complete.
    tests_verified: bool,
    /// True when the tests compiled and ran.
    compiled: bool,
    timed_out: bool,
    errors: Vec<ErrorAt>,
    steps: Vec<StepStatus>,
    first_failure: Option<Failure>,
    /// The step whose run holds `firstFailure`, when it has a run of its own.
    first_failure_step: Option<String>,
    /// Focused tests that passed, and that ran (passed or failed).
    passed: usize,
    ran: usize,
    expected: Option<usize>,
    /// The lab's whole suite, run once everything else passes (null before).
    suite: Option<Suite>,
    /// True when the focused tests, every step and the whole suite pass.
    complete: bool,
    /// Cargo's output as a person reads it, with `--json --verbose`.
    #[serde(skip_serializing_if = "Option::is_none")]
    cargo_output: Option<String>,
    #[serde(skip)]
    output: String,
    /// The output of a run that failed with no compile error or failing test.
    #[serde(skip)]
    unexplained: Option<String>,
    /// The lab as typed from the repository root (relative when inside it).
    #[serde(skip)]
    lab_from_root: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ChangedTest {
    path: String,
    /// True when the file is gone from the lab, false when it differs.
    missing: bool,
    /// The shell command that writes the target's version back.
    restore: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorAt {
    message: String,
    location: Option<String>,
    #[serde(flatten)]
    advice: trace::Advice,
    /// rustc's own text of the error: spans, notes and help, intact.
    rendered: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StepStatus {
    id: String,
    title: Option<String>,
    /// The test-name filters of its entries ("" selects all).
    filters: Vec<String>,
    /// True when the step has a run of its own (e.g. a wire test file).
    own_run: bool,
    /// Distinct tests of the step that passed, ran, and are expected.
    passed: usize,
    ran: usize,
    expected: usize,
    green: bool,
    /// The steps whose starter `todo!`s all of this step's failures hit.
    not_written: Vec<String>,
}

/// The lab's whole test suite (`cargo test --workspace`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Suite {
    /// Tests that passed, and that ran (up to the first failing binary).
    passed: usize,
    ran: usize,
    green: bool,
    /// True when the lab is unchanged since a check in which it passed.
    reused: bool,
    /// The command cargo gives to rerun the failing test binary.
    rerun: Option<String>,
}

impl Suite {
    /// The suite's verdict kept from an earlier check.
    fn kept(passed: usize) -> Self {
        Suite {
            passed,
            ran: passed,
            green: true,
            reused: true,
            rerun: None,
        }
    }
}

impl cli::Check {
    /// Runs the command: exit 0 only when the whole chapter passes.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let manifest = chapter::find(&repo.checkpoints_dir(), self.id)?.load()?;
        // A manifest naming a file its target lacks is the author's slip, said
        // as every command says it (without history, the report says so).
        if let Ok(checkpoint) = crate::locate::locate(&repo.git, self.id) {
            chapter::check_target(repo, &manifest, &checkpoint)?;
        }
        let lab = crate::lab_dir::find_lab(repo, &self.dir, &manifest, "check")?;
        if self.restore_tests {
            for test in tests_intact::restore(repo, &manifest, &lab)? {
                noteln!("{}", say::test_restored(&test));
            }
        }
        if !self.watch {
            let mut position = position(repo, &manifest, &lab, self.limit.duration())?;
            self.print(&mut position);
            return verdict(&position);
        }
        // Ctrl-C is recorded, not fatal, so it ends the loop with its one
        // line on stderr (and the exit code 128 + signal) between runs too.
        let _section = signals::defer();
        let mut watcher = Watcher::new(&lab);
        let terminal = std::io::stdout().is_terminal();
        loop {
            signals::check()?;
            if !lab.is_dir() {
                return Err(Error::bad_input(say::lab_vanished(&display_path(&lab))));
            }
            noteln!("{}", say::checking(&display_path(&lab)));
            let mut position = position(repo, &manifest, &lab, self.limit.duration())?;
            if !self.json && terminal {
                // Clear the screen so only the newest report shows.
                out!("\x1b[2J\x1b[H");
            }
            self.print(&mut position);
            if !self.json {
                outln!("\n{}", say::watching(&display_path(&lab)));
            }
            out::flush();
            // Nobody reads the reports any more (`check --watch | head`).
            if out::stdout_failed() {
                return verdict(&position);
            }
            watcher.wait(watch::POLL, watch::QUIET, None);
            if out::stdout_reader_gone() {
                return verdict(&position);
            }
        }
    }
}

/// The learner's position in `lab`, for `check` and `compare`.
pub fn position(
    repo: &CourseRepo,
    manifest: &Manifest,
    lab: &Path,
    timeout: std::time::Duration,
) -> Result<Position> {
    let mut position = Position {
        chapter: manifest.id.to_string(),
        title: manifest.title.clone(),
        focused_test_present: manifest.focused_test.under(lab).is_file(),
        expected: manifest.expected_tests,
        lab_from_root: out::relative_or_absolute(lab, &repo.canonical_root),
        ..Position::default()
    };
    (position.changed_tests, position.tests_verified) =
        tests_intact::changed_tests(repo, manifest, lab)?;
    if !position.focused_test_present {
        position.output = tests_intact::restore_hint(manifest, &position.changed_tests);
        return Ok(position);
    }
    // The lab's own build folder; where it leads (a link to a faster disk)
    // is the learner's business.
    let target = lab.join(crate::repo::TARGET_DIR);
    let builds = freshness::prepare(lab, &target, timeout)?;
    // After an edit of a lab whose runs compiled, the runs' test targets
    // build side by side first (an edit rarely breaks the build; one that
    // does costs a second compile once).
    let changed = &position.changed_tests;
    let prebuild = builds.edited_after_compiling;
    let (runs, prebuilt) = run::run_all(manifest, lab, &target, timeout, changed, prebuild)?;
    let tracer = trace::Tracer::new(repo, manifest, lab);
    judge::judge(manifest, &mut position, &runs, &tracer);
    // The record's `compiled` is the chapter's runs', whatever the suite does.
    let compiled = position.compiled;
    // Only a chapter whose own runs are green pays for the whole suite, and
    // only when the lab changed since it last passed.
    let mut suite = None;
    if position.complete {
        match builds.suite_passed {
            Some(passed) => position.suite = Some(Suite::kept(passed)),
            None => {
                let ran = run::suite(lab, &target, timeout)?;
                judge::judge_suite(&mut position, &ran, &tracer);
                suite = Some(ran);
            }
        }
    }
    let ran = runs.iter().filter_map(|run| run.ran.as_ref()).chain(&suite);
    let reports = ran.map(|(report, _)| report).chain(&prebuilt);
    let artifacts = reports.flat_map(|report| &report.artifacts);
    let green_suite = position.suite.as_ref().filter(|suite| suite.green);
    let suite_passed = green_suite.map(|suite| suite.passed);
    let timed_out = position.timed_out;
    builds.record(lab, &target, artifacts, timed_out, compiled, suite_passed)?;
    Ok(position)
}

impl Position {
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// Focused tests that passed, and how many the chapter expects.
    pub fn passed(&self) -> (usize, Option<usize>) {
        (self.passed, self.expected)
    }

    /// True when the lab's whole suite ran and did not pass.
    pub fn suite_failed(&self) -> bool {
        self.suite.as_ref().is_some_and(|suite| !suite.green)
    }

    /// The ids of the steps that are not green yet.
    pub fn red_steps(&self) -> Vec<String> {
        let red = self.steps.iter().filter(|step| !step.green);
        red.map(|step| step.id.clone()).collect()
    }
}

/// The exit status is the verdict, whether or not the report was written.
fn verdict(position: &Position) -> Result<()> {
    if position.complete {
        Ok(())
    } else {
        Err(Error::check_failed(say::not_complete(&position.chapter)))
    }
}
