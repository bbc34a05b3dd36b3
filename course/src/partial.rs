//! Snapshots of an assistant message while it is being generated.
//!
//! Every progress [`ModelEvent`] carries `partial`, the message so far. Copying
//! the whole message into each event would make streaming N deltas cost
//! O(N²) bytes. Instead a [`MessageDraft`] appends every delta once into a
//! log shared with all of its snapshots, and a [`PartialMessage`] records only
//! how far into each block it sees. A snapshot therefore costs O(blocks), not
//! O(bytes so far), and still never changes after it was taken.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::types::{
    AssistantContent, AssistantMessage, DoneReason, ErrorReason, ModelEvent, StopReason,
    TextContent, ToolCall, Usage, wire,
};

/// A frozen view of the message being generated, cheap to clone and to carry.
///
/// Serializes as the assistant message it shows (with `"role":"assistant"`);
/// [`to_message`](PartialMessage::to_message) materializes it.
#[derive(Clone)]
pub struct PartialMessage {
    /// Every field but `content` (which is always empty here).
    header: Arc<AssistantMessage>,
    log: Log,
    /// How much of each block this snapshot sees.
    marks: Vec<Mark>,
}

/// The producer's side: builds one assistant message from deltas and hands out
/// the events that describe each step.
pub struct MessageDraft {
    header: Arc<AssistantMessage>,
    log: Log,
    marks: Vec<Mark>,
}

/// A delta that does not fit the message being built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftError {
    /// `content_index` skips ahead of the blocks built so far.
    IndexOutOfOrder { content_index: usize, blocks: usize },
    /// The block at `content_index` is of another kind.
    WrongKind {
        content_index: usize,
        expected: &'static str,
    },
    /// The tool call at `content_index` already ended.
    ToolCallEnded { content_index: usize },
}

/// Append-only storage shared by a draft and its snapshots.
type Log = Arc<RwLock<Vec<Block>>>;

enum Block {
    Text(String),
    ToolCall {
        id: String,
        name: String,
        raw: Option<String>,
        /// Set once, by `tool_call_end` (or for a call that arrived complete).
        arguments: Option<Value>,
    },
}

#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Bytes of the block's text (or raw arguments) visible.
    len: usize,
    /// Whether a tool call's parsed arguments are visible.
    ended: bool,
}

impl PartialMessage {
    /// The message this snapshot shows, as an owned value.
    pub fn to_message(&self) -> AssistantMessage {
        let blocks = read(&self.log);
        let content = self
            .marks
            .iter()
            .zip(blocks.iter())
            .map(|(mark, block)| block.view(*mark))
            .collect();
        AssistantMessage {
            content,
            ..AssistantMessage::clone(&self.header)
        }
    }

    /// How many content blocks this snapshot shows.
    pub fn content_len(&self) -> usize {
        self.marks.len()
    }
}

impl From<AssistantMessage> for PartialMessage {
    fn from(message: AssistantMessage) -> Self {
        MessageDraft::new(message).snapshot()
    }
}

impl PartialEq for PartialMessage {
    fn eq(&self, other: &Self) -> bool {
        self.to_message() == other.to_message()
    }
}

impl fmt::Debug for PartialMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PartialMessage")
            .field(&self.to_message())
            .finish()
    }
}

impl Serialize for PartialMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        wire::assistant::serialize(&self.to_message(), serializer)
    }
}

impl<'de> Deserialize<'de> for PartialMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        wire::assistant::deserialize(deserializer).map(PartialMessage::from)
    }
}

impl MessageDraft {
    /// Starts from `message`: its fields become the header, and any content it
    /// already has counts as complete blocks.
    pub fn new(mut message: AssistantMessage) -> Self {
        let mut marks = Vec::with_capacity(message.content.len());
        let blocks = message
            .content
            .drain(..)
            .map(|content| {
                let block = Block::from(content);
                marks.push(block.complete_mark());
                block
            })
            .collect();
        MessageDraft {
            header: Arc::new(message),
            log: Arc::new(RwLock::new(blocks)),
            marks,
        }
    }

    /// A snapshot of the message so far.
    pub fn snapshot(&self) -> PartialMessage {
        PartialMessage {
            header: Arc::clone(&self.header),
            log: Arc::clone(&self.log),
            marks: self.marks.clone(),
        }
    }

    /// The message so far, as an owned value.
    pub fn message(&self) -> AssistantMessage {
        self.snapshot().to_message()
    }

    /// The `start` event.
    pub fn start(&self) -> ModelEvent {
        ModelEvent::Start {
            partial: self.snapshot(),
        }
    }

    /// Appends `delta` to the text block at `content_index` (a new block when
    /// the index is one past the end) and returns the `text_delta` event.
    pub fn text_delta(
        &mut self,
        content_index: usize,
        delta: &str,
    ) -> Result<ModelEvent, DraftError> {
        self.append(content_index, delta, NewBlock::Text)?;
        Ok(ModelEvent::TextDelta {
            content_index,
            delta: delta.to_owned(),
            partial: self.snapshot(),
        })
    }

    /// Appends `delta` to the raw arguments of the tool call at
    /// `content_index`. A new call (index one past the end) takes `id` and
    /// `name`; an existing one keeps its own. Returns the `toolcall_delta` event.
    pub fn tool_call_delta(
        &mut self,
        content_index: usize,
        id: &str,
        name: &str,
        delta: &str,
    ) -> Result<ModelEvent, DraftError> {
        self.append(content_index, delta, NewBlock::ToolCall { id, name })?;
        Ok(ModelEvent::ToolCallDelta {
            content_index,
            delta: delta.to_owned(),
            partial: self.snapshot(),
        })
    }

    /// Settles the tool call at `content_index` with its parsed `arguments`
    /// and returns the `toolcall_end` event.
    pub fn tool_call_end(
        &mut self,
        content_index: usize,
        arguments: Value,
    ) -> Result<ModelEvent, DraftError> {
        let mut blocks = write(&self.log);
        let open = self
            .marks
            .get(content_index)
            .is_some_and(|mark| !mark.ended);
        match blocks.get_mut(content_index) {
            Some(Block::ToolCall {
                arguments: slot, ..
            }) if open => *slot = Some(arguments),
            Some(Block::ToolCall { .. }) => {
                return Err(DraftError::ToolCallEnded { content_index });
            }
            Some(Block::Text(_)) => {
                return Err(DraftError::WrongKind {
                    content_index,
                    expected: "toolCall",
                });
            }
            None => {
                return Err(DraftError::IndexOutOfOrder {
                    content_index,
                    blocks: self.marks.len(),
                });
            }
        }
        let mark = &mut self.marks[content_index];
        mark.ended = true;
        let AssistantContent::ToolCall(tool_call) = blocks[content_index].view(*mark) else {
            unreachable!("a tool call block views as a tool call");
        };
        drop(blocks);
        Ok(ModelEvent::ToolCallEnd {
            content_index,
            tool_call,
            partial: self.snapshot(),
        })
    }

    /// Records the tokens spent so far; later snapshots show them.
    pub fn set_usage(&mut self, usage: Usage) {
        Arc::make_mut(&mut self.header).usage = usage;
    }

    /// Finishes normally: the `done` event with the final message.
    pub fn finish(self, reason: DoneReason) -> ModelEvent {
        ModelEvent::Done {
            reason,
            message: self.into_message(reason.into(), None),
        }
    }

    /// Fails: the `error` event with the content so far and `error_message`.
    pub fn fail(self, reason: ErrorReason, error_message: impl Into<String>) -> ModelEvent {
        ModelEvent::Error {
            reason,
            error: self.into_message(reason.into(), Some(error_message.into())),
        }
    }

    fn into_message(
        self,
        stop_reason: StopReason,
        error_message: Option<String>,
    ) -> AssistantMessage {
        AssistantMessage {
            stop_reason,
            error_message,
            ..self.message()
        }
    }

    /// Appends to the block at `content_index`, creating it from `new_block`
    /// when the index is one past the end.
    fn append(
        &mut self,
        content_index: usize,
        delta: &str,
        new_block: NewBlock<'_>,
    ) -> Result<(), DraftError> {
        let mut blocks = write(&self.log);
        if content_index == self.marks.len() {
            blocks.push(new_block.build());
            self.marks.push(Mark {
                len: 0,
                ended: false,
            });
        }
        let blocks_built = self.marks.len();
        let mark = self
            .marks
            .get_mut(content_index)
            .ok_or(DraftError::IndexOutOfOrder {
                content_index,
                blocks: blocks_built,
            })?;
        let buffer = match (&mut blocks[content_index], new_block) {
            (Block::Text(text), NewBlock::Text) => text,
            (Block::ToolCall { .. }, NewBlock::ToolCall { .. }) if mark.ended => {
                return Err(DraftError::ToolCallEnded { content_index });
            }
            (Block::ToolCall { raw, .. }, NewBlock::ToolCall { .. }) => {
                raw.get_or_insert_with(String::new)
            }
            (_, new_block) => {
                return Err(DraftError::WrongKind {
                    content_index,
                    expected: new_block.kind(),
                });
            }
        };
        buffer.push_str(delta);
        mark.len = buffer.len();
        Ok(())
    }
}

/// The block a delta creates when it opens a new content index.
#[derive(Clone, Copy)]
enum NewBlock<'a> {
    Text,
    ToolCall { id: &'a str, name: &'a str },
}

impl NewBlock<'_> {
    fn kind(self) -> &'static str {
        match self {
            NewBlock::Text => "text",
            NewBlock::ToolCall { .. } => "toolCall",
        }
    }

    fn build(self) -> Block {
        match self {
            NewBlock::Text => Block::Text(String::new()),
            NewBlock::ToolCall { id, name } => Block::ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                raw: Some(String::new()),
                arguments: None,
            },
        }
    }
}

impl Block {
    fn view(&self, mark: Mark) -> AssistantContent {
        match self {
            Block::Text(text) => AssistantContent::Text(TextContent {
                text: text[..mark.len].to_owned(),
            }),
            Block::ToolCall {
                id,
                name,
                raw,
                arguments,
            } => AssistantContent::ToolCall(ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: match arguments {
                    Some(arguments) if mark.ended => arguments.clone(),
                    _ => Value::Object(Map::new()),
                },
                raw_arguments: raw.as_ref().map(|raw| raw[..mark.len].to_owned()),
            }),
        }
    }

    fn complete_mark(&self) -> Mark {
        let len = match self {
            Block::Text(text) => text.len(),
            Block::ToolCall { raw, .. } => raw.as_ref().map_or(0, String::len),
        };
        Mark { len, ended: true }
    }
}

impl From<AssistantContent> for Block {
    fn from(content: AssistantContent) -> Self {
        match content {
            AssistantContent::Text(TextContent { text }) => Block::Text(text),
            AssistantContent::ToolCall(call) => Block::ToolCall {
                id: call.id,
                name: call.name,
                raw: call.raw_arguments,
                arguments: Some(call.arguments),
            },
        }
    }
}

fn read(log: &Log) -> RwLockReadGuard<'_, Vec<Block>> {
    log.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(log: &Log) -> RwLockWriteGuard<'_, Vec<Block>> {
    log.write().unwrap_or_else(PoisonError::into_inner)
}

impl fmt::Display for DraftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DraftError::IndexOutOfOrder {
                content_index,
                blocks,
            } => write!(
                f,
                "content index {content_index} skips ahead: the message has {blocks} block(s), so the next new block is {blocks}"
            ),
            DraftError::WrongKind {
                content_index,
                expected,
            } => write!(f, "content block {content_index} is not a {expected} block"),
            DraftError::ToolCallEnded { content_index } => {
                write!(
                    f,
                    "the tool call at content index {content_index} already ended"
                )
            }
        }
    }
}

impl std::error::Error for DraftError {}
