//! Chapter 10's wire tests, the second half of step 10.5: the session
//! file's bytes and the strict reader, beyond what the focused test checks.
//! Each test starts by opening a file store, the step's work.
//!
//! `fixtures/session/original.jsonl` was written by the original course's
//! own `JsonlSessionStore` (run under node): a system message with sections
//! and a patch deleting one (`null`), user text with escapes and non-ASCII,
//! an assistant with a text block and a tool call, tool results with and
//! without details, an error message, metadata with nested values. A store
//! that reads it and appends the entries to a new file must write the same
//! bytes. `torn.expected.json` is what the original read from that file cut
//! inside a character. This file stands alone, beside the focused test.

use std::path::PathBuf;

use course::session::{JsonlSessionStore, SessionEntry, SessionStore};
use serde_json::{Value, json};

const ORIGINAL: &str = include_str!("fixtures/session/original.jsonl");
const TORN_EXPECTED: &str = include_str!("fixtures/session/torn.expected.json");

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("course-session-wire-{}-{name}", std::process::id()));
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
fn the_original_s_lines_read_and_write_back_byte_for_byte() {
    let dir = TempDir::new("bytes");
    let source = dir.0.join("original.jsonl");
    std::fs::write(&source, ORIGINAL).unwrap();
    let read = JsonlSessionStore::open(&source).unwrap().read().unwrap();
    assert_eq!(read.warnings, []);
    assert_eq!(read.entries.len(), ORIGINAL.lines().count());

    let copy = dir.0.join("copy.jsonl");
    let mut store = JsonlSessionStore::open(&copy).unwrap();
    for entry in &read.entries {
        store.append(entry).unwrap();
    }
    let written = std::fs::read_to_string(&copy).unwrap();
    for (number, (ours, original)) in written.lines().zip(ORIGINAL.lines()).enumerate() {
        assert_eq!(
            ours,
            original,
            "第 {} 行：写出的（left）和原版的（right）不同",
            number + 1
        );
    }
    assert_eq!(written, ORIGINAL);
    assert_eq!(
        std::fs::read_to_string(&source).unwrap(),
        ORIGINAL,
        "读取不改动文件"
    );
}

#[test]
fn a_file_torn_inside_a_character_reads_as_the_original_read_it() {
    let expected: Value = serde_json::from_str(TORN_EXPECTED).unwrap();
    let dir = TempDir::new("torn");
    let file = dir.0.join("torn.jsonl");
    // The original's bytes, cut after the first byte of "读" (3 bytes in UTF-8).
    let cut = ORIGINAL.find('读').unwrap() + 1;
    std::fs::write(&file, &ORIGINAL.as_bytes()[..cut]).unwrap();

    let mut store = JsonlSessionStore::open(&file).unwrap();
    let read = store.read().unwrap();
    let ids: Vec<&str> = read.entries.iter().map(|entry| entry.id.as_str()).collect();
    assert_eq!(json!(ids), expected["ids"]);
    assert_eq!(json!(read.warnings), expected["warnings"]);
    let refusal = store.append(&read.entries[0]).unwrap_err();
    assert_eq!(json!(refusal.to_string()), expected["refusal"]);
    assert_eq!(std::fs::read(&file).unwrap(), &ORIGINAL.as_bytes()[..cut]);
}

#[test]
fn an_unknown_field_is_refused_at_every_depth() {
    let dir = TempDir::new("depth");
    let file = dir.0.join("s.jsonl");
    let line = json!({"id": "a", "parentId": null, "timestamp": 3, "type": "message",
        "message": {"role": "assistant",
                    "content": [{"type": "text", "text": "reading"},
                                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}}],
                    "provider": "p", "model": "m",
                    "usage": {"input": 1, "output": 2, "totalTokens": 3},
                    "stopReason": "toolUse", "timestamp": 3}});
    std::fs::write(&file, format!("{line}\n")).unwrap();
    JsonlSessionStore::open(&file).expect("这一行本身是合法的");
    for pointer in [
        "",
        "/message",
        "/message/content/0",
        "/message/content/1",
        "/message/usage",
    ] {
        let mut bad = line.clone();
        bad.pointer_mut(pointer).unwrap()["surplusField"] = json!(1);
        std::fs::write(&file, format!("{bad}\n")).unwrap();
        let error = match JsonlSessionStore::open(&file) {
            Ok(store) => panic!("{pointer} 下的未知字段不应被接受：{:?}", store.entries()),
            Err(error) => error.to_string(),
        };
        assert!(
            error.contains("第 1 行") && error.contains("surplusField"),
            "{error}"
        );
    }
}

#[test]
fn a_blank_id_is_refused_like_an_empty_one() {
    let dir = TempDir::new("blank");
    let file = dir.0.join("s.jsonl");
    let mut store = JsonlSessionStore::open(&file).unwrap();
    for blank in [" ", "\t", " \n "] {
        for (id, key) in [(blank, "k"), ("x", blank)] {
            let line = json!({"id": id, "parentId": null, "timestamp": 1, "type": "metadata",
                              "key": key, "value": 1});
            let entry: SessionEntry = serde_json::from_value(line.clone()).unwrap();
            assert!(store.append(&entry).is_err(), "id {id:?}, key {key:?}");
            let other = dir.0.join("other.jsonl");
            std::fs::write(&other, format!("{line}\n")).unwrap();
            assert!(
                JsonlSessionStore::open(&other).is_err(),
                "id {id:?}, key {key:?}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "",
        "refused entries write nothing"
    );
}
