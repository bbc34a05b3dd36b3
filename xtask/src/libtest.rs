//! Reading cargo's output ([`parse_cargo`] for JSON runs, [`parse`] for
//! prose) and libtest's human output (its JSON is unstable).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

/// What one focused run tells about the learner's position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// False when cargo stopped at a compiler error.
    pub compiled: bool,
    /// True when a test binary started (`running N tests`): the tests compiled.
    pub ran: bool,
    /// The compiler errors, in order, when it did not compile.
    pub errors: Vec<CompileError>,
    pub passed: Vec<String>,
    pub failed: Vec<Failure>,
    /// Tests libtest reported as `ignored`.
    pub ignored: Vec<String>,
    /// What cargo built or found fresh (JSON runs only).
    pub artifacts: Vec<Artifact>,
    /// The run as a person would read it (JSON runs only).
    pub text: String,
}

/// One `compiler-artifact` message of cargo: built, or `fresh`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Artifact {
    pub package_id: String,
    pub fresh: bool,
    #[serde(default)]
    pub filenames: Vec<String>,
}

impl Artifact {
    /// True for a workspace or path package, false for a registry or git one.
    pub fn is_local(&self) -> bool {
        self.package_id.starts_with("path+") || self.package_id.contains("(path+")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    pub message: String,
    /// `path:line:column` as cargo prints it, relative to the workspace.
    pub location: Option<String>,
    /// rustc's own text for the error, shown intact (else its message).
    pub rendered: String,
    /// The files the diagnostic points at, primary spans first (JSON runs only).
    pub files: Vec<String>,
    /// Its child notes' messages, breadth first (a linker's own words among them).
    pub notes: Vec<String>,
}

/// A failing test and its first deviation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub name: String,
    /// The panic message, e.g. an assertion with its left and right sides.
    pub message: String,
}

/// A starter's `todo!("Lab N.M … 尚未实现")` panic a failure ran into, and
/// where (`FILE:LINE:COL`) when cargo said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwritten {
    pub step: String,
    pub at: Option<String>,
}

impl Failure {
    /// The starter's `Lab N.M … 尚未实现` panics among the messages, in order.
    pub fn unwritten(&self) -> Vec<Unwritten> {
        let mut at = None;
        let mut found = Vec::new();
        for line in self.message.lines() {
            if let Some((_, place)) = line.split_once(" panicked at ") {
                at = Some(place.trim_end_matches(':').to_string());
            }
            let Some((_, rest)) = line.split_once("Lab ") else {
                continue;
            };
            let step: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                .collect();
            let step = step.trim_end_matches('.');
            if !step.is_empty() && rest.contains("尚未实现") {
                found.push(Unwritten {
                    step: step.to_string(),
                    at: at.clone(),
                });
            }
        }
        found
    }
}

impl Report {
    /// How many tests whose name contains `filter` passed, and how many ran.
    pub fn count(&self, filter: &str) -> (usize, usize) {
        let passed = self.passed.iter().filter(|n| n.contains(filter)).count();
        let failed = self
            .failed
            .iter()
            .filter(|f| f.name.contains(filter))
            .count();
        (passed, passed + failed)
    }

    /// True when the failure list names `test` (by its last path segment).
    pub fn failed_test(&self, test: &str) -> bool {
        self.failed.iter().any(|f| short_name(&f.name) == test)
    }
}

/// The test function's name without its module path.
pub fn short_name(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

/// Parses `cargo test`'s prose output (stderr then stdout).
pub fn parse(output: &str) -> Report {
    let lines: Vec<&str> = output.lines().collect();
    let mut report = Report {
        compiled: !lines
            .iter()
            .any(|line| line.starts_with("error: could not compile")),
        ..Report::default()
    };
    read_tests(&lines, &mut report);
    report
}

/// Parses a `--message-format=json` run: cargo's JSON on `stdout` until
/// `build-finished`, libtest's output after.
pub fn parse_cargo(stdout: &str, stderr: &str) -> Report {
    let mut report = Report::default();
    let mut finished = None;
    let mut rendered = String::new();
    let mut seen = HashSet::new();
    let mut tests = Vec::new();
    for line in stdout.lines() {
        let message = (finished.is_none() && line.starts_with('{'))
            .then(|| serde_json::from_str::<CargoLine>(line).ok())
            .flatten();
        match message {
            None => tests.push(line),
            Some(CargoLine::BuildFinished { success }) => finished = Some(success),
            Some(CargoLine::CompilerArtifact(artifact)) => report.artifacts.push(artifact),
            Some(CargoLine::CompilerMessage { message }) => {
                // Cargo repeats a diagnostic when a file is compiled for
                // several targets (the library, its tests): once is enough.
                let text = message.rendered.clone().unwrap_or_default();
                if !text.is_empty() && !seen.insert(text.clone()) {
                    continue;
                }
                rendered.push_str(&text);
                if message.level == "error" && !message.message.starts_with("aborting due to") {
                    report.errors.push(message.into_error());
                }
            }
            Some(CargoLine::Other) => {}
        }
    }
    report.compiled = finished == Some(true);
    read_tests(&tests, &mut report);
    report.text = format!("{stderr}{rendered}{}", tests.join("\n"));
    report
}

/// The messages of cargo's JSON output that matter here.
#[derive(Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
enum CargoLine {
    CompilerMessage {
        message: Diagnostic,
    },
    CompilerArtifact(Artifact),
    BuildFinished {
        success: bool,
    },
    #[serde(other)]
    Other,
}

/// A rustc diagnostic, as cargo passes it on.
#[derive(Deserialize)]
struct Diagnostic {
    message: String,
    level: String,
    #[serde(default)]
    spans: Vec<Span>,
    #[serde(default)]
    children: Vec<Diagnostic>,
    rendered: Option<String>,
}

#[derive(Deserialize)]
struct Span {
    file_name: String,
    line_start: usize,
    column_start: usize,
    is_primary: bool,
}

impl Diagnostic {
    fn into_error(self) -> CompileError {
        // Primary spans first (a stable sort), then the child notes', breadth first.
        let mut spans: Vec<&Span> = self.spans.iter().collect();
        spans.sort_by_key(|span| !span.is_primary);
        let primary = spans.first().filter(|span| span.is_primary);
        let location =
            primary.map(|at| format!("{}:{}:{}", at.file_name, at.line_start, at.column_start));
        let mut children: Vec<&Diagnostic> = self.children.iter().collect();
        let (mut at, mut notes) = (0, Vec::new());
        while let Some(&child) = children.get(at) {
            spans.extend(&child.spans);
            notes.push(child.message.clone());
            children.extend(&child.children);
            at += 1;
        }
        let mut files: Vec<String> = Vec::new();
        for span in spans {
            if !files.contains(&span.file_name) {
                files.push(span.file_name.clone());
            }
        }
        let rendered = self.rendered.unwrap_or_else(|| self.message.clone());
        CompileError {
            message: self.message,
            location,
            rendered,
            files,
            notes,
        }
    }
}

fn read_tests(lines: &[&str], report: &mut Report) {
    report.ran = lines.iter().any(|line| {
        line.starts_with("running ") && (line.ends_with(" test") || line.ends_with(" tests"))
    });
    let mut failed_names = Vec::new();
    let mut seen_failed = HashSet::new();
    // Where each test's output section starts, found in one pass: a run
    // that prints a flood of lines stays linear.
    let mut sections = HashMap::new();
    for (at, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("test ") {
            if let Some(name) = rest.strip_suffix(" ... ok") {
                report.passed.push(name.to_string());
            } else if let Some((name, _)) = rest.split_once(" ... ignored") {
                report.ignored.push(name.to_string());
            } else if let Some(name) = rest.strip_suffix(" ... FAILED")
                && seen_failed.insert(name)
            {
                failed_names.push(name.to_string());
            }
        } else if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|rest| rest.strip_suffix(" stdout ----"))
        {
            sections.entry(name).or_insert(at);
        }
    }
    report.failed = failed_names
        .into_iter()
        .map(|name| {
            let message = sections
                .get(name.as_str())
                .map(|&start| failure_message(&lines[start + 1..]))
                .unwrap_or_default();
            Failure { name, message }
        })
        .collect();
}

/// The panic messages of a `---- NAME stdout ----` section; a panic raised
/// outside the tests keeps its `thread '…' panicked at FILE:LINE:COL:` line.
fn failure_message(after_header: &[&str]) -> String {
    let section = after_header
        .iter()
        .take_while(|line| !line.starts_with("---- ") && **line != "failures:");
    let mut kept = Vec::new();
    let mut in_panic = false;
    for &line in section {
        // `thread 'NAME' (ID) panicked at FILE:LINE:COL:`
        let at = line
            .strip_prefix("thread '")
            .and_then(|rest| rest.split_once(" panicked at "));
        if let Some((_, at)) = at {
            in_panic = true;
            if !(at.starts_with("tests/") || at.contains("/tests/")) {
                kept.push(line);
            }
        } else if in_panic {
            in_panic = !(line.is_empty()
                || line.starts_with("note: ")
                || line.starts_with("stack backtrace:"));
            if in_panic {
                kept.push(line);
            }
        }
    }
    kept.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_passes_failures_and_the_first_deviation() {
        let output = "\
running 3 tests
test text_projection_keeps_only_text_blocks ... FAILED
test system_replay ... ok
test tests::inner ... ok

failures:

---- text_projection_keeps_only_text_blocks stdout ----

thread 'text_projection_keeps_only_text_blocks' (123) panicked at course/tests/message_ir.rs:60:5:
assertion `left == right` failed
  left: \"先读取\\nread\\n再回答\"
 right: \"先读取\\n再回答\"
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    text_projection_keeps_only_text_blocks

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
        let report = parse(output);
        assert!(report.compiled && report.ran);
        assert_eq!(report.passed, ["system_replay", "tests::inner"]);
        assert_eq!(report.failed.len(), 1);
        assert_eq!(
            report.failed[0].message,
            "assertion `left == right` failed\n  left: \"先读取\\nread\\n再回答\"\n right: \"先读取\\n再回答\""
        );
        assert!(report.failed_test("text_projection_keeps_only_text_blocks"));
        assert!(!report.failed_test("inner"));
        assert_eq!(report.count("system"), (1, 1));
        assert_eq!(report.count(""), (2, 3));
    }

    #[test]
    fn cargo_json_gives_diagnostics_with_their_files_artifacts_and_tests() {
        let error = serde_json::json!({"reason": "compiler-message", "message": {
            "message": "`Rc<u8>` cannot be sent between threads safely", "level": "error",
            "spans": [
                {"file_name": "tests/t.rs", "line_start": 9, "column_start": 5, "is_primary": false},
                {"file_name": "tests/t.rs", "line_start": 8, "column_start": 3, "is_primary": true}
            ],
            "children": [{"message": "required because it appears within the type `C`",
                "level": "note", "spans": [{"file_name": "src/types.rs", "line_start": 2,
                "column_start": 1, "is_primary": true}], "children": [], "rendered": null}],
            "rendered": "error[E0277]: `Rc<u8>` cannot be sent\n"}});
        let warning = serde_json::json!({"reason": "compiler-message", "message": {
            "message": "unused", "level": "warning", "spans": [], "children": [],
            "rendered": "warning: unused\n"}});
        let artifact = r#"{"reason":"compiler-artifact","package_id":"path+file:///lab/course#0.1.0","fresh":false,"filenames":["/lab/target/libcourse.rlib"]}"#;
        let stdout = format!(
            "{error}\n{warning}\n{error}\n{artifact}\n{}\nrunning 2 tests\ntest a ... ok\ntest b ... ignored, slow\n{}\n",
            r#"{"reason":"build-finished","success":true}"#,
            // A test's own output after the build is libtest's, whatever it looks like.
            r#"{"reason":"build-finished","success":false}"#,
        );
        let report = parse_cargo(&stdout, "   Compiling course\n");
        assert!(report.compiled && report.ran);
        assert_eq!(report.errors.len(), 1, "a repeated diagnostic counts once");
        let error = &report.errors[0];
        assert_eq!(error.location.as_deref(), Some("tests/t.rs:8:3"));
        assert_eq!(error.files, ["tests/t.rs", "src/types.rs"]);
        assert_eq!(error.rendered, "error[E0277]: `Rc<u8>` cannot be sent\n");
        assert_eq!(report.passed, ["a"]);
        assert_eq!(report.ignored, ["b"]);
        assert!(report.artifacts[0].is_local() && !report.artifacts[0].fresh);
        assert!(report.text.starts_with("   Compiling course\nerror[E0277]"));
        assert!(report.text.contains("warning: unused\nrunning 2 tests"));
    }

    #[test]
    fn a_panic_in_the_learners_code_keeps_its_location_from_any_thread() {
        let output = "\
running 1 test
test plays_two_turns ... FAILED

failures:

---- plays_two_turns stdout ----

thread '<unnamed>' (4242) panicked at course/src/scripted_model.rs:120:9:
not yet implemented
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

thread 'plays_two_turns' (4241) panicked at course/tests/scripted_model.rs:30:5:
the stream ended without a result

failures:
    plays_two_turns
";
        let report = parse(output);
        assert_eq!(
            report.failed[0].message,
            "thread '<unnamed>' (4242) panicked at course/src/scripted_model.rs:120:9:\n\
             not yet implemented\n\
             the stream ended without a result"
        );
    }

    #[test]
    fn a_starters_todo_names_its_step_and_where_it_fired() {
        let failure = Failure {
            name: "lab8_1_reads".to_string(),
            message: "thread '<unnamed>' (7) panicked at course/src/tools.rs:40:5:\n\
                      not yet implemented: Lab 8.1 read 尚未实现\n\
                      流没有结果（every producer was dropped）"
                .to_string(),
        };
        assert_eq!(
            failure.unwritten(),
            [Unwritten {
                step: "8.1".to_string(),
                at: Some("course/src/tools.rs:40:5".to_string())
            }]
        );
        let plain = |message: &str| Failure {
            name: String::new(),
            message: message.to_string(),
        };
        assert_eq!(
            plain("Lab 8.2. 尚未实现")
                .unwritten()
                .into_iter()
                .map(|u| (u.step, u.at))
                .collect::<Vec<_>>(),
            [("8.2".to_string(), None)]
        );
        for message in ["not yet implemented", "Lab 8.1 done", "a Lab 尚未实现"] {
            assert!(plain(message).unwritten().is_empty(), "{message}");
        }
    }

    #[test]
    fn a_flood_of_repeated_failures_counts_each_test_once() {
        let mut output = "running 1 test\n".to_string();
        for _ in 0..200_000 {
            output.push_str("test adds ... FAILED\n");
        }
        output.push_str(
            "\nfailures:\n\n---- adds stdout ----\n\nthread 'adds' panicked at course/tests/x.rs:1:1:\nboom\n",
        );
        let report = parse(&output);
        assert_eq!(report.failed.len(), 1);
        assert_eq!(report.failed[0].message, "boom");
    }

    #[test]
    fn a_build_that_did_not_compile_ran_no_test() {
        let output = "\
   Compiling course v0.1.0 (/lab/course)
error[E0432]: unresolved import `course::types`
  --> course/tests/message_ir.rs:12:13
   |
12 | use course::types::{
   |             ^^^^^ could not find `types` in `course`

error[E0432]: unresolved import `course::event_stream::AssistantMessageEventStream`
 --> course/tests/message_ir.rs:11:5

error[E0412]: cannot find type `Usag` in this scope
 --> course/src/types.rs:3:12
  |
3 |     usage: Usag,
  |            ^^^^ help: a struct with a similar name exists: `Usage`

error[E0432]: unresolved import `course::event_stream::AssistantMessageEventStream`
 --> course/tests/message_ir.rs:11:5

error[E0425]: cannot find function `ad` in this scope
 --> src/lib.rs:3:5
  |
3 |     ad(x, x)
  |     ^^
  |
help: a function with a similar name exists
  |
3 |     add(x, x)
  |       +

error: could not compile `course` (test \"message_ir\") due to 2 previous errors
";
        let report = parse(output);
        assert!(!report.compiled);
        assert!(!report.ran);
        assert!(report.passed.is_empty() && report.failed.is_empty());
    }
}
