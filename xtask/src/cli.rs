//! Every command and flag of `cargo xtask`. An author command's help is its
//! doc comment (English); a learner command's and the top level's come from
//! [`crate::learner_text::help`] (Chinese).

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use crate::learner_text::Audience;
use crate::learner_text::help;
use crate::manifest::ChapterId;

#[derive(Debug, Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = help::ROOT,
    disable_help_subcommand = true
)]
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

/// The command line as clap reads it: for a learner, laid out in the
/// course's language ([`help::for_learner`]).
pub fn command_for(audience: Audience) -> clap::Command {
    let command = Cli::command();
    match audience {
        Audience::Learner => help::for_learner(command),
        Audience::Author => command,
    }
}

/// Who the subcommand `name` speaks to: the author commands English; the
/// rest (the top level and a mistyped command too) the course's language.
pub fn audience_of(name: &str) -> Audience {
    match name {
        "list" | "verify" | "bench" | "recut" => Audience::Author,
        _ => Audience::Learner,
    }
}

/// The usage line of subcommand `name` (of the top level when `name` is
/// none), without clap's label.
pub fn usage(audience: Audience, name: &str) -> String {
    let mut command = command_for(audience);
    command.build();
    let usage = match command.find_subcommand_mut(name) {
        Some(subcommand) => subcommand.render_usage(),
        None => command.render_usage(),
    };
    usage.to_string().replace("Usage:", "").trim().to_string()
}

#[derive(Debug, Clone, Copy, clap::Args)]
pub struct Timeout {
    /// Seconds one run may take before its whole process tree is stopped.
    #[arg(
        long = "timeout",
        value_name = "SECONDS",
        default_value_t = crate::runner::DEFAULT_TIMEOUT_SECS,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub secs: u64,
}

impl Timeout {
    pub fn duration(self) -> Duration {
        Duration::from_secs(self.secs)
    }
}

// The learner commands: their help is in `learner_text::help`.

#[derive(Debug, clap::Args)]
#[command(about = help::CHECKPOINT)]
pub struct Checkpoint {
    #[arg(help = help::ID)]
    pub id: ChapterId,
    #[arg(long, help = help::JSON)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
#[command(about = help::PRACTICE)]
pub struct Practice {
    #[arg(help = help::ID)]
    pub id: ChapterId,
    #[arg(help = help::NEW_LAB)]
    pub dir: PathBuf,
}

#[derive(Debug, clap::Args)]
#[command(about = help::CHECK)]
pub struct Check {
    #[arg(help = help::ID)]
    pub id: ChapterId,
    #[arg(help = help::LAB)]
    pub dir: PathBuf,
    #[arg(long, help = help::WATCH)]
    pub watch: bool,
    #[arg(long, help = help::VERBOSE)]
    pub verbose: bool,
    #[arg(long, help = help::JSON)]
    pub json: bool,
    #[arg(long, help = help::RESTORE_TESTS)]
    pub restore_tests: bool,
    #[command(flatten)]
    pub limit: Timeout,
}

#[derive(Debug, clap::Args)]
#[command(about = help::HINT)]
pub struct Hint {
    #[arg(help = help::ID)]
    pub id: ChapterId,
    #[arg(long, help = help::STEP)]
    pub step: Option<String>,
    #[arg(
        long,
        help = help::LEVEL,
        default_value_t = 1,
        value_parser = clap::value_parser!(u8).range(1..=4)
    )]
    pub level: u8,
}

#[derive(Debug, clap::Args)]
#[command(about = help::COMPARE)]
pub struct Compare {
    #[arg(help = help::ID)]
    pub id: ChapterId,
    #[arg(help = help::LAB)]
    pub dir: PathBuf,
    #[arg(long, help = help::ANYWAY)]
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

/// What `bench` measures, by the names `--only` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// The course crate's stream against `std::sync::mpsc`.
    Stream,
    /// The course crate's system replay against a bare loop.
    Replay,
    /// The course crate's typed JSON against `serde_json::Value`.
    Json,
    /// A learner's cold build, and check on an unchanged lab.
    Learner,
}

impl Workload {
    /// The name `--only` takes.
    pub fn name(self) -> String {
        let value = self.to_possible_value().expect("no variant is skipped");
        value.get_name().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top-level help as a learner reads it.
    fn learner_help(name: Option<&str>) -> String {
        let mut command = command_for(Audience::Learner);
        command.build();
        match name {
            Some(name) => command.find_subcommand_mut(name).unwrap().render_help(),
            None => command.render_help(),
        }
        .to_string()
    }

    #[test]
    fn the_learner_commands_come_first_and_speak_chinese() {
        let command = Cli::command();
        let names: Vec<&str> = command
            .get_subcommands()
            .map(|subcommand| subcommand.get_name())
            .collect();
        let learner = ["checkpoint", "practice", "check", "hint", "compare"];
        assert_eq!(names[..learner.len()], learner);
        assert!(
            names[learner.len()..]
                .iter()
                .all(|name| audience_of(name) == Audience::Author)
        );
        assert_eq!(audience_of(""), Audience::Learner);
        assert_eq!(audience_of("chek"), Audience::Learner);
        let top = learner_help(None);
        let english = [
            "Usage:",
            "Options:",
            "Arguments:",
            "Commands:",
            "Print",
            "default",
        ];
        for name in learner {
            let help = learner_help(Some(name));
            for word in english {
                assert!(!help.contains(word), "{word} in {name}'s help: {help}");
            }
            assert!(top.contains(name), "{top}");
        }
        for word in english {
            assert!(!top.contains(word), "{word} in the top-level help: {top}");
        }
        let position = |name: &str| top.find(&format!("  {name} ")).unwrap();
        assert!(position("compare") < position("list"), "{top}");
        assert_eq!(top.matches("（作者用）").count(), 4, "{top}");
        assert!(learner_help(Some("hint")).contains("（默认 1）"));
        assert!(learner_help(Some("check")).contains("（默认 600）"));
    }

    #[test]
    fn every_subcommand_has_its_help() {
        Cli::command().debug_assert();
        command_for(Audience::Learner).debug_assert();
        for subcommand in Cli::command().get_subcommands() {
            assert!(
                subcommand.get_about().is_some(),
                "{} has no help",
                subcommand.get_name()
            );
            for arg in subcommand.get_arguments() {
                assert!(
                    arg.get_help().is_some(),
                    "{}: {}",
                    subcommand.get_name(),
                    arg.get_id()
                );
            }
        }
        assert_eq!(
            usage(Audience::Author, "hint"),
            "cargo xtask hint [OPTIONS] <ID>"
        );
        assert_eq!(usage(Audience::Learner, "chek"), "cargo xtask <命令>");
    }
}
