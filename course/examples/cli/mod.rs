//! What the `chat` (chapter 05) and `agent` (chapter 07) examples share:
//! the command line, the provider setup with its key rule, a loopback demo
//! server, Ctrl-C, and output a terminal can take. Built on chapter 05's
//! layer only, so chapter 05's lab gets it with `chat.rs`.
//!
//! The key rule: the API key goes into the `Authorization` header and
//! nowhere else; the transport redacts it in every error text it builds (a
//! key under 8 characters is a placeholder and is left alone); model content
//! is printed as it came.

#![allow(dead_code)] // each example uses part of this module

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread;
use std::time::Duration;

use course::provider_adapter::{
    DEFAULT_IDLE_TIMEOUT, OpenAiCompatibleModel, OpenAiCompatibleTransport,
};
use course::types::{AgentContext, AgentMessage, SystemMessage, user_message};
use serde_json::{Value, json};

/// The command line, with the environment filled in.
pub struct Cli {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub system: Option<String>,
    pub json: bool,
    pub idle_timeout: Duration,
    pub prompt: String,
    /// The valued flags only this example knows (`--max-steps`), as given.
    pub own: Vec<(String, String)>,
}

/// What the command line asks for.
pub enum Parsed {
    Run(Cli),
    Help,
}

/// The usage line of `example`, whose own flags are `own` (e.g. `" [--max-steps N]"`).
pub fn usage(example: &str, own: &str) -> String {
    format!(
        "用法：cargo run -p course --example {example} -- [--base-url URL] [--model NAME] [--system TEXT] [--idle-timeout SECS]{own} [--json] [--] PROMPT"
    )
}

/// Reads `args` (without the program's name). `own` names the valued flags
/// only this example knows; `env` looks up `OPENAI_BASE_URL` and
/// `OPENAI_MODEL` for flags that are absent.
pub fn parse(
    args: impl IntoIterator<Item = OsString>,
    own: &[&str],
    env: impl Fn(&str) -> Option<String>,
) -> Result<Parsed, String> {
    let parsed = parse_any(args, own, env)?;
    if let Parsed::Run(cli) = &parsed {
        if cli.prompt.is_empty() {
            return Err("缺少 PROMPT".to_string());
        }
    }
    Ok(parsed)
}

/// [`parse`], where the prompt may be missing (empty).
pub fn parse_any(
    args: impl IntoIterator<Item = OsString>,
    own: &[&str],
    env: impl Fn(&str) -> Option<String>,
) -> Result<Parsed, String> {
    let mut cli = Cli {
        base_url: None,
        model: None,
        system: None,
        json: false,
        idle_timeout: DEFAULT_IDLE_TIMEOUT,
        prompt: String::new(),
        own: Vec::new(),
    };
    let (mut prompt, mut seen) = (Vec::new(), Vec::new());
    let mut args = args.into_iter().map(|arg| {
        arg.into_string()
            .map_err(|arg| format!("参数不是有效的 UTF-8：{}", arg.to_string_lossy()))
    });
    while let Some(arg) = args.next() {
        let arg = arg?;
        if arg.starts_with("--") && !["--", "--json", "--help"].contains(&arg.as_str()) {
            if seen.contains(&arg) {
                return Err(format!("{arg} 只能给一次"));
            }
            seen.push(arg.clone());
        }
        let mut value = || args.next().unwrap_or(Err(format!("{arg} 后面缺少取值")));
        match arg.as_str() {
            "--base-url" => cli.base_url = Some(value()?),
            "--model" => cli.model = Some(value()?),
            "--system" => cli.system = Some(value()?),
            "--idle-timeout" => cli.idle_timeout = seconds(&value()?)?,
            "--json" => cli.json = true,
            "-h" | "--help" => return Ok(Parsed::Help),
            // Everything after `--` is the prompt, even words that look like flags.
            "--" => break,
            flag if own.contains(&flag) => cli.own.push((arg.clone(), value()?)),
            flag if flag.starts_with("--") => return Err(format!("未知参数：{flag}")),
            word => prompt.push(word.to_string()),
        }
    }
    for word in args {
        prompt.push(word?);
    }
    cli.prompt = prompt.join(" ");
    let from_env = |name: &str| env(name).filter(|value| !value.is_empty());
    cli.base_url = cli.base_url.or_else(|| from_env("OPENAI_BASE_URL"));
    cli.model = cli.model.or_else(|| from_env("OPENAI_MODEL"));
    Ok(Parsed::Run(cli))
}

/// `--idle-timeout SECS`: a positive number of seconds.
fn seconds(value: &str) -> Result<Duration, String> {
    let seconds: f64 = value.parse().unwrap_or(f64::NAN);
    if seconds > 0.0 && seconds <= 1e9 {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!("--idle-timeout 要一个大于 0 的秒数，不是 {value}"))
    }
}

/// The prompt as the only user message, after a system message when
/// `--system` gave one.
pub fn context(cli: &Cli) -> AgentContext {
    let system = cli.system.as_ref().map(|system| {
        AgentMessage::System(SystemMessage {
            content: system.clone(),
            sections: None,
            timestamp: 0,
        })
    });
    let user = AgentMessage::User(user_message(cli.prompt.as_str()));
    AgentContext {
        messages: system.into_iter().chain([user]).collect(),
        ..AgentContext::default()
    }
}

/// The real model behind `--base-url`, or `None` when no base URL is given.
/// `api_key` is `OPENAI_API_KEY` (none is an empty key); one with a control
/// character (a newline copied along with it) is refused here, by name,
/// instead of failing as a header ureq cannot write.
pub fn provider(
    cli: &Cli,
    example: &str,
    api_key: Option<OsString>,
) -> Result<Option<OpenAiCompatibleModel>, String> {
    let Some(base_url) = &cli.base_url else {
        return Ok(None);
    };
    let model = cli.model.as_deref();
    let model = model.ok_or("需要模型名：--model NAME 或 OPENAI_MODEL")?;
    if base_url.starts_with("https:") && !cfg!(feature = "tls") {
        return Err(format!(
            "https 需要 course 的 tls feature：cargo run -p course --features tls --example {example} -- …"
        ));
    }
    let api_key = api_key.unwrap_or_default().into_string();
    let api_key = api_key.map_err(|_| "OPENAI_API_KEY 不是有效的 UTF-8")?;
    if api_key.chars().any(char::is_control) {
        return Err("OPENAI_API_KEY 含有控制字符（比如末尾多了一个换行）：去掉它再试".to_string());
    }
    let transport = OpenAiCompatibleTransport::new(base_url, api_key)?;
    let transport = transport.with_idle_timeout(cli.idle_timeout);
    Ok(Some(OpenAiCompatibleModel::new(
        "openai-compatible",
        model,
        transport,
    )))
}

/// With no base URL: a demo server of our own on 127.0.0.1 that speaks the
/// OpenAI SSE format, so the learner's own transport and adapter run end
/// to end, offline. `answer` reads each request's JSON body and gives the
/// `data` payloads of the answer. Said on stderr.
pub fn demo_model(
    cli: &Cli,
    answer: impl Fn(&Value) -> Vec<Value> + Send + 'static,
) -> io::Result<OpenAiCompatibleModel> {
    let base_url = demo_server(answer)?;
    say(&format!(
        "没有 base URL（--base-url 或 OPENAI_BASE_URL）：本机演示服务器 {base_url} 用 OpenAI 的 SSE 格式回答，走的是你的 transport 和 adapter。"
    ));
    let transport = OpenAiCompatibleTransport::new(&base_url, "demo").expect("an absolute URL");
    let transport = transport.with_idle_timeout(cli.idle_timeout);
    Ok(OpenAiCompatibleModel::new(
        "loopback-demo",
        "demo",
        transport,
    ))
}

/// Starts the demo server and returns its base URL. It answers one request
/// per connection, for as long as the process runs.
pub fn demo_server(answer: impl Fn(&Value) -> Vec<Value> + Send + 'static) -> io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let base_url = format!("http://{}/v1", listener.local_addr()?);
    thread::Builder::new().spawn(move || {
        for connection in listener.incoming().flatten() {
            let _ = serve(connection, &answer); // a client that went away
        }
    })?;
    Ok(base_url)
}

/// One request: its head, its `Content-Length` bytes of JSON, then the
/// answer as SSE events and `[DONE]`.
fn serve(connection: TcpStream, answer: &dyn Fn(&Value) -> Vec<Value>) -> io::Result<()> {
    let mut reader = BufReader::new(&connection);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut out = &connection;
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
    )?;
    for payload in answer(&request) {
        write!(out, "data: {payload}\n\n")?;
    }
    out.write_all(b"data: [DONE]\n\n")
}

/// The payloads of a text answer, a few characters per delta, then `stop`.
pub fn text_answer(text: &str) -> Vec<Value> {
    let characters: Vec<char> = text.chars().collect();
    let deltas = characters.chunks(6).map(|piece| {
        let piece: String = piece.iter().collect();
        json!({ "choices": [{ "index": 0, "delta": { "content": piece } }] })
    });
    let finish = json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] });
    deltas.chain([finish]).collect()
}

/// The text of the last user message of a request body.
pub fn last_user_text(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .iter()
        .rev()
        .find(|message| message["role"] == "user");
    user.and_then(|message| message["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Ctrl-C from now on: the first sets `signal` (the call ends `aborted`
/// and what arrived is printed); a second ends the process at once with
/// exit status 130, even one stuck writing to a paused terminal.
pub fn ctrl_c(signal: &Arc<AtomicBool>) {
    use signal_hook::consts::SIGINT;
    use signal_hook::flag;
    // In this order: the second press finds the flag set and exits.
    let registered = flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(signal))
        .and_then(|_| flag::register(SIGINT, Arc::clone(signal)));
    if let Err(error) = registered {
        say(&format!("无法接管 Ctrl-C：{error}"));
    }
}

/// `text` for a terminal: control characters other than `\n` and `\t`
/// (ESC, CR, BEL, the C1 codes) are shown escaped, as `\u{1b}`, so text from
/// the model, a file name or a file's content cannot retitle the window,
/// clear the screen or overwrite a line. `--json` output needs none of this.
pub fn readable(text: &str) -> String {
    let shown = |c: char| match c {
        '\n' | '\t' => c.to_string(),
        c if c.is_control() => c.escape_unicode().to_string(),
        c => c.to_string(),
    };
    text.chars().map(shown).collect()
}

/// Standard output that says its first write error on stderr. After one,
/// nothing more is written and `write` answers `false`.
pub struct Out {
    failed: bool,
}

impl Out {
    pub fn new() -> Self {
        Out { failed: false }
    }

    /// Writes and flushes `text`; `false` once stdout failed.
    pub fn write(&mut self, text: &str) -> bool {
        if self.failed {
            return false;
        }
        let mut stdout = io::stdout().lock();
        let written = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
        if let Err(error) = written {
            self.failed = true;
            say(&format!("无法写入标准输出：{error}"));
        }
        !self.failed
    }

    pub fn failed(&self) -> bool {
        self.failed
    }
}

/// One line on stderr. A closed stderr is no reason to panic: the line is
/// dropped.
pub fn say(line: &str) {
    let _ = writeln!(io::stderr(), "{line}");
}
