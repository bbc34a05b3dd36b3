//! `check NN DIR`: where the learner stands, not raw cargo noise — does it
//! compile (and which teaching file each error belongs to), which steps are
//! green, and the first deviation of the first failing test. The report is
//! the learner's, so it speaks the course's language ([`learner_text`]).
//!
//! The lab is built in its own target folder (`DIR/target`), whatever
//! `CARGO_TARGET_DIR` says: no other build can make it look green.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::{Error, Result};
use crate::freshness;
use crate::learner_text as say;
use crate::libtest::{self, CompileError, Failure, Report};
use crate::locate;
use crate::manifest::{Manifest, RepoPath};
use crate::out::display_path;
use crate::out::{noteln, out, outln};
use crate::repo::CourseRepo;
use crate::runner::Invocation;
use crate::safe_fs;
use crate::watch::{self, Watcher};

/// The learner's position, as `--json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Position {
    chapter: String,
    title: String,
    /// False when the focused test is not in the lab (nothing was run).
    focused_test_present: bool,
    /// True when the tests compiled and ran.
    compiled: bool,
    timed_out: bool,
    errors: Vec<ErrorAt>,
    steps: Vec<StepStatus>,
    first_failure: Option<Failure>,
    passed: usize,
    expected: Option<usize>,
    /// True when the whole chapter passes.
    complete: bool,
    #[serde(skip)]
    output: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorAt {
    message: String,
    location: Option<String>,
    /// rustc's suggestions, e.g. "a struct with a similar name exists".
    help: Vec<String>,
    /// The teaching file that the error asks the learner to write or fix.
    teaching_file: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StepStatus {
    id: String,
    filter: String,
    passed: usize,
    expected: usize,
    green: bool,
}

impl cli::Check {
    /// Runs the command: exit 0 only when the whole chapter passes. With
    /// `--watch` it reports again after every edit until interrupted.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let manifest = chapter::find(&repo.checkpoints_dir(), self.id)?.load()?;
        let lab = find_lab(repo, &self.dir, &manifest)?;
        if !self.watch {
            let position = self.check(repo, &manifest, &lab)?;
            self.print(&position)?;
            return if position.complete {
                Ok(())
            } else {
                Err(Error::check_failed(say::not_complete(
                    &manifest.id.to_string(),
                )))
            };
        }
        let mut watcher = Watcher::new(&lab);
        loop {
            if !lab.is_dir() {
                return Err(Error::bad_input(say::lab_vanished(&display_path(&lab))));
            }
            noteln!("{}", say::checking(&display_path(&lab)));
            let position = self.check(repo, &manifest, &lab)?;
            if !self.json {
                // Clear the screen so only the newest report shows.
                out!("\x1b[2J\x1b[H")?;
            }
            self.print(&position)?;
            if !self.json {
                outln!("\n{}", say::watching(&display_path(&lab)))?;
            }
            watcher.wait(watch::POLL, watch::QUIET, None);
        }
    }

    fn check(&self, repo: &CourseRepo, manifest: &Manifest, lab: &Path) -> Result<Position> {
        let mut position = Position {
            chapter: manifest.id.to_string(),
            title: manifest.title.clone(),
            focused_test_present: manifest.focused_test.under(lab).is_file(),
            compiled: false,
            timed_out: false,
            errors: Vec::new(),
            steps: Vec::new(),
            first_failure: None,
            passed: 0,
            expected: manifest.expected_tests,
            complete: false,
            output: String::new(),
        };
        if !position.focused_test_present {
            position.output = restore_hint(repo, manifest, lab);
            return Ok(position);
        }
        let target = safe_fs::folder_inside(lab, Path::new("target")).map_err(|refusal| {
            Error::bad_input(say::lab_target_refused(
                &lab.display().to_string(),
                &refusal.to_string(),
            ))
        })?;
        freshness::refresh(lab, &target)?;
        let run = Invocation {
            command: &manifest.run,
            extra: &[],
            dir: lab,
            target_dir: &target,
            timeout: self.timeout(),
        }
        .run()?;
        let report = libtest::parse(&run.output);
        position.timed_out = run.timed_out;
        position.compiled = report.compiled && report.ran;
        position.complete = run.success
            && report.failed.is_empty()
            && manifest
                .expected_tests
                .is_none_or(|count| report.passed.len() == count);
        position.errors = errors_at(&report, &manifest.teaching_files);
        position.steps = steps(manifest, &report);
        position.first_failure = report.failed.first().cloned();
        position.passed = report.passed.len();
        position.output = run.output;
        Ok(position)
    }

    fn print(&self, position: &Position) -> Result<()> {
        if self.verbose {
            outln!("{}", position.output)?;
        }
        if self.json {
            crate::out::json(position)?;
            return Ok(());
        }
        outln!("{}", say::heading(&position.chapter, &position.title))?;
        if !position.focused_test_present {
            return outln!("{}", position.output);
        }
        if position.timed_out {
            outln!("{}", say::timed_out(self.timeout()))?;
        } else if position.compiled {
            outln!("{}", say::COMPILES)?;
        } else if !position.errors.is_empty() {
            outln!("{}", say::does_not_compile(position.errors.len()))?;
            for error in position.errors.iter().take(5) {
                outln!("  {}", say::error_line(&error.message))?;
                outln!(
                    "    {}",
                    say::error_location(error.location.as_deref(), error.teaching_file.as_deref())
                )?;
                for help in &error.help {
                    outln!("    {}", say::help_line(help))?;
                }
            }
        }
        print_steps(&position.steps)?;
        if let Some(failure) = &position.first_failure {
            outln!("{}", say::first_failure(&failure.name))?;
            for line in failure.message.lines() {
                outln!("  {line}")?;
            }
        }
        if position.complete {
            outln!("{}", say::complete(position.passed, &position.chapter))?;
        } else if !position.timed_out
            && position.first_failure.is_none()
            && position.errors.is_empty()
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

fn print_steps(steps: &[StepStatus]) -> Result<()> {
    if steps.is_empty() {
        return Ok(());
    }
    outln!("{}", say::STEPS)?;
    let width = steps
        .iter()
        .map(|step| display_width(&step.filter))
        .max()
        .unwrap_or(0);
    for step in steps {
        let mark = if step.green { " ✓" } else { "" };
        let pad = width - display_width(&step.filter);
        outln!(
            "  {} {}{} {}/{}{mark}",
            step.id,
            step.filter,
            " ".repeat(pad),
            step.passed,
            step.expected
        )?;
    }
    Ok(())
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

fn errors_at(report: &Report, teaching: &[RepoPath]) -> Vec<ErrorAt> {
    report
        .errors
        .iter()
        .map(|error| ErrorAt {
            message: error.message.clone(),
            location: error.location.clone(),
            help: error.help.clone(),
            teaching_file: teaching_file_for(error, teaching).map(|file| file.to_string()),
        })
        .collect()
}

fn steps(manifest: &Manifest, report: &Report) -> Vec<StepStatus> {
    manifest
        .steps
        .iter()
        .map(|step| {
            let (passed, ran) = report.count(&step.filter);
            StepStatus {
                id: step.id.clone(),
                filter: if step.filter.is_empty() {
                    say::ALL_TESTS.to_string()
                } else {
                    step.filter.clone()
                },
                passed,
                expected: step.expected_tests,
                green: passed == step.expected_tests && ran == step.expected_tests,
            }
        })
        .collect()
}

/// The teaching file an error belongs to: the file it is in, or the module
/// it names (`course::types` → `course/src/types.rs`).
fn teaching_file_for<'a>(error: &CompileError, teaching: &'a [RepoPath]) -> Option<&'a RepoPath> {
    if let Some(file) = error.file()
        && let Some(found) = teaching.iter().find(|path| path.as_str() == file)
    {
        return Some(found);
    }
    let stem = |path: &RepoPath| {
        Path::new(path.as_str())
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let named = teaching.iter().find(|path| {
        let stem = stem(path);
        stem != "lib"
            && stem != "mod"
            && (error.message.contains(&format!("::{stem}"))
                || error.message.contains(&format!("`{stem}`")))
    });
    // Anything else the focused test can't find is the crate root's to export.
    named.or_else(|| teaching.iter().find(|path| stem(path) == "lib"))
}

#[cfg(test)]
mod tests {
    use super::display_width;

    #[test]
    fn chinese_characters_take_two_columns() {
        assert_eq!(display_width("system"), 6);
        assert_eq!(display_width("全部"), 4);
        assert_eq!(display_width("3.1 全部"), 8);
    }
}
