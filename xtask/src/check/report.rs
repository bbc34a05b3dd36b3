//! `check`'s report for a person: the chapter's heading, changed tests, the
//! compile errors as rustc rendered them, the step rows, the first failing
//! test with where its sides first differ, and what to do next.

use super::{ErrorAt, Position, StepStatus};
use crate::cli;
use crate::learner_text as say;
use crate::manifest::shown;
use crate::out::{self, outln, shell_word};

/// How many compile errors are shown (`--verbose` shows every one).
const ERRORS_SHOWN: usize = 5;

impl cli::Check {
    /// Prints `position`: as JSON (one document, or one line per report
    /// with `--watch`; cargo's output too with `--verbose`) or as the
    /// learner's report.
    pub(super) fn print(&self, position: &mut Position) {
        if self.json {
            if self.verbose {
                position.cargo_output = Some(position.output.clone());
            }
            if self.watch {
                // One object per line, so a reader can take each report as it comes.
                let line = serde_json::to_string(position).expect("reports serialize");
                outln!("{line}");
                return out::flush();
            }
            return out::json(position);
        }
        if self.verbose {
            outln!("{}", position.output);
        }
        outln!("{}", say::heading(&position.chapter, &position.title));
        if !position.focused_test_present {
            return outln!("{}", position.output);
        }
        for changed in &position.changed_tests {
            let line = if changed.missing {
                say::test_gone(&changed.path, &changed.restore)
            } else {
                say::test_changed(&changed.path, &changed.restore)
            };
            outln!("{line}");
        }
        if !position.tests_verified {
            outln!("{}", say::tests_unverifiable(&position.chapter));
        }
        if position.timed_out {
            outln!("{}", say::timed_out(self.limit.duration()));
        } else if position.compiled {
            outln!("{}", say::COMPILES);
        } else if !position.errors.is_empty() {
            // When the focused tests ran, what does not compile is a later
            // step's own test file: not the next thing to do.
            print_errors(&position.errors, position.ran > 0);
        }
        print_steps(&position.steps);
        print_failure(position);
        print_ending(position);
    }
}

/// Each compile error under the teaching file where its fix goes, in
/// rustc's own words.
fn print_errors(errors: &[ErrorAt], focused_ran: bool) {
    if focused_ran {
        outln!("{}", say::step_files_do_not_compile(errors.len()));
    } else {
        outln!("{}", say::does_not_compile(errors.len()));
    }
    for error in errors.iter().take(ERRORS_SHOWN) {
        let location = error.location.as_deref();
        let advice = &error.advice;
        let heading = match &advice.teaching_file {
            Some(file) if !advice.declarations.is_empty() => say::error_needs_declarations(
                file,
                &advice.declarations,
                advice.new_file.as_deref(),
                location,
            ),
            Some(file) if advice.teaching_file_missing => say::error_in_new_file(file, location),
            file => say::error_in(file.as_deref(), location),
        };
        outln!("\n{heading}");
        outln!("{}", error.rendered.trim_end());
    }
    if errors.len() > ERRORS_SHOWN {
        outln!("{}", say::more_errors(errors.len() - ERRORS_SHOWN));
    }
    outln!();
}

/// The first failing test, where its assertion's sides first differ, and
/// its message.
fn print_failure(position: &Position) {
    let Some(failure) = &position.first_failure else {
        return;
    };
    let heading = match &position.first_failure_step {
        Some(step) => say::first_failure_in_step(&failure.name, &shown(step)),
        None => say::first_failure(&failure.name),
    };
    outln!("{heading}");
    if let Some((at, left, right)) = first_difference(&failure.message) {
        outln!("  {}", say::first_difference(at, &left, &right));
    }
    for line in failure.message.lines() {
        outln!("  {}", shortened(line));
    }
}

/// The verdict's line: complete (and `compare` next), no focused test ran
/// (none passed or failed: all ignored, renamed or filtered out), a run
/// that failed with no failing test (the tail of its output), or what next.
fn print_ending(position: &Position) {
    let nothing_ran = position.compiled && position.ran == 0 && !position.timed_out;
    if nothing_ran {
        outln!("{}", say::NO_TEST_RAN);
    }
    if position.complete {
        let mut ids: Vec<&str> = position.steps.iter().map(|step| step.id.as_str()).collect();
        ids.dedup();
        let done = if ids.is_empty() {
            say::complete(position.passed, &position.chapter)
        } else {
            say::complete_with_steps(position.passed, ids.len(), &position.chapter)
        };
        outln!("{done}");
        let lab = shell_word(&position.lab_from_root);
        return outln!("{}", say::compare_next(&position.chapter, &lab));
    }
    let Some(output) = &position.unexplained else {
        return outln!("{}", say::NEXT);
    };
    outln!("{}", say::FAILED_WITHOUT_A_TEST);
    let lines: Vec<&str> = output.lines().collect();
    for line in &lines[lines.len().saturating_sub(10)..] {
        outln!("  {line}");
    }
}

fn print_steps(steps: &[StepStatus]) {
    if steps.is_empty() {
        return;
    }
    outln!("{}", say::STEPS);
    let labels: Vec<String> = steps
        .iter()
        .map(|step| say::step_label(step.title.as_deref(), &step.filter))
        .collect();
    let width = labels.iter().map(|l| display_width(l)).max().unwrap_or(0);
    for (step, label) in steps.iter().zip(&labels) {
        let mark = if step.green { " ✓" } else { "" };
        let pad = width - display_width(label);
        outln!(
            "  {} {label}{} {}/{}{mark}",
            shown(&step.id),
            " ".repeat(pad),
            step.passed,
            step.expected
        );
    }
}

/// How many characters of a failure's line are shown (`--verbose` and
/// `--json` keep it whole).
const LONGEST_LINE: usize = 240;

/// `line`, cut at [`LONGEST_LINE`] characters with a note saying so.
fn shortened(line: &str) -> String {
    let length = line.chars().count();
    if length <= LONGEST_LINE {
        return line.to_string();
    }
    let kept: String = line.chars().take(LONGEST_LINE).collect();
    format!("{kept}{}", say::line_cut(length))
}

/// How long a side of an assertion must be for its first difference to be
/// pointed out (a line of JSON is; a number is not).
const LONG_SIDE: usize = 30;

/// Where the `left` and `right` of a failed `assert_eq!` first differ: the
/// character position (from 1) and a short piece of each side from there.
fn first_difference(message: &str) -> Option<(usize, String, String)> {
    let side = |name: &str| {
        let line = message
            .lines()
            .find_map(|line| line.trim_start().strip_prefix(name));
        line.map(|side| side.trim().chars().collect::<Vec<char>>())
    };
    let (left, right) = (side("left:")?, side("right:")?);
    // Short sides are read at a glance.
    if left.len().max(right.len()) < LONG_SIDE || left == right {
        return None;
    }
    let at = left.iter().zip(&right).take_while(|(a, b)| a == b).count();
    let piece = |side: &[char]| {
        let rest: String = side[at..].iter().take(24).collect();
        if rest.is_empty() {
            "（结束）".to_string()
        } else {
            format!("`{rest}`")
        }
    };
    Some((at + 1, piece(&left), piece(&right)))
}

/// Columns `text` takes in a terminal: CJK characters take two.
fn display_width(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '\u{1100}'..='\u{115F}'
            | '\u{2E80}'..='\u{A4CF}'
            | '\u{AC00}'..='\u{D7A3}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{FE30}'..='\u{FE4F}'
            | '\u{FF00}'..='\u{FF60}'
            | '\u{FFE0}'..='\u{FFE6}' => 2,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learner_text as say;

    #[test]
    fn chinese_characters_take_two_columns() {
        assert_eq!(display_width("system"), 6);
        assert_eq!(display_width("全部"), 4);
        assert_eq!(display_width("3.1 全部"), 8);
    }

    #[test]
    fn a_long_failure_line_is_cut_with_its_length() {
        assert_eq!(shortened("left: 1"), "left: 1");
        let long = "字".repeat(LONGEST_LINE + 10);
        let cut = shortened(&long);
        assert!(cut.starts_with(&"字".repeat(LONGEST_LINE)), "{cut}");
        assert!(cut.ends_with(&say::line_cut(LONGEST_LINE + 10)), "{cut}");
    }

    #[test]
    fn the_first_difference_of_an_assertion_is_found() {
        let message = "assertion `left == right` failed\n  left: \"{\\\"tool_call\\\":1,\\\"arguments\\\":{}}\"\n right: \"{\\\"toolCall\\\":1,\\\"arguments\\\":{}}\"";
        let (at, left, right) = first_difference(message).unwrap();
        assert_eq!(at, 9);
        assert!(left.starts_with("`_call"), "{left}");
        assert!(right.starts_with("`Call"), "{right}");
        assert!(first_difference("left: 1\nright: 2").is_none(), "short");
        let same = format!("left: {0}\nright: {0}", "x".repeat(40));
        assert!(first_difference(&same).is_none());
        assert!(first_difference("boom").is_none());
    }
}
