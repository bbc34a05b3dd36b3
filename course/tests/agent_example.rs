//! The `agent` example (chapters 07 to 13) as a user runs it: the built
//! binary, with its own demo server or a server this test starts on
//! 127.0.0.1 that asks for the coding tools and records what it is sent;
//! its three modes (print, json lines, interactive over stdin with Ctrl-C
//! sent as SIGINT); with `--session`, several runs on one session file on
//! disk, a branch from `--leaf`, and runs killed by a signal in the middle
//! of an answer or of a line.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use std::{fs, thread};

use serde_json::{Value, json};

/// The built `agent` example, built once (`cargo test` of one test file
/// does not build examples); cargo names its path.
fn agent() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let output = Command::new(cargo)
            .args([
                "build",
                "-p",
                "course",
                "--example",
                "agent",
                "--message-format=json",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(output.status.success(), "the agent example builds");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|message| {
                message["target"]["name"] == "agent" && message["executable"].is_string()
            })
            .map(|message| PathBuf::from(message["executable"].as_str().unwrap()))
            .expect("cargo names the example's executable")
    })
}

/// Runs `agent` in `folder` with `args` and no OPENAI_* variables.
fn run_agent(folder: &Path, args: &[&str]) -> Output {
    Command::new(agent())
        .args(args)
        .current_dir(folder)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("agent runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The workspace root: where a user types `cargo run -p course --example agent`.
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh folder under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let number = COUNT.fetch_add(1, Ordering::SeqCst);
        let name = format!("{prefix}{}-{number}", std::process::id());
        let path = std::env::temp_dir().join(name);
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One streamed tool call of an answer, as an OpenAI-compatible server sends it.
fn tool_call(index: usize, id: &str, name: &str, arguments: Value) -> Value {
    let call = json!({ "index": index, "id": id, "type": "function",
        "function": { "name": name, "arguments": arguments.to_string() } });
    json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [call] } }] })
}

fn finish(reason: &str) -> Value {
    json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": reason }] })
}

#[test]
fn the_demo_reads_writes_and_edits_a_note_under_target_and_shows_it_with_bash() {
    let note = workspace().join("target/agent-demo/note.md");
    let output = run_agent(&workspace(), &["项目叫什么？"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    // print: the answer on stdout, what the tools did on stderr.
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(
        stdout,
        "这个项目叫 course（course/Cargo.toml 里 [package] 的 name）。笔记在 target/agent-demo/note.md，bash 显示它写着“项目：course”。\n"
    );
    for expected in [
        "[工具调用 call_1] read {\"path\":\"course/Cargo.toml\"}",
        "   2│ name = \"course\"",
        "[工具调用 call_2] write {\"path\":\"target/agent-demo/note.md\"",
        "[工具调用 call_3] edit {\"path\":\"target/agent-demo/note.md\",\"oldText\":\"（待填）\",\"newText\":\"course\"}",
        "已完成 1 处精确替换",
        "[工具调用 call_4] bash {\"command\":\"cat target/agent-demo/note.md\"}",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
    assert!(
        stderr.contains("本机演示服务器") && stderr.contains("target/ 被 git 忽略"),
        "{stderr}"
    );
    assert_eq!(
        fs::read_to_string(&note).unwrap(),
        "# 演示笔记\n\n项目：course\n"
    );

    let output = run_agent(&workspace(), &["--json", "项目叫什么？"]);
    let last: Value = serde_json::from_str(text(&output.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(
        (&last["reason"], &last["steps"]),
        (&json!("stop"), &json!(4))
    );
    let messages = last["messages"].as_array().unwrap();
    // A system message (the resources of an AGENTS.md where the demo runs,
    // as in a practice folder) has text, not blocks.
    let calls: Vec<&Value> = messages
        .iter()
        .filter_map(|message| message["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "toolCall")
        .collect();
    let names: Vec<&str> = calls
        .iter()
        .map(|call| call["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "write", "edit", "bash"]);
    for call in &calls[1..3] {
        let path = call["arguments"]["path"].as_str().unwrap();
        assert!(
            path.starts_with("target/"),
            "the demo writes under target/ only: {path}"
        );
    }
    let answer = messages.last().unwrap()["content"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(
        answer,
        "这个项目叫 course（course/Cargo.toml 里 [package] 的 name）。笔记在 target/agent-demo/note.md，bash 显示它写着“项目：course”。"
    );
}

#[test]
fn a_model_that_asks_for_a_write_an_edit_and_a_command_changes_the_folder_and_hears_back() {
    let folder = TempDir::new("agent-example-tools-");
    let outside = format!("agent-example-outside-{}.txt", std::process::id());
    let first = vec![
        tool_call(
            0,
            "c1",
            "write",
            json!({ "path": "notes/todo.md", "content": "- [ ] draft\n" }),
        ),
        tool_call(
            1,
            "c2",
            "edit",
            json!({ "path": "notes/todo.md", "oldText": "[ ]", "newText": "[x]" }),
        ),
        tool_call(
            2,
            "c3",
            "bash",
            json!({ "command": "printf made > made.txt && cat made.txt" }),
        ),
        tool_call(
            3,
            "c4",
            "write",
            json!({ "path": format!("../{outside}"), "content": "x" }),
        ),
        finish("tool_calls"),
    ];
    let second = vec![
        json!({ "choices": [{ "index": 0, "delta": { "content": "done" } }] }),
        finish("stop"),
    ];
    let (base_url, requests) = serve(vec![first, second]);

    let output = run_agent(
        &folder.0,
        &["--base-url", &base_url, "--model", "m", "tidy up"],
    );

    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        fs::read_to_string(folder.0.join("notes/todo.md")).unwrap(),
        "- [x] draft\n"
    );
    assert_eq!(
        fs::read_to_string(folder.0.join("made.txt")).unwrap(),
        "made"
    );
    assert!(
        !folder.0.parent().unwrap().join(&outside).exists(),
        "nothing written outside"
    );
    let first_request = requests.recv().unwrap();
    let tools: Vec<&str> = first_request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "write", "edit", "bash"]);
    let second_request = requests.recv().unwrap();
    let answers: Vec<(&str, &str)> = second_request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            let id = message["tool_call_id"].as_str().unwrap();
            (id, message["content"].as_str().unwrap())
        })
        .collect();
    let refused = format!("Tool write failed: 路径越过教学 workspace：../{outside}");
    assert_eq!(
        answers,
        [
            ("c1", "已写入 12 bytes"),
            ("c2", "已完成 1 处精确替换"),
            ("c3", "made"),
            ("c4", refused.as_str()),
        ]
    );
}

#[test]
fn unrestricted_is_said_on_stderr_and_lets_a_path_leave_the_folder() {
    let folder = TempDir::new("agent-example-unrestricted-");
    let elsewhere = TempDir::new("agent-example-elsewhere-");
    let target = elsewhere.0.join("out.txt");
    let path = target.to_str().unwrap();
    let first = vec![
        tool_call(0, "c1", "write", json!({ "path": path, "content": "out" })),
        finish("tool_calls"),
    ];
    let second = vec![finish("stop")];
    let (base_url, _requests) = serve(vec![first.clone(), second.clone()]);
    let args = [
        "--base-url",
        &base_url,
        "--model",
        "m",
        "--unrestricted",
        "write",
    ];

    let output = run_agent(&folder.0, &args);

    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("--unrestricted"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), "out");

    // Without the switch the same call is refused.
    fs::remove_file(&target).unwrap();
    let (base_url, _requests) = serve(vec![first, second]);
    let output = run_agent(
        &folder.0,
        &["--base-url", &base_url, "--model", "m", "write"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("路径越过教学 workspace"),
        "{}",
        text(&output.stderr)
    );
    assert!(!target.exists());
}

#[test]
fn max_steps_0_and_other_impossible_values_are_bad_input() {
    for steps in ["0", "-1", "x"] {
        let output = run_agent(&workspace(), &["--max-steps", steps, "hi"]);
        assert_eq!(output.status.code(), Some(2), "{steps}");
        assert!(
            text(&output.stderr).contains("--max-steps 要一个不小于 1 的整数"),
            "{}",
            text(&output.stderr)
        );
    }
}

#[test]
fn a_files_control_characters_are_escaped_in_the_transcript_and_kept_in_json() {
    let folder = TempDir::new("agent-example-escapes-");
    fs::write(
        folder.0.join("note.txt"),
        "title\u{1b}]0;owned\u{7}\rgone\n",
    )
    .unwrap();
    let answers = [
        json!([{ "choices": [{ "index": 0, "delta": { "tool_calls": [{ "index": 0, "id": "c1", "type": "function", "function": { "name": "read", "arguments": "{\"path\":\"note.txt\"}" } }] }, "finish_reason": "tool_calls" }] }]),
        json!([{ "choices": [{ "index": 0, "delta": { "content": "done" }, "finish_reason": "stop" }] }]),
    ];
    for json_mode in [false, true] {
        let (base_url, _requests) = serve(
            answers
                .iter()
                .map(|answer| answer.as_array().unwrap().clone())
                .collect(),
        );
        let mut args = vec![
            "--base-url",
            &base_url,
            "--model",
            "m",
            "--system",
            "be brief",
        ];
        if json_mode {
            args.push("--json");
        }
        args.push("read note.txt");
        let output = run_agent(&folder.0, &args);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        if json_mode {
            assert!(
                stdout.contains(r#""text":"   1│ title\u001b]0;owned\u0007\rgone\n   2│ ""#),
                "{stdout}"
            );
        } else {
            assert_eq!(stdout, "done\n");
            assert!(
                stderr.contains("   1│ title\\u{1b}]0;owned\\u{7}\\u{d}gone\n   2│ \n"),
                "{stderr}"
            );
            assert!(!stderr.contains('\u{1b}'));
        }
    }
}

/// Starts `agent` in `folder` with `args`, its stdout and stderr piped.
fn spawn_agent(folder: &Path, args: &[&str]) -> Child {
    Command::new(agent())
        .args(args)
        .current_dir(folder)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agent starts")
}

/// Sends SIGINT to `child`, as Ctrl-C does, with the `kill` command.
fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for `child` and returns its exit code, the rest of its stdout and
/// its stderr.
fn wait_for_end(mut child: Child, mut stdout: impl Read) -> (Option<i32>, String, String) {
    let (mut rest, mut stderr) = (String::new(), String::new());
    stdout.read_to_string(&mut rest).unwrap();
    let mut child_stderr = child.stderr.take().unwrap();
    child_stderr.read_to_string(&mut stderr).unwrap();
    (child.wait().unwrap().code(), rest, stderr)
}

#[test]
fn the_first_ctrl_c_aborts_the_run_while_the_model_streams() {
    let base_url = stalled_answer();
    // A folder without an AGENTS.md: messages[1] is the answer.
    let folder = TempDir::new("agent-ctrl-c-");
    let mut child = spawn_agent(
        &folder.0,
        // Without the abort, the stalled answer would end the run in error.
        &[
            "--base-url",
            &base_url,
            "--model",
            "m",
            "--idle-timeout",
            "10",
            "--mode",
            "json",
            "hi",
        ],
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let delta = read_until(&mut stdout, "text_delta");
    assert!(delta.contains(r#""delta":"partial""#), "{delta}");

    interrupt(&child);

    let (code, rest, stderr) = wait_for_end(child, stdout);
    assert_eq!(code, Some(1), "{stderr}");
    let run: Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&run["reason"], &run["steps"]),
        (&json!("aborted"), &json!(1))
    );
    let answer = &run["messages"][1];
    assert_eq!(
        (&answer["stopReason"], &answer["content"][0]["text"]),
        (&json!("aborted"), &json!("partial")),
        "the partial is kept"
    );
}

/// Reads lines from `reader` until one contains `wanted`; all of them.
fn read_until(reader: &mut impl BufRead, wanted: &str) -> String {
    let mut read = String::new();
    while !read.contains(wanted) {
        let more = reader.read_line(&mut read).unwrap();
        assert!(more > 0, "ended before {wanted:?}: {read}");
    }
    read
}

#[test]
fn the_first_ctrl_c_aborts_the_run_and_ends_the_running_command() {
    let folder = TempDir::new("agent-example-ctrl-c-");
    // The command says it runs through a FIFO: opening it for reading waits
    // for the command to open it for writing.
    let gate = folder.0.join("gate");
    assert!(
        Command::new("mkfifo")
            .arg(&gate)
            .status()
            .unwrap()
            .success()
    );
    let calls = vec![
        tool_call(
            0,
            "c1",
            "bash",
            json!({ "command": "printf running > gate && sleep 20" }),
        ),
        finish("tool_calls"),
    ];
    let (base_url, requests) = serve(vec![calls]);
    let mut child = spawn_agent(
        &folder.0,
        &["--base-url", &base_url, "--model", "m", "wait"],
    );
    // Opened on a thread: a command that never runs leaves it waiting.
    let (opened, running) = mpsc::channel();
    thread::spawn(move || {
        let mut said = String::new();
        let _ = fs::File::open(&gate).and_then(|mut gate| gate.read_to_string(&mut said));
        let _ = opened.send(said);
    });
    let running = running.recv_timeout(Duration::from_secs(20));
    assert_eq!(running.as_deref(), Ok("running"), "the command runs");

    interrupt(&child);

    let stdout = child.stdout.take().unwrap();
    let (code, stdout, stderr) = wait_for_end(child, stdout);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("[工具调用 c1] bash")
            && stderr.contains("[工具结果 c1]（错误）\n(exit signal)\n"),
        "the command was ended by the agent's signal: {stderr}"
    );
    assert!(
        stderr.ends_with("—— 运行结束：aborted，1 次模型调用\n"),
        "{stderr}"
    );
    assert_eq!(stdout, "", "no answer: the run ended at its only call");
    requests.recv().unwrap();
    assert!(requests.try_recv().is_err(), "no request after the abort");
}

/// A server that answers its requests, one per connection, with `answers`
/// in order (each a list of `data` payloads), and hands over each request's
/// JSON body as it arrives.
fn serve(answers: Vec<Vec<Value>>) -> (String, Receiver<Value>) {
    let answers = Mutex::new(answers.into_iter());
    serve_by(move |_| answers.lock().unwrap().next())
}

/// A server that answers each request, one per connection, with what
/// `answer` gives for its JSON body, and hands over each body as it
/// arrives; a request `answer` has nothing for is the last it reads. An
/// answer whose last payload is `"hold"` is sent without it, and the
/// connection held until the client hangs up.
fn serve_by(
    answer: impl Fn(&Value) -> Option<Vec<Value>> + Send + 'static,
) -> (String, Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (sender, requests) = mpsc::channel();
    thread::spawn(move || {
        loop {
            let (mut connection, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(connection.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let request: Value = serde_json::from_slice(&body).unwrap();
            let payloads = answer(&request);
            let _ = sender.send(request);
            let Some(payloads) = payloads else {
                return;
            };
            let mut bytes =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                    .to_vec();
            let hold = payloads.last() == Some(&json!("hold"));
            for payload in &payloads[..payloads.len() - usize::from(hold)] {
                bytes.extend_from_slice(format!("data: {payload}\n\n").as_bytes());
            }
            let _ = connection.write_all(&bytes);
            while hold && matches!(reader.read(&mut [0; 64]), Ok(read) if read > 0) {}
        }
    });
    (base_url, requests)
}

/// A server that answers one request with one delta, `partial`, and then
/// holds the answer until the client hangs up.
fn stalled_answer() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(connection.try_clone().unwrap());
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        let delta = json!({ "choices": [{ "index": 0, "delta": { "content": "partial" } }] });
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {delta}\n\n"
        );
        connection.write_all(head.as_bytes()).unwrap();
        while matches!(reader.read(&mut [0; 64]), Ok(read) if read > 0) {} // until the client closes
    });
    base_url
}

/// The session file's entries, one per line; every line committed (the
/// file ends in `\n`) and each entry continuing the one before it.
fn session_lines(file: &Path) -> Vec<Value> {
    let text = fs::read_to_string(file).unwrap();
    assert!(text.ends_with('\n'), "every line committed: {text}");
    let entries: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    for pair in entries.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "one chain: {text}");
    }
    assert_eq!(
        entries.first().map(|entry| &entry["parentId"]),
        Some(&Value::Null)
    );
    entries
}

fn roles(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|entry| entry["message"]["role"].as_str().unwrap())
        .collect()
}

/// The text of each message of a request body that has text, by role.
fn said(request: &Value) -> Vec<(String, String)> {
    let messages = request["messages"].as_array().unwrap();
    messages
        .iter()
        .map(|message| {
            let role = message["role"].as_str().unwrap().to_string();
            (role, message["content"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

fn pairs(said: &[(&str, &str)]) -> Vec<(String, String)> {
    let pairs = said
        .iter()
        .map(|(role, text)| (role.to_string(), text.to_string()));
    pairs.collect()
}

fn answer(text: &str) -> Vec<Value> {
    vec![
        json!({ "choices": [{ "index": 0, "delta": { "content": text } }] }),
        finish("stop"),
    ]
}

/// One run of `agent` with `--session file` against a server that answers
/// with `answers`; the run must end with stop. Gives its stdout, its stderr
/// and the requests the server got.
fn session_run(
    folder: &Path,
    file: &Path,
    answers: Vec<Vec<Value>>,
    prompt: &[&str],
) -> (String, String, Vec<Value>) {
    let (base_url, requests) = serve(answers);
    let mut args = vec!["--base-url", &base_url, "--model", "m"];
    args.extend(["--session", file.to_str().unwrap()]);
    args.extend(prompt);
    let output = run_agent(folder, &args);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    (text(&output.stdout), stderr, requests.try_iter().collect())
}

#[test]
fn a_second_run_on_a_session_file_carries_the_first_run_s_messages() {
    let folder = TempDir::new("agent-session-twice-");
    fs::write(folder.0.join("note.txt"), "hello\n").unwrap();
    let file = folder.0.join("sessions/chat.jsonl"); // its folder is created
    let read = vec![
        tool_call(0, "c1", "read", json!({ "path": "note.txt" })),
        finish("tool_calls"),
    ];
    let first = ["--system", "be brief", "what does note.txt say?"];
    let (_, _, first_requests) = session_run(&folder.0, &file, vec![read, answer("hello")], &first);
    assert_eq!(first_requests.len(), 2);
    let entries = session_lines(&file);
    assert_eq!(
        roles(&entries),
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    let first_run = fs::read(&file).unwrap();

    // A resumed session keeps its own system prompt.
    let second = ["--json", "--system", "be verbose", "and again?"];
    let (stdout, stderr, requests) = session_run(&folder.0, &file, vec![answer("again")], &second);

    // The request carries the first run's messages as the first run sent
    // them (the system prompt, the call and its result), then its answer.
    let carried = requests[0]["messages"].as_array().unwrap();
    let sent_before = first_requests[1]["messages"].as_array().unwrap();
    assert_eq!(&carried[..4], &sent_before[..], "{carried:#?}");
    assert_eq!(
        said(&requests[0]),
        pairs(&[
            ("system", "be brief"),
            ("user", "what does note.txt say?"),
            ("assistant", ""),
            ("tool", "   1│ hello\n   2│ "),
            ("assistant", "hello"),
            ("user", "and again?"),
        ])
    );
    assert_eq!(carried[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(carried[3]["tool_call_id"], "c1");
    assert!(stderr.contains("这次的 --system 不用"), "{stderr}");
    let run: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(run["messages"].as_array().unwrap().len(), 7);

    // Appended, never rewritten: the first run's bytes are still the start.
    let both = fs::read(&file).unwrap();
    assert_eq!(&both[..first_run.len()], &first_run[..]);
    let entries = session_lines(&file);
    assert_eq!(
        roles(&entries),
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
}

/// Sends SIGKILL to `child` by its pid and waits for it.
fn kill_9(mut child: Child) {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
}

#[test]
fn a_run_killed_in_the_middle_of_an_answer_loses_that_run_and_nothing_before_it() {
    let folder = TempDir::new("agent-session-sigkill-");
    let file = folder.0.join("chat.jsonl");
    session_run(&folder.0, &file, vec![answer("first answer")], &["one"]);
    let saved = fs::read(&file).unwrap();
    let base_url = stalled_answer();
    let session = file.to_str().unwrap();
    let mut args = vec!["--base-url", &base_url, "--model", "m", "--json"];
    args.extend(["--session", session, "two"]);
    let mut child = spawn_agent(&folder.0, &args);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    read_until(&mut stdout, "text_delta"); // the answer is streaming

    kill_9(child);

    // The runtime saves a run when it ends: the killed one left nothing,
    // and no line is torn.
    assert_eq!(fs::read(&file).unwrap(), saved);
    let (_, stderr, requests) = session_run(&folder.0, &file, vec![answer("third")], &["three"]);
    assert!(!stderr.contains("unterminated_tail"), "{stderr}");
    assert_eq!(
        said(&requests[0]),
        pairs(&[
            ("user", "one"),
            ("assistant", "first answer"),
            ("user", "three"),
        ])
    );
    assert_eq!(
        roles(&session_lines(&file)),
        ["user", "assistant", "user", "assistant"]
    );
}

#[test]
fn a_run_killed_in_the_middle_of_a_line_leaves_a_torn_tail_the_next_run_reports_and_cuts() {
    let folder = TempDir::new("agent-session-torn-");
    let file = folder.0.join("chat.jsonl");
    session_run(&folder.0, &file, vec![answer("first answer")], &["one"]);
    let committed = fs::read(&file).unwrap();
    // The kernel lets the run write 40 more bytes of the file, then ends it
    // with SIGXFSZ: killed in the middle of its first line, the prompt's,
    // which the runtime writes once the model has answered.
    let limit = (committed.len() + 40) as libc::rlim_t;
    let (base_url, requests) = serve(vec![answer("lost")]);
    let mut command = Command::new(agent());
    command
        .args(["--base-url", &base_url, "--model", "m", "--session"])
        .args([&file])
        .arg("two")
        .current_dir(&folder.0)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null());
    // SAFETY: setrlimit and signal are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let size = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            match libc::setrlimit(libc::RLIMIT_FSIZE, &size) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let output = command.output().unwrap();
    assert_eq!(output.status.signal(), Some(libc::SIGXFSZ), "{output:?}");
    let torn = fs::read(&file).unwrap();
    assert_eq!(torn.len(), committed.len() + 40);
    assert_eq!(&torn[..committed.len()], &committed[..]);
    assert_eq!(requests.try_iter().count(), 1, "killed after its answer");

    let (_, stderr, requests) = session_run(&folder.0, &file, vec![answer("third")], &["three"]);

    assert!(
        stderr.contains("第 3 行没有写完（unterminated_tail")
            && stderr.contains("已截掉这 40 个字节")
            && stderr.contains("2 条记录"),
        "{stderr}"
    );
    assert_eq!(
        said(&requests[0]),
        pairs(&[
            ("user", "one"),
            ("assistant", "first answer"),
            ("user", "three")
        ])
    );
    let repaired = fs::read(&file).unwrap();
    assert_eq!(&repaired[..committed.len()], &committed[..]);
    assert_eq!(
        roles(&session_lines(&file)),
        ["user", "assistant", "user", "assistant"]
    );
}

#[test]
fn a_call_saved_without_its_result_is_paired_with_an_error_by_the_next_run() {
    let folder = TempDir::new("agent-session-tool-");
    let file = folder.0.join("chat.jsonl");
    let calls = vec![
        tool_call(0, "c1", "bash", json!({ "command": "printf hi" })),
        finish("tool_calls"),
    ];
    session_run(&folder.0, &file, vec![calls, answer("done")], &["wait"]);
    // What a process killed between the call's line and its result's leaves.
    let text = fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4);
    fs::write(&file, format!("{}\n{}\n", lines[0], lines[1])).unwrap();
    assert_eq!(roles(&session_lines(&file)), ["user", "assistant"]);

    let (_, stderr, requests) = session_run(&folder.0, &file, vec![answer("ok")], &["go on"]);

    assert!(stderr.contains("工具调用 c1（bash）没有结果"), "{stderr}");
    let messages = requests[0]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "c1");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .contains("没有结果"),
        "{messages:#?}"
    );
    let entries = session_lines(&file);
    assert_eq!(
        roles(&entries),
        ["user", "assistant", "toolResult", "user", "assistant"]
    );
    assert_eq!(entries[2]["message"]["isError"], true);
}

#[test]
fn a_file_that_is_not_a_session_is_refused_and_left_as_it_was() {
    let folder = TempDir::new("agent-session-bad-");
    let file = folder.0.join("notes.jsonl");
    let bytes = "{\"todo\":\"buy milk\"}\n";
    fs::write(&file, bytes).unwrap();
    let (base_url, requests) = serve(vec![answer("never")]);
    let args = ["--base-url", &base_url, "--model", "m", "--session"];
    let output = run_agent(
        &folder.0,
        &[&args[..], &[file.to_str().unwrap(), "hi"]].concat(),
    );

    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("session JSONL 第 1 行不是合法 session entry"),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), bytes);
    assert!(requests.try_recv().is_err(), "no model call");
}

#[test]
fn a_run_is_saved_once_it_ends_with_a_batch_s_results_in_call_order() {
    let folder = TempDir::new("agent-session-order-");
    let file = folder.0.join("chat.jsonl");
    let hold = folder.0.join("hold");
    assert!(
        Command::new("mkfifo")
            .arg(&hold)
            .status()
            .unwrap()
            .success()
    );
    // c1 waits for this test; c2 ends at once.
    let calls = vec![
        tool_call(0, "c1", "bash", json!({ "command": "cat hold" })),
        tool_call(1, "c2", "bash", json!({ "command": "printf quick" })),
        finish("tool_calls"),
    ];
    let (base_url, _requests) = serve(vec![calls, answer("done")]);
    let session = file.to_str().unwrap();
    let mut args = vec!["--base-url", &base_url, "--model", "m"];
    args.extend(["--session", session, "both"]);
    let mut child = spawn_agent(&folder.0, &args);
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    read_until(&mut stderr, "[工具结果 c2]");

    // Nothing of the run is in the file while it runs.
    assert_eq!(fs::read_to_string(&file).unwrap(), "");
    drop(fs::OpenOptions::new().write(true).open(&hold)); // c1 ends

    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert_eq!(stdout, "done\n");
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let entries = session_lines(&file);
    assert_eq!(
        roles(&entries),
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
    let ids: Vec<&Value> = entries[2..4]
        .iter()
        .map(|entry| &entry["message"]["toolCallId"])
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
}

/// The stated estimate of `--context-tokens`, from what the server got: the
/// UTF-8 bytes of a JSON value, divided by 4, rounded up.
fn estimated(value: &Value) -> u64 {
    serde_json::to_string(value).unwrap().len().div_ceil(4) as u64
}

/// What a request costs by the estimate: each message, and the tools.
fn request_tokens(request: &Value) -> u64 {
    let messages = request["messages"].as_array().unwrap();
    let messages: u64 = messages.iter().map(estimated).sum();
    messages + request.get("tools").map_or(0, estimated)
}

/// Every tool call in `request` is answered by the tool messages right
/// after its assistant message, each once, and every tool message answers
/// such a call.
fn assert_paired(request: &Value) {
    let mut waiting: Vec<&str> = Vec::new();
    for message in request["messages"].as_array().unwrap() {
        if message["role"] == "tool" {
            let id = message["tool_call_id"].as_str().unwrap();
            let at = waiting.iter().position(|call| *call == id);
            let at = at.unwrap_or_else(|| panic!("result {id} without its call: {request:#}"));
            waiting.remove(at);
            continue;
        }
        assert!(
            waiting.is_empty(),
            "calls {waiting:?} unanswered: {request:#}"
        );
        let calls = message["tool_calls"].as_array().into_iter().flatten();
        waiting = calls.map(|call| call["id"].as_str().unwrap()).collect();
    }
    assert!(
        waiting.is_empty(),
        "calls {waiting:?} unanswered: {request:#}"
    );
}

/// The user messages of a request that are prompts (not the summary).
fn prompts_in(request: &Value) -> Vec<String> {
    let messages = request["messages"].as_array().unwrap();
    let users = messages.iter().filter(|message| message["role"] == "user");
    let texts = users.map(|message| message["content"].as_str().unwrap().to_string());
    texts
        .filter(|text| !text.starts_with("【会话压缩摘要】"))
        .collect()
}

/// The long session's model. A prompt `turn T: N lines` gets two calls
/// (`bash` printing N numbered lines, `read` of notes.txt); their results,
/// one more `bash`; that result, an answer. A request without tools
/// (`--compact`'s) gets the seven-field summary, in a code fence as models
/// like to write it. Call ids are unique over the whole session.
fn long_session_model(request: &Value, calls: &AtomicUsize) -> Vec<Value> {
    let messages = request["messages"].as_array().unwrap();
    if request.get("tools").is_none() {
        let summary = json!({ "goal": "keep notes.txt in order",
            "constraints": ["stay in the folder"], "completed": ["the turns before"],
            "decisions": [], "changedFiles": [], "unresolved": [], "next": ["go on"] });
        return answer(&format!("```json\n{summary}\n```"));
    }
    let asked = messages.iter().rposition(|m| m["role"] == "user").unwrap();
    let prompt = messages[asked]["content"].as_str().unwrap();
    let results = messages[asked + 1..].iter().filter(|m| m["role"] == "tool");
    let id = || format!("call-{}", calls.fetch_add(1, Ordering::SeqCst));
    match results.count() {
        0 => {
            let lines: usize = prompt.split(' ').nth(2).unwrap().parse().unwrap();
            let list = json!({ "command": format!("seq 1 {lines}") });
            vec![
                tool_call(0, &id(), "bash", list),
                tool_call(1, &id(), "read", json!({ "path": "notes.txt" })),
                finish("tool_calls"),
            ]
        }
        2 => {
            let check = json!({ "command": "printf checked" });
            vec![tool_call(0, &id(), "bash", check), finish("tool_calls")]
        }
        _ => answer(&format!("done with {prompt}")),
    }
}

/// `--context-tokens` of the long session: the tool definitions (about 330
/// by the estimate), the system prompt, and room for two or three turns.
const BUDGET: u64 = 1_000;

#[test]
fn a_long_session_sends_only_what_fits_the_budget_with_calls_paired_and_the_summary_first() {
    let folder = TempDir::new("agent-session-budget-");
    fs::write(folder.0.join("notes.txt"), "keep this in order\n").unwrap();
    let file = folder.0.join("long.jsonl");
    let calls = AtomicUsize::new(0);
    let (base_url, requests) = serve_by(move |request| Some(long_session_model(request, &calls)));
    let budget = BUDGET.to_string();
    let session = file.to_str().unwrap();
    let (mut prompts, mut trimmed, mut overflows) = (Vec::new(), 0, 0);
    // What each finished turn costs by the estimate, as a request carries it.
    let mut costs: Vec<u64> = Vec::new();
    for turn in 1..=14 {
        let lines = if turn == 6 { 3_000 } else { 20 + turn * 7 % 40 };
        let prompt = format!("turn {turn}: {lines} lines");
        let mut args = vec!["--base-url", &base_url, "--model", "m"];
        args.extend(["--context-tokens", &budget, "--session", session]);
        match turn {
            1 => args.extend(["--system", "keep answers short"]),
            11 => args.push("--compact"),
            _ => {}
        }
        args.push(&prompt);
        let output = run_agent(&folder.0, &args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        let mut sent: Vec<Value> = requests.try_iter().collect();
        if turn == 11 {
            // The summary's request: what came before the newest turn, the
            // instruction last, within the budget; the summary is appended.
            let asked = sent.remove(0);
            assert!(asked.get("tools").is_none(), "{asked:#}");
            assert!(request_tokens(&asked) <= BUDGET, "{asked:#}");
            assert_paired(&asked);
            let carried = prompts_in(&asked);
            assert!(carried.last().unwrap().contains("7 个字段"), "{carried:?}");
            assert!(prompts[..9].ends_with(&carried[..carried.len() - 1]));
            assert!(stderr.contains("已压缩会话"), "{stderr}");
            let entries = session_lines(&file);
            let compaction = entries.iter().find(|entry| entry["type"] == "compaction");
            let compaction = compaction.expect("a compaction entry");
            let first_kept = entries
                .iter()
                .find(|entry| entry["message"]["content"][0]["text"] == prompts[9]);
            assert_eq!(compaction["firstKeptEntryId"], first_kept.unwrap()["id"]);
            assert_eq!(compaction["summary"]["goal"], "keep notes.txt in order");
        }
        prompts.push(prompt.clone());
        assert_eq!(sent.len(), 3, "three model calls a turn: {sent:#?}");
        let over = sent
            .iter()
            .filter(|request| request_tokens(request) > BUDGET);
        let over = over.count();
        assert_eq!(
            stderr.matches("single_group_overflow").count(),
            over,
            "each request over the budget is reported: {stderr}"
        );
        overflows += over;
        for request in &sent {
            assert_paired(request);
            let messages = request["messages"].as_array().unwrap();
            assert_eq!(messages[0]["content"], "keep answers short");
            // Whole turns, newest first: the prompts carried are the newest
            // ones, in order, and the last is this turn's.
            let carried = prompts_in(request);
            assert!(prompts.ends_with(&carried), "{carried:?}");
            assert_eq!(carried.last(), Some(&prompt));
            if request_tokens(request) > BUDGET {
                assert_eq!(
                    carried,
                    [prompt.as_str()],
                    "over the budget: one turn alone"
                );
            }
            // Only what does not fit is left out: the turn before the
            // oldest one carried would not have fitted (when there is one
            // that was not compacted away).
            let oldest = prompts
                .iter()
                .position(|prompt| *prompt == carried[0])
                .unwrap();
            let compacted = if turn >= 11 { 9 } else { 0 };
            if oldest > compacted {
                trimmed += 1;
                let with_it = request_tokens(request) + costs[oldest - 1];
                assert!(
                    with_it > BUDGET,
                    "turn {oldest} would have fitted: {request:#}"
                );
            }
            // From the compaction on, its summary leads, and nothing before
            // its first kept turn comes back.
            if turn >= 11 {
                let summary = messages[1]["content"].as_str().unwrap();
                assert!(summary.starts_with("【会话压缩摘要】\n目标：keep notes.txt in order"));
                assert!(prompts[9..].ends_with(&carried), "{carried:?}");
            }
        }
        let last = sent.last().unwrap()["messages"].as_array().unwrap();
        let asked = last
            .iter()
            .rposition(|message| message["content"] == prompt.as_str());
        let answered = json!({ "role": "assistant", "content": format!("done with {prompt}") });
        let turn_messages = last[asked.unwrap()..].iter().chain([&answered]);
        costs.push(turn_messages.map(estimated).sum());
    }
    assert!(trimmed > 25, "the budget trimmed most requests: {trimmed}");
    assert_eq!(overflows, 2, "turn 6's requests after its 3,000 lines");
}

#[test]
fn without_a_session_the_run_is_one_interaction_sent_whole_and_an_overflow_is_said() {
    let folder = TempDir::new("agent-budget-alone-");
    fs::write(folder.0.join("notes.txt"), "keep this in order\n").unwrap();
    let calls = AtomicUsize::new(0);
    let (base_url, requests) = serve_by(move |request| Some(long_session_model(request, &calls)));
    let args = ["--base-url", &base_url, "--model", "m", "--context-tokens"];
    let output = run_agent(
        &folder.0,
        &[&args[..], &["500", "turn 1: 200 lines"]].concat(),
    );

    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let sent: Vec<Value> = requests.try_iter().collect();
    let sizes: Vec<usize> = sent
        .iter()
        .map(|request| request["messages"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [1, 4, 6], "the whole transcript every time");
    let over: Vec<bool> = sent
        .iter()
        .map(|request| request_tokens(request) > 500)
        .collect();
    assert_eq!(over, [false, true, true]);
    assert_eq!(
        stderr.matches("single_group_overflow").count(),
        2,
        "{stderr}"
    );
    sent.iter().for_each(assert_paired);
}

#[test]
fn compact_appends_only_a_summary_the_strict_parser_reads() {
    let folder = TempDir::new("agent-compact-strict-");
    let file = folder.0.join("chat.jsonl");
    let session = file.to_str().unwrap();
    let compact = |answers: Vec<Vec<Value>>, prompt: &str| {
        let (base_url, requests) = serve(answers);
        let args = [
            "--base-url",
            &base_url,
            "--model",
            "m",
            "--session",
            session,
        ];
        let output = run_agent(&folder.0, &[&args[..], &["--compact", prompt]].concat());
        let sent: Vec<Value> = requests.try_iter().collect();
        (output.status.code(), text(&output.stderr), sent.len())
    };
    // Nothing before the newest turn: nothing to compact; the prompt runs.
    let (code, stderr, sent) = compact(vec![answer("one")], "one");
    assert_eq!((code, sent), (Some(0), 1), "{stderr}");
    assert!(stderr.contains("没有新的对话可以压缩"), "{stderr}");
    session_run(&folder.0, &file, vec![answer("two")], &["two"]);
    let before = fs::read(&file).unwrap();

    // An old draft's summary (`files` for `changedFiles`) is refused in the
    // session's words; nothing is appended and the prompt does not run.
    let old = json!({ "goal": "g", "constraints": [], "completed": [], "decisions": [],
        "files": ["a.rs"], "unresolved": [], "next": [] });
    let (code, stderr, sent) = compact(vec![answer(&old.to_string()), answer("x")], "three");
    assert_eq!((code, sent), (Some(1), 1), "{stderr}");
    assert!(
        stderr.contains("压缩失败，会话文件没有改动") && stderr.contains("包含未知字段 files"),
        "{stderr}"
    );
    assert_eq!(fs::read(&file).unwrap(), before);

    // So is an answer with no JSON in it.
    let (code, stderr, _) = compact(vec![answer("I would rather not."), answer("x")], "three");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("没有 JSON 对象"), "{stderr}");
    assert_eq!(fs::read(&file).unwrap(), before);
}

/// The text of the last user message of a request body.
fn last_prompt(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let user = messages
        .iter()
        .rev()
        .find(|message| message["role"] == "user");
    user.and_then(|user| user["content"].as_str())
        .unwrap_or("")
        .to_string()
}

#[test]
fn interactive_mode_keeps_one_conversation_and_ctrl_c_aborts_only_the_running_prompt() {
    let folder = TempDir::new("agent-interactive-");
    let file = folder.0.join("chat.jsonl");
    // "stall" gets one delta, then nothing until the client hangs up.
    let (base_url, requests) = serve_by(|request| {
        let prompt = last_prompt(request);
        let delta = json!({ "choices": [{ "index": 0, "delta": { "content": "part" } }] });
        Some(match prompt.as_str() {
            "stall" => vec![delta, json!("hold")],
            prompt => answer(&format!("answer to {prompt}")),
        })
    });
    let session = file.to_str().unwrap();
    let args = [
        "--base-url",
        &base_url,
        "--model",
        "m",
        "--session",
        session,
    ];
    let mut child = Command::new(agent())
        .args(args)
        .args(["--idle-timeout", "30", "--mode", "interactive"])
        .current_dir(&folder.0)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());

    stdin.write_all(b"first\n").unwrap();
    assert_eq!(read_until(&mut stdout, "\n"), "answer to first\n");
    stdin.write_all(b"stall\n").unwrap();
    let asked = [(); 2].map(|_| requests.recv_timeout(Duration::from_secs(20)).unwrap());
    assert_eq!(
        asked.map(|request| last_prompt(&request)),
        ["first", "stall"]
    );
    interrupt(&child);
    // The aborted run is saved; the partial answer is its text.
    assert_eq!(read_until(&mut stdout, "\n"), "part\n");
    stdin.write_all(b"third\n").unwrap();
    assert_eq!(read_until(&mut stdout, "\n"), "answer to third\n");
    drop(stdin); // Ctrl-D

    let (code, rest, stderr) = wait_for_end(child, stdout);
    assert_eq!((code, rest.as_str()), (Some(0), ""), "{stderr}");
    assert!(
        stderr.contains("—— 运行结束：aborted，1 次模型调用"),
        "{stderr}"
    );
    let third = requests.try_iter().last().unwrap();
    let prompts: Vec<&str> = (third["messages"].as_array().unwrap().iter())
        .filter(|message| message["role"] == "user")
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["first", "stall", "third"], "one conversation");
    let entries = session_lines(&file);
    assert_eq!(
        roles(&entries),
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(entries[3]["message"]["stopReason"], "aborted");
}

#[test]
fn interactive_mode_skips_a_line_that_is_not_utf8_and_ends_on_eof_with_a_newline() {
    let folder = TempDir::new("agent-interactive-bytes-");
    let (base_url, requests) =
        serve_by(|request| Some(answer(&format!("answer to {}", last_prompt(request)))));
    let mut child = Command::new(agent())
        .args([
            "--base-url",
            &base_url,
            "--model",
            "m",
            "--mode",
            "interactive",
        ])
        .current_dir(&folder.0)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A GBK line, then a UTF-8 one; stdin ends without a newline.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"\xc4\xe3\xba\xc3\nsecond\nthird").unwrap();
    drop(stdin);
    let stdout = child.stdout.take().unwrap();
    let (code, rest, stderr) = wait_for_end(child, stdout);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(rest, "answer to second\nanswer to third\n");
    assert!(
        stderr.contains("这一行不是 UTF-8 文本，没有发送"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("> \n"),
        "Ctrl-D ends the prompt's line: {stderr:?}"
    );
    let prompts: Vec<String> = requests
        .try_iter()
        .map(|request| last_prompt(&request))
        .collect();
    assert_eq!(prompts, ["second", "third"]);
}

#[test]
fn help_says_the_prompt_may_be_left_out_and_explains_every_flag() {
    let folder = TempDir::new("agent-help-");
    let output = run_agent(&folder.0, &["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout);
    assert!(help.contains("[--] [PROMPT]"), "{help}");
    for flag in [
        "--max-steps N：",
        "--unrestricted：",
        "--mode：",
        "--session FILE：",
    ] {
        assert!(help.contains(flag), "{flag} is not explained: {help}");
    }
}

#[test]
fn everything_after_a_double_dash_is_the_prompt() {
    let folder = TempDir::new("agent-dash-");
    let (base_url, requests) = serve(vec![answer("ok")]);
    let output = run_agent(
        &folder.0,
        &[
            "--base-url",
            &base_url,
            "--model",
            "m",
            "--",
            "--what",
            "is",
            "-x",
            "--unrestricted",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        last_prompt(&requests.try_iter().next().unwrap()),
        "--what is -x --unrestricted"
    );
    assert!(
        !text(&output.stderr).contains("--unrestricted："),
        "a switch after `--` is the prompt's word, not a switch"
    );
}

#[test]
fn interactive_mode_ends_with_130_on_two_ctrl_c_at_the_prompt() {
    let (base_url, _requests) = serve(Vec::new());
    let mut child = Command::new(agent())
        .args(["--base-url", &base_url, "--model", "m"])
        .current_dir(workspace())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    read_until(&mut stderr, "交互模式"); // no PROMPT: interactive
    interrupt(&child);
    // The first press at the prompt is answered, not met with silence
    // (read on a thread: a program that says nothing must fail the test,
    // not hang it).
    let (said, heard) = mpsc::channel();
    thread::spawn(move || {
        let _ = said.send(read_until(&mut stderr, "再按一次 Ctrl-C 退出"));
    });
    let heard = heard.recv_timeout(Duration::from_secs(20));
    interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(heard.is_ok(), "the first Ctrl-C at the prompt said nothing");
}

#[test]
fn json_mode_writes_each_event_as_a_line_and_the_run_last() {
    let (base_url, _requests) = serve(vec![answer("hello")]);
    // A folder without an AGENTS.md: messages[1] is the answer.
    let folder = TempDir::new("agent-json-");
    let output = run_agent(
        &folder.0,
        &[
            "--base-url",
            &base_url,
            "--model",
            "m",
            "--mode",
            "json",
            "hi",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lines: Vec<Value> = (text(&output.stdout).lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let (run, events) = lines.split_last().unwrap();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "model_event",
            "model_event",
            "model_event",
            "assistant_message",
            "turn_end"
        ]
    );
    let keys: Vec<&String> = run.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["reason", "steps", "messages"]);
    assert_eq!(run["messages"][1]["content"][0]["text"], "hello");

    for (args, said) in [
        (&["--mode", "rpc", "hi"][..], "未知 runtime mode：rpc"),
        (
            &["--mode", "print", "--json", "hi"][..],
            "--json 就是 --mode json",
        ),
        (&["--mode", "print"][..], "缺少 PROMPT"),
        (&["--leaf", "x", "hi"][..], "要和 --session FILE 一起用"),
    ] {
        let output = run_agent(&workspace(), args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            text(&output.stderr).contains(said),
            "{}",
            text(&output.stderr)
        );
    }
}

#[test]
fn leaf_continues_an_earlier_entry_as_a_branch() {
    let folder = TempDir::new("agent-session-leaf-");
    let file = folder.0.join("chat.jsonl");
    session_run(&folder.0, &file, vec![answer("A1")], &["one"]);
    session_run(&folder.0, &file, vec![answer("A2")], &["two"]);
    let first_answer = session_lines(&file)[1]["id"].as_str().unwrap().to_string();

    let (_, _, requests) = session_run(
        &folder.0,
        &file,
        vec![answer("B2")],
        &["--leaf", &first_answer, "other two"],
    );

    assert_eq!(
        said(&requests[0]),
        pairs(&[("user", "one"), ("assistant", "A1"), ("user", "other two")])
    );
    let written = fs::read_to_string(&file).unwrap();
    let entries: Vec<Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 6);
    assert_eq!(entries[4]["parentId"], first_answer.as_str(), "a branch");
    assert_eq!(entries[5]["parentId"], entries[4]["id"]);

    let (base_url, requests) = serve(vec![answer("never")]);
    let args = ["--base-url", &base_url, "--model", "m", "--session"];
    let output = run_agent(
        &folder.0,
        &[&args[..], &[file.to_str().unwrap(), "--leaf", "nope", "hi"]].concat(),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("nope"),
        "{}",
        text(&output.stderr)
    );
    assert!(requests.try_recv().is_err(), "no model call");
}
