//! The agent loop, runnable: chapter 07's `run_agent_loop` with two tools
//! of its own over the current folder.
//!
//! ```sh
//! cargo run -p course --example agent -- [--base-url URL] [--model NAME] [--system TEXT] [--idle-timeout SECS] [--max-steps N] [--json] [--] PROMPT
//! ```
//!
//! One run of the loop per process, over the prompt (after a system message
//! when `--system` gives one):
//! * without `--json`: the final answer's text on stdout; what the tools do
//!   is said on stderr as it happens.
//! * with `--json`: each loop event as one JSON line as it happens (chapter
//!   07's wire), then the run `{"reason","steps","messages"}`.
//!
//! Two tools: `read` (`{path}`: a regular UTF-8 file of at most 1 MiB) and
//! `list` (`{path?}`: a folder's entries, the current folder by default). A
//! path that leaves the current folder (absolute, through `..` or a
//! symlink) is an error result, and so is anything else than a regular file
//! for `read` (a FIFO would block forever, a device never end) or a folder
//! for `list`. `--max-steps N` (at least 1) caps the model calls; the loop's
//! default is 32. The flags, the environment, the key rule and the demo
//! server are `chat`'s (the shared `cli` module). With no base URL the demo
//! server asks to read `course/Cargo.toml`, then answers with the project's
//! name from the tool's result (at once, if the read failed: not in the
//! course's folder).
//!
//! The first Ctrl-C sets the run's signal, which the loop hands to the
//! model and the tools; a failed write to stdout sets it too (nobody
//! reads on). A second Ctrl-C ends the process at once (exit 130). A run
//! that did not end with stop is said on stderr. Exit 0 when the run ended
//! with stop and its output was written (and for `--help`), 1 otherwise, 2
//! for bad arguments (`--max-steps 0` too).

mod cli;

use std::env;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cli::{Cli, Out, Parsed};
use course::agent_loop::{
    AgentLoopOptions, AgentRunResult, DEFAULT_MAX_STEPS, LoopEvent, RunReason, run_agent_loop,
};
use course::tool::{
    ObjectSchema, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, object_schema,
    optional_string, string_value,
};
use course::types::{AgentMessage, AssistantContent, Model, TextContent, text, text_of};
use serde::Deserialize;
use serde_json::{Value, json};

/// The file the demo reads: it names the project.
const DEMO_FILE: &str = "course/Cargo.toml";

/// A tool result longer than this is cut on stderr (the model and `--json`
/// get all of it).
const SHOWN_CHARS: usize = 1_500;

/// The largest file `read` hands to the model.
const MAX_READ_BYTES: u64 = 1024 * 1024;

fn main() -> ExitCode {
    let usage = cli::usage("agent", " [--max-steps N]");
    let parsed = cli::parse(env::args_os().skip(1), &["--max-steps"], |name| {
        env::var(name).ok()
    });
    let (cli, max_steps) = match parsed.and_then(options) {
        Ok(Some(run)) => run,
        Ok(None) => {
            Out::new().write(&format!("{usage}\n{}\n", help()));
            return ExitCode::SUCCESS;
        }
        Err(problem) => {
            cli::say(&format!("{problem}\n{usage}"));
            return ExitCode::from(2);
        }
    };
    // The real path: `read` and `list` compare real paths with it.
    let root = match env::current_dir().and_then(fs::canonicalize) {
        Ok(root) => root,
        Err(error) => {
            cli::say(&format!("无法确定当前目录：{error}"));
            return ExitCode::from(1);
        }
    };
    let tools = ToolRegistry::with_tools(vec![
        Box::new(Read { root: root.clone() }),
        Box::new(List { root }),
    ])
    .expect("read and list have different names");
    // Set by the first Ctrl-C; a second one then ends the process (exit 130).
    let signal = Arc::new(AtomicBool::new(false));
    cli::ctrl_c(&signal);
    let model = match cli::provider(&cli, "agent", env::var_os("OPENAI_API_KEY")) {
        Ok(Some(model)) => model,
        Ok(None) => match cli::demo_model(&cli, demo) {
            Ok(model) => {
                cli::say(&format!(
                    "演示：读取 {DEMO_FILE}，再从里面找出项目名来回答。"
                ));
                model
            }
            Err(error) => {
                cli::say(&format!("演示服务器无法启动：{error}"));
                return ExitCode::from(1);
            }
        },
        Err(problem) => {
            cli::say(&problem);
            return ExitCode::from(2);
        }
    };
    let mut out = Out::new();
    let run = run(&model, &tools, &cli, max_steps, &signal, &mut out);
    if run.reason != RunReason::Stop {
        cli::say(&format!(
            "—— 运行结束：{}，{} 次模型调用",
            reason(run.reason),
            run.steps
        ));
    }
    match run.reason == RunReason::Stop && !out.failed() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    }
}

/// The rest of `--help`.
fn help() -> String {
    format!(
        "工具：read {{path}} 读当前目录下不超过 1 MiB 的普通 UTF-8 文件；list {{path?}} 列出一个目录的条目（默认当前目录）。离开当前目录的路径（绝对路径、..、符号链接）得到错误结果。\n--max-steps N：最多调用模型 N 次（默认 {DEFAULT_MAX_STEPS}）。\n--json：每个事件一行 JSON，最后一行是这次运行；不加时只把最终回答写到 stdout，工具做了什么写在 stderr。"
    )
}

/// The flags beyond `cli`'s, read and checked: `None` for `--help`. No
/// model call at all is no run, so `--max-steps` is at least 1.
fn options(parsed: Parsed) -> Result<Option<(Cli, Option<usize>)>, String> {
    let Parsed::Run(cli) = parsed else {
        return Ok(None);
    };
    let value =
        |flag: &str| (cli.own.iter()).find_map(|(name, value)| (name == flag).then_some(value));
    let max_steps = at_least_one(value("--max-steps"), "--max-steps")?.map(|n| n as usize);
    Ok(Some((cli, max_steps)))
}

/// The value of `flag N`, if given: an integer of at least 1.
fn at_least_one(value: Option<&String>, flag: &str) -> Result<Option<u64>, String> {
    let Some(value) = value else {
        return Ok(None);
    };
    match value.parse::<u64>() {
        Ok(number) if number >= 1 => Ok(Some(number)),
        _ => Err(format!("{flag} 要一个不小于 1 的整数，不是 {value}")),
    }
}

/// The run, written as it happens: with `--json` each loop event as one
/// line on stdout (a failed write sets the signal: nobody reads on), else
/// what the tools do, on stderr, control characters escaped. Then the run
/// itself, or the final answer's text.
fn run(
    model: &impl Model,
    tools: &ToolRegistry,
    cli: &Cli,
    max_steps: Option<usize>,
    signal: &Arc<AtomicBool>,
    out: &mut Out,
) -> AgentRunResult {
    let options = AgentLoopOptions {
        signal: Some(Arc::clone(signal)),
        max_steps,
        execute_tool_call: None,
    };
    let run = run_agent_loop(model, tools, &cli::context(cli), options, |event| {
        if !cli.json {
            eprint!("{}", cli::readable(&show(&event)));
            return;
        }
        let line = serde_json::to_string(&event).expect("events serialize");
        if !out.write(&format!("{line}\n")) {
            signal.store(true, Ordering::SeqCst);
        }
    });
    let output = match cli.json {
        true => format!(
            "{}\n",
            serde_json::to_string(&run).expect("a run serializes")
        ),
        false => final_text(&run),
    };
    out.write(&output);
    run
}

/// The text of the run's last assistant message, as a terminal takes it,
/// ending in a newline (nothing when it is empty).
fn final_text(run: &AgentRunResult) -> String {
    let mut messages = run.messages.iter().rev();
    let last = messages.find(|message| matches!(message, AgentMessage::Assistant(_)));
    let answer = last.map(text_of).unwrap_or_default();
    match answer.is_empty() || answer.ends_with('\n') {
        true => cli::readable(&answer),
        false => cli::readable(&format!("{answer}\n")),
    }
}

/// One loop event as it is said on stderr: what an answer that asks for
/// tools says, each call, each result.
fn show(event: &LoopEvent) -> String {
    match event {
        LoopEvent::AssistantMessage { message } => match &message.error_message {
            Some(error) => format!("[模型调用失败] {error}\n"),
            None if message
                .content
                .iter()
                .any(|block| matches!(block, AssistantContent::ToolCall(_))) =>
            {
                let said = text_of(&AgentMessage::Assistant(message.clone()));
                if said.is_empty() {
                    String::new()
                } else {
                    format!("{said}\n")
                }
            }
            None => String::new(),
        },
        LoopEvent::ToolStart { call } => {
            format!("[工具调用 {}] {} {}\n", call.id, call.name, call.arguments)
        }
        LoopEvent::ToolProgress { call_id, content } => {
            format!("[进度 {call_id}] {}\n", joined(content))
        }
        LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => {
            let marker = if result.is_error { "（错误）" } else { "" };
            let body = joined(&result.content);
            let shown: String = body.chars().take(SHOWN_CHARS).collect();
            let cut = match shown.len() < body.len() {
                true => format!(
                    "\n…（共 {} 个字符，只显示前 {SHOWN_CHARS} 个）",
                    body.chars().count()
                ),
                false => String::new(),
            };
            format!("[工具结果 {}]{marker}\n{shown}{cut}\n", result.tool_call_id)
        }
        _ => String::new(),
    }
}

fn joined(content: &[TextContent]) -> String {
    let texts: Vec<&str> = content.iter().map(|block| block.text.as_str()).collect();
    texts.join("\n")
}

fn reason(reason: RunReason) -> &'static str {
    match reason {
        RunReason::Stop => "stop",
        RunReason::Length => "length",
        RunReason::Error => "error",
        RunReason::Aborted => "aborted",
        RunReason::MaxSteps => "maxSteps",
    }
}

/// The demo server's side of the conversation, read from what the request
/// carries after the user's message: read the file that names the project;
/// then answer with the name the tool's result shows (a failed read, not in
/// the course's folder, shows none: the answer says so).
fn demo(request: &Value) -> Vec<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let asked = messages.iter().rposition(|m| m["role"] == "user");
    let results: Vec<&str> = messages[asked.map_or(0, |at| at + 1)..]
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or(""))
        .collect();
    let Some(read) = results.first() else {
        let mut answer = cli::text_answer(&format!("我先读取 {DEMO_FILE}。"));
        answer.pop(); // its `stop`: this answer asks for a tool instead
        let call = json!({ "index": 0, "id": "call_1", "type": "function",
            "function": { "name": "read", "arguments": json!({ "path": DEMO_FILE }).to_string() } });
        answer.push(json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [call] } }] }));
        answer.push(
            json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }),
        );
        return answer;
    };
    let name = read.lines().find_map(|line| {
        let value = line.trim().strip_prefix("name")?.trim().strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_string())
    });
    cli::text_answer(&match name {
        Some(name) => format!("这个项目叫 {name}（{DEMO_FILE} 里 [package] 的 name）。"),
        None => format!("{DEMO_FILE} 里没有找到项目名，工具的结果是：{results:?}"),
    })
}

/// `path` inside `root`, or why not. Refused before touching the disk: an
/// absolute path, or one whose `..` climbs above `root`. Then the real path
/// (symlinks resolved) must still be under `root`.
fn inside(root: &Path, path: &str) -> Result<PathBuf, ToolError> {
    let mut depth = 0usize;
    for component in Path::new(path).components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            _ => return Err(format!("路径离开了当前目录：{path}").into()),
        }
    }
    let real = fs::canonicalize(root.join(path)).map_err(|error| format!("{path}：{error}"))?;
    if real.starts_with(root) {
        Ok(real)
    } else {
        Err(format!("路径经由链接离开了当前目录：{path}").into())
    }
}

#[derive(Deserialize)]
struct ReadInput {
    path: String,
}

/// Reads a UTF-8 file under the current folder.
struct Read {
    root: PathBuf,
}

impl Tool for Read {
    type Input = ReadInput;

    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        "Read a UTF-8 text file under the current folder. `path` is relative to that folder."
    }

    fn schema(&self) -> ObjectSchema<ReadInput> {
        object_schema(vec![("path", string_value())])
    }

    fn execute(&self, input: ReadInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let file = inside(&self.root, &input.path)?;
        // Look before opening: opening a FIFO already blocks.
        let metadata = fs::metadata(&file).map_err(|error| format!("{}：{error}", input.path))?;
        if !metadata.is_file() {
            return Err(format!("不是普通文件：{}", input.path).into());
        }
        if metadata.len() > MAX_READ_BYTES {
            return Err(format!(
                "文件太大：{} 有 {} 字节，read 最多读 {MAX_READ_BYTES} 字节",
                input.path,
                metadata.len()
            )
            .into());
        }
        let content =
            fs::read_to_string(&file).map_err(|error| format!("{}：{error}", input.path))?;
        Ok(ToolOutput {
            content: vec![text(content)],
            details: Some(json!({ "path": input.path })),
            is_error: false,
        })
    }
}

#[derive(Deserialize)]
struct ListInput {
    path: Option<String>,
}

/// Lists a folder under the current folder: names in order, folders with `/`.
struct List {
    root: PathBuf,
}

impl Tool for List {
    type Input = ListInput;

    fn name(&self) -> &str {
        "list"
    }

    fn description(&self) -> &str {
        "List the entries of a folder under the current folder (default: the current folder itself). Folders end with `/`."
    }

    fn schema(&self) -> ObjectSchema<ListInput> {
        object_schema(vec![("path", optional_string())])
    }

    fn execute(&self, input: ListInput, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = input.path.unwrap_or_else(|| ".".to_string());
        let folder = inside(&self.root, &path)?;
        if !folder.is_dir() {
            return Err(format!("不是文件夹：{path}").into());
        }
        let mut names = Vec::new();
        for entry in fs::read_dir(&folder).map_err(|error| format!("{path}：{error}"))? {
            let entry = entry?;
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_dir() {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        Ok(ToolOutput {
            content: vec![text(names.join("\n"))],
            details: Some(json!({ "path": path, "entries": names.len() })),
            is_error: false,
        })
    }
}
