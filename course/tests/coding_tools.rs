//! Chapter 08's focused test: the coding tools, twelve tests ported one for
//! one from the original course.
//!
//! Steps filter them by lab: `lab8_1` (2 tests), `lab8_2` (1), `lab8_3` (2),
//! `lab8_4` (2), `lab8_5` (4), `lab8_6` (1); no filter runs all 12.
//!
//! Every test works in a real temporary folder and runs a real `sh`. Each
//! tool call runs on a helper thread and must end within ten seconds, so a
//! tool that hangs fails its test instead of the whole run.
//!
//! Where the original spies on its queue (it replaces `MutationQueue.run` to
//! record keys), this port holds the shared queue on the file's path itself
//! and checks that the tool waits for it: same claim — every write and edit
//! goes through the one shared queue, keyed by the resolved path.

use std::env;
use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{self, Command};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use course::agent_loop::{AgentLoopOptions, RunReason, run_agent_loop};
use course::coding_tools::{
    BashDetails, CodingToolsOptions, Containment, MutationQueue, ReadDetails, create_coding_tools,
};
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::tool::{ToolCallOptions, ToolRegistry, execute_tool_call};
use course::types::{
    AgentContext, AgentMessage, StopReason, ToolCall, ToolResultMessage, assistant_message, text,
    user_message,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// How long a tool call or a run may take before its test fails.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long a call must stay blocked while the shared queue is held on its
/// path. A correct tool always passes; one that skips the queue has this
/// long to show it.
const QUIET: Duration = Duration::from_millis(200);

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

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
        raw_arguments: None,
    }
}

fn tools(options: CodingToolsOptions) -> Arc<ToolRegistry> {
    Arc::new(create_coding_tools(options))
}

fn workspace(root: &Path) -> CodingToolsOptions {
    CodingToolsOptions::new(root, Containment::Workspace)
}

/// Runs one call on a helper thread; it must end within `PATIENCE`.
fn execute(
    tools: &Arc<ToolRegistry>,
    call: ToolCall,
    options: ToolCallOptions,
) -> ToolResultMessage {
    let (sender, receiver) = mpsc::channel();
    let tools = Arc::clone(tools);
    let id = call.id.clone();
    thread::spawn(move || {
        let _ = sender.send(execute_tool_call(&call, &tools, options));
    });
    receiver
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("{id} 没有在 {PATIENCE:?} 内结束（或者工具 panic 了）"))
}

fn run(tools: &Arc<ToolRegistry>, call: ToolCall) -> ToolResultMessage {
    execute(tools, call, ToolCallOptions::default())
}

/// Runs `call` while the shared mutation queue is held on `key`: it must
/// not end while the key is held, and must end once it is released.
fn run_behind_shared_queue(
    tools: &Arc<ToolRegistry>,
    key: &Path,
    call: ToolCall,
) -> ToolResultMessage {
    let (sender, receiver) = mpsc::channel();
    let id = call.id.clone();
    MutationQueue::shared().run(key, || {
        let tools = Arc::clone(tools);
        thread::spawn(move || {
            let _ = sender.send(execute_tool_call(&call, &tools, ToolCallOptions::default()));
        });
        if let Ok(result) = receiver.recv_timeout(QUIET) {
            panic!(
                "{id} 没有等待共用修改队列上的 {}：{}",
                key.display(),
                output_of(&result)
            );
        }
    });
    receiver
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("队列放行以后，{id} 没有在 {PATIENCE:?} 内结束"))
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
    serde_json::from_value(details.clone()).unwrap_or_else(|error| {
        panic!(
            "details 的形状不对（{error}）：{details}；输出：{}",
            output_of(result)
        )
    })
}

fn read_text(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("读取 {}：{error}", path.display()))
}

/// Waits for a file a command writes (the original polls every 5 ms too).
fn wait_for_file(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < PATIENCE,
            "等待文件超时：{}",
            path.display()
        );
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn lab8_1_read_returns_a_line_window_whose_details_match_the_output() {
    let root = TempDir::new("pi-read-window-");
    let file = root.path().join("notes.txt");
    let source = "one\ntwo\nthree\nfour";
    fs::write(&file, source).unwrap();
    let tools = tools(CodingToolsOptions {
        max_read_lines: 2,
        ..workspace(root.path())
    });

    let result = run(
        &tools,
        call(
            "read-window",
            "read",
            json!({ "path": "notes.txt", "offset": 2, "limit": 9 }),
        ),
    );

    let output = output_of(&result);
    assert!(!result.is_error, "{output}");
    assert!(output.contains("2│ two"), "{output}");
    assert!(output.contains("3│ three"), "{output}");
    assert!(
        !output.contains("1│ one") && !output.contains("4│ four"),
        "窗口之外的行不能出现：{output}"
    );
    assert!(output.contains("offset=4"), "{output}");
    assert_eq!(
        result.details,
        Some(json!({
            "path": file.to_str().unwrap(),
            "bytes": source.len(),
            "lines": 4,
            "startLine": 2,
            "endLine": 3,
            "truncated": true,
        })),
        "{output}"
    );

    let beyond = run(
        &tools,
        call(
            "read-beyond",
            "read",
            json!({ "path": "notes.txt", "offset": 5 }),
        ),
    );
    assert!(beyond.is_error);
    assert!(
        output_of(&beyond).contains("offset=5 超出文件范围；文件共 4 行"),
        "{}",
        output_of(&beyond)
    );
}

#[test]
fn lab8_1_read_byte_limit_never_cuts_a_line_and_continuation_skips_none() {
    let root = TempDir::new("pi-read-bytes-");
    let lines = ["alpha".to_string(), "b".repeat(200), "charlie".to_string()];
    fs::write(root.path().join("long.txt"), lines.join("\n")).unwrap();
    fs::write(root.path().join("one-huge-line.txt"), "界".repeat(100)).unwrap();
    let max_read_bytes = 120;
    let tools_120 = tools(CodingToolsOptions {
        max_read_bytes,
        ..workspace(root.path())
    });

    let first = run(
        &tools_120,
        call("read-first", "read", json!({ "path": "long.txt" })),
    );
    assert!(!first.is_error, "{}", output_of(&first));
    assert!(output_of(&first).len() <= max_read_bytes);
    assert_eq!(
        output_of(&first),
        "   1│ alpha\n\n[已显示第 1-1 行，共 3 行；继续读取：offset=2]"
    );
    assert_eq!(details_of::<ReadDetails>(&first).end_line, 1);

    let continuation_tools = tools(CodingToolsOptions {
        max_read_bytes: 400,
        ..workspace(root.path())
    });
    let second = run(
        &continuation_tools,
        call(
            "read-second",
            "read",
            json!({ "path": "long.txt", "offset": 2 }),
        ),
    );
    let output = output_of(&second);
    assert!(!second.is_error, "{output}");
    assert!(
        output.contains(&format!("2│ {}", "b".repeat(20))),
        "{output}"
    );
    assert!(!output.contains("1│ alpha"), "{output}");
    assert_eq!(details_of::<ReadDetails>(&second).start_line, 2);

    let too_small = tools(CodingToolsOptions {
        max_read_bytes: 64,
        ..workspace(root.path())
    });
    let impossible = run(
        &too_small,
        call(
            "read-impossible",
            "read",
            json!({ "path": "one-huge-line.txt" }),
        ),
    );
    assert!(impossible.is_error, "{}", output_of(&impossible));
    assert!(
        output_of(&impossible).contains("无法返回从第 1 行开始的完整可续读结果"),
        "{}",
        output_of(&impossible)
    );
}

#[test]
fn lab8_2_workspace_paths_bind_read_write_and_edit() {
    let root = TempDir::new("pi-path-root-");
    let outside = TempDir::new("pi-path-outside-");
    let outside_file = outside.path().join("secret.txt");
    fs::write(&outside_file, "keep").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
    let tools = tools(workspace(root.path()));
    let outside_path = outside_file.to_str().unwrap();

    // write and edit first: their path check is this step's work, while read
    // already works from step 8.1.
    let attempts = [
        call(
            "outside-write",
            "write",
            json!({ "path": outside_path, "content": "replace" }),
        ),
        call(
            "outside-edit",
            "edit",
            json!({ "path": outside_path, "oldText": "keep", "newText": "replace" }),
        ),
        call("outside-read", "read", json!({ "path": outside_path })),
    ];
    for attempt in attempts {
        let id = attempt.id.clone();
        let result = run(&tools, attempt);
        assert!(result.is_error, "{id} 必须被拒绝：{}", output_of(&result));
        assert!(
            output_of(&result).contains("路径越过教学 workspace"),
            "{id}：{}",
            output_of(&result)
        );
    }

    let symlink_attempts = [
        call(
            "symlink-write",
            "write",
            json!({ "path": "escape/new.txt", "content": "new" }),
        ),
        call(
            "symlink-edit",
            "edit",
            json!({ "path": "escape/secret.txt", "oldText": "keep", "newText": "replace" }),
        ),
        call(
            "symlink-read",
            "read",
            json!({ "path": "escape/secret.txt" }),
        ),
    ];
    for attempt in symlink_attempts {
        let id = attempt.id.clone();
        let result = run(&tools, attempt);
        assert!(result.is_error, "{id} 必须被拒绝：{}", output_of(&result));
        assert!(
            output_of(&result).contains("符号链接越过教学 workspace"),
            "{id}：{}",
            output_of(&result)
        );
    }
    assert_eq!(read_text(&outside_file), "keep");
    assert!(
        !outside.path().join("new.txt").exists(),
        "符号链接外面不能出现新文件"
    );
}

#[test]
fn lab8_3_write_creates_parents_overwrites_whole_files_and_returns_evidence() {
    let root = TempDir::new("pi-write-file-");
    let tools = tools(workspace(root.path()));
    let file = root.path().join("nested").join("answer.txt");

    let created = run(
        &tools,
        call(
            "write-create",
            "write",
            json!({ "path": "nested/answer.txt", "content": "first" }),
        ),
    );
    assert!(!created.is_error, "{}", output_of(&created));
    assert_eq!(read_text(&file), "first");
    assert_eq!(
        created.details,
        Some(json!({ "path": file.to_str().unwrap(), "bytes": 5 }))
    );
    let hard_link_witness = root.path().join("nested").join("first-version.txt");
    fs::hard_link(&file, &hard_link_witness).unwrap();

    let overwritten = run_behind_shared_queue(
        &tools,
        &file,
        call(
            "write-overwrite",
            "write",
            json!({ "path": "nested/answer.txt", "content": "最终答案" }),
        ),
    );
    assert!(!overwritten.is_error, "{}", output_of(&overwritten));
    assert_eq!(read_text(&file), "最终答案");
    assert_eq!(
        read_text(&hard_link_witness),
        "first",
        "覆盖必须替换目录项，不能直接改写原 inode"
    );
    assert_eq!(
        details_of::<Value>(&overwritten)["bytes"],
        json!("最终答案".len())
    );

    let blocked = root.path().join("nested").join("blocked");
    fs::create_dir(&blocked).unwrap();
    fs::write(blocked.join("keep.txt"), "keep").unwrap();
    let failed = run(
        &tools,
        call(
            "write-rename-failure",
            "write",
            json!({ "path": "nested/blocked", "content": "不能覆盖目录" }),
        ),
    );
    assert!(failed.is_error, "{}", output_of(&failed));
    assert_eq!(read_text(&blocked.join("keep.txt")), "keep");

    let leftovers: Vec<String> = fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".pi-tmp-"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new(), "不能留下临时文件");
}

#[test]
fn lab8_3_mutation_queue_serializes_one_path_and_lets_other_paths_go_on() {
    let queue = Arc::new(MutationQueue::new());
    let order = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let push = |order: &Arc<Mutex<Vec<&'static str>>>, step| order.lock().unwrap().push(step);
    let (first_started, first_has_started) = mpsc::channel();
    let (release_first, first_released) = mpsc::channel::<()>();

    let first = {
        let (queue, order) = (Arc::clone(&queue), Arc::clone(&order));
        thread::spawn(move || {
            queue.run(Path::new("same"), || {
                push(&order, "same:first:start");
                first_started.send(()).unwrap();
                let _ = first_released.recv();
                push(&order, "same:first:end");
            })
        })
    };
    first_has_started
        .recv_timeout(PATIENCE)
        .expect("第一个操作没有开始");

    let second = {
        let (queue, order) = (Arc::clone(&queue), Arc::clone(&order));
        thread::spawn(move || {
            queue.run(Path::new("same"), || {
                push(&order, "same:second:start");
                push(&order, "same:second:end");
            })
        })
    };
    let (other_done, other_has_ended) = mpsc::channel();
    {
        let (queue, order) = (Arc::clone(&queue), Arc::clone(&order));
        thread::spawn(move || {
            queue.run(Path::new("other"), || {
                push(&order, "other:start");
                push(&order, "other:end");
            });
            other_done.send(()).unwrap();
        });
    }

    other_has_ended
        .recv_timeout(PATIENCE)
        .expect("不同路径的操作不能等待 same 上的操作");
    assert_eq!(
        *order.lock().unwrap(),
        ["same:first:start", "other:start", "other:end"]
    );

    release_first.send(()).unwrap();
    first.join().unwrap();
    second.join().unwrap();
    assert_eq!(
        *order.lock().unwrap(),
        [
            "same:first:start",
            "other:start",
            "other:end",
            "same:first:end",
            "same:second:start",
            "same:second:end",
        ]
    );

    // The original's operation throws; a Rust operation that fails this way
    // panics (an `Err` is just a value the operation returns).
    let failed = panic::catch_unwind(AssertUnwindSafe(|| {
        queue.run(Path::new("failed"), || panic!("expected failure"))
    }));
    let failure = failed.expect_err("run 必须把操作的 panic 传给调用者");
    assert_eq!(failure.downcast_ref::<&str>(), Some(&"expected failure"));
    let (next_done, next_has_run) = mpsc::channel();
    {
        let (queue, order) = (Arc::clone(&queue), Arc::clone(&order));
        thread::spawn(move || {
            queue.run(Path::new("failed"), || push(&order, "failed:next-ran"));
            next_done.send(()).unwrap();
        });
    }
    next_has_run
        .recv_timeout(PATIENCE)
        .expect("失败的操作之后，同一路径的下一个操作必须能运行");
    assert_eq!(order.lock().unwrap().last(), Some(&"failed:next-ran"));
}

#[test]
fn lab8_4_edit_applies_dependent_replacements_in_order_and_reports_bytes() {
    let root = TempDir::new("pi-edit-order-");
    let file = root.path().join("value.txt");
    let source = "alpha beta";
    let tools = tools(workspace(root.path()));
    let written = run(
        &tools,
        call(
            "edit-setup",
            "write",
            json!({ "path": "value.txt", "content": source }),
        ),
    );
    assert!(!written.is_error, "{}", output_of(&written));
    let hard_link_witness = root.path().join("before-edit.txt");
    fs::hard_link(&file, &hard_link_witness).unwrap();

    let result = run(
        &tools,
        call(
            "edit-order",
            "edit",
            json!({
                "path": "value.txt",
                "edits": [
                    { "oldText": "alpha", "newText": "gamma" },
                    { "oldText": "gamma beta", "newText": "done" },
                ],
            }),
        ),
    );

    assert!(!result.is_error, "{}", output_of(&result));
    assert_eq!(read_text(&file), "done");
    assert_eq!(
        read_text(&hard_link_witness),
        source,
        "Edit 必须在整批验证后替换目录项，不能直接改写原 inode"
    );
    assert_eq!(
        result.details,
        Some(json!({
            "path": file.to_str().unwrap(),
            "oldBytes": source.len(),
            "newBytes": "done".len(),
            "edits": 2,
        }))
    );
    let deleted = run_behind_shared_queue(
        &tools,
        &file,
        call(
            "edit-delete",
            "edit",
            json!({ "path": "value.txt", "oldText": "done", "newText": "" }),
        ),
    );
    assert!(!deleted.is_error, "{}", output_of(&deleted));
    assert_eq!(read_text(&file), "");
}

#[test]
fn lab8_4_edit_refuses_empty_batches_empty_and_repeated_matches_and_keeps_the_file() {
    let root = TempDir::new("pi-edit-errors-");
    let file = root.path().join("value.txt");
    let tools = tools(workspace(root.path()));

    fs::write(&file, "one two").unwrap();
    let empty_batch = run(
        &tools,
        call(
            "edit-empty-batch",
            "edit",
            json!({ "path": "value.txt", "edits": [] }),
        ),
    );
    assert!(empty_batch.is_error);
    assert!(
        output_of(&empty_batch).contains("edits 不能为空"),
        "{}",
        output_of(&empty_batch)
    );
    assert_eq!(read_text(&file), "one two");

    let empty_match = run(
        &tools,
        call(
            "edit-empty-match",
            "edit",
            json!({ "path": "value.txt", "oldText": "", "newText": "X" }),
        ),
    );
    assert!(empty_match.is_error);
    assert!(
        output_of(&empty_match).contains("oldText 不能为空"),
        "{}",
        output_of(&empty_match)
    );
    assert_eq!(read_text(&file), "one two");

    fs::write(&file, "same same").unwrap();
    let repeated = run(
        &tools,
        call(
            "edit-repeated",
            "edit",
            json!({ "path": "value.txt", "oldText": "same", "newText": "X" }),
        ),
    );
    assert!(repeated.is_error, "{}", output_of(&repeated));
    assert!(
        output_of(&repeated).contains("匹配多次"),
        "{}",
        output_of(&repeated)
    );
    assert_eq!(read_text(&file), "same same");

    fs::write(&file, "one two").unwrap();
    let failed_batch = run(
        &tools,
        call(
            "edit-rollback",
            "edit",
            json!({
                "path": "value.txt",
                "edits": [
                    { "oldText": "one", "newText": "ONE" },
                    { "oldText": "missing", "newText": "X" },
                ],
            }),
        ),
    );
    assert!(failed_batch.is_error, "{}", output_of(&failed_batch));
    assert!(
        output_of(&failed_batch).contains("edits[1] 没有匹配"),
        "{}",
        output_of(&failed_batch)
    );
    assert_eq!(read_text(&file), "one two");
}

#[test]
fn lab8_5_bash_returns_output_in_cwd_and_keeps_nonzero_exit_codes() {
    let root = TempDir::new("pi-bash-exit-");
    let marker_name = format!(
        "{}-outside.txt",
        root.path().file_name().unwrap().to_str().unwrap()
    );
    let outside_marker = root.path().parent().unwrap().join(&marker_name);
    let _ = fs::remove_file(&outside_marker);
    let tools = tools(workspace(root.path()));

    let succeeded = run(
        &tools,
        call(
            "bash-success",
            "bash",
            json!({ "command": "printf 'ok\\n'; pwd" }),
        ),
    );
    let output = output_of(&succeeded);
    assert!(!succeeded.is_error, "{output}");
    assert!(output.starts_with("ok\n"), "{output}");
    let real_root = fs::canonicalize(root.path()).unwrap();
    assert_eq!(output.trim_end().lines().last(), real_root.to_str());
    assert_eq!(details_of::<BashDetails>(&succeeded).exit_code, Some(0));

    let failed = run(
        &tools,
        call(
            "bash-nonzero",
            "bash",
            json!({ "command": "printf 'bad\\n' >&2; exit 7" }),
        ),
    );
    assert!(failed.is_error, "{}", output_of(&failed));
    assert!(output_of(&failed).contains("bad"), "{}", output_of(&failed));
    assert_eq!(details_of::<BashDetails>(&failed).exit_code, Some(7));
    assert!(!details_of::<BashDetails>(&failed).timed_out);

    for guarded_call in [
        call(
            "bash-guard-parent",
            "bash",
            json!({ "command": format!("printf escaped > ../{marker_name}") }),
        ),
        call(
            "bash-guard-absolute",
            "bash",
            json!({ "command": format!("printf escaped > {}", outside_marker.display()) }),
        ),
    ] {
        let guarded = run(&tools, guarded_call);
        assert!(guarded.is_error, "{}", output_of(&guarded));
        assert!(
            output_of(&guarded).contains("guardrail"),
            "{}",
            output_of(&guarded)
        );
        let escaped = outside_marker.exists();
        let _ = fs::remove_file(&outside_marker);
        assert!(!escaped, "命令不能在 workspace 之外写出文件");
    }
}

#[test]
fn lab8_5_bash_cancelled_beforehand_never_starts() {
    let root = TempDir::new("pi-bash-precancel-");
    let marker = root.path().join("started.txt");
    let tools = tools(workspace(root.path()));
    let signal = Arc::new(AtomicBool::new(true));

    let result = execute(
        &tools,
        call(
            "bash-precancel",
            "bash",
            json!({ "command": "printf started > started.txt" }),
        ),
        ToolCallOptions {
            signal: Some(signal),
            report_progress: None,
        },
    );

    assert!(result.is_error, "{}", output_of(&result));
    assert!(details_of::<BashDetails>(&result).aborted);
    assert!(!marker.exists(), "预先取消的命令不能启动");
}

#[test]
fn lab8_5_bash_truncation_note_counts_inside_the_output_budget() {
    let root = TempDir::new("pi-bash-output-");
    let max_bash_output_bytes = 64;
    let tools = tools(CodingToolsOptions {
        max_bash_output_bytes,
        ..workspace(root.path())
    });

    let result = run(
        &tools,
        call(
            "bash-output",
            "bash",
            json!({ "command": "printf '%0300d' 0 | tr 0 x; printf '%0300d' 0 | tr 0 y >&2" }),
        ),
    );

    let output = output_of(&result);
    assert!(!result.is_error, "{output}");
    assert!(details_of::<BashDetails>(&result).truncated, "{output}");
    assert!(
        output.len() <= max_bash_output_bytes,
        "{} bytes：{output}",
        output.len()
    );
    assert!(output.ends_with("[输出已截断]"), "{output}");
}

/// Whether process `pid` has ended (a zombie has ended too: nobody may have
/// reaped it yet).
fn process_gone(pid: &str) -> bool {
    let state = Command::new("ps")
        .args(["-o", "stat=", "-p", pid])
        .output()
        .unwrap();
    let state = String::from_utf8_lossy(&state.stdout);
    state.trim().is_empty() || state.trim().starts_with('Z')
}

/// Kills the descendant if it is still alive when the test ends, like the
/// original's `t.after`.
struct KillOnDrop(PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = fs::read_to_string(&self.0) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).output();
        }
    }
}

#[test]
fn lab8_5_bash_tells_timeout_from_cancellation_and_ends_descendants() {
    let root = TempDir::new("pi-bash-stop-");
    let _descendant = KillOnDrop(root.path().join("descendant.pid"));

    let timeout_tools = tools(CodingToolsOptions {
        bash_timeout: Duration::from_millis(200),
        ..workspace(root.path())
    });
    let timed_out = run(
        &timeout_tools,
        call(
            "bash-timeout",
            "bash",
            json!({ "command": "trap 'printf yes > timeout-stopped.txt; exit 0' TERM; printf yes > timeout-ready.txt; sleep 1 & wait" }),
        ),
    );
    assert!(timed_out.is_error, "{}", output_of(&timed_out));
    assert!(details_of::<BashDetails>(&timed_out).timed_out);
    assert!(!details_of::<BashDetails>(&timed_out).aborted);
    assert_eq!(read_text(&root.path().join("timeout-stopped.txt")), "yes");

    let cancel_tools = tools(CodingToolsOptions {
        bash_timeout: Duration::from_millis(5_000),
        ..workspace(root.path())
    });
    let signal = Arc::new(AtomicBool::new(false));
    let running = {
        let (tools, signal) = (Arc::clone(&cancel_tools), Arc::clone(&signal));
        thread::spawn(move || {
            execute(
                &tools,
                call(
                    "bash-runtime-cancel",
                    "bash",
                    json!({ "command": "trap 'printf yes > cancel-stopped.txt; exit 0' TERM; printf yes > running.txt; sleep 1 & wait" }),
                ),
                ToolCallOptions {
                    signal: Some(signal),
                    report_progress: None,
                },
            )
        })
    };
    wait_for_file(&root.path().join("running.txt"));
    signal.store(true, Ordering::SeqCst);
    let cancelled = running.join().unwrap();
    assert!(cancelled.is_error, "{}", output_of(&cancelled));
    assert!(details_of::<BashDetails>(&cancelled).aborted);
    assert!(!details_of::<BashDetails>(&cancelled).timed_out);
    assert_eq!(read_text(&root.path().join("cancel-stopped.txt")), "yes");

    // A descendant that ignores SIGTERM: only SIGKILL to the whole process
    // group ends it before it writes its survival mark.
    fs::write(
        root.path().join("descendant.sh"),
        "trap '' TERM\necho $$ > descendant.pid\nprintf yes > descendant-ready.txt\nsleep 0.3\nprintf yes > descendant-survived.txt\nsleep 0.5\n",
    )
    .unwrap();
    let descendant_tools = tools(CodingToolsOptions {
        bash_timeout: Duration::from_millis(5_000),
        ..workspace(root.path())
    });
    let descendant_signal = Arc::new(AtomicBool::new(false));
    let descendant_running = {
        let (tools, signal) = (
            Arc::clone(&descendant_tools),
            Arc::clone(&descendant_signal),
        );
        thread::spawn(move || {
            execute(
                &tools,
                call(
                    "bash-descendant-cancel",
                    "bash",
                    json!({ "command": "sh descendant.sh & sleep 1" }),
                ),
                ToolCallOptions {
                    signal: Some(signal),
                    report_progress: None,
                },
            )
        })
    };
    wait_for_file(&root.path().join("descendant-ready.txt"));
    descendant_signal.store(true, Ordering::SeqCst);
    let descendant_run = descendant_running.join().unwrap();
    assert!(descendant_run.is_error, "{}", output_of(&descendant_run));
    assert!(details_of::<BashDetails>(&descendant_run).aborted);
    assert!(!details_of::<BashDetails>(&descendant_run).timed_out);
    let pid = read_text(&root.path().join("descendant.pid"));
    let started = Instant::now();
    while !process_gone(pid.trim()) {
        assert!(
            started.elapsed() < PATIENCE,
            "后代进程 {} 还活着",
            pid.trim()
        );
        thread::sleep(Duration::from_millis(5));
    }
    assert!(
        !root.path().join("descendant-survived.txt").exists(),
        "忽略 SIGTERM 的后代进程必须被结束"
    );
}

#[test]
fn lab8_6_real_agent_loop_reads_edits_and_runs_bash_with_paired_results() {
    let root = TempDir::new("pi-tools-loop-");
    fs::write(root.path().join("task.txt"), "draft").unwrap();
    let calls = [
        call("loop-read", "read", json!({ "path": "task.txt" })),
        call(
            "loop-edit",
            "edit",
            json!({ "path": "task.txt", "oldText": "draft", "newText": "done" }),
        ),
        call(
            "loop-bash",
            "bash",
            json!({ "command": "test \"$(cat task.txt)\" = done || exit 2; printf verified" }),
        ),
    ];
    let turns: Vec<ScriptedTurn> = calls
        .iter()
        .map(|call| assistant_message(vec![call.clone().into()], StopReason::ToolUse).into())
        .chain([assistant_message(
            vec![text("文件已经修改并通过检查。").into()],
            StopReason::Stop,
        )
        .into()])
        .collect();
    let tools = tools(workspace(root.path()));

    let (sender, receiver) = mpsc::channel();
    {
        let tools = Arc::clone(&tools);
        thread::spawn(move || {
            let model = ScriptedModel::new(turns);
            let context = AgentContext {
                messages: vec![AgentMessage::User(user_message(
                    "把 task.txt 改成 done 并检查结果",
                ))],
                tools: None,
            };
            let run = run_agent_loop(
                &model,
                &tools,
                &context,
                AgentLoopOptions::default(),
                |_| {},
            );
            let _ = sender.send((run, model.requests().len()));
        });
    }
    let (run, requests) = receiver
        .recv_timeout(PATIENCE)
        .expect("Agent 循环没有在时限内结束（或者 panic 了）");

    let results: Vec<&ToolResultMessage> = run
        .messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    let outputs: Vec<String> = results.iter().map(|result| output_of(result)).collect();
    assert_eq!(run.reason, RunReason::Stop, "{outputs:?}");
    assert_eq!(
        read_text(&root.path().join("task.txt")),
        "done",
        "{outputs:?}"
    );
    assert_eq!(
        results
            .iter()
            .map(|result| (
                result.tool_call_id.as_str(),
                result.tool_name.as_str(),
                result.is_error
            ))
            .collect::<Vec<_>>(),
        calls
            .iter()
            .map(|call| (call.id.as_str(), call.name.as_str(), false))
            .collect::<Vec<_>>(),
        "{outputs:?}"
    );
    assert!(outputs[2].contains("verified"), "{outputs:?}");
    assert_eq!(requests, 4);
    let roles: Vec<&str> = run
        .messages
        .iter()
        .map(|message| match message {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
        ]
    );
}
