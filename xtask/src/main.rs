//! `cargo xtask`: the course's checkpoint tooling. One module per command;
//! every flag is declared in [`cli`]. Learner commands speak Chinese,
//! author commands English: `main` tells [`learner_text`] which, once.

mod bench;
mod chapter;
mod check;
mod checkpoint;
mod cli;
mod compare;
mod destination;
mod error;
mod exclude;
mod freshness;
mod hint;
mod lab;
mod lab_dir;
mod learner_text;
mod libtest;
mod list;
mod locate;
mod manifest;
mod out;
mod practice;
mod recut;
mod repo;
mod runner;
mod safe_fs;
mod signals;
mod tree;
mod verify;
mod watch;
mod worlds;

use std::process::ExitCode;

use clap::FromArgMatches;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::learner_text::{self as say, Audience};
use crate::repo::CourseRepo;

fn main() -> ExitCode {
    signals::install();
    // Who reads is known before parsing, so argument errors speak the
    // command's language too.
    let name = std::env::args_os()
        .nth(1)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let audience = cli::audience_of(&name);
    say::set_audience(audience);
    let parsed = cli::command_for(audience, &name)
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => return argument_error(&error, &name, audience),
    };
    match out::catch_print_panics(|| run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            out::note(format_args!("{}{error}", say::error_prefix()));
            ExitCode::from(error.exit_code())
        }
    }
}

/// Reports what clap found wrong with the arguments (exit 2), or prints the
/// help or version it was asked for (exit 0). A learner command's errors are
/// rendered in the learner's language (`name` is the subcommand).
fn argument_error(error: &clap::Error, name: &str, audience: Audience) -> ExitCode {
    if !error.use_stderr() {
        // Help and version go to stdout: a closed one is no error, a full
        // one is (as for every command's output).
        return match error.print() {
            Err(failed) if failed.kind() != std::io::ErrorKind::BrokenPipe => {
                out::note(format_args!(
                    "error: cannot write to standard output: {failed}"
                ));
                ExitCode::from(1)
            }
            _ => ExitCode::SUCCESS,
        };
    }
    if audience == Audience::Learner {
        out::note(format_args!(
            "{}",
            say::argument_error(error, name, &cli::usage(name))
        ));
    } else {
        let _ = error.print();
    }
    ExitCode::from(2)
}

fn run(cli: Cli) -> Result<()> {
    // Reads trust the object database as git itself does: re-hashing every
    // object read made practice and locate markedly slower than git. Each
    // object is read once, so libgit2's object cache only costs. Both are
    // process-wide options, set before any repository opens.
    git2::opts::strict_hash_verification(false);
    git2::opts::enable_caching(false);
    let here = std::env::current_dir()
        .map_err(|error| Error::bad_input(say::current_dir_unreadable(&error)))?;
    let repo = CourseRepo::discover(&here)?;
    match cli.command {
        Command::Checkpoint(command) => command.run(&repo),
        Command::Practice(command) => command.run(&repo),
        Command::Check(command) => command.run(&repo),
        Command::Hint(command) => command.run(&repo),
        Command::Compare(command) => command.run(&repo),
        Command::List(command) => command.run(&repo),
        Command::Verify(command) => command.run(&repo),
        Command::Bench(command) => command.run(&repo),
        Command::Recut(command) => command.run(&repo),
    }
}
