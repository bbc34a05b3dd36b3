//! One model call, runnable: what chapters 03–05 built.
//!
//! ```sh
//! cargo run -p course --example chat -- [--base-url URL] [--model NAME] [--system TEXT] [--idle-timeout SECS] [--json] PROMPT
//! ```
//!
//! `OPENAI_BASE_URL`, `OPENAI_MODEL` and `OPENAI_API_KEY` are read when the
//! flags are absent. With no base URL at all, a demo server of its own on
//! 127.0.0.1 answers in the OpenAI SSE format (said on stderr), so the
//! call still runs through your transport and adapter. Without `--json`
//! the text is printed as it streams and each tool call as it completes,
//! control characters escaped; with `--json`, each `ModelEvent` is one JSON
//! line and the last line is the final message. `--idle-timeout` (default
//! 300 s) ends a call whose server sends nothing for that long. Exit 0 when
//! the message stopped with stop, length or toolUse (and for `--help`), 1
//! for error or aborted or a failed write to stdout, 2 for bad arguments.
//! The first Ctrl-C sets the call's signal: the stream ends `aborted` and
//! what arrived is printed; a second one exits at once (130).

mod cli;

use std::env;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use cli::{Out, Parsed};
use course::assistant_stream::AssistantMessageEventStream;
use course::types::{AgentMessage, Model, ModelEvent, StopReason, StreamOptions};

fn main() -> ExitCode {
    let usage = cli::usage("chat", "");
    let cli = match cli::parse(env::args_os().skip(1), &[], |name| env::var(name).ok()) {
        Ok(Parsed::Run(cli)) => cli,
        Ok(Parsed::Help) => {
            Out::new().write(&format!("{usage}\n"));
            return ExitCode::SUCCESS;
        }
        Err(problem) => {
            cli::say(&format!("{problem}\n{usage}"));
            return ExitCode::from(2);
        }
    };
    let signal = Arc::new(AtomicBool::new(false));
    cli::ctrl_c(&signal);
    let options = StreamOptions {
        signal: Some(signal),
    };
    let context = cli::context(&cli);
    let stream = match cli::provider(&cli, "chat", env::var_os("OPENAI_API_KEY")) {
        Ok(Some(model)) => model.stream(&context, options),
        Ok(None) => match cli::demo_model(&cli, demo) {
            Ok(model) => model.stream(&context, options),
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
    show(stream, cli.json)
}

/// The demo server's answer: it repeats the prompt.
fn demo(request: &serde_json::Value) -> Vec<serde_json::Value> {
    let prompt = cli::last_user_text(request);
    cli::text_answer(&format!("（本机演示服务器）你说：{prompt}"))
}

/// Prints the call as it happens and exits by how it ended.
fn show(stream: AssistantMessageEventStream, json: bool) -> ExitCode {
    let mut out = Out::new();
    for event in stream.iter() {
        let line = if json {
            format!(
                "{}\n",
                serde_json::to_string(&event).expect("events serialize")
            )
        } else {
            match &event {
                ModelEvent::TextDelta { delta, .. } => cli::readable(delta),
                ModelEvent::ToolCallEnd { tool_call, .. } => cli::readable(&format!(
                    "\n[工具调用 {}] {} {}\n",
                    tool_call.id, tool_call.name, tool_call.arguments
                )),
                _ => String::new(),
            }
        };
        if !out.write(&line) {
            return ExitCode::from(1);
        }
    }
    let message = match stream.blocking_result() {
        Ok(message) => message,
        Err(error) => {
            cli::say(&format!("流没有交出结果：{error}"));
            return ExitCode::from(1);
        }
    };
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    if json {
        let line = serde_json::to_string(&AgentMessage::Assistant(message.clone()));
        out.write(&format!("{}\n", line.expect("messages serialize")));
    } else {
        out.write("\n");
        if failed {
            // What arrived before the failure is already on stdout.
            let reason = serde_json::to_value(message.stop_reason).expect("a reason serializes");
            let why = message.error_message.as_deref().unwrap_or("");
            let reason = reason.as_str().unwrap_or("?");
            cli::say(&cli::readable(&format!("调用以 {reason} 结束：{why}")));
        }
    }
    if failed || out.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
