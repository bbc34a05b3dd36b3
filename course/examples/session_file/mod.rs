//! The `agent` example's session file (chapter 10's `JsonlSessionStore`):
//! opened and made fit to continue before chapter 13's runtime takes it
//! over, and `--compact` (chapter 11's compaction entry). Everything here
//! happens before the first prompt; from then on only the runtime appends.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::Path;
use std::process;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use course::context::{
    BuildContextOptions, BuildContextResult, CompactionSummary, ContextBuildReason,
    CreateCompactionInput, build_context, create_compaction_entry,
};
use course::provider_adapter::OpenAiCompatibleModel;
use course::session::{
    EntryKind, JsonlSessionStore, SessionEntry, SessionError, SessionStore, SessionWarning,
    parse_session_entry, path_to,
};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, Model, StreamOptions, ToolResultMessage, text,
    text_of, user_message,
};
use serde_json::{Value, json};

use crate::cli;

/// A session file, ready for the runtime: its store and the active path,
/// whose last entry is the leaf the runtime continues.
pub struct Opened {
    pub store: JsonlSessionStore,
    pub path: Vec<SessionEntry>,
}

impl Opened {
    pub fn leaf(&self) -> Option<String> {
        self.path.last().map(|entry| entry.id.clone())
    }

    /// Appends `kind` after the leaf, as the new leaf.
    fn append(&mut self, kind: EntryKind) -> Result<(), SessionError> {
        let entry = SessionEntry {
            id: new_id(),
            parent_id: self.leaf(),
            timestamp: now(),
            kind,
        };
        self.store.append(&entry)?;
        self.path.push(entry);
        Ok(())
    }
}

/// Opens `file` (created if missing) and chooses the path to continue: to
/// `leaf`, or to the newest entry. A last line without `\n` (its writer
/// stopped in the middle of it) is cut off first, and calls on the path
/// that have no result get an error result, both said on stderr. The error
/// is the exit code and the text: 2 for a file that is not a session or a
/// leaf it does not hold, 1 for failed I/O.
pub fn open(file: &Path, leaf: Option<&str>) -> Result<Opened, (u8, String)> {
    let refused = |error: SessionError| {
        let code = match error {
            SessionError::Invalid(_) => 2,
            SessionError::Io(_) => 1,
        };
        let problem = format!("会话文件 {} 无法使用：{error}", file.display());
        (code, problem)
    };
    let store = JsonlSessionStore::open(file).map_err(refused)?;
    let read = store.read().map_err(refused)?;
    let store = match read.warnings.first() {
        None => store,
        Some(SessionWarning::UnterminatedTail { line }) => {
            let cut = cut_tail(file).map_err(|error| {
                let problem = format!("无法截掉会话文件 {} 的未提交尾部：{error}", file.display());
                (1, problem)
            })?;
            cli::say(&format!(
                "会话文件 {} 的第 {line} 行没有写完（unterminated_tail：写它的运行在写完之前停止了），这一行不算数。已截掉这 {cut} 个字节，从前面已提交的 {} 条记录接着写。",
                file.display(),
                read.entries.len()
            ));
            JsonlSessionStore::open(file).map_err(refused)?
        }
    };
    let newest = read.entries.last().map(|entry| entry.id.as_str());
    let path = match leaf.or(newest) {
        Some(leaf) => path_to(&read.entries, leaf).map_err(refused)?,
        None => Vec::new(),
    };
    let mut opened = Opened { store, path };
    let messages: Vec<AgentMessage> = opened.path.iter().filter_map(message_of).collect();
    for result in unanswered(&messages) {
        cli::say(&format!(
            "会话里的工具调用 {}（{}）没有结果：上次运行在它返回之前停止了。补上一条错误结果再继续。",
            result.tool_call_id, result.tool_name
        ));
        let message = AgentMessage::ToolResult(result);
        opened
            .append(EntryKind::Message { message })
            .map_err(refused)?;
    }
    Ok(opened)
}

/// The message of a message entry.
pub fn message_of(entry: &SessionEntry) -> Option<AgentMessage> {
    match &entry.kind {
        EntryKind::Message { message } => Some(message.clone()),
        _ => None,
    }
}

/// A new entry's id: the time, the pid and a counter, unique across runs.
pub fn new_id() -> String {
    static APPENDED: AtomicUsize = AtomicUsize::new(0);
    let count = APPENDED.fetch_add(1, Ordering::SeqCst) + 1;
    format!("{}-{}-{count}", now(), process::id())
}

/// Milliseconds since the Unix epoch: a new entry's timestamp.
pub fn now() -> u64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH);
    now.unwrap_or_default().as_millis() as u64
}

/// Error results for the calls of the last assistant message that no result
/// after it answers: a process stopped while they ran, or while their
/// results were being saved, so they may or may not have run. Without them
/// the next request would carry unanswered calls, which an
/// OpenAI-compatible API refuses.
fn unanswered(messages: &[AgentMessage]) -> Vec<ToolResultMessage> {
    let last = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, message)| match message {
            AgentMessage::Assistant(assistant) => Some((at, assistant)),
            _ => None,
        });
    let Some((at, assistant)) = last else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[at + 1..]
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolResult(result) => Some(result.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let calls = assistant.content.iter().filter_map(|block| match block {
        AssistantContent::ToolCall(call) if !answered.contains(&call.id.as_str()) => Some(call),
        _ => None,
    });
    calls
        .map(|call| ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![text(
                "这个调用没有结果：发起它的运行在它返回之前停止了，它可能执行过，也可能没有。",
            )],
            details: Some(json!({ "interrupted": true })),
            is_error: true,
            timestamp: now(),
        })
        .collect()
}

/// Cuts the file back to its last `\n`: the bytes after it are an append
/// that never finished. Returns how many bytes were cut.
fn cut_tail(file: &Path) -> io::Result<usize> {
    let bytes = fs::read(file)?;
    let committed = bytes
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    let file = OpenOptions::new().write(true).open(file)?;
    file.set_len(committed as u64)?;
    Ok(bytes.len() - committed)
}

/// What `--compact` asks the model, after the conversation it sums up.
pub const COMPACT_INSTRUCTION: &str = "把上面的对话压缩成一份摘要，供以后接着工作。只回答一个 JSON 对象，不要别的文字，恰好这 7 个字段：goal（字符串，不能为空：要达成什么），constraints、completed、decisions、changedFiles、unresolved、next（都是字符串数组，可以为空：约束、已完成、决定、改过的文件、没解决的问题、下一步）。对话里有【会话压缩摘要】的话，把它也并进来。";

/// How a message is counted against `--context-tokens`.
pub type Estimate = fn(&AgentMessage) -> u64;

/// `--compact`: everything before the newest interaction on the path
/// becomes one compaction entry. The model writes the summary in one call,
/// whose request is rebuilt to `budget` (the instruction last); the line it
/// makes is read by the session's strict parser, then
/// `create_compaction_entry` checks it against the path before it is
/// appended. Said on stderr; an error leaves the file as it was.
pub fn compact(
    opened: &mut Opened,
    model: &OpenAiCompatibleModel,
    budget: Option<u64>,
    estimate: Estimate,
    signal: &Arc<AtomicBool>,
) -> Result<(), String> {
    let failed = |error: SessionError| format!("压缩失败，会话文件没有改动：{error}");
    let path = opened.path.clone();
    let newest = path.iter().rposition(|entry| {
        matches!(
            &entry.kind,
            EntryKind::Message {
                message: AgentMessage::User(_)
            }
        )
    });
    let now = rebuild(&path, None, estimate).map_err(failed)?;
    let Some(newest) = newest.filter(|&at| now.kept_entry_ids.first() != Some(&path[at].id)) else {
        cli::say("--compact：最新的一次交互之前没有新的对话可以压缩，会话文件没有改动。");
        return Ok(());
    };
    let first_kept = path[newest].id.clone();
    let compacted = now.kept_entry_ids.iter().position(|id| *id == first_kept);
    let compacted = compacted.unwrap_or_default();

    let mut asked = path[..newest].to_vec();
    asked.push(SessionEntry {
        id: "compact-instruction".to_string(),
        parent_id: asked.last().map(|entry| entry.id.clone()),
        timestamp: 0,
        kind: EntryKind::Message {
            message: AgentMessage::User(user_message(COMPACT_INSTRUCTION)),
        },
    });
    let context = AgentContext {
        messages: rebuild(&asked, budget, estimate).map_err(failed)?.messages,
        tools: None,
    };
    let options = StreamOptions {
        signal: Some(Arc::clone(signal)),
    };
    let answer = model.stream(&context, options).blocking_result();
    let answer = answer.map_err(|error| format!("压缩失败，会话文件没有改动：{error}"))?;
    if let Some(error) = &answer.error_message {
        return Err(format!("压缩失败，会话文件没有改动：模型调用出错：{error}"));
    }
    let said = text_of(&AgentMessage::Assistant(answer));
    let summary = (said.find('{').zip(said.rfind('}')))
        .and_then(|(from, to)| serde_json::from_str::<Value>(said.get(from..=to)?).ok())
        .ok_or_else(|| {
            let said = cli::readable(&said);
            format!("压缩失败，会话文件没有改动：模型的回答里没有 JSON 对象：{said}")
        })?;

    // The session's strict parser reads the whole line first: an unknown
    // or missing field of the model's summary is refused in its words.
    let (id, timestamp) = (new_id(), self::now());
    let tokens_before = now.tokens.total;
    let line = json!({ "id": id, "parentId": opened.leaf(), "timestamp": timestamp,
        "type": "compaction", "summary": summary, "firstKeptEntryId": first_kept,
        "tokensBefore": tokens_before });
    parse_session_entry(&line).map_err(failed)?;
    let summary: CompactionSummary =
        serde_json::from_value(line["summary"].clone()).expect("the strict parser read it");
    let goal = cli::readable(&summary.goal);
    let input = CreateCompactionInput {
        id,
        timestamp,
        summary,
        first_kept_entry_id: first_kept,
        tokens_before,
    };
    let entry = create_compaction_entry(&path, input).map_err(failed)?;
    let written = opened.store.append(&entry);
    written.map_err(|error| format!("压缩失败：写入会话文件出错：{error}"))?;
    opened.path.push(entry);
    cli::say(&format!(
        "已压缩会话：最新一次交互之前的 {compacted} 条消息（估算共 {tokens_before} tokens 的上下文）换成了一条摘要，目标：{goal}"
    ));
    Ok(())
}

/// `build_context` over `path` with `estimate` and `budget` tokens
/// (`None`: no limit), nothing reserved beyond it.
fn rebuild(
    path: &[SessionEntry],
    budget: Option<u64>,
    estimate: Estimate,
) -> Result<BuildContextResult, SessionError> {
    let options = BuildContextOptions {
        max_tokens: budget.unwrap_or(u64::MAX),
        reserved_output: 0,
        safety_margin: 0,
        estimate_tokens: &estimate,
    };
    let built = build_context(path, &options)?;
    if built.reason == ContextBuildReason::SingleGroupOverflow {
        cli::say(
            "压缩请求超出预算（single_group_overflow）：要压缩的最后一次交互单独就放不下，仍然整段发送。",
        );
    }
    Ok(built)
}
