//! Chapter 03: the message IR — one complete tool round-trip, saved.
//!
//! A transcript is a `Vec<AgentMessage>` in the order things happened. Four
//! roles say who produced each fact (`system`, `user`, `assistant`,
//! `toolResult`); content blocks keep what was said (`text`) apart from what
//! should be done (`toolCall`), in their original order. Provider request
//! bodies and terminal output are projections of these messages; they never
//! replace them.
//!
//! The serde form is the course's JSON wire format: `role` tags messages,
//! `type` tags content blocks and model events, fields are camelCase, absent
//! optionals are omitted, unknown fields are ignored. A bare message struct
//! has no role of its own; it is tagged where it appears as an
//! [`AgentMessage`] (or inside a [`ModelEvent`]).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event_stream::StreamError;
pub use crate::partial::{DraftError, MessageDraft, PartialMessage};
use crate::sections::Ordered;
pub use crate::sections::Sections;

/// A block of text, as shown to a person.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TextContent {
    pub text: String,
}

/// A request from the model to run a tool. `arguments` are what the model
/// produced, not yet checked against the tool's schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Pairs the call with its [`ToolResultMessage::tool_call_id`].
    pub id: String,
    pub name: String,
    pub arguments: Value,
    /// The provider's raw argument text, kept even when it does not parse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

/// A block of an assistant message: something said or something to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AssistantContent {
    #[serde(rename = "text")]
    Text(TextContent),
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

/// Tokens spent by one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub total_tokens: u64,
}

/// No tokens spent; the same as `Usage::default()`.
pub const EMPTY_USAGE: Usage = Usage {
    input: 0,
    output: 0,
    total_tokens: 0,
};

/// Why a model call stopped, and so what the agent does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The answer is complete: end the turn.
    Stop,
    /// The output hit its limit: keep the content, run no possibly cut-off call.
    Length,
    /// The model asked for tools: validate and run them.
    ToolUse,
    /// The call failed: keep the partial content and the error.
    Error,
    /// The call was cancelled: keep the partial content and the fact.
    Aborted,
}

/// How a generation can finish normally: the `reason` of [`ModelEvent::Done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DoneReason {
    Stop,
    Length,
    ToolUse,
}

/// How a generation can fail: the `reason` of [`ModelEvent::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorReason {
    Error,
    Aborted,
}

impl From<DoneReason> for StopReason {
    fn from(reason: DoneReason) -> Self {
        match reason {
            DoneReason::Stop => StopReason::Stop,
            DoneReason::Length => StopReason::Length,
            DoneReason::ToolUse => StopReason::ToolUse,
        }
    }
}

impl From<ErrorReason> for StopReason {
    fn from(reason: ErrorReason) -> Self {
        match reason {
            ErrorReason::Error => StopReason::Error,
            ErrorReason::Aborted => StopReason::Aborted,
        }
    }
}

/// What the user said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    #[serde(with = "wire::text_blocks")]
    pub content: Vec<TextContent>,
    pub timestamp: u64,
}

/// What one model call produced, in order, and why it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<AssistantContent>,
    pub provider: String,
    pub model: String,
    pub usage: Usage,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    pub timestamp: u64,
}

/// What the environment returned for one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage<D = Value> {
    /// The [`ToolCall::id`] this result answers.
    pub tool_call_id: String,
    pub tool_name: String,
    #[serde(with = "wire::text_blocks")]
    pub content: Vec<TextContent>,
    /// Structured data for the program, not for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<D>,
    pub is_error: bool,
    pub timestamp: u64,
}

/// The agent's instructions, as a fact in the transcript. The first one is the
/// base prompt; later ones patch it (see [`current_system_message`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemMessage {
    /// First message: the base prompt. Later: text to append. May be empty.
    pub content: String,
    /// Named sections; later messages replace them by name, `None` deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Sections>,
    pub timestamp: u64,
}

/// One message of a transcript, tagged by `role` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum AgentMessage {
    System(SystemMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

/// The input of one model call: the transcript so far, instructions included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentContext {
    pub messages: Vec<AgentMessage>,
}

/// What happens while a model generates one assistant message.
///
/// Each progress event carries `partial`, a snapshot of the message so far;
/// snapshots share their text, so carrying one per event costs no copy of the
/// message (see [`PartialMessage`]). `done` and `error` are terminal and carry
/// the final message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum ModelEvent {
    #[serde(rename = "start")]
    Start { partial: PartialMessage },
    #[serde(rename = "text_delta")]
    TextDelta {
        content_index: usize,
        delta: String,
        partial: PartialMessage,
    },
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        content_index: usize,
        delta: String,
        partial: PartialMessage,
    },
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        content_index: usize,
        tool_call: ToolCall,
        partial: PartialMessage,
    },
    #[serde(rename = "done")]
    Done {
        reason: DoneReason,
        #[serde(with = "wire::assistant")]
        message: AssistantMessage,
    },
    #[serde(rename = "error")]
    Error {
        reason: ErrorReason,
        #[serde(with = "wire::assistant")]
        error: AssistantMessage,
    },
}

/// A generation in progress: its events, then its final message.
///
/// Poll-based so it stays object safe and runtime-agnostic; with
/// `std::future::poll_fn(|cx| stream.poll_event(cx)).await` it reads like any
/// async iterator.
pub trait ModelStream {
    /// The next event; `Ready(None)` after the terminal event was read.
    fn poll_event(&self, cx: &mut Context<'_>) -> Poll<Option<ModelEvent>>;
    /// The final assistant message, carried by the terminal event.
    fn poll_message(&self, cx: &mut Context<'_>) -> Poll<Result<AssistantMessage, StreamError>>;
}

/// A model: turns a context into a stream of events ending in one message.
pub trait Model {
    type Stream: ModelStream;
    /// Starts one model call over `context`.
    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream;
}

/// Options of one model call.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Cancels the call when aborted.
    pub signal: Option<AbortSignal>,
}

/// A shared cancellation flag: clones observe the same `abort()`.
#[derive(Debug, Clone, Default)]
pub struct AbortSignal(Arc<AtomicBool>);

impl AbortSignal {
    /// A signal that has not been aborted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every holder of this signal to stop.
    pub fn abort(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once `abort()` was called on any clone.
    pub fn is_aborted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Awaits the next event of any [`ModelStream`].
pub fn next_event<S: ModelStream + ?Sized>(stream: &S) -> impl Future<Output = Option<ModelEvent>> {
    std::future::poll_fn(move |cx| stream.poll_event(cx))
}

/// Awaits the final message of any [`ModelStream`].
pub fn final_message<S: ModelStream + ?Sized>(
    stream: &S,
) -> impl Future<Output = Result<AssistantMessage, StreamError>> {
    std::future::poll_fn(move |cx| stream.poll_message(cx))
}

/// The current time in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// A text block.
pub fn text(value: impl Into<String>) -> TextContent {
    TextContent { text: value.into() }
}

/// A user message with one text block, stamped now.
pub fn user_message(value: impl Into<String>) -> UserMessage {
    UserMessage {
        content: vec![text(value)],
        timestamp: now_ms(),
    }
}

/// An assistant message from the scripted model, stamped now, with no usage.
/// Override any field with struct-update syntax:
/// `AssistantMessage { error_message: Some(..), ..assistant_message(vec![], StopReason::Error) }`.
pub fn assistant_message(
    content: Vec<AssistantContent>,
    stop_reason: StopReason,
) -> AssistantMessage {
    AssistantMessage {
        content,
        provider: "scripted".to_string(),
        model: "scripted-v1".to_string(),
        usage: EMPTY_USAGE,
        stop_reason,
        error_message: None,
        timestamp: now_ms(),
    }
}

/// The text of a message, for display, search and summaries: only text blocks,
/// joined by `\n`. Lossy on purpose (tool calls are left out); the message
/// itself is never changed. A system message renders as [`system_message_text`].
pub fn text_of(message: &AgentMessage) -> String {
    match message {
        AgentMessage::System(system) => system_message_text(system),
        AgentMessage::User(user) => join_texts(&user.content),
        AgentMessage::ToolResult(result) => join_texts(&result.content),
        AgentMessage::Assistant(assistant) => {
            let texts: Vec<&str> = assistant
                .content
                .iter()
                .filter_map(|block| match block {
                    AssistantContent::Text(text) => Some(text.text.as_str()),
                    AssistantContent::ToolCall(_) => None,
                })
                .collect();
            texts.join("\n")
        }
    }
}

fn join_texts(blocks: &[TextContent]) -> String {
    let texts: Vec<&str> = blocks.iter().map(|block| block.text.as_str()).collect();
    texts.join("\n")
}

/// Replays every system message of `messages`, in order, into the one the
/// model should follow now: non-empty contents are appended (joined by
/// `\n\n`), sections are set by name and deleted by `None`, the timestamp is
/// the first system message's. `None` when there is no system message.
pub fn current_system_message(messages: &[AgentMessage]) -> Option<SystemMessage> {
    let mut timestamp = None;
    let mut contents: Vec<&str> = Vec::new();
    let mut sections: Ordered<&str, &str> = Ordered::default();
    for message in messages {
        let AgentMessage::System(system) = message else {
            continue;
        };
        timestamp.get_or_insert(system.timestamp);
        if !system.content.is_empty() {
            contents.push(&system.content);
        }
        for (name, value) in system.sections.iter().flat_map(Sections::iter) {
            match value {
                Some(value) => sections.insert(name, value),
                None => sections.remove(name),
            };
        }
    }
    Some(SystemMessage {
        content: contents.join("\n\n"),
        sections: (!sections.is_empty()).then(|| {
            sections
                .into_entries()
                .map(|(name, value)| (name, Some(value)))
                .collect()
        }),
        timestamp: timestamp?,
    })
}

/// The text a model reads for one system message: its content, then each
/// section's text in order, empty strings skipped, joined by `\n\n`.
pub fn system_message_text(message: &SystemMessage) -> String {
    let sections = message.sections.iter().flat_map(Sections::iter);
    let parts: Vec<&str> = std::iter::once(message.content.as_str())
        .chain(sections.filter_map(|(_, value)| value))
        .filter(|part| !part.is_empty())
        .collect();
    parts.join("\n\n")
}

/// The prompt the model should follow now: [`current_system_message`]
/// rendered by [`system_message_text`]. `None` without a system message.
pub fn current_system_prompt(messages: &[AgentMessage]) -> Option<String> {
    current_system_message(messages).map(|message| system_message_text(&message))
}

impl From<TextContent> for AssistantContent {
    fn from(text: TextContent) -> Self {
        AssistantContent::Text(text)
    }
}

impl From<ToolCall> for AssistantContent {
    fn from(call: ToolCall) -> Self {
        AssistantContent::ToolCall(call)
    }
}

impl From<SystemMessage> for AgentMessage {
    fn from(message: SystemMessage) -> Self {
        AgentMessage::System(message)
    }
}

impl From<UserMessage> for AgentMessage {
    fn from(message: UserMessage) -> Self {
        AgentMessage::User(message)
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(message: AssistantMessage) -> Self {
        AgentMessage::Assistant(message)
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(message: ToolResultMessage) -> Self {
        AgentMessage::ToolResult(message)
    }
}

/// Serde helpers for tags that belong to a block or message wherever it
/// appears, not only inside an enum.
pub(crate) mod wire {
    /// `Vec<TextContent>` as `[{"type":"text","text":…}]`; the tag is checked.
    pub mod text_blocks {
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        use crate::types::TextContent;

        #[derive(Serialize)]
        #[serde(tag = "type")]
        enum Tagged<'a> {
            #[serde(rename = "text")]
            Text(&'a TextContent),
        }

        #[derive(Deserialize)]
        #[serde(tag = "type")]
        enum Owned {
            #[serde(rename = "text")]
            Text(TextContent),
        }

        pub fn serialize<S: Serializer>(
            blocks: &[TextContent],
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            serializer.collect_seq(blocks.iter().map(Tagged::Text))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Vec<TextContent>, D::Error> {
            let blocks = Vec::<Owned>::deserialize(deserializer)?;
            Ok(blocks.into_iter().map(|Owned::Text(block)| block).collect())
        }
    }

    /// An `AssistantMessage` with its `"role":"assistant"`; the role is checked.
    pub mod assistant {
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        use crate::types::AssistantMessage;

        #[derive(Serialize)]
        #[serde(tag = "role")]
        enum Tagged<'a> {
            #[serde(rename = "assistant")]
            Assistant(&'a AssistantMessage),
        }

        #[derive(Deserialize)]
        #[serde(tag = "role")]
        enum Owned {
            #[serde(rename = "assistant")]
            Assistant(AssistantMessage),
        }

        pub fn serialize<S: Serializer>(
            message: &AssistantMessage,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            Tagged::Assistant(message).serialize(serializer)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<AssistantMessage, D::Error> {
            let Owned::Assistant(message) = Owned::deserialize(deserializer)?;
            Ok(message)
        }
    }
}
