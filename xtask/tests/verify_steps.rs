//! `verify` proves a step that brings its own test file and run (issue 15:
//! chapter 03's wire step) like the chapter's own tests, and shows the
//! manifest's text safely.

mod common;

use common::{ANSWER, Fixture, failed_proofs, proofs_of, tiny_course, tiny_course_with};
use serde_json::json;

const WIRE: &str = "use course::double;\n\n#[test]\nfn wire_doubles_two() {\n    assert_eq!(double(2), 4);\n}\n\n\
                    #[test]\nfn wire_doubles_zero() {\n    assert_eq!(double(0), 0);\n}\n\n\
                    #[test]\nfn wire_doubles_negatives() {\n    assert_eq!(double(-3), -6);\n}\n";

/// Chapter 01 with a wire step 1.2: `course/tests/wire.rs` (`wire`) and
/// its own run, and a fault caught in that run.
fn wire_course(wire: &str, patch: impl FnOnce(&mut serde_json::Value)) -> Fixture {
    tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/tests/wire.rs", wire),
        ],
        |manifest| {
            manifest["steps"] = json!([
                {"id": "1.1", "filter": "adds", "expectedTests": 1},
                {"id": "1.2", "title": "线上", "filter": "", "expectedTests": 3,
                 "testFile": "course/tests/wire.rs",
                 "run": ["cargo", "test", "-p", "course", "--test", "wire"]}
            ]);
            manifest["faults"] = json!([
                {"id": "subtracts", "file": "course/src/lib.rs", "find": "a + b", "replace": "a - b", "failingTest": "adds"},
                {"id": "doubles-plus-one", "file": "course/src/lib.rs", "find": "x * 2", "replace": "x * 2 + 1",
                 "failingTest": "wire_doubles_two", "step": "1.2"}
            ]);
            patch(manifest);
        },
    )
}

fn verify(fixture: &Fixture) -> (i32, Vec<(String, bool, String)>, String) {
    let run = fixture.xtask(&["verify", "--json", "--timeout", "120"]);
    (run.code, proofs_of(&run), run.stderr)
}

fn detail<'a>(proofs: &'a [(String, bool, String)], proof: &str) -> &'a str {
    &proofs.iter().find(|(name, _, _)| name == proof).unwrap().2
}

#[test]
fn a_step_with_its_own_test_file_is_proven_like_the_focused_test() {
    let fixture = wire_course(WIRE, |_| {});
    let (code, proofs, stderr) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:#?}\n{stderr}");
    assert!(
        detail(&proofs, "parent").contains("without the 2 lab test file(s)"),
        "{proofs:#?}"
    );
    assert!(
        detail(&proofs, "red").starts_with("2 run(s) fail"),
        "{proofs:#?}"
    );
    assert!(
        detail(&proofs, "green").contains("3 in `cargo test -p course --test wire`"),
        "{proofs:#?}"
    );
    assert_eq!(detail(&proofs, "steps"), "1.1 adds 1/1, 1.2 (all) 3/3");
    assert_eq!(detail(&proofs, "faults"), "2 fault(s) caught");
    for line in [
        "[01] red: `cargo test -p course --test wire` in target/xtask-verify/01/red",
        "[01] steps: `cargo test -p course --test wire` in target/xtask-verify/01/steps",
        "[01] faults: `cargo test -p course --test wire` in target/xtask-verify/01/faults",
    ] {
        assert!(stderr.contains(line), "{line}\n{stderr}");
    }
}

#[test]
fn a_step_test_that_already_passes_at_the_parent_fails_red() {
    let constant = "#[test]\nfn wire_constant() {\n    assert_eq!(2 * 2, 4);\n}\n";
    let fixture = wire_course(constant, |manifest| {
        manifest["steps"][1]["expectedTests"] = json!(1);
        manifest["faults"].as_array_mut().unwrap().truncate(1);
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let failed = failed_proofs(&proofs);
    assert_eq!(failed.len(), 1, "{proofs:#?}");
    assert_eq!(failed[0].0, "red");
    assert!(
        failed[0]
            .1
            .contains("already passes `cargo test -p course --test wire`"),
        "{}",
        failed[0].1
    );
}

#[test]
fn a_fault_is_run_where_its_step_runs_and_a_step_counts_within_its_own_run() {
    let fixture = wire_course(WIRE, |manifest| {
        manifest["steps"][1]["filter"] = json!("negatives");
        manifest["steps"][1]["expectedTests"] = json!(2);
        manifest["faults"][1]["failingTest"] = json!("adds");
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let failed = failed_proofs(&proofs);
    let names: Vec<&str> = failed.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["steps", "faults"], "{proofs:#?}");
    assert_eq!(
        failed[0].1,
        "step 1.2 (negatives) passed 1 test(s), expected exactly 2"
    );
    assert!(
        failed[1].1.starts_with(
            "fault `doubles-plus-one` was not caught by `adds` in `cargo test -p course --test wire` (failing: "
        ),
        "{}",
        failed[1].1
    );
}

#[test]
fn a_step_test_file_missing_at_the_target_is_bad_input() {
    let fixture = wire_course(WIRE, |manifest| {
        manifest["steps"][1]["testFile"] = json!("course/tests/wires.rs");
    });
    fixture.xtask(&["verify"]).fails_with(
        2,
        &["names `course/tests/wires.rs` that target", "does not have"],
    );
}

#[test]
fn a_step_id_with_trailing_spaces_is_shown_quoted() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["steps"] = json!([{"id": "1.1 ", "filter": "adds", "expectedTests": 2}]);
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    assert_eq!(
        failed_proofs(&proofs),
        [(
            "steps",
            "step \"1.1 \" (adds) passed 1 test(s), expected exactly 2"
        )]
    );
}

#[test]
fn manifest_text_with_control_characters_is_bad_input() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["title"] = json!("加法\u{1b}[2J");
        manifest["steps"][0]["id"] = json!("1.1\r");
    });
    let run = fixture.xtask(&["verify"]);
    run.fails_with(
        2,
        &[
            "\"加法\\u{1b}[2J\" holds a control character",
            "\"1.1\\r\" holds a control character",
        ],
    );
    assert!(!run.stderr.contains('\u{1b}'), "{}", run.stderr);
}

#[test]
fn an_observe_chapter_hands_out_its_answer_on_purpose() {
    let fixture = tiny_course("", ANSWER, |manifest| manifest["mode"] = json!("observe"));
    let (code, proofs, stderr) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:#?}\n{stderr}");
    // Any other file holding the answer still leaks it.
    let fixture = tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/src/copy.txt", ANSWER),
        ],
        |manifest| manifest["mode"] = json!("observe"),
    );
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    assert_eq!(
        failed_proofs(&proofs)
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>(),
        ["leak"]
    );
    assert!(
        detail(&proofs, "leak").contains("course/src/copy.txt holds the answer"),
        "{proofs:#?}"
    );
}

/// `check` shows a step of several entries as one row whose count it
/// works out from the manifest: steps proves that count is the number of
/// distinct tests the entries select.
#[test]
fn a_step_whose_entries_select_the_same_test_twice_fails_steps() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["steps"] = json!([
            {"id": "1.1", "filter": "adds", "expectedTests": 1},
            {"id": "1.1", "filter": "dd", "expectedTests": 1},
            {"id": "1.2", "filter": "", "expectedTests": 2},
            {"id": "1.2", "filter": "doubles", "expectedTests": 1}
        ]);
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let failed = failed_proofs(&proofs);
    assert_eq!(failed.len(), 1, "{proofs:#?}");
    assert!(
        failed[0]
            .1
            .starts_with("step 1.1 selects 1 distinct test(s), but check counts 2 for its row"),
        "{}",
        failed[0].1
    );
}
