//! The agent loop, runnable: what chapters 03–07 built.
//!
//! ```sh
//! cargo run -p course --example agent -- [--base-url URL] [--model NAME] [--max-steps N] [--json] PROMPT
//! ```
//!
//! Two tools over the current folder: `read` (`{path}`: a UTF-8 regular
//! file of at most 1 MiB) and `list` (`{path?}`: a folder's entries). A path
//! that leaves the folder — absolute, through `..`, or through a symlink —
//! is refused as an error result, and so is anything else than a regular
//! file for `read` (a FIFO would block forever, a device never end) or a
//! folder for `list`. `OPENAI_BASE_URL`, `OPENAI_MODEL` and
//! `OPENAI_API_KEY` are read when the flags are absent; with no base URL at
//! all, chapter 04's scripted model plays a two-step demo (read
//! `Cargo.toml`, then answer), said on stderr. Without `--json`: a readable
//! transcript as it happens. With `--json`: each loop event as one JSON
//! line, then the run `{"reason","steps","messages"}`. Exit 0 when the run ended with stop (and
//! for `--help`), 1 otherwise, 2 for bad arguments. Ctrl-C sets the run's
//! signal. The API key is only ever put into the request's header, and
//! `[redacted]` replaces it in every line printed: a tool may read it from
//! a `.env` file, and the model may repeat it.

use std::env;
use std::fs;
use std::io::{self, Write};
use std::mem;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use course::agent_loop::{AgentLoopOptions, AgentRunResult, LoopEvent, RunReason, run_agent_loop};
use course::provider_adapter::{OpenAiCompatibleModel, OpenAiCompatibleTransport};
use course::scripted_model::ScriptedModel;
use course::tool::{
    ObjectSchema, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, object_schema,
    optional_string, string_value,
};
use course::types::{
    AgentContext, AgentMessage, Model, ModelEvent, StopReason, TextContent, ToolCall,
    assistant_message, text, user_message,
};
use serde::Deserialize;
use serde_json::json;

const USAGE: &str = "用法：cargo run -p course --example agent -- [--base-url URL] [--model NAME] [--max-steps N] [--json] PROMPT";

/// The file the scripted demo reads.
const DEMO_FILE: &str = "Cargo.toml";

/// A tool result longer than this is cut in the readable transcript (the
/// model and `--json` get all of it).
const SHOWN_CHARS: usize = 1_500;

/// The largest file `read` hands to the model.
const MAX_READ_BYTES: u64 = 1024 * 1024;

/// The command line, with the environment filled in.
struct Options {
    base_url: Option<String>,
    model: Option<String>,
    max_steps: Option<usize>,
    json: bool,
    prompt: String,
}

/// The options, or `None` for `--help`.
fn parse_args() -> Result<Option<Options>, String> {
    let mut options = Options {
        base_url: None,
        model: None,
        max_steps: None,
        json: false,
        prompt: String::new(),
    };
    let mut prompt = Vec::new();
    let mut args = env::args_os().skip(1).map(|arg| {
        arg.into_string()
            .map_err(|arg| format!("参数不是有效的 UTF-8：{}", arg.to_string_lossy()))
    });
    while let Some(arg) = args.next() {
        let arg = arg?;
        let mut value = |flag: &str| args.next().unwrap_or(Err(format!("{flag} 后面缺少取值")));
        match arg.as_str() {
            "--base-url" => options.base_url = Some(value("--base-url")?),
            "--model" => options.model = Some(value("--model")?),
            "--max-steps" => {
                let steps = value("--max-steps")?;
                let steps = steps
                    .parse()
                    .map_err(|_| format!("--max-steps 要一个非负整数，不是 {steps}"))?;
                options.max_steps = Some(steps);
            }
            "--json" => options.json = true,
            "-h" | "--help" => return Ok(None),
            flag if flag.starts_with("--") => return Err(format!("未知参数：{flag}")),
            word => prompt.push(word.to_string()),
        }
    }
    if prompt.is_empty() {
        return Err("缺少 PROMPT".to_string());
    }
    options.prompt = prompt.join(" ");
    let from_env = |name: &str| env::var(name).ok().filter(|value| !value.is_empty());
    options.base_url = options.base_url.or_else(|| from_env("OPENAI_BASE_URL"));
    options.model = options.model.or_else(|| from_env("OPENAI_MODEL"));
    Ok(Some(options))
}

/// One line on stderr. A closed stderr is no reason to panic: the line is
/// dropped.
fn say(line: &str) {
    let _ = writeln!(io::stderr(), "{line}");
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(Some(options)) => options,
        Ok(None) => {
            let _ = writeln!(io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(problem) => {
            say(&problem);
            say(USAGE);
            return ExitCode::from(2);
        }
    };
    let root = match env::current_dir().and_then(fs::canonicalize) {
        Ok(root) => root,
        Err(error) => {
            say(&format!("无法确定当前目录：{error}"));
            return ExitCode::from(1);
        }
    };
    let tools = ToolRegistry::with_tools(vec![
        Box::new(Read { root: root.clone() }),
        Box::new(List { root }),
    ])
    .expect("read and list have different names");

    // Ctrl-C no longer ends the process: it sets the run's signal.
    let signal = Arc::new(AtomicBool::new(false));
    if let Err(error) =
        signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&signal))
    {
        say(&format!("无法接管 Ctrl-C：{error}"));
    }
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message(options.prompt.as_str()))],
        ..AgentContext::default()
    };

    let api_key = env::var("OPENAI_API_KEY").unwrap_or_default();
    let key = Redactor::new(&api_key);
    let run = match &options.base_url {
        None => {
            say(&format!(
                "没有 base URL（--base-url 或 OPENAI_BASE_URL）：由内置的 ScriptedModel（第 04 章）演示两步：先读取 {DEMO_FILE}，再回答。"
            ));
            run(&scripted(), &tools, &context, &options, signal, key)
        }
        Some(base_url) => match provider(base_url, options.model.as_deref(), api_key.clone()) {
            Ok(model) => run(&model, &tools, &context, &options, signal, key),
            Err(problem) => {
                say(&key.hide(&problem));
                return ExitCode::from(2);
            }
        },
    };
    if run.reason == RunReason::Stop {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Hides the API key in what is printed. Streamed text comes in pieces and
/// the key may be cut between two of them, so a tail that could be the
/// start of the key waits for the next piece.
struct Redactor {
    key: String,
    held: String,
}

impl Redactor {
    fn new(key: &str) -> Self {
        Redactor {
            key: key.to_string(),
            held: String::new(),
        }
    }

    /// `text` with the key replaced by `[redacted]`.
    fn hide(&self, text: &str) -> String {
        if self.key.is_empty() {
            return text.to_string();
        }
        text.replace(&self.key, "[redacted]")
    }

    /// The part of the stream so far that is safe to print.
    fn piece(&mut self, piece: &str) -> String {
        let held = mem::take(&mut self.held) + piece;
        let mut text = self.hide(&held);
        let could_be_key = |n: &usize| {
            text.is_char_boundary(text.len() - n) && self.key.starts_with(&text[text.len() - n..])
        };
        let keep = (1..self.key.len().min(text.len() + 1))
            .rev()
            .find(could_be_key)
            .unwrap_or(0);
        self.held = text.split_off(text.len() - keep);
        text
    }

    /// Whatever the stream held back, then `text`, both with the key hidden.
    fn line(&mut self, text: &str) -> String {
        mem::take(&mut self.held) + &self.hide(text)
    }
}

/// Runs the loop, printing as it goes; a closed stdout cancels the run.
fn run(
    model: &impl Model,
    tools: &ToolRegistry,
    context: &AgentContext,
    options: &Options,
    signal: Arc<AtomicBool>,
    mut key: Redactor,
) -> AgentRunResult {
    let mut out = io::stdout().lock();
    let loop_options = AgentLoopOptions {
        signal: Some(Arc::clone(&signal)),
        max_steps: options.max_steps,
        execute_tool_call: None,
    };
    let run = run_agent_loop(model, tools, context, loop_options, |event| {
        let shown = match (&event, options.json) {
            (_, true) => {
                let line = serde_json::to_string(&event).expect("loop events serialize");
                key.line(&format!("{line}\n"))
            }
            (
                LoopEvent::ModelEvent {
                    event: ModelEvent::TextDelta { delta, .. },
                },
                false,
            ) => key.piece(delta),
            (_, false) => {
                let text = show(&event, &key);
                key.line(&text)
            }
        };
        if write!(out, "{shown}").and_then(|()| out.flush()).is_err() {
            signal.store(true, Ordering::SeqCst); // nobody reads on
        }
    });
    let last = if options.json {
        serde_json::to_string(&run).expect("a run serializes")
    } else {
        format!(
            "\n—— 运行结束：{}，{} 次模型调用",
            reason(run.reason),
            run.steps
        )
    };
    let _ = writeln!(out, "{}", key.line(&last)).and_then(|()| out.flush());
    run
}

/// One event of the readable transcript (text deltas are printed as they
/// come, in `run`). A long result is cut after the key is hidden, so the cut
/// cannot leave half a key.
fn show(event: &LoopEvent, key: &Redactor) -> String {
    match event {
        LoopEvent::AssistantMessage { message } => match &message.error_message {
            Some(error) => format!("\n[模型调用失败] {error}\n"),
            None => "\n".to_string(),
        },
        LoopEvent::ToolStart { call } => {
            format!("[工具调用 {}] {} {}\n", call.id, call.name, call.arguments)
        }
        LoopEvent::ToolProgress { call_id, content } => {
            format!("[进度 {call_id}] {}\n", joined(content))
        }
        LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => {
            let marker = if result.is_error { "（错误）" } else { "" };
            let body = key.hide(&joined(&result.content));
            let shown: String = body.chars().take(SHOWN_CHARS).collect();
            let cut = if shown.len() < body.len() {
                format!(
                    "\n…（共 {} 个字符，只显示前 {SHOWN_CHARS} 个）",
                    body.chars().count()
                )
            } else {
                String::new()
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

/// The offline demo: ask for `read`, then answer.
fn scripted() -> ScriptedModel {
    let read = ToolCall {
        id: "call-1".to_string(),
        name: "read".to_string(),
        arguments: json!({ "path": DEMO_FILE }),
        raw_arguments: None,
    };
    ScriptedModel::new(vec![
        assistant_message(
            vec![text(format!("我先读取 {DEMO_FILE}。")).into(), read.into()],
            StopReason::ToolUse,
        )
        .into(),
        assistant_message(
            vec![
                text(format!(
                    "（脚本模型）{DEMO_FILE} 的内容就在上面的工具结果里：这是一个 Cargo 清单。"
                ))
                .into(),
            ],
            StopReason::Stop,
        )
        .into(),
    ])
}

/// The real model behind `base_url`; the key comes from the environment.
fn provider(
    base_url: &str,
    model: Option<&str>,
    api_key: String,
) -> Result<OpenAiCompatibleModel, String> {
    let model = model.ok_or("需要模型名：--model NAME 或 OPENAI_MODEL")?;
    if base_url.starts_with("https:") && !cfg!(feature = "tls") {
        return Err("https 需要 course 的 tls feature：cargo run -p course --features tls --example agent -- …".to_string());
    }
    let transport = OpenAiCompatibleTransport::new(base_url, api_key)?;
    Ok(OpenAiCompatibleModel::new(
        "openai-compatible",
        model,
        transport,
    ))
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
