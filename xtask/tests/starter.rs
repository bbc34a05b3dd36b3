//! Starters (SPEC §4): `checkpoints/NN/starter/` holds teaching files as
//! the lab gets them, laid over the starting point by `practice`; `check`
//! calls a step whose tests stop at the starter's `todo!` not written yet;
//! `verify` proves the starter builds, makes each step red with its own
//! `todo!`, and holds no body of the answer.

mod common;

use std::fs;

use common::{Fixture, failed_proofs, proofs_of, tiny_course};
use serde_json::json;

/// The answer: `add` has a body with a branch (a body of one line, or one
/// that only builds a value, is exempt from the starter's proof), `double`
/// one line.
const ANSWER: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    if b == 0 {\n        return a;\n    }\n    a + b\n}\n\n\
                      pub fn double(x: i32) -> i32 {\n    x * 2\n}\n";

const STARTER: &str = "/// `a` plus `b`.\npub fn add(_a: i32, _b: i32) -> i32 {\n    todo!(\"Lab 1.1 add 尚未实现\")\n}\n\n\
                       /// Twice `x`.\npub fn double(_x: i32) -> i32 {\n    todo!(\"Lab 1.2 double 尚未实现\")\n}\n";

/// Chapter 01 with steps 1.1 (`adds`) and 1.2 (`doubles`) and `starter`
/// as its starter's `course/src/lib.rs`; its first red is the starter's.
fn course_with_starter(starter: &str) -> Fixture {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["red"] = json!(["Lab 1.1 add 尚未实现"]);
        manifest["steps"] = json!([
            {"id": "1.1", "filter": "adds", "expectedTests": 1},
            {"id": "1.2", "filter": "doubles", "expectedTests": 1}
        ]);
    });
    fixture.write("checkpoints/01/starter/course/src/lib.rs", starter);
    fixture
}

fn verify(fixture: &Fixture) -> (i32, Vec<(String, bool, String)>) {
    let run = fixture.xtask(&["verify", "--json", "--timeout", "120"]);
    (run.code, proofs_of(&run))
}

#[test]
fn a_lab_starts_from_the_starter_and_verify_proves_it() {
    let fixture = course_with_starter(STARTER);
    fixture
        .xtask(&["practice", "01", "lab"])
        .success()
        .prints(&["起始文件：course/src/lib.rs 已经开好头"]);
    let lab = fixture.root().join("lab");
    assert_eq!(
        fs::read_to_string(lab.join("course/src/lib.rs")).unwrap(),
        STARTER
    );
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "✓ 能编译",
        "1.1 adds    0/1 还没写",
        "1.2 doubles 0/1 还没写",
    ]);
    let checkpoint = fixture.xtask(&["checkpoint", "01", "--json"]).json();
    assert_eq!(checkpoint["files"][0]["starter"], true, "{checkpoint}");

    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:#?}");
    let starter = &proofs
        .iter()
        .find(|(name, _, _)| name == "starter")
        .unwrap()
        .2;
    assert_eq!(
        starter,
        "1 starter file(s) build; 2 step run(s) red, each at a todo! of its step or an earlier one; \
         no body of the answer"
    );
}

#[test]
fn a_starter_that_names_a_later_step_or_copies_a_body_fails_its_proof() {
    // `add` is the answer's (re-indented), `double`'s todo names a step
    // after its own.
    let wrong = "pub fn add(a: i32, b: i32) -> i32 {\n  if b == 0 {\n    return a;\n  }\n  a + b\n}\n\n\
                 pub fn double(_x: i32) -> i32 {\n    todo!(\"Lab 1.3 double 尚未实现\")\n}\n";
    let fixture = course_with_starter(wrong);
    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 1);
    let failed = failed_proofs(&proofs);
    let names: Vec<&str> = failed.iter().map(|(name, _)| *name).collect();
    // The red string names step 1.1's todo, which is gone too.
    assert_eq!(names, ["red", "starter"], "{proofs:#?}");
    let detail = failed[1].1;
    for needle in [
        "`cargo test -p course --test focused adds` passes with the starter",
        "`cargo test -p course --test focused doubles` fails elsewhere than at a todo in \
         `doubles` with the starter: its tests must stop at a starter's \
         `todo!(\"Lab N.M … 尚未实现\")` of step 1.2 or an earlier one",
        "the starter's course/src/lib.rs holds the body of `fn add` of course/src/lib.rs",
    ] {
        assert!(detail.contains(needle), "{needle}\n{detail}");
    }
}

/// As chapter 05's: the starter leaves the learner's change to an
/// existing file (`types.rs`) to the learner, so the lab with it does not
/// build until that change is made. parent proves the starting point
/// without the starter, starter proves it against the target's `types.rs`;
/// a step's tests may stop at an earlier step's todo.
#[test]
fn a_starter_that_needs_the_learners_change_to_an_existing_file_is_proven_with_the_targets() {
    let types = "/// Numbers.\npub type Number = i32;\n";
    let ops = "use crate::types::{Number, ZERO};\n\n\
               pub fn add(a: Number, b: Number) -> Number {\n    let sum = ZERO + a;\n    sum + b\n}\n\n\
               pub fn double(x: Number) -> Number {\n    add(x, x)\n}\n";
    let lib = "pub mod ops;\npub mod types;\npub use ops::{add, double};\n";
    let fixture = common::tiny_course_with(
        &[
            ("course/src/lib.rs", "pub mod types;\n"),
            ("course/src/types.rs", types),
        ],
        &[
            ("course/src/lib.rs", lib),
            ("course/src/ops.rs", ops),
            (
                "course/src/types.rs",
                &format!("{types}\n/// Where a sum starts.\npub const ZERO: Number = 0;\n"),
            ),
        ],
        |manifest| {
            manifest["teachingFiles"] = json!([
                "course/src/ops.rs",
                "course/src/types.rs",
                "course/src/lib.rs"
            ]);
            manifest["red"] = json!(["no `ZERO` in `types`"]);
            manifest["steps"] = json!([
                {"id": "1.1", "filter": "adds", "expectedTests": 1},
                {"id": "1.2", "filter": "doubles", "expectedTests": 1}
            ]);
            manifest["faults"][0]["file"] = json!("course/src/ops.rs");
            manifest["faults"][0]["find"] = json!("sum + b");
            manifest["faults"][0]["replace"] = json!("sum - b");
        },
    );
    let starter = "use crate::types::{Number, ZERO};\n\n\
                   pub fn add(_a: Number, _b: Number) -> Number {\n    let _ = ZERO;\n    todo!(\"Lab 1.1 add 尚未实现\")\n}\n\n\
                   pub fn double(x: Number) -> Number {\n    add(x, x)\n}\n";
    fixture.write("checkpoints/01/starter/course/src/ops.rs", starter);
    fixture.write("checkpoints/01/starter/course/src/lib.rs", lib);
    let (code, proofs) = verify(&fixture);
    assert_eq!(code, 0, "{proofs:#?}");
}

#[test]
fn a_starter_file_that_is_no_teaching_file_is_bad_input() {
    let fixture = course_with_starter(STARTER);
    fixture.write("checkpoints/01/starter/course/src/extra.rs", "// extra\n");
    let before = common::snapshot(fixture.root());
    fixture.xtask(&["practice", "01", "lab"]).fails_with(
        2,
        &[
            "checkpoints/01/starter/course/src/extra.rs",
            "不是第 01 章要你写的文件",
        ],
    );
    assert_eq!(common::snapshot(fixture.root()), before, "nothing written");
    fixture.xtask(&["verify"]).fails_with(
        2,
        &["checkpoints/01/starter/course/src/extra.rs is not one of chapter 01's teachingFiles"],
    );

    // A starter folder that is a symlink is never read through.
    let outside = fixture.dir.path().join("outside");
    fs::rename(fixture.root().join("checkpoints/01/starter"), &outside).unwrap();
    fs::remove_file(outside.join("course/src/extra.rs")).unwrap();
    fixture.symlink(outside.to_str().unwrap(), "checkpoints/01/starter");
    fixture
        .xtask(&["practice", "01", "lab"])
        .fails_with(2, &["checkpoints/01/starter/course/src/lib.rs", "符号链接"]);
}

#[test]
fn compare_says_which_of_the_learners_lines_the_starter_gave() {
    // The starter's doc comments are not in the answer: compare counts them
    // among the lab's own lines, but says the starter wrote them.
    let fixture = course_with_starter(STARTER);
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab/course/src/lib.rs");
    let solved = STARTER
        .replace(
            "todo!(\"Lab 1.1 add 尚未实现\")",
            "if b == 0 {\n        return a;\n    }\n    a + b",
        )
        .replace("_a: i32, _b: i32", "a: i32, b: i32")
        .replace("todo!(\"Lab 1.2 double 尚未实现\")", "x * 2")
        .replace("_x: i32", "x: i32");
    fs::write(&lab, solved).unwrap();
    fixture
        .xtask(&["compare", "01", "lab"])
        .success()
        .prints(&["只在你这边的 2 行（其中 2 行是起始文件给的）"]);
}

#[test]
fn practice_names_a_starter_file_without_todo_as_written() {
    // A crate root that only declares the chapter's module has nothing for
    // the learner to write: practice does not say it has todo!s.
    let fixture = course_with_starter("pub mod declared_only {}\n");
    fixture
        .xtask(&["practice", "01", "lab"])
        .success()
        .prints(&["起始文件：course/src/lib.rs 已经写好"]);
}
