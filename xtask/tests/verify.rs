//! `verify`: each proof fails for its own reason on a tiny fixture course
//! (a dependency-free crate, so each build takes about a second).

mod common;

use common::{ANSWER, Fixture, tiny_course};
use serde_json::json;

/// Runs `verify --json` and returns (exit code, proof → (passed, detail)).
fn verify(fixture: &Fixture) -> (i32, Vec<(String, bool, String)>, String) {
    let run = fixture.xtask(&["verify", "--json", "--timeout", "120"]);
    let summary = run.json();
    let proofs = summary["chapters"][0]["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|proof| {
            (
                proof["proof"].as_str().unwrap().to_string(),
                proof["passed"].as_bool().unwrap(),
                proof["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (run.code, proofs, run.stderr)
}

fn only_failure(proofs: &[(String, bool, String)]) -> (&str, &str) {
    let failed: Vec<_> = proofs.iter().filter(|(_, passed, _)| !passed).collect();
    assert_eq!(failed.len(), 1, "exactly one proof fails: {proofs:#?}");
    (failed[0].0.as_str(), failed[0].2.as_str())
}

#[test]
fn an_honest_checkpoint_passes_every_proof() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let (code, proofs, stderr) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:#?}\n{stderr}");
    let names: Vec<&str> = proofs.iter().map(|(name, _, _)| name.as_str()).collect();
    assert_eq!(names, ["red", "green", "steps", "faults", "leak"]);
    assert!(proofs.iter().all(|(_, passed, _)| *passed));
    assert!(
        stderr.contains("[01] red: building parent"),
        "progress lines: {stderr}"
    );

    let table = fixture.xtask(&["verify", "01"]);
    table.success();
    assert!(table.stdout.contains("chapter red"), "{}", table.stdout);
    assert!(table.stdout.contains("every checkpoint is honest"));
}

#[test]
fn a_parent_that_already_passes_fails_red() {
    let fixture = tiny_course(ANSWER, &format!("{ANSWER}// layer\n"), |_| {});
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "red");
    assert!(detail.contains("already passes"), "{detail}");
}

#[test]
fn a_red_string_missing_from_the_output_fails_red() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["red"] = json!(["unresolved import", "no such words"])
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "red");
    assert!(detail.contains("`no such words`"), "{detail}");
}

#[test]
fn a_target_that_fails_fails_green() {
    let broken = ANSWER.replace("x * 2", "x * 3");
    let fixture = tiny_course("", &broken, |manifest| manifest["faults"] = json!([]));
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "green", "the `adds` step still passes");
    assert!(
        detail.contains("the target fails `doubles`") && detail.contains("left: 12"),
        "{detail}"
    );
}

#[test]
fn a_wrong_test_count_fails_green_and_a_wrong_step_count_fails_steps() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["steps"] = json!([{"id": "1.1", "filter": "adds", "expectedTests": 2}]);
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "steps");
    assert!(
        detail.contains("step 1.1 (adds) passed 1 test(s), expected exactly 2"),
        "{detail}"
    );

    let fixture = tiny_course("", ANSWER, |manifest| manifest["expectedTests"] = json!(3));
    let (_, proofs, _) = verify(&fixture);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "green");
    assert!(
        detail.contains("passed 2 test(s), expected exactly 3"),
        "{detail}"
    );
}

#[test]
fn a_fault_that_no_test_catches_fails_faults() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["faults"] = json!([{"id": "commutes", "file": "course/src/lib.rs", "find": "a + b", "replace": "b + a", "failingTest": "adds"}]);
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "faults");
    assert!(
        detail.contains("fault `commutes` was not caught by `adds`"),
        "{detail}"
    );
    assert!(detail.contains("strengthen the focused test"), "{detail}");
}

#[test]
fn a_fault_whose_text_is_missing_fails_faults() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["faults"] = json!([{"id": "ghost", "file": "course/src/lib.rs", "find": "a * b", "replace": "a / b", "failingTest": "adds"}]);
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "faults");
    assert!(
        detail.contains("fault `ghost`: its `find` text occurs 0 times"),
        "{detail}"
    );
}

#[test]
fn a_focused_test_that_carries_the_answer_fails_leak() {
    // Declaring the focused test a teaching file means practice hands out the answer's file.
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["teachingFiles"] = json!(["course/src/lib.rs", "course/tests/focused.rs"]);
    });
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "leak");
    assert!(
        detail.contains("teaching file course/tests/focused.rs differs"),
        "{detail}"
    );
}

#[test]
fn an_unknown_chapter_is_bad_input_and_a_missing_checkpoint_fails() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture
        .xtask(&["verify", "09"])
        .fails_with(2, &["unknown chapter 09", "01"]);
    fixture.write_manifest("02", &common::manifest("02", "x.rs", &[]));
    let run = fixture.xtask(&["verify", "02"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.contains("no commit reachable from HEAD"),
        "{}",
        run.stdout
    );
}
