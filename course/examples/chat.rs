//! One model call, runnable: what chapters 03–05 built.
//!
//! ```sh
//! cargo run -p course --example chat -- [--base-url URL] [--model NAME] [--system TEXT] [--json] PROMPT
//! ```
//!
//! `OPENAI_BASE_URL`, `OPENAI_MODEL` and `OPENAI_API_KEY` are read when the
//! flags are absent. With no base URL at all, chapter 04's scripted model
//! answers (said on stderr). Without `--json` the text is printed as it
//! streams and each tool call as it completes; with `--json`, each
//! `ModelEvent` is one JSON line and the last line is the final message.
//! Exit 0 when the message stopped with stop, length or toolUse (and for
//! `--help`), 1 for error or aborted, 2 for bad arguments. Ctrl-C sets the
//! call's signal: the stream ends `aborted` and what arrived so far is
//! printed.
//! The API key is only ever put into the request's header.

use std::env;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use course::assistant_stream::AssistantMessageEventStream;
use course::provider_adapter::{OpenAiCompatibleModel, OpenAiCompatibleTransport};
use course::scripted_model::ScriptedModel;
use course::types::{
    AgentContext, AgentMessage, Model, ModelEvent, StopReason, StreamOptions, SystemMessage,
    assistant_message, text, user_message,
};

const USAGE: &str = "用法：cargo run -p course --example chat -- [--base-url URL] [--model NAME] [--system TEXT] [--json] PROMPT";

/// The command line, with the environment filled in.
struct Options {
    base_url: Option<String>,
    model: Option<String>,
    system: Option<String>,
    json: bool,
    prompt: String,
}

/// The options, or `None` for `--help`.
fn parse_args() -> Result<Option<Options>, String> {
    let mut options = Options {
        base_url: None,
        model: None,
        system: None,
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
            "--system" => options.system = Some(value("--system")?),
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

    // Ctrl-C no longer ends the process: it sets the call's signal.
    let signal = Arc::new(AtomicBool::new(false));
    if let Err(error) =
        signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&signal))
    {
        say(&format!("无法接管 Ctrl-C：{error}"));
    }
    let call = StreamOptions {
        signal: Some(signal),
    };
    let context = context(&options);

    let stream = match &options.base_url {
        None => {
            say(
                "没有 base URL（--base-url 或 OPENAI_BASE_URL）：由内置的 ScriptedModel（第 04 章）回答。",
            );
            scripted(&options.prompt).stream(&context, call)
        }
        Some(base_url) => match provider(base_url, options.model.as_deref()) {
            Ok(model) => model.stream(&context, call),
            Err(problem) => {
                say(&problem);
                return ExitCode::from(2);
            }
        },
    };
    show(stream, options.json)
}

/// The prompt as the only user message, after the `--system` text if any.
fn context(options: &Options) -> AgentContext {
    let mut messages = Vec::new();
    if let Some(system) = &options.system {
        messages.push(AgentMessage::System(SystemMessage {
            content: system.clone(),
            sections: None,
            timestamp: 0,
        }));
    }
    messages.push(AgentMessage::User(user_message(options.prompt.as_str())));
    AgentContext {
        messages,
        ..AgentContext::default()
    }
}

/// The offline stand-in: one scripted turn that answers the prompt.
fn scripted(prompt: &str) -> ScriptedModel {
    let answer = text(format!("（脚本模型）你说：{prompt}"));
    ScriptedModel::new(vec![
        assistant_message(vec![answer.into()], StopReason::Stop).into(),
    ])
}

/// The real model behind `base_url`; the key comes from the environment.
fn provider(base_url: &str, model: Option<&str>) -> Result<OpenAiCompatibleModel, String> {
    let model = model.ok_or("需要模型名：--model NAME 或 OPENAI_MODEL")?;
    if base_url.starts_with("https:") && !cfg!(feature = "tls") {
        return Err("https 需要 course 的 tls feature：cargo run -p course --features tls --example chat -- …".to_string());
    }
    let api_key = env::var("OPENAI_API_KEY").unwrap_or_default();
    let transport = OpenAiCompatibleTransport::new(base_url, api_key)?;
    Ok(OpenAiCompatibleModel::new(
        "openai-compatible",
        model,
        transport,
    ))
}

/// Prints the call as it happens and exits by how it ended.
fn show(stream: AssistantMessageEventStream, json: bool) -> ExitCode {
    let mut out = io::stdout().lock();
    for event in stream.iter() {
        let written = if json {
            writeln!(
                out,
                "{}",
                serde_json::to_string(&event).expect("events serialize")
            )
        } else {
            match &event {
                ModelEvent::TextDelta { delta, .. } => write!(out, "{delta}"),
                ModelEvent::ToolCallEnd { tool_call, .. } => writeln!(
                    out,
                    "\n[工具调用 {}] {} {}",
                    tool_call.id, tool_call.name, tool_call.arguments
                ),
                _ => Ok(()),
            }
        };
        if written.and_then(|()| out.flush()).is_err() {
            return ExitCode::from(1); // stdout closed: nobody reads on
        }
    }
    let message = match stream.blocking_result() {
        Ok(message) => message,
        Err(error) => {
            say(&format!("流没有交出结果：{error}"));
            return ExitCode::from(1);
        }
    };
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    if json {
        let line = serde_json::to_string(&AgentMessage::Assistant(message.clone()));
        let _ = writeln!(out, "{}", line.expect("messages serialize"));
    } else {
        let _ = writeln!(out);
        if failed {
            // What arrived before the failure is already on stdout.
            let reason =
                serde_json::to_value(message.stop_reason).expect("a stop reason serializes");
            let why = message.error_message.as_deref().unwrap_or("");
            say(&format!(
                "调用以 {} 结束：{why}",
                reason.as_str().unwrap_or("?")
            ));
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
