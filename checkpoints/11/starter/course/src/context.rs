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

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::session::{EntryKind, SessionEntry, SessionError};
use crate::types::AgentMessage;

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

/// Refuses the first field of a compaction entry's JSON (or of its
/// summary) that is not one of its own, naming it as the original does:
/// an old draft's `files`, `nextSteps` or `invariants` in the summary, or
/// `compactedEntryIds` on the entry, is refused in its words
/// (`session compaction ID.summary 包含未知字段 files`). The session's
/// strict reader ([`crate::session::parse_session_entry`]) calls it.
pub fn check_compaction_keys(_value: &Value, _id: &str) -> Result<(), SessionError> {
    todo!("Lab 11.1 check_compaction_keys 尚未实现")
}

/// Splits message entries into interactions: a user message starts one;
/// system messages belong to none (they are replayed apart) and are
/// skipped. Results pair with calls by `toolCallId`, not by position, so
/// results that finished out of order are fine. A message before the
/// first user message, an entry that is not a message, and a tool result
/// without its call, twice, or missing are refused. The groups hold copies.
pub fn group_interactions(
    _entries: &[SessionEntry],
) -> Result<Vec<InteractionGroup>, SessionError> {
    todo!("Lab 11.2 group_interactions 尚未实现")
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
    _options: &BuildContextOptions,
) -> Result<BuildContextResult, SessionError> {
    // A compaction is an entry that is neither a message nor metadata
    // (step 11.1 adds it to `EntryKind`).
    let resumes = active_path.iter().any(|entry| {
        !matches!(
            entry.kind,
            EntryKind::Message { .. } | EntryKind::Metadata { .. }
        )
    });
    if resumes {
        todo!("Lab 11.5 从最新 compaction 恢复 尚未实现")
    }
    todo!("Lab 11.3 build_context 尚未实现")
}

/// Makes the compaction entry that continues `active_path`: its parent is
/// the path's last entry, its id is new on the path, and its first kept
/// entry starts an interaction. It is checked as the session checks a
/// line ([`crate::session::parse_session_entry`]) and returned; nothing is
/// appended and the path is only read. Appending it is the caller's choice.
pub fn create_compaction_entry(
    _active_path: &[SessionEntry],
    _input: CreateCompactionInput,
) -> Result<SessionEntry, SessionError> {
    todo!("Lab 11.4 create_compaction_entry 尚未实现")
}
