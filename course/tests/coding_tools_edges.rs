//! Chapter 08's edges step (8.8), copied into the lab beside the focused
//! test: rules the chapter teaches that the twelve ported tests leave
//! unsaid. The continuation hint counts inside the byte limit; a FIFO, a
//! folder, a device or text that is not UTF-8 is an error result, never a
//! hang; a call cancelled beforehand says it never started; output past the
//! budget is read and dropped, so the command is never stopped by a full
//! pipe; a timed-out `sleep 100 & sleep 100` leaves no process of its group
//! behind.
//!
//! `cargo test -p course --test coding_tools_edges`

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::{self, Command};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use course::coding_tools::{
    BashDetails, CodingToolsOptions, Containment, ReadDetails, create_coding_tools,
};
use course::tool::{ToolCallOptions, ToolRegistry, execute_tool_call};
use course::types::{ToolCall, ToolResultMessage};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// How long a call may take before its test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// A fresh folder under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let number = COUNT.fetch_add(1, Ordering::SeqCst);
        let path = env::temp_dir().join(format!("{prefix}{}-{number}", process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).expect("create a temporary folder");
        TempDir(path)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("{name}-call"),
        name: name.to_string(),
        arguments,
        raw_arguments: None,
    }
}

fn tools(root: &TempDir, containment: Containment) -> Arc<ToolRegistry> {
    Arc::new(create_coding_tools(CodingToolsOptions::new(
        &root.0,
        containment,
    )))
}

/// Runs one call on a helper thread; it must end within `PATIENCE`.
fn execute(
    tools: &Arc<ToolRegistry>,
    call: ToolCall,
    options: ToolCallOptions,
) -> ToolResultMessage {
    let (sender, receiver) = mpsc::channel();
    let tools = Arc::clone(tools);
    let what = call.arguments.to_string();
    thread::spawn(move || {
        let _ = sender.send(execute_tool_call(&call, &tools, options));
    });
    receiver.recv_timeout(PATIENCE).unwrap_or_else(|_| {
        panic!("{what} 没有在 {PATIENCE:?} 内结束（卡住了，或者工具 panic 了）")
    })
}

fn run(tools: &Arc<ToolRegistry>, name: &str, arguments: Value) -> ToolResultMessage {
    execute(tools, call(name, arguments), ToolCallOptions::default())
}

fn output_of(result: &ToolResultMessage) -> String {
    result
        .content
        .iter()
        .map(|block| block.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn details_of<T: DeserializeOwned>(result: &ToolResultMessage) -> T {
    let details = result
        .details
        .clone()
        .unwrap_or_else(|| panic!("结果没有 details；输出：{}", output_of(result)));
    serde_json::from_value(details.clone())
        .unwrap_or_else(|error| panic!("details 的形状不对（{error}）：{details}"))
}

/// An error result whose text contains `needle`.
fn assert_refused(result: &ToolResultMessage, needle: &str) {
    assert!(result.is_error, "应该是错误结果：{}", output_of(result));
    assert!(
        output_of(result).contains(needle),
        "错误信息里应该有 {needle:?}：{}",
        output_of(result)
    );
}

#[test]
fn read_counts_its_continuation_hint_inside_the_byte_limit() {
    let root = TempDir::new("pi-edges-hint-");
    let lines: Vec<String> = (1..=20).map(|number| format!("line {number:02}")).collect();
    fs::write(root.file("notes.txt"), lines.join("\n")).unwrap();
    // Two lines fit by themselves, but not together with their hint.
    let two_lines = "   1│ line 01\n   2│ line 02";
    let hint_after_two = "\n\n[已显示第 1-2 行，共 20 行；继续读取：offset=3]";
    let max_read_bytes = two_lines.len() + hint_after_two.len() - 1;
    let tools = Arc::new(create_coding_tools(CodingToolsOptions {
        max_read_bytes,
        ..CodingToolsOptions::new(&root.0, Containment::Workspace)
    }));

    let result = run(&tools, "read", json!({ "path": "notes.txt" }));

    let output = output_of(&result);
    assert!(!result.is_error, "{output}");
    assert!(
        output.len() <= max_read_bytes,
        "正文加提示一共 {} bytes，超过了 {max_read_bytes}：{output}",
        output.len()
    );
    assert_eq!(
        output,
        "   1│ line 01\n\n[已显示第 1-1 行，共 20 行；继续读取：offset=2]"
    );
    assert_eq!(details_of::<ReadDetails>(&result).end_line, 1);
}

#[test]
fn special_files_and_text_that_is_not_utf8_are_refused_without_blocking() {
    let root = TempDir::new("pi-edges-special-");
    let fifo = Command::new("mkfifo")
        .arg(root.file("pipe"))
        .status()
        .unwrap();
    assert!(fifo.success());
    fs::create_dir(root.file("folder")).unwrap();
    fs::write(root.file("latin1.txt"), b"caf\xe9\n").unwrap();
    let workspace = tools(&root, Containment::Workspace);
    let unrestricted = tools(&root, Containment::Unrestricted);

    assert_refused(
        &run(&workspace, "read", json!({ "path": "pipe" })),
        "不是普通文件",
    );
    assert_refused(
        &run(
            &workspace,
            "edit",
            json!({ "path": "pipe", "oldText": "a", "newText": "b" }),
        ),
        "不是普通文件",
    );
    assert_refused(
        &run(&workspace, "read", json!({ "path": "folder" })),
        "不是普通文件",
    );
    assert_refused(
        &run(&unrestricted, "read", json!({ "path": "/dev/zero" })),
        "不是普通文件",
    );
    assert_refused(
        &run(&workspace, "read", json!({ "path": "latin1.txt" })),
        "不是 UTF-8 文本",
    );
    assert_refused(
        &run(
            &workspace,
            "edit",
            json!({ "path": "latin1.txt", "oldText": "caf", "newText": "CAF" }),
        ),
        "不是 UTF-8 文本",
    );
    assert_eq!(fs::read(root.file("latin1.txt")).unwrap(), b"caf\xe9\n");
}

#[test]
fn a_call_cancelled_beforehand_says_it_never_started() {
    let root = TempDir::new("pi-edges-precancel-");
    let tools = tools(&root, Containment::Workspace);
    let options = ToolCallOptions {
        signal: Some(Arc::new(AtomicBool::new(true))),
        report_progress: None,
    };

    let result = execute(
        &tools,
        call("bash", json!({ "command": "touch started; sleep 100" })),
        options,
    );

    assert!(result.is_error);
    assert_eq!(output_of(&result), "运行已经取消，因此命令没有启动。");
    assert_eq!(
        result.details,
        Some(json!({
            "command": "touch started; sleep 100",
            "exitCode": null,
            "timedOut": false,
            "aborted": true,
            "truncated": false,
        }))
    );
    assert!(!root.file("started").exists(), "预先取消的命令不能启动");
}

#[test]
fn output_past_the_budget_is_read_and_dropped_so_the_command_goes_on() {
    let root = TempDir::new("pi-edges-drain-");
    let tools = Arc::new(create_coding_tools(CodingToolsOptions {
        max_bash_output_bytes: 64,
        bash_timeout: Duration::from_secs(5),
        ..CodingToolsOptions::new(&root.0, Containment::Workspace)
    }));

    // A megabyte: far more than a pipe holds while nobody reads it.
    let result = run(
        &tools,
        "bash",
        json!({ "command": "yes 0123456789 | head -c 1000000; printf done >&2" }),
    );

    let details: BashDetails = details_of(&result);
    assert!(!details.timed_out, "命令被写满的管道卡住了：{details:?}");
    assert_eq!(details.exit_code, Some(0), "{details:?}");
    assert!(
        details.truncated && output_of(&result).len() <= 64,
        "{details:?}"
    );
}

/// The processes of group `group` that have not ended. A zombie has ended:
/// only nobody has collected its exit status yet.
fn live_members(group: &str) -> Vec<String> {
    let listing = Command::new("ps")
        .args(["-A", "-o", "pid=,pgid=,stat=,args="])
        .output()
        .unwrap();
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() >= 3 && fields[1] == group && !fields[2].starts_with('Z')
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn a_timed_out_sleep_100_and_sleep_100_leaves_no_process_behind() {
    let root = TempDir::new("pi-edges-group-");
    let tools = Arc::new(create_coding_tools(CodingToolsOptions {
        bash_timeout: Duration::from_millis(300),
        ..CodingToolsOptions::new(&root.0, Containment::Workspace)
    }));

    // `$$` is the shell's pid, and the shell leads its own process group.
    let result = run(
        &tools,
        "bash",
        json!({ "command": "echo $$ > group.txt; sleep 100 & sleep 100" }),
    );

    let details: BashDetails = details_of(&result);
    assert!(
        result.is_error && details.timed_out && !details.aborted,
        "{details:?}"
    );
    let group = fs::read_to_string(root.file("group.txt")).unwrap();
    // SIGKILL is already sent; give the kernel a moment to finish the job.
    let started = Instant::now();
    while !live_members(group.trim()).is_empty() {
        assert!(
            started.elapsed() < PATIENCE,
            "进程组 {} 里还有进程活着：{:?}",
            group.trim(),
            live_members(group.trim())
        );
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_shape_of_an_edit_is_checked_with_the_original_texts() {
    let root = TempDir::new("pi-edges-edit-shape-");
    fs::write(root.file("value.txt"), "one").unwrap();
    let tools = tools(&root, Containment::Workspace);

    assert_refused(
        &run(&tools, "edit", json!({ "path": "value.txt", "edits": [] })),
        "edits 不能为空",
    );
    assert_refused(
        &run(
            &tools,
            "edit",
            json!({ "path": "value.txt", "edits": ["one"] }),
        ),
        "每个 edit 必须是 object",
    );
    assert_refused(
        &run(
            &tools,
            "edit",
            json!({ "path": "value.txt", "edits": [{ "oldText": "one" }] }),
        ),
        "必须是 string",
    );
    assert_refused(
        &run(
            &tools,
            "edit",
            json!({ "path": "value.txt", "newText": "two" }),
        ),
        "必须是 string",
    );
    assert_eq!(fs::read_to_string(root.file("value.txt")).unwrap(), "one");
}
