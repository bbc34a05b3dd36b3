//! `cargo xtask`: the course's checkpoint tooling. One module per command;
//! every flag is declared in [`cli`].

mod bench;
mod chapter;
mod check;
mod checkpoint;
mod cli;
mod destination;
mod error;
mod exclude;
mod freshness;
mod hint;
mod lab;
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

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::repo::CourseRepo;

fn main() -> ExitCode {
    signals::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            // Help and version go to stdout: a closed one is no error, a
            // full one is (as for every command's output).
            return match error.print() {
                Err(failed) if failed.kind() != std::io::ErrorKind::BrokenPipe && code == 0 => {
                    out::note(format_args!(
                        "error: cannot write to standard output: {failed}"
                    ));
                    ExitCode::from(1)
                }
                _ => ExitCode::from(code),
            };
        }
    };
    match out::catch_print_panics(|| run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            out::note(format_args!("error: {error}"));
            ExitCode::from(error.exit_code())
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    // Reads trust the object database as git itself does: re-hashing every
    // object read made practice and locate markedly slower than git. Each
    // object is read once, so libgit2's object cache only costs. Both are
    // process-wide options, set before any repository opens.
    git2::opts::strict_hash_verification(false);
    git2::opts::enable_caching(false);
    let here = std::env::current_dir()
        .map_err(|error| Error::bad_input(format!("cannot read the current directory: {error}")))?;
    let repo = CourseRepo::discover(&here)?;
    match cli.command {
        Command::Checkpoint(command) => command.run(&repo),
        Command::Practice(command) => command.run(&repo),
        Command::List(command) => command.run(&repo),
        Command::Verify(command) => command.run(&repo),
        Command::Check(command) => command.run(&repo),
        Command::Hint(command) => command.run(&repo),
        Command::Bench(command) => command.run(&repo),
        Command::Recut(command) => command.run(&repo),
    }
}
