//! A step with a test file and run of its own (chapter 03's wire step) is a
//! row of `check`'s report; the chapter is complete only when it passes too;
//! then `check` points at `compare`. And `--json` stays machine-readable:
//! one document, or one object per line with `--watch`.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{ANSWER, Fixture};
use serde_json::json;

const WIRE_FN: &str = "\npub fn wire(sum: i32) -> String {\n    format!(\"{{\\\"role\\\":\\\"toolResult\\\",\\\"toolCallId\\\":\\\"call_1\\\",\\\"sum\\\":{sum}}}\")\n}\n";

const WIRE_TEST: &str = "#[test]\nfn a_tool_result_keeps_its_wire_shape() {\n    assert_eq!(\n        course::wire(5),\n        r#\"{\"role\":\"toolResult\",\"toolCallId\":\"call_1\",\"sum\":5}\"#\n    );\n}\n";

const WIRE_TEST_FILE: &str = "course/tests/wire.rs";

/// A chapter whose step 1.2 (线上格式) runs a wire test of its own.
fn chapter() -> (Fixture, PathBuf) {
    let answer = format!("{ANSWER}{WIRE_FN}");
    let fixture = common::tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[("course/src/lib.rs", &answer), (WIRE_TEST_FILE, WIRE_TEST)],
        |manifest| {
            manifest["steps"] = serde_json::json!([
                {"id": "1.1", "filter": "adds", "expectedTests": 1},
                {"id": "1.2", "title": "线上格式", "filter": "", "expectedTests": 1,
                 "testFile": WIRE_TEST_FILE,
                 "run": ["cargo", "test", "-p", "course", "--test", "wire"]}
            ]);
        },
    );
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    fs::write(lab.join("course/src/lib.rs"), &answer).unwrap();
    (fixture, lab)
}

#[test]
fn the_wire_step_is_a_row_and_the_chapter_is_complete_only_when_it_passes() {
    let (fixture, lab) = chapter();
    // Whether or not practice handed it out, the wire test is gone now.
    let _ = fs::remove_file(lab.join(WIRE_TEST_FILE));
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(
        run.code, 1,
        "the focused tests alone are not the chapter:\n{}",
        run.stdout
    );
    run.prints(&[
        "✗ course/tests/wire.rs 不在练习目录里",
        "1.1 adds     1/1 ✓",
        "1.2 线上格式 0/1",
    ]);
    assert!(!run.stdout.contains("compare"), "{}", run.stdout);

    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    let restore = json["changedTests"][0]["restore"].as_str().unwrap();
    assert_eq!(restore, "cargo xtask check 01 lab --restore-tests");
    common::run_printed(fixture.root(), restore).prints(&["1.2 线上格式 1/1 ✓"]);

    let run = fixture.xtask(&["check", "01", "lab"]);
    run.success().prints(&[
        "1.2 线上格式 1/1 ✓",
        "全部 2 个聚焦测试和 2 个步骤都通过：第 01 章完成。",
        "在课程仓库根目录运行：\n    cargo xtask compare 01 lab\n",
    ]);
    // From a subfolder, the compare line is still the one to type at the root.
    common::xtask_in(&fixture.root().join("course"), &["check", "01", "lab"])
        .success()
        .prints(&["cargo xtask compare 01 lab\n"]);
}

#[test]
fn a_later_steps_file_that_does_not_compile_is_not_called_the_next_thing() {
    let (fixture, lab) = chapter();
    // The focused test's answer is there, the wire step's `wire` is not yet.
    fs::write(lab.join("course/src/lib.rs"), ANSWER).unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "✓ 聚焦测试能编译，也运行了；✗ 后面某个步骤自己的测试文件还不能编译（1 个错误）",
        "1.1 adds     1/1 ✓",
    ]);
    assert!(!run.stdout.contains("✗ 还不能编译"), "{}", run.stdout);
}

#[test]
fn a_broken_wire_shape_is_red_with_its_first_deviation() {
    let (fixture, lab) = chapter();
    let target = fixture.rev("HEAD").to_string();
    let wire = Command::new("git")
        .args(["-C", fixture.root().to_str().unwrap(), "show"])
        .arg(format!("{target}:{WIRE_TEST_FILE}"))
        .output()
        .unwrap();
    fs::write(lab.join(WIRE_TEST_FILE), wire.stdout).unwrap();
    // The shape a serde attribute left out gives: snake_case on the wire.
    let lib = lab.join("course/src/lib.rs");
    let broken = fs::read_to_string(&lib)
        .unwrap()
        .replace("toolCallId", "tool_call_id");
    fs::write(&lib, broken).unwrap();

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "✓ 能编译",
        "1.1 adds     1/1 ✓",
        "1.2 线上格式 0/1\n",
        "第一个失败的测试（步骤 1.2）：a_tool_result_keeps_its_wire_shape",
        "第一处不同在第 33 个字符",
    ]);
    assert!(!run.stdout.contains("完成"), "{}", run.stdout);
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["steps"][1]["title"], "线上格式");
    assert_eq!(json["steps"][1]["ownRun"], true);
    assert_eq!(json["steps"][1]["green"], false);
    assert_eq!(json["steps"][0]["green"], true);
    assert_eq!(json["firstFailureStep"], "1.2");
}

/// Every key of `value`, at any depth.
fn keys(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                into.push(key.clone());
                keys(inner, into);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| keys(item, into)),
        _ => {}
    }
}

#[test]
fn json_is_one_document_with_verbose_and_its_machine_fields_are_ascii() {
    let (fixture, _lab) = chapter();
    let run = fixture.xtask(&["check", "01", "lab", "--json", "--verbose"]);
    // `json()` parses the whole of stdout: one document, nothing before it.
    let json = run.json();
    assert!(
        json["cargoOutput"]
            .as_str()
            .unwrap()
            .contains("test result: ok. 2 passed"),
        "{json}"
    );
    let quiet = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert!(quiet.get("cargoOutput").is_none());
    let mut all = Vec::new();
    keys(&quiet, &mut all);
    assert!(all.iter().all(|key| key.is_ascii()), "{all:?}");
    assert_eq!(
        quiet["steps"][1]["filters"],
        serde_json::json!([""]),
        "no label in a machine field"
    );
}

#[test]
fn watch_json_prints_one_object_per_line_for_each_report() {
    let (fixture, lab) = chapter();
    let mut child = common::spawn_xtask(
        fixture.root(),
        &["check", "01", "lab", "--watch", "--json"],
        Stdio::piped(),
    );
    let stdout = child.stdout.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if send.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let next = || {
        let line = lines
            .recv_timeout(Duration::from_secs(300))
            .expect("a report line");
        serde_json::from_str::<serde_json::Value>(&line)
            .unwrap_or_else(|error| panic!("{error}: {line}"))
    };
    let first = next();
    assert_eq!(first["chapter"], "01");
    fs::write(lab.join("course/src/lib.rs"), "// gone\n").unwrap();
    let second = next();
    assert_eq!(second["compiled"], false, "{second}");
    common::send_signal(child.id(), libc::SIGTERM);
    common::wait_at_most(&mut child, Duration::from_secs(30)).expect("watch stops");
}

/// `--watch` clears the screen before each report only on a terminal: a
/// pipe or a file gets the reports, never the clearing codes.
#[test]
fn watch_clears_the_screen_only_on_a_terminal() {
    let (fixture, _lab) = chapter();
    let mut child = common::spawn_xtask(
        fixture.root(),
        &["check", "01", "lab", "--watch"],
        Stdio::piped(),
    );
    let stdout = child.stdout.take().unwrap();
    let mut report = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        report.push_str(&line);
        report.push('\n');
        if line.contains("正在盯着") {
            break;
        }
    }
    common::send_signal(child.id(), libc::SIGTERM);
    common::wait_at_most(&mut child, Duration::from_secs(30)).expect("watch stops");
    assert!(report.contains("第 01 章"), "{report}");
    assert!(!report.contains('\u{1b}'), "{report:?}");
}

/// A step given several filters is one row, counted once in the verdict,
/// with its one title; its tests are counted once each.
#[test]
fn a_step_with_several_filters_is_one_row_counted_once() {
    let fixture = common::tiny_course("", ANSWER, |manifest| {
        manifest["steps"] = serde_json::json!([
            {"id": "1.1", "title": "加法", "filter": "adds", "expectedTests": 1},
            {"id": "1.1", "filter": "doubles", "expectedTests": 1},
            {"id": "1.2", "title": "全部", "filter": "", "expectedTests": 2},
            {"id": "1.2", "filter": "adds", "expectedTests": 1}
        ]);
    });
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    fs::write(
        lab.join("course/src/lib.rs"),
        ANSWER.replace("x * 2", "x + 2"),
    )
    .unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    run.prints(&["1.1 加法 1/2\n", "1.2 全部 1/2\n"]);
    assert_eq!(run.stdout.matches("1.1 ").count(), 1, "{}", run.stdout);

    fs::write(lab.join("course/src/lib.rs"), ANSWER).unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    run.success().prints(&[
        "1.1 加法 2/2 ✓",
        "1.2 全部 2/2 ✓",
        "全部 2 个聚焦测试和 2 个步骤都通过",
    ]);
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["steps"].as_array().unwrap().len(), 2, "{json}");
    assert_eq!(
        json["steps"][0]["filters"],
        serde_json::json!(["adds", "doubles"])
    );
}

/// A starter's `todo!("Lab N.M … 尚未实现")` is a step not written yet,
/// said in the report's own words, not as a panic trace; any other
/// failure's text is quoted as the test's output.
#[test]
fn a_starters_todo_is_a_step_not_written_yet() {
    let fixture = common::tiny_course("", ANSWER, |manifest| {
        manifest["steps"] = serde_json::json!([
            {"id": "1.1", "filter": "adds", "expectedTests": 1},
            {"id": "1.2", "filter": "doubles", "expectedTests": 1},
            {"id": "1.3", "filter": "", "expectedTests": 2}
        ]);
    });
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    let starter = "pub fn add(_a: i32, _b: i32) -> i32 {\n    todo!(\"Lab 1.1 add 尚未实现\")\n}\n\n\
                   pub fn double(_x: i32) -> i32 {\n    todo!(\"Lab 1.2 double 尚未实现\")\n}\n";
    fs::write(lab.join("course/src/lib.rs"), starter).unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "1.1 adds    0/1 还没写\n",
        "1.2 doubles 0/1 还没写\n",
        // Its tests stop at both steps' todos: named in the chapter's order.
        "1.3 全部    0/2 1.1、1.2 还没写\n",
        "第一个失败的测试：adds\n  1.1 还没写：起始文件在 course/src/lib.rs:2:5 留下的 todo! 还等着你来写\n",
    ]);
    for english in ["not yet implemented", "panicked"] {
        assert!(!run.stdout.contains(english), "{}", run.stdout);
    }
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["steps"][0]["notWritten"], serde_json::json!(["1.1"]));

    // `double` written but wrong: its step is red, its failure quoted.
    let half = starter
        .replace("todo!(\"Lab 1.2 double 尚未实现\")", "x + 2")
        .replace("_x", "x");
    fs::write(lab.join("course/src/lib.rs"), half).unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    run.prints(&[
        "1.1 adds    0/1 还没写\n",
        "1.2 doubles 0/1\n",
        "第一个失败的测试：adds",
    ]);
    fs::write(
        lab.join("course/src/lib.rs"),
        ANSWER.replace("x * 2", "x + 2"),
    )
    .unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    run.prints(&["第一个失败的测试：doubles\n  失败信息（测试输出的原文）：\n    assertion"]);
}

/// After a check whose runs compiled, an edit's rebuild of every run's
/// test target happens in one cargo invocation before the runs (the test
/// binaries build side by side), so the runs themselves compile nothing;
/// the verdict is the same. (The lab's whole suite, run after them, builds
/// its other targets itself.)
#[test]
fn after_a_build_that_compiled_the_runs_targets_are_built_together_first() {
    let (fixture, lab) = chapter();
    let cargo_output = |fixture: &Fixture| {
        let run = fixture.xtask(&["check", "01", "lab", "--json", "--verbose"]);
        let json = run.json();
        (
            json["complete"].clone(),
            json["cargoOutput"].as_str().unwrap().to_string(),
        )
    };
    // The first build writes Cargo.lock, an edit of the lab: no record.
    cargo_output(&fixture);
    let (complete, first) = cargo_output(&fixture);
    assert_eq!(complete, true);
    assert!(
        first.contains("Compiling course"),
        "without a record, the runs build: {first}"
    );
    let lib = lab.join("course/src/lib.rs");
    let edited = fs::read_to_string(&lib).unwrap() + "\n#[allow(dead_code)]\nfn edit() {}\n";
    fs::write(&lib, edited).unwrap();
    let (complete, after_edit) = cargo_output(&fixture);
    assert_eq!(complete, true);
    // The runs' output comes first, the wire run's last; then the suite's.
    let runs_end = after_edit.find("a_tool_result_keeps_its_wire_shape ... ok");
    let runs = &after_edit[..runs_end.expect("the wire run ran")];
    assert!(!runs.contains("Compiling"), "built before the runs: {runs}");
    assert_eq!(
        after_edit.matches("Compiling").count(),
        1,
        "the suite builds only what the runs do not: {after_edit}"
    );
}

/// The lab is the parent's whole learner world: a chapter's layer may
/// change an earlier chapter's files, so once the focused tests and every
/// step pass, check runs the lab's whole suite as one more row. An earlier
/// chapter's test that fails (or no longer compiles) keeps the chapter
/// from complete; once it passes, an unchanged lab's next check keeps that
/// verdict without running the suite again.
#[test]
fn an_earlier_chapters_failing_test_keeps_the_chapter_from_complete() {
    const HALF: &str = "pub fn half(x: i32) -> i32 {\n    x / 2\n}\n";
    const EARLIER: &str =
        "#[test]\nfn halves() {\n    assert_eq!(course::half(8), 4, \"前面一章的 half\");\n}\n";
    let fixture = common::tiny_course_with(
        &[
            ("course/src/lib.rs", HALF),
            ("course/tests/earlier.rs", EARLIER),
        ],
        &[("course/src/lib.rs", &format!("{ANSWER}{HALF}"))],
        |_| {},
    );
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lib = fixture.root().join("lab/course/src/lib.rs");
    let broken = HALF.replace("x / 2", "x / 3");
    let check = |args: &[&str]| fixture.xtask(&[&["check", "01", "lab"], args].concat());

    // The focused tests red: the suite is not run, not even built.
    let red = ANSWER.replace("a + b", "a - b");
    fs::write(&lib, format!("{red}{broken}")).unwrap();
    let run = check(&["--json", "--verbose"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let json = run.json();
    assert_eq!(json["suite"], serde_json::Value::Null, "{json}");
    assert_eq!(json["firstFailure"]["name"], "adds", "{json}");
    let output = json["cargoOutput"].as_str().unwrap();
    assert!(!output.contains("earlier"), "{output}");
    let run = check(&[]);
    assert!(!run.stdout.contains("全部测试"), "{}", run.stdout);

    // Green on its own, and an earlier chapter's test fails.
    fs::write(&lib, format!("{ANSWER}{broken}")).unwrap();
    let run = check(&[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&[
        "1.1 adds 1/1 ✓",
        "全部测试（含前面各章） ✗",
        "单独重跑失败的那个测试文件：cargo test --test earlier",
        "第一个失败的测试（在全部测试里，可能是前面某一章的）：halves\n",
        "    assertion `left == right` failed: 前面一章的 half",
    ]);
    assert!(!run.stdout.contains("完成。"), "{}", run.stdout);
    let json = check(&["--json"]).json();
    assert_eq!(json["complete"], false);
    assert_eq!(json["suite"]["green"], false, "{json}");
    assert_eq!(json["suite"]["reused"], false, "{json}");
    assert_eq!(
        json["suite"]["rerun"], "cargo test --test earlier",
        "{json}"
    );
    assert_eq!(json["firstFailure"]["name"], "halves");
    fixture
        .xtask(&["compare", "01", "lab"])
        .fails_with(1, &["练习目录里还有别的测试没通过"]);

    // An earlier chapter's function gone: its test no longer compiles.
    fs::write(&lib, ANSWER).unwrap();
    let run = check(&[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&["✗ 练习目录里的其他测试（前面各章的）还不能编译（1 个错误）"]);

    // Whether the suite ran, and whether its verdict was kept.
    let suite_ran = || {
        let json = check(&["--json", "--verbose"]).json();
        assert_eq!(json["complete"], true, "{json}");
        assert_eq!(json["suite"]["passed"], 3, "{json}");
        let output = json["cargoOutput"].as_str().unwrap().to_string();
        (output.contains("halves"), json["suite"]["reused"].clone())
    };
    let (ran, kept) = ((true, json!(false)), (false, json!(true)));
    fs::write(&lib, format!("{ANSWER}{HALF}")).unwrap();
    assert_eq!(suite_ran(), ran, "the lab changed: the suite runs");
    assert_eq!(suite_ran(), kept, "unchanged: its verdict stands");
    check(&[]).success().prints(&[
        "全部测试（含前面各章） 3/3 ✓（上次检查之后没有改动，沿用上次的结果）",
        "第 01 章完成",
    ]);
    fs::write(&lib, format!("{ANSWER}{HALF}// 一处改动\n")).unwrap();
    assert_eq!(suite_ran(), ran, "an edit: the suite runs again");
    check(&[])
        .success()
        .prints(&["全部测试（含前面各章） 3/3 ✓（上次"]);
}
