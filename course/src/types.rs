//! Chapter 03: the message IR — one complete tool round-trip, saved.
//!
//! A transcript is a list of [`AgentMessage`]s in the order things happened;
//! each message's role says who produced the fact. Content blocks keep what
//! was said ([`TextContent`]) apart from what should be done ([`ToolCall`]),
//! in order. Changing the instructions appends a [`SystemMessage`], and
//! [`current_system_prompt`] replays them. [`ModelEvent`]s describe a
//! generation; the final [`AssistantMessage`] is what gets saved.
//!
//! The serde form is the chapter's JSON: `role` tags messages and `type`
//! tags content blocks and events, wherever they appear; fields are
//! camelCase, in the chapter's order; absent optionals are omitted; unknown
//! fields are ignored; a wrong or missing tag is an error.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::task::{Context, Poll};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::event_stream::StreamError;

/// Text shown to a person: `{"type":"text","text":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextContent {
    pub text: String,
}

/// A request from the model to run a tool: `{"type":"toolCall",…}`.
///
/// `arguments` is what the model produced, not yet checked against the
/// tool's schema. `raw_arguments` keeps the provider's own text, which
/// matters most when it was cut off; keeping it does not make it runnable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Pairs the call with the [`ToolResultMessage`] that answers it.
    pub id: String,
    pub name: String,
    pub arguments: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

/// One block of an assistant message: something said or something to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum AssistantContent {
    Text(TextContent),
    ToolCall(ToolCall),
}

/// Tokens spent by one model call. `Usage::default()` is "none spent".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub total_tokens: u64,
}

/// Why a model call stopped, and so what the agent does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The answer is complete: the turn ends.
    Stop,
    /// The output hit its limit: keep the content, run no cut-off call.
    Length,
    /// The model asked for tools: check them and run them.
    ToolUse,
    /// The call failed: keep the partial content and the error.
    Error,
    /// The call was cancelled: keep the partial content and that fact.
    Aborted,
}

/// How a generation ends normally: the `reason` of [`ModelEvent::Done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DoneReason {
    Stop,
    Length,
    ToolUse,
}

/// How a generation fails: the `reason` of [`ModelEvent::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(with = "tag::text_blocks")]
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
    pub timestamp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// What the environment returned for one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The [`ToolCall::id`] this result answers.
    pub tool_call_id: String,
    /// Where the result came from, for people; the id is what pairs it.
    pub tool_name: String,
    #[serde(with = "tag::text_blocks")]
    pub content: Vec<TextContent>,
    /// Structured data for the program, not for the model (the chapter's
    /// `unknown`: any JSON value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    pub is_error: bool,
    pub timestamp: u64,
}

/// The agent's instructions, as a fact in the transcript. A change is a new
/// message holding only the change; none is ever edited
/// (see [`current_system_message`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemMessage {
    /// First message: the base prompt. Later ones: text to append. May be empty.
    pub content: String,
    /// Named sections; later messages replace them by name, `None` deletes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sections: Option<Sections>,
    pub timestamp: u64,
}

/// The named sections of a system message, in order; `None` (JSON `null`)
/// asks the replay to delete the section. Order is behaviour: the prompt is
/// rendered in it, and a prompt whose bytes move loses the provider's prompt
/// cache. So a name that is present keeps its place; a new one goes last.
/// In code: `Sections::from([("rules", Some("…")), ("scratch", None)])`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Map<String, Value>")]
pub struct Sections(Vec<(String, Option<String>)>);

/// One message of a transcript, tagged by `role` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum AgentMessage {
    System(SystemMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

/// The input of one model call: the transcript so far, instructions included,
/// and (chapter 05) the tools the model may ask for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentContext {
    pub messages: Vec<AgentMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
}

/// A tool as the model sees it (chapter 05): its name, what it does, and the
/// JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// What happens while a model generates one assistant message.
///
/// `content_index` is the position in `partial.content` the event is about.
/// `partial` is the message so far, a copy owned by each event (one copy of
/// the message so far per event). `done` and `error` end the generation and
/// carry the final message.
///
/// A terminal event's `reason` must be its message's `stop_reason`; reading
/// one where they differ is an error. Building one is not prevented: an enum
/// variant's fields cannot be private, and events are plain data written out
/// in full. So the check sits where events come in, and a producer should
/// take the reason from the finished message's `stop_reason`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ModelEvent {
    Start {
        #[serde(with = "tag::assistant")]
        partial: AssistantMessage,
    },
    TextDelta {
        content_index: usize,
        delta: String,
        #[serde(with = "tag::assistant")]
        partial: AssistantMessage,
    },
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        content_index: usize,
        delta: String,
        #[serde(with = "tag::assistant")]
        partial: AssistantMessage,
    },
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        content_index: usize,
        #[serde(with = "tag::tool_call")]
        tool_call: ToolCall,
        #[serde(with = "tag::assistant")]
        partial: AssistantMessage,
    },
    #[serde(deserialize_with = "tag::done")]
    Done {
        reason: DoneReason,
        #[serde(with = "tag::assistant")]
        message: AssistantMessage,
    },
    #[serde(deserialize_with = "tag::error")]
    Error {
        reason: ErrorReason,
        #[serde(with = "tag::assistant")]
        error: AssistantMessage,
    },
}

/// A model call in progress: its events as they happen, then its final
/// message — chapter 02's stream, in poll form so that any executor can
/// drive it (`std::future::poll_fn(|cx| stream.poll_next(cx)).await`).
pub trait ModelStream {
    /// The next event; `Ready(None)` after the terminal one was read.
    fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<ModelEvent>>;
    /// The final message, once a terminal event carried it.
    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<AssistantMessage, StreamError>>;
}

/// A model: each call turns a context into a stream of events that ends in
/// one assistant message.
pub trait Model {
    type Stream: ModelStream;
    /// Starts one call over `context`.
    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream;
}

/// The options of one model call.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Set to `true` by the caller to cancel the call.
    pub signal: Option<Arc<AtomicBool>>,
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
/// Override fields with struct-update syntax:
/// `AssistantMessage { timestamp: 1_010, ..assistant_message(content, StopReason::ToolUse) }`.
pub fn assistant_message(
    content: Vec<AssistantContent>,
    stop_reason: StopReason,
) -> AssistantMessage {
    AssistantMessage {
        content,
        provider: "scripted".to_string(),
        model: "scripted-v1".to_string(),
        usage: Usage::default(),
        stop_reason,
        timestamp: now_ms(),
        error_message: None,
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    UNIX_EPOCH.elapsed().unwrap_or_default().as_millis() as u64
}

/// The text of a message, for display, search and summaries: its text
/// blocks joined by `\n`; a system message renders as
/// [`system_message_text`]. A lossy projection: tool calls are left out, and
/// the message itself is not changed.
pub fn text_of(message: &AgentMessage) -> String {
    match message {
        AgentMessage::System(system) => system_message_text(system),
        AgentMessage::User(UserMessage { content, .. })
        | AgentMessage::ToolResult(ToolResultMessage { content, .. }) => {
            let texts: Vec<&str> = content.iter().map(|block| block.text.as_str()).collect();
            texts.join("\n")
        }
        AgentMessage::Assistant(assistant) => {
            let texts: Vec<&str> = assistant
                .content
                .iter()
                .filter_map(|block| match block {
                    AssistantContent::Text(block) => Some(block.text.as_str()),
                    AssistantContent::ToolCall(_) => None,
                })
                .collect();
            texts.join("\n")
        }
    }
}

/// Replays the system messages of a transcript, in order, into the one the
/// model follows now: non-empty contents are appended (joined by `\n\n`),
/// sections are set by name and deleted by `None`, and the timestamp is the
/// first system message's. A result without sections has no `sections`.
/// `None` when there is no system message. The transcript is only read.
pub fn current_system_message(messages: &[AgentMessage]) -> Option<SystemMessage> {
    let mut timestamp = None;
    let mut contents: Vec<&str> = Vec::new();
    let mut sections = Sections::default();
    for message in messages {
        let AgentMessage::System(system) = message else {
            continue;
        };
        timestamp.get_or_insert(system.timestamp);
        if !system.content.is_empty() {
            contents.push(&system.content);
        }
        if let Some(patch) = &system.sections {
            for (name, value) in patch.iter() {
                match value {
                    Some(_) => sections.insert(name, value),
                    None => sections.remove(name),
                }
            }
        }
    }
    let timestamp = timestamp?;
    let sections = if sections.is_empty() {
        None
    } else {
        Some(sections)
    };
    Some(SystemMessage {
        content: contents.join("\n\n"),
        sections,
        timestamp,
    })
}

/// The text a model reads for a system message: its content, then each
/// section's text in order, empty ones skipped, joined by `\n\n`.
pub fn system_message_text(message: &SystemMessage) -> String {
    let mut parts = vec![message.content.as_str()];
    if let Some(sections) = &message.sections {
        parts.extend(sections.iter().filter_map(|(_, value)| value));
    }
    parts.retain(|part| !part.is_empty());
    parts.join("\n\n")
}

/// The prompt the model follows now: [`current_system_message`] rendered by
/// [`system_message_text`]; `None` when there is no system message.
pub fn current_system_prompt(messages: &[AgentMessage]) -> Option<String> {
    current_system_message(messages).map(|message| system_message_text(&message))
}

impl From<TextContent> for AssistantContent {
    fn from(block: TextContent) -> Self {
        AssistantContent::Text(block)
    }
}

impl From<ToolCall> for AssistantContent {
    fn from(call: ToolCall) -> Self {
        AssistantContent::ToolCall(call)
    }
}

impl Sections {
    /// Sets `name` to `value`: in its place when present, last otherwise.
    pub fn insert(&mut self, name: &str, value: Option<&str>) {
        let value = value.map(str::to_string);
        match self.0.iter_mut().find(|(known, _)| known == name) {
            Some(entry) => entry.1 = value,
            None => self.0.push((name.to_string(), value)),
        }
    }

    /// Removes `name`; the others keep their order.
    pub fn remove(&mut self, name: &str) {
        self.0.retain(|(known, _)| known != name);
    }

    /// True when no name is present.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names and values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.0
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_deref()))
    }
}

impl<const N: usize> From<[(&str, Option<&str>); N]> for Sections {
    fn from(entries: [(&str, Option<&str>); N]) -> Self {
        let mut sections = Sections::default();
        for (name, value) in entries {
            sections.insert(name, value);
        }
        sections
    }
}

impl TryFrom<Map<String, Value>> for Sections {
    type Error = String;

    /// Reads a JSON object in document order; each value is a string or `null`.
    fn try_from(object: Map<String, Value>) -> Result<Self, String> {
        let mut sections = Sections::default();
        for (name, value) in object {
            match value {
                Value::String(text) => sections.0.push((name, Some(text))),
                Value::Null => sections.0.push((name, None)),
                other => return Err(format!("section `{name}` is {other}, not a string or null")),
            }
        }
        Ok(sections)
    }
}

impl Serialize for Sections {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

/// Tags outside the enum that usually writes them: the text blocks of user
/// and tool-result content, `toolcall_end`'s `toolCall`, the assistant
/// message in events. Each is a one-variant tagged enum, so serde writes the
/// tag first and checks it when reading (a tag on a plain struct is not
/// checked). `done` and `error` are read here too, to check their reason.
mod tag {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::json;

    use super::{AssistantMessage, DoneReason, ErrorReason, StopReason, TextContent, ToolCall};

    #[derive(Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "camelCase")]
    enum Text<T> {
        Text(T),
    }

    #[derive(Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "camelCase")]
    enum Call<T> {
        ToolCall(T),
    }

    #[derive(Serialize, Deserialize)]
    #[serde(tag = "role", rename_all = "camelCase")]
    enum Role<T> {
        Assistant(T),
    }

    pub mod text_blocks {
        use super::*;

        pub fn serialize<S: Serializer>(blocks: &[TextContent], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(blocks.iter().map(Text::Text))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<TextContent>, D::Error> {
            let blocks = Vec::<Text<TextContent>>::deserialize(d)?;
            Ok(blocks.into_iter().map(|Text::Text(block)| block).collect())
        }
    }

    pub mod tool_call {
        use super::*;

        pub fn serialize<S: Serializer>(call: &ToolCall, s: S) -> Result<S::Ok, S::Error> {
            Call::ToolCall(call).serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ToolCall, D::Error> {
            let Call::ToolCall(call) = Call::deserialize(d)?;
            Ok(call)
        }
    }

    pub mod assistant {
        use super::*;

        pub fn serialize<S: Serializer>(
            message: &AssistantMessage,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            Role::Assistant(message).serialize(s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<AssistantMessage, D::Error> {
            let Role::Assistant(message) = Role::deserialize(d)?;
            Ok(message)
        }
    }

    /// The fields of a `done` event, checked to agree.
    pub fn done<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(DoneReason, AssistantMessage), D::Error> {
        #[derive(Deserialize)]
        struct Done {
            reason: DoneReason,
            #[serde(with = "assistant")]
            message: AssistantMessage,
        }
        let Done { reason, message } = Done::deserialize(d)?;
        agree(reason.into(), &message)?;
        Ok((reason, message))
    }

    /// The fields of an `error` event, checked to agree.
    pub fn error<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<(ErrorReason, AssistantMessage), D::Error> {
        #[derive(Deserialize)]
        struct Error {
            reason: ErrorReason,
            #[serde(with = "assistant")]
            error: AssistantMessage,
        }
        let Error { reason, error } = Error::deserialize(d)?;
        agree(reason.into(), &error)?;
        Ok((reason, error))
    }

    fn agree<E: serde::de::Error>(reason: StopReason, message: &AssistantMessage) -> Result<(), E> {
        if reason == message.stop_reason {
            return Ok(());
        }
        Err(E::custom(format!(
            "the event's reason {} differs from its message's stopReason {}",
            json!(reason),
            json!(message.stop_reason),
        )))
    }
}
