//! Chapter 08's measured run: what the coding tools cost at sizes a test
//! cannot afford. Each scenario runs alone, so its process's peak memory is
//! its own; read that from `/usr/bin/time -v` ("Maximum resident set size"):
//!
//! ```sh
//! cargo build --release -p course --example bench_coding_tools
//! /usr/bin/time -v target/release/examples/bench_coding_tools bash   # a command printing 1 GB
//! /usr/bin/time -v target/release/examples/bench_coding_tools read   # read of a 2 GiB sparse file
//! /usr/bin/time -v target/release/examples/bench_coding_tools edits  # 100 parallel edits of one file, 20 runs
//! /usr/bin/time -v target/release/examples/bench_coding_tools idle   # the process doing nothing, for scale
//! ```
//!
//! It prints figures, it asserts nothing about speed.

use std::env;
use std::fs::{self, File};
use std::io::Write;
use std::path::PathBuf;
use std::process::{self, ExitCode};
use std::time::Instant;

use course::agent_loop::{AgentLoopOptions, run_agent_loop};
use course::coding_tools::{
    BashDetails, CodingToolsOptions, Containment, ReadDetails, create_coding_tools,
};
use course::scripted_model::ScriptedModel;
use course::tool::{ToolCallOptions, execute_tool_call};
use course::types::{
    AgentContext, AgentMessage, StopReason, ToolCall, ToolResultMessage, assistant_message, text,
    user_message,
};
use serde_json::{Value, json};

/// A folder of its own under the system's temporary folder, removed at the end.
struct Workspace(PathBuf);

impl Workspace {
    fn new(name: &str) -> Workspace {
        let path = env::temp_dir().join(format!("bench-coding-tools-{name}-{}", process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).expect("create the workspace");
        Workspace(path)
    }
}

impl Drop for Workspace {
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

fn details<T: serde::de::DeserializeOwned>(result: &ToolResultMessage) -> T {
    serde_json::from_value(result.details.clone().expect("details")).expect("details' shape")
}

fn bash() {
    let workspace = Workspace::new("bash");
    let tools = create_coding_tools(CodingToolsOptions::new(
        &workspace.0,
        Containment::Workspace,
    ));
    let command = "yes 0123456789abcdef | head -c 1000000000";
    let started = Instant::now();
    let result = execute_tool_call(
        &call("bash-1g", "bash", json!({ "command": command })),
        &tools,
        ToolCallOptions::default(),
    );
    let elapsed = started.elapsed();
    let details: BashDetails = details(&result);
    let shown: usize = result.content.iter().map(|block| block.text.len()).sum();
    println!("bash: `{command}` (1,000,000,000 bytes of output)");
    println!(
        "  {:.2} s, exit {:?}, truncated {}, {} bytes returned (cap 96,000)",
        elapsed.as_secs_f64(),
        details.exit_code,
        details.truncated,
        shown
    );
}

fn read() {
    let workspace = Workspace::new("read");
    let file = workspace.0.join("sparse.txt");
    let mut writer = File::create(&file).expect("create the file");
    for number in 1..=1_000 {
        writeln!(writer, "line {number}").expect("write a line");
    }
    // The rest is a hole: 2 GiB in size, no disk blocks, all zero bytes.
    writer.set_len(2 << 30).expect("grow the file");
    drop(writer);
    let tools = create_coding_tools(CodingToolsOptions::new(
        &workspace.0,
        Containment::Workspace,
    ));
    // The first pass reads the holes into the page cache; the second finds them there.
    for offset in [1, 1, 1_001] {
        let started = Instant::now();
        let result = execute_tool_call(
            &call(
                "read-2g",
                "read",
                json!({ "path": "sparse.txt", "offset": offset }),
            ),
            &tools,
            ToolCallOptions::default(),
        );
        let elapsed = started.elapsed();
        let text: String = result
            .content
            .iter()
            .map(|block| block.text.as_str())
            .collect();
        if result.is_error {
            println!(
                "read of a 2 GiB sparse file at offset {offset}: {:.2} s, error: {text}",
                elapsed.as_secs_f64()
            );
        } else {
            let details: ReadDetails = details(&result);
            println!(
                "read of a 2 GiB sparse file at offset {offset}: {:.2} s, {} bytes and {} lines counted, lines {}-{} shown ({} bytes)",
                elapsed.as_secs_f64(),
                details.bytes,
                details.lines,
                details.start_line,
                details.end_line,
                text.len()
            );
        }
    }
}

/// One turn of 100 edit calls on one file, through chapter 07's loop. Edit
/// `i` puts line `i` before the end marker, so the file lists the order in
/// which the edits ran: the call order, since edits of one file share a
/// serial key and the loop runs them as one job.
fn edits() {
    const EDITS: usize = 100;
    const RUNS: usize = 20;
    let mut in_call_order = 0;
    let mut fastest = f64::MAX;
    let mut slowest: f64 = 0.0;
    for _ in 0..RUNS {
        let workspace = Workspace::new("edits");
        fs::write(workspace.0.join("list.txt"), "<end>").expect("write the file");
        let calls: Vec<ToolCall> = (0..EDITS)
            .map(|index| {
                let arguments = json!({ "path": "list.txt", "oldText": "<end>", "newText": format!("{index}\n<end>") });
                call(&format!("edit-{index}"), "edit", arguments)
            })
            .collect();
        let model = ScriptedModel::new(vec![
            assistant_message(
                calls.into_iter().map(Into::into).collect(),
                StopReason::ToolUse,
            )
            .into(),
            assistant_message(vec![text("done").into()], StopReason::Stop).into(),
        ]);
        let tools = create_coding_tools(CodingToolsOptions::new(
            &workspace.0,
            Containment::Workspace,
        ));
        let context = AgentContext {
            messages: vec![AgentMessage::User(user_message("100 edits"))],
            tools: None,
        };
        let started = Instant::now();
        let run = run_agent_loop(
            &model,
            &tools,
            &context,
            AgentLoopOptions::default(),
            |_| {},
        );
        let elapsed = started.elapsed().as_secs_f64();
        fastest = fastest.min(elapsed);
        slowest = slowest.max(elapsed);
        let failed = run
            .messages
            .iter()
            .filter(
                |message| matches!(message, AgentMessage::ToolResult(result) if result.is_error),
            )
            .count();
        assert_eq!(failed, 0, "every edit succeeds");
        let landed: Vec<usize> = fs::read_to_string(workspace.0.join("list.txt"))
            .expect("read the file")
            .lines()
            .filter_map(|line| line.parse().ok())
            .collect();
        assert_eq!(landed.len(), EDITS, "every edit landed");
        if landed.iter().copied().eq(0..EDITS) {
            in_call_order += 1;
        }
    }
    println!("{EDITS} parallel edits of one file in one turn, {RUNS} runs: all landed every time");
    println!(
        "  the loop's run: {:.1}-{:.1} ms; applied in call order in {in_call_order} of {RUNS} runs",
        fastest * 1e3,
        slowest * 1e3
    );
}

fn main() -> ExitCode {
    match env::args().nth(1).as_deref() {
        Some("bash") => bash(),
        Some("read") => read(),
        Some("edits") => edits(),
        Some("idle") => println!("idle: nothing run"),
        _ => {
            eprintln!("usage: bench_coding_tools bash|read|edits|idle");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
