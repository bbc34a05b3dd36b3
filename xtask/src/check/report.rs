//! `check`'s report for a person.

use super::{ErrorAt, Position, StepStatus};
use crate::cli;
use crate::learner_text as say;
use crate::manifest::shown;
use crate::out::{self, outln, shell_word};

/// How many compile errors are shown (`--verbose` shows every one).
const ERRORS_SHOWN: usize = 5;

impl cli::Check {
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
            // step's own test file, or, once every step passed, another test
            // of the lab: not the next thing to do.
            let errors = position.errors.len();
            let heading = match position.suite {
                Some(_) => say::suite_does_not_compile(errors),
                None if position.ran > 0 => say::step_files_do_not_compile(errors),
                None => say::does_not_compile(errors),
            };
            print_errors(&position.errors, &heading);
        }
        print_steps(&position.steps);
        if let Some(suite) = &position.suite {
            let rerun = suite.rerun.as_deref();
            outln!(
                "{}",
                say::suite_row(suite.passed, suite.green, suite.reused, rerun)
            );
        }
        print_failure(position);
        print_ending(position);
    }
}

/// Each compile error under the teaching file where its fix goes.
fn print_errors(errors: &[ErrorAt], heading: &str) {
    outln!("{heading}");
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

/// The first failing test, where its sides first differ, and its message.
fn print_failure(position: &Position) {
    let Some(failure) = &position.first_failure else {
        return;
    };
    let heading = match &position.first_failure_step {
        _ if position.suite_failed() => say::first_failure_in_suite(&failure.name),
        Some(step) => say::first_failure_in_step(&failure.name, &shown(step)),
        None => say::first_failure(&failure.name),
    };
    outln!("{heading}");
    // A starter's `todo!` is work not written yet, not a trace to read.
    let unwritten = failure.unwritten();
    if let Some(first) = unwritten.first() {
        return outln!(
            "  {}",
            say::step_not_written_at(&shown(&first.step), first.at.as_deref())
        );
    }
    if let Some((at, left, right)) = first_difference(&failure.message) {
        outln!("  {}", say::first_difference(at, &left, &right));
    }
    // The test's and Rust's own words, quoted as they were printed.
    outln!("  {}", say::FAILURE_OUTPUT);
    for line in failure.message.lines() {
        outln!("    {}", shortened(line));
    }
}

fn print_ending(position: &Position) {
    let nothing_ran = position.compiled && position.ran == 0 && !position.timed_out;
    if nothing_ran {
        outln!("{}", say::NO_TEST_RAN);
    }
    if position.complete {
        let steps = position.steps.len();
        let done = if steps == 0 {
            say::complete(position.passed, &position.chapter)
        } else {
            say::complete_with_steps(position.passed, steps, &position.chapter)
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
        .map(|step| say::step_label(step.title.as_deref(), &step.filters))
        .collect();
    let width = labels.iter().map(|l| display_width(l)).max().unwrap_or(0);
    for (step, label) in steps.iter().zip(&labels) {
        let mark = match &step.not_written[..] {
            _ if step.green => " ✓".to_string(),
            [] => String::new(),
            [only] if *only == step.id => format!(" {}", say::NOT_WRITTEN),
            steps => format!(" {}", say::steps_not_written(steps)),
        };
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

/// How many characters of a failure's line are shown.
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

/// How long a side of an assertion must be for its first difference to show.
const LONG_SIDE: usize = 30;

/// Where `left` and `right` of a failed `assert_eq!` first differ, with a piece of each.
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
