//! Every command and flag of `cargo xtask`, in one place.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
    Checkpoint {
        /// Chapter id, e.g. 03 (or 3).
        id: ChapterId,
        /// Print JSON for tools.
        #[arg(long)]
        json: bool,
    },
    /// Create an isolated practice folder: the parent's tree, the focused
    /// test and LEARNING.md; no history, no answer.
    Practice {
        /// Chapter id, e.g. 03.
        id: ChapterId,
        /// The folder to create; it must not exist or be empty.
        dir: PathBuf,
    },
    /// List every chapter in checkpoints/ and whether it locates.
    List {
        /// Print JSON for tools.
        #[arg(long)]
        json: bool,
    },
    /// Prove checkpoints honest: red at the parent, green at the target,
    /// every step's count, every declared fault caught, nothing leaked.
    Verify {
        /// Chapters to verify; all of checkpoints/ when none is given.
        ids: Vec<ChapterId>,
        /// Print the result table as JSON.
        #[arg(long)]
        json: bool,
        /// Seconds one focused run may take before it is stopped.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Report where a learner stands in a practice folder: does it compile,
    /// which steps are green, and the first failing test's deviation.
    Check {
        /// Chapter id, e.g. 03.
        id: ChapterId,
        /// The practice folder.
        dir: PathBuf,
        /// Report again after every edit (polling; Ctrl-C stops).
        #[arg(long)]
        watch: bool,
        /// Also print cargo's full output.
        #[arg(long)]
        verbose: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Seconds one focused run may take before it is stopped.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Print a step's hints, one rung at a time: 1 locate the file,
    /// 2 the signature, 3 pseudocode, 4 partial code.
    Hint {
        /// Chapter id, e.g. 03.
        id: ChapterId,
        /// The step, e.g. 3.1 (default: the chapter's first step).
        #[arg(long)]
        step: Option<String>,
        /// Show hints up to this level.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=4))]
        level: u8,
    },
    /// Measure the kit against the baselines a user would pick instead
    /// (release build; median and spread of repeated runs).
    Bench {
        /// Fewer repeats and smaller sizes.
        #[arg(long)]
        quick: bool,
        /// Print the rows as JSON.
        #[arg(long)]
        json: bool,
        /// Run only these workloads (practice, locate, stream, partial,
        /// replay, json, learner), comma-separated.
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
}
