//! Chapter 10: the session tree — a JSONL log that survives a crash.
//!
//! A session is a tree of entries. Each entry has a stable `id` and points
//! at the entry it continues (`parent_id`, `None` for a root); two entries
//! with the same parent are two branches. Nothing is ever rewritten: a new
//! attempt is a new entry. The caller picks a leaf, and [`path_to`] walks
//! the parents back to the root: that path is the conversation, and
//! [`messages_on_path`] turns it into the messages a model reads.
//!
//! On disk a session is JSON Lines: one entry per line, no header, the
//! bytes the original course writes (its `JSON.stringify` key order). A
//! line counts only once its `\n` is written, so a crash in the middle of
//! an append leaves at most an uncommitted tail, which [`recover_jsonl`]
//! reports ([`SessionWarning::UnterminatedTail`]) instead of reading. A bad
//! line that does end in `\n` was committed broken: reading fails and names
//! its line.
//!
//! The log is strict where chapter 03's types are lenient: a line is
//! accepted only when it reads into those types *and writes back to the
//! same JSON* ([`parse_session_entry`]). A field the types do not know (at
//! any depth, which serde's `deny_unknown_fields` cannot check inside
//! tagged enums) would be lost by the next write, so it is refused.
//!
//! Chapter 11 adds a third kind of entry, a compaction: a summary of the
//! conversation before one of its interactions, appended like any other
//! fact. It changes no entry before it; [`crate::context::build_context`]
//! reads it to rebuild what the model sees.
//!
//! Appends are blocking calls that take `&mut self`: the original queues
//! its appends on a promise so that each runs after the one called before
//! it; in Rust the borrow checker gives the same guarantee, since no second
//! append can start while one runs. A store shared between threads goes in
//! a `Mutex`, and that mutex is the queue.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::{CompactionSummary, check_compaction_keys};
use crate::types::{AgentMessage, AssistantContent};

/// One line of a session file:
/// `{"id","parentId","timestamp","type":"message","message"}`,
/// `{"id","parentId","timestamp","type":"metadata","key","value"}` or
/// `{"id","parentId","timestamp","type":"compaction","summary","firstKeptEntryId","tokensBefore"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    /// Names the entry for good; never empty, unique in the session.
    pub id: String,
    /// The entry this one continues; `None` (`null`) for a root.
    pub parent_id: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// What the entry holds, tagged by `type` after the three fields above.
    #[serde(flatten)]
    pub kind: EntryKind,
}

/// What an entry holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum EntryKind {
    /// A finished message: the only entries a model ever reads.
    Message { message: AgentMessage },
    /// A fact about the session for the program (a working folder, a
    /// setting): on the path, never sent to the model.
    Metadata { key: String, value: Value },
    /// Chapter 11: the conversation before `first_kept_entry_id` (the
    /// user message that starts an interaction), summed up. Its parent is
    /// never `None`: it continues a conversation. `tokens_before` is the
    /// caller's estimate of the context it replaces, kept as a record.
    #[serde(rename_all = "camelCase")]
    Compaction {
        summary: CompactionSummary,
        first_kept_entry_id: String,
        tokens_before: u64,
    },
}

/// Why a session could not be read or written.
#[derive(Debug, Clone)]
pub enum SessionError {
    /// A line, an entry or a tree that breaks the session's rules; the text
    /// says which and where.
    Invalid(String),
    /// The file's I/O failed. After a failed append the file store repeats
    /// this same error (the same `Arc`) for every later call.
    Io(Arc<io::Error>),
}

/// What reading a session found besides its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum SessionWarning {
    /// The file's last line has content but no `\n`: an append that never
    /// finished. It is not read; `line` is its 1-based number.
    UnterminatedTail { line: usize },
}

/// The committed entries of a session file and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionReadResult {
    pub entries: Vec<SessionEntry>,
    pub warnings: Vec<SessionWarning>,
}

/// Where entries are kept. `append` checks the entry and the tree (the
/// parent already there, the id new) and keeps its own copy.
pub trait SessionStore {
    fn append(&mut self, entry: &SessionEntry) -> Result<(), SessionError>;
    /// Every committed entry, in the order appended.
    fn entries(&self) -> Result<Vec<SessionEntry>, SessionError>;
}

/// The three file operations the JSONL store needs. Narrow on purpose:
/// a test can make one fail, or write half a line and then fail.
pub trait SessionFileIo: Send {
    /// Creates the file (and its folders) if missing; never truncates.
    fn ensure_file(&self, file: &Path) -> io::Result<()>;
    /// The whole file as text.
    fn read_file(&self, file: &Path) -> io::Result<String>;
    /// Adds `value` at the end of the file.
    fn append_file(&self, file: &Path, value: &str) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileSystem;

impl SessionFileIo for FileSystem {
    fn ensure_file(&self, file: &Path) -> io::Result<()> {
        if let Some(folder) = file.parent() {
            fs::create_dir_all(folder)?;
        }
        OpenOptions::new().create(true).append(true).open(file)?;
        Ok(())
    }

    /// Invalid UTF-8 (a character cut by a crash) becomes U+FFFD, as Node's
    /// `readFile(…, "utf8")` does, so a torn tail never hides the lines
    /// before it.
    fn read_file(&self, file: &Path) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&fs::read(file)?).into_owned())
    }

    /// Opens in append mode and writes the line: the bytes already in the
    /// file are never touched, whatever its size.
    fn append_file(&self, file: &Path, value: &str) -> io::Result<()> {
        OpenOptions::new()
            .append(true)
            .open(file)?
            .write_all(value.as_bytes())
    }
}

/// Reads an untyped JSON value into an entry, or says what is wrong with
/// it: the entry's shape (an unknown `type`, `role` or content block, a
/// wrong type, a missing field), an empty id, or a field that would not be
/// written back (unknown, or `null` where the types omit the field). A
/// compaction's fields are checked by name first, as the original checks
/// them ([`check_compaction_keys`]): an old draft's summary, whose `files`
/// took the place of `changedFiles`, is refused for `files`, not for the
/// missing field.
/// Non-finite numbers cannot reach here: `serde_json` refuses them in text
/// and a `Value` cannot hold one.
pub fn parse_session_entry(value: &Value) -> Result<SessionEntry, SessionError> {
    if let (Some("compaction"), Some(id)) = (value["type"].as_str(), value["id"].as_str()) {
        check_compaction_keys(value, id)?;
    }
    let entry = SessionEntry::deserialize(value)
        .map_err(|error| invalid(format!("session entry 形状不对：{error}")))?;
    check_entry(&entry)?;
    let written = serde_json::to_value(&entry).map_err(|error| invalid(error.to_string()))?;
    match difference(value, &written, &format!("session entry {}", entry.id)) {
        Some(problem) => Err(invalid(problem)),
        None => Ok(entry),
    }
}

/// Reads the committed entries of a session file's text. Blank lines are
/// layout. A last line without `\n` is an uncommitted tail: reported, not
/// read, however complete it looks. A committed line that is not JSON or
/// not an entry fails, naming its physical line.
pub fn recover_jsonl(text: &str) -> Result<SessionReadResult, SessionError> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    let mut warnings = Vec::new();
    // After a final `\n` the last piece is "", so this is "no `\n` at the end".
    if lines.last().is_some_and(|tail| !tail.trim().is_empty()) {
        warnings.push(SessionWarning::UnterminatedTail { line: lines.len() });
        lines.pop();
    }
    let mut entries = Vec::new();
    for (index, line) in lines.into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let number = index + 1;
        let value: Value = serde_json::from_str(line).map_err(|error| {
            invalid(format!(
                "session JSONL 第 {number} 行不是合法 JSON：{error}"
            ))
        })?;
        let entry = parse_session_entry(&value).map_err(|error| {
            invalid(format!(
                "session JSONL 第 {number} 行不是合法 session entry：{error}"
            ))
        })?;
        entries.push(entry);
    }
    Ok(SessionReadResult { entries, warnings })
}

/// A session in memory.
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    log: Vec<SessionEntry>,
    ids: HashSet<String>,
}

impl SessionStore for InMemorySessionStore {
    fn append(&mut self, entry: &SessionEntry) -> Result<(), SessionError> {
        check_entry(entry)?;
        check_next(entry, &self.ids)?;
        self.ids.insert(entry.id.clone());
        self.log.push(entry.clone());
        Ok(())
    }

    fn entries(&self) -> Result<Vec<SessionEntry>, SessionError> {
        Ok(self.log.clone())
    }
}

/// A session in a JSONL file. It keeps only the ids in memory; every
/// append writes one line at the end of the file.
///
/// Two states stop appends. A file opened with an uncommitted tail can be
/// read but not appended to until someone repairs it (appending after the
/// half line would turn it into a committed bad line). A failed write
/// taints the store: the file may now end in half a line the store cannot
/// see, so every later call returns that first error and does no I/O.
/// Opening the file again reads what is really there.
pub struct JsonlSessionStore {
    file: PathBuf,
    io: Box<dyn SessionFileIo>,
    ids: HashSet<String>,
    needs_repair: Option<SessionWarning>,
    tainted: Option<SessionError>,
}

impl JsonlSessionStore {
    /// Opens (creating if needed) a session file on disk.
    pub fn open(file: impl AsRef<Path>) -> Result<Self, SessionError> {
        Self::open_with(file, Box::new(FileSystem))
    }

    /// Opens a session file through `io`: reads it once, and checks that its
    /// committed entries form a tree (ids unique, each parent on an earlier
    /// line).
    pub fn open_with(
        file: impl AsRef<Path>,
        io: Box<dyn SessionFileIo>,
    ) -> Result<Self, SessionError> {
        let file = file.as_ref().to_path_buf();
        io.ensure_file(&file).map_err(io_error)?;
        let recovered = recover_jsonl(&io.read_file(&file).map_err(io_error)?)?;
        let mut ids = HashSet::new();
        for entry in &recovered.entries {
            check_next(entry, &ids)?;
            ids.insert(entry.id.clone());
        }
        Ok(JsonlSessionStore {
            file,
            io,
            ids,
            needs_repair: recovered.warnings.first().copied(),
            tainted: None,
        })
    }

    /// The file's committed entries and warnings, read now.
    pub fn read(&self) -> Result<SessionReadResult, SessionError> {
        if let Some(error) = &self.tainted {
            return Err(error.clone());
        }
        recover_jsonl(&self.io.read_file(&self.file).map_err(io_error)?)
    }
}

impl SessionStore for JsonlSessionStore {
    /// Checks the entry, turns it into its line now, checks the tree, and
    /// writes the line. A refused entry writes nothing and changes nothing;
    /// a failed write taints the store.
    fn append(&mut self, entry: &SessionEntry) -> Result<(), SessionError> {
        if let Some(error) = &self.tainted {
            return Err(error.clone());
        }
        if let Some(SessionWarning::UnterminatedTail { line }) = self.needs_repair {
            return Err(invalid(format!(
                "session 文件第 {line} 行有未提交尾部；修复前不能 append"
            )));
        }
        check_entry(entry)?;
        let line = line_of(entry)?;
        check_next(entry, &self.ids)?;
        if let Err(error) = self.io.append_file(&self.file, &line) {
            let error = io_error(error);
            self.tainted = Some(error.clone());
            return Err(error);
        }
        self.ids.insert(entry.id.clone());
        Ok(())
    }

    fn entries(&self) -> Result<Vec<SessionEntry>, SessionError> {
        Ok(self.read()?.entries)
    }
}

/// The entries from a root to `leaf_id`, root first: the conversation that
/// leaf continues. Only the chosen branch must be whole (a missing parent
/// or a cycle elsewhere is not this path's problem), but a duplicate id
/// anywhere fails, since it makes every `parent_id` ambiguous.
pub fn path_to(entries: &[SessionEntry], leaf_id: &str) -> Result<Vec<SessionEntry>, SessionError> {
    let mut by_id = HashMap::new();
    for entry in entries {
        if by_id.insert(entry.id.as_str(), entry).is_some() {
            return Err(invalid(format!("session entry id 重复：{}", entry.id)));
        }
    }
    let mut current = *by_id
        .get(leaf_id)
        .ok_or_else(|| invalid(format!("未知 session leaf：{leaf_id}")))?;
    let mut visited = HashSet::new();
    let mut path = Vec::new();
    loop {
        if !visited.insert(current.id.as_str()) {
            return Err(invalid(format!("session parent 在 {} 形成环", current.id)));
        }
        path.push(current.clone());
        let Some(parent_id) = &current.parent_id else {
            break;
        };
        current = by_id.get(parent_id.as_str()).ok_or_else(|| {
            invalid(format!(
                "session entry {} 的 parent {parent_id} 缺失",
                current.id
            ))
        })?;
    }
    path.reverse();
    Ok(path)
}

/// The messages on the path to `leaf_id`, in order: metadata and
/// compactions left out, everything else whole (tool calls with their ids
/// and arguments, results with `is_error` and `details`), so every call
/// stays paired with its result. A lossy projection such as `text_of` would break the pairs.
pub fn messages_on_path(
    entries: &[SessionEntry],
    leaf_id: &str,
) -> Result<Vec<AgentMessage>, SessionError> {
    let path = path_to(entries, leaf_id)?;
    Ok(path
        .into_iter()
        .filter_map(|entry| match entry.kind {
            EntryKind::Message { message } => Some(message),
            EntryKind::Metadata { .. } | EntryKind::Compaction { .. } => None,
        })
        .collect())
}

/// The rules serde's shapes do not cover: ids, keys and tool names are not
/// blank (the original trims before it checks); a compaction has a parent,
/// a goal and a first kept entry.
fn check_entry(entry: &SessionEntry) -> Result<(), SessionError> {
    non_empty(&entry.id, "session entry.id")?;
    let label = format!("session entry {}", entry.id);
    if let Some(parent_id) = &entry.parent_id {
        non_empty(parent_id, &format!("{label}.parentId"))?;
    }
    match &entry.kind {
        EntryKind::Metadata { key, .. } => non_empty(key, &format!("{label}.key")),
        EntryKind::Message { message } => check_message(message, &format!("{label}.message")),
        EntryKind::Compaction {
            summary,
            first_kept_entry_id,
            ..
        } => {
            let label = format!("session compaction {}", entry.id);
            if entry.parent_id.is_none() {
                return Err(invalid(format!("{label}.parentId 必须是 string")));
            }
            non_empty(&summary.goal, &format!("{label}.summary.goal"))?;
            non_empty(first_kept_entry_id, &format!("{label}.firstKeptEntryId"))
        }
    }
}

fn check_message(message: &AgentMessage, label: &str) -> Result<(), SessionError> {
    match message {
        AgentMessage::Assistant(assistant) => {
            for (index, block) in assistant.content.iter().enumerate() {
                if let AssistantContent::ToolCall(call) = block {
                    non_empty(&call.id, &format!("{label}.content[{index}].id"))?;
                    non_empty(&call.name, &format!("{label}.content[{index}].name"))?;
                }
            }
            Ok(())
        }
        AgentMessage::ToolResult(result) => {
            non_empty(&result.tool_call_id, &format!("{label}.toolCallId"))?;
            non_empty(&result.tool_name, &format!("{label}.toolName"))
        }
        AgentMessage::System(_) | AgentMessage::User(_) => Ok(()),
    }
}

fn non_empty(value: &str, label: &str) -> Result<(), SessionError> {
    if value.trim().is_empty() {
        return Err(invalid(format!("{label} 必须是非空 string")));
    }
    Ok(())
}

/// The tree rules for the next entry of a log: its id is new and its
/// parent, if any, is already there.
fn check_next(entry: &SessionEntry, ids: &HashSet<String>) -> Result<(), SessionError> {
    if ids.contains(&entry.id) {
        return Err(invalid(format!("session entry id 重复：{}", entry.id)));
    }
    match &entry.parent_id {
        Some(parent_id) if !ids.contains(parent_id) => Err(invalid(format!(
            "session entry {} 的 parent {parent_id} 尚不存在",
            entry.id
        ))),
        _ => Ok(()),
    }
}

/// The first place where the JSON that was read and the JSON the entry
/// writes differ: a field that would be lost, or one that would appear.
fn difference(read: &Value, written: &Value, label: &str) -> Option<String> {
    match (read, written) {
        (Value::Object(read), Value::Object(written)) => {
            if let Some(key) = read.keys().find(|key| !written.contains_key(*key)) {
                return Some(format!("{label} 包含不会被写回的字段 {key}"));
            }
            if let Some(key) = written.keys().find(|key| !read.contains_key(*key)) {
                return Some(format!("{label} 缺少字段 {key}"));
            }
            read.iter().find_map(|(key, value)| {
                difference(value, &written[key], &format!("{label}.{key}"))
            })
        }
        (Value::Array(read), Value::Array(written)) if read.len() == written.len() => read
            .iter()
            .zip(written)
            .enumerate()
            .find_map(|(index, (read, written))| {
                difference(read, written, &format!("{label}[{index}]"))
            }),
        _ if read == written => None,
        _ => Some(format!("{label} 写回后不同")),
    }
}

/// The entry's line as the original writes it, `\n` included. Its parser
/// builds a system message as role, content, timestamp and adds `sections`
/// last, and a tool result's `details` last too; chapter 03's wire puts
/// them earlier, so they move to the end here.
fn line_of(entry: &SessionEntry) -> Result<String, SessionError> {
    let mut value = serde_json::to_value(entry).map_err(|error| invalid(error.to_string()))?;
    if let Some(message) = value.get_mut("message").and_then(Value::as_object_mut) {
        for key in ["sections", "details"] {
            if let Some(moved) = message.shift_remove(key) {
                message.insert(key.to_string(), moved);
            }
        }
    }
    Ok(format!("{value}\n"))
}

fn invalid(message: String) -> SessionError {
    SessionError::Invalid(message)
}

fn io_error(error: io::Error) -> SessionError {
    SessionError::Io(Arc::new(error))
}

/// The text of an error: an `Invalid` error is its message; an `Io` error
/// says the session file failed and why.
impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Invalid(message) => f.write_str(message),
            SessionError::Io(error) => write!(f, "session 文件读写失败：{error}"),
        }
    }
}

impl std::error::Error for SessionError {}
