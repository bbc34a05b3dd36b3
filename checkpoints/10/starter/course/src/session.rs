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
//! Appends are blocking calls that take `&mut self`: the original queues
//! its appends on a promise so that each runs after the one called before
//! it; in Rust the borrow checker gives the same guarantee, since no second
//! append can start while one runs. A store shared between threads goes in
//! a `Mutex`, and that mutex is the queue.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::types::AgentMessage;

/// One line of a session file:
/// `{"id","parentId","timestamp","type":"message","message"}` or
/// `{"id","parentId","timestamp","type":"metadata","key","value"}`.
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
    fn ensure_file(&self, _file: &Path) -> io::Result<()> {
        todo!("Lab 10.5 FileSystem::ensure_file 尚未实现")
    }

    /// Invalid UTF-8 (a character cut by a crash) becomes U+FFFD, as Node's
    /// `readFile(…, "utf8")` does, so a torn tail never hides the lines
    /// before it.
    fn read_file(&self, _file: &Path) -> io::Result<String> {
        todo!("Lab 10.5 FileSystem::read_file 尚未实现")
    }

    /// Opens in append mode and writes the line: the bytes already in the
    /// file are never touched, whatever its size.
    fn append_file(&self, _file: &Path, _value: &str) -> io::Result<()> {
        todo!("Lab 10.5 FileSystem::append_file 尚未实现")
    }
}

/// Reads an untyped JSON value into an entry, or says what is wrong with
/// it: the entry's shape (an unknown `type`, `role` or content block, a
/// wrong type, a missing field), an empty id, or a field that would not be
/// written back (unknown, or `null` where the types omit the field).
/// Non-finite numbers cannot reach here: `serde_json` refuses them in text
/// and a `Value` cannot hold one.
pub fn parse_session_entry(_value: &Value) -> Result<SessionEntry, SessionError> {
    todo!("Lab 10.2 parse_session_entry 尚未实现")
}

/// Reads the committed entries of a session file's text. Blank lines are
/// layout. A last line without `\n` is an uncommitted tail: reported, not
/// read, however complete it looks. A committed line that is not JSON or
/// not an entry fails, naming its physical line.
pub fn recover_jsonl(_text: &str) -> Result<SessionReadResult, SessionError> {
    todo!("Lab 10.4 recover_jsonl 尚未实现")
}

/// A session in memory.
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    // The fields are yours to choose.
}

impl SessionStore for InMemorySessionStore {
    fn append(&mut self, _entry: &SessionEntry) -> Result<(), SessionError> {
        todo!("Lab 10.3 InMemorySessionStore::append 尚未实现")
    }

    fn entries(&self) -> Result<Vec<SessionEntry>, SessionError> {
        todo!("Lab 10.3 InMemorySessionStore::entries 尚未实现")
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
    // The fields are yours to choose (the file, its I/O, what the store
    // knows and the states that stop appends).
}

impl JsonlSessionStore {
    /// Opens (creating if needed) a session file on disk.
    pub fn open(_file: impl AsRef<Path>) -> Result<Self, SessionError> {
        todo!("Lab 10.5 JsonlSessionStore::open 尚未实现")
    }

    /// Opens a session file through `io`: reads it once, and checks that its
    /// committed entries form a tree (ids unique, each parent on an earlier
    /// line).
    pub fn open_with(
        _file: impl AsRef<Path>,
        _io: Box<dyn SessionFileIo>,
    ) -> Result<Self, SessionError> {
        todo!("Lab 10.5 JsonlSessionStore::open_with 尚未实现")
    }

    /// The file's committed entries and warnings, read now.
    pub fn read(&self) -> Result<SessionReadResult, SessionError> {
        todo!("Lab 10.5 JsonlSessionStore::read 尚未实现")
    }
}

impl SessionStore for JsonlSessionStore {
    /// Checks the entry, turns it into its line now, checks the tree, and
    /// writes the line. A refused entry writes nothing and changes nothing;
    /// a failed write taints the store.
    fn append(&mut self, _entry: &SessionEntry) -> Result<(), SessionError> {
        todo!("Lab 10.5 JsonlSessionStore::append 尚未实现")
    }

    fn entries(&self) -> Result<Vec<SessionEntry>, SessionError> {
        todo!("Lab 10.5 JsonlSessionStore::entries 尚未实现")
    }
}

/// The entries from a root to `leaf_id`, root first: the conversation that
/// leaf continues. Only the chosen branch must be whole (a missing parent
/// or a cycle elsewhere is not this path's problem), but a duplicate id
/// anywhere fails, since it makes every `parent_id` ambiguous.
pub fn path_to(
    _entries: &[SessionEntry],
    _leaf_id: &str,
) -> Result<Vec<SessionEntry>, SessionError> {
    todo!("Lab 10.1 path_to 尚未实现")
}

/// The messages on the path to `leaf_id`, in order: metadata left out,
/// everything else whole (tool calls with their ids and arguments, results
/// with `is_error` and `details`), so every call stays paired with its
/// result. A lossy projection such as `text_of` would break the pairs.
pub fn messages_on_path(
    _entries: &[SessionEntry],
    _leaf_id: &str,
) -> Result<Vec<AgentMessage>, SessionError> {
    todo!("Lab 10.6 messages_on_path 尚未实现")
}

/// The text of an error: an `Invalid` error is its message; an `Io` error
/// says the session file failed and why.
impl fmt::Display for SessionError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!("Lab 10.1 SessionError 的 Display 尚未实现")
    }
}

impl std::error::Error for SessionError {}
