//! Running the chapter's commands in the lab: each distinct run once (a
//! step's own run is skipped while its test file is missing), with cargo's
//! JSON messages.

use std::path::Path;
use std::time::Duration;

use super::ChangedTest;
use super::tests_intact;
use crate::error::{Error, Result};
use crate::learner_text as say;
use crate::libtest::{self, Report};
use crate::manifest::Manifest;
use crate::runner::{Captured, Invocation, names_machine_failure};

/// One of the chapter's distinct runs and what it gave.
pub(super) struct RunResult<'m> {
    pub(super) command: &'m [String],
    /// `None` when the run was skipped: its test file is not in the lab.
    pub(super) ran: Option<(Report, Captured)>,
}

/// Runs the chapter's distinct commands in `lab` (a step's own run only
/// while its test file is there); with `prebuild`, first [`merged_build`].
pub(super) fn run_all<'m>(
    manifest: &'m Manifest,
    lab: &Path,
    target: &Path,
    timeout: Duration,
    changed: &[ChangedTest],
    prebuild: bool,
) -> Result<(Vec<RunResult<'m>>, Option<Report>)> {
    let skipped = |command: &[String]| {
        command != manifest.run.as_slice()
            && manifest.steps.iter().all(|step| {
                step.run(manifest) != command
                    || tests_intact::own_test_change(step, changed).is_some_and(|c| c.missing)
            })
    };
    let commands = manifest.runs();
    let to_run: Vec<&[String]> = commands.iter().copied().filter(|c| !skipped(c)).collect();
    let build = merged_build(&to_run).filter(|_| prebuild);
    let prebuilt = build
        .map(|command| {
            let captured = invoke(&command, lab, target, timeout)?;
            Ok::<_, Error>(libtest::parse_cargo(&captured.stdout, captured.stderr()))
        })
        .transpose()?;
    let mut runs = Vec::new();
    for command in commands {
        if skipped(command) {
            runs.push(RunResult { command, ran: None });
            continue;
        }
        let ran = Some(run_one(command, lab, target, timeout)?);
        runs.push(RunResult { command, ran });
    }
    Ok((runs, prebuilt))
}

pub(super) fn suite(lab: &Path, target: &Path, timeout: Duration) -> Result<(Report, Captured)> {
    let command = ["cargo", "test", "--workspace"].map(String::from);
    run_one(&command, lab, target, timeout)
}

/// Runs `command` in `lab`, with cargo's JSON messages when it is cargo.
fn run_one(
    command: &[String],
    lab: &Path,
    target: &Path,
    timeout: Duration,
) -> Result<(Report, Captured)> {
    let (with_json, json) = with_json_messages(command);
    let captured = invoke(&with_json, lab, target, timeout)?;
    let report = if json {
        let report = libtest::parse_cargo(&captured.stdout, captured.stderr());
        // rustc (and the linker it runs) says in its JSON, not on
        // cargo's stderr, that it could not write (a full disk, `ulimit -f`).
        let said = (report.errors.iter())
            .flat_map(|error| std::iter::once(&error.message).chain(&error.notes));
        let mut lines = said.flat_map(|text| text.lines());
        if let Some(why) = lines.find(|line| names_machine_failure(line)) {
            return Err(Error::environment(say::child_environment_failure(
                &command.join(" "),
                &lab.display().to_string(),
                why.trim(),
            )));
        }
        report
    } else {
        Report {
            text: captured.output.clone(),
            ..libtest::parse(&captured.output)
        }
    };
    Ok((report, captured))
}

fn invoke(command: &[String], lab: &Path, target: &Path, timeout: Duration) -> Result<Captured> {
    Invocation {
        command,
        dir: lab,
        target_dir: target,
        timeout,
    }
    .run()
}

/// One `cargo test --no-run` building the `--test` targets of several
/// `cargo test` commands that differ only in those, side by side.
fn merged_build(commands: &[&[String]]) -> Option<Vec<String>> {
    let mut shared = None;
    let mut targets = Vec::new();
    for command in commands {
        let [program, test, args @ ..] = command else {
            return None;
        };
        if Path::new(program).file_name()? != "cargo" || test != "test" {
            return None;
        }
        let before = args.split(|arg| arg == "--").next().unwrap_or_default();
        let mut rest = Vec::new();
        let mut words = before.iter();
        let found = targets.len();
        while let Some(word) = words.next() {
            match word.as_str() {
                "--test" => targets.push(words.next()?.clone()),
                word if word.starts_with("--message-format") => return None,
                _ => rest.push(word.clone()),
            }
        }
        if targets.len() == found || shared.get_or_insert_with(|| rest.clone()) != &rest {
            return None;
        }
    }
    let mut merged = ["cargo", "test", "--no-run", "--message-format=json"]
        .map(String::from)
        .to_vec();
    merged.extend(shared.filter(|_| commands.len() > 1)?);
    for target in targets {
        merged.extend(["--test".to_string(), target]);
    }
    Some(merged)
}

/// `command` with `--message-format=json` before any `--`, if it is cargo.
fn with_json_messages(command: &[String]) -> (Vec<String>, bool) {
    let mut command = command.to_vec();
    let is_cargo = command
        .first()
        .is_some_and(|program| Path::new(program).file_name() == Some("cargo".as_ref()));
    if !is_cargo
        || command
            .iter()
            .any(|arg| arg.starts_with("--message-format"))
    {
        return (command, false);
    }
    let at = command
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(command.len());
    command.insert(at, "--message-format=json".to_string());
    (command, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_that_differ_only_in_their_test_targets_are_built_in_one_invocation() {
        let words = |text: &str| text.split(' ').map(String::from).collect::<Vec<_>>();
        let focused = words("cargo test -p course --test message_ir");
        let wire = words("cargo test -p course --test message_ir_wire -- --nocapture");
        assert_eq!(
            merged_build(&[&focused, &wire]),
            Some(words(
                "cargo test --no-run --message-format=json -p course --test message_ir --test message_ir_wire"
            ))
        );
        assert_eq!(merged_build(&[&focused]), None, "one run builds alone");
        let other = words("cargo test -p other --test message_ir_wire");
        assert_eq!(merged_build(&[&focused, &other]), None);
        let all = words("cargo test -p course");
        assert_eq!(merged_build(&[&focused, &all]), None);
        assert_eq!(merged_build(&[&focused, &words("make test")]), None);
    }

    #[test]
    fn json_messages_are_asked_of_cargo_before_a_double_dash() {
        let words = |text: &str| text.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            with_json_messages(&words("cargo test -p course -- --nocapture")),
            (
                words("cargo test -p course --message-format=json -- --nocapture"),
                true
            )
        );
        assert_eq!(
            with_json_messages(&words("make test")),
            (words("make test"), false)
        );
    }
}
