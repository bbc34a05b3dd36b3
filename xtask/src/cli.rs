//! Every command and flag of `cargo xtask`, in one place. Each subcommand's
//! help is its struct's doc comment; the learner commands are named in
//! [`audience_of`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use crate::learner_text::Audience;
use crate::manifest::ChapterId;

/// Seconds one run may take before its process tree is stopped, unless
/// `--timeout` says otherwise.
pub use crate::runner::DEFAULT_TIMEOUT_SECS;

/// The course's checkpoint tooling: locate, practise, check, compare and
/// verify chapters.
#[derive(Debug, Parser)]
#[command(name = "xtask", bin_name = "cargo xtask", version, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Checkpoint(Checkpoint),
    Practice(Practice),
    Check(Check),
    Hint(Hint),
    Compare(Compare),
    List(List),
    Verify(Verify),
    Bench(Bench),
    Recut(Recut),
}

/// The command line as clap reads it: for a learner command, its help in
/// the course's language ([`crate::learner_text::translate_help`]).
pub fn command_for(audience: Audience, name: &str) -> clap::Command {
    let command = Cli::command();
    match audience {
        Audience::Learner => crate::learner_text::translate_help(command, name),
        Audience::Author => command,
    }
}

/// Who the subcommand `name` speaks to: the learner commands speak the
/// course's language, every other command (and no command) English.
pub fn audience_of(name: &str) -> Audience {
    match name {
        "checkpoint" | "practice" | "check" | "hint" | "compare" => Audience::Learner,
        _ => Audience::Author,
    }
}

/// The usage line of subcommand `name`, without clap's label.
pub fn usage(name: &str) -> String {
    let mut command = Cli::command();
    command.build();
    let usage = match command.find_subcommand_mut(name) {
        Some(subcommand) => subcommand.render_usage().to_string(),
        None => command.render_usage().to_string(),
    };
    usage
        .trim()
        .strip_prefix("Usage:")
        .unwrap_or(&usage)
        .trim()
        .to_string()
}

/// How long one run may take: `--timeout`, shared by the commands that run
/// a chapter's tests.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Timeout {
    /// Seconds one run may take before its whole process tree is stopped.
    #[arg(
        long = "timeout",
        value_name = "SECONDS",
        default_value_t = DEFAULT_TIMEOUT_SECS,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub secs: u64,
}

impl Timeout {
    /// The limit as a duration.
    pub fn duration(self) -> Duration {
        Duration::from_secs(self.secs)
    }
}

/// Locate a chapter: where it starts and ends, the files its layer changes
/// and the commands to practise it.
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
    #[command(flatten)]
    pub limit: Timeout,
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

/// After the chapter is complete in a practice folder: each teaching file
/// beside the reference answer (the target's), as a diff.
#[derive(Debug, clap::Args)]
pub struct Compare {
    /// Chapter id, e.g. 03.
    pub id: ChapterId,
    /// The practice folder.
    pub dir: PathBuf,
    /// Compare even though the chapter is not complete in DIR yet.
    #[arg(long)]
    pub anyway: bool,
    #[command(flatten)]
    pub limit: Timeout,
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
    #[command(flatten)]
    pub limit: Timeout,
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
        self.limit.duration()
    }
}

impl Check {
    /// How long one run may take before its process tree is stopped.
    pub fn timeout(&self) -> Duration {
        self.limit.duration()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_learner_commands_are_subcommands() {
        let command = Cli::command();
        let learner: Vec<&str> = command
            .get_subcommands()
            .map(|subcommand| subcommand.get_name())
            .filter(|name| audience_of(name) == Audience::Learner)
            .collect();
        assert_eq!(
            learner,
            ["checkpoint", "practice", "check", "hint", "compare"]
        );
        assert_eq!(audience_of("verify"), Audience::Author);
        assert_eq!(audience_of(""), Audience::Author);
    }

    #[test]
    fn every_subcommand_has_its_help_once() {
        Cli::command().debug_assert();
        for subcommand in Cli::command().get_subcommands() {
            assert!(
                subcommand.get_about().is_some(),
                "{} has no help",
                subcommand.get_name()
            );
        }
        assert_eq!(usage("hint"), "cargo xtask hint [OPTIONS] <ID>");
    }
}
