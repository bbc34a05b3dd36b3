//! `cargo xtask`: the course's checkpoint tooling, one module per command.

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

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::learner_text::{self as say, Audience};
use crate::out::out;
use crate::repo::CourseRepo;

/// The one place where a command's outcome becomes the exit status; what
/// happened to stdout changes no code.
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
    let code = match parse(audience, &name).and_then(|cli| cli.map_or(Ok(()), run)) {
        Ok(()) => 0,
        Err(error) => {
            out::note(format_args!("{}{error}", say::error_prefix()));
            error.exit_code()
        }
    };
    out::report_lost_output();
    ExitCode::from(code)
}

/// The command line, or `None` once the help asked for is printed; clap's
/// complaint is bad input (exit 2), in the command's language.
fn parse(audience: Audience, name: &str) -> Result<Option<Cli>> {
    let parsed = cli::command_for(audience)
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    match parsed {
        Ok(cli) => Ok(Some(cli)),
        // `--help`, and no command at all: the help.
        Err(error)
            if !error.use_stderr()
                || error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            out!("{}", error.render());
            Ok(None)
        }
        Err(error) => Err(Error::bad_input(say::argument_error(
            &error,
            Cli::command().find_subcommand(name).map(|_| name),
            &cli::usage(audience, name),
        ))),
    }
}

fn run(cli: Cli) -> Result<()> {
    // Reads trust the object database as git does (re-hashing every object
    // made practice and locate markedly slower), and each object is read
    // once, so libgit2's cache only costs. Set before any repository opens.
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
