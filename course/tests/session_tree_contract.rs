//! Chapter 10's contract, beyond the focused test and the wire step (a
//! repository test, not handed to the learner):
//!
//! * each "must never happen" of the chapter: a bad line accepted (one test
//!   per rule, at every place the rule applies), a byte already in the file
//!   changed by an append, I/O after a write error, an append onto an
//!   uncommitted tail, an entry changed after `append` returned changing
//!   what was written;
//! * a real process killed in the middle of writing a line, and every cut of
//!   a file's last line, read back as the committed entries and an
//!   `unterminated_tail`.
//!
//! The original's own bytes (`fixtures/session/`, printed by its code under
//! node) are read and written back by the wire step,
//! `course/tests/session_tree_wire.rs`.

use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use course::session::{
    EntryKind, FileSystem, InMemorySessionStore, JsonlSessionStore, SessionEntry, SessionError,
    SessionFileIo, SessionStore, SessionWarning, parse_session_entry, recover_jsonl,
};
use course::types::{AgentMessage, Sections, SystemMessage, user_message};
use serde_json::{Value, json};

const ORIGINAL: &str = include_str!("fixtures/session/original.jsonl");

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "course-session-contract-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The real file system, with every call recorded; `fail_from` makes the
/// append with that index (and later ones) write `partial` bytes of its
/// line for real, then fail.
#[derive(Clone, Default)]
struct Recorded {
    calls: Arc<Mutex<Vec<String>>>,
    fail_from: Option<usize>,
    partial: usize,
}

impl Recorded {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn appends(&self) -> usize {
        self.calls()
            .iter()
            .filter(|call| call.starts_with("append"))
            .count()
    }
}

impl SessionFileIo for Recorded {
    fn ensure_file(&self, file: &Path) -> io::Result<()> {
        self.calls.lock().unwrap().push("ensure".to_string());
        FileSystem.ensure_file(file)
    }

    fn read_file(&self, file: &Path) -> io::Result<String> {
        self.calls.lock().unwrap().push("read".to_string());
        FileSystem.read_file(file)
    }

    fn append_file(&self, file: &Path, value: &str) -> io::Result<()> {
        let index = self.appends();
        self.calls.lock().unwrap().push(format!("append {value}"));
        if self.fail_from.is_some_and(|from| index >= from) {
            FileSystem.append_file(file, &value[..self.partial])?;
            return Err(io::Error::other("disk full"));
        }
        FileSystem.append_file(file, value)
    }
}

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

fn ids(entries: &[SessionEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.id.as_str()).collect()
}

/// One valid line of each shape, every optional field present.
fn valid_lines() -> Vec<Value> {
    vec![
        json!({"id": "s", "parentId": null, "timestamp": 1, "type": "message",
               "message": {"role": "system", "content": "base", "timestamp": 1,
                           "sections": {"rules": "R", "gone": null}}}),
        json!({"id": "u", "parentId": "s", "timestamp": 2, "type": "message",
               "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 2}}),
        json!({"id": "a", "parentId": "u", "timestamp": 3, "type": "message",
               "message": {"role": "assistant",
                           "content": [{"type": "text", "text": "reading"},
                                       {"type": "toolCall", "id": "c1", "name": "read",
                                        "arguments": {"path": "a.txt"}, "rawArguments": "{\"path\":\"a.txt\"}"}],
                           "provider": "p", "model": "m",
                           "usage": {"input": 1, "output": 2, "totalTokens": 3},
                           "stopReason": "toolUse", "timestamp": 3, "errorMessage": "none"}}),
        json!({"id": "r", "parentId": "a", "timestamp": 4, "type": "message",
               "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                           "content": [{"type": "text", "text": "text"}], "isError": false,
                           "timestamp": 4, "details": {"bytes": 4}}}),
        json!({"id": "m", "parentId": "r", "timestamp": 5, "type": "metadata",
               "key": "cwd", "value": {"path": "/w", "list": [1, null]}}),
    ]
}

/// The JSON value at `pointer` of `line`, changed by `change`.
fn changed(line: &Value, pointer: &str, change: impl FnOnce(&mut Value)) -> Value {
    let mut line = line.clone();
    change(
        line.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer} 不存在")),
    );
    line
}

/// The error of reading `bad` as the second line of a file, which must
/// name that line.
fn refused(bad: &str) -> String {
    let text = format!("{}\n{bad}\n", valid_lines()[0]);
    match recover_jsonl(&text) {
        Ok(read) => panic!("这一行不应被接受：{bad}\n读到：{:?}", read.entries),
        Err(error) => {
            let error = error.to_string();
            assert!(error.contains("第 2 行"), "{error}");
            error
        }
    }
}

#[test]
fn the_valid_lines_of_these_tests_are_accepted() {
    let text: String = valid_lines()
        .iter()
        .map(|line| format!("{line}\n"))
        .collect();
    let read = recover_jsonl(&text).unwrap();
    assert_eq!(ids(&read.entries), ["s", "u", "a", "r", "m"]);
}

#[test]
fn a_null_section_is_read_kept_and_written_back() {
    let line = valid_lines()[0].to_string();
    let entry = parse_session_entry(&serde_json::from_str(&line).unwrap()).unwrap();
    let EntryKind::Message {
        message: AgentMessage::System(system),
    } = &entry.kind
    else {
        panic!("应该是 system message");
    };
    assert_eq!(
        system.sections,
        Some(Sections::from([("rules", Some("R")), ("gone", None)]))
    );
    let dir = TempDir::new("null-section");
    let file = dir.file("s.jsonl");
    JsonlSessionStore::open(&file)
        .unwrap()
        .append(&entry)
        .unwrap();
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains(r#""sections":{"rules":"R","gone":null}"#)
    );
}

#[test]
fn an_unknown_field_at_any_level_is_refused() {
    let lines = valid_lines();
    let places = [
        (0, ""),
        (0, "/message"),
        (1, "/message"),
        (1, "/message/content/0"),
        (2, "/message"),
        (2, "/message/content/0"),
        (2, "/message/content/1"),
        (2, "/message/usage"),
        (3, "/message"),
        (3, "/message/content/0"),
        (4, ""),
    ];
    for (index, pointer) in places {
        let bad = changed(&lines[index], pointer, |object| {
            object["surplusField"] = json!(1);
        });
        let error = refused(&bad.to_string());
        assert!(error.contains("surplusField"), "{pointer}: {error}");
    }
}

#[test]
fn a_null_where_the_types_omit_a_field_is_refused() {
    // Reading `null` would give `None`, and writing would drop the field.
    // (The original accepts `"details": null`; a `Value` inside `Option`
    // cannot keep it apart from an absent `details`, so the port refuses it.)
    let lines = valid_lines();
    for (index, pointer, field) in [
        (0, "/message", "sections"),
        (2, "/message", "errorMessage"),
        (2, "/message/content/1", "rawArguments"),
        (3, "/message", "details"),
    ] {
        let bad = changed(&lines[index], pointer, |object| object[field] = Value::Null);
        let error = refused(&bad.to_string());
        assert!(error.contains(field), "{error}");
    }
    let orphan = changed(&lines[1], "", |entry| {
        entry.as_object_mut().unwrap().remove("parentId");
    });
    assert!(refused(&orphan.to_string()).contains("parentId"));
}

#[test]
fn an_unknown_role_or_entry_type_is_refused() {
    let lines = valid_lines();
    for role in ["tool", "developer", "System", ""] {
        let bad = changed(&lines[1], "/message/role", |value| *value = json!(role));
        refused(&bad.to_string());
    }
    for kind in ["compaction", "label", "Message"] {
        let bad = changed(&lines[4], "/type", |value| *value = json!(kind));
        refused(&bad.to_string());
    }
}

#[test]
fn an_unknown_content_block_is_refused_wherever_blocks_are() {
    let lines = valid_lines();
    let image = json!({"type": "image", "url": "secret"});
    let call = json!({"type": "toolCall", "id": "c", "name": "n", "arguments": {}});
    for (index, block) in [
        (1, &image),
        (1, &call), // user content holds text only
        (2, &image),
        (2, &json!({"type": "thinking", "thinking": "…"})),
        (3, &image),
        (3, &call), // so does a tool result's
    ] {
        let bad = changed(&lines[index], "/message/content/0", |value| {
            *value = block.clone()
        });
        refused(&bad.to_string());
    }
}

#[test]
fn a_non_finite_number_is_refused_in_every_number() {
    let lines = valid_lines();
    let places = [
        (1, "/timestamp"),
        (1, "/message/timestamp"),
        (2, "/message/usage/totalTokens"),
        (2, "/message/content/1/arguments/path"),
        (3, "/message/details/bytes"),
        (4, "/value/list/0"),
    ];
    for (index, pointer) in places {
        for token in ["1e999", "-1e999", "NaN", "Infinity", "-Infinity"] {
            let marked = changed(&lines[index], pointer, |value| *value = json!("@NUMBER@"));
            let bad = marked.to_string().replace("\"@NUMBER@\"", token);
            let error = refused(&bad);
            assert!(error.contains("JSON"), "{pointer} = {token}: {error}");
        }
    }
    // JSON.stringify writes NaN and Infinity as `null`: no integer field takes it.
    for pointer in ["/timestamp", "/message/timestamp", "/message/usage/input"] {
        refused(&changed(&lines[2], pointer, |value| *value = Value::Null).to_string());
    }
}

#[test]
fn a_fractional_or_negative_integer_is_refused() {
    // The port's timestamps and token counts are u64 (chapter 03); the
    // original accepts any finite number there, but never writes one.
    let lines = valid_lines();
    for pointer in ["/timestamp", "/message/timestamp", "/message/usage/output"] {
        for number in [json!(1.5), json!(-1), json!(1.0)] {
            refused(&changed(&lines[2], pointer, |value| *value = number.clone()).to_string());
        }
    }
}

#[test]
fn an_empty_id_key_or_tool_name_is_refused_read_or_appended() {
    let lines = valid_lines();
    let places = [
        (1, "/id"),
        (1, "/parentId"),
        (4, "/key"),
        (2, "/message/content/1/id"),
        (2, "/message/content/1/name"),
        (3, "/message/toolCallId"),
        (3, "/message/toolName"),
    ];
    let dir = TempDir::new("empty-ids");
    for (index, pointer) in places {
        for blank in ["", " \t\n"] {
            let bad = changed(&lines[index], pointer, |value| *value = json!(blank));
            let error = refused(&bad.to_string());
            assert!(error.contains("非空"), "{pointer}: {error}");

            // The same entry, built in Rust and appended, writes nothing.
            let entry: SessionEntry = serde_json::from_value(bad).unwrap();
            assert!(InMemorySessionStore::default().append(&entry).is_err());
            let io = Recorded::default();
            let mut store =
                JsonlSessionStore::open_with(dir.file("e.jsonl"), Box::new(io.clone())).unwrap();
            assert!(store.append(&entry).is_err(), "{pointer}");
            assert_eq!(io.appends(), 0);
        }
    }
}

#[test]
fn an_append_never_changes_a_byte_already_in_the_file_and_writes_one_line() {
    let dir = TempDir::new("prefix");
    let file = dir.file("s.jsonl");
    std::fs::write(&file, ORIGINAL).unwrap();
    let io = Recorded::default();
    let mut store = JsonlSessionStore::open_with(&file, Box::new(io.clone())).unwrap();
    assert_eq!(
        io.calls(),
        ["ensure", "read"],
        "opening reads the file once"
    );

    let attempts = [
        metadata_entry("n1", Some("sys-3"), "k", json!(1)),
        metadata_entry("n1", Some("sys-3"), "duplicate", json!(2)),
        metadata_entry("n2", Some("nowhere"), "orphan", json!(3)),
        metadata_entry("n3", None, "", json!(4)),
        message_entry("n4", Some("n1"), user("多字节 ✓")),
    ];
    let mut before = std::fs::read(&file).unwrap();
    for entry in &attempts {
        let appends = io.appends();
        let result = store.append(entry);
        let after = std::fs::read(&file).unwrap();
        assert_eq!(&after[..before.len()], &before[..], "{}", entry.id);
        match result {
            Ok(()) => {
                // Exactly one call, holding exactly the new bytes: one line.
                let calls = io.calls();
                let call = calls.last().unwrap().strip_prefix("append ").unwrap();
                assert_eq!(io.appends(), appends + 1);
                assert_eq!(call.as_bytes(), &after[before.len()..]);
                assert_eq!(call.matches('\n').count(), 1);
                assert!(call.ends_with('\n'));
            }
            Err(_) => assert_eq!(after, before, "a refused entry writes nothing"),
        }
        before = after;
    }
    assert_eq!(
        io.calls().iter().filter(|call| *call == "read").count(),
        1,
        "appending reads nothing"
    );
}

#[test]
fn after_a_write_error_nothing_does_more_io() {
    let dir = TempDir::new("taint");
    let file = dir.file("s.jsonl");
    let io = Recorded {
        fail_from: Some(1),
        partial: 10,
        ..Recorded::default()
    };
    let mut store = JsonlSessionStore::open_with(&file, Box::new(io.clone())).unwrap();
    store
        .append(&metadata_entry("root", None, "k", json!(1)))
        .unwrap();
    let first = store
        .append(&metadata_entry("child", Some("root"), "k", json!(2)))
        .unwrap_err();
    let SessionError::Io(cause) = &first else {
        panic!("应该是 I/O 错误：{first:?}");
    };
    let calls = io.calls();

    let same = |error: SessionError| matches!(error, SessionError::Io(again) if Arc::ptr_eq(&again, cause));
    assert!(same(
        store
            .append(&metadata_entry("other", None, "k", json!(3)))
            .unwrap_err()
    ));
    assert!(same(
        store
            .append(&metadata_entry("bad", None, "", json!(3)))
            .unwrap_err()
    ));
    assert!(same(store.read().unwrap_err()));
    assert!(same(store.entries().unwrap_err()));
    assert_eq!(io.calls(), calls, "no more I/O after the first write error");

    // What the failed write left behind is there for the next open to see.
    let reopened = JsonlSessionStore::open(&file).unwrap().read().unwrap();
    assert_eq!(ids(&reopened.entries), ["root"]);
    assert_eq!(
        reopened.warnings,
        [SessionWarning::UnterminatedTail { line: 2 }]
    );
}

#[test]
fn an_append_onto_an_uncommitted_tail_is_refused_until_repaired() {
    let dir = TempDir::new("tail");
    let file = dir.file("s.jsonl");
    let committed = format!("{}\n", valid_lines()[0]);
    let torn = format!("{committed}{{\"id\":\"half");
    std::fs::write(&file, &torn).unwrap();

    let io = Recorded::default();
    let mut store = JsonlSessionStore::open_with(&file, Box::new(io.clone())).unwrap();
    for entry in [
        metadata_entry("n", Some("s"), "k", json!(1)),
        metadata_entry("root", None, "k", json!(1)),
    ] {
        let error = store.append(&entry).unwrap_err().to_string();
        assert!(
            error.contains("第 2 行") && error.contains("修复"),
            "{error}"
        );
    }
    assert_eq!(io.appends(), 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), torn);
    // Reading still works: the committed prefix and the warning.
    let read = store.read().unwrap();
    assert_eq!(ids(&read.entries), ["s"]);
    assert_eq!(
        read.warnings,
        [SessionWarning::UnterminatedTail { line: 2 }]
    );

    // Repaired by hand (the tail cut off), the file takes appends again.
    std::fs::write(&file, &committed).unwrap();
    let mut repaired = JsonlSessionStore::open(&file).unwrap();
    repaired
        .append(&metadata_entry("n", Some("s"), "k", json!(1)))
        .unwrap();
    assert_eq!(ids(&repaired.entries().unwrap()), ["s", "n"]);
}

#[test]
fn an_entry_changed_after_append_returned_changes_nothing_written() {
    let dir = TempDir::new("snapshot");
    let file = dir.file("s.jsonl");
    let mut file_store = JsonlSessionStore::open(&file).unwrap();
    let mut memory_store = InMemorySessionStore::default();
    let mut entry = message_entry("root", None, user("as appended"));
    let expected = entry.clone();
    for store in [&mut file_store as &mut dyn SessionStore, &mut memory_store] {
        store.append(&entry).unwrap();
    }
    entry.id = "changed".to_string();
    entry.kind = EntryKind::Metadata {
        key: "changed".to_string(),
        value: json!("changed"),
    };
    for store in [&mut file_store as &mut dyn SessionStore, &mut memory_store] {
        store
            .append(&metadata_entry("next", Some("root"), "k", json!(1)))
            .unwrap();
        assert_eq!(store.entries().unwrap()[0], expected);
    }
    let reopened = JsonlSessionStore::open(&file).unwrap();
    assert_eq!(reopened.entries().unwrap()[0], expected);
}

#[test]
fn every_cut_of_the_last_line_reads_as_the_committed_entries_and_a_tail() {
    let dir = TempDir::new("cuts");
    let file = dir.file("s.jsonl");
    let last_start = ORIGINAL.trim_end().rfind('\n').unwrap() + 1;
    let committed = ORIGINAL.lines().count() - 1;
    for cut in last_start..ORIGINAL.len() {
        std::fs::write(&file, &ORIGINAL.as_bytes()[..cut]).unwrap();
        let read = JsonlSessionStore::open(&file).unwrap().read().unwrap();
        assert_eq!(read.entries.len(), committed, "cut at byte {cut}");
        let expected: &[SessionWarning] = if cut == last_start {
            &[]
        } else {
            &[SessionWarning::UnterminatedTail {
                line: committed + 1,
            }]
        };
        assert_eq!(read.warnings, expected, "cut at byte {cut}");
    }
}

/// The child's side of the next test: appends two entries, then writes
/// half of a third line, says so on stdout and waits to be killed.
#[test]
fn killed_writer_child() {
    let Some(file) = std::env::var_os("COURSE_SESSION_KILLED_WRITER") else {
        return; // only runs as the child of the test below
    };
    struct HalfThenHang;
    impl SessionFileIo for HalfThenHang {
        fn ensure_file(&self, file: &Path) -> io::Result<()> {
            FileSystem.ensure_file(file)
        }
        fn read_file(&self, file: &Path) -> io::Result<String> {
            FileSystem.read_file(file)
        }
        fn append_file(&self, file: &Path, value: &str) -> io::Result<()> {
            if !value.contains("\"third\"") {
                return FileSystem.append_file(file, value);
            }
            FileSystem.append_file(file, &value[..value.len() / 2])?;
            println!("HALF-WRITTEN");
            let mut line = String::new();
            io::stdin().read_line(&mut line)?; // never answered: killed here
            FileSystem.append_file(file, &value[value.len() / 2..])
        }
    }
    let mut store = JsonlSessionStore::open_with(&file, Box::new(HalfThenHang)).unwrap();
    store
        .append(&message_entry("first", None, user("一")))
        .unwrap();
    store
        .append(&message_entry("second", Some("first"), user("二")))
        .unwrap();
    store
        .append(&message_entry("third", Some("second"), user("三")))
        .unwrap();
}

#[test]
fn a_writer_killed_mid_line_leaves_committed_entries_and_a_tail() {
    let dir = TempDir::new("killed");
    let file = dir.file("session.jsonl");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killed_writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COURSE_SESSION_KILLED_WRITER", &file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let half_written = stdout
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("HALF-WRITTEN"));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(half_written, "the child should have written half a line");

    let mut store = JsonlSessionStore::open(&file).unwrap();
    let read = store.read().unwrap();
    assert_eq!(ids(&read.entries), ["first", "second"]);
    assert_eq!(
        read.warnings,
        [SessionWarning::UnterminatedTail { line: 3 }]
    );
    assert!(
        store
            .append(&metadata_entry("after", Some("second"), "k", json!(1)))
            .is_err()
    );
}

#[test]
fn sections_keep_their_order_in_the_written_line() {
    let system = SystemMessage {
        content: String::new(),
        sections: Some(Sections::from([
            ("zeta", Some("z")),
            ("alpha", None),
            ("mid", Some("m")),
        ])),
        timestamp: 7,
    };
    let dir = TempDir::new("order");
    let file = dir.file("s.jsonl");
    JsonlSessionStore::open(&file)
        .unwrap()
        .append(&message_entry("s", None, AgentMessage::System(system)))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"id\":\"s\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\",\"message\":{\"role\":\"system\",\"content\":\"\",\"timestamp\":7,\"sections\":{\"zeta\":\"z\",\"alpha\":null,\"mid\":\"m\"}}}\n"
    );
}
