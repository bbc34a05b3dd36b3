//! The agent loop with chapter 08's coding tools, runnable: chapter 07's
//! `run_agent_loop` over `read`, `write`, `edit` and `bash` in the current
//! folder — a small coding agent, one prompt per process.
//!
//! ```sh
//! cargo run -p course --example agent -- [--base-url URL] [--model NAME] [--system TEXT] [--idle-timeout SECS] [--max-steps N] [--unrestricted] [--json] [--] PROMPT
//! ```
//!
//! One run of the loop per process, over the prompt (after a system message
//! when `--system` gives one):
//! * without `--json`: the final answer's text on stdout; what the tools do
//!   is said on stderr as it happens.
//! * with `--json`: each loop event as one JSON line as it happens (chapter
//!   07's wire), then the run `{"reason","steps","messages"}`.
//!
//! Four tools (`create_coding_tools`): `read`, `write`, `edit` and `bash`,
//! with the current folder as their workspace. A path that leaves it
//! (absolute, through `..` or a symlink) is an error result, and so is a
//! command that names one; that is a guardrail against slips, not a sandbox:
//! bash runs real commands as you. `--unrestricted` lifts both checks, and
//! says so on stderr. `--max-steps N` (at least 1) caps the model calls;
//! the loop's default is 32. The flags, the environment, the key rule and
//! the demo server are `chat`'s (the shared `cli` module). With no base URL
//! the demo server plays a round that shows each tool, without touching
//! your files: it reads `course/Cargo.toml`, writes a note under `target/`
//! (which git ignores) and edits it, shows it with bash, and answers with
//! the project's name (at once, writing nothing, if the read failed: not in
//! the course's folder).
//!
//! The first Ctrl-C sets the run's signal, which the loop hands to the
//! model and the tools (bash ends its command); a failed write to stdout
//! sets it too (nobody reads on). A second Ctrl-C ends the process at once
//! (exit 130). A run that did not end with stop is said on stderr. Exit 0
//! when the run ended with stop and its output was written (and for
//! `--help`), 1 otherwise, 2 for bad arguments (`--max-steps 0` too).

mod cli;

use std::env;
use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cli::{Cli, Out, Parsed};
use course::agent_loop::{
    AgentLoopOptions, AgentRunResult, DEFAULT_MAX_STEPS, LoopEvent, RunReason, run_agent_loop,
};
use course::coding_tools::{CodingToolsOptions, Containment, create_coding_tools};
use course::tool::ToolRegistry;
use course::types::{AgentMessage, AssistantContent, Model, TextContent, text_of};
use serde_json::{Value, json};

/// The file the demo reads: it names the project.
const DEMO_FILE: &str = "course/Cargo.toml";

/// The note the demo writes and edits: under `target/`, which git ignores.
const DEMO_NOTE: &str = "target/agent-demo/note.md";

/// A tool result longer than this is cut on stderr (the model and `--json`
/// get all of it).
const SHOWN_CHARS: usize = 1_500;

/// What the command line asks for beyond `cli`'s flags.
struct Options {
    max_steps: Option<usize>,
    unrestricted: bool,
}

fn main() -> ExitCode {
    let usage = cli::usage("agent", " [--max-steps N] [--unrestricted]");
    // The switch is taken out before `cli` reads the rest; after `--` every
    // word is the prompt's, that one too.
    let args: Vec<OsString> = env::args_os().skip(1).collect();
    let end = args
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(args.len());
    let (switches, before): (Vec<OsString>, Vec<OsString>) =
        (args[..end].iter().cloned()).partition(|arg| arg == "--unrestricted");
    let args = before.into_iter().chain(args[end..].iter().cloned());
    let parsed = cli::parse(args, &["--max-steps"], |name| env::var(name).ok());
    let (cli, options) = match parsed.and_then(|parsed| options(parsed, &switches)) {
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
    let cwd = match env::current_dir() {
        Ok(cwd) => cwd,
        Err(error) => {
            cli::say(&format!("无法确定当前目录：{error}"));
            return ExitCode::from(1);
        }
    };
    let containment = match options.unrestricted {
        false => Containment::Workspace,
        true => {
            cli::say("--unrestricted：路径可以离开当前目录，bash 的命令不再检查。");
            Containment::Unrestricted
        }
    };
    let tools = create_coding_tools(CodingToolsOptions::new(cwd, containment));
    // Set by the first Ctrl-C; a second one then ends the process (exit 130).
    let signal = Arc::new(AtomicBool::new(false));
    cli::ctrl_c(&signal);
    let model = match cli::provider(&cli, "agent", env::var_os("OPENAI_API_KEY")) {
        Ok(Some(model)) => model,
        Ok(None) => match cli::demo_model(&cli, demo) {
            Ok(model) => {
                cli::say(&format!(
                    "演示：读取 {DEMO_FILE}，在 {DEMO_NOTE} 写一条笔记再改一处（target/ 被 git 忽略，你的文件不会被改动），然后用 bash 显示它。"
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
    let run = run(&model, &tools, &cli, options.max_steps, &signal, &mut out);
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
        "工具：read、write、edit、bash，工作区是当前目录。离开当前目录的路径（绝对路径、..、符号链接）和写出这种路径的命令得到错误结果；这是防失误的护栏，不是沙箱：bash 以你的身份运行真实的命令。\n--unrestricted：去掉这两项检查。\n--max-steps N：最多调用模型 N 次（默认 {DEFAULT_MAX_STEPS}）。\n--json：每个事件一行 JSON，最后一行是这次运行；不加时只把最终回答写到 stdout，工具做了什么写在 stderr。"
    )
}

/// The flags beyond `cli`'s, read and checked: `None` for `--help`. No
/// model call at all is no run, so `--max-steps` is at least 1.
fn options(parsed: Parsed, switches: &[OsString]) -> Result<Option<(Cli, Options)>, String> {
    let Parsed::Run(cli) = parsed else {
        return Ok(None);
    };
    let value =
        |flag: &str| (cli.own.iter()).find_map(|(name, value)| (name == flag).then_some(value));
    let options = Options {
        max_steps: at_least_one(value("--max-steps"), "--max-steps")?.map(|n| n as usize),
        unrestricted: !switches.is_empty(),
    };
    Ok(Some((cli, options)))
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
/// then write a note and edit it, both in one turn (the loop runs them in
/// call order, since they name one file); then show it with bash; then
/// answer. A failed read (not in the course's folder) ends the demo with an
/// answer at once.
fn demo(request: &Value) -> Vec<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let asked = messages.iter().rposition(|m| m["role"] == "user");
    let results: Vec<&str> = messages[asked.map_or(0, |at| at + 1)..]
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or(""))
        .collect();
    let name = results.first().and_then(|read| {
        read.lines().find_map(|line| {
            let line = line.split_once('│').map_or(line, |(_, text)| text);
            let value = line.trim().strip_prefix("name")?.trim().strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
    });
    let calls = match (results.len(), &name) {
        (0, _) => vec![("read", json!({ "path": DEMO_FILE }))],
        (1, Some(_)) => vec![
            (
                "write",
                json!({ "path": DEMO_NOTE, "content": "# 演示笔记\n\n项目：（待填）\n" }),
            ),
            (
                "edit",
                json!({ "path": DEMO_NOTE, "oldText": "（待填）", "newText": name }),
            ),
        ],
        (3, Some(_)) => vec![("bash", json!({ "command": format!("cat {DEMO_NOTE}") }))],
        _ => return cli::text_answer(&answer(name.as_deref(), &results)),
    };
    let said = match results.len() {
        0 => format!("我先读取 {DEMO_FILE}。"),
        1 => format!("我把项目名记进 {DEMO_NOTE}：先写，再改一处。"),
        _ => "再用 bash 看看笔记。".to_string(),
    };
    let mut answer = cli::text_answer(&said);
    answer.pop(); // its `stop`: this answer asks for tools instead
    for (index, (tool, arguments)) in calls.into_iter().enumerate() {
        let id = format!("call_{}", results.len() + index + 1);
        let call = json!({ "index": index, "id": id, "type": "function",
            "function": { "name": tool, "arguments": arguments.to_string() } });
        answer.push(json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [call] } }] }));
    }
    answer.push(json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }));
    answer
}

/// The demo's last words: the project's name, and the line bash showed.
fn answer(name: Option<&str>, results: &[&str]) -> String {
    let Some(name) = name else {
        return format!("{DEMO_FILE} 里没有找到项目名，工具的结果是：{results:?}");
    };
    let shown = results
        .get(3)
        .and_then(|shown| shown.lines().rfind(|line| !line.is_empty()));
    let shown = shown.unwrap_or("（什么也没有）");
    format!(
        "这个项目叫 {name}（{DEMO_FILE} 里 [package] 的 name）。笔记在 {DEMO_NOTE}，bash 显示它写着“{shown}”。"
    )
}
