//! The agent loop, runnable: what chapters 03–07 built.
//!
//! ```sh
//! cargo run -p course --example agent -- [--base-url URL] [--model NAME] [--max-steps N] [--json] PROMPT
//! ```
//!
//! Two tools over the current folder: `read` (`{path}`: a UTF-8 file) and
//! `list` (`{path?}`: a folder's entries). A path that leaves the folder —
//! absolute, through `..`, or through a symlink — is refused as an error
//! result. `OPENAI_BASE_URL`, `OPENAI_MODEL` and `OPENAI_API_KEY` are read
//! when the flags are absent; with no base URL at all, chapter 04's scripted
//! model plays a two-step demo (read `Cargo.toml`, then answer), said on
//! stderr. Without `--json`: a readable transcript as it happens. With
//! `--json`: each loop event as one JSON line, then the run
//! `{"reason","steps","messages"}`. Exit 0 when the run ended with stop, 1
//! otherwise, 2 for bad arguments. Ctrl-C sets the run's signal. The API key
//! is only ever put into the request's header.

use std::env;
use std::fs;
use std::io::{self, Write};
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

/// The command line, with the environment filled in.
struct Options {
    base_url: Option<String>,
    model: Option<String>,
    max_steps: Option<usize>,
    json: bool,
    prompt: String,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        base_url: None,
        model: None,
        max_steps: None,
        json: false,
        prompt: String::new(),
    };
    let mut prompt = Vec::new();
    let mut args = env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} 后面缺少取值"));
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
            "-h" | "--help" => return Err(String::new()),
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
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(options) => options,
        Err(problem) => {
            if !problem.is_empty() {
                eprintln!("{problem}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let root = match env::current_dir().and_then(fs::canonicalize) {
        Ok(root) => root,
        Err(error) => {
            eprintln!("无法确定当前目录：{error}");
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
        eprintln!("无法接管 Ctrl-C：{error}");
    }
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message(options.prompt.as_str()))],
        ..AgentContext::default()
    };

    let run = match &options.base_url {
        None => {
            eprintln!(
                "没有 base URL（--base-url 或 OPENAI_BASE_URL）：由内置的 ScriptedModel（第 04 章）演示两步：先读取 {DEMO_FILE}，再回答。"
            );
            run(&scripted(), &tools, &context, &options, signal)
        }
        Some(base_url) => match provider(base_url, options.model.as_deref()) {
            Ok(model) => run(&model, &tools, &context, &options, signal),
            Err(problem) => {
                eprintln!("{problem}");
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

/// Runs the loop, printing as it goes; a closed stdout cancels the run.
fn run(
    model: &impl Model,
    tools: &ToolRegistry,
    context: &AgentContext,
    options: &Options,
    signal: Arc<AtomicBool>,
) -> AgentRunResult {
    let mut out = io::stdout().lock();
    let loop_options = AgentLoopOptions {
        signal: Some(Arc::clone(&signal)),
        max_steps: options.max_steps,
        execute_tool_call: None,
    };
    let run = run_agent_loop(model, tools, context, loop_options, |event| {
        let written = if options.json {
            let line = serde_json::to_string(&event).expect("loop events serialize");
            writeln!(out, "{line}")
        } else {
            show(&mut out, &event)
        };
        if written.and_then(|()| out.flush()).is_err() {
            signal.store(true, Ordering::SeqCst); // nobody reads on
        }
    });
    let last = if options.json {
        let line = serde_json::to_string(&run).expect("a run serializes");
        writeln!(out, "{line}")
    } else {
        writeln!(
            out,
            "\n—— 运行结束：{}，{} 次模型调用",
            reason(run.reason),
            run.steps
        )
    };
    let _ = last.and_then(|()| out.flush());
    run
}

/// One event of the readable transcript.
fn show(out: &mut impl Write, event: &LoopEvent) -> io::Result<()> {
    match event {
        LoopEvent::ModelEvent {
            event: ModelEvent::TextDelta { delta, .. },
        } => write!(out, "{delta}"),
        LoopEvent::AssistantMessage { message } => match &message.error_message {
            Some(error) => writeln!(out, "\n[模型调用失败] {error}"),
            None => writeln!(out),
        },
        LoopEvent::ToolStart { call } => {
            writeln!(
                out,
                "[工具调用 {}] {} {}",
                call.id, call.name, call.arguments
            )
        }
        LoopEvent::ToolProgress { call_id, content } => {
            writeln!(out, "[进度 {call_id}] {}", joined(content))
        }
        LoopEvent::ToolEnd { result } | LoopEvent::ToolSkipped { result } => {
            let marker = if result.is_error { "（错误）" } else { "" };
            let body = joined(&result.content);
            let shown: String = body.chars().take(SHOWN_CHARS).collect();
            let cut = if shown.len() < body.len() {
                format!(
                    "\n…（共 {} 个字符，只显示前 {SHOWN_CHARS} 个）",
                    body.chars().count()
                )
            } else {
                String::new()
            };
            writeln!(
                out,
                "[工具结果 {}]{marker}\n{shown}{cut}",
                result.tool_call_id
            )
        }
        _ => Ok(()),
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
fn provider(base_url: &str, model: Option<&str>) -> Result<OpenAiCompatibleModel, String> {
    let model = model.ok_or("需要模型名：--model NAME 或 OPENAI_MODEL")?;
    if base_url.starts_with("https:") && !cfg!(feature = "tls") {
        return Err("https 需要 course 的 tls feature：cargo run -p course --features tls --example agent -- …".to_string());
    }
    let api_key = env::var("OPENAI_API_KEY").unwrap_or_default();
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
