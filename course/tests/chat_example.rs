//! The `chat` example (chapter 05) as a user runs it: the built binary
//! against servers this test starts on 127.0.0.1 (or its own demo server),
//! real signals, a full stdout; and the functions of the `cli` module it
//! shares with `agent`.

#[path = "../examples/cli/mod.rs"]
mod cli;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use course::types::{AgentMessage, Model, StopReason, StreamOptions};
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(20);

/// The built `chat` example. `cargo test` of one test file does not build
/// examples, so this builds it (once) and reads its path from cargo.
fn chat() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let output = Command::new(cargo)
            .args([
                "build",
                "-p",
                "course",
                "--example",
                "chat",
                "--message-format=json",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(output.status.success(), "the chat example builds");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|message| {
                message["target"]["name"] == "chat" && message["executable"].is_string()
            })
            .map(|message| PathBuf::from(message["executable"].as_str().unwrap()))
            .expect("cargo names the example's executable")
    })
}

/// Runs `chat` with `args`, no OPENAI_* variables but `env`, in the crate's folder.
fn run_chat(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(chat());
    command
        .args(args)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL");
    command
        .env_remove("OPENAI_API_KEY")
        .envs(env.iter().copied());
    command.stdin(Stdio::null()).output().expect("chat runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn with_no_base_url_the_demo_server_answers_through_the_real_transport() {
    let output = run_chat(&["你好"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "（本机演示服务器）你说：你好\n");
    assert!(text(&output.stderr).contains("本机演示服务器 http://127.0.0.1:"));

    let output = run_chat(&["--json", "--system", "be brief", "hi"], &[]);
    assert_eq!(output.status.code(), Some(0));
    let lines: Vec<Value> = text(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "start");
    let last = lines.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["provider"], "loopback-demo");
    assert_eq!(last["content"][0]["text"], "（本机演示服务器）你说：hi");
}

/// Reads one HTTP request off `connection`: its head, then its
/// `Content-Length` bytes of body, as text.
fn read_request(connection: &TcpStream) -> String {
    let mut reader = BufReader::new(connection);
    let (mut head, mut length) = (String::new(), 0);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        head.push_str(&line);
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    format!("{head}{}", text(&body))
}

/// A server for one request: records the request, then writes `answer`.
fn serve_once(answer: Vec<u8>) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        let request = read_request(&connection);
        let _ = connection.write_all(&answer);
        let _ = report.send(request);
    });
    (base_url, reported)
}

fn sse(payloads: &[Value]) -> Vec<u8> {
    let mut bytes =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n".to_vec();
    for payload in payloads {
        bytes.extend_from_slice(format!("data: {payload}\n\n").as_bytes());
    }
    bytes
}

#[test]
fn readable_output_escapes_control_characters_and_json_keeps_them() {
    let sneaky = "hi\u{1b}]0;owned\u{7}\rgone\u{1b}[2J\tok\n";
    let answer = sse(&[
        json!({ "choices": [{ "index": 0, "delta": { "content": sneaky }, "finish_reason": "stop" }] }),
    ]);
    let (base_url, _) = serve_once(answer.clone());
    let output = run_chat(&["--base-url", &base_url, "--model", "m", "hi"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "hi\\u{1b}]0;owned\\u{7}\\u{d}gone\\u{1b}[2J\tok\n\n"
    );
    let (base_url, _) = serve_once(answer);
    let output = run_chat(
        &["--json", "--base-url", &base_url, "--model", "m", "hi"],
        &[],
    );
    let last: AgentMessage =
        serde_json::from_str(text(&output.stdout).lines().last().unwrap()).unwrap();
    let AgentMessage::Assistant(message) = last else {
        panic!("the last line is the assistant message")
    };
    assert_eq!(
        course::types::text_of(&AgentMessage::Assistant(message)),
        sneaky
    );
}

#[test]
fn the_key_goes_into_the_header_and_a_401_quoting_it_shows_it_redacted() {
    let key = "sk-chat-example-secret";
    let body = format!(r#"{{"error":{{"message":"Incorrect API key provided: {key}"}}}}"#);
    let answer = format!(
        "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (base_url, request) = serve_once(answer.into_bytes());
    let output = run_chat(
        &["hi"],
        &[
            ("OPENAI_BASE_URL", &base_url),
            ("OPENAI_MODEL", "m"),
            ("OPENAI_API_KEY", key),
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let request = request.recv_timeout(BOUND).unwrap();
    assert!(
        request
            .to_ascii_lowercase()
            .contains(&format!("authorization: bearer {key}\r\n"))
    );
    assert!(
        !request.split("\r\n\r\n").nth(1).unwrap().contains(key),
        "not in the body"
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("Incorrect API key provided: [redacted]"),
        "{stderr}"
    );
    assert!(!stderr.contains(key) && !text(&output.stdout).contains(key));
}

#[test]
fn a_placeholder_key_changes_nothing_in_the_answer() {
    let answer = sse(&[
        json!({ "choices": [{ "index": 0, "delta": { "content": "This is a mock response" }, "finish_reason": "stop" }] }),
    ]);
    let (base_url, _) = serve_once(answer);
    let output = run_chat(
        &["--base-url", &base_url, "--model", "m", "hi"],
        &[("OPENAI_API_KEY", "mock")],
    );
    assert_eq!(text(&output.stdout), "This is a mock response\n");
}

/// Arguments, environment, and what stderr must say.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn bad_input_exits_2_and_says_why() {
    let cases: [Case; 5] = [
        (&[], &[], "缺少 PROMPT"),
        (
            &["--idle-timeout", "0", "hi"],
            &[],
            "--idle-timeout 要一个大于 0 的秒数",
        ),
        (
            &["--model", "a", "--model", "b", "hi"],
            &[],
            "--model 只能给一次",
        ),
        (
            &["--base-url", "http://127.0.0.1:9/v1", "hi"],
            &[],
            "需要模型名",
        ),
        (
            &["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "hi"],
            &[("OPENAI_API_KEY", "sk-copied-with-a-newline\n")],
            "OPENAI_API_KEY 含有控制字符",
        ),
    ];
    for (args, env, says) in cases {
        let output = run_chat(args, env);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            text(&output.stderr).contains(says),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
}

#[test]
fn a_full_stdout_is_said_on_stderr_and_exits_1() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = Command::new(chat())
        .arg("你好")
        .env_remove("OPENAI_BASE_URL")
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("无法写入标准输出"),
        "{}",
        text(&output.stderr)
    );
}

/// Sends SIGINT to `pid` with the `kill` command.
fn interrupt(pid: u32) {
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// A server that sends one delta, then stalls until the client hangs up.
fn stalling_server() -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (sent, was_sent) = mpsc::channel();
    thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        read_request(&connection);
        let head =
            sse(&[json!({ "choices": [{ "index": 0, "delta": { "content": "partial" } }] })]);
        connection.write_all(&head).unwrap();
        let _ = sent.send(());
        let mut rest = [0; 64];
        while matches!(connection.read(&mut rest), Ok(read) if read > 0) {} // until the client closes
    });
    (base_url, was_sent)
}

#[test]
fn the_first_ctrl_c_aborts_the_call_and_prints_the_partial() {
    let (base_url, was_sent) = stalling_server();
    let mut child = Command::new(chat())
        .args(["--base-url", &base_url, "--model", "m", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    was_sent.recv_timeout(BOUND).unwrap();
    // The partial is on stdout once the delta went through the adapter.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0; 7];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"partial");
    interrupt(child.id());
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("调用以 aborted 结束：Request was aborted"),
        "{stderr}"
    );
}

#[test]
fn a_second_ctrl_c_exits_130_at_once_even_while_stdout_is_blocked() {
    // One delta of 1 MiB: far more than a pipe holds, so once the pipe is
    // full, `chat` is stuck writing and the first Ctrl-C cannot end it.
    let big = "x".repeat(1 << 20);
    let (base_url, _) = serve_once(sse(&[json!({
        "choices": [{ "index": 0, "delta": { "content": big }, "finish_reason": "stop" }]
    })]));
    let mut child = Command::new(chat())
        .args(["--base-url", &base_url, "--model", "m", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap(); // kept open, never read past this
    let mut first = [0; 1];
    stdout.read_exact(&mut first).unwrap();
    // Ctrl-C until it ends: a signal sent while one is pending may merge
    // with it, so one press is repeated rather than timed.
    let started = std::time::Instant::now();
    let status = loop {
        interrupt(child.id());
        match child.try_wait().unwrap() {
            Some(status) => break status,
            None if started.elapsed() > BOUND => {
                child.kill().unwrap();
                panic!("Ctrl-C pressed again and again did not end chat");
            }
            None => thread::sleep(Duration::from_millis(50)),
        }
    };
    assert_eq!(status.code(), Some(130));
}

#[test]
fn cli_readable_escapes_controls_but_not_newlines_tabs_or_text() {
    assert_eq!(cli::readable("a\tb\nc"), "a\tb\nc");
    assert_eq!(cli::readable("\u{1b}[31m红\r"), "\\u{1b}[31m红\\u{d}");
    assert_eq!(cli::readable("\u{9b}\u{7f}\u{7}"), "\\u{9b}\\u{7f}\\u{7}");
}

#[test]
fn cli_parse_reads_flags_the_environment_and_an_examples_own_flags() {
    let args = |list: &[&str]| -> Vec<OsString> { list.iter().map(OsString::from).collect() };
    let env = |name: &str| match name {
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:1/v1".to_string()),
        "OPENAI_MODEL" => Some(String::new()),
        _ => None,
    };
    let Ok(cli::Parsed::Run(parsed)) = cli::parse(
        args(&[
            "--max-steps",
            "3",
            "--idle-timeout",
            "1.5",
            "--system",
            "s",
            "项目",
            "叫什么",
        ]),
        &["--max-steps"],
        env,
    ) else {
        panic!("parses")
    };
    assert_eq!(parsed.base_url.as_deref(), Some("http://127.0.0.1:1/v1"));
    assert_eq!(parsed.model, None, "an empty variable is no value");
    assert_eq!(parsed.idle_timeout, Duration::from_millis(1500));
    assert_eq!(parsed.system.as_deref(), Some("s"));
    assert_eq!(parsed.prompt, "项目 叫什么");
    assert_eq!(parsed.own, [("--max-steps".to_string(), "3".to_string())]);
    let default = cli::parse(args(&["hi"]), &[], |_| None);
    let Ok(cli::Parsed::Run(default)) = default else {
        panic!("parses")
    };
    assert_eq!(
        default.idle_timeout,
        Duration::from_secs(300),
        "README states 300 s"
    );
    assert!(
        matches!(cli::parse(args(&["--max-steps", "3", "hi"]), &[], |_| None), Err(problem) if problem == "未知参数：--max-steps")
    );
}

#[test]
fn cli_demo_server_speaks_openai_sse_to_the_real_transport() {
    let parsed = match cli::parse([OsString::from("hi")], &[], |_| None) {
        Ok(cli::Parsed::Run(parsed)) => parsed,
        _ => panic!("parses"),
    };
    let model = cli::demo_model(&parsed, |request| {
        cli::text_answer(&format!("echo: {}", cli::last_user_text(request)))
    })
    .unwrap();
    let stream = model.stream(&cli::context(&parsed), StreamOptions::default());
    let deltas = stream
        .iter()
        .filter(|event| matches!(event, course::types::ModelEvent::TextDelta { .. }))
        .count();
    let message = stream.blocking_result().unwrap();
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(
        course::types::text_of(&AgentMessage::Assistant(message)),
        "echo: hi"
    );
    assert_eq!(deltas, 2, "streamed in pieces of six characters");
}
