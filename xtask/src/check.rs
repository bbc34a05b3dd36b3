//! `check NN DIR`: where the learner stands, not raw cargo noise — does it
//! compile (and which teaching file each error belongs to), which steps are
//! green, and the first deviation of the first failing test.

use std::path::Path;

use serde::Serialize;

use crate::chapter;
use crate::cli;
use crate::error::{Error, Result};
use crate::libtest::{self, CompileError, Failure, Report};
use crate::manifest::{Manifest, RepoPath};
use crate::practice::display_path;
use crate::repo::CourseRepo;
use crate::runner::Invocation;
use crate::watch::{self, Watcher};

/// The learner's position, as `--json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Position {
    chapter: String,
    title: String,
    compiled: bool,
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

/// Runs the command: exit 0 only when the whole chapter passes. With
/// `--watch` it reports again after every edit until interrupted (Ctrl-C
/// ends it; nothing is left behind).
impl cli::Check {
    /// Runs the command.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        run(repo, self)
    }
}

fn run(repo: &CourseRepo, options: &cli::Check) -> Result<()> {
    let manifest = chapter::find(&repo.checkpoints_dir(), options.id)?.load()?;
    let dir = &options.dir;
    if !dir.is_dir() {
        return Err(Error::bad_input(format!(
            "{} is not a practice folder: create one with `cargo xtask practice {} {}`",
            dir.display(),
            manifest.id,
            dir.display()
        )));
    }
    if !options.watch {
        let position = check(&manifest, dir, options)?;
        print(&position, options);
        return if position.complete {
            Ok(())
        } else {
            Err(Error::check_failed(format!(
                "chapter {} is not complete yet",
                manifest.id
            )))
        };
    }
    let mut watcher = Watcher::new(dir);
    loop {
        eprintln!("checking {} …", display_path(dir));
        let position = check(&manifest, dir, options)?;
        if !options.json {
            // Clear the screen so only the newest report shows.
            print!("\x1b[2J\x1b[H");
        }
        print(&position, options);
        if !options.json {
            println!(
                "\nwatching {} for changes (Ctrl-C to stop)",
                display_path(dir)
            );
        }
        watcher.wait(watch::POLL, watch::QUIET, None);
    }
}

fn check(manifest: &Manifest, dir: &Path, options: &cli::Check) -> Result<Position> {
    let run = Invocation {
        command: &manifest.run,
        extra: &[],
        dir,
        target_dir: &dir.join("target"),
        timeout: options.timeout(),
    }
    .run()?;
    let report = libtest::parse(&run.output);
    let expected = manifest.expected_tests;
    let complete = run.success
        && report.failed.is_empty()
        && expected.is_none_or(|count| report.passed.len() == count);
    let mut output = run.output;
    if run.timed_out {
        output.push_str(&format!("\n(stopped after {}s)\n", options.timeout));
    }
    Ok(Position {
        chapter: manifest.id.clone(),
        title: manifest.title.clone(),
        compiled: report.compiled,
        errors: report
            .errors
            .iter()
            .map(|error| ErrorAt {
                message: error.message.clone(),
                location: error.location.clone(),
                teaching_file: teaching_file_for(error, &manifest.teaching_files)
                    .map(|file| file.to_string()),
            })
            .collect(),
        steps: steps(manifest, &report),
        first_failure: report.failed.first().cloned(),
        passed: report.passed.len(),
        expected,
        complete,
        output,
    })
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
                    "all".to_string()
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
    if let Some(file) = error.file() {
        if let Some(found) = teaching.iter().find(|path| path.as_str() == file) {
            return Some(found);
        }
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

fn print(position: &Position, options: &cli::Check) {
    if options.verbose {
        println!("{}", position.output);
    }
    if options.json {
        println!(
            "{}",
            serde_json::to_string_pretty(position).expect("the position serializes")
        );
        return;
    }
    println!("Chapter {} · {}", position.chapter, position.title);
    if position.compiled {
        println!("✓ compiles");
    } else {
        println!("✗ does not compile ({} error(s))", position.errors.len());
        for error in position.errors.iter().take(5) {
            println!("  error: {}", error.message);
            let location = error.location.as_deref().unwrap_or("(no location)");
            match &error.teaching_file {
                Some(file) => println!("    at {location} → belongs to {file}"),
                None => println!("    at {location}"),
            }
        }
    }
    if !position.steps.is_empty() {
        println!("Steps:");
        let width = position
            .steps
            .iter()
            .map(|step| step.filter.chars().count())
            .max()
            .unwrap_or(0);
        for step in &position.steps {
            let mark = if step.green { " ✓" } else { "" };
            let pad = width - step.filter.chars().count();
            println!(
                "  {} {}{} {}/{}{mark}",
                step.id,
                step.filter,
                " ".repeat(pad),
                step.passed,
                step.expected
            );
        }
    }
    if let Some(failure) = &position.first_failure {
        println!("First failing test: {}", failure.name);
        for line in failure.message.lines() {
            println!("  {line}");
        }
    }
    if position.complete {
        println!(
            "All {} focused tests pass: chapter {} is complete.",
            position.passed, position.chapter
        );
    } else if position.compiled && position.first_failure.is_none() && position.errors.is_empty() {
        let tail: Vec<&str> = position.output.lines().rev().take(10).collect();
        println!("The run failed without a test failure; its last lines:");
        for line in tail.iter().rev() {
            println!("  {line}");
        }
    } else {
        println!("Next: predict what your next small change will do to this report, then make it.");
    }
}
