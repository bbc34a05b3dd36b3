//! `verify`: each proof fails for its own reason on a tiny fixture course
//! (a dependency-free crate, so each build takes about a second).

mod common;

use common::{ANSWER, Fixture, tiny_course, tiny_course_with};
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
    assert_eq!(
        names,
        [
            "parent", "red", "green", "steps", "starter", "faults", "leak"
        ]
    );
    assert!(proofs.iter().all(|(_, passed, _)| *passed));
    // A chapter without a starter folder has no starter to prove.
    assert_eq!(proofs[4].2, "no starter folder: nothing to prove");
    assert!(
        stderr.contains(
            "[01] red: `cargo test -p course --test focused` in target/xtask-verify/01/red"
        ),
        "progress lines: {stderr}"
    );

    let table = fixture.xtask(&["verify", "01"]);
    table.success();
    assert!(
        table.stdout.contains("chapter parent        red"),
        "{}",
        table.stdout
    );
    let row = table
        .stdout
        .lines()
        .find(|line| line.starts_with("01 "))
        .unwrap();
    // The fifth proof's cell, after four of "pass N.Ns".
    assert_eq!(row.split_whitespace().nth(9), Some("–"), "{row}");
    assert!(table.stdout.contains("every checkpoint is honest"));
}

/// The parent proof keeps the build files among `labFiles` and leaves out
/// the example, which compiles only with the answer (`cargo test
/// --workspace` builds examples); the leak proof lets the example name what
/// the layer adds.
#[test]
fn a_chapter_with_lab_files_passes_every_proof() {
    let fixture = common::tiny_course_with_lab_files(|_| {});
    let (code, proofs, stderr) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:#?}\n{stderr}");
    assert!(proofs.iter().all(|(_, passed, _)| *passed), "{proofs:#?}");
    let parent = fixture.root().join("target/xtask-verify/01/parent");
    assert_eq!(
        std::fs::read_to_string(parent.join("course/Cargo.toml")).unwrap(),
        common::LAB_CARGO_TOML
    );
    assert!(!parent.join("course/examples/demo.rs").exists());
    let red = fixture.root().join("target/xtask-verify/01/red");
    assert!(red.join("course/examples/demo.rs").is_file());
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
        detail.contains("fails `doubles`") && detail.contains("left: 12"),
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
fn a_parent_whose_own_tests_fail_fails_parent() {
    let broken = "#[test]\nfn earlier_chapter() {\n    assert_eq!(1 + 1, 3);\n}\n";
    let fixed = "#[test]\nfn earlier_chapter() {\n    assert_eq!(1 + 1, 2);\n}\n";
    let fixture = tiny_course_with(
        &[
            ("course/src/lib.rs", ""),
            ("course/tests/earlier.rs", broken),
        ],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/tests/earlier.rs", fixed),
        ],
        // Handed out, or the lab would keep the broken one.
        |manifest| manifest["labFiles"] = json!(["course/tests/earlier.rs"]),
    );
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "parent");
    assert!(
        detail.contains("`cargo test --workspace` fails `earlier_chapter`"),
        "{detail}"
    );
}

#[test]
fn a_failing_test_beside_the_focused_one_fails_green() {
    let passing = "#[test]\nfn earlier_chapter() {}\n";
    let failing = "#[test]\nfn earlier_chapter() {\n    panic!(\"broken by the layer\");\n}\n";
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
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "green");
    assert!(detail.contains("broken by the layer"), "{detail}");
}

/// check runs a lab's whole suite, and a lab keeps the parent's version of
/// what the layer changes without handing it out: the answer must pass
/// there too, so such a change fails green.
#[test]
fn an_earlier_file_the_layer_changes_but_the_lab_keeps_fails_green() {
    let old = "#[test]\nfn earlier_chapter() {}\n";
    let new = "#[test]\nfn earlier_chapter() {\n    assert_eq!(course::add(1, 1), 2);\n}\n";
    let fixture = tiny_course_with(
        &[("course/src/lib.rs", ""), ("course/tests/earlier.rs", old)],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/tests/earlier.rs", new),
        ],
        |_| {},
    );
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "green");
    assert!(
        detail.contains("the layer changes `course/tests/earlier.rs`"),
        "{detail}"
    );
}

#[test]
fn the_answer_is_green_beside_the_tutor_file_a_lab_has() {
    // Chapter 12's agent example reads the folder it runs in: a lab's root
    // holds the tutor file, and a test that passed in the repository failed
    // in the lab.
    let root = "#[test]\nfn no_tutor_file() {\n    let file = concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/../AGENTS.md\");\n    assert!(!std::path::Path::new(file).exists(), \"a tutor file at the root\");\n}\n";
    let fixture = tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", ANSWER),
            ("course/tests/root.rs", root),
        ],
        |_| {},
    );
    fixture.write("checkpoints/AGENTS.md", "Be a tutor.\n");
    fixture.commit("tooling: the tutor file");
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let (proof, detail) = only_failure(&proofs);
    assert_eq!(proof, "green");
    assert!(detail.contains("no_tutor_file"), "{detail}");
}

#[test]
fn a_name_the_starting_point_already_has_is_no_leak() {
    // Chapter 06 adds `Tool`s where chapter 05 already had a `Tool` chunk: a
    // practice file that says at the parent what it says in the lab gives
    // nothing away.
    let hint = "// The next chapter will double it.\n#[test]\nfn earlier_chapter() {}\n";
    let fixture = tiny_course_with(
        &[("course/src/lib.rs", ""), ("course/tests/earlier.rs", hint)],
        &[("course/src/lib.rs", ANSWER)],
        |_| {},
    );
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:?}");
}

#[test]
fn a_name_in_the_tutor_file_is_no_leak() {
    // Chapter 09 adds a module `agent`; the tutor file every lab gets says
    // "Pi agent". It is one text for every chapter and gives nothing away.
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.write(
        "checkpoints/AGENTS.md",
        "Help the learner double their effort.\n",
    );
    fixture.commit("tooling: the tutor file");
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:?}");
}

#[test]
fn a_manifest_that_would_leak_or_misspells_a_key_is_bad_input() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["teachingFiles"] = json!(["course/src/lib.rs", "course/tests/focused.rs"]);
    });
    fixture.xtask(&["verify"]).fails_with(
        2,
        &["course/tests/focused.rs, taken from the target into every lab, is also a teaching file"],
    );
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["expectedTest"] = manifest["expectedTests"].take();
        manifest.as_object_mut().unwrap().remove("expectedTests");
    });
    fixture.xtask(&["verify"]).fails_with(
        2,
        &[
            "unknown key `expectedTest`: did you mean `expectedTests`?",
            "checkpoint.json:1:",
        ],
    );
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["labFiles"] = json!(["course/src/lib.rs"]);
    });
    fixture.xtask(&["verify"]).fails_with(
        2,
        &["course/src/lib.rs, taken from the target into every lab, is also a teaching file"],
    );
    let fixture = tiny_course("", ANSWER, |manifest| manifest["run"] = json!([]));
    fixture
        .xtask(&["verify"])
        .fails_with(2, &["`run` is empty"]);
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["teachingFiles"] = json!(["course/src/lib.rs", "course/src/gone.rs"]);
    });
    fixture.xtask(&["verify"]).fails_with(
        2,
        &["names `course/src/gone.rs` that target", "does not have"],
    );
}

#[test]
fn a_second_verify_of_the_same_repository_is_refused_while_the_first_runs() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let work = fixture.root().join("target/xtask-verify");
    std::fs::create_dir_all(&work).unwrap();
    let held = std::fs::File::create(work.join("lock")).unwrap();
    held.lock().unwrap();
    fixture.xtask(&["verify"]).fails_with(
        2,
        &[
            "another `cargo xtask verify` is running",
            "wait for it to finish",
        ],
    );
    drop(held);
}

#[test]
fn an_unknown_chapter_and_a_missing_checkpoint_are_bad_input() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture
        .xtask(&["verify", "09"])
        .fails_with(2, &["unknown chapter 09", "01"]);
    fixture.write_manifest("02", &common::manifest("02", "x.rs", &[]));
    fixture.xtask(&["verify", "02"]).fails_with(
        2,
        &["no commit reachable from HEAD has a subject starting with `course(02):`"],
    );
}

#[test]
fn a_fault_in_a_symlinked_teaching_file_is_never_written_through() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let outside = fixture.dir.path().join("outside.rs");
    std::fs::write(&outside, ANSWER).unwrap();
    std::fs::remove_file(fixture.root().join("course/src/lib.rs")).unwrap();
    fixture.symlink(outside.to_str().unwrap(), "course/src/lib.rs");
    fixture.commit("course(01): add and double, through a link");
    let (code, proofs, _) = verify(&fixture);
    assert_eq!(code, 1);
    let faults = proofs.iter().find(|(name, _, _)| name == "faults").unwrap();
    assert!(!faults.1);
    assert!(
        faults.2.contains("is a symlink, which is never followed"),
        "{}",
        faults.2
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        ANSWER,
        "the outside file is untouched"
    );
}

#[test]
fn a_work_folder_that_passes_through_a_symlink_is_refused_and_nothing_outside_changes() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let outside = fixture.dir.path().join("victim");
    std::fs::create_dir_all(outside.join("green")).unwrap();
    std::fs::write(outside.join("green/important.txt"), "precious\n").unwrap();
    std::fs::create_dir_all(fixture.root().join("target/xtask-verify")).unwrap();
    fixture.symlink(outside.to_str().unwrap(), "target/xtask-verify/01");

    fixture.xtask(&["verify"]).fails_with(
        2,
        &[
            "verify's work folder",
            "`01` is a symlink, which is never followed",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("green/important.txt")).unwrap(),
        "precious\n"
    );
    assert_eq!(
        common::snapshot(&outside).len(),
        2,
        "nothing was written there"
    );

    // The lock file and the work folder itself are refused the same way.
    std::fs::remove_file(fixture.root().join("target/xtask-verify/01")).unwrap();
    std::fs::remove_file(fixture.root().join("target/xtask-verify/lock")).unwrap();
    let diary = fixture.dir.path().join("diary.txt");
    std::fs::write(&diary, "dear diary\n").unwrap();
    fixture.symlink(diary.to_str().unwrap(), "target/xtask-verify/lock");
    fixture.xtask(&["verify"]).fails_with(2, &["lock file"]);
    assert_eq!(std::fs::read_to_string(&diary).unwrap(), "dear diary\n");

    std::fs::remove_dir_all(fixture.root().join("target")).unwrap();
    fixture.symlink(outside.to_str().unwrap(), "target");
    fixture
        .xtask(&["verify"])
        .fails_with(2, &["verify's work folder", "symlink"]);
    assert_eq!(common::snapshot(&outside).len(), 2);
}

#[test]
fn a_closed_stderr_does_not_stop_verify_with_a_panic() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["verify", "--json"])
        .current_dir(fixture.root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}
