//! `check` and `hint`: the learner's loop on a tiny fixture course.

mod common;

use std::fs;

use common::{ANSWER, Fixture, tiny_course};

fn lab_with(fixture: &Fixture, lib: Option<&str>) -> std::path::PathBuf {
    let lab = fixture.root().join("lab");
    if !lab.exists() {
        fixture.xtask(&["practice", "01", "lab"]).success();
    }
    if let Some(lib) = lib {
        fs::write(lab.join("course/src/lib.rs"), lib).unwrap();
    }
    lab
}

#[test]
fn check_follows_the_learner_from_red_to_green() {
    let fixture = tiny_course("", ANSWER, |_| {});
    lab_with(&fixture, None);

    let red = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(red.code, 1, "{}{}", red.stdout, red.stderr);
    red.prints(&[
        "✗ does not compile",
        "unresolved import",
        "at course/tests/focused.rs:1:",
        "→ belongs to course/src/lib.rs",
        "1.1 adds 0/1",
    ]);
    assert!(
        !red.stdout.contains("Compiling"),
        "no raw cargo noise without --verbose"
    );

    // Half done: `add` works, `double` is wrong; the assertion's sides show.
    lab_with(&fixture, Some(&ANSWER.replace("x * 2", "x + 2")));
    let partial = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(partial.code, 1);
    partial.prints(&[
        "✓ compiles",
        "1.1 adds 1/1 ✓",
        "First failing test: doubles",
        "left: 6",
        "right: 8",
    ]);

    lab_with(&fixture, Some(ANSWER));
    fixture
        .xtask(&["check", "01", "lab"])
        .success()
        .prints(&["All 2 focused tests pass"]);

    let verbose = fixture.xtask(&["check", "01", "lab", "--verbose"]);
    assert!(
        verbose.stdout.contains("test result: ok. 2 passed"),
        "{}",
        verbose.stdout
    );
}

#[test]
fn check_shows_a_panic_message_and_reports_json() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab_with(
        &fixture,
        Some(&ANSWER.replace("x * 2", "todo!(\"double is next\")")),
    );
    let run = fixture.xtask(&["check", "01", lab.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, 1);
    let json = run.json();
    assert_eq!(json["compiled"], true);
    assert_eq!(json["complete"], false);
    assert_eq!(json["passed"], 1);
    assert_eq!(json["expected"], 2);
    assert_eq!(json["firstFailure"]["name"], "doubles");
    assert!(
        json["firstFailure"]["message"]
            .as_str()
            .unwrap()
            .contains("not yet implemented: double is next")
    );
    assert_eq!(json["steps"][0]["id"], "1.1");
    assert_eq!(json["steps"][0]["green"], true);
}

#[test]
fn check_without_a_practice_folder_is_bad_input() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture
        .xtask(&["check", "01", "nowhere"])
        .fails_with(2, &["not a practice folder", "cargo xtask practice 01"]);
}

#[test]
fn hints_climb_one_rung_at_a_time() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let ladder = "## 1.1\n### 1\nOpen lib.rs.\n### 2\nfn add(a: i32, b: i32) -> i32\n### 3\nreturn the sum\n### 4\na + …\n\
                  ## 1.2\n### 1\nStill lib.rs.\n### 2\nfn double\n### 3\ntwice\n### 4\nx * …\n";
    fixture.write("checkpoints/01/hints.md", ladder);

    let first = fixture.xtask(&["hint", "01"]);
    first.success();
    assert!(first.stdout.contains("step 1.1"), "{}", first.stdout);
    assert!(first.stdout.contains("[1] locate the file") && first.stdout.contains("Open lib.rs."));
    assert!(
        !first.stdout.contains("fn add"),
        "level 1 stops at the file: {}",
        first.stdout
    );
    assert!(
        first.stdout.contains("--step 1.1 --level 2"),
        "{}",
        first.stdout
    );

    let third = fixture.xtask(&["hint", "01", "--step", "1.2", "--level", "3"]);
    third.success();
    for needle in ["Still lib.rs.", "fn double", "twice"] {
        assert!(third.stdout.contains(needle), "{needle}: {}", third.stdout);
    }
    assert!(!third.stdout.contains("x * …"));

    fixture
        .xtask(&["hint", "01", "--step", "9.9"])
        .fails_with(2, &["no step 9.9", "valid steps are 1.1, 1.2"]);
    let level = fixture.xtask(&["hint", "01", "--level", "5"]);
    assert_eq!(level.code, 2);
    assert!(level.stderr.contains("1..=4"), "{}", level.stderr);

    fixture.write("checkpoints/01/hints.md", "## 1.1\n### 1\nonly one\n");
    fixture
        .xtask(&["hint", "01"])
        .fails_with(2, &["hints.md:1", "1 of the 4 levels"]);
}

#[test]
fn hints_never_reach_a_practice_folder() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.write(
        "checkpoints/01/hints.md",
        "## 1.1\n### 1\nSECRET-HINT\n### 2\nb\n### 3\nc\n### 4\nd\n",
    );
    let lab = lab_with(&fixture, None);
    for entry in walkdir::WalkDir::new(&lab) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let text = fs::read_to_string(entry.path()).unwrap_or_default();
            assert!(
                !text.contains("SECRET-HINT"),
                "{} carries a hint",
                entry.path().display()
            );
        }
    }
}
