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
    assert!(
        Command::new("sh")
            .args(["-c", restore])
            .status()
            .unwrap()
            .success()
    );

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
        quiet["steps"][1]["filter"], "",
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
