//! The agent the chapters built so far, runnable: chapter 09's `Agent`
//! with chapter 08's coding tools in the current folder, chapter 10's
//! session file, chapter 11's context budget and chapter 12's resources —
//! a small coding agent that remembers a conversation, sends what fits and
//! reads the project's instructions.
//!
//! ```sh
//! cargo run -p course --example agent -- [--base-url URL] [--model NAME] [--system TEXT] [--idle-timeout SECS] [--max-steps N] [--context-tokens N] [--session FILE [--compact]] [--no-resources] [--unrestricted] [--json] [--] PROMPT
//! ```
//!
//! One `Agent` in the process; PROMPT is one `prompt` on it. The final
//! answer's text goes to stdout; what the tools do is said on stderr as it
//! happens (a listener of the agent's events). With `--json`, stdout gets
//! each loop event as one JSON line as it happens (chapter 07's wire),
//! then the run `{"reason","steps","messages"}`. A failed write to stdout
//! aborts the run.
//!
//! Four tools (`create_coding_tools`): `read`, `write`, `edit` and `bash`,
//! with the current folder as their workspace. A path that leaves it
//! (absolute, through `..` or a symlink) is an error result, and so is a
//! command that names one; that is a guardrail against slips, not a sandbox:
//! bash runs real commands as you. `--unrestricted` lifts both checks, and
//! says so on stderr. The flags, the environment, the key rule and the demo
//! server are `chat`'s (the shared `cli` module). With no base URL the demo
//! server plays a round that shows each tool, without touching your files:
//! it reads `course/Cargo.toml`, writes a note under `target/` (which git
//! ignores) and edits it, shows it with bash, and answers with the
//! project's name.
//!
//! The first Ctrl-C aborts the run through `Agent::abort` (the model and
//! the tools see its signal); a second one before the run ends exits at
//! once (130). Exit 0 when the run ended with stop, 1 otherwise, 2 for bad
//! arguments (`--max-steps 0` too), a session file that is not one and a
//! resource that cannot be read.
//!
//! `--session FILE` keeps the conversation in a session file (created if
//! missing; see `session_file`): the agent continues the path to the
//! newest entry (`AgentOptions::initial_messages`, chosen to the budget as
//! below), and once
//! the run ends, whatever the reason, its new messages are appended, each
//! the child of the one before, before the answer is written. A failed
//! append is said and the answer is not written (exit 1). A process killed
//! in the middle of a run loses that run, nothing before it; one killed
//! while it saves may leave a torn last line, which the next run cuts off,
//! and a call without its result, which the next run pairs with an error
//! result, both said on stderr. `--system` counts in a new session only: a
//! resumed one keeps the system prompt it has (said on stderr when
//! `--system` asks for another).
//!
//! A resumed session is not sent whole: the agent starts from chapter 11's
//! `build_context` over the path, with the prompt counted as its newest
//! interaction (`session_file::start`): the system messages fold into one,
//! the latest compaction's summary comes next, and whole interactions are
//! kept, newest first, while they fit. `--context-tokens N` is the budget,
//! counted with a stated estimate ([`estimate_tokens`]: a message costs the
//! UTF-8 bytes of its JSON in the request, divided by 4, rounded up; the
//! tool definitions are counted the same way and come off first). The
//! history is chosen once, as the run starts: the calls and results the
//! run adds are sent whole and push nothing out. A request over the budget
//! is said on stderr (`Budgeted`): `single_group_overflow` when the run's
//! own interaction alone does not fit. Without a session, the run is the
//! one interaction and is sent whole. `--compact` (with `--session`) first
//! has the model sum up everything before the newest interaction as a
//! compaction entry (`session_file::compact`); a summary the session's
//! strict parser refuses, or no summary at all, is said, the file is left
//! as it was, and the prompt does not run (exit 1).
//!
//! The current folder is the one resource root (chapter 12's
//! `discover_resources`): its `AGENTS.md` and the name and description of
//! each `skills/*/SKILL.md` go in the `pi-resources` section of the system
//! message (`format_resource_context`), through a system patch on the
//! prompt (`PromptOptions::system`). A new conversation gets the section
//! with its first prompt (after `--system`'s message, if any); a resumed
//! session is patched only when its current section differs, and the patch
//! is saved with the run's other new messages. What was loaded is said on
//! stderr. A resource that cannot be read stops before any model call
//! (exit 2), naming the file. `--no-resources` reads none (and takes a
//! resumed session's section out). Skill bodies, templates and extensions
//! are chapter 12's API, not this command line's: the model sees the
//! catalog, and this program compiles in no extension to trust.

mod cli;
mod session_file;

use std::env;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;

use cli::{Cli, Out, Parsed};
use course::agent::{Agent, AgentEvent, AgentOptions, PromptOptions, SystemPatch};
use course::agent_loop::{AgentRunResult, LoopEvent, RunReason};
use course::assistant_stream::AssistantMessageEventStream;
use course::coding_tools::{CodingToolsOptions, Containment, create_coding_tools};
use course::provider_adapter::{OpenAiCompatibleModel, to_provider_messages, to_provider_tools};
use course::resources::{
    RESOURCE_SECTION, ResourceCatalog, discover_resources, format_resource_context,
};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, Model, Sections, StreamOptions, TextContent,
    current_system_message, text_of,
};
use serde::Serialize;
use serde_json::{Value, json};
use session_file::COMPACT_INSTRUCTION;

/// The file the demo reads: it names the project.
const DEMO_FILE: &str = "course/Cargo.toml";

/// The note the demo writes and edits: under `target/`, which git ignores.
const DEMO_NOTE: &str = "target/agent-demo/note.md";

/// A tool result longer than this is cut on stderr (the model and `--json`
/// get all of it).
const SHOWN_CHARS: usize = 1_500;

/// The agent of this process.
type Coding = Agent<Budgeted>;

/// What the command line asks for beyond `cli`'s flags.
struct Options {
    max_steps: Option<usize>,
    /// `--context-tokens`; `None` is no limit.
    budget: Option<u64>,
    session: Option<PathBuf>,
    compact: bool,
    no_resources: bool,
    unrestricted: bool,
}

fn main() -> ExitCode {
    let usage = cli::usage(
        "agent",
        " [--max-steps N] [--context-tokens N] [--session FILE [--compact]] [--no-resources] [--unrestricted]",
    );
    let switch = |arg: &OsString| {
        ["--unrestricted", "--compact", "--no-resources"].contains(&arg.to_str().unwrap_or(""))
    };
    // The switches are taken out before `cli` reads the rest; after `--`
    // every word is the prompt's, those too.
    let all: Vec<OsString> = env::args_os().skip(1).collect();
    let end = all.iter().position(|arg| arg == "--").unwrap_or(all.len());
    let (switches, before): (Vec<OsString>, Vec<OsString>) =
        all[..end].iter().cloned().partition(switch);
    let args = before.into_iter().chain(all[end..].iter().cloned());
    let own = ["--max-steps", "--context-tokens", "--session"];
    let parsed = cli::parse(args, &own, |name| env::var(name).ok());
    let (cli, options) = match parsed.and_then(|parsed| options(parsed, &switches)) {
        Ok(Some(run)) => run,
        Ok(None) => {
            Out::new().write(&format!("{usage}\n{HELP}\n"));
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
    // The session first: a file that is not one stops before any model call.
    let opened = options
        .session
        .as_ref()
        .map(|file| session_file::open(file));
    let mut opened = match opened.transpose() {
        Ok(opened) => opened,
        Err((code, problem)) => {
            cli::say(&problem);
            return ExitCode::from(code);
        }
    };
    let resumed: Vec<AgentMessage> = opened.as_ref().map_or(Vec::new(), |opened| {
        opened
            .path
            .iter()
            .filter_map(session_file::message_of)
            .collect()
    });
    say_if_system_differs(&cli, &resumed);
    // The resources next: one that cannot be read stops here too.
    let resources = resources(&cwd, options.no_resources, &resumed);
    let resources = resources.and_then(|catalog| desired_system(&catalog));
    let desired = match resources {
        Ok(desired) => desired,
        Err(problem) => {
            cli::say(&cli::readable(&problem));
            return ExitCode::from(2);
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
    let pressed = Arc::new(AtomicBool::new(false));
    cli::ctrl_c(&pressed);
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
    if let (true, Some(opened)) = (options.compact, &mut opened) {
        let compacted =
            session_file::compact(opened, &model, options.budget, estimate_tokens, &pressed);
        if let Err(problem) = compacted {
            cli::say(&problem);
            return ExitCode::from(1);
        }
    }
    // The budget for messages: the tool definitions come off first.
    let definitions = tools.definitions();
    let tool_tokens = to_provider_tools(Some(&definitions)).map_or(0, |tools| tokens_of(&tools));
    let budget = (options.budget).map_or(u64::MAX, |budget| budget.saturating_sub(tool_tokens));
    let start = opened
        .as_ref()
        .map(|opened| session_file::start(opened, &cli.prompt, budget, estimate_tokens));
    let (initial, history_tokens) = match start.transpose() {
        Ok(Some(start)) => (start.messages, start.history_tokens),
        Ok(None) => (Vec::new(), 0),
        Err(error) => {
            cli::say(&format!("会话无法按第 11 章的规则重建：{error}"));
            return ExitCode::from(2);
        }
    };
    // A new conversation takes `--system`; a resumed one has its own.
    let system_prompt = match resumed.is_empty() {
        true => cli.system.clone(),
        false => None,
    };
    let initial_count = initial.len();
    let model = Budgeted {
        model,
        budget,
        history_tokens,
    };
    let agent = Arc::new(Agent::new(AgentOptions {
        system_prompt,
        initial_messages: initial,
        max_steps: options.max_steps,
        ..AgentOptions::new(model, tools)
    }));
    abort_on_ctrl_c(&agent, &pressed);
    let out = Arc::new(Mutex::new(Out::new()));
    show_events(&agent, &out, cli.json);
    let system = system_patch(&agent.state().messages, &desired);
    let run = match agent.prompt(&cli.prompt, PromptOptions { system }) {
        Ok(run) => run,
        Err(error) => {
            cli::say(&format!("这次 prompt 失败了：{error}"));
            return ExitCode::from(1);
        }
    };
    // Saved before anything of the answer is written: what a reader sees
    // is in the file.
    if let (Some(opened), Some(file)) = (&mut opened, &options.session) {
        if let Err(error) = opened.save(&run.messages[initial_count..]) {
            cli::say(&format!(
                "这次运行没能存进会话文件 {}：{error}。回答没有写出。",
                file.display()
            ));
            return ExitCode::from(1);
        }
    }
    if !write_run(&out, &run, cli.json) {
        return ExitCode::from(1);
    }
    if run.reason != RunReason::Stop {
        cli::say(&format!(
            "—— 运行结束：{}，{} 次模型调用",
            reason(run.reason),
            run.steps
        ));
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The rest of `--help`.
const HELP: &str = "--json：每个事件一行 JSON，最后一行是这次运行。\n--max-steps N：一次运行最多调用模型 N 次。\n--session FILE：对话存进会话文件（没有就新建），下次接着最新的一条继续。一次运行结束以后、回答写出之前，它的消息才存进去。--system 只对新会话有效。\n--context-tokens N：接着会话时只带预算放得下的历史：最新的压缩摘要在前，交互从新到旧整段保留（工具调用和它的结果总在一起），这次的 prompt 也计入。估算：一条消息 = 它在请求里的 JSON 的 UTF-8 字节数 ÷ 4，向上取整；工具定义也这样算，先从 N 里扣掉。历史只在运行开始时取一次，运行中新增的调用和结果整段发送；超出预算的请求在 stderr 说明（这次运行的交互单独就放不下时是 single_group_overflow）。\n--compact（要和 --session 一起用）：先请模型把最新一次交互之前的对话写成 7 个字段的 JSON 摘要，经会话的严格解析后作为 compaction 追加到会话文件，再开始。\n资源：当前目录的 AGENTS.md 和 skills/*/SKILL.md 的名字与描述放进 system 消息的 pi-resources 段落（计入 --context-tokens 的预算）：新对话随第一个 prompt 放进去，接着的会话只在段落变了时补一条。--no-resources：不读取资源（接着的会话里原有的资源段落移除）。\n--unrestricted：路径可以离开当前目录，bash 的命令不再检查。";

/// The flags beyond `cli`'s, read and checked: `None` for `--help`. No
/// model call at all is no run, and a budget of nothing sends nothing, so
/// each `N` is at least 1.
fn options(parsed: Parsed, switches: &[OsString]) -> Result<Option<(Cli, Options)>, String> {
    let Parsed::Run(cli) = parsed else {
        return Ok(None);
    };
    let value =
        |flag: &str| (cli.own.iter()).find_map(|(name, value)| (name == flag).then_some(value));
    let switch = |name: &str| switches.iter().any(|switch| switch == name);
    let session = value("--session").map(PathBuf::from);
    if session.is_none() && switch("--compact") {
        return Err("--compact 要和 --session FILE 一起用：它压缩的是会话文件。".to_string());
    }
    let options = Options {
        max_steps: at_least_one(value("--max-steps"), "--max-steps")?.map(|n| n as usize),
        budget: at_least_one(value("--context-tokens"), "--context-tokens")?,
        session,
        compact: switch("--compact"),
        no_resources: switch("--no-resources"),
        unrestricted: switch("--unrestricted"),
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

/// A resumed conversation keeps the system prompt it has (none, if it
/// started without one): said when `--system` asks for another.
fn say_if_system_differs(cli: &Cli, resumed: &[AgentMessage]) {
    let current = current_system_message(resumed).map(|system| system.content);
    if let (Some(system), false) = (&cli.system, resumed.is_empty()) {
        if current.as_ref() != Some(system) {
            cli::say("会话已经开始：system prompt 以会话文件里的为准，这次的 --system 不用。");
        }
    }
}

/// The workspace's resources (chapter 12): the current folder as the one
/// root, said on stderr; none with `--no-resources`.
fn resources(root: &Path, none: bool, resumed: &[AgentMessage]) -> Result<ResourceCatalog, String> {
    if none {
        let current = current_system_message(resumed).and_then(|system| system.sections);
        let had = current.is_some_and(|sections| {
            (sections.iter()).any(|(name, value)| name == RESOURCE_SECTION && value.is_some())
        });
        cli::say(match had {
            true => "--no-resources：不读取资源，会话里原有的资源段落这次移除。",
            false => "--no-resources：不读取当前目录的 AGENTS.md 和 skills。",
        });
        return Ok(ResourceCatalog::default());
    }
    let catalog = discover_resources(&[root]).map_err(|error| {
        format!(
            "资源无法读取（还没有调用模型）：{error}。修好它，或用 --no-resources 不带资源运行。"
        )
    })?;
    let mut said = Vec::new();
    if let Some(instructions) = &catalog.instructions {
        let (source, bytes) = (instructions.source.display(), instructions.body.len());
        said.push(format!("AGENTS.md（{source}，{bytes} 字节）"));
    }
    if !catalog.skills.is_empty() {
        let names: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
        said.push(format!("skills 目录 {}", names.join("、")));
    }
    if !said.is_empty() {
        cli::say(&cli::readable(&format!(
            "已载入资源：{}。它们放在 system 消息的 {RESOURCE_SECTION} 段落里发给模型。",
            said.join("；")
        )));
    }
    Ok(catalog)
}

/// The system state the resources want, as the patch that starts a
/// transcript: their section when there are any. No base prompt: that is
/// `--system`'s, which the agent already holds in a new conversation, and a
/// resumed one keeps its own.
fn desired_system(resources: &ResourceCatalog) -> Result<SystemPatch, String> {
    let mut sections = None;
    if !resources.keys().is_empty() {
        let text = format_resource_context(resources, &[])
            .map_err(|error| format!("资源段落无法生成（还没有调用模型）：{error}"))?;
        sections = Some(Sections::from([(RESOURCE_SECTION, Some(text.as_str()))]));
    }
    Ok(SystemPatch {
        content: String::new(),
        sections,
    })
}

/// The patch that turns the transcript's replayed system state into the
/// wanted one, or `None` when they agree. With no system message yet, the
/// whole state (if not empty); after that, only the sections that differ,
/// `None` for those no longer wanted. The base prompt is never patched.
fn system_patch(messages: &[AgentMessage], desired: &SystemPatch) -> Option<SystemPatch> {
    let Some(current) = current_system_message(messages) else {
        let empty = desired.content.is_empty() && desired.sections.is_none();
        return (!empty).then(|| desired.clone());
    };
    let (current, wanted) = (
        current.sections.unwrap_or_default(),
        desired.sections.clone(),
    );
    let wanted = wanted.unwrap_or_default();
    let mut changes = Sections::default();
    for (name, value) in wanted.iter() {
        if section(&current, name) != value {
            changes.insert(name, value);
        }
    }
    for (name, _) in current.iter() {
        if section(&wanted, name).is_none() {
            changes.insert(name, None);
        }
    }
    let sections = Some(changes).filter(|changes| !changes.is_empty());
    sections.map(|sections| SystemPatch {
        content: String::new(),
        sections: Some(sections),
    })
}

fn section<'a>(sections: &'a Sections, name: &str) -> Option<&'a str> {
    let found = sections.iter().find(|(known, _)| *known == name);
    found.and_then(|(_, value)| value)
}

/// Writes the run as it ended: the last assistant message's text (control
/// characters escaped), or with `--json` the run as one JSON line. `false`
/// when stdout failed (said on stderr by `Out`).
fn write_run(out: &Mutex<Out>, run: &AgentRunResult, json: bool) -> bool {
    let output = match json {
        true => {
            let line = serde_json::to_string(run).expect("a run serializes");
            format!("{line}\n")
        }
        false => {
            let mut messages = run.messages.iter().rev();
            let last = messages.find(|message| matches!(message, AgentMessage::Assistant(_)));
            let answer = last.map(text_of).unwrap_or_default();
            match answer.is_empty() || answer.ends_with('\n') {
                true => cli::readable(&answer),
                false => cli::readable(&format!("{answer}\n")),
            }
        }
    };
    out.lock().unwrap().write(&output)
}

/// Shows the run as it happens: with `--json`, each loop event as one JSON
/// line on stdout (a failed write aborts the run: nobody reads on);
/// otherwise what the tools do, on stderr, control characters escaped.
fn show_events(agent: &Arc<Coding>, out: &Arc<Mutex<Out>>, json: bool) {
    let (handle, out) = (Arc::downgrade(agent), Arc::clone(out));
    agent.subscribe(move |event| {
        let AgentEvent::Loop { event, .. } = event else {
            return;
        };
        if !json {
            eprint!("{}", cli::readable(&show(event)));
            return;
        }
        let line = serde_json::to_string(event).expect("events serialize");
        if !out.lock().unwrap().write(&format!("{line}\n")) {
            abort(&handle);
        }
    });
}

/// Each Ctrl-C aborts the run: the signal handler writes a byte to a
/// socket (`cli::ctrl_c` has already made it set `pressed`), and a thread
/// woken by it calls `abort`, which a handler itself must not (it locks).
/// A press just before the run starts aborts the run as it starts.
fn abort_on_ctrl_c(agent: &Arc<Coding>, pressed: &Arc<AtomicBool>) {
    use signal_hook::consts::SIGINT;
    use signal_hook::low_level::pipe;
    let woken = UnixStream::pair().and_then(|(mut woken, wake)| {
        pipe::register(SIGINT, wake)?;
        let handle = Arc::downgrade(agent);
        thread::Builder::new().spawn(move || {
            while woken.read(&mut [0]).is_ok_and(|read| read > 0) {
                abort(&handle);
            }
        })
    });
    if let Err(error) = woken {
        cli::say(&format!("无法接管 Ctrl-C：{error}"));
    }
    let (handle, pressed) = (Arc::downgrade(agent), Arc::clone(pressed));
    agent.subscribe(move |event| {
        if matches!(event, AgentEvent::RunStart { .. }) && pressed.load(Ordering::SeqCst) {
            abort(&handle);
        }
    });
}

/// Aborts the run, if there still is an agent. Listeners and the Ctrl-C
/// thread hold a `Weak` handle: the agent must not own itself.
fn abort(handle: &Weak<Coding>) {
    if let Some(agent) = handle.upgrade() {
        agent.abort();
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

/// Chapter 05's model, counting each request against the budget: says on
/// stderr when what it was handed is over it. The history was chosen to
/// the budget as the run started; what the run adds since is sent whole.
/// `single_group_overflow` (chapter 11's word) when the request is over
/// even without that history: the run's own interaction alone does not
/// fit, and splitting it would part calls from their results; it is sent
/// whole, and the provider's own limit has the last word.
struct Budgeted {
    model: OpenAiCompatibleModel,
    /// Tokens for messages, the tool definitions already taken off.
    budget: u64,
    /// What the interactions kept from the session cost.
    history_tokens: u64,
}

impl Model for Budgeted {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        let used: u64 = context.messages.iter().map(estimate_tokens).sum();
        let budget = self.budget;
        if used.saturating_sub(self.history_tokens) > budget {
            cli::say(&format!(
                "上下文超出预算（single_group_overflow）：这次请求的消息估算 {used} tokens，预算扣掉工具定义后只有 {budget}。这次运行的交互单独就放不下，仍然整段发送：拆开它，工具调用和结果就分家了。"
            ));
        } else if used > budget {
            cli::say(&format!(
                "上下文超出预算：这次请求的消息估算 {used} tokens，预算扣掉工具定义后只有 {budget}。历史只在运行开始时按预算取一次（这次带了 {} tokens），运行中新增的调用和结果不会让它让位，照样整段发送；下一次运行重新按预算取。",
                self.history_tokens
            ));
        }
        self.model.stream(context, options)
    }
}

/// The stated estimate: a message costs the UTF-8 bytes of its JSON as the
/// request carries it (chapter 05's wire message), divided by 4, rounded
/// up. Rough on purpose (low for Chinese, 3 bytes a character); a real
/// tokenizer could take its place, as the runtime takes any estimator.
fn estimate_tokens(message: &AgentMessage) -> u64 {
    let context = AgentContext {
        messages: vec![message.clone()],
        tools: None,
    };
    to_provider_messages(&context).iter().map(tokens_of).sum()
}

/// The UTF-8 bytes of `value`'s JSON, divided by 4, rounded up.
fn tokens_of(value: &impl Serialize) -> u64 {
    let json = serde_json::to_string(value).expect("wire values serialize");
    json.len().div_ceil(4) as u64
}

/// The demo server's side of the conversation, read from what the request
/// carries since its last user message (a resumed session carries more
/// before it): read the file that names the project; then write a note
/// and edit it, both in one turn (the loop runs them in call order, since
/// they name one file); then show it with bash; then answer. A failed read
/// (not in the course's folder) ends the demo with an answer at once.
fn demo(request: &Value) -> Vec<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    if cli::last_user_text(request) == COMPACT_INSTRUCTION {
        return cli::text_answer(&demo_summary(messages.len() - 1).to_string());
    }
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

/// The demo's summary for `--compact`: the seven fields, from what it
/// knows of its own round.
fn demo_summary(messages: usize) -> Value {
    json!({
        "goal": "回答这个项目叫什么",
        "constraints": ["只在 target/ 下写文件"],
        "completed": [format!("读过摘要前的 {messages} 条消息")],
        "decisions": [],
        "changedFiles": [DEMO_NOTE],
        "unresolved": [],
        "next": ["回答新的问题"],
    })
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
