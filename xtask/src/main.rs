//! `cargo xtask`: the course's checkpoint tooling. One module per command;
//! every flag is declared in [`cli`].

mod bench;
mod chapter;
mod check;
mod checkpoint;
mod cli;
mod error;
mod hint;
mod libtest;
mod list;
mod locate;
mod manifest;
mod practice;
mod repo;
mod runner;
mod tree;
mod verify;
mod watch;
mod worlds;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::repo::CourseRepo;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
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
    match cli.command {
        Command::Checkpoint { id, json } => {
            checkpoint::run(&CourseRepo::discover(&here)?, id, json)
        }
        Command::Practice { id, dir } => practice::run(&CourseRepo::discover(&here)?, id, &dir),
        Command::List { json } => list::run(&CourseRepo::discover(&here)?, json),
        Command::Check {
            id,
            dir,
            watch,
            verbose,
            json,
            timeout,
        } => check::run(
            &CourseRepo::discover(&here)?,
            &check::Options {
                id,
                dir,
                watch,
                verbose,
                json,
                timeout: Duration::from_secs(timeout),
            },
        ),
        Command::Bench { quick, json, only } => bench::run(
            &CourseRepo::discover(&here)?,
            &bench::Options { quick, json, only },
        ),
        Command::Hint { id, step, level } => {
            hint::run(&CourseRepo::discover(&here)?, id, step.as_deref(), level)
        }
        Command::Verify { ids, json, timeout } => verify::run(
            &CourseRepo::discover(&here)?,
            &verify::Options {
                ids,
                json,
                timeout: Duration::from_secs(timeout),
            },
        ),
    }
}
