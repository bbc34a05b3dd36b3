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
        "✗ 还不能编译",
        "unresolved import",
        "→ 要在 course/src/lib.rs 里解决（编译器指向 course/tests/focused.rs:1:",
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
        "✓ 能编译",
        "1.1 adds 1/1 ✓",
        "第一个失败的测试：doubles",
        "left: 6",
        "right: 8",
    ]);

    lab_with(&fixture, Some(ANSWER));
    fixture
        .xtask(&["check", "01", "lab"])
        .success()
        .prints(&["全部 2 个聚焦测试和 1 个步骤都通过：第 01 章完成。"]);

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
    fixture.xtask(&["check", "01", "nowhere"]).fails_with(
        2,
        &["找不到练习目录 nowhere", "cargo xtask practice 01 ./lab"],
    );
}

#[test]
fn check_finds_the_lab_from_a_subfolder_and_refuses_what_is_not_a_lab() {
    let fixture = tiny_course("", ANSWER, |_| {});
    lab_with(&fixture, Some(ANSWER));
    let course = fixture.root().join("course");
    common::xtask_in(&course, &["check", "01", "lab"])
        .success()
        .prints(&["第 01 章完成"]);

    common::xtask_in(&course, &["check", "01", "."])
        .fails_with(2, &["不是练习目录", "能看到的练习目录：", "/repo/lab。"]);
    fixture
        .xtask(&["check", "01", "."])
        .fails_with(2, &["是课程仓库本身", "能看到的练习目录：lab"]);
    common::xtask_in(&course, &["check", "01", "missing"]).fails_with(
        2,
        &["找不到练习目录 missing", "/repo/lab。", "在课程仓库根目录"],
    );
}

#[test]
fn check_reports_a_missing_focused_test_with_the_command_that_restores_it() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab_with(&fixture, Some(ANSWER));
    fs::remove_file(lab.join("course/tests/focused.rs")).unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    run.prints(&[
        "聚焦测试 course/tests/focused.rs 不在练习目录里",
        "cargo xtask check 01 lab --restore-tests",
    ]);
    assert!(!run.stdout.contains("能编译"), "{}", run.stdout);
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["focusedTestPresent"], false);
    assert_eq!(json["changedTests"][0]["missing"], true);
    assert_eq!(
        json["changedTests"][0]["restore"],
        "cargo xtask check 01 lab --restore-tests"
    );
    assert_eq!(json["compiled"], false);
}

#[test]
fn check_shows_each_compiler_error_once_as_rustc_rendered_it() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let typo = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn double(x: i32) -> i32 {\n    ad(x, x)\n}\n";
    lab_with(&fixture, Some(typo));
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1);
    // rustc's rendered text, intact: its help and the suggested line together.
    run.prints(&[
        "error[E0425]: cannot find function `ad` in this scope",
        " --> course/src/lib.rs:6:5",
        "help: a function with a similar name exists",
        "→ 要在 course/src/lib.rs 里解决",
    ]);
    assert_eq!(
        run.stdout.matches("cannot find function `ad`").count(),
        1,
        "{}",
        run.stdout
    );
}

#[test]
fn hints_climb_one_rung_at_a_time() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["steps"][0]["title"] = "加法".into();
    });
    let ladder = "## 1.1\n### 1\nOpen lib.rs.\n### 2\nfn add(a: i32, b: i32) -> i32\n### 3\nreturn the sum\n### 4\na + …\n\
                  ## 1.2\n### 1\nStill lib.rs.\n### 2\nfn double\n### 3\ntwice\n### 4\nx * …\n";
    fixture.write("checkpoints/01/hints.md", ladder);

    let first = fixture.xtask(&["hint", "01"]);
    first.success();
    // The step's title as the manifest gives it, like check's row.
    assert!(
        first.stdout.contains("步骤 1.1（加法）的提示"),
        "{}",
        first.stdout
    );
    assert!(first.stdout.contains("[1] 定位文件") && first.stdout.contains("Open lib.rs."));
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
        .fails_with(2, &["没有步骤 9.9", "1.1、1.2"]);
    // A step with a trailing space is shown quoted, so the space is visible.
    fixture
        .xtask(&["hint", "01", "--step", "1.1 "])
        .fails_with(2, &["没有步骤 \"1.1 \""]);
    let level = fixture.xtask(&["hint", "01", "--level", "5"]);
    assert_eq!(level.code, 2);
    assert!(level.stderr.contains("1 到 4"), "{}", level.stderr);

    fixture.write("checkpoints/01/hints.md", "## 1.1\n### 1\nonly one\n");
    fixture
        .xtask(&["hint", "01"])
        .fails_with(2, &["hints.md 第 1 行"]);
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

#[test]
fn check_builds_the_lab_in_its_own_target_folder_whatever_cargo_target_dir_says() {
    let fixture = tiny_course("", ANSWER, |_| {});
    lab_with(&fixture, None);
    let shared = fixture.dir.path().join("shared-target");
    // The answer, built first into the folder the caller's environment names.
    let built = std::process::Command::new(env!("CARGO"))
        .args(["test", "-p", "course", "--test", "focused"])
        .current_dir(fixture.root())
        .env("CARGO_TARGET_DIR", &shared)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );

    let run = common::xtask_with_env(
        fixture.root(),
        &["check", "01", "lab"],
        &[("CARGO_TARGET_DIR", &shared)],
    );
    assert_eq!(
        run.code, 1,
        "the empty lab is not complete:\n{}",
        run.stdout
    );
    run.prints(&["✗ 还不能编译"]);
    // check makes `target/` itself before it runs anything; cargo's own
    // output in it shows where the build went.
    assert!(
        fixture
            .root()
            .join("lab/target/debug/.fingerprint")
            .is_dir(),
        "built in the lab's own target/"
    );
}

#[test]
fn a_run_program_that_does_not_exist_is_traced_to_the_manifest() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["run"] = serde_json::json!(["no-such-program-xyz", "test"]);
    });
    lab_with(&fixture, None);
    fixture.xtask(&["check", "01", "lab"]).fails_with(
        2,
        &[
            "找不到程序 `no-such-program-xyz`",
            "章节清单 checkpoints/NN/checkpoint.json 的 `run`",
        ],
    );
}

#[test]
fn a_lab_file_replaced_by_an_older_copy_is_not_taken_for_the_file_cargo_built() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab_with(&fixture, Some(ANSWER));
    fixture.xtask(&["check", "01", "lab"]).success();

    // A broken copy with a date long before the green build (`cp -p` of an old file).
    let old = fixture.dir.path().join("old_lib.rs");
    fs::write(&old, "// empty\n").unwrap();
    let long_ago =
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    let lib = lab.join("course/src/lib.rs");
    fs::copy(&old, &lib).unwrap();
    fs::File::options()
        .write(true)
        .open(&lib)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "not complete any more:\n{}", run.stdout);
    run.prints(&["✗ 还不能编译"]);
}

#[test]
fn hints_are_never_read_through_a_symlink_and_a_step_is_written_once() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let outside = fixture.dir.path().join("secret.md");
    fs::write(
        &outside,
        "## 1.1\n### 1\nSECRET\n### 2\nb\n### 3\nc\n### 4\nd\n",
    )
    .unwrap();
    fixture.symlink(outside.to_str().unwrap(), "checkpoints/01/hints.md");
    let run = fixture.xtask(&["hint", "01"]);
    run.fails_with(2, &["hints.md", "符号链接"]);
    assert!(!run.stdout.contains("SECRET"));

    fs::remove_file(fixture.root().join("checkpoints/01/hints.md")).unwrap();
    let twice = "## 1.1\n### 1\na\n### 2\nb\n### 3\nc\n### 4\nd\n## 1.1\n### 1\na\n### 2\nb\n### 3\nc\n### 4\nd\n";
    fixture.write("checkpoints/01/hints.md", twice);
    fixture
        .xtask(&["hint", "01"])
        .fails_with(2, &["hints.md 第 10 行"]);
}

/// A lab's `target` linked to a folder of the learner's choice (a faster
/// disk) is their business: check builds there and calls the lab complete.
#[test]
fn a_lab_whose_target_is_a_symlink_of_the_learners_builds_there() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab_with(&fixture, Some(ANSWER));
    let elsewhere = fixture.dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, lab.join("target")).unwrap();
    fixture.xtask(&["check", "01", "lab"]).success();
    assert!(elsewhere.join("debug").is_dir(), "cargo built there");
}

#[test]
fn watch_ends_once_its_reader_has_gone_without_waiting_for_an_edit() {
    use std::io::{BufRead, BufReader};
    use std::time::Duration;
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.xtask(&["practice", "01", "lab"]).success();
    // A first build writes Cargo.lock, which is an edit `--watch` reacts to.
    let _red = fixture.xtask(&["check", "01", "lab"]);
    let mut child = common::spawn_xtask(
        fixture.root(),
        &["check", "01", "lab", "--watch"],
        std::process::Stdio::piped(),
    );
    // Read the whole first report, up to the line that says it is waiting
    // for edits, then go away: no write of its own fails after that, so
    // only noticing the reader's absence can end it.
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("正在盯着") {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "no report");
    }
    drop(reader);
    let status = common::wait_at_most(&mut child, Duration::from_secs(60))
        .expect("check --watch ended although no file changed");
    assert!(status.code().is_some(), "ended by itself, not by a signal");
}

/// A lab knows its chapter: `check` and `compare` of another chapter refuse
/// it, naming its chapter and the command that fits; a lab without the
/// marker (made by an older `practice`) is taken as before.
#[test]
fn a_lab_of_another_chapter_is_refused_with_the_command_that_fits() {
    let fixture = Fixture::course();
    fixture.xtask(&["practice", "03", "lab03"]).success();
    let marker = fixture.root().join("lab03/.xtask-lab");
    let text = fs::read_to_string(&marker).unwrap();
    assert!(text.contains("chapter = \"03\""), "{text}");

    for command in ["check", "compare"] {
        let run = fixture.xtask(&[command, "02", "lab03"]);
        run.fails_with(
            2,
            &[
                "第 03 章的练习目录",
                "不是第 02 章的",
                &format!("cargo xtask {command} 03 lab03"),
                "cargo xtask practice 02",
            ],
        );
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }

    fs::remove_file(&marker).unwrap();
    let run = fixture.xtask(&["check", "02", "lab03"]);
    assert!(!run.stderr.contains("不是第 02 章的"), "{}", run.stderr);
}
