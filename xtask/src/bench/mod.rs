//! `bench [--quick] [--only …] [--json]`: what the kit costs, beside the
//! baseline a user would pick instead; medians with spread, never asserted.

mod learner;
mod stats;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cli::{self, Workload};
use crate::error::{Error, Result};
use crate::out::{noteln, outln};
use crate::repo::CourseRepo;
use crate::runner::Invocation;
use crate::safe_fs;
use clap::ValueEnum;

pub use stats::Figure;

#[derive(Debug, Serialize, Deserialize)]
pub struct Row {
    pub workload: String,
    pub size: String,
    pub ours: Figure,
    /// What a user would use instead; `None` when there is nothing to compare.
    pub baseline: Option<Figure>,
    /// `ours / baseline`, in the figure's unit.
    pub ratio: Option<f64>,
    /// The target this row is held to, in words.
    pub target: String,
    pub met: Option<bool>,
}

impl cli::Bench {
    /// Runs the command (a debug build re-runs itself in release first).
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        if cfg!(debug_assertions) && std::env::var_os(IN_PLACE).is_none() {
            return rerun_in_release(repo);
        }
        let mut rows = Vec::new();
        let mut failed = Vec::new();
        for &workload in Workload::value_variants() {
            if !self.only.is_empty() && !self.only.contains(&workload) {
                continue;
            }
            let name = workload.name();
            let result = match workload {
                Workload::Learner => learner::learner_loop(repo, if self.quick { 1 } else { 3 }),
                _ => course_rows(repo, &name, self.quick),
            };
            match result {
                Ok(new) => rows.extend(new),
                // The machine or a signal ends the run (exit 3, 128 + n).
                Err(error) if error.exit_code() > 2 => return Err(error),
                Err(error) => {
                    noteln!("bench: {name} failed: {error}");
                    failed.push(name);
                }
            }
        }
        if self.json {
            crate::out::json(&rows);
        } else {
            print_table(&rows);
        }
        if failed.is_empty() {
            Ok(())
        } else {
            let failed = failed.join(", ");
            Err(Error::check_failed(format!(
                "bench: {failed} could not run (see above)"
            )))
        }
    }
}

/// Set for the release re-run: it benches in place whatever its build (a
/// release profile with debug assertions would re-run itself forever).
const IN_PLACE: &str = "XTASK_BENCH_IN_PLACE";

/// How long one course benchmark may run, build included.
const TIMEOUT: Duration = Duration::from_secs(900);

/// Runs `course/examples/bench_<workload>.rs` in release as a child (the
/// tooling never links the learner's crate); one JSON [`Row`] a line.
fn course_rows(repo: &CourseRepo, workload: &str, quick: bool) -> Result<Vec<Row>> {
    noteln!("bench: {workload} (course/examples/bench_{workload}.rs, release) …");
    let example = format!("bench_{workload}");
    let command = format!("cargo run --quiet --release -p course --example {example} --");
    let mut command: Vec<String> = command.split(' ').map(String::from).collect();
    command.extend(quick.then(|| "--quick".to_string()));
    let run = Invocation {
        command: &command,
        dir: &repo.root,
        target_dir: &safe_fs::folder_inside(&repo.root, Path::new(crate::repo::TARGET_DIR))?,
        timeout: TIMEOUT,
    }
    .run()?;
    if !run.success {
        return Err(Error::check_failed(format!(
            "`{}` failed:\n{}",
            command.join(" "),
            run.output
        )));
    }
    run.stdout
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| {
            serde_json::from_str(line).map_err(|error| {
                Error::check_failed(format!(
                    "{example} printed a row that is not a bench row ({error}): {line}"
                ))
            })
        })
        .collect()
}

/// Runs this command line again from a release build, its arguments as given.
fn rerun_in_release(repo: &CourseRepo) -> Result<()> {
    noteln!("bench: building xtask in release mode first …");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args("run --quiet --release --manifest-path xtask/Cargo.toml --".split(' '))
        .args(std::env::args_os().skip(1))
        .env(IN_PLACE, "1")
        .current_dir(&repo.root);
    // In a process group of its own, ended with xtask: a signal never leaves
    // the release build, or the release bench it runs, behind.
    let status = crate::runner::run_live(&mut command, "cargo for the release build")?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::check_failed("the release bench run failed"))
    }
}

fn print_table(rows: &[Row]) {
    let header = ["workload", "size", "ours", "baseline", "ratio", "target"].map(String::from);
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let verdict = match row.met {
                Some(true) => " ✓",
                Some(false) => " ✗",
                None => "",
            };
            let none = || "—".to_string();
            [
                row.workload.clone(),
                row.size.clone(),
                row.ours.to_string(),
                row.baseline.as_ref().map_or_else(none, Figure::to_string),
                row.ratio.map_or_else(none, |ratio| format!("{ratio:.2}×")),
                format!("{}{verdict}", row.target.replace('|', "\\|")),
            ]
        })
        .collect();
    let lines: Vec<&[String; 6]> = [&header].into_iter().chain(&cells).collect();
    let widths: [usize; 6] = std::array::from_fn(|column| {
        let width = lines.iter().map(|line| line[column].chars().count());
        width.max().unwrap_or(0)
    });
    for (index, line) in lines.iter().enumerate() {
        let padded = line
            .iter()
            .zip(widths)
            .map(|(value, width)| format!("{value}{}", " ".repeat(width - value.chars().count())));
        outln!("| {} |", padded.collect::<Vec<_>>().join(" | "));
        if index == 0 {
            let rule = widths.map(|width| "-".repeat(width + 2));
            outln!("|{}|", rule.join("|"));
        }
    }
}
