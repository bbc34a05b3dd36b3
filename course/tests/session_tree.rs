//! Chapter 10's focused test: the session tree, fifteen tests ported one for
//! one from the original course.
//!
//! Steps filter them by lab: `lab10_1` (2 tests), `lab10_2` (3), `lab10_3`
//! (2), `lab10_4` (3), `lab10_5` (3), `lab10_6` (2); no filter runs all 15.
//!
//! Where the original checks that a result shares nothing with its input,
//! Rust already guarantees it (an owned result, a borrowed input): those
//! assertions stay and cannot fail. Appends block and take `&mut self`, so
//! "a second append called while the first is still writing" cannot be
//! written; the tests run the calls one after the other instead, and the
//! file writes are gated with channels, never with sleeps.

use std::io;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use course::session::{
    EntryKind, InMemorySessionStore, JsonlSessionStore, SessionEntry, SessionError, SessionFileIo,
    SessionStore, SessionWarning, messages_on_path, parse_session_entry, path_to, recover_jsonl,
};
use course::types::{
    AgentMessage, AssistantContent, AssistantMessage, StopReason, ToolCall, ToolResultMessage,
    assistant_message, text, text_of, user_message,
};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(3);

fn message_entry(id: &str, parent_id: Option<&str>, message: AgentMessage) -> SessionEntry {
    SessionEntry {
        id: id.to_string(),
        parent_id: parent_id.map(str::to_string),
        timestamp: 1,
        kind: EntryKind::Message { message },
    }
}

fn metadata_entry(id: &str, parent_id: Option<&str>, key: &str, value: Value) -> SessionEntry {
    SessionEntry {
        id: id.to_string(),
        parent_id: parent_id.map(str::to_string),
        timestamp: 1,
        kind: EntryKind::Metadata {
            key: key.to_string(),
            value,
        },
    }
}

fn user(value: &str) -> AgentMessage {
    AgentMessage::User(user_message(value))
}

fn assistant(
    content: Vec<AssistantContent>,
    stop_reason: StopReason,
    timestamp: u64,
) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        timestamp,
        ..assistant_message(content, stop_reason)
    })
}

fn assistant_text(value: &str) -> AgentMessage {
    AgentMessage::Assistant(assistant_message(
        vec![text(value).into()],
        StopReason::Stop,
    ))
}

/// Committed lines: each entry's JSON and a `\n`.
fn committed(entries: &[&SessionEntry]) -> String {
    let lines: Vec<String> = entries
        .iter()
        .map(|entry| serde_json::to_string(entry).unwrap())
        .collect();
    format!("{}\n", lines.join("\n"))
}

fn ids(entries: &[SessionEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.id.as_str()).collect()
}

/// The text of the first block of a user-message entry.
fn first_text(entry: &SessionEntry) -> &str {
    match &entry.kind {
        EntryKind::Message {
            message: AgentMessage::User(message),
        } => &message.content[0].text,
        other => panic!("应该是 user message entry：{other:?}"),
    }
}

fn set_first_text(entry: &mut SessionEntry, value: &str) {
    match &mut entry.kind {
        EntryKind::Message {
            message: AgentMessage::User(message),
        } => message.content[0].text = value.to_string(),
        other => panic!("应该是 user message entry：{other:?}"),
    }
}

fn metadata_value(entry: &SessionEntry) -> &Value {
    match &entry.kind {
        EntryKind::Metadata { value, .. } => value,
        other => panic!("应该是 metadata entry：{other:?}"),
    }
}

fn metadata_value_mut(entry: &mut SessionEntry) -> &mut Value {
    match &mut entry.kind {
        EntryKind::Metadata { value, .. } => value,
        other => panic!("应该是 metadata entry：{other:?}"),
    }
}

/// The error's text contains each piece, in order (the original's `/a.*b/`).
fn assert_mentions<T>(result: Result<T, SessionError>, pieces: &[&str]) {
    let Err(error) = result else {
        panic!("预期失败，但它成功了");
    };
    let error = error.to_string();
    let mut rest = error.as_str();
    for piece in pieces {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => panic!("错误 {error:?} 应该依次提到 {pieces:?}"),
        }
    }
}

/// A file in memory that counts its calls; `on_append` replaces the
/// default append (add the text to the file) so a test can hold a write or
/// make it fail.
#[derive(Clone, Default)]
struct MemoryFileIo(Arc<Mutex<MemoryFile>>);

type OnAppend = Arc<dyn Fn(&MemoryFileIo, &str, usize) -> io::Result<()> + Send + Sync>;

#[derive(Default)]
struct MemoryFile {
    value: String,
    ensure_calls: usize,
    read_calls: usize,
    append_calls: Vec<String>,
    on_append: Option<OnAppend>,
}

impl MemoryFileIo {
    fn with_value(value: String) -> Self {
        let io = MemoryFileIo::default();
        io.file().value = value;
        io
    }

    fn file(&self) -> MutexGuard<'_, MemoryFile> {
        self.0.lock().unwrap()
    }

    fn value(&self) -> String {
        self.file().value.clone()
    }

    fn push(&self, value: &str) {
        self.file().value.push_str(value);
    }

    fn append_count(&self) -> usize {
        self.file().append_calls.len()
    }

    fn on_append(
        &self,
        hook: impl Fn(&MemoryFileIo, &str, usize) -> io::Result<()> + Send + Sync + 'static,
    ) {
        self.file().on_append = Some(Arc::new(hook));
    }
}

impl SessionFileIo for MemoryFileIo {
    fn ensure_file(&self, _file: &std::path::Path) -> io::Result<()> {
        self.file().ensure_calls += 1;
        Ok(())
    }

    fn read_file(&self, _file: &std::path::Path) -> io::Result<String> {
        let mut file = self.file();
        file.read_calls += 1;
        Ok(file.value.clone())
    }

    fn append_file(&self, _file: &std::path::Path, value: &str) -> io::Result<()> {
        let (call_index, hook) = {
            let mut file = self.file();
            file.append_calls.push(value.to_string());
            (file.append_calls.len() - 1, file.on_append.clone())
        };
        match hook {
            Some(hook) => hook(self, value, call_index),
            None => {
                self.push(value);
                Ok(())
            }
        }
    }
}

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("course-session-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn lab10_1_path_to_picks_a_branch_and_checks_only_the_chosen_chain() {
    let entries = vec![
        message_entry("root", None, user("root")),
        message_entry("left", Some("root"), assistant_text("left")),
        message_entry("right", Some("root"), assistant_text("right")),
        message_entry("other-root", None, user("other")),
        message_entry("unselected-broken", Some("missing"), user("later")),
    ];

    assert_eq!(ids(&path_to(&entries, "left").unwrap()), ["root", "left"]);
    assert_eq!(ids(&path_to(&entries, "right").unwrap()), ["root", "right"]);
    assert_mentions(path_to(&entries, "unknown-leaf"), &["unknown-leaf"]);
    assert_mentions(
        path_to(
            &[message_entry("child", Some("missing-parent"), user("x"))],
            "child",
        ),
        &["child", "missing-parent"],
    );
    let cycle = path_to(
        &[
            message_entry("cycle-a", Some("cycle-b"), user("a")),
            message_entry("cycle-b", Some("cycle-a"), user("b")),
        ],
        "cycle-a",
    )
    .expect_err("环应该失败")
    .to_string();
    assert!(
        cycle.contains("cycle-a") || cycle.contains("cycle-b"),
        "{cycle}"
    );
}

#[test]
fn lab10_1_path_to_refuses_duplicate_ids_anywhere_and_returns_copies() {
    let root = message_entry("root", None, user("before"));
    let leaf = metadata_entry("leaf", Some("root"), "mode", json!({"nested": ["safe"]}));
    let mut entries = vec![root, leaf];
    let mut selected = path_to(&entries, "leaf").unwrap();

    set_first_text(&mut entries[0], "source changed");
    assert!(matches!(selected[0].kind, EntryKind::Message { .. }));
    assert_eq!(first_text(&selected[0]), "before");
    metadata_value_mut(&mut selected[1])["nested"][0] = json!("result changed");
    assert_eq!(metadata_value(&entries[1]), &json!({"nested": ["safe"]}));

    entries.push(message_entry("duplicate", None, user("one")));
    entries.push(metadata_entry("duplicate", None, "branch", json!(true)));
    assert_mentions(path_to(&entries, "leaf"), &["duplicate"]);
}

#[test]
fn lab10_2_parse_narrows_both_entry_kinds_and_copies_the_payload() {
    let arguments = json!({"path": "a.txt", "flags": [true, null]});
    let call = ToolCall {
        id: "call-1".to_string(),
        name: "read".to_string(),
        arguments: arguments.clone(),
        raw_arguments: Some(r#"{"path":"a.txt"}"#.to_string()),
    };
    let source = message_entry(
        "assistant",
        None,
        assistant(
            vec![text("checking").into(), call.into()],
            StopReason::ToolUse,
            2,
        ),
    );
    let parsed = parse_session_entry(&serde_json::to_value(&source).unwrap()).unwrap();
    assert_eq!(parsed, source);
    let EntryKind::Message {
        message: AgentMessage::Assistant(message),
    } = &parsed.kind
    else {
        panic!("应该收窄成 assistant message entry");
    };
    let AssistantContent::ToolCall(parsed_call) = &message.content[1] else {
        panic!("第二块应该是 toolCall");
    };
    assert_eq!(parsed_call.arguments, arguments);

    let metadata = metadata_entry("meta", None, "settings", json!({"nested": {"count": 2}}));
    let parsed_metadata = parse_session_entry(&serde_json::to_value(&metadata).unwrap()).unwrap();
    assert_eq!(parsed_metadata, metadata);
}

#[test]
fn lab10_2_parse_accepts_system_messages_and_checks_sections() {
    let base: SessionEntry = serde_json::from_value(json!({
        "id": "system", "parentId": null, "timestamp": 1, "type": "message",
        "message": {"role": "system", "content": "You are Pi.",
                    "sections": {"rules": "RULE v1", "scratch": "SCRATCH"}, "timestamp": 0}
    }))
    .unwrap();
    let parsed = parse_session_entry(&serde_json::to_value(&base).unwrap()).unwrap();
    assert_eq!(parsed, base);

    let patch = json!({
        "id": "patch", "parentId": "system", "timestamp": 1, "type": "message",
        "message": {"role": "system", "content": "",
                    "sections": {"rules": "RULE v2", "scratch": null}, "timestamp": 2}
    });
    let parsed_patch = parse_session_entry(&patch).unwrap();
    assert_eq!(
        serde_json::to_value(&parsed_patch).unwrap(),
        patch,
        "null 段落值是删除指令，必须原样保留"
    );

    let plain = json!({
        "id": "plain", "parentId": "patch", "timestamp": 1, "type": "message",
        "message": {"role": "system", "content": "no sections", "timestamp": 3}
    });
    let parsed_plain = parse_session_entry(&plain).unwrap();
    assert_eq!(serde_json::to_value(&parsed_plain).unwrap(), plain);
    let EntryKind::Message {
        message: AgentMessage::System(system),
    } = &parsed_plain.kind
    else {
        panic!("应该收窄成 system message entry");
    };
    assert_eq!(system.sections, None, "没有 sections 时不补空对象");
}

#[test]
fn lab10_2_parse_refuses_unknown_shapes_and_values_json_cannot_hold() {
    // Rust has no `unknown` object: untyped data arrives as JSON text. So
    // each case is a text, read with serde_json and then parse_session_entry.
    // The original's JavaScript-only values are written the way a text can
    // hold them: NaN as JSON.stringify writes it (`null`); Infinity as the
    // only JSON that reads as Infinity (`1e999`, which serde_json refuses as
    // out of range); a function or a BigInt, which neither JSON nor a Rust
    // `Value` can hold, as the token itself, refused before any entry is built.
    let entry = |extra: &str| {
        format!(r#"{{"id":"x","parentId":null,"timestamp":1,"type":"message",{extra}}}"#)
    };
    let user_x =
        r#""message":{"role":"user","content":[{"type":"text","text":"x"}],"timestamp":1}"#;
    let assistant_with = |content: &str, usage: &str| {
        format!(
            r#""message":{{"role":"assistant","content":[{content}],"provider":"scripted","model":"scripted-v1","usage":{usage},"stopReason":"stop","timestamp":1}}"#
        )
    };
    let usage = r#"{"input":1,"output":1,"totalTokens":2}"#;
    let invalid_values: Vec<(&str, String)> = vec![
        ("array", "[]".to_string()),
        ("empty id", entry(user_x).replacen(r#""id":"x""#, r#""id":"""#, 1)),
        ("NaN timestamp", entry(user_x).replacen(r#""timestamp":1,"type""#, r#""timestamp":null,"type""#, 1)),
        ("Infinity timestamp", entry(user_x).replacen(r#""timestamp":1,"type""#, r#""timestamp":1e999,"type""#, 1)),
        (
            "unknown type",
            r#"{"id":"x","parentId":null,"timestamp":1,"type":"compaction","summary":{}}"#.to_string(),
        ),
        (
            "missing message payload",
            r#"{"id":"x","parentId":null,"timestamp":1,"type":"message"}"#.to_string(),
        ),
        ("unknown nested role", entry(r#""message":{"role":"tool","content":[],"timestamp":1}"#)),
        ("system content not string", entry(r#""message":{"role":"system","content":[],"timestamp":1}"#)),
        (
            "system sections not object",
            entry(r#""message":{"role":"system","content":"base","sections":["rules"],"timestamp":1}"#),
        ),
        (
            "system section value not string or null",
            entry(r#""message":{"role":"system","content":"base","sections":{"rules":7},"timestamp":1}"#),
        ),
        (
            "system unknown field",
            entry(r#""message":{"role":"system","content":"base","toolsAdded":[],"timestamp":1}"#),
        ),
        (
            "unknown nested field",
            entry(r#""message":{"role":"user","content":[{"type":"text","text":"x"}],"timestamp":1,"silentlyDropped":true}"#),
        ),
        (
            "unknown content block",
            entry(r#""message":{"role":"user","content":[{"type":"image","url":"secret"}],"timestamp":1}"#),
        ),
        (
            "NaN usage",
            entry(&assistant_with(r#"{"type":"text","text":"x"}"#, r#"{"input":1,"output":1,"totalTokens":null}"#)),
        ),
        (
            "function arguments",
            entry(&assistant_with(
                r#"{"type":"toolCall","id":"call","name":"run","arguments":{"callback":() => "lost"}}"#,
                usage,
            )),
        ),
        (
            "Infinity details",
            entry(r#""message":{"role":"toolResult","toolCallId":"call","toolName":"run","content":[{"type":"text","text":"done"}],"details":{"duration":1e999},"isError":false,"timestamp":1}"#),
        ),
        (
            "undefined metadata",
            r#"{"id":"x","parentId":null,"timestamp":1,"type":"metadata","key":"bad"}"#.to_string(),
        ),
        (
            "BigInt metadata",
            r#"{"id":"x","parentId":null,"timestamp":1,"type":"metadata","key":"bad","value":{"count":1n}}"#.to_string(),
        ),
        (
            "unknown field",
            r#"{"id":"x","parentId":null,"timestamp":1,"type":"metadata","key":"ok","value":true,"ignoredByJson":"must reject"}"#.to_string(),
        ),
    ];

    for (label, value) in invalid_values {
        let parsed = serde_json::from_str::<Value>(&value)
            .map_err(|error| error.to_string())
            .and_then(|value| parse_session_entry(&value).map_err(|error| error.to_string()));
        match parsed {
            Err(error) => assert!(!error.is_empty(), "{label} 的错误不应为空"),
            Ok(entry) => panic!("{label} 不应通过运行时边界：{entry:?}"),
        }
    }
}

#[test]
fn lab10_3_in_memory_append_copies_at_the_call_and_commits_in_order() {
    let mut store = InMemorySessionStore::default();
    let mut root = message_entry("root", None, user("original"));
    let mut child = metadata_entry("child", Some("root"), "mode", json!({"value": "original"}));
    let mut settled = Vec::new();

    store.append(&root).unwrap();
    settled.push("root");
    set_first_text(&mut root, "mutated too late");
    store.append(&child).unwrap();
    settled.push("child");
    child.id = "mutated-child".to_string();
    metadata_value_mut(&mut child)["value"] = json!("mutated too late");

    assert_eq!(settled, ["root", "child"]);
    let mut first_read = store.entries().unwrap();
    assert_eq!(ids(&first_read), ["root", "child"]);
    assert_eq!(first_text(&first_read[0]), "original");
    set_first_text(&mut first_read[0], "mutated read");
    assert_eq!(
        metadata_value(&first_read[1]),
        &json!({"value": "original"})
    );
    let second_read = store.entries().unwrap();
    assert_eq!(first_text(&second_read[0]), "original");
}

#[test]
fn lab10_3_in_memory_refuses_a_missing_parent_and_a_duplicate_id_and_goes_on() {
    let mut store = InMemorySessionStore::default();
    assert_mentions(
        store.append(&message_entry("child", Some("missing"), user("x"))),
        &["child", "missing"],
    );
    // The original appends a value JSON cannot hold (a function); a Rust
    // `Value` cannot hold one, so the entry refused at the call here is one
    // with an empty key.
    assert_mentions(
        store.append(&metadata_entry("bad-json", None, "", Value::Null)),
        &["必须"],
    );

    store
        .append(&message_entry("root", None, user("root")))
        .unwrap();
    assert_mentions(
        store.append(&metadata_entry("root", None, "duplicate", json!(true))),
        &["root"],
    );
    store
        .append(&metadata_entry("other-root", None, "ok", json!(true)))
        .unwrap();
    assert_eq!(ids(&store.entries().unwrap()), ["root", "other-root"]);
}

#[test]
fn lab10_4_recover_reads_committed_lines_and_skips_blank_ones() {
    let root = message_entry("root", None, user("root"));
    let child = metadata_entry("child", Some("root"), "mode", json!("test"));
    let recovered = recover_jsonl(&format!(
        "\n{}\n   \n{}\n\n",
        serde_json::to_string(&root).unwrap(),
        serde_json::to_string(&child).unwrap()
    ))
    .unwrap();

    assert_eq!(ids(&recovered.entries), ["root", "child"]);
    assert_eq!(recovered.warnings, []);
}

#[test]
fn lab10_4_recover_treats_any_tail_without_newline_as_uncommitted() {
    let root = message_entry("root", None, user("root"));
    let valid_tail = metadata_entry("tail", Some("root"), "mode", json!("valid"));
    let prefixes = [
        serde_json::to_string(&valid_tail).unwrap(),
        serde_json::to_string(&json!({"id": "schema-invalid"})).unwrap(),
        r#"{"id":"#.to_string(),
    ];

    for tail in prefixes {
        let recovered = recover_jsonl(&format!("{}{tail}", committed(&[&root]))).unwrap();
        assert_eq!(ids(&recovered.entries), ["root"]);
        assert_eq!(
            recovered.warnings,
            [SessionWarning::UnterminatedTail { line: 2 }]
        );
    }
}

#[test]
fn lab10_4_recover_names_the_physical_line_of_a_committed_bad_line() {
    let root = message_entry("root", None, user("root"));
    assert_mentions(
        recover_jsonl(&format!("{}BAD\n", committed(&[&root]))),
        &["第 2 行", "JSON"],
    );
    assert_mentions(
        recover_jsonl(&format!(
            "{}{}\n",
            committed(&[&root]),
            json!({"id": "bad"})
        )),
        &["第 2 行", "session entry"],
    );
}

#[test]
fn lab10_5_jsonl_append_keeps_the_old_bytes_and_reopens() {
    let root_directory = TempDir::new("reopen");
    let file = root_directory.0.join("session").join("run.jsonl");

    let root = message_entry("root", None, user("root"));
    let mut store = JsonlSessionStore::open(&file).unwrap();
    store.append(&root).unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    assert_mentions(
        store.append(&message_entry("orphan", Some("missing"), user("orphan"))),
        &["orphan", "missing"],
    );
    assert_mentions(
        store.append(&metadata_entry("root", None, "duplicate", json!(true))),
        &["root"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    store
        .append(&message_entry(
            "answer",
            Some("root"),
            assistant_text("answer"),
        ))
        .unwrap();
    let after = std::fs::read_to_string(&file).unwrap();
    assert_eq!(&after[..before.len()], before);
    assert!(after.ends_with('\n'));

    let reopened = JsonlSessionStore::open(&file).unwrap();
    assert_eq!(ids(&reopened.entries().unwrap()), ["root", "answer"]);
    assert_eq!(reopened.read().unwrap().warnings, []);

    let invalid_schema_io = MemoryFileIo::with_value(format!("{}\n", json!({"id": "bad"})));
    assert_mentions(
        JsonlSessionStore::open_with("invalid-schema.jsonl", Box::new(invalid_schema_io)),
        &["第 1 行", "session entry"],
    );
    let missing_parent_io = MemoryFileIo::with_value(committed(&[&message_entry(
        "orphan-on-disk",
        Some("missing-on-disk"),
        user("x"),
    )]));
    assert_mentions(
        JsonlSessionStore::open_with("missing-parent.jsonl", Box::new(missing_parent_io)),
        &["orphan-on-disk", "missing-on-disk"],
    );
}

#[test]
fn lab10_5_jsonl_serializes_at_the_call_and_writes_in_call_order() {
    let io = MemoryFileIo::default();
    let (first_started, started) = mpsc::channel();
    let (release_first, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    io.on_append(move |io, value, call_index| {
        if call_index == 0 {
            first_started.send(()).unwrap();
            released.lock().unwrap().recv().unwrap();
        }
        io.push(value);
        Ok(())
    });
    let mut store = JsonlSessionStore::open_with("memory.jsonl", Box::new(io.clone())).unwrap();
    let mut root = message_entry("root", None, user("before"));
    let mut child = metadata_entry("child", Some("root"), "mode", json!({"value": "before"}));

    // The first append blocks inside the file write; nothing else can
    // happen to the store meanwhile (it is borrowed `&mut`).
    thread::scope(|scope| {
        let first = scope.spawn(|| store.append(&root));
        started
            .recv_timeout(PATIENCE)
            .expect("第一次 append 应该开始写文件");
        assert_eq!(io.append_count(), 1);
        release_first.send(()).unwrap();
        first.join().unwrap().unwrap();
    });
    set_first_text(&mut root, "after call");
    store.append(&child).unwrap();
    child.id = "after-call-id".to_string();
    metadata_value_mut(&mut child)["value"] = json!("after call");

    assert_eq!(io.append_count(), 2);
    let recovered = recover_jsonl(&io.value()).unwrap();
    assert_eq!(ids(&recovered.entries), ["root", "child"]);
    assert_eq!(first_text(&recovered.entries[0]), "before");
    assert_eq!(
        metadata_value(&recovered.entries[1]),
        &json!({"value": "before"})
    );
}

#[test]
fn lab10_5_jsonl_fails_closed_after_a_write_error_and_reopens_read_only() {
    let healthy_io = MemoryFileIo::default();
    let mut healthy =
        JsonlSessionStore::open_with("healthy.jsonl", Box::new(healthy_io.clone())).unwrap();
    // The original's bad entry holds a function; here it has an empty key.
    assert!(
        healthy
            .append(&metadata_entry("bad", None, "", Value::Null))
            .is_err()
    );
    assert_eq!(healthy_io.append_count(), 0);
    healthy
        .append(&message_entry("healthy-root", None, user("ok")))
        .unwrap();
    assert_eq!(healthy_io.append_count(), 1);

    let root = message_entry("root", None, user("root"));
    let io = MemoryFileIo::with_value(committed(&[&root]));
    io.on_append(|io, value, _| {
        io.push(&value[..12]);
        Err(io::Error::other("disk append failed"))
    });
    let mut store = JsonlSessionStore::open_with("broken.jsonl", Box::new(io.clone())).unwrap();
    let failing = store
        .append(&metadata_entry(
            "child",
            Some("root"),
            "mode",
            json!("first"),
        ))
        .expect_err("写入失败应该传给调用者");
    let SessionError::Io(original_cause) = &failing else {
        panic!("应该是 I/O 错误：{failing:?}");
    };
    assert_eq!(original_cause.to_string(), "disk append failed");
    let same_cause = |result: Result<(), SessionError>| match result {
        Err(SessionError::Io(cause)) if Arc::ptr_eq(&cause, original_cause) => {}
        other => panic!("写入失败以后，每个调用都应该返回同一个 I/O 错误，却得到 {other:?}"),
    };

    // With `&mut self` no append can be queued behind the failing one; the
    // next call plays the original's "already queued" append.
    same_cause(store.append(&metadata_entry("other-root", None, "mode", json!("queued"))));
    let reads_before_terminal_calls = io.file().read_calls;
    same_cause(store.append(&metadata_entry("later", None, "mode", json!("later"))));
    same_cause(store.read().map(|_| ()));
    assert_eq!(io.append_count(), 1, "写入失败以后不应再写文件");
    assert_eq!(
        io.file().read_calls,
        reads_before_terminal_calls,
        "写入失败以后不应再读文件"
    );

    let mut reopened = JsonlSessionStore::open_with("broken.jsonl", Box::new(io.clone())).unwrap();
    let recovered = reopened.read().unwrap();
    assert_eq!(ids(&recovered.entries), ["root"]);
    assert_eq!(
        recovered.warnings,
        [SessionWarning::UnterminatedTail { line: 2 }]
    );
    assert_mentions(
        reopened.append(&metadata_entry(
            "repair",
            Some("root"),
            "mode",
            json!("blocked"),
        )),
        &["第 2 行", "修复"],
    );
    assert_eq!(io.append_count(), 1);
}

#[test]
fn lab10_6_messages_on_path_projects_the_active_branch_with_tool_facts_whole() {
    let call = ToolCall {
        id: "call-read".to_string(),
        name: "read".to_string(),
        arguments: json!({"path": "src/index.ts", "options": {"encoding": "utf8"}}),
        raw_arguments: Some(r#"{"path":"src/index.ts"}"#.to_string()),
    };
    let tool_result = ToolResultMessage {
        tool_call_id: "call-read".to_string(),
        tool_name: "read".to_string(),
        content: vec![text("permission denied")],
        details: Some(json!({"code": "EACCES", "retryable": false})),
        is_error: true,
        timestamp: 3,
    };
    let entries = vec![
        message_entry("root", None, user("inspect")),
        message_entry(
            "assistant",
            Some("root"),
            assistant(
                vec![text("I will inspect").into(), call.clone().into()],
                StopReason::ToolUse,
                2,
            ),
        ),
        metadata_entry("meta", Some("assistant"), "cwd", json!("/workspace")),
        message_entry(
            "result",
            Some("meta"),
            AgentMessage::ToolResult(tool_result),
        ),
        message_entry("sibling", Some("root"), assistant_text("wrong branch")),
    ];

    let messages = messages_on_path(&entries, "result").unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|message| match message {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
        })
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
    assert!(
        !messages
            .iter()
            .any(|message| text_of(message) == "wrong branch")
    );
    let AgentMessage::Assistant(projected) = &messages[1] else {
        panic!("第二条应该是 assistant");
    };
    assert_eq!(projected.content[1], AssistantContent::ToolCall(call));
    let AgentMessage::ToolResult(result) = &messages[2] else {
        panic!("第三条应该是 toolResult");
    };
    assert_eq!(result.tool_call_id, "call-read");
    assert!(result.is_error);
    assert_eq!(
        result.details,
        Some(json!({"code": "EACCES", "retryable": false}))
    );
}

#[test]
fn lab10_6_messages_on_path_shares_nothing_with_its_input_or_earlier_output() {
    let call = ToolCall {
        id: "call".to_string(),
        name: "read".to_string(),
        arguments: json!({"nested": {"path": "before.ts"}}),
        raw_arguments: None,
    };
    let result = ToolResultMessage {
        tool_call_id: "call".to_string(),
        tool_name: "read".to_string(),
        content: vec![text("done")],
        details: Some(json!({"nested": {"bytes": 10}})),
        is_error: false,
        timestamp: 3,
    };
    let mut entries = vec![
        message_entry("root", None, user("root")),
        message_entry(
            "assistant",
            Some("root"),
            assistant(vec![call.into()], StopReason::ToolUse, 2),
        ),
        message_entry(
            "result",
            Some("assistant"),
            AgentMessage::ToolResult(result),
        ),
    ];
    let mut messages = messages_on_path(&entries, "result").unwrap();

    // Change the input's arguments and details.
    if let EntryKind::Message {
        message: AgentMessage::Assistant(message),
    } = &mut entries[1].kind
    {
        if let AssistantContent::ToolCall(call) = &mut message.content[0] {
            call.arguments["nested"]["path"] = json!("source-mutated.ts");
        }
    }
    if let EntryKind::Message {
        message: AgentMessage::ToolResult(result),
    } = &mut entries[2].kind
    {
        result.details = Some(json!({"nested": {"bytes": 99}}));
    }
    let (AgentMessage::Assistant(projected_assistant), AgentMessage::ToolResult(projected_result)) =
        (&messages[1], &messages[2])
    else {
        panic!("fixture 应该投影 assistant 和 toolResult");
    };
    let AssistantContent::ToolCall(projected_call) = &projected_assistant.content[0] else {
        panic!("fixture 应该保留 toolCall");
    };
    assert_eq!(
        projected_call.arguments,
        json!({"nested": {"path": "before.ts"}})
    );
    assert_eq!(
        projected_result.details,
        Some(json!({"nested": {"bytes": 10}}))
    );

    // Change the output's; a second projection reads the input again.
    if let AgentMessage::Assistant(message) = &mut messages[1] {
        if let AssistantContent::ToolCall(call) = &mut message.content[0] {
            call.arguments["nested"]["path"] = json!("output-mutated.ts");
        }
    }
    if let AgentMessage::ToolResult(result) = &mut messages[2] {
        result.details = Some(json!({"nested": {"bytes": -1}}));
    }
    let projected_again = messages_on_path(&entries, "result").unwrap();
    let (AgentMessage::Assistant(assistant_again), AgentMessage::ToolResult(result_again)) =
        (&projected_again[1], &projected_again[2])
    else {
        panic!("第二次投影应该保持消息角色");
    };
    let AssistantContent::ToolCall(call_again) = &assistant_again.content[0] else {
        panic!("第二次投影应该保留 toolCall");
    };
    assert_eq!(
        call_again.arguments,
        json!({"nested": {"path": "source-mutated.ts"}})
    );
    assert_eq!(result_again.details, Some(json!({"nested": {"bytes": 99}})));
}
