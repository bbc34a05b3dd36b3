//! The `agent` example's resources (chapter 12, through chapter 13's
//! runtime) as a user meets them: the built binary run in a temporary
//! workspace holding an `AGENTS.md` and a skill, against a server this test
//! starts on 127.0.0.1 that records the request bodies it gets, so each
//! test reads the system prompt the model was sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Mutex, OnceLock};
use std::{fs, thread};

use serde_json::{Value, json};

/// The built `agent` example, built once (`cargo test` of one test file
/// does not build examples); cargo names its path.
fn agent() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let output = Command::new(cargo)
            .args(["build", "-p", "course", "--example", "agent"])
            .arg("--message-format=json")
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

/// A fresh folder under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let number = COUNT.fetch_add(1, Ordering::SeqCst);
        let name = format!("agent-resources-{prefix}-{}-{number}", std::process::id());
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

const RULES: &str = "这个项目的规则：回答用中文。";
const SKILL_BODY: &str = "REVIEW BODY: read the diff first.";

/// A workspace with an `AGENTS.md` and one skill, `review`.
fn workspace(prefix: &str) -> TempDir {
    let folder = TempDir::new(prefix);
    fs::write(folder.0.join("AGENTS.md"), format!("{RULES}\n")).unwrap();
    let skill = folder.0.join("skills/review");
    fs::create_dir_all(&skill).unwrap();
    let front = "---\nname: review\ndescription: review one change\n---\n";
    fs::write(skill.join("SKILL.md"), format!("{front}\n{SKILL_BODY}\n")).unwrap();
    folder
}

/// A server that answers each request with the next of `answers` (a
/// request beyond them is the last it reads) and hands over each body.
fn serve(answers: Vec<Vec<Value>>) -> (String, Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (sender, requests) = mpsc::channel();
    let answers = Mutex::new(answers.into_iter());
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
            let _ = sender.send(serde_json::from_slice(&body).unwrap());
            let Some(payloads) = answers.lock().unwrap().next() else {
                return;
            };
            let mut bytes =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                    .to_vec();
            for payload in payloads {
                bytes.extend_from_slice(format!("data: {payload}\n\n").as_bytes());
            }
            let _ = connection.write_all(&bytes);
        }
    });
    (base_url, requests)
}

fn answer(text: &str) -> Vec<Value> {
    vec![
        json!({ "choices": [{ "index": 0, "delta": { "content": text } }] }),
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }),
    ]
}

/// One run of `agent` in `folder` with `args` before the prompt, against a
/// server that answers once: its output and the requests the server got.
fn run(folder: &Path, args: &[&str]) -> (Output, Vec<Value>) {
    let (base_url, requests) = serve(vec![answer("好的。")]);
    let output = Command::new(agent())
        .args(["--base-url", &base_url, "--model", "m"])
        .args(args)
        .arg("看一下这个项目")
        .current_dir(folder)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("agent runs");
    (output, requests.try_iter().collect())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The system prompt of a request body: its leading system message's text.
fn system_prompt(request: &Value) -> Option<String> {
    let first = &request["messages"][0];
    (first["role"] == "system").then(|| first["content"].as_str().unwrap().to_string())
}

/// The section the chapter's `format_resource_context` writes for the
/// workspace of [`workspace`]: the instructions and the skill catalog,
/// without the skill's body.
fn section() -> String {
    let parts = [
        "# Pi resources",
        "## AGENTS instructions",
        RULES,
        "## 可用 skills",
        "- review: review one change",
    ];
    parts.join("\n\n")
}

#[test]
fn agents_md_and_the_skill_catalog_reach_the_model_after_the_base_prompt() {
    let folder = workspace("catalog");
    let (output, requests) = run(&folder.0, &["--system", "BASE PROMPT"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(requests.len(), 1);
    let prompt = system_prompt(&requests[0]).unwrap();
    assert_eq!(prompt, format!("BASE PROMPT\n\n{}", section()));
    assert!(
        !prompt.contains("REVIEW BODY"),
        "an inactive skill has no body"
    );
    let said = requests[0]["messages"].as_array().unwrap();
    let roles: Vec<&str> = said.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user"], "one system message, leading");
    for expected in [
        "已载入资源",
        "AGENTS.md",
        "skills 目录 review",
        "pi-resources",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
}

#[test]
fn no_resources_leaves_them_out() {
    let folder = workspace("none");
    let (output, requests) = run(&folder.0, &["--no-resources", "--system", "BASE"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(system_prompt(&requests[0]).as_deref(), Some("BASE"));
    assert!(stderr.contains("--no-resources"), "{stderr}");
    assert!(!stderr.contains("已载入资源"), "{stderr}");

    let (output, requests) = run(&folder.0, &["--no-resources"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        system_prompt(&requests[0]),
        None,
        "no system message at all"
    );
}

#[test]
fn a_folder_without_resources_sends_no_section_and_says_nothing_of_them() {
    let folder = TempDir::new("empty");
    let (output, requests) = run(&folder.0, &[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(system_prompt(&requests[0]), None);
    assert!(!stderr.contains("资源"), "{stderr}");
}

/// Makes a bad resource in a folder (the first path); the second is
/// outside it.
type Make = fn(&Path, &Path);

#[test]
fn a_resource_that_cannot_be_read_is_named_before_any_model_call() {
    let outside = TempDir::new("outside");
    fs::write(outside.0.join("AGENTS.md"), "SECRET RULES").unwrap();
    let cases: [(&str, Make, &str); 4] = [
        (
            "non-utf8",
            |folder, _| fs::write(folder.join("AGENTS.md"), b"rules \xff\xfe").unwrap(),
            "AGENTS.md 不是 UTF-8 文本",
        ),
        (
            "folder",
            |folder, _| fs::create_dir(folder.join("AGENTS.md")).unwrap(),
            "AGENTS.md 不是普通文件",
        ),
        (
            "escape",
            |folder, outside| symlink(outside.join("AGENTS.md"), folder.join("AGENTS.md")).unwrap(),
            "AGENTS.md 逃出了声明 root",
        ),
        (
            "front-matter",
            |folder, _| {
                let skill = folder.join("skills/broken");
                fs::create_dir_all(&skill).unwrap();
                fs::write(skill.join("SKILL.md"), "no front matter\n").unwrap();
            },
            "缺少 YAML frontmatter",
        ),
    ];
    for (name, make, expected) in cases {
        let folder = TempDir::new(name);
        make(&folder.0, &outside.0);
        let (output, requests) = run(&folder.0, &[]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(expected), "{name}: {expected}\n{stderr}");
        assert!(stderr.contains("--no-resources"), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(requests.is_empty(), "{name}: no model call");

        let (output, requests) = run(&folder.0, &["--no-resources"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            text(&output.stderr)
        );
        assert_eq!(
            requests.len(),
            1,
            "{name}: --no-resources runs without them"
        );
    }
}

/// The roles of the session file's entries, one per line.
fn session_roles(file: &Path) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap();
    let entries = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap());
    entries
        .map(|entry| entry["message"]["role"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_resumed_session_is_patched_only_when_the_resources_change() {
    let folder = workspace("session");
    let file = folder.0.join("chat.jsonl");
    let session = ["--session", file.to_str().unwrap()];

    let (output, requests) = run(&folder.0, &session);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(system_prompt(&requests[0]).unwrap(), section());
    assert_eq!(session_roles(&file), ["system", "user", "assistant"]);
    let first: Value =
        serde_json::from_str(fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(first["message"]["sections"]["pi-resources"], section());

    // The same resources: the session's section stands, nothing is added.
    let (output, requests) = run(&folder.0, &session);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(system_prompt(&requests[0]).unwrap(), section());
    let roles = ["system", "user", "assistant", "user", "assistant"];
    assert_eq!(session_roles(&file), roles);

    // Changed rules: one system patch replaces the section by name.
    fs::write(folder.0.join("AGENTS.md"), "NEW RULES").unwrap();
    let (output, requests) = run(&folder.0, &session);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let prompt = system_prompt(&requests[0]).unwrap();
    assert_eq!(prompt, section().replace(RULES, "NEW RULES"));
    assert_eq!(session_roles(&file)[5..], ["system", "user", "assistant"]);

    // --no-resources takes the section out of what the model reads.
    let (output, requests) = run(&folder.0, &[&session[..], &["--no-resources"]].concat());
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("原有的资源段落这次移除"), "{stderr}");
    assert_eq!(system_prompt(&requests[0]), None);
    assert_eq!(session_roles(&file)[8..], ["system", "user", "assistant"]);
}

#[test]
fn a_session_begun_without_resources_gets_the_whole_section_when_they_appear() {
    let folder = TempDir::new("later");
    let file = folder.0.join("chat.jsonl");
    let session = ["--session", file.to_str().unwrap()];

    let (output, requests) = run(&folder.0, &session);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(system_prompt(&requests[0]), None);
    assert_eq!(session_roles(&file), ["user", "assistant"]);

    let resources = workspace("later-resources");
    for name in ["AGENTS.md", "skills"] {
        fs::rename(resources.0.join(name), folder.0.join(name)).unwrap();
    }
    let (output, requests) = run(&folder.0, &session);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(system_prompt(&requests[0]).unwrap(), section());
    let said = requests[0]["messages"].as_array().unwrap();
    let roles: Vec<&str> = said.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(
        session_roles(&file),
        ["user", "assistant", "system", "user", "assistant"]
    );
}
