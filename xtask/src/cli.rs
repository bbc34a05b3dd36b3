//! Every command and flag of `cargo xtask`, in one place.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::manifest::ChapterId;

/// The course's checkpoint tooling.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Locate a chapter: its parent and target commits, the files its layer
    /// changes and the commands to practise it.
    Checkpoint(Checkpoint),
    /// Create an isolated practice folder: the parent's tree, the focused
    /// test and LEARNING.md; no history, no answer.
    Practice(Practice),
    /// List every chapter in checkpoints/ and whether it locates.
    List(List),
    /// Prove checkpoints honest: red at the parent, green at the target,
    /// every step's count, every declared fault caught, nothing leaked.
    Verify(Verify),
    /// Report where a learner stands in a practice folder: does it compile,
    /// which steps are green, and the first failing test's deviation.
    Check(Check),
    /// Print a step's hints, one rung at a time: 1 locate the file,
    /// 2 the signature, 3 pseudocode, 4 partial code.
    Hint(Hint),
    /// Measure the kit against the baselines a user would pick instead
    /// (release build; median and spread of repeated runs).
    Bench(Bench),
    /// For course authors: re-cut chapter NN from the work tree's learner
    /// world, replaying every later chapter on top, then verify.
    Recut(Recut),
}

/// Locate a chapter: its parent and target commits, the files its layer
/// changes and the commands to practise it.
#[derive(Debug, clap::Args)]
pub struct Checkpoint {
    /// Chapter id, e.g. 03 (or 3).
    pub id: ChapterId,
    /// Print JSON for tools.
    #[arg(long)]
    pub json: bool,
}

/// Create an isolated practice folder: the parent's tree, the focused
/// test and LEARNING.md; no history, no answer.
#[derive(Debug, clap::Args)]
pub struct Practice {
    /// Chapter id, e.g. 03.
    pub id: ChapterId,
    /// The folder to create; it must not exist or be empty.
    pub dir: PathBuf,
}

/// List every chapter in checkpoints/ and whether it locates.
#[derive(Debug, clap::Args)]
pub struct List {
    /// Print JSON for tools.
    #[arg(long)]
    pub json: bool,
}

/// Prove checkpoints honest: red at the parent, green at the target,
/// every step's count, every declared fault caught, nothing leaked.
#[derive(Debug, clap::Args)]
pub struct Verify {
    /// Chapters to verify; all of checkpoints/ when none is given.
    pub ids: Vec<ChapterId>,
    /// Print the result table as JSON.
    #[arg(long)]
    pub json: bool,
    /// Seconds one focused run may take before it is stopped.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

/// Report where a learner stands in a practice folder: does it compile,
/// which steps are green, and the first failing test's deviation.
#[derive(Debug, clap::Args)]
pub struct Check {
    /// Chapter id, e.g. 03.
    pub id: ChapterId,
    /// The practice folder.
    pub dir: PathBuf,
    /// Report again after every edit (polling; Ctrl-C stops).
    #[arg(long)]
    pub watch: bool,
    /// Also print cargo's full output.
    #[arg(long)]
    pub verbose: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Seconds one focused run may take before it is stopped.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

/// Print a step's hints, one rung at a time: 1 locate the file,
/// 2 the signature, 3 pseudocode, 4 partial code.
#[derive(Debug, clap::Args)]
pub struct Hint {
    /// Chapter id, e.g. 03.
    pub id: ChapterId,
    /// The step, e.g. 3.1 (default: the chapter's first step).
    #[arg(long)]
    pub step: Option<String>,
    /// Show hints up to this level.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=4))]
    pub level: u8,
}

/// Measure the kit against the baselines a user would pick instead
/// (release build; median and spread of repeated runs).
#[derive(Debug, clap::Args)]
pub struct Bench {
    /// Fewer repeats and smaller sizes.
    #[arg(long)]
    pub quick: bool,
    /// Print the rows as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run only these workloads, comma-separated.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub only: Vec<Workload>,
}

/// For course authors: re-cut chapter NN from the work tree's learner
/// world, replaying every later chapter on top, then verify.
#[derive(Debug, clap::Args)]
pub struct Recut {
    /// Chapter id, e.g. 03.
    pub id: ChapterId,
    /// Cut chapter NN alone: later chapters keep their current checkpoints
    /// until they are re-cut themselves (for rewriting several chapters).
    #[arg(long)]
    pub only: bool,
    /// Skip the final `verify`.
    #[arg(long)]
    pub no_verify: bool,
}

impl Verify {
    /// How long one run may take before its process tree is stopped.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout)
    }
}

impl Check {
    /// How long one run may take before its process tree is stopped.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout)
    }
}

/// What `bench` measures, by the names `--only` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// `practice` against `git archive | tar -x`.
    Practice,
    /// `checkpoint` against `git log | grep`.
    Locate,
    /// The course crate's stream against `std::sync::mpsc`.
    Stream,
    /// The course crate's partial snapshots, cost per event.
    Partial,
    /// The course crate's system replay against a bare loop.
    Replay,
    /// The course crate's typed JSON against `serde_json::Value`.
    Json,
    /// A learner's cold build and edit → result.
    Learner,
}

impl Workload {
    /// The name `--only` takes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map(|value| value.get_name().to_string())
            .unwrap_or_default()
    }
}
