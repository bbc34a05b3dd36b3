//! `check NN DIR`: where the learner stands, not raw cargo noise — does it
//! compile (and which teaching file each error belongs to), which steps are
//! green, and the first deviation of the first failing test. The report is
//! the learner's, so it speaks the course's language ([`learner_text`]).
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

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::{Error, Result};
use crate::freshness::{self, Builds};
use crate::learner_text as say;
use crate::libtest::{self, CompileError, Failure, Report};
use crate::locate;
use crate::manifest::{Manifest, RepoPath, Step};
use crate::out::{self, noteln, out, outln, shell_word};
use crate::practice::display_path;
use crate::repo::CourseRepo;
use crate::runner::{Captured, Invocation};
use crate::safe_fs;
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
        let lab = find_lab(repo, &self.dir, &manifest)?;
        if !self.watch {
            let position = self.check(repo, &manifest, &lab)?;
            let printed = self.print(&position);
            return verdict(&position, printed);
        }
        let mut watcher = Watcher::new(&lab);
        loop {
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
            if printed.is_err() {
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
        };
        if !position.focused_test_present {
            position.output = restore_hint(repo, manifest, lab);
            return Ok(position);
        }
        let (changed, verified) = changed_tests(repo, manifest, lab)?;
        position.changed_tests = changed;
        position.tests_verified = verified;
        let target = safe_fs::folder_inside(lab, Path::new("target")).map_err(|refusal| {
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
        let imports = self.imports(manifest, &position.lab);
        for report in runs.iter().filter_map(|run| run.report.as_ref()) {
            for error in &report.errors {
                if position
                    .errors
                    .iter()
                    .any(|known| known.rendered == error.rendered && known.message == error.message)
                {
                    continue;
                }
                position.errors.push(ErrorAt {
                    message: error.message.clone(),
                    location: error.location.clone(),
                    teaching_file: teaching_file_for(error, &manifest.teaching_files, &imports)
                        .map(|file| file.to_string()),
                    rendered: error.rendered.clone(),
                });
            }
        }
        position.steps = manifest
            .steps
            .iter()
            .map(|step| step_status(manifest, step, report_of(step.run(manifest)), position))
            .collect();
        position.first_failure = report.failed.first().cloned();
        if position.first_failure.is_none() {
            for step in manifest.steps.iter().filter(|step| step.run.is_some()) {
                let failed = report_of(step.run(manifest)).and_then(|r| r.failed.first());
                if let Some(failure) = failed {
                    position.first_failure = Some(failure.clone());
                    position.first_failure_step = Some(step.id.clone());
                    break;
                }
            }
        }
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
        if self.json && self.verbose {
            position.cargo_output = Some(position.output.clone());
        }
    }

    /// The paths the lab's test files import from the course crate.
    fn imports(&self, manifest: &Manifest, lab: &Path) -> Vec<Vec<String>> {
        manifest
            .lab_tests()
            .into_iter()
            .filter_map(|test| safe_fs::read_inside(lab, Path::new(test.as_str())).ok()?)
            .flat_map(|source| course_imports(&String::from_utf8_lossy(&source)))
            .collect()
    }

    fn print(&self, position: &Position) -> Result<()> {
        if self.json {
            if self.watch {
                // One object per line, so a reader can take each report as it comes.
                let line = serde_json::to_string(position).expect("reports serialize");
                outln!("{line}")?;
                return out::flush();
            }
            return out::json(position);
        }
        if self.verbose {
            outln!("{}", position.output)?;
        }
        outln!("{}", say::heading(&position.chapter, &position.title))?;
        if !position.focused_test_present {
            return outln!("{}", position.output);
        }
        for changed in &position.changed_tests {
            let line = if changed.missing {
                say::test_gone(&changed.path, &changed.restore)
            } else {
                say::test_changed(&changed.path, &changed.restore)
            };
            outln!("{line}")?;
        }
        if !position.tests_verified {
            outln!("{}", say::tests_unverifiable(&position.chapter))?;
        }
        if position.timed_out {
            outln!("{}", say::timed_out(self.timeout()))?;
        } else if position.compiled {
            outln!("{}", say::COMPILES)?;
        } else if !position.errors.is_empty() {
            outln!("{}", say::does_not_compile(position.errors.len()))?;
            const SHOWN: usize = 5;
            for error in position.errors.iter().take(SHOWN) {
                outln!(
                    "\n{}",
                    say::error_in(error.teaching_file.as_deref(), error.location.as_deref())
                )?;
                let text = if error.rendered.is_empty() {
                    &error.message
                } else {
                    &error.rendered
                };
                outln!("{}", text.trim_end())?;
            }
            if position.errors.len() > SHOWN {
                outln!("{}", say::more_errors(position.errors.len() - SHOWN))?;
            }
            outln!()?;
        }
        print_steps(&position.steps)?;
        if let Some(failure) = &position.first_failure {
            let heading = match &position.first_failure_step {
                Some(step) => say::first_failure_in_step(&failure.name, step),
                None => say::first_failure(&failure.name),
            };
            outln!("{heading}")?;
            if let Some((at, left, right)) = first_difference(&failure.message) {
                outln!("  {}", say::first_difference(at, &left, &right))?;
            }
            for line in failure.message.lines() {
                outln!("  {}", shortened(line))?;
            }
        }
        let nothing_ran = position.compiled && position.passed == 0 && !position.timed_out;
        if nothing_ran {
            outln!("{}", say::NO_TEST_RAN)?;
        }
        if position.complete {
            let mut ids: Vec<&str> = position.steps.iter().map(|step| step.id.as_str()).collect();
            ids.dedup();
            let steps = ids.len();
            let done = if steps == 0 {
                say::complete(position.passed, &position.chapter)
            } else {
                say::complete_with_steps(position.passed, steps, &position.chapter)
            };
            outln!("{done}")?;
            let lab = shell_word(&display_path(&position.lab));
            outln!("{}", say::compare_next(&position.chapter, &lab))?;
        } else if !position.timed_out
            && !nothing_ran
            && position.first_failure.is_none()
            && position.errors.is_empty()
            && position.changed_tests.is_empty()
            && position.tests_verified
            && position.steps.iter().all(|step| step.green)
        {
            outln!("{}", say::FAILED_WITHOUT_A_TEST)?;
            let tail: Vec<&str> = position.output.lines().rev().take(10).collect();
            for line in tail.iter().rev() {
                outln!("  {line}")?;
            }
        } else {
            outln!("{}", say::NEXT)?;
        }
        Ok(())
    }
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

fn print_steps(steps: &[StepStatus]) -> Result<()> {
    if steps.is_empty() {
        return Ok(());
    }
    outln!("{}", say::STEPS)?;
    let labels: Vec<String> = steps
        .iter()
        .map(|step| say::step_label(step.title.as_deref(), &step.filter))
        .collect();
    let width = labels
        .iter()
        .map(|label| display_width(label))
        .max()
        .unwrap_or(0);
    for (step, label) in steps.iter().zip(&labels) {
        let mark = if step.green { " ✓" } else { "" };
        let pad = width - display_width(label);
        outln!(
            "  {} {label}{} {}/{}{mark}",
            step.id,
            " ".repeat(pad),
            step.passed,
            step.expected
        )?;
    }
    Ok(())
}

/// How many characters of a failure's line are shown (`--verbose` and
/// `--json` keep it whole).
const LONGEST_LINE: usize = 240;

/// `line`, cut at [`LONGEST_LINE`] characters with a note saying so.
fn shortened(line: &str) -> String {
    let length = line.chars().count();
    if length <= LONGEST_LINE {
        return line.to_string();
    }
    let kept: String = line.chars().take(LONGEST_LINE).collect();
    format!("{kept}{}", say::line_cut(length))
}

/// How long a side of an assertion must be for its first difference to be
/// pointed out (a line of JSON is; a number is not).
const LONG_SIDE: usize = 30;

/// Where the `left` and `right` of a failed `assert_eq!` first differ: the
/// character position (from 1) and a short piece of each side from there.
fn first_difference(message: &str) -> Option<(usize, String, String)> {
    let side = |name: &str| {
        message
            .lines()
            .find_map(|line| line.trim_start().strip_prefix(name))
            .map(str::trim)
    };
    let (left, right) = (side("left:")?, side("right:")?);
    let (left, right): (Vec<char>, Vec<char>) = (left.chars().collect(), right.chars().collect());
    if left.len().max(right.len()) < LONG_SIDE {
        // Short sides are read at a glance.
        return None;
    }
    let at = left
        .iter()
        .zip(&right)
        .position(|(a, b)| a != b)
        .unwrap_or(left.len().min(right.len()));
    if at == left.len() && at == right.len() {
        return None;
    }
    let piece = |side: &[char]| {
        let rest: String = side[at..].iter().take(24).collect();
        if rest.is_empty() {
            "（结束）".to_string()
        } else {
            format!("`{rest}`")
        }
    };
    Some((at + 1, piece(&left), piece(&right)))
}

/// Columns `text` takes in a terminal: CJK characters take two.
fn display_width(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '\u{1100}'..='\u{115F}'
            | '\u{2E80}'..='\u{A4CF}'
            | '\u{AC00}'..='\u{D7A3}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{FE30}'..='\u{FE4F}'
            | '\u{FF00}'..='\u{FF60}'
            | '\u{FFE0}'..='\u{FFE6}' => 2,
            _ => 1,
        })
        .sum()
}

/// Resolves DIR against the current folder, then against the repository
/// root; refuses the repository itself and folders that are not labs.
fn find_lab(repo: &CourseRepo, dir: &Path, manifest: &Manifest) -> Result<PathBuf> {
    let here = std::env::current_dir().unwrap_or_default();
    let root = repo
        .root
        .canonicalize()
        .unwrap_or_else(|_| repo.root.clone());
    let id = manifest.id.to_string();
    let found = [here.join(dir), repo.root.join(dir)]
        .into_iter()
        .find(|candidate| candidate.is_dir())
        .and_then(|candidate| candidate.canonicalize().ok());
    let Some(lab) = found else {
        return Err(Error::bad_input(say::no_such_lab(
            &dir.display().to_string(),
            &id,
            &root.display().to_string(),
            &labs_in_sight(&here, &root),
        )));
    };
    if lab == root || root.starts_with(&lab) {
        return Err(Error::bad_input(say::is_the_repository(
            &lab.display().to_string(),
            &id,
            &labs_in_sight(&here, &root),
        )));
    }
    if !is_lab(&lab) {
        return Err(Error::bad_input(say::not_a_lab(
            &lab.display().to_string(),
            &id,
            &labs_in_sight(&here, &root),
        )));
    }
    Ok(lab)
}

/// A practice folder: a learner's workspace with the chapter's guide.
fn is_lab(dir: &Path) -> bool {
    dir.join(chapter::GUIDE_FILE).is_file() && dir.join("Cargo.toml").is_file()
}

/// The labs directly below the current folder and the repository root.
fn labs_in_sight(here: &Path, root: &Path) -> Vec<String> {
    let mut labs: Vec<String> = [here, root]
        .into_iter()
        .filter_map(|folder| std::fs::read_dir(folder).ok())
        .flatten()
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| is_lab(path))
        .map(|path| display_path(&path))
        .collect();
    labs.sort();
    labs.dedup();
    labs
}

/// How to bring a deleted focused test back.
fn restore_hint(repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> String {
    let test = &manifest.focused_test;
    match locate::locate(&repo.git, manifest.id) {
        Ok(checkpoint) => say::focused_test_missing(
            test.as_str(),
            &repo.root.display().to_string(),
            &checkpoint.target.short,
            &lab.display().to_string(),
        ),
        Err(_) => say::focused_test_missing_no_history(test.as_str(), &manifest.id.to_string()),
    }
}

/// The teaching file where the fix for `error` goes (see the module doc).
fn teaching_file_for<'a>(
    error: &CompileError,
    teaching: &'a [RepoPath],
    imports: &[Vec<String>],
) -> Option<&'a RepoPath> {
    let by_path = |file: &str| teaching.iter().find(|path| path.as_str() == file);
    if let Some(found) = error.files.iter().find_map(|file| by_path(file)) {
        return Some(found);
    }
    let stem = |path: &RepoPath| {
        let path = Path::new(path.as_str());
        let stem = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned());
        match stem.as_deref() {
            // `types/mod.rs` is module `types`.
            Some("mod") => path
                .parent()
                .and_then(Path::file_name)
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            _ => stem.unwrap_or_default(),
        }
    };
    let module_file = |module: &str| {
        teaching
            .iter()
            .find(|path| stem(path) == module && module != "lib")
    };
    let named: Vec<&str> = error
        .message
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|quoted| quoted.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| !word.is_empty())
        .collect();
    // A module named in the message (`course::types`), then the module the
    // tests import a named item from.
    if let Some(found) = named.iter().find_map(|word| module_file(word)) {
        return Some(found);
    }
    for word in &named {
        let from = imports
            .iter()
            .filter(|path| path.last().is_some_and(|last| last == word))
            .find_map(|path| module_file(path.first()?));
        if from.is_some() {
            return from;
        }
    }
    // Anything else the tests can't find is the crate root's to export.
    let unresolved = ["unresolved import", "cannot find", "failed to resolve"]
        .iter()
        .any(|start| error.message.starts_with(start));
    unresolved
        .then(|| teaching.iter().find(|path| stem(path) == "lib"))
        .flatten()
}

/// Every path a `use course::…;` item of `source` imports, as its segments
/// after `course` (an alias replaces the last one): `use course::types::{A,
/// b::C as D};` gives `[types, A]` and `[types, b, D]`.
fn course_imports(source: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (at, _) in source.match_indices("use course::") {
        let rest = &source[at + "use course::".len()..];
        let item = rest.split(';').next().unwrap_or_default();
        let tokens = use_tokens(item);
        let mut position = 0;
        use_tree(&tokens, &mut position, Vec::new(), &mut paths);
    }
    paths
}

fn use_tokens(item: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in item.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if matches!(c, '{' | '}' | ',' | '*') {
            tokens.push(c.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// Reads one use tree from `tokens` (`::` already dropped: segments follow
/// each other) into `paths`.
fn use_tree(tokens: &[String], at: &mut usize, prefix: Vec<String>, paths: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    while let Some(token) = tokens.get(*at) {
        match token.as_str() {
            "{" => {
                *at += 1;
                while tokens.get(*at).is_some_and(|token| token != "}") {
                    use_tree(tokens, at, path.clone(), paths);
                    if tokens.get(*at).is_some_and(|token| token == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "}" | "," => break,
            "as" => {
                *at += 1;
                if let Some(alias) = tokens.get(*at) {
                    path.pop();
                    path.push(alias.clone());
                    *at += 1;
                }
            }
            word => {
                path.push(word.to_string());
                *at += 1;
            }
        }
    }
    if !path.is_empty() {
        paths.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_characters_take_two_columns() {
        assert_eq!(display_width("system"), 6);
        assert_eq!(display_width("全部"), 4);
        assert_eq!(display_width("3.1 全部"), 8);
    }

    #[test]
    fn course_imports_are_flattened_with_groups_and_aliases() {
        let source = "use std::fmt;\nuse course::types::{\n    SystemMessage, wire::{Tag as T, Other},\n};\nuse course::assistant_stream::Stream;\nuse course::text_of;\n";
        assert_eq!(
            course_imports(source),
            [
                vec!["types", "SystemMessage"],
                vec!["types", "wire", "T"],
                vec!["types", "wire", "Other"],
                vec!["assistant_stream", "Stream"],
                vec!["text_of"],
            ]
        );
    }

    fn teaching() -> Vec<RepoPath> {
        [
            "course/src/types.rs",
            "course/src/assistant_stream.rs",
            "course/src/lib.rs",
        ]
        .map(|path| RepoPath::try_from(path.to_string()).unwrap())
        .to_vec()
    }

    fn error(message: &str, files: &[&str]) -> CompileError {
        CompileError {
            message: message.to_string(),
            location: None,
            help: Vec::new(),
            rendered: String::new(),
            files: files.iter().map(|file| file.to_string()).collect(),
        }
    }

    #[test]
    fn an_error_goes_to_its_first_teaching_file_then_the_imported_module_then_lib() {
        let teaching = teaching();
        let imports = course_imports("use course::types::{SystemMessage, Usage};\n");
        let at = |error: &CompileError| {
            teaching_file_for(error, &teaching, &imports).map(RepoPath::as_str)
        };
        let test = "course/tests/message_ir.rs";
        assert_eq!(
            at(&error(
                "`Rc<u8>` cannot be sent",
                &[test, "course/src/assistant_stream.rs"]
            )),
            Some("course/src/assistant_stream.rs"),
            "a child note's span in a teaching file"
        );
        assert_eq!(
            at(&error(
                "field `timestamp` of struct `SystemMessage` is private",
                &[test]
            )),
            Some("course/src/types.rs"),
            "the module the test imports the named item from"
        );
        assert_eq!(
            at(&error("unresolved import `course::types`", &[test])),
            Some("course/src/types.rs")
        );
        assert_eq!(
            at(&error("unresolved import `course::Missing`", &[test])),
            Some("course/src/lib.rs")
        );
        assert_eq!(at(&error("mismatched types", &[test])), None);
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

    #[test]
    fn a_long_failure_line_is_cut_with_its_length() {
        assert_eq!(shortened("left: 1"), "left: 1");
        let long = "字".repeat(LONGEST_LINE + 10);
        let cut = shortened(&long);
        assert!(cut.starts_with(&"字".repeat(LONGEST_LINE)), "{cut}");
        assert!(cut.ends_with(&say::line_cut(LONGEST_LINE + 10)), "{cut}");
    }

    #[test]
    fn the_first_difference_of_an_assertion_is_found() {
        let message = "assertion `left == right` failed\n  left: \"{\\\"tool_call\\\":1,\\\"arguments\\\":{}}\"\n right: \"{\\\"toolCall\\\":1,\\\"arguments\\\":{}}\"";
        let (at, left, right) = first_difference(message).unwrap();
        assert_eq!(at, 9);
        assert!(left.starts_with("`_call"), "{left}");
        assert!(right.starts_with("`Call"), "{right}");
        assert!(first_difference("left: 1\nright: 2").is_none(), "short");
        let same = format!("left: {0}\nright: {0}", "x".repeat(40));
        assert!(first_difference(&same).is_none());
        assert!(first_difference("boom").is_none());
    }
}
