//! The `agent` example's session file (chapter 10's `JsonlSessionStore`):
//! opened and made fit to continue before the run, and the run's messages
//! appended once it ends. Nothing is written while a run goes on.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::Path;
use std::process;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use course::session::{
    EntryKind, JsonlSessionStore, SessionEntry, SessionError, SessionStore, SessionWarning, path_to,
};
use course::types::{AgentMessage, AssistantContent, ToolResultMessage, text};
use serde_json::json;

use crate::cli;

/// A session file, ready to continue: its store and the active path, whose
/// last entry is the leaf the next entry continues.
pub struct Opened {
    pub store: JsonlSessionStore,
    pub path: Vec<SessionEntry>,
}

impl Opened {
    fn leaf(&self) -> Option<String> {
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

    /// Appends `messages` in order, each the child of the one before: a
    /// run's new messages, once it ended. The first error stops it (the
    /// store then refuses every later append).
    pub fn save(&mut self, messages: &[AgentMessage]) -> Result<(), SessionError> {
        for message in messages {
            let message = message.clone();
            self.append(EntryKind::Message { message })?;
        }
        Ok(())
    }
}

/// Opens `file` (created if missing) and chooses the path to continue: to
/// the newest entry. A last line without `\n` (its writer stopped in the
/// middle of it) is cut off first, and calls on the path that have no
/// result get an error result, both said on stderr. The error is the exit
/// code and the text: 2 for a file that is not a session, 1 for failed I/O.
pub fn open(file: &Path) -> Result<Opened, (u8, String)> {
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
    let path = match read.entries.last() {
        Some(newest) => path_to(&read.entries, &newest.id).map_err(refused)?,
        None => Vec::new(),
    };
    let mut opened = Opened { store, path };
    let messages: Vec<AgentMessage> = opened.path.iter().filter_map(message_of).collect();
    for result in unanswered(&messages) {
        cli::say(&format!(
            "会话里的工具调用 {}（{}）没有结果：上次运行在存下它的结果之前停止了。补上一条错误结果再继续。",
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
/// after it answers: a process stopped while a run's messages were being
/// saved (between a call's line and its result's), or the file was cut by
/// hand. The calls may or may not have run. Without these results the next
/// request would carry unanswered calls, which an OpenAI-compatible API
/// refuses.
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
                "这个调用没有结果：发起它的运行在存下它的结果之前停止了，它可能执行过，也可能没有。",
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
