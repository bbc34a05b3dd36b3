//! `bench [--quick] [--only …] [--json]`: what the kit costs its users, measured side
//! by side with the baseline a user would pick instead. Figures are printed,
//! never asserted; each is the median of repeated runs with its spread.

mod course_rows;
mod learner;
mod stats;

use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::cli::{self, Workload};
use crate::error::{Error, Result};
use crate::out::{noteln, outln};
use crate::repo::CourseRepo;
use clap::ValueEnum;

pub use stats::Figure;

/// One row of the table.
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
    /// Runs the command. A debug build re-runs itself in release first.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let options = self;
        if cfg!(debug_assertions) {
            return rerun_in_release(repo);
        }
        let quick = options.quick;
        let mut rows = Vec::new();
        for workload in Workload::value_variants() {
            if !options.only.is_empty() && !options.only.contains(workload) {
                continue;
            }
            let name = workload.name();
            let result = match workload {
                Workload::Stream | Workload::Replay | Workload::Json => {
                    course_rows::run(repo, &name, quick)
                }
                Workload::Learner => learner::learner_loop(repo, if quick { 1 } else { 3 }),
            };
            match result {
                Ok(new) => rows.extend(new),
                Err(error) => noteln!("bench: {name} skipped: {error}"),
            }
        }

        if options.json {
            crate::out::json(&rows);
        } else {
            print_table(&rows);
        }
        Ok(())
    }
}

/// Runs this same command line again from a release build: its own
/// arguments are forwarded as they were given, never re-encoded.
fn rerun_in_release(repo: &CourseRepo) -> Result<()> {
    noteln!("bench: building xtask in release mode first …");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args([
            "run",
            "--quiet",
            "--release",
            "--manifest-path",
            "xtask/Cargo.toml",
            "--",
        ])
        .args(std::env::args_os().skip(1))
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
    let header = ["workload", "size", "ours", "baseline", "ratio", "target"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let verdict = match row.met {
                Some(true) => " ✓",
                Some(false) => " ✗",
                None => "",
            };
            [
                row.workload.to_string(),
                row.size.clone(),
                row.ours.to_string(),
                row.baseline
                    .as_ref()
                    .map_or("—".to_string(), Figure::to_string),
                row.ratio
                    .map_or("—".to_string(), |ratio| format!("{ratio:.2}×")),
                format!("{}{verdict}", row.target.replace('|', "\\|")),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            cells
                .iter()
                .map(|row| row[column].chars().count())
                .chain([header[column].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: Vec<&str>| {
        let padded: Vec<String> = values
            .iter()
            .zip(&widths)
            .map(|(value, width)| format!("{value}{}", " ".repeat(width - value.chars().count())))
            .collect();
        outln!("| {} |", padded.join(" | "))
    };
    line(header.to_vec());
    outln!(
        "|{}|",
        widths
            .iter()
            .map(|width| "-".repeat(width + 2))
            .collect::<Vec<_>>()
            .join("|")
    );
    for row in &cells {
        line(row.iter().map(String::as_str).collect());
    }
}
