//! Chapter 11's contract, beyond the focused test (a repository test, not
//! handed to the learner): each rule of the chapter the focused test does
//! not pin.
//!
//! `fixtures/context/` holds what the original course's own code printed
//! under node (its `session.ts` and `context.ts`, compiled with
//! typescript): `compaction.jsonl`, a session with two compactions written
//! by its `JsonlSessionStore` (the second made by its
//! `createCompactionEntry`); `build.jsonl`, its `buildContext` result for
//! three leaves of that session under seven budgets, with the estimator
//! `ceil(UTF-8 bytes of textOf(message) / 4) + 4`; `errors.json`, its error
//! texts for the rules the port words as it does.

use std::cell::Cell;
use std::collections::HashSet;
use std::path::PathBuf;

use course::context::{
    BuildContextOptions, BuildContextResult, CompactionSummary, ContextBuildReason,
    CreateCompactionInput, build_context, create_compaction_entry, group_interactions,
};
use course::session::{
    EntryKind, InMemorySessionStore, JsonlSessionStore, SessionEntry, SessionError, SessionStore,
    messages_on_path, parse_session_entry, path_to, recover_jsonl,
};
use course::types::{
    AgentMessage, AssistantContent, AssistantMessage, StopReason, SystemMessage, ToolCall,
    ToolResultMessage, UserMessage, assistant_message, text, text_of,
};
use serde_json::{Value, json};

const ORIGINAL: &str = include_str!("fixtures/context/compaction.jsonl");
const ORIGINAL_BUILDS: &str = include_str!("fixtures/context/build.jsonl");
const ORIGINAL_ERRORS: &str = include_str!("fixtures/context/errors.json");

/// A fresh folder under the system's temporary folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "course-context-contract-{}-{name}",
            std::process::id()
        ));
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

fn original_error(case: &str) -> String {
    let errors: Value = serde_json::from_str(ORIGINAL_ERRORS).unwrap();
    errors[case]
        .as_str()
        .unwrap_or_else(|| panic!("errors.json 里没有 {case}"))
        .to_string()
}

fn error_text<T: std::fmt::Debug>(result: Result<T, SessionError>) -> String {
    match result {
        Err(error) => error.to_string(),
        Ok(value) => panic!("预期失败，但它成功了：{value:?}"),
    }
}

fn summary(goal: &str) -> CompactionSummary {
    CompactionSummary {
        goal: goal.to_string(),
        constraints: vec!["保持工具事实完整".to_string()],
        completed: vec![],
        decisions: vec!["换行是提交标记".to_string()],
        changed_files: vec![],
        unresolved: vec![],
        next: vec!["接入 agent".to_string()],
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

fn user(id: &str, parent_id: Option<&str>) -> SessionEntry {
    let message = UserMessage {
        content: vec![text(format!("question {id}"))],
        timestamp: 1,
    };
    message_entry(id, parent_id, AgentMessage::User(message))
}

fn system(id: &str, parent_id: Option<&str>, content: &str) -> SessionEntry {
    let message = SystemMessage {
        content: content.to_string(),
        sections: None,
        timestamp: 1,
    };
    message_entry(id, parent_id, AgentMessage::System(message))
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: "probe".to_string(),
        arguments: json!({}),
        raw_arguments: None,
    }
}

fn answer(id: &str, parent_id: Option<&str>, call_ids: &[&str]) -> SessionEntry {
    let content: Vec<AssistantContent> = call_ids.iter().map(|id| call(id).into()).collect();
    let stop_reason = match call_ids.is_empty() {
        true => StopReason::Stop,
        false => StopReason::ToolUse,
    };
    let message = AssistantMessage {
        timestamp: 1,
        ..assistant_message(content, stop_reason)
    };
    message_entry(id, parent_id, AgentMessage::Assistant(message))
}

fn result(id: &str, parent_id: Option<&str>, call_id: &str) -> SessionEntry {
    let message = ToolResultMessage {
        tool_call_id: call_id.to_string(),
        tool_name: "probe".to_string(),
        content: vec![text("done")],
        details: None,
        is_error: false,
        timestamp: 1,
    };
    message_entry(id, parent_id, AgentMessage::ToolResult(message))
}

fn metadata(id: &str, parent_id: Option<&str>) -> SessionEntry {
    SessionEntry {
        id: id.to_string(),
        parent_id: parent_id.map(str::to_string),
        timestamp: 1,
        kind: EntryKind::Metadata {
            key: "cwd".to_string(),
            value: json!("/work"),
        },
    }
}

fn compaction(id: &str, parent_id: Option<&str>, first_kept: &str) -> SessionEntry {
    SessionEntry {
        id: id.to_string(),
        parent_id: parent_id.map(str::to_string),
        timestamp: 1,
        kind: EntryKind::Compaction {
            summary: summary("goal"),
            first_kept_entry_id: first_kept.to_string(),
            tokens_before: 1,
        },
    }
}

/// A valid compaction line's JSON, to break one way at a time.
fn compaction_json() -> Value {
    json!({
        "id": "c", "parentId": "p", "timestamp": 1, "type": "compaction",
        "summary": {"goal": "g", "constraints": [], "completed": [], "decisions": [],
                    "changedFiles": [], "unresolved": [], "next": []},
        "firstKeptEntryId": "u", "tokensBefore": 1
    })
}

fn ids(entries: &[SessionEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.id.as_str()).collect()
}

fn one(_: &AgentMessage) -> u64 {
    1
}

fn options(
    max_tokens: u64,
    estimate_tokens: &dyn Fn(&AgentMessage) -> u64,
) -> BuildContextOptions<'_> {
    BuildContextOptions {
        max_tokens,
        reserved_output: 0,
        safety_margin: 0,
        estimate_tokens,
    }
}

/// The fixture's estimator: a quarter of the text's UTF-8 bytes, rounded up, plus 4.
fn quarter_bytes(message: &AgentMessage) -> u64 {
    text_of(message).len().div_ceil(4) as u64 + 4
}

fn original_entries() -> Vec<SessionEntry> {
    recover_jsonl(ORIGINAL).unwrap().entries
}

// Both stores round-trip the compaction entry.

#[test]
fn the_original_s_compaction_lines_read_and_write_back_byte_for_byte() {
    let directory = TempDir::new("bytes");
    let source = directory.0.join("original.jsonl");
    std::fs::write(&source, ORIGINAL).unwrap();
    let entries = JsonlSessionStore::open(&source).unwrap().entries().unwrap();
    assert_eq!(
        entries
            .iter()
            .filter(|entry| matches!(entry.kind, EntryKind::Compaction { .. }))
            .count(),
        2
    );

    let copy = directory.0.join("copy.jsonl");
    let mut store = JsonlSessionStore::open(&copy).unwrap();
    let mut memory = InMemorySessionStore::default();
    for entry in &entries {
        store.append(entry).unwrap();
        memory.append(entry).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), ORIGINAL);
    assert_eq!(memory.entries().unwrap(), entries);
    let reopened = JsonlSessionStore::open(&copy).unwrap().entries().unwrap();
    assert_eq!(reopened, entries);
}

#[test]
fn create_compaction_entry_makes_the_original_s_second_compaction() {
    let entries = original_entries();
    let path = path_to(&entries, "a5").unwrap();
    let created = create_compaction_entry(
        &path,
        CreateCompactionInput {
            id: "compact-2".to_string(),
            timestamp: 16,
            summary: CompactionSummary {
                goal: "继续".to_string(),
                constraints: vec![],
                completed: vec!["测试通过".to_string()],
                decisions: vec!["换行是提交标记".to_string()],
                changed_files: vec![],
                unresolved: vec!["跨进程锁".to_string()],
                next: vec![],
            },
            first_kept_entry_id: "u3".to_string(),
            tokens_before: 31,
        },
    )
    .unwrap();
    let line = ORIGINAL
        .lines()
        .find(|line| line.contains(r#""id":"compact-2""#))
        .unwrap();
    assert_eq!(serde_json::to_string(&created).unwrap(), line);
}

#[test]
fn messages_on_path_leaves_compactions_out() {
    let entries = original_entries();
    let messages = messages_on_path(&entries, "a6").unwrap();
    let on_path = path_to(&entries, "a6").unwrap();
    let message_count = on_path
        .iter()
        .filter(|entry| matches!(entry.kind, EntryKind::Message { .. }))
        .count();
    assert_eq!(messages.len(), message_count);
    assert!(
        on_path.len() > message_count + 2,
        "路径上应该有两条 compaction 和 metadata"
    );
}

// The result of a rebuild, field by field, as the original's.

#[test]
fn build_context_gives_the_original_s_results_on_its_own_session() {
    let entries = original_entries();
    let mut reasons = HashSet::new();
    for line in ORIGINAL_BUILDS.lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        let leaf = case["leaf"].as_str().unwrap();
        let options = BuildContextOptions {
            max_tokens: case["maxTokens"].as_u64().unwrap(),
            reserved_output: case["reservedOutput"].as_u64().unwrap(),
            safety_margin: case["safetyMargin"].as_u64().unwrap(),
            estimate_tokens: &quarter_bytes,
        };
        let built = build_context(&path_to(&entries, leaf).unwrap(), &options).unwrap();
        reasons.insert(serde_json::to_value(built.reason).unwrap());
        // Values compare as maps: the messages' key order is chapter 03's here.
        assert_eq!(
            serde_json::to_value(&built).unwrap(),
            case["result"],
            "{leaf} 在 maxTokens {} 下与原版不同",
            case["maxTokens"]
        );
    }
    assert_eq!(
        reasons,
        HashSet::from([
            json!("within_budget"),
            json!("trimmed"),
            json!("single_group_overflow")
        ])
    );
}

// Strictness of the compaction entry, rule by rule, in the original's words.

#[test]
fn compaction_rules_are_refused_in_the_original_s_words() {
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit); 7] = [
        ("compaction null parent", |value| {
            value["parentId"] = Value::Null
        }),
        ("compaction blank goal", |value| {
            value["summary"]["goal"] = json!(" ")
        }),
        ("compaction blank firstKeptEntryId", |value| {
            value["firstKeptEntryId"] = json!("\t")
        }),
        ("compaction summary alias files", |value| {
            value["summary"]["files"] = json!([])
        }),
        ("compaction summary alias nextSteps", |value| {
            value["summary"]["nextSteps"] = json!([])
        }),
        ("compaction summary alias invariants", |value| {
            value["summary"]["invariants"] = json!([])
        }),
        ("compaction alias compactedEntryIds", |value| {
            value["compactedEntryIds"] = json!(["old"])
        }),
    ];
    for (case, edit) in cases {
        let mut value = compaction_json();
        edit(&mut value);
        assert_eq!(
            error_text(parse_session_entry(&value)),
            original_error(case),
            "{case}"
        );
    }
}

#[test]
fn an_old_draft_is_refused_for_its_old_field_not_for_the_missing_new_one() {
    let mut summary = compaction_json();
    let fields = summary["summary"].as_object_mut().unwrap();
    fields.shift_remove("changedFiles");
    fields.shift_remove("next");
    fields.insert("files".to_string(), json!([]));
    fields.insert("nextSteps".to_string(), json!([]));
    assert_eq!(
        error_text(parse_session_entry(&summary)),
        original_error("compaction old draft summary")
    );
    let mut entry = compaction_json();
    let fields = entry.as_object_mut().unwrap();
    fields.shift_remove("firstKeptEntryId");
    fields.insert("compactedEntryIds".to_string(), json!(["old"]));
    assert_eq!(
        error_text(parse_session_entry(&entry)),
        original_error("compaction old draft entry")
    );
}

#[test]
fn a_summary_has_exactly_its_seven_fields() {
    let fields = [
        "goal",
        "constraints",
        "completed",
        "decisions",
        "changedFiles",
        "unresolved",
        "next",
    ];
    assert!(parse_session_entry(&compaction_json()).is_ok());
    for field in fields {
        let mut value = compaction_json();
        value["summary"]
            .as_object_mut()
            .unwrap()
            .shift_remove(field);
        let error = error_text(parse_session_entry(&value));
        assert!(error.contains(field), "缺少 {field}：{error}");
    }
    for field in fields.into_iter().skip(1) {
        let mut value = compaction_json();
        value["summary"][field] = json!("not a list");
        assert!(
            parse_session_entry(&value).is_err(),
            "{field} 不是数组也通过了"
        );
    }
    for key in ["summary", "firstKeptEntryId", "tokensBefore"] {
        let mut value = compaction_json();
        value.as_object_mut().unwrap().shift_remove(key);
        let error = error_text(parse_session_entry(&value));
        assert!(error.contains(key), "缺少 {key}：{error}");
    }
    let mut unknown = compaction_json();
    unknown["summary"]["goals"] = json!([]);
    assert_eq!(
        error_text(parse_session_entry(&unknown)),
        "session compaction c.summary 包含未知字段 goals"
    );
}

#[test]
fn tokens_before_is_a_whole_non_negative_number() {
    for tokens in ["-1", "1.5", "\"80\"", "null", "1e999"] {
        let text = compaction_json().to_string().replace(
            r#""tokensBefore":1"#,
            &format!(r#""tokensBefore":{tokens}"#),
        );
        let parsed = serde_json::from_str::<Value>(&text)
            .map_err(|error| error.to_string())
            .and_then(|value| parse_session_entry(&value).map_err(|error| error.to_string()));
        assert!(parsed.is_err(), "tokensBefore {tokens} 通过了");
    }
}

#[test]
fn both_stores_refuse_a_compaction_without_a_parent_and_write_nothing() {
    let directory = TempDir::new("refuse");
    let file = directory.0.join("session.jsonl");
    let mut jsonl = JsonlSessionStore::open(&file).unwrap();
    let mut memory = InMemorySessionStore::default();
    let root = user("u1", None);
    let mut blank_goal = compaction("c2", Some("u1"), "u1");
    if let EntryKind::Compaction { summary, .. } = &mut blank_goal.kind {
        summary.goal = "  ".to_string();
    }
    for store in [&mut jsonl as &mut dyn SessionStore, &mut memory] {
        store.append(&root).unwrap();
        assert_eq!(
            error_text(store.append(&compaction("c1", None, "u1"))),
            "session compaction c1.parentId 必须是 string"
        );
        assert_eq!(
            error_text(store.append(&blank_goal)),
            "session compaction c2.summary.goal 必须是非空 string"
        );
        assert_eq!(ids(&store.entries().unwrap()), ["u1"]);
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 1);
}

#[test]
fn a_committed_line_with_an_old_alias_names_its_line_and_field() {
    let mut alias = compaction_json();
    alias["summary"]["nextSteps"] = json!([]);
    let text = format!("{}\n{alias}\n", compaction_json());
    assert_eq!(
        error_text(recover_jsonl(&text)),
        "session JSONL 第 2 行不是合法 session entry：session compaction c.summary 包含未知字段 nextSteps"
    );
}

// Pairing: ids, not positions, inside one interaction.

#[test]
fn grouping_refuses_in_the_original_s_words() {
    let cases: [(&str, Vec<SessionEntry>); 6] = [
        (
            "group before first user",
            vec![answer("a0", None, &[]), user("u1", Some("a0"))],
        ),
        (
            "group not a message",
            vec![user("u1", None), metadata("m", Some("u1"))],
        ),
        (
            "group orphan result",
            vec![
                user("u1", None),
                answer("a1", Some("u1"), &["k"]),
                result("r1", Some("a1"), "k"),
                result("r2", Some("r1"), "x"),
            ],
        ),
        (
            "group duplicate call",
            vec![
                user("u1", None),
                answer("a1", Some("u1"), &["k"]),
                answer("a2", Some("a1"), &["k"]),
                result("r1", Some("a2"), "k"),
            ],
        ),
        (
            "group duplicate result",
            vec![
                user("u1", None),
                answer("a1", Some("u1"), &["k"]),
                result("r1", Some("a1"), "k"),
                result("r2", Some("r1"), "k"),
            ],
        ),
        (
            "group missing result",
            vec![
                user("u1", None),
                answer("a1", Some("u1"), &["k", "j"]),
                result("r1", Some("a1"), "k"),
            ],
        ),
    ];
    for (case, entries) in cases {
        assert_eq!(
            error_text(group_interactions(&entries)),
            original_error(case),
            "{case}"
        );
    }
}

#[test]
fn pairing_is_by_id_inside_one_interaction_only() {
    // A result may come before its call's message in the group: ids pair it.
    let early = [
        user("u1", None),
        answer("a1", Some("u1"), &["k"]),
        result("r1", Some("a1"), "k"),
        result("r2", Some("r1"), "j"),
        answer("a2", Some("r2"), &["j"]),
    ];
    assert_eq!(group_interactions(&early).unwrap().len(), 1);

    // The same call id in two interactions is two calls.
    let reused = [
        user("u1", None),
        answer("a1", Some("u1"), &["k"]),
        result("r1", Some("a1"), "k"),
        user("u2", Some("r1")),
        answer("a2", Some("u2"), &["k"]),
        result("r2", Some("a2"), "k"),
    ];
    assert_eq!(group_interactions(&reused).unwrap().len(), 2);

    // A result after the next user message belongs to that interaction:
    // the first one misses it.
    let late = [
        user("u1", None),
        answer("a1", Some("u1"), &["k"]),
        user("u2", Some("a1")),
        result("r1", Some("u2"), "k"),
    ];
    assert_eq!(
        error_text(group_interactions(&late)),
        "tool call k（entry a1）缺少 result"
    );

    // System messages in the middle of an interaction belong to none.
    let with_system = [
        system("s0", None, "base"),
        user("u1", Some("s0")),
        answer("a1", Some("u1"), &["k"]),
        system("s1", Some("a1"), "patch"),
        result("r1", Some("s1"), "k"),
    ];
    let groups = group_interactions(&with_system).unwrap();
    assert_eq!(ids(&groups[0].entries), ["u1", "a1", "r1"]);
    assert_eq!(group_interactions(&[]).unwrap(), []);
}

#[test]
fn the_first_pairing_problem_in_path_order_is_the_one_reported_every_time() {
    let entries = [
        user("u1", None),
        answer(
            "a1",
            Some("u1"),
            &["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"],
        ),
        result("r1", Some("a1"), "c1"),
        result("r2", Some("r1"), "x1"),
        result("r3", Some("r2"), "x2"),
        result("r4", Some("r3"), "x3"),
    ];
    for _ in 0..50 {
        assert_eq!(
            error_text(group_interactions(&entries)),
            "tool result r2 引用了不存在的 call x1"
        );
    }
    let missing = &entries[..3];
    for _ in 0..50 {
        assert_eq!(
            error_text(group_interactions(missing)),
            "tool call c2（entry a1）缺少 result"
        );
    }
}

// The budget: fixed costs first, whole groups only, newest first.

/// A path of `turns` interactions; every third one runs two tools whose
/// results come back out of order.
fn conversation(turns: usize) -> Vec<SessionEntry> {
    let mut path = vec![system("sys", None, "You are Pi.")];
    for turn in 0..turns {
        let parent = path.last().unwrap().id.clone();
        let (u, a) = (format!("u{turn}"), format!("a{turn}"));
        path.push(user(&u, Some(&parent)));
        if turn % 3 == 0 {
            let (k, j) = (format!("k{turn}"), format!("j{turn}"));
            path.push(answer(&format!("c{turn}"), Some(&u), &[&k, &j]));
            path.push(result(&format!("rj{turn}"), Some(&format!("c{turn}")), &j));
            path.push(result(&format!("rk{turn}"), Some(&format!("rj{turn}")), &k));
            path.push(answer(&a, Some(&format!("rk{turn}")), &[]));
        } else {
            path.push(answer(&a, Some(&u), &[]));
        }
    }
    path
}

#[test]
fn every_budget_keeps_a_suffix_of_whole_groups_with_every_call_paired() {
    let path = conversation(7);
    let groups = group_interactions(&path).unwrap();
    let total: u64 = path.len() as u64;
    for max_tokens in 0..=total + 2 {
        let built = build_context(&path, &options(max_tokens, &one)).unwrap();
        let budget = max_tokens.saturating_sub(1);
        let kept: Vec<&str> = built.kept_entry_ids.iter().map(String::as_str).collect();
        // A suffix of whole groups: the kept ids are the tail of some group start.
        let first = groups
            .iter()
            .position(|group| group.entries[0].id == kept[0])
            .expect("保留的第一条必须是某组的 user");
        let suffix: Vec<&str> = groups[first..]
            .iter()
            .flat_map(|group| ids(&group.entries))
            .collect();
        assert_eq!(kept, suffix, "maxTokens {max_tokens}");
        // Every call in the request has its result there, and the reverse.
        let mut calls = HashSet::new();
        let mut results = HashSet::new();
        for message in &built.messages {
            match message {
                AgentMessage::Assistant(assistant) => {
                    for block in &assistant.content {
                        if let AssistantContent::ToolCall(call) = block {
                            calls.insert(call.id.clone());
                        }
                    }
                }
                AgentMessage::ToolResult(result) => {
                    results.insert(result.tool_call_id.clone());
                }
                _ => {}
            }
        }
        assert_eq!(calls, results, "maxTokens {max_tokens}");
        // Within budget unless the newest group alone is over it.
        match built.reason {
            ContextBuildReason::SingleGroupOverflow => {
                assert_eq!(first, groups.len() - 1);
                assert!(built.tokens.messages > budget);
            }
            reason => {
                assert!(built.tokens.messages <= budget, "maxTokens {max_tokens}");
                assert_eq!(reason == ContextBuildReason::Trimmed, first > 0);
                // The next older group would not have fitted.
                if first > 0 {
                    let older = groups[first - 1].entries.len() as u64;
                    assert!(built.tokens.messages + older > budget);
                }
            }
        }
    }
}

#[test]
fn fixed_costs_larger_than_the_budget_leave_nothing_for_messages_without_underflow() {
    let path = conversation(3);
    let heavy_system = |message: &AgentMessage| match message {
        AgentMessage::System(_) => 1_000,
        _ => 1,
    };
    let built = build_context(&path, &options(100, &heavy_system)).unwrap();
    assert_eq!(built.tokens.available_for_messages, 0);
    assert_eq!(built.reason, ContextBuildReason::SingleGroupOverflow);
    assert_eq!(built.kept_entry_ids, ["u2", "a2"]);
    assert_eq!(built.tokens.total, 1_002);

    let margins = BuildContextOptions {
        max_tokens: 10,
        reserved_output: u64::MAX / 4,
        safety_margin: u64::MAX / 4,
        estimate_tokens: &one,
    };
    let built = build_context(&path, &margins).unwrap();
    assert_eq!(built.tokens.available_for_messages, 0);
    assert_eq!(built.reason, ContextBuildReason::SingleGroupOverflow);

    // Nothing to keep is within budget, whatever the fixed costs.
    let only_system = [system("sys", None, "You are Pi.")];
    let built = build_context(&only_system, &options(0, &heavy_system)).unwrap();
    assert_eq!(built.reason, ContextBuildReason::WithinBudget);
    assert_eq!(built.messages.len(), 1);
    assert!(built.kept_entry_ids.is_empty());
    let empty = build_context(&[], &options(0, &one)).unwrap();
    assert_eq!(
        (empty.messages.len(), empty.reason, empty.tokens.total),
        (0, ContextBuildReason::WithinBudget, 0)
    );
}

#[test]
fn the_summary_s_cost_comes_off_before_any_group() {
    let path = vec![
        user("u1", None),
        answer("a1", Some("u1"), &[]),
        user("u2", Some("a1")),
        answer("a2", Some("u2"), &[]),
        compaction("c1", Some("a2"), "u1"),
        user("u3", Some("c1")),
        answer("a3", Some("u3"), &[]),
    ];
    let summary_costs_three = |message: &AgentMessage| {
        if text_of(message).starts_with("【会话压缩摘要】") {
            3
        } else {
            1
        }
    };
    let fits_all = build_context(&path, &options(9, &summary_costs_three)).unwrap();
    assert_eq!(
        fits_all.kept_entry_ids,
        ["u1", "a1", "u2", "a2", "u3", "a3"]
    );
    assert_eq!(fits_all.tokens.messages, 9);
    let one_less = build_context(&path, &options(8, &summary_costs_three)).unwrap();
    assert_eq!(one_less.kept_entry_ids, ["u2", "a2", "u3", "a3"]);
    assert_eq!(one_less.reason, ContextBuildReason::Trimmed);
    // The summary alone over the budget: the newest group still goes.
    let tiny = build_context(&path, &options(2, &summary_costs_three)).unwrap();
    assert_eq!(tiny.kept_entry_ids, ["u3", "a3"]);
    assert_eq!(tiny.reason, ContextBuildReason::SingleGroupOverflow);
    assert_eq!(
        text_of(&tiny.messages[0]).lines().next(),
        Some("【会话压缩摘要】")
    );
}

// Compactions: only the latest counts, and it must point at an interaction before it.

#[test]
fn a_compaction_that_points_at_no_interaction_before_it_is_refused_in_the_original_s_words() {
    let with_compaction = |first_kept: &str, last: Vec<SessionEntry>| {
        let mut path = vec![user("u1", None), answer("a1", Some("u1"), &[])];
        path.push(compaction("c", Some("a1"), first_kept));
        path.extend(last);
        path
    };
    let cases = [
        (
            "build first kept after the compaction",
            with_compaction("u2", vec![user("u2", Some("c"))]),
        ),
        ("build first kept missing", with_compaction("gone", vec![])),
        (
            "build first kept not a user message",
            with_compaction("a1", vec![]),
        ),
    ];
    for (case, path) in cases {
        assert_eq!(
            error_text(build_context(&path, &options(100, &one))),
            original_error(case),
            "{case}"
        );
    }
}

#[test]
fn an_older_compaction_is_not_checked_or_read_once_a_newer_one_exists() {
    // compact-1 points at an entry that is gone from this path; only
    // compact-2 counts, so the rebuild does not look at compact-1.
    let path = vec![
        user("u1", None),
        answer("a1", Some("u1"), &[]),
        compaction("c1", Some("a1"), "elsewhere"),
        user("u2", Some("c1")),
        answer("a2", Some("u2"), &[]),
        compaction("c2", Some("a2"), "u2"),
        user("u3", Some("c2")),
        answer("a3", Some("u3"), &[]),
    ];
    let built = build_context(&path, &options(100, &one)).unwrap();
    assert_eq!(built.kept_entry_ids, ["u2", "a2", "u3", "a3"]);
    assert_eq!(built.messages.len(), 5);
}

#[test]
fn create_compaction_entry_refuses_in_the_original_s_words() {
    let input = |id: &str, first_kept: &str, goal: &str| CreateCompactionInput {
        id: id.to_string(),
        timestamp: 1,
        summary: summary(goal),
        first_kept_entry_id: first_kept.to_string(),
        tokens_before: 1,
    };
    let cases = [
        ("create empty path", vec![], input("c", "u1", "g")),
        (
            "create duplicate id",
            vec![user("u1", None)],
            input("u1", "u1", "g"),
        ),
        (
            "create first kept inside a group",
            vec![user("u1", None), answer("a1", Some("u1"), &[])],
            input("c", "a1", "g"),
        ),
        (
            "create blank goal",
            vec![user("u1", None)],
            input("c", "u1", ""),
        ),
    ];
    for (case, path, input) in cases {
        assert_eq!(
            error_text(create_compaction_entry(&path, input)),
            original_error(case),
            "{case}"
        );
    }
    // A path whose tool facts do not pair cannot be compacted either.
    let broken = [user("u1", None), answer("a1", Some("u1"), &["k"])];
    assert_eq!(
        error_text(create_compaction_entry(&broken, input("c", "u1", "g"))),
        "tool call k（entry a1）缺少 result"
    );
}

#[test]
fn a_created_compaction_appends_and_rebuilds_after_reopening() {
    let directory = TempDir::new("resume");
    let file = directory.0.join("session.jsonl");
    let mut store = JsonlSessionStore::open(&file).unwrap();
    for entry in conversation(4) {
        store.append(&entry).unwrap();
    }
    let path = path_to(&store.entries().unwrap(), "a3").unwrap();
    let entry = create_compaction_entry(
        &path,
        CreateCompactionInput {
            id: "compact".to_string(),
            timestamp: 9,
            summary: summary("恢复以后再构建"),
            first_kept_entry_id: "u3".to_string(),
            tokens_before: 12,
        },
    )
    .unwrap();
    store.append(&entry).unwrap();
    store.append(&user("u4", Some("compact"))).unwrap();
    store.append(&answer("a4", Some("u4"), &[])).unwrap();
    drop(store);

    let reopened = JsonlSessionStore::open(&file).unwrap();
    let path = path_to(&reopened.entries().unwrap(), "a4").unwrap();
    let built = build_context(&path, &options(100, &one)).unwrap();
    assert_eq!(
        built.kept_entry_ids,
        ["u3", "c3", "rj3", "rk3", "a3", "u4", "a4"]
    );
    assert_eq!(built.messages.len(), 9);
    assert!(text_of(&built.messages[1]).contains("目标：恢复以后再构建"));
}

// Determinism and cost.

#[test]
fn rebuilding_is_deterministic_and_serializes_to_the_same_bytes() {
    let entries = original_entries();
    let path = path_to(&entries, "a6").unwrap();
    let options = options(150, &quarter_bytes);
    let results: Vec<BuildContextResult> = (0..5)
        .map(|_| build_context(&path, &options).unwrap())
        .collect();
    let bytes: HashSet<String> = results
        .iter()
        .map(|result| serde_json::to_string(result).unwrap())
        .collect();
    assert_eq!(bytes.len(), 1);
}

#[test]
fn each_message_is_estimated_at_most_once() {
    let path = conversation(300);
    let calls = Cell::new(0u64);
    let counting = |_: &AgentMessage| {
        calls.set(calls.get() + 1);
        1
    };
    for max_tokens in [0, 10, 500, 10_000] {
        calls.set(0);
        build_context(&path, &options(max_tokens, &counting)).unwrap();
        assert!(
            calls.get() <= path.len() as u64,
            "maxTokens {max_tokens}：{} 次估算，路径只有 {} 条",
            calls.get(),
            path.len()
        );
    }
}
