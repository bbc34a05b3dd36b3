//! The learner commands (`checkpoint`, `practice`, `check`, `hint`,
//! `compare`) speak the course's language on every path, errors and
//! argument errors included; `compare` shows the reference answer only
//! once the chapter is complete. Every run is against a throwaway repository.

mod common;

use std::fs;
use std::path::Path;

use common::{ANSWER, Fixture, Run, tiny_course, xtask_in};

/// Words that mark a run of ASCII words as English prose. Commands, paths
/// and identifiers ("cargo xtask check 03 lab", "course/src/lib.rs") have
/// none of them.
const ENGLISH: &[&str] = &[
    "a",
    "an",
    "the",
    "is",
    "are",
    "was",
    "be",
    "not",
    "no",
    "of",
    "to",
    "in",
    "at",
    "on",
    "by",
    "for",
    "with",
    "and",
    "or",
    "has",
    "have",
    "does",
    "cannot",
    "can",
    "it",
    "its",
    "this",
    "that",
    "from",
    "nothing",
    "unknown",
    "chapter",
    "chapters",
    "exist",
    "exists",
    "invalid",
    "value",
    "valid",
    "error",
    "missing",
    "found",
    "step",
    "steps",
    "inside",
    "repository",
    "folder",
    "file",
    "try",
    "more",
    "information",
    "usage",
    "required",
    "argument",
    "expected",
    "unexpected",
    "run",
    "fix",
    "interrupted",
    "stopped",
    "refusing",
];

/// The English phrases in `text`: runs of two or more ASCII words (outside
/// backticks) with at least one word of [`ENGLISH`], and clap's English
/// labels.
fn english_prose(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for label in ["error:", "Usage:", "For more information", "warning:"] {
        if text.contains(label) {
            found.push(label.to_string());
        }
    }
    for line in text.lines() {
        // Code spans are identifiers and commands: a separator, not words.
        let line: String = line
            .split('`')
            .enumerate()
            .map(|(index, part)| if index % 2 == 0 { part } else { " | " })
            .collect();
        let mut phrase: Vec<&str> = Vec::new();
        let mut flush = |phrase: &mut Vec<&str>| {
            let english = phrase
                .iter()
                .any(|word| ENGLISH.contains(&word.to_ascii_lowercase().as_str()));
            if phrase.len() >= 2 && english {
                found.push(phrase.join(" "));
            }
            phrase.clear();
        };
        for token in line.split(' ') {
            let word = token.trim_matches(|c: char| ",.:;!?()'\"".contains(c));
            if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphabetic()) {
                phrase.push(word);
            } else {
                flush(&mut phrase);
            }
        }
        flush(&mut phrase);
    }
    found
}

/// Asserts that neither stdout nor stderr of `run` holds English prose.
#[track_caller]
fn speaks_chinese(run: &Run, what: &str) {
    let all = format!("{}\n{}", run.stdout, run.stderr);
    let english = english_prose(&all);
    assert!(
        english.is_empty(),
        "{what}: English prose {english:?} in\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        !all.trim().is_empty(),
        "{what}: printed nothing (exit {})",
        run.code
    );
}

/// Runs `args` in `fixture`, checks the exit code and the language.
#[track_caller]
fn learner_run(fixture: &Fixture, args: &[&str], code: i32) -> Run {
    let run = fixture.xtask(args);
    assert_eq!(
        run.code, code,
        "{args:?}\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    speaks_chinese(&run, &args.join(" "));
    run
}

#[test]
fn the_detector_finds_the_messages_learners_used_to_get() {
    for english in [
        "error: chapter 03 has no step 3.3: valid steps are 3.1, 3.2",
        "error: unknown chapter 04: chapters that exist: 02, 03",
        "error: invalid value '5' for '--level <LEVEL>': 5 is not in 1..=4",
        "错误：/tmp/lab is not inside a git repository: run xtask from inside the course repository",
        "起点 parent: `ce72eb8` Restore chapter 03's starting point, to re-cut it",
    ] {
        assert!(!english_prose(english).is_empty(), "{english}");
    }
    for fine in [
        "cd lab && cargo test -p course --test message_ir",
        "cargo xtask check 03 lab --watch",
        "位置 course/src/types.rs:3:5 → 要在 course/src/types.rs 里解决",
        "用法：cargo xtask hint [OPTIONS] <ID>",
        "删掉它（`rm -r target`）再运行",
    ] {
        assert!(english_prose(fine).is_empty(), "{fine}");
    }
}

#[test]
fn checkpoint_speaks_chinese_on_every_path() {
    let fixture = Fixture::course();
    learner_run(&fixture, &["checkpoint", "03"], 0);
    learner_run(&fixture, &["checkpoint", "07"], 2);
    learner_run(&fixture, &["checkpoint", "three"], 2);
    learner_run(&fixture, &["checkpoint"], 2);
    learner_run(&fixture, &["checkpoint", "03", "--jsn"], 2);
    learner_run(&fixture, &["checkpoint", "03", "04"], 2);
    fixture.write("checkpoints/03/checkpoint.json", "{\"id\": \"03\",");
    learner_run(&fixture, &["checkpoint", "03"], 2);
    fixture.write(
        "checkpoints/03/checkpoint.json",
        &common::manifest("03", "course/tests/message_ir.rs", &["course/src/gone.rs"]),
    );
    learner_run(&fixture, &["checkpoint", "03"], 2);
}

#[test]
fn practice_speaks_chinese_on_every_path() {
    let fixture = Fixture::course();
    learner_run(&fixture, &["practice", "07", "lab"], 2);
    learner_run(&fixture, &["practice", "03"], 2);
    learner_run(&fixture, &["practice", "x3", "lab"], 2);
    learner_run(&fixture, &["practice", "03", "lab", "--force"], 2);
    fs::remove_file(fixture.root().join("checkpoints/03/LEARNING.md")).unwrap();
    learner_run(&fixture, &["practice", "03", "lab"], 2);
    fixture.write("checkpoints/03/LEARNING.md", "# 第 03 章\n");
    let made = learner_run(&fixture, &["practice", "03", "lab"], 0);
    made.prints(&["cargo xtask compare 03 lab", "AGENTS.md"]);
    let guide = fs::read_to_string(fixture.root().join("lab/LEARNING.md")).unwrap();
    assert!(english_prose(&guide).is_empty(), "{guide}");
    for needle in [
        "起点：第 02 章的终点",
        "cargo xtask compare 03",
        "AGENTS.md",
    ] {
        assert!(
            guide.contains(needle),
            "{needle} missing from the guide:\n{guide}"
        );
    }
}

#[test]
fn check_speaks_chinese_on_every_path() {
    let fixture = Fixture::course();
    learner_run(&fixture, &["check", "07", "lab"], 2);
    learner_run(&fixture, &["check", "03"], 2);
    learner_run(&fixture, &["check", "03", "nowhere"], 2);
    learner_run(&fixture, &["check", "03", "course"], 2);
    learner_run(&fixture, &["check", "03", "."], 2);
    learner_run(&fixture, &["check", "03", "lab", "--timeout", "0"], 2);
    learner_run(&fixture, &["check", "03", "lab", "--timeout", "soon"], 2);
    learner_run(&fixture, &["check", "03", "lab", "--wach"], 2);
}

#[test]
fn hint_speaks_chinese_on_every_path() {
    let fixture = Fixture::course();
    learner_run(&fixture, &["hint", "03"], 2); // no hints.md yet
    fixture.write(
        "checkpoints/03/hints.md",
        "## 3.1\n### 1\n打开 types.rs。\n",
    );
    learner_run(&fixture, &["hint", "03"], 2); // three levels missing
    let ladder: String = ["3.1", "3.2"]
        .iter()
        .map(|step| format!("## {step}\n### 1\n定位\n### 2\n签名\n### 3\n伪代码\n### 4\n代码\n"))
        .collect();
    fixture.write("checkpoints/03/hints.md", &ladder);
    learner_run(&fixture, &["hint", "03"], 0);
    learner_run(&fixture, &["hint", "03", "--level", "4"], 0);
    learner_run(&fixture, &["hint", "03", "--step", "3.3"], 2);
    learner_run(&fixture, &["hint", "03", "--level", "5"], 2);
    learner_run(&fixture, &["hint", "03", "--level"], 2);
    learner_run(&fixture, &["hint", "07"], 2);
    learner_run(&fixture, &["hint"], 2);
}

#[test]
fn compare_speaks_chinese_on_every_path() {
    let fixture = Fixture::course();
    learner_run(&fixture, &["compare", "07", "lab"], 2);
    learner_run(&fixture, &["compare", "03"], 2);
    learner_run(&fixture, &["compare", "03", "nowhere"], 2);
    learner_run(&fixture, &["compare", "03", "."], 2);
    learner_run(&fixture, &["compare", "03", "course"], 2);
    learner_run(&fixture, &["compare", "03", "lab", "--anyhow"], 2);
}

/// Argument errors say what was wrong with which argument, once.
#[test]
fn argument_errors_name_the_argument_and_the_rule() {
    let fixture = Fixture::course();
    let ladder = "## 3.1\n### 1\n定位\n### 2\n签名\n### 3\n伪代码\n### 4\n代码\n";
    fixture.write("checkpoints/03/hints.md", ladder);
    let level = learner_run(&fixture, &["hint", "03", "--level", "5"], 2);
    level.fails_with(
        2,
        &[
            "错误：",
            "--level",
            "`5`",
            "1 到 4",
            "用法：cargo xtask hint",
        ],
    );
    let missing = learner_run(&fixture, &["check", "03"], 2);
    missing.fails_with(2, &["缺少参数 <DIR>"]);
    let step = learner_run(&fixture, &["hint", "03", "--step", "3.3"], 2);
    assert_eq!(step.stderr.matches("3.3").count(), 1, "{}", step.stderr);
    let twice = learner_run(
        &fixture,
        &["hint", "03", "--step", "3.1", "--step", "3.1"],
        2,
    );
    twice.fails_with(2, &["参数 --step <STEP> 只能写一次"]);
}

/// An argument that is not UTF-8 is said so, in Chinese.
#[test]
fn a_non_utf8_argument_is_named() {
    use std::os::unix::ffi::OsStrExt;
    let fixture = Fixture::course();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("hint")
        .arg(std::ffi::OsStr::from_bytes(b"\xff"))
        .current_dir(fixture.root())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("参数里有不是 UTF-8 的字符"), "{stderr}");
}

/// The top level is the learner's door: `cargo xtask`, `--help` and a
/// mistyped command speak Chinese, the learner commands first and the
/// author commands after them, marked as the authors'.
#[test]
fn the_top_level_help_and_clap_errors_speak_chinese() {
    let fixture = Fixture::course();
    for args in [&[][..], &["--help"]] {
        let run = learner_run(&fixture, args, 0);
        let at = |name: &str| {
            run.stdout
                .find(&format!("  {name} "))
                .unwrap_or_else(|| panic!("{name} in {}", run.stdout))
        };
        assert!(at("checkpoint") < at("compare"), "{}", run.stdout);
        assert!(at("compare") < at("list"), "{}", run.stdout);
        assert!(at("compare") < at("verify"), "{}", run.stdout);
        assert_eq!(
            run.stdout.matches("（作者用）").count(),
            4,
            "{}",
            run.stdout
        );
    }
    let typo = learner_run(&fixture, &["chek", "03", "lab"], 2);
    typo.fails_with(
        2,
        &["没有 `chek` 这个命令", "`check`", "cargo xtask --help"],
    );
    let help = learner_run(&fixture, &["check", "--help"], 0);
    help.prints(&["练习目录", "（默认 600）"]);
}

/// An author command keeps English, on the same repository.
#[test]
fn author_commands_speak_english() {
    let fixture = Fixture::course();
    fixture
        .xtask(&["verify", "--timeout", "0"])
        .fails_with(2, &["error: invalid value '0'"]);
    fixture
        .xtask(&["recut", "07"])
        .fails_with(2, &["error: ", "unknown chapter 07"]);
}

#[test]
fn checkpoint_json_keeps_its_machine_fields() {
    let fixture = Fixture::course();
    let json = fixture.xtask(&["checkpoint", "03", "--json"]).json();
    fn keys_are_ascii(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(map) => map
                .iter()
                .all(|(key, value)| key.is_ascii() && keys_are_ascii(value)),
            serde_json::Value::Array(items) => items.iter().all(keys_are_ascii),
            _ => true,
        }
    }
    assert!(keys_are_ascii(&json), "{json}");
    assert_eq!(json["mode"], "rebuild");
    assert!(
        json["commands"]["diff"]
            .as_str()
            .unwrap()
            .starts_with("git diff ")
    );
}

#[test]
fn interrupting_a_learner_command_is_reported_in_chinese() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.xtask(&["practice", "01", "lab"]).success();
    let mut child = common::spawn_xtask(
        fixture.root(),
        &["check", "01", "lab", "--watch"],
        std::process::Stdio::null(),
    );
    let started = common::wait_until(std::time::Duration::from_secs(60), || {
        fixture.root().join("lab/target").exists()
    });
    assert!(started, "check never started building");
    common::send_signal(child.id(), libc::SIGINT);
    let status = common::wait_at_most(&mut child, std::time::Duration::from_secs(60))
        .expect("check --watch ended after SIGINT");
    let stderr = common::stderr_of(&mut child);
    assert_eq!(status.code(), Some(130), "{stderr}");
    let run = Run {
        code: 130,
        stdout: String::new(),
        stderr,
    };
    speaks_chinese(&run, "check --watch, then Ctrl-C");
    assert!(run.stderr.contains("已被 Ctrl-C 中断"), "{}", run.stderr);
}

// --- Paths through shared modules other branches own: their errors use
// the constructors in learner_text.rs from the merge on. ---

#[test]
fn outside_the_repository_a_learner_is_told_in_chinese() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["checkpoint", "03"][..], &["check", "03", "lab"]] {
        let run = xtask_in(dir.path(), args);
        assert_eq!(run.code, 2);
        speaks_chinese(&run, "outside a repository");
    }
    let empty = Fixture::empty();
    learner_run(&empty, &["hint", "03"], 2);
}

#[test]
fn a_chapter_never_cut_is_told_in_chinese() {
    let fixture = Fixture::course();
    fixture.write_manifest("05", &common::manifest("05", "x.rs", &[]));
    learner_run(&fixture, &["checkpoint", "05"], 2);
}

#[test]
fn practice_refusing_its_folder_is_told_in_chinese() {
    let fixture = Fixture::course();
    fixture.write("lab/mine.txt", "my work\n");
    learner_run(&fixture, &["practice", "03", "lab"], 2);
    learner_run(&fixture, &["practice", "03", "."], 2);
}

// --- compare: the reference answer after the work ---

/// A tiny course and its lab, `lib.rs` written as `lib`.
fn lab_with(lib: &str) -> Fixture {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.xtask(&["practice", "01", "lab"]).success();
    fs::write(fixture.root().join("lab/course/src/lib.rs"), lib).unwrap();
    fixture
}

#[test]
fn compare_refuses_before_the_chapter_is_complete() {
    let fixture = lab_with("");
    let run = learner_run(&fixture, &["compare", "01", "lab"], 1);
    run.fails_with(
        1,
        &[
            "还没有完成",
            "cargo xtask compare 01 lab --anyway",
            "cargo xtask check 01 lab",
        ],
    );
    assert!(
        !run.stdout.contains("a + b"),
        "no answer shown: {}",
        run.stdout
    );

    // One test of two passes: still not complete.
    let half = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn double(x: i32) -> i32 {\n    x\n}\n";
    fs::write(fixture.root().join("lab/course/src/lib.rs"), half).unwrap();
    let run = learner_run(&fixture, &["compare", "01", "lab"], 1);
    run.fails_with(1, &["1/2"]);
    assert!(
        !run.stdout.contains("x * 2"),
        "no answer shown: {}",
        run.stdout
    );
}

#[test]
fn compare_anyway_shows_the_answer_before_completion() {
    let fixture = lab_with("");
    let run = learner_run(&fixture, &["compare", "01", "lab", "--anyway"], 0);
    run.prints(&[
        "+    x * 2",
        "≠ course/src/lib.rs：你的 0 行，参考答案 7 行",
    ]);
}

#[test]
fn compare_shows_each_teaching_file_beside_the_answer_once_complete() {
    let same = lab_with(ANSWER);
    let run = learner_run(&same, &["compare", "01", "lab"], 0);
    run.prints(&["= course/src/lib.rs：和参考答案一字不差", "测试都通过了"]);
    assert!(
        !run.stdout.contains("@@"),
        "no diff for equal files: {}",
        run.stdout
    );

    let mine = "pub fn add(a: i32, b: i32) -> i32 {\n    b + a\n}\n\npub fn double(x: i32) -> i32 {\n    x + x\n}\n";
    let other = lab_with(mine);
    let run = learner_run(&other, &["compare", "01", "lab"], 0);
    run.prints(&[
        "── course/src/lib.rs ──",
        "@@ ",
        "-    b + a",
        "+    a + b",
        "-    x + x",
        "+    x * 2",
        "≠ course/src/lib.rs：你的 7 行，参考答案 7 行；只在你这边的 2 行，只在参考答案里的 2 行",
    ]);
    assert!(
        !run.stdout.contains('\x1b'),
        "no colour when piped: {:?}",
        run.stdout
    );
}

#[test]
fn compare_never_reads_through_a_symlink() {
    let fixture = lab_with("");
    let outside = fixture.dir.path().join("secret.rs");
    fs::write(&outside, "pub fn secret() {}\n").unwrap();
    let lib = fixture.root().join("lab/course/src/lib.rs");
    fs::remove_file(&lib).unwrap();
    std::os::unix::fs::symlink(&outside, &lib).unwrap();
    let run = learner_run(&fixture, &["compare", "01", "lab", "--anyway"], 2);
    run.fails_with(2, &["符号链接"]);
    assert!(!run.stdout.contains("secret"), "{}", run.stdout);
    assert!(Path::new(&outside).exists());
}

#[test]
fn compare_works_on_a_lab_outside_the_repository() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = fixture.dir.path().join("labs/第一章");
    fixture
        .xtask(&["practice", "01", lab.to_str().unwrap()])
        .success();
    fs::write(lab.join("course/src/lib.rs"), ANSWER).unwrap();
    let run = learner_run(&fixture, &["compare", "01", lab.to_str().unwrap()], 0);
    run.prints(&["= course/src/lib.rs：和参考答案一字不差"]);
}
