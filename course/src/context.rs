//! Chapter 11: history fixed, context rebuilt to a budget.
//!
//! The session (chapter 10) only grows. What a model reads is rebuilt from
//! it before each request: the *active path* (from [`crate::session::path_to`])
//! goes in, and a list of messages that fits a token budget comes out. The
//! session is never changed by that; another budget gives another view of the
//! same history.
//!
//! The unit of trimming is the *interaction*: a user message and everything
//! that answers it, up to the next user message ([`group_interactions`]).
//! Cutting inside one would send a tool call without its result, or a result
//! without its call. So [`build_context`] first subtracts the fixed costs
//! (the system message, the output reserved for the answer, a safety
//! margin), then keeps whole interactions, newest first, while they fit.
//!
//! Older interactions can be summed up in a compaction entry
//! ([`create_compaction_entry`]), appended like any other fact. On the next
//! rebuild the latest compaction's summary goes in front, rendered as a
//! `【会话压缩摘要】` block, and the messages start again at its first kept
//! interaction.
//!
//! Counting tokens is the caller's: the estimator is injected
//! ([`BuildContextOptions::estimate_tokens`]), so tests count exactly and a
//! program can use bytes/4 or a real tokenizer. Every count is a `u64`: the
//! original's checks for negative or non-finite numbers are the type's.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::{EntryKind, SessionEntry, SessionError, parse_session_entry};
use crate::types::{
    AgentMessage, AssistantContent, SystemMessage, UserMessage, current_system_message, text,
};

/// What a compaction keeps of the conversation it replaces, in seven
/// fields: the goal, then six lists (each may be empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummary {
    pub goal: String,
    pub constraints: Vec<String>,
    pub completed: Vec<String>,
    pub decisions: Vec<String>,
    pub changed_files: Vec<String>,
    pub unresolved: Vec<String>,
    pub next: Vec<String>,
}

/// One interaction: a user message entry first, then the message entries
/// that answer it, in path order. Every tool call in it has exactly one
/// result in it.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionGroup {
    pub entries: Vec<SessionEntry>,
}

/// The budget of one request, and how to count a message's tokens.
#[derive(Clone, Copy)]
pub struct BuildContextOptions<'a> {
    /// The model's whole window.
    pub max_tokens: u64,
    /// Kept free for the answer.
    pub reserved_output: u64,
    /// Kept free for the estimate's error.
    pub safety_margin: u64,
    /// The tokens one message costs. Called on the system message, the
    /// summary message and the messages of the interactions considered.
    pub estimate_tokens: &'a dyn Fn(&AgentMessage) -> u64,
}

/// Why the messages are what they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextBuildReason {
    /// Every interaction since the latest compaction fits.
    WithinBudget,
    /// Older interactions were left out.
    Trimmed,
    /// The newest interaction alone does not fit; it is kept whole anyway
    /// and the result is over budget. What to do (compact, shorten, stop)
    /// is the caller's choice.
    SingleGroupOverflow,
}

/// Where the tokens go: `available_for_messages` is `max_tokens` less the
/// fixed costs (never below 0); `total` is what this request uses,
/// reserved output and margin included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextTokenProjection {
    pub max_tokens: u64,
    pub system: u64,
    pub messages: u64,
    pub reserved_output: u64,
    pub safety_margin: u64,
    pub available_for_messages: u64,
    pub total: u64,
}

/// The rebuilt context. `messages` is [the current system message?, the
/// compaction summary?, ...the kept messages], copies of the path's;
/// `kept_entry_ids` names the kept messages' entries (the system message
/// and the summary come from no single entry).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildContextResult {
    pub messages: Vec<AgentMessage>,
    pub kept_entry_ids: Vec<String>,
    pub reason: ContextBuildReason,
    pub tokens: ContextTokenProjection,
}

/// What the caller decides for a new compaction; its parent is the path's
/// last entry.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateCompactionInput {
    pub id: String,
    pub timestamp: u64,
    pub summary: CompactionSummary,
    /// The user message whose interaction is the first one kept.
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
}

/// A compaction and its summary have exactly these fields.
const COMPACTION_KEYS: [&str; 7] = [
    "id",
    "parentId",
    "timestamp",
    "type",
    "summary",
    "firstKeptEntryId",
    "tokensBefore",
];
const SUMMARY_KEYS: [&str; 7] = [
    "goal",
    "constraints",
    "completed",
    "decisions",
    "changedFiles",
    "unresolved",
    "next",
];

/// Refuses the first field of a compaction entry's JSON (or of its
/// summary) that is not one of its own, naming it as the original does:
/// an old draft's `files`, `nextSteps` or `invariants` in the summary, or
/// `compactedEntryIds` on the entry, is refused in its words
/// (`session compaction ID.summary 包含未知字段 files`). The session's
/// strict reader ([`crate::session::parse_session_entry`]) calls it.
pub fn check_compaction_keys(value: &Value, id: &str) -> Result<(), SessionError> {
    let levels = [
        (value, &COMPACTION_KEYS, format!("session entry {id}")),
        (
            &value["summary"],
            &SUMMARY_KEYS,
            format!("session compaction {id}.summary"),
        ),
    ];
    for (object, known, label) in levels {
        let unknown = (object.as_object())
            .and_then(|object| object.keys().find(|key| !known.contains(&key.as_str())));
        if let Some(key) = unknown {
            return Err(invalid(format!("{label} 包含未知字段 {key}")));
        }
    }
    Ok(())
}

/// Splits message entries into interactions: a user message starts one;
/// system messages belong to none (they are replayed apart) and are
/// skipped. Results pair with calls by `toolCallId`, not by position, so
/// results that finished out of order are fine. A message before the
/// first user message, an entry that is not a message, and a tool result
/// without its call, twice, or missing are refused. The groups hold copies.
pub fn group_interactions(entries: &[SessionEntry]) -> Result<Vec<InteractionGroup>, SessionError> {
    let mut groups: Vec<InteractionGroup> = Vec::new();
    for entry in entries {
        let EntryKind::Message { message } = &entry.kind else {
            return Err(invalid(format!("session entry {} 不是 message", entry.id)));
        };
        match (message, groups.last_mut()) {
            (AgentMessage::System(_), _) => {}
            (AgentMessage::User(_), _) => groups.push(InteractionGroup {
                entries: vec![entry.clone()],
            }),
            (_, Some(group)) => group.entries.push(entry.clone()),
            (_, None) => {
                return Err(invalid(format!(
                    "message entry {} 在第一个 user interaction 之前",
                    entry.id
                )));
            }
        }
    }
    for group in &groups {
        check_pairs(group)?;
    }
    Ok(groups)
}

/// Rebuilds what the model reads from `active_path`, root first:
///
/// 1. the system messages of the whole path (before a compaction too)
///    fold into one leading message
///    ([`crate::types::current_system_message`]);
/// 2. its cost, the reserved output and the safety margin come off
///    `max_tokens` first;
/// 3. the latest compaction, if any, becomes a summary message whose cost
///    comes off next, and the messages start at its first kept entry;
/// 4. whole interactions are kept, newest first, while they fit; the
///    newest is kept even when it alone does not.
///
/// The same path and options give the same result.
pub fn build_context(
    active_path: &[SessionEntry],
    options: &BuildContextOptions,
) -> Result<BuildContextResult, SessionError> {
    let estimate = options.estimate_tokens;
    let system_message = replayed_system_message(active_path).map(AgentMessage::System);
    let system = system_message.as_ref().map_or(0, estimate);
    let available_for_messages = (options.max_tokens)
        .saturating_sub(system)
        .saturating_sub(options.reserved_output)
        .saturating_sub(options.safety_margin);

    let (start, summary) = resume_point(active_path)?;
    let groups = group_interactions(&message_entries(&active_path[start..]))?;
    let summary_cost = summary.as_ref().map_or(0, estimate);
    let budget = available_for_messages.saturating_sub(summary_cost);

    // Newest first; the newest group is taken whatever it costs.
    let mut first = groups.len();
    let mut kept_cost = 0;
    while first > 0 {
        let cost = group_cost(&groups[first - 1], estimate);
        if first < groups.len() && kept_cost + cost > budget {
            break;
        }
        first -= 1;
        kept_cost += cost;
    }
    let reason = if kept_cost > budget {
        ContextBuildReason::SingleGroupOverflow
    } else if first > 0 {
        ContextBuildReason::Trimmed
    } else {
        ContextBuildReason::WithinBudget
    };

    let kept: Vec<SessionEntry> = groups
        .into_iter()
        .skip(first)
        .flat_map(|group| group.entries)
        .collect();
    let kept_entry_ids = kept.iter().map(|entry| entry.id.clone()).collect();
    let messages = system_message
        .into_iter()
        .chain(summary)
        .chain(kept.into_iter().filter_map(|entry| match entry.kind {
            EntryKind::Message { message } => Some(message),
            _ => None,
        }))
        .collect();
    let message_tokens = summary_cost + kept_cost;
    Ok(BuildContextResult {
        messages,
        kept_entry_ids,
        reason,
        tokens: ContextTokenProjection {
            max_tokens: options.max_tokens,
            system,
            messages: message_tokens,
            reserved_output: options.reserved_output,
            safety_margin: options.safety_margin,
            available_for_messages,
            total: system + message_tokens + options.reserved_output + options.safety_margin,
        },
    })
}

/// Makes the compaction entry that continues `active_path`: its parent is
/// the path's last entry, its id is new on the path, and its first kept
/// entry starts an interaction. It is checked as the session checks a
/// line ([`crate::session::parse_session_entry`]) and returned; nothing is
/// appended and the path is only read. Appending it is the caller's choice.
pub fn create_compaction_entry(
    active_path: &[SessionEntry],
    input: CreateCompactionInput,
) -> Result<SessionEntry, SessionError> {
    let parent = active_path
        .last()
        .ok_or_else(|| invalid("空 active path 不能创建 compaction".to_string()))?;
    if active_path.iter().any(|entry| entry.id == input.id) {
        return Err(invalid(format!("session entry id 重复：{}", input.id)));
    }
    let groups = group_interactions(&message_entries(active_path))?;
    if !groups
        .iter()
        .any(|group| group.entries[0].id == input.first_kept_entry_id)
    {
        return Err(invalid(format!(
            "firstKeptEntryId {} 必须是完整 interaction 的首条 message",
            input.first_kept_entry_id
        )));
    }
    let entry = SessionEntry {
        id: input.id,
        parent_id: Some(parent.id.clone()),
        timestamp: input.timestamp,
        kind: EntryKind::Compaction {
            summary: input.summary,
            first_kept_entry_id: input.first_kept_entry_id,
            tokens_before: input.tokens_before,
        },
    };
    let value = serde_json::to_value(&entry).map_err(|error| invalid(error.to_string()))?;
    parse_session_entry(&value)
}

/// Within one interaction: each call id once, each result's call there,
/// each call answered once. Only ids count, not positions. Checked in path
/// order, so the problem reported is always the same one.
fn check_pairs(group: &InteractionGroup) -> Result<(), SessionError> {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for (entry, message) in messages_of(&group.entries) {
        match message {
            AgentMessage::Assistant(assistant) => {
                for block in &assistant.content {
                    if let AssistantContent::ToolCall(call) = block {
                        calls.push((call.id.as_str(), entry.id.as_str()));
                    }
                }
            }
            AgentMessage::ToolResult(result) => {
                results.push((result.tool_call_id.as_str(), entry.id.as_str()));
            }
            _ => {}
        }
    }
    let call_entries = unique(&calls, "tool call")?;
    let result_entries = unique(&results, "tool result")?;
    if let Some((call, entry)) = results
        .iter()
        .find(|(call, _)| !call_entries.contains_key(call))
    {
        return Err(invalid(format!(
            "tool result {entry} 引用了不存在的 call {call}"
        )));
    }
    if let Some((call, entry)) = calls
        .iter()
        .find(|(call, _)| !result_entries.contains_key(call))
    {
        return Err(invalid(format!(
            "tool call {call}（entry {entry}）缺少 result"
        )));
    }
    Ok(())
}

/// `(call id, entry id)` pairs as a map, refusing a call id seen twice.
fn unique<'a>(
    pairs: &[(&'a str, &'a str)],
    what: &str,
) -> Result<HashMap<&'a str, &'a str>, SessionError> {
    let mut seen = HashMap::new();
    for &(call, entry) in pairs {
        if let Some(previous) = seen.insert(call, entry) {
            return Err(invalid(format!(
                "interaction 中 {what} {call} 重复：{previous} 与 {entry}"
            )));
        }
    }
    Ok(seen)
}

/// The message entries among `entries`, with their messages.
fn messages_of(entries: &[SessionEntry]) -> impl Iterator<Item = (&SessionEntry, &AgentMessage)> {
    entries.iter().filter_map(|entry| match &entry.kind {
        EntryKind::Message { message } => Some((entry, message)),
        _ => None,
    })
}

/// Copies of the message entries among `entries` (metadata and
/// compactions belong to no interaction).
fn message_entries(entries: &[SessionEntry]) -> Vec<SessionEntry> {
    messages_of(entries)
        .map(|(entry, _)| entry.clone())
        .collect()
}

/// The tokens of one interaction: the sum of its messages' estimates.
fn group_cost(group: &InteractionGroup, estimate: &dyn Fn(&AgentMessage) -> u64) -> u64 {
    messages_of(&group.entries)
        .map(|(_, message)| estimate(message))
        .sum()
}

/// The system message the model follows at the end of the path: every
/// system message on it replayed, those before a compaction too (a
/// compaction sums up the conversation, not the instructions).
fn replayed_system_message(active_path: &[SessionEntry]) -> Option<SystemMessage> {
    let systems: Vec<AgentMessage> = messages_of(active_path)
        .filter(|(_, message)| matches!(message, AgentMessage::System(_)))
        .map(|(_, message)| message.clone())
        .collect();
    current_system_message(&systems)
}

/// Where the kept messages start, and the summary message in front of
/// them. Only the latest compaction counts: it sums up everything before
/// it, earlier summaries included. Its first kept entry must be a user
/// message before it on the path.
fn resume_point(
    active_path: &[SessionEntry],
) -> Result<(usize, Option<AgentMessage>), SessionError> {
    let latest = active_path
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, entry)| match &entry.kind {
            EntryKind::Compaction {
                summary,
                first_kept_entry_id,
                ..
            } => Some((index, entry, summary, first_kept_entry_id)),
            _ => None,
        });
    let Some((index, compaction, summary, first_kept)) = latest else {
        return Ok((0, None));
    };
    let label = format!(
        "compaction {} 的 firstKeptEntryId {first_kept}",
        compaction.id
    );
    let start = active_path[..index]
        .iter()
        .position(|entry| entry.id == *first_kept)
        .ok_or_else(|| invalid(format!("{label} 不在它之前")))?;
    if !matches!(
        &active_path[start].kind,
        EntryKind::Message {
            message: AgentMessage::User(_)
        }
    ) {
        return Err(invalid(format!("{label} 不是 interaction 起点")));
    }
    let message = AgentMessage::User(UserMessage {
        content: vec![text(summary_text(summary))],
        timestamp: compaction.timestamp,
    });
    Ok((start, Some(message)))
}

/// The summary as the model reads it: a title, the goal, then each list
/// under its label, `- （无）` for an empty one.
fn summary_text(summary: &CompactionSummary) -> String {
    let mut lines = vec![
        "【会话压缩摘要】".to_string(),
        format!("目标：{}", summary.goal),
    ];
    let lists = [
        ("约束", &summary.constraints),
        ("已完成", &summary.completed),
        ("决策", &summary.decisions),
        ("变更文件", &summary.changed_files),
        ("未解决", &summary.unresolved),
        ("下一步", &summary.next),
    ];
    for (label, values) in lists {
        lines.push(format!("{label}："));
        if values.is_empty() {
            lines.push("- （无）".to_string());
        }
        lines.extend(values.iter().map(|value| format!("- {value}")));
    }
    lines.join("\n")
}

fn invalid(message: String) -> SessionError {
    SessionError::Invalid(message)
}
