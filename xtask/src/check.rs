//! `check NN DIR`: where the learner stands, not raw cargo noise — does it
//! compile (and which teaching file each error belongs to), which steps are
//! green, and the first deviation of the first failing test. The report is
//! the learner's, so it speaks the course's language ([`crate::learner_text`]).
//!
//! Never green on wrong work:
//! - the lab is built in its own target folder (`DIR/target`), whatever
//!   `CARGO_TARGET_DIR` says, and every local package is rebuilt from what
//!   the lab holds now unless check's record shows cargo's build is of
//!   exactly that ([`freshness`]);
//! - the test files the lab got from the target (the focused test, a step's
//!   own test file) must still be the target's, byte for byte: a changed or
//!   missing one is reported with the command that restores it;
//! - the lab builds the way its base does (the base tree with the target's
//!   `labFiles` over it): its `Cargo.toml` files are the base's, and it
//!   holds no `.cargo/`, `build.rs` or toolchain file the base lacks
//!   ([`build_config`]); else the run proves nothing. What the learner's
//!   machine sets up above the lab (cargo's home config, a rustc wrapper, a
//!   runner) is theirs, outside the threat model, and never read;
//! - a run in which no test ran is red, whatever `expectedTests` says;
//! - the exit status is the verdict even when stdout is closed.
//!
//! Compile errors come from cargo's JSON messages, each shown as rustc
//! rendered it, under the teaching file where the fix goes ([`trace`]).
//!
//! This module owns the command's flow (once, or again after every edit)
//! and the position it reports. Finding the lab is [`crate::lab_dir`]; whether its
//! test files are the target's, [`tests_intact`]; running its commands,
//! [`run`]; the position from their reports, [`judge`]; printing it,
//! [`report`].

mod build_config;
mod judge;
mod report;
mod run;
mod tests_intact;
mod trace;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

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
    /// The lab's build configuration that is not its base's (a changed
    /// `Cargo.toml`, an added `.cargo/`, …): the run proves nothing.
    changed_build_config: Vec<build_config::ChangedConfig>,
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
    #[serde(skip)]
    lab: PathBuf,
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
    /// The teaching file where the fix goes.
    teaching_file: Option<String>,
    /// True when that file is not in the lab yet: it is to be made.
    teaching_file_missing: bool,
    /// The declarations of the target's crate root the lab's lacks, to add
    /// to `teachingFile` (the crate root), as the target writes them.
    declarations: Vec<String>,
    /// A module file those declarations need that the lab lacks too.
    new_file: Option<String>,
    /// rustc's own text of the error: spans, notes and help, intact.
    rendered: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StepStatus {
    id: String,
    /// The id as the report shows it: quoted when it has spaces at either
    /// end, … ([`crate::manifest::shown`]).
    #[serde(skip)]
    shown_id: String,
    /// The step's name from the manifest, if it has one.
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
        let lab = crate::lab_dir::find_lab(repo, &self.dir, &manifest, "check")?;
        if !self.watch {
            let position = self.check(repo, &manifest, &lab)?;
            self.print(&position);
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
            let position = self.check(repo, &manifest, &lab)?;
            if !self.json && terminal {
                // Clear the screen so only the newest report shows.
                out!("\x1b[2J\x1b[H");
            }
            self.print(&position);
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

    fn check(&self, repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> Result<Position> {
        let mut position = position(repo, manifest, lab, self.limit.duration())?;
        if self.json && self.verbose {
            position.cargo_output = Some(position.output.clone());
        }
        Ok(position)
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
        lab: lab.to_path_buf(),
        lab_from_root: from_root(&repo.root, lab),
        ..Position::default()
    };
    let (changed, verified) = tests_intact::changed_tests(repo, manifest, lab)?;
    position.changed_tests = changed;
    position.tests_verified = verified;
    position.changed_build_config = build_config::changed_build_config(repo, manifest, lab)?;
    if !position.focused_test_present {
        position.output = tests_intact::restore_hint(repo, manifest, lab);
        return Ok(position);
    }
    // The lab's own build folder; where it leads (a link to a faster disk)
    // is the learner's business.
    let target = lab.join(crate::repo::TARGET_DIR);
    let mut builds = freshness::prepare(lab, &target, timeout)?;
    let runs = run::run_all(
        manifest,
        lab,
        &target,
        timeout,
        &position.changed_tests,
        &mut builds,
    )?;
    builds.record(lab, &target)?;
    let crate_root = trace::CrateRoot::read(repo, manifest, lab);
    judge::judge(manifest, &mut position, &runs, crate_root.as_ref());
    Ok(position)
}

impl Position {
    /// True when the whole chapter passes: focused tests and every step.
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

/// `lab` as typed from the repository root `root`: relative when below it,
/// else absolute.
fn from_root(root: &Path, lab: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match lab.strip_prefix(&root) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => lab.display().to_string(),
    }
}
