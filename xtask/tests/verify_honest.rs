//! `verify` is never green on a dishonest checkpoint and never stuck on what
//! it finds in its work folder (issue 16): a run in which no test ran, an
//! output that goes nowhere, an answer hidden in the practice folder, a FIFO
//! where verify keeps its files.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{
    ANSWER, FOCUSED, Fixture, failed_proofs, proofs_of, tiny_course, tiny_course_own_focused,
    tiny_course_with,
};
use serde_json::json;

fn verify(fixture: &Fixture) -> (i32, Vec<(String, bool, String)>) {
    let run = fixture.xtask(&["verify", "--json", "--timeout", "120"]);
    (run.code, proofs_of(&run))
}

#[test]
fn a_focused_run_whose_tests_are_all_ignored_is_red_whatever_the_counts_say() {
    let ignored = FOCUSED.replace("#[test]\n", "#[test]\n#[ignore]\n");
    let fixture = tiny_course_own_focused(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/tests/focused.rs", &ignored),
        ],
        |manifest| {
            manifest.as_object_mut().unwrap().remove("expectedTests");
            manifest["steps"] = json!([{"id": "1.1", "filter": "adds", "expectedTests": 0}]);
            manifest["faults"] = json!([]);
        },
    );
    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 1, "{proofs:#?}");
    let failed = failed_proofs(&proofs);
    let names: Vec<&str> = failed.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["green", "steps"], "{proofs:#?}");
    for (_, detail) in failed {
        assert!(
            detail.contains("ignored `adds`") && detail.contains("every lab test must run"),
            "{detail}"
        );
    }
}

#[test]
fn a_step_filter_that_matches_nothing_is_red_even_when_it_expects_nothing() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["steps"] = json!([{"id": "1.1", "filter": "no_such_test", "expectedTests": 0}]);
    });
    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 1, "{proofs:#?}");
    assert_eq!(
        failed_proofs(&proofs),
        [(
            "steps",
            "step 1.1 (no_such_test) ran no test: a run in which no test ran proves nothing \
             (does the filter match a test, was a test renamed?)"
        )]
    );
}

#[test]
fn a_run_naming_a_test_that_does_not_exist_fails_red_too() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["run"] = json!(["cargo", "test", "-p", "course", "--test", "renamed"]);
        manifest["red"] = json!([]);
        manifest.as_object_mut().unwrap().remove("expectedTests");
    });
    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 1);
    let failed = failed_proofs(&proofs);
    let red = failed.iter().find(|(name, _)| *name == "red");
    let detail = red
        .unwrap_or_else(|| panic!("red must fail: {proofs:#?}"))
        .1;
    assert!(
        detail.contains("by neither a compile error nor a failing test")
            && detail.contains("no test target named `renamed`"),
        "{detail}"
    );
    assert!(
        failed.iter().any(|(name, _)| *name == "green"),
        "{proofs:#?}"
    );
}

/// Runs verify with its stdout closed before it writes anything, as
/// `verify … | true` does, and returns its exit code.
fn exit_with_stdout_closed(fixture: &Fixture, args: &[&str]) -> Option<i32> {
    let mut child = common::spawn_xtask(fixture.root(), args, Stdio::piped());
    drop(child.stdout.take());
    let status = common::wait_at_most(&mut child, Duration::from_secs(300));
    status.and_then(|status| status.code())
}

#[test]
fn a_failed_proof_exits_1_even_when_stdout_is_closed() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["red"] = json!(["no such words"]);
    });
    assert_eq!(exit_with_stdout_closed(&fixture, &["verify"]), Some(1));
    assert_eq!(
        exit_with_stdout_closed(&fixture, &["verify", "--json"]),
        Some(1)
    );
}

#[test]
fn an_answer_already_in_the_parent_fails_leak_in_any_form() {
    let stubs = ANSWER
        .replace("a + b", "todo!()")
        .replace("x * 2", "todo!()");
    let disguised = ANSWER.replace("    ", "\t").replace('\n', "\r\n");
    let fixture = tiny_course_with(
        &[
            ("course/src/lib.rs", &stubs),
            ("course/src/solution.txt", ANSWER),
            ("notes/answer.rs", &disguised),
        ],
        &[("course/src/lib.rs", ANSWER)],
        |manifest| manifest["red"] = json!(["not yet implemented"]),
    );
    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 1, "{proofs:#?}");
    let failed = failed_proofs(&proofs);
    assert_eq!(failed.len(), 1, "{proofs:#?}");
    let (proof, detail) = failed[0];
    assert_eq!(proof, "leak");
    for file in ["course/src/solution.txt", "notes/answer.rs"] {
        assert!(
            detail.contains(&format!(
                "{file} holds the answer: the content of course/src/lib.rs at the target"
            )),
            "{detail}"
        );
    }
}

#[test]
fn a_teaching_file_the_layer_leaves_unchanged_fails_leak() {
    let fixture = tiny_course_with(
        &[("course/src/lib.rs", ""), ("course/src/types.rs", ANSWER)],
        &[(
            "course/src/lib.rs",
            "mod types;\npub use types::{add, double};\n",
        )],
        |manifest| {
            manifest["teachingFiles"] = json!(["course/src/lib.rs", "course/src/types.rs"]);
            manifest["faults"][0]["file"] = json!("course/src/types.rs");
        },
    );
    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 1, "{proofs:#?}");
    let failed = failed_proofs(&proofs);
    assert_eq!(failed.len(), 1, "{proofs:#?}");
    assert_eq!(failed[0].0, "leak");
    assert!(
        failed[0]
            .1
            .starts_with("course/src/types.rs is already the answer: the layer leaves this teaching file as it is"),
        "{}",
        failed[0].1
    );
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Runs verify and requires it to end within a minute.
fn verify_within_a_minute(fixture: &Fixture) -> (i32, String) {
    let mut child = common::spawn_xtask(fixture.root(), &["verify"], Stdio::null());
    let status = common::wait_at_most(&mut child, Duration::from_secs(60));
    let stderr = common::stderr_of(&mut child);
    let status = status.unwrap_or_else(|| panic!("verify hung:\n{stderr}"));
    (status.code().unwrap_or(-1), stderr)
}

#[test]
fn a_fifo_where_verify_keeps_its_files_is_refused_never_waited_on() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let work = fixture.root().join("target/xtask-verify");
    std::fs::create_dir_all(&work).unwrap();
    for fifo in ["cargo-target", "01"] {
        mkfifo(&work.join(fifo));
        let (code, stderr) = verify_within_a_minute(&fixture);
        assert_eq!(code, 2, "{fifo}: {stderr}");
        assert!(
            stderr.contains("not a regular file") || stderr.contains("is not a folder"),
            "{fifo}: {stderr}"
        );
        std::fs::remove_file(work.join(fifo)).unwrap();
    }
    // A FIFO as the lock file is locked, never read or written; one in
    // place of a proof's folder is removed, never opened.
    std::fs::remove_file(work.join("lock")).unwrap();
    mkfifo(&work.join("lock"));
    std::fs::create_dir_all(work.join("01")).unwrap();
    mkfifo(&work.join("01/green"));
    mkfifo(&work.join("01/steps"));
    let (code, stderr) = verify_within_a_minute(&fixture);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_failing_tests_escape_sequences_never_reach_the_terminal_raw() {
    let passing = "#[test]\nfn earlier_chapter() {}\n";
    let failing = "#[test]\nfn earlier_chapter() {\n    panic!(\"\\u{1b}[2Jbroken\");\n}\n";
    let fixture = tiny_course_with(
        &[
            ("course/src/lib.rs", ""),
            ("course/tests/earlier.rs", passing),
        ],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/tests/earlier.rs", failing),
        ],
        |_| {},
    );
    let run = fixture.xtask(&["verify", "--timeout", "120"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("\\u{1b}[2Jbroken"), "{}", run.stdout);
    assert!(run.stderr.contains("\\u{1b}[2Jbroken"), "{}", run.stderr);
    assert!(!run.stdout.contains('\u{1b}') && !run.stderr.contains('\u{1b}'));
}
