//! `check NN DIR`: where the learner stands, not raw cargo noise — does it
//! compile (and which teaching file each error belongs to, [`trace`]), which
//! steps are green, and the first deviation of the first failing test, in
//! the course's language ([`crate::learner_text`]).
//!
//! Never green on wrong work: the lab is built in its own target folder
//! (`DIR/target`), whatever `CARGO_TARGET_DIR` says, from what it holds now
//! ([`freshness`]); its test files must be the target's ([`tests_intact`]);
//! a run in which no test ran is red; the exit status is the verdict even
//! when stdout is closed.

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

/// The learner's position, as `--json` prints it. Every field name and
/// every value the tool itself chooses is ASCII and stable; text from the
/// manifest (`title`) and from rustc and the tests is passed on as it is.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    chapter: String,
    title: String,
    /// False when the focused test is not in the lab (nothing was run).
    focused_test_present: bool,
    /// The lab's test files that are not the target's (changed or missing).
    changed_tests: Vec<ChangedTest>,
    /// False when the target's test files could not be read (no history):
    /// the lab's tests cannot be trusted, so the chapter is not complete.
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
    /// True when the whole chapter passes: focused tests and every step.
    complete: bool,
    /// Cargo's output as a person reads it, with `--json --verbose`.
    #[serde(skip_serializing_if = "Option::is_none")]
    cargo_output: Option<String>,
    #[serde(skip)]
    output: String,
    /// The output of a run that failed with neither a compile error nor a
    /// failing test (cargo could not start: a broken `Cargo.toml`, …).
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
    /// The test-name filter as the manifest gives it ("" selects all).
    filter: String,
    /// True when the step has a run of its own (e.g. a wire test file).
    own_run: bool,
    passed: usize,
    ran: usize,
    expected: usize,
    green: bool,
}

impl cli::Check {
    /// Runs the command: exit 0 only when the whole chapter passes. With
    /// `--watch` it reports again after every edit until interrupted.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let manifest = chapter::find(&repo.checkpoints_dir(), self.id)?.load()?;
        // A manifest naming a file its target lacks is the author's slip, said
        // as every command says it (without history, the report says so).
        if let Ok(checkpoint) = crate::locate::locate(&repo.git, self.id) {
            chapter::check_target(repo, &manifest, &checkpoint)?;
        }
        let lab = crate::lab_dir::find_lab(repo, &self.dir, &manifest, "check")?;
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

/// The learner's position in `lab` for chapter `manifest`, each run limited
/// to `timeout`: what `check` reports, and what `compare` asks before it
/// shows the answer.
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
        lab_from_root: out::relative_or_absolute(
            lab,
            &repo.root.canonicalize().unwrap_or(repo.root.clone()),
        ),
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
    let runs = run::run_all(manifest, lab, &target, timeout, &position.changed_tests)?;
    let tracer = trace::Tracer::new(repo, manifest, lab);
    judge::judge(manifest, &mut position, &runs, &tracer);
    let ran = runs.iter().filter_map(|run| run.ran.as_ref());
    let artifacts = ran.flat_map(|(report, _)| &report.artifacts);
    builds.record(lab, &target, artifacts, position.timed_out)?;
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

    /// The ids of the steps that are not green yet, each once.
    pub fn red_steps(&self) -> Vec<String> {
        let mut red: Vec<String> = self
            .steps
            .iter()
            .filter(|step| !step.green)
            .map(|step| step.id.clone())
            .collect();
        red.dedup();
        red
    }
}

/// The exit status is the verdict: red work fails the command even when its
/// report could not be written (a closed or full stdout).
fn verdict(position: &Position) -> Result<()> {
    if position.complete {
        Ok(())
    } else {
        Err(Error::check_failed(say::not_complete(&position.chapter)))
    }
}
