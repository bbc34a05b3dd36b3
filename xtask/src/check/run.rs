//! Running the chapter's commands in the lab: each distinct run once (a
//! step's own run is skipped while its test file is missing), with cargo's
//! JSON messages.

use std::path::Path;
use std::time::Duration;

use super::ChangedTest;
use super::tests_intact;
use crate::error::Result;
use crate::libtest::{self, Report};
use crate::manifest::Manifest;
use crate::runner::{Captured, Invocation};

/// One of the chapter's distinct runs and what it gave.
pub(super) struct RunResult<'m> {
    pub(super) command: &'m [String],
    /// `None` when the run was skipped: its test file is not in the lab.
    /// The report's `text` is the run's output as a person reads it.
    pub(super) ran: Option<(Report, Captured)>,
}

/// Runs the chapter's distinct commands in `lab`, building in `target`;
/// the focused run always runs (it comes first), a step's own run only
/// while some step that uses it still has its test file.
pub(super) fn run_all<'m>(
    manifest: &'m Manifest,
    lab: &Path,
    target: &Path,
    timeout: Duration,
    changed: &[ChangedTest],
) -> Result<Vec<RunResult<'m>>> {
    let mut runs = Vec::new();
    for command in manifest.runs() {
        let skipped = command != manifest.run.as_slice()
            && manifest.steps.iter().all(|step| {
                step.run(manifest) != command
                    || tests_intact::own_test_change(step, changed).is_some_and(|c| c.missing)
            });
        if skipped {
            runs.push(RunResult { command, ran: None });
            continue;
        }
        let (with_json, json) = with_json_messages(command);
        let captured = Invocation {
            command: &with_json,
            extra: &[],
            dir: lab,
            target_dir: target,
            timeout,
        }
        .run()?;
        let report = if json {
            let stderr = &captured.output[..captured.output.len() - captured.stdout.len()];
            libtest::parse_cargo(&captured.stdout, stderr)
        } else {
            Report {
                text: captured.output.clone(),
                ..libtest::parse(&captured.output)
            }
        };
        let ran = Some((report, captured));
        runs.push(RunResult { command, ran });
    }
    Ok(runs)
}

/// `command` with cargo's JSON messages asked for (before a `--`, so the
/// flag is cargo's), and whether it was: only a cargo command gets it.
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
