//! `check NN DIR`: where the learner stands, not raw cargo noise — does it
//! compile (and which teaching file each error belongs to), which steps are
//! green, and the first deviation of the first failing test. The report is
//! the learner's, so it speaks the course's language ([`crate::learner_text`]).
//!
//! Never green on wrong work:
//! - the lab is built in its own target folder (`DIR/target`), whatever
//!   `CARGO_TARGET_DIR` says, and every local package is rebuilt from what
//!   the lab holds now ([`freshness`]);
//! - the test files the lab got from the target (the focused test, a step's
//!   own test file) must still be the target's, byte for byte: a changed or
//!   missing one is reported with the command that restores it;
//! - a run in which no test ran is red, whatever `expectedTests` says;
//! - the exit status is the verdict even when stdout is closed.
//!
//! Compile errors come from cargo's JSON messages ([`libtest::parse_cargo`]):
//! each is shown as rustc rendered it, under the teaching file where the fix
//! goes — the first teaching file among its primary span, its other spans
//! and its notes' spans; else the module the focused test imports the named
//! item from; else, for a name the test cannot find, the crate root.

mod lab_dir;
mod report;
mod trace;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::{Error, Result};
use crate::freshness::{self, Builds};
use crate::learner_text as say;
use crate::libtest::{self, Failure, Report};
use crate::locate;
use crate::manifest::{Manifest, Step};
use crate::out::{self, display_path, noteln, out, outln, shell_word};
use crate::repo::CourseRepo;
use crate::runner::{Captured, Invocation};
use crate::safe_fs;
use crate::signals;
use crate::tree;
use crate::watch::{self, Watcher};

/// The learner's position, as `--json` prints it. Every field name and
/// every value the tool itself chooses is ASCII and stable; text from the
/// manifest (`title`) and from rustc and the tests is passed on as it is.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Position {
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
    /// True when that file is not in the lab yet: it is to be made (and
    /// declared as a module of the crate root).
    teaching_file_missing: bool,
    /// rustc's own text of the error: spans, notes and help, intact.
    rendered: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StepStatus {
    id: String,
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

/// One of the chapter's distinct runs and what it gave.
struct RunResult<'m> {
    command: &'m [String],
    /// `None` when the run was skipped: its test file is not in the lab.
    report: Option<Report>,
    captured: Option<Captured>,
}

impl cli::Check {
    /// Runs the command: exit 0 only when the whole chapter passes. With
    /// `--watch` it reports again after every edit until interrupted.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let manifest = chapter::find(&repo.checkpoints_dir(), self.id)?.load()?;
        let lab = lab_dir::find_lab(repo, &self.dir, &manifest)?;
        if !self.watch {
            let position = self.check(repo, &manifest, &lab)?;
            let printed = self.print(&position);
            return verdict(&position, printed);
        }
        // Ctrl-C is recorded, not fatal, so it ends the loop with its one
        // line on stderr (and the exit code 128 + signal) between runs too.
        let _section = signals::defer();
        let mut watcher = Watcher::new(&lab);
        loop {
            signals::check()?;
            if !lab.is_dir() {
                return Err(Error::bad_input(say::lab_vanished(&display_path(&lab))));
            }
            noteln!("{}", say::checking(&display_path(&lab)));
            let position = self.check(repo, &manifest, &lab)?;
            let mut printed = Ok(());
            if !self.json {
                // Clear the screen so only the newest report shows.
                printed = out!("\x1b[2J\x1b[H");
            }
            printed = printed.and_then(|()| self.print(&position));
            if !self.json {
                printed = printed.and_then(|()| {
                    outln!("\n{}", say::watching(&display_path(&lab)))?;
                    out::flush()
                });
            }
            // Nobody reads the reports any more (`check --watch | head`).
            if printed.is_err() || out::stdout_failed() {
                return verdict(&position, printed);
            }
            watcher.wait(watch::POLL, watch::QUIET, None);
        }
    }

    fn check(&self, repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> Result<Position> {
        let mut position = Position {
            chapter: manifest.id.to_string(),
            title: manifest.title.clone(),
            focused_test_present: manifest.focused_test.under(lab).is_file(),
            changed_tests: Vec::new(),
            tests_verified: false,
            compiled: false,
            timed_out: false,
            errors: Vec::new(),
            steps: Vec::new(),
            first_failure: None,
            first_failure_step: None,
            passed: 0,
            ran: 0,
            expected: manifest.expected_tests,
            complete: false,
            cargo_output: None,
            output: String::new(),
            lab: lab.to_path_buf(),
            lab_from_root: from_root(&repo.root, lab),
            unexplained: None,
        };
        let (changed, verified) = changed_tests(repo, manifest, lab)?;
        position.changed_tests = changed;
        position.tests_verified = verified;
        if !position.focused_test_present {
            position.output = lab_dir::restore_hint(repo, manifest, lab);
            return Ok(position);
        }
        let target =
            safe_fs::folder_inside(lab, Path::new(crate::repo::TARGET_DIR)).map_err(|refusal| {
                Error::bad_input(say::lab_target_refused(
                    &lab.display().to_string(),
                    &refusal_text(&refusal),
                ))
            })?;
        freshness::age_fingerprints(lab, &target)?;
        let mut builds = Builds::default();
        let mut runs = Vec::new();
        for command in manifest.runs() {
            let skipped = command != manifest.run.as_slice()
                && manifest.steps.iter().all(|step| {
                    step.run(manifest) != command || test_file_missing(step, &position)
                });
            let (report, captured) = if skipped {
                (None, None)
            } else {
                let (report, captured) = self.run_cargo(lab, &target, command, &mut builds)?;
                (Some(report), Some(captured))
            };
            runs.push(RunResult {
                command,
                report,
                captured,
            });
        }
        self.judge(manifest, &mut position, &runs);
        Ok(position)
    }

    /// Runs `command` in `lab` with cargo's JSON messages; when cargo
    /// reused a local package from a build this check did not make, cleans
    /// that package and runs once more (see [`freshness`]).
    fn run_cargo(
        &self,
        lab: &Path,
        target: &Path,
        command: &[String],
        builds: &mut Builds,
    ) -> Result<(Report, Captured)> {
        let (command, json) = with_json_messages(command);
        let mut cleaned = false;
        loop {
            let captured = Invocation {
                command: &command,
                extra: &[],
                dir: lab,
                target_dir: target,
                timeout: self.timeout(),
            }
            .run()?;
            let report = if json {
                let stderr = &captured.output[..captured.output.len() - captured.stdout.len()];
                libtest::parse_cargo(&captured.stdout, stderr)
            } else {
                libtest::parse(&captured.output)
            };
            let reused = builds.reused(&report);
            if reused.is_empty() || captured.timed_out {
                return Ok((report, captured));
            }
            if cleaned {
                return Err(Error::environment(say::still_reused(&reused.join(", "))));
            }
            for package in &reused {
                let clean = ["cargo", "clean", "-p", package].map(String::from);
                Invocation {
                    command: &clean,
                    extra: &[],
                    dir: lab,
                    target_dir: target,
                    timeout: self.timeout(),
                }
                .run()?;
            }
            cleaned = true;
        }
    }

    /// Fills in the position from the runs' reports.
    fn judge(&self, manifest: &Manifest, position: &mut Position, runs: &[RunResult<'_>]) {
        let report_of = |command: &[String]| {
            runs.iter()
                .find(|run| run.command == command)
                .and_then(|run| run.report.as_ref())
        };
        let main = &runs[0];
        let report = main.report.as_ref().expect("the focused run always runs");
        let captured = main.captured.as_ref().expect("the focused run always runs");
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
        position.errors = errors_at(manifest, &position.lab, runs);
        position.steps = manifest
            .steps
            .iter()
            .map(|step| step_status(manifest, step, report_of(step.run(manifest)), position))
            .collect();
        (position.first_failure, position.first_failure_step) = first_failure(manifest, runs);
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
        position.complete = focused_green
            && runs_green
            && !position.timed_out
            && position.steps.iter().all(|step| step.green)
            && position.changed_tests.is_empty()
            && position.tests_verified;
        position.output = runs
            .iter()
            .filter_map(|run| {
                let text = &run.report.as_ref()?.text;
                Some(if text.is_empty() {
                    run.captured.as_ref()?.output.clone()
                } else {
                    text.clone()
                })
            })
            .collect::<Vec<_>>()
            .join("\n");
        position.unexplained = runs.iter().find_map(|run| {
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
        });
        if self.json && self.verbose {
            position.cargo_output = Some(position.output.clone());
        }
    }
}

/// Every compile error of the runs, once, with the teaching file where its
/// fix goes.
fn errors_at(manifest: &Manifest, lab: &Path, runs: &[RunResult<'_>]) -> Vec<ErrorAt> {
    let imports = trace::imports(manifest, lab);
    let mut errors: Vec<ErrorAt> = Vec::new();
    for report in runs.iter().filter_map(|run| run.report.as_ref()) {
        for error in &report.errors {
            let seen = errors
                .iter()
                .any(|known| known.rendered == error.rendered && known.message == error.message);
            if seen {
                continue;
            }
            let teaching_file = trace::teaching_file_for(error, &manifest.teaching_files, &imports);
            errors.push(ErrorAt {
                message: error.message.clone(),
                location: error.location.clone(),
                teaching_file: teaching_file.map(|file| file.to_string()),
                teaching_file_missing: teaching_file.is_some_and(|file| {
                    safe_fs::read_inside(lab, Path::new(file.as_str())).is_ok_and(|f| f.is_none())
                }),
                rendered: error.rendered.clone(),
            });
        }
    }
    errors
}

/// The first failing test: the focused run's, else the first step run's
/// (with that step's id).
fn first_failure(manifest: &Manifest, runs: &[RunResult<'_>]) -> (Option<Failure>, Option<String>) {
    let failed_in = |command: &[String]| {
        runs.iter()
            .find(|run| run.command == command)
            .and_then(|run| run.report.as_ref())
            .and_then(|report| report.failed.first())
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

/// The exit status is the verdict: red work fails the command even when its
/// report could not be written (a closed or full stdout).
fn verdict(position: &Position, printed: Result<()>) -> Result<()> {
    if position.complete {
        printed
    } else {
        Err(Error::check_failed(say::not_complete(&position.chapter)))
    }
}

/// `command` with cargo's JSON messages asked for (before a `--`, so the
/// flag is cargo's), and whether it was: only a cargo command gets it.
fn with_json_messages(command: &[String]) -> (Vec<String>, bool) {
    let mut command = command.to_vec();
    let is_cargo = command.first().is_some_and(|program| {
        Path::new(program)
            .file_name()
            .is_some_and(|name| name == "cargo")
    });
    if !is_cargo
        || command
            .iter()
            .any(|arg| arg.starts_with("--message-format"))
    {
        return (command, false);
    }
    let at = command
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(command.len());
    command.insert(at, "--message-format=json".to_string());
    (command, true)
}

/// The lab's test files from the target that are changed or missing, and
/// whether the target could be read to tell.
fn changed_tests(
    repo: &CourseRepo,
    manifest: &Manifest,
    lab: &Path,
) -> Result<(Vec<ChangedTest>, bool)> {
    let Ok(checkpoint) = locate::locate(&repo.git, manifest.id) else {
        return Ok((Vec::new(), false));
    };
    let target_tree = repo.tree_of(checkpoint.target.oid)?;
    let mut changed = Vec::new();
    let mut verified = true;
    for test in manifest.lab_tests() {
        let Some(expected) = tree::file_at(&repo.git, &target_tree, test.as_str())? else {
            verified = false;
            continue;
        };
        // A symlink or a folder in its place is no copy of the target's file.
        let actual = safe_fs::read_inside(lab, Path::new(test.as_str()));
        let missing = matches!(actual, Ok(None));
        if actual.ok().flatten().as_deref() != Some(expected.as_slice()) {
            let restore = format!(
                "git -C {} show {}:{test} > {}",
                shell_word(root_text(&repo.root).as_str()),
                checkpoint.target.short,
                shell_word(&test.under(lab).display().to_string()),
            );
            changed.push(ChangedTest {
                path: test.to_string(),
                missing,
                restore,
            });
        }
    }
    Ok((changed, verified))
}

/// Why `safe_fs` refused a path, in the learner's language.
fn refusal_text(refusal: &safe_fs::Refusal) -> String {
    let at = refusal.at.display().to_string();
    let why = match &refusal.reason {
        safe_fs::Reason::Symlink => say::A_SYMLINK.to_string(),
        safe_fs::Reason::NotAFile | safe_fs::Reason::NotAFolder => say::NOT_A_FOLDER.to_string(),
        safe_fs::Reason::Folder | safe_fs::Reason::NotRelative => refusal.to_string(),
        safe_fs::Reason::Io(error) => error.to_string(),
    };
    format!("{at}：{why}")
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

/// The repository root as the user would type it (no trailing `/`).
fn root_text(root: &Path) -> String {
    let text = root.display().to_string();
    match text.trim_end_matches('/') {
        "" => text,
        trimmed => trimmed.to_string(),
    }
}

fn test_file_missing(step: &Step, position: &Position) -> bool {
    step.test_file.as_ref().is_some_and(|file| {
        position
            .changed_tests
            .iter()
            .any(|changed| changed.missing && changed.path == file.as_str())
    })
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
    let file_intact = step.test_file.as_ref().is_none_or(|file| {
        !position
            .changed_tests
            .iter()
            .any(|changed| changed.path == file.as_str())
    });
    StepStatus {
        id: step.id.clone(),
        title: step.title.clone(),
        filter: step.filter.clone(),
        own_run: step.run(manifest) != manifest.run.as_slice(),
        passed,
        ran,
        expected: step.expected_tests,
        green: ran >= 1 && passed == ran && passed == step.expected_tests && file_intact,
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
            chapter: String::new(),
            title: String::new(),
            focused_test_present: true,
            changed_tests: Vec::new(),
            tests_verified: true,
            compiled: true,
            timed_out: false,
            errors: Vec::new(),
            steps: Vec::new(),
            first_failure: None,
            first_failure_step: None,
            passed: 0,
            ran: 0,
            expected: None,
            complete: false,
            cargo_output: None,
            output: String::new(),
            lab: PathBuf::new(),
            lab_from_root: String::new(),
            unexplained: None,
        };
        let report = Report {
            passed: vec!["adds".to_string()],
            ..Report::default()
        };
        let status = step_status(&manifest, &manifest.steps[0], Some(&report), &position);
        assert_eq!((status.passed, status.ran, status.green), (0, 0, false));
    }

    #[test]
    fn json_messages_are_asked_of_cargo_before_a_double_dash() {
        let words = |text: &str| text.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            with_json_messages(&words("cargo test -p course -- --nocapture")),
            (
                words("cargo test -p course --message-format=json -- --nocapture"),
                true
            )
        );
        assert_eq!(
            with_json_messages(&words("make test")),
            (words("make test"), false)
        );
    }
}
