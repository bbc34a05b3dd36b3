//! Chapter 08's call-order step (8.7), copied into the lab beside the
//! focused test: one turn's writes and edits of one file land in call order,
//! while calls on other files still run beside them.
//!
//! The mutation queue keeps two writes of a file apart, but the threads of
//! one turn reach it in whatever order the scheduler runs them. Only the
//! loop knows the call order, so a tool names a serial key for a call
//! (write and edit: their file) and chapter 07's loop runs the calls that
//! share a key one after another, in call order.
//!
//! `cargo test -p course --test coding_tools_order`

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use course::agent_loop::{AgentLoopOptions, AgentRunResult, RunReason, run_agent_loop};
use course::coding_tools::{CodingToolsOptions, Containment, create_coding_tools};
use course::scripted_model::ScriptedModel;
use course::tool::{ToolCallOptions, ToolExecutor, ToolRegistry, execute_tool_call};
use course::types::{
    AgentContext, AgentMessage, StopReason, ToolCall, ToolResultMessage, assistant_message, text,
    user_message,
};
use serde_json::{Value, json};

/// How long a run may take, and how long two calls may take to meet.
const PATIENCE: Duration = Duration::from_secs(10);
/// How long a running call gives a call on its own file to start beside it.
/// A correct loop always passes; one that runs them side by side has this
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

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
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

fn output_of(result: &ToolResultMessage) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .map(|block| block.text.as_str())
        .collect();
    texts.join("\n")
}

/// Plays one turn of `calls`, then a text answer, through chapter 07's loop
/// on a helper thread; the run must end within `PATIENCE`.
fn one_turn(
    calls: &[ToolCall],
    tools: Arc<ToolRegistry>,
    executor: Option<Arc<ToolExecutor>>,
) -> AgentRunResult {
    let turns = vec![
        assistant_message(
            calls.iter().cloned().map(Into::into).collect(),
            StopReason::ToolUse,
        )
        .into(),
        assistant_message(vec![text("done").into()], StopReason::Stop).into(),
    ];
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let model = ScriptedModel::new(turns);
        let context = AgentContext {
            messages: vec![AgentMessage::User(user_message("one turn"))],
            tools: None,
        };
        let options = AgentLoopOptions {
            execute_tool_call: executor.as_deref().map(|executor| executor as _),
            ..AgentLoopOptions::default()
        };
        let _ = sender.send(run_agent_loop(&model, &tools, &context, options, |_| {}));
    });
    receiver
        .recv_timeout(PATIENCE * 3)
        .expect("循环没有按时结束（或者 panic 了）")
}

fn results(run: &AgentRunResult) -> Vec<&ToolResultMessage> {
    run.messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect()
}

#[test]
fn a_hundred_dependent_edits_of_one_file_in_one_turn_land_in_call_order() {
    for _ in 0..3 {
        let root = TempDir::new("pi-order-edits-");
        let tools = Arc::new(create_coding_tools(CodingToolsOptions::new(
            &root.0,
            Containment::Workspace,
        )));
        // The write creates the file; edit `i` puts `i` before the end
        // marker, so the file lists the order the edits ran in, and each
        // edit needs the ones before it to have run.
        let mut calls = vec![call(
            "write",
            "write",
            json!({ "path": "list.txt", "content": "<end>" }),
        )];
        calls.extend((0..100).map(|index| {
            let arguments = json!({ "path": "list.txt", "oldText": "<end>", "newText": format!("{index}\n<end>") });
            call(&format!("edit-{index}"), "edit", arguments)
        }));

        let run = one_turn(&calls, tools, None);

        assert_eq!(run.reason, RunReason::Stop);
        let results = results(&run);
        let failed: Vec<String> = results
            .iter()
            .filter(|result| result.is_error)
            .map(|result| format!("{}: {}", result.tool_call_id, output_of(result)))
            .collect();
        let first: Vec<&String> = failed.iter().take(3).collect();
        assert!(
            failed.is_empty(),
            "{} 个调用失败，前几个：{first:?}",
            failed.len()
        );
        let ids: Vec<&str> = results
            .iter()
            .map(|result| result.tool_call_id.as_str())
            .collect();
        let called: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(ids, called, "结果要按调用的顺序");
        let landed = fs::read_to_string(root.file("list.txt")).unwrap();
        let expected: Vec<String> = (0..100).map(|index| index.to_string()).collect();
        assert_eq!(
            landed,
            format!("{}\n<end>", expected.join("\n")),
            "按调用的顺序写进文件"
        );
    }
}

/// What the gated executor saw.
#[derive(Default)]
struct Seen {
    /// The file of each call now running.
    running: Vec<String>,
    /// The calls in the order they started.
    started: Vec<String>,
    /// Complaints: calls on one file side by side, calls that never overlapped.
    problems: Vec<String>,
}

#[test]
fn calls_on_one_file_take_turns_while_calls_on_other_files_overlap() {
    let root = TempDir::new("pi-order-overlap-");
    let tools = Arc::new(create_coding_tools(CodingToolsOptions::new(
        &root.0,
        Containment::Workspace,
    )));
    // Interleaved on purpose: the results still come back in call order.
    let calls = [
        call(
            "write-a",
            "write",
            json!({ "path": "a.txt", "content": "1" }),
        ),
        call(
            "write-b",
            "write",
            json!({ "path": "b.txt", "content": "1" }),
        ),
        call(
            "edit-a",
            "edit",
            json!({ "path": "./a.txt", "oldText": "1", "newText": "2" }),
        ),
        call(
            "edit-b",
            "edit",
            json!({ "path": "b.txt", "oldText": "1", "newText": "2" }),
        ),
    ];
    let seen = Arc::new((Mutex::new(Seen::default()), Condvar::new()));
    let executor: Arc<ToolExecutor> = {
        let (seen, tools) = (Arc::clone(&seen), Arc::clone(&tools));
        Arc::new(move |call: &ToolCall, options: ToolCallOptions| {
            let file = call.arguments["path"]
                .as_str()
                .unwrap()
                .trim_start_matches("./");
            let (lock, changed) = &*seen;
            let mut state = lock.lock().unwrap();
            state.running.push(file.to_string());
            state.started.push(call.id.clone());
            changed.notify_all();
            // The two writes meet: calls on different files run side by side.
            if call.name == "write" {
                let both = |state: &mut Seen| {
                    state
                        .started
                        .iter()
                        .filter(|id| id.starts_with("write"))
                        .count()
                        < 2
                };
                let (waited, timeout) = changed.wait_timeout_while(state, PATIENCE, both).unwrap();
                state = waited;
                if timeout.timed_out() {
                    state
                        .problems
                        .push(format!("{} 没有和另一个文件的调用同时运行", call.id));
                }
            }
            // A call on the same file must not start beside this one.
            let alone =
                |state: &mut Seen| state.running.iter().filter(|other| *other == file).count() < 2;
            let (waited, _) = changed.wait_timeout_while(state, QUIET, alone).unwrap();
            state = waited;
            if !alone(&mut state) {
                let problem = format!("{file} 上的两个调用同时在运行：{:?}", state.started);
                state.problems.push(problem);
            }
            drop(state);
            let result = execute_tool_call(call, &tools, options);
            let mut state = lock.lock().unwrap();
            let index = state
                .running
                .iter()
                .position(|other| other == file)
                .unwrap();
            state.running.remove(index);
            changed.notify_all();
            Ok(result)
        })
    };

    let run = one_turn(&calls, tools, Some(executor));

    let state = seen.0.lock().unwrap();
    assert_eq!(state.problems, Vec::<String>::new());
    let order_of = |file: char| -> Vec<&str> {
        let ends = |id: &&String| id.ends_with(file);
        state
            .started
            .iter()
            .filter(ends)
            .map(String::as_str)
            .collect()
    };
    assert_eq!(
        order_of('a'),
        ["write-a", "edit-a"],
        "同一个文件的调用按调用的顺序运行"
    );
    assert_eq!(
        order_of('b'),
        ["write-b", "edit-b"],
        "同一个文件的调用按调用的顺序运行"
    );
    let outputs: Vec<String> = results(&run)
        .iter()
        .map(|result| output_of(result))
        .collect();
    let ended: Vec<(&str, bool)> = results(&run)
        .iter()
        .map(|result| (result.tool_call_id.as_str(), result.is_error))
        .collect();
    assert_eq!(
        ended,
        [
            ("write-a", false),
            ("write-b", false),
            ("edit-a", false),
            ("edit-b", false)
        ],
        "{outputs:?}"
    );
    assert_eq!(fs::read_to_string(root.file("a.txt")).unwrap(), "2");
    assert_eq!(fs::read_to_string(root.file("b.txt")).unwrap(), "2");
}
