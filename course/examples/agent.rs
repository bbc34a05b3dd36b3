//! The agent the chapters built, runnable: chapter 13's runtime, which
//! wires chapter 09's `Agent`, chapter 08's coding tools in the current
//! folder, chapter 10's session, chapter 11's context budget and chapter
//! 12's resources — a small coding agent you keep open.
//!
//! ```sh
//! cargo run -p course --example agent -- [--mode print|json|interactive] [--base-url URL] [--model NAME] [--system TEXT] [--idle-timeout SECS] [--max-steps N] [--context-tokens N] [--session FILE [--leaf ID] [--compact]] [--no-resources] [--unrestricted] [PROMPT]
//! ```
//!
//! Modes (chapter 13's `run_mode`: a mode only chooses how a run is
//! written; the run is saved before anything is written):
//! * `print` (the default with a PROMPT): the final answer's text on
//!   stdout; what the tools do is said on stderr as it happens.
//! * `json` (`--json` too): each loop event as one JSON line as it happens
//!   (chapter 07's wire), then the run `{"reason","steps","messages"}`.
//! * `interactive` (the default without a PROMPT): one prompt per line of
//!   stdin, one runtime for all of them, so the conversation goes on; each
//!   answer as in `print`. Ctrl-C aborts the running prompt and returns to
//!   the next line (at the prompt it says that a second press ends the
//!   program); Ctrl-D (the end of stdin) ends. A PROMPT given too is
//!   the first line.
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
//! The first Ctrl-C aborts the running prompt through the runtime's control
//! (the model and the tools see its signal); its run is saved as it ended.
//! A second one before the run ends, or two at the prompt, end the process
//! at once (exit 130). Exit 0 when the (last) run ended with stop, or
//! interactive mode ended with Ctrl-D; 1 otherwise; 2 for bad arguments
//! (`--max-steps 0` too) and a session file that is not one.
//!
//! `--session FILE` keeps the conversation in a session file (created if
//! missing; see `session_file`): the runtime continues the path to the
//! newest entry, or to `--leaf ID` (a branch: what follows becomes that
//! entry's child), and appends each prompt's messages once its run ends,
//! before the answer is written. A process killed in the middle of a run
//! loses that run, nothing before it; a torn last line is cut off, and a
//! call left without a result is paired with an error result, both said on
//! stderr. One failed append ends the runtime: every later prompt fails
//! with that error (exit 1). `--system` counts in a new session only: a
//! resumed one keeps the system prompt it has. Without `--session` the
//! conversation lives in memory (chapter 10's `InMemorySessionStore`).
//!
//! Every request is rebuilt by the runtime from the saved path plus the
//! messages not saved yet (chapter 11's `build_context`), so the latest
//! compaction's summary leads, system messages fold into one, and whole
//! interactions are kept, newest first. `--context-tokens N` is the budget,
//! counted with a stated estimate ([`estimate_tokens`]: a message costs the
//! UTF-8 bytes of its JSON in the request, divided by 4, rounded up; the
//! tool definitions are counted the same way and come off first). An
//! interaction that alone is over the budget is sent whole anyway and said
//! on stderr (`single_group_overflow`). `--compact` (with `--session`)
//! first has the model sum up everything before the newest interaction as
//! a compaction entry (`session_file::compact`).
//!
//! The current folder is the one resource root (chapter 12's
//! `discover_resources`): the runtime puts its `AGENTS.md` and the name and
//! description of each `skills/*/SKILL.md` in the `pi-resources` section of
//! the system message it saves with a prompt, and patches a resumed
//! session only when that section changed. What was loaded is said on
//! stderr. A resource that cannot be read stops before any model call
//! (exit 2), naming the file. `--no-resources` reads none (and the runtime
//! takes a resumed session's section out). Skill bodies, templates and
//! extensions are chapter 12's API, not this command line's: the runtime
//! shows the catalog, and this program compiles in no extension to trust.

mod cli;
mod session_file;

use std::env;
use std::ffi::OsString;
use std::io::{self, BufRead, Read};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;

use cli::{Cli, Out, Parsed};
use course::agent::{AgentEvent, AgentStatus};
use course::agent_loop::{LoopEvent, RunReason};
use course::assistant_stream::AssistantMessageEventStream;
use course::coding_tools::{CodingToolsOptions, Containment, create_coding_tools};
use course::composition::{
    ContextBudget, Runtime, RuntimeConfig, RuntimeDeps, RuntimeError, RuntimeMode, SharedSession,
    create_runtime, run_mode,
};
use course::provider_adapter::{OpenAiCompatibleModel, to_provider_messages, to_provider_tools};
use course::resources::{RESOURCE_SECTION, ResourceCatalog, discover_resources};
use course::session::InMemorySessionStore;
use course::types::{
    AgentContext, AgentMessage, AssistantContent, Model, StreamOptions, TextContent,
    current_system_message, text_of,
};
use serde::Serialize;
use serde_json::{Value, json};
use session_file::COMPACT_INSTRUCTION;

/// The file the demo reads: it names the project.
const DEMO_FILE: &str = "course/Cargo.toml";

/// The note the demo writes and edits: under `target/`, which git ignores.
const DEMO_NOTE: &str = "target/agent-demo/note.md";

/// A tool result longer than this is cut on stderr (the model and `json`
/// get all of it).
const SHOWN_CHARS: usize = 1_500;

/// The runtime of this process.
type Coding = Runtime<Budgeted>;

/// What the command line asks for beyond `cli`'s flags.
struct Options {
    mode: RuntimeMode,
    max_steps: Option<usize>,
    /// `--context-tokens`; `None` is no limit.
    budget: Option<u64>,
    session: Option<PathBuf>,
    leaf: Option<String>,
    compact: bool,
    no_resources: bool,
    unrestricted: bool,
}

fn main() -> ExitCode {
    let usage = cli::usage(
        "agent",
        " [--mode print|json|interactive] [--max-steps N] [--context-tokens N] [--session FILE [--leaf ID] [--compact]] [--no-resources] [--unrestricted]",
    );
    // `cli`'s line ends with a PROMPT `chat` needs; here it may be left out.
    let usage = format!("{}[PROMPT]", usage.trim_end_matches("PROMPT"));
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
    let own = [
        "--mode",
        "--max-steps",
        "--context-tokens",
        "--session",
        "--leaf",
    ];
    let parsed = cli::parse_any(args, &own, |name| env::var(name).ok());
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
        .map(|file| session_file::open(file, options.leaf.as_deref()));
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
    let resources = match resources(&cwd, options.no_resources, &resumed) {
        Ok(resources) => resources,
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
    let (session, active_leaf_id): (SharedSession, _) = match opened {
        Some(opened) => {
            let leaf = opened.leaf();
            (Arc::new(Mutex::new(opened.store)), leaf)
        }
        None => (Arc::new(Mutex::new(InMemorySessionStore::default())), None),
    };
    let config = RuntimeConfig {
        active_leaf_id,
        system_prompt: cli.system.clone(),
        max_steps: options.max_steps,
        context: ContextBudget {
            total: budget,
            reserved_output: 0,
            safety_margin: 0,
            estimate_tokens: Arc::new(estimate_tokens),
        },
    };
    let deps = RuntimeDeps {
        model: Budgeted { model, budget },
        tools,
        session,
        resources: Arc::new(resources),
        extension_host: None,
        create_id: Box::new(session_file::new_id),
        now: Box::new(session_file::now),
    };
    let runtime = match create_runtime(config, deps) {
        Ok(runtime) => Arc::new(runtime),
        Err(error) => {
            cli::say(&format!("无法创建 runtime：{error}"));
            return ExitCode::from(1);
        }
    };
    abort_on_ctrl_c(&runtime, &pressed, options.mode == RuntimeMode::Interactive);
    let out = Arc::new(Mutex::new(Out::new()));
    show_events(&runtime, &out, options.mode);
    let code = match options.mode {
        RuntimeMode::Interactive => interactive(&runtime, &out, &pressed, &cli.prompt),
        mode => match prompt_once(&runtime, &out, mode, &cli.prompt) {
            Ok(RunReason::Stop) => ExitCode::SUCCESS,
            _ => ExitCode::from(1),
        },
    };
    // Every accepted prompt is answered, so this waits for nothing more.
    let _ = runtime.dispose().wait();
    code
}

/// The rest of `--help`.
const HELP: &str = "--max-steps N：一次运行最多调用模型 N 次（默认 32）。\n--unrestricted：路径可以离开当前目录，bash 的命令不再检查（这只是防失误的护栏，不是沙箱）。\n--mode：print（有 PROMPT 时的默认）只把最终回答写到 stdout；json（也可写 --json）每个事件一行 JSON，最后一行是这次运行；interactive（没有 PROMPT 时的默认）从 stdin 每行读一个 prompt，对话一直接着，Ctrl-C 中止当前运行，Ctrl-D 结束。\n--session FILE：对话存进会话文件，下次接着最新的一条继续；--leaf ID 从这一条接着写（一条新分支）。每个 prompt 的消息在它的运行结束、回答写出之前存好。\n--context-tokens N：每次请求只带预算放得下的部分：最新的压缩摘要在前，交互从新到旧整段保留（工具调用和它的结果总在一起）。估算：一条消息 = 它在请求里的 JSON 的 UTF-8 字节数 ÷ 4，向上取整；工具定义也这样算，先从 N 里扣掉。最新的一次交互单独就超出预算时，照样整段发送，并在 stderr 说明（single_group_overflow）。\n--compact（要和 --session 一起用）：先请模型把最新一次交互之前的对话写成 7 个字段的 JSON 摘要，经会话的严格解析后作为 compaction 追加到会话文件，再开始。\n资源：当前目录的 AGENTS.md 和 skills/*/SKILL.md 的名字与描述由 runtime 放进 system 消息的 pi-resources 段落（计入 --context-tokens 的预算）。--no-resources：不读取资源。";

/// The flags beyond `cli`'s, read and checked: `None` for `--help`. No
/// model call at all is no run, and a budget of nothing sends nothing, so
/// each `N` is at least 1.
fn options(parsed: Parsed, switches: &[OsString]) -> Result<Option<(Cli, Options)>, String> {
    let Parsed::Run(cli) = parsed else {
        return Ok(None);
    };
    let value =
        |flag: &str| (cli.own.iter()).find_map(|(name, value)| (name == flag).then_some(value));
    let mode = match (value("--mode"), cli.json) {
        (Some(mode), false) => mode
            .parse()
            .map_err(|error: RuntimeError| error.to_string())?,
        (Some(mode), true) if mode != "json" => {
            return Err(format!(
                "--json 就是 --mode json，不能和 --mode {mode} 一起给"
            ));
        }
        (_, true) => RuntimeMode::Json,
        (None, false) if cli.prompt.is_empty() => RuntimeMode::Interactive,
        (None, false) => RuntimeMode::Print,
    };
    if mode != RuntimeMode::Interactive && cli.prompt.is_empty() {
        return Err("缺少 PROMPT（或者用 --mode interactive 逐行输入）".to_string());
    }
    let switch = |name: &str| switches.iter().any(|switch| switch == name);
    let session = value("--session").map(PathBuf::from);
    let leaf = value("--leaf").cloned();
    if session.is_none() && (leaf.is_some() || switch("--compact")) {
        return Err(
            "--leaf 和 --compact 要和 --session FILE 一起用：它们说的是会话文件。".to_string(),
        );
    }
    let options = Options {
        mode,
        max_steps: at_least_one(value("--max-steps"), "--max-steps")?.map(|n| n as usize),
        budget: at_least_one(value("--context-tokens"), "--context-tokens")?,
        session,
        leaf,
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

/// A resumed conversation keeps the system prompt it has (the runtime
/// patches only the resources): said when `--system` asks for another.
fn say_if_system_differs(cli: &Cli, resumed: &[AgentMessage]) {
    let current = current_system_message(resumed).map(|system| system.content);
    if let (Some(system), Some(current)) = (&cli.system, current) {
        if *system != current {
            cli::say("会话已经开始：system prompt 以会话文件里的为准，这次的 --system 不用。");
        }
    }
}

/// The workspace's resources for the runtime (chapter 12): the current
/// folder as the one root, said on stderr; none with `--no-resources`.
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
            "已载入资源：{}。runtime 把它们放在 system 消息的 {RESOURCE_SECTION} 段落里发给模型。",
            said.join("；")
        )));
    }
    Ok(catalog)
}

/// One prompt through chapter 13's `run_mode`: the run is saved, then
/// written as `mode` writes it. A run that did not end with stop is said on
/// stderr; so is an error of the runtime.
fn prompt_once(
    runtime: &Coding,
    out: &Mutex<Out>,
    mode: RuntimeMode,
    prompt: &str,
) -> Result<RunReason, RuntimeError> {
    let write = |output: &str| {
        let shown = match mode {
            RuntimeMode::Json => output.to_string(),
            _ if output.is_empty() || output.ends_with('\n') => cli::readable(output),
            _ => cli::readable(&format!("{output}\n")),
        };
        match out.lock().unwrap().write(&shown) {
            true => Ok(()),
            false => Err(io::Error::other("标准输出写入失败")),
        }
    };
    match run_mode(runtime, mode, prompt, write) {
        Ok(run) => {
            if run.reason != RunReason::Stop {
                cli::say(&format!(
                    "—— 运行结束：{}，{} 次模型调用",
                    reason(run.reason),
                    run.steps
                ));
            }
            Ok(run.reason)
        }
        Err(error) => {
            if !matches!(error, RuntimeError::Output(_)) {
                cli::say(&format!("这次 prompt 失败了：{error}"));
            }
            Err(error)
        }
    }
}

/// `interactive`: a prompt per line of stdin, on one runtime, until Ctrl-D
/// (or a runtime error: a failed append fails every later prompt too).
/// Ctrl-C is for the run going on: the flag it sets is cleared before each
/// prompt and after it.
fn interactive(runtime: &Coding, out: &Mutex<Out>, pressed: &AtomicBool, first: &str) -> ExitCode {
    cli::say("交互模式：每行一个 prompt，对话一直接着；Ctrl-C 中止当前运行，Ctrl-D 结束。");
    let mut next = Some(first.to_string()).filter(|first| !first.is_empty());
    let stdin = io::stdin();
    loop {
        let prompt = match next.take() {
            Some(prompt) => prompt,
            None => {
                eprint!("> ");
                let mut line = Vec::new();
                match stdin.lock().read_until(b'\n', &mut line) {
                    Ok(0) => {
                        eprintln!();
                        return ExitCode::SUCCESS;
                    }
                    Ok(_) => match String::from_utf8(line) {
                        Ok(line) => line.trim_end_matches(['\n', '\r']).to_string(),
                        Err(_) => {
                            cli::say("这一行不是 UTF-8 文本，没有发送；请换用 UTF-8 输入。");
                            continue;
                        }
                    },
                    Err(error) => {
                        cli::say(&format!("无法读取标准输入：{error}"));
                        return ExitCode::from(1);
                    }
                }
            }
        };
        if prompt.trim().is_empty() {
            continue;
        }
        pressed.store(false, Ordering::SeqCst);
        if prompt_once(runtime, out, RuntimeMode::Interactive, &prompt).is_err() {
            return ExitCode::from(1);
        }
        pressed.store(false, Ordering::SeqCst);
    }
}

/// Shows the runs as they happen: in `json`, each loop event as one JSON
/// line on stdout (a failed write aborts the run: nobody reads on);
/// otherwise what the tools do, on stderr, control characters escaped.
fn show_events(runtime: &Arc<Coding>, out: &Arc<Mutex<Out>>, mode: RuntimeMode) {
    let (handle, out) = (Arc::downgrade(runtime), Arc::clone(out));
    runtime.control().subscribe(move |event| {
        let AgentEvent::Loop { event, .. } = event else {
            return;
        };
        if mode != RuntimeMode::Json {
            eprint!("{}", cli::readable(&show(event)));
            return;
        }
        let line = serde_json::to_string(event).expect("events serialize");
        if !out.lock().unwrap().write(&format!("{line}\n")) {
            abort(&handle);
        }
    });
}

/// Each Ctrl-C aborts the running prompt: the signal handler writes a byte
/// to a socket (`cli::ctrl_c` has already made it set `pressed`), and a
/// thread woken by it calls `abort`, which a handler itself must not (it
/// locks). A press just before a run starts aborts the run as it starts.
/// In interactive mode a press while no prompt runs says what the next one
/// does, so the first press is not met with silence.
fn abort_on_ctrl_c(runtime: &Arc<Coding>, pressed: &Arc<AtomicBool>, interactive: bool) {
    use signal_hook::consts::SIGINT;
    use signal_hook::low_level::pipe;
    let woken = UnixStream::pair().and_then(|(mut woken, wake)| {
        pipe::register(SIGINT, wake)?;
        let handle = Arc::downgrade(runtime);
        thread::Builder::new().spawn(move || {
            while woken.read(&mut [0]).is_ok_and(|read| read > 0) {
                let idle = handle
                    .upgrade()
                    .map(|runtime| runtime.control().state().status);
                if interactive && idle == Some(AgentStatus::Idle) {
                    cli::say("\n没有正在运行的 prompt：再按一次 Ctrl-C 退出，Ctrl-D 结束。");
                }
                abort(&handle);
            }
        })
    });
    if let Err(error) = woken {
        cli::say(&format!("无法接管 Ctrl-C：{error}"));
    }
    let (handle, pressed) = (Arc::downgrade(runtime), Arc::clone(pressed));
    runtime.control().subscribe(move |event| {
        if matches!(event, AgentEvent::RunStart { .. }) && pressed.load(Ordering::SeqCst) {
            abort(&handle);
        }
    });
}

/// Aborts the running prompt, if there still is a runtime. Listeners and
/// the Ctrl-C thread hold a `Weak` handle: the runtime must not own itself.
fn abort(handle: &Weak<Coding>) {
    if let Some(runtime) = handle.upgrade() {
        runtime.control().abort();
    }
}

/// One loop event as `print` and `interactive` say it on stderr: what an
/// answer that asks for tools says, each call, each result.
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

/// Chapter 05's model behind the runtime's projection, which has already
/// rebuilt the request to the budget: says on stderr when what it was
/// handed is still over it (chapter 11's `single_group_overflow`: the
/// newest interaction alone does not fit; it is the one the model must
/// answer, so it is sent whole, and the provider's own limit has the last
/// word).
struct Budgeted {
    model: OpenAiCompatibleModel,
    /// Tokens for messages, the tool definitions already taken off.
    budget: u64,
}

impl Model for Budgeted {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        let used: u64 = context.messages.iter().map(estimate_tokens).sum();
        if used > self.budget {
            cli::say(&format!(
                "上下文超出预算（single_group_overflow）：这次请求的消息估算 {used} tokens，预算扣掉工具定义后只有 {}。最新的一次交互单独就放不下，仍然整段发送：拆开它，工具调用和结果就分家了。",
                self.budget
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
