//! Chapter 11's context rebuild on a 100,000-entry path, beside one deep
//! copy of the path (what any rebuild that hands out copies must do), and
//! its cost per entry on a path four times as long: it grows with the
//! path's length and no faster.
//!
//! `cargo run --release -p course --example bench_context [-- --quick]`
//! (`--quick`: 10,000 and 40,000 entries). Figures are printed, never asserted.

mod common;

use common::{Goal, figure, interleaved, millis, row};
use course::context::{
    BuildContextOptions, CompactionSummary, CreateCompactionInput, build_context,
    create_compaction_entry, group_interactions,
};
use course::session::{EntryKind, SessionEntry};
use course::types::{
    AgentMessage, AssistantMessage, StopReason, SystemMessage, ToolCall, ToolResultMessage,
    UserMessage, assistant_message, text, text_of,
};
use serde_json::json;

/// A quarter of the text's UTF-8 bytes, rounded up, plus 4 per message.
fn quarter_bytes(message: &AgentMessage) -> u64 {
    text_of(message).len().div_ceil(4) as u64 + 4
}

fn push(path: &mut Vec<SessionEntry>, kind: EntryKind) {
    let parent_id = path.last().map(|entry| entry.id.clone());
    path.push(SessionEntry {
        id: format!("e-{}", path.len()),
        parent_id,
        timestamp: 1_767_225_600_000 + path.len() as u64,
        kind,
    });
}

fn message(path: &mut Vec<SessionEntry>, message: AgentMessage) {
    push(path, EntryKind::Message { message });
}

fn summary() -> CompactionSummary {
    CompactionSummary {
        goal: "把会话压缩到预算里".to_string(),
        constraints: vec!["工具调用和结果成对".to_string()],
        completed: vec!["读了 src/lib.rs".to_string()],
        decisions: vec![],
        changed_files: vec!["src/context.rs".to_string()],
        unresolved: vec![],
        next: vec!["继续".to_string()],
    }
}

/// A path of about `entries` entries: a system message, then interactions
/// of a user question, a tool call, its result and an answer; a system
/// patch and a metadata entry now and then, and one compaction halfway.
fn long_path(entries: usize) -> Vec<SessionEntry> {
    let mut path = Vec::with_capacity(entries + 4);
    let system = SystemMessage {
        content: "You are Pi.".to_string(),
        sections: None,
        timestamp: 0,
    };
    message(&mut path, AgentMessage::System(system));
    let mut turn = 0;
    let mut compacted = false;
    while path.len() < entries {
        let user = UserMessage {
            content: vec![text(format!("第 {turn} 个问题：读一下 src/lib.rs 再回答"))],
            timestamp: 1,
        };
        message(&mut path, AgentMessage::User(user));
        let first_of_turn = path.last().unwrap().id.clone();
        let call = ToolCall {
            id: format!("call-{turn}"),
            name: "read".to_string(),
            arguments: json!({"path": "src/lib.rs"}),
            raw_arguments: None,
        };
        let asking = AssistantMessage {
            timestamp: 2,
            ..assistant_message(vec![call.into()], StopReason::ToolUse)
        };
        message(&mut path, AgentMessage::Assistant(asking));
        let result = ToolResultMessage {
            tool_call_id: format!("call-{turn}"),
            tool_name: "read".to_string(),
            content: vec![text("//! The learner's crate.\npub mod context;")],
            details: None,
            is_error: false,
            timestamp: 3,
        };
        message(&mut path, AgentMessage::ToolResult(result));
        let answer = AssistantMessage {
            timestamp: 4,
            ..assistant_message(
                vec![text(format!("回答 {turn}：这个文件声明了本课程的模块。")).into()],
                StopReason::Stop,
            )
        };
        message(&mut path, AgentMessage::Assistant(answer));
        if turn % 100 == 99 {
            let key = "turns".to_string();
            push(
                &mut path,
                EntryKind::Metadata {
                    key,
                    value: json!(turn),
                },
            );
        }
        if path.len() >= entries / 2 && !compacted {
            compacted = true;
            let compaction = EntryKind::Compaction {
                summary: summary(),
                first_kept_entry_id: first_of_turn,
                tokens_before: 1_000_000,
            };
            push(&mut path, compaction);
        }
        turn += 1;
    }
    path
}

fn options(max_tokens: u64) -> BuildContextOptions<'static> {
    BuildContextOptions {
        max_tokens,
        reserved_output: 4_096,
        safety_margin: 1_024,
        estimate_tokens: &quarter_bytes,
    }
}

fn main() {
    let (size, longer) = if common::quick() {
        (10_000, 40_000)
    } else {
        (100_000, 400_000)
    };
    let path = long_path(size);
    let size = format!("{} entries", path.len());

    let everything = options(u64::MAX / 2);
    let kept = build_context(&path, &everything)
        .expect("rebuild")
        .messages
        .len();
    let (rebuild, copy) = interleaved(
        || millis(|| drop(build_context(&path, &everything).expect("rebuild"))),
        || millis(|| drop(path.to_vec())),
    );
    row(
        "context rebuild, everything fits",
        &format!("{size}, {kept} messages kept"),
        figure(rebuild, "ms"),
        Some(figure(copy, "ms (one deep copy of the path)")),
        Goal::Reported,
    );

    let budget = options(32_000);
    let trimmed = build_context(&path, &budget).expect("rebuild");
    let trimmed_times: Vec<f64> = (0..common::runs())
        .map(|_| millis(|| drop(build_context(&path, &budget).expect("rebuild"))))
        .collect();
    row(
        "context rebuild, 32,000-token window",
        &format!(
            "{size}, {} messages kept ({:?})",
            trimmed.messages.len(),
            trimmed.reason
        ),
        figure(trimmed_times, "ms"),
        None,
        Goal::Reported,
    );

    // Linear: the time per entry at 4x the length, the two sizes run in
    // turn, beside a deep copy's. (Below about 30,000 entries the data fit
    // this machine's 32 MB cache and every entry is cheaper.)
    let long = long_path(longer);
    let per_entry = |path: &[SessionEntry], work: &dyn Fn(&[SessionEntry])| {
        millis(|| work(path)) * 1e3 / path.len() as f64
    };
    let rebuild = |path: &[SessionEntry]| drop(build_context(path, &everything).expect("rebuild"));
    let (ours, longer_path) =
        interleaved(|| per_entry(&path, &rebuild), || per_entry(&long, &rebuild));
    row(
        "context rebuild per entry",
        &format!("{} vs {} entries", path.len(), long.len()),
        figure(ours, "µs per entry"),
        Some(figure(longer_path, "µs per entry")),
        Goal::Reported,
    );
    let copy = |path: &[SessionEntry]| drop(path.to_vec());
    let (ours, longer_path) = interleaved(|| per_entry(&path, &copy), || per_entry(&long, &copy));
    row(
        "deep copy per entry",
        &format!("{} vs {} entries", path.len(), long.len()),
        figure(ours, "µs per entry"),
        Some(figure(longer_path, "µs per entry")),
        Goal::Reported,
    );
    drop(long);

    let messages: Vec<SessionEntry> = path
        .iter()
        .filter(|entry| matches!(entry.kind, EntryKind::Message { .. }))
        .cloned()
        .collect();
    let grouping: Vec<f64> = (0..common::runs())
        .map(|_| millis(|| drop(group_interactions(&messages).expect("groups"))))
        .collect();
    row(
        "group_interactions",
        &format!("{} message entries", messages.len()),
        figure(grouping, "ms"),
        None,
        Goal::Reported,
    );

    let first_kept = trimmed.kept_entry_ids[0].clone();
    let create: Vec<f64> = (0..common::runs())
        .map(|_| {
            let input = CreateCompactionInput {
                id: "compact-new".to_string(),
                timestamp: 1,
                summary: summary(),
                first_kept_entry_id: first_kept.clone(),
                tokens_before: trimmed.tokens.total,
            };
            millis(|| drop(create_compaction_entry(&path, input).expect("compaction")))
        })
        .collect();
    row(
        "create_compaction_entry",
        &size,
        figure(create, "ms"),
        None,
        Goal::Reported,
    );
}
