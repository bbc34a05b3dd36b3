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
}
