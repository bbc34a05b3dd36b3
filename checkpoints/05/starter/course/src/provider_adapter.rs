//! Chapter 05's starter: the public types with their fields and derives,
//! the signatures of the public functions, and the data shapes the answer
//! is written over (the state of one call, the provider's chunk JSON), each
//! function body a `todo!("Lab 5.x … 尚未实现")` for you to write. The
//! private functions (the SSE reader, the field checks, the key redaction,
//! the watcher) are yours to name and shape; LEARNING.md says what they
//! must do.
//!
//! `ToolDefinition` and `AgentContext::tools` are this chapter's change to
//! `types.rs`, also yours (LEARNING.md, section 2): until they exist, this
//! file does not compile.

// The shapes are not used until you write the bodies; delete this line
// once every `todo!` is gone.
#![allow(dead_code)]

use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};

use crate::assistant_stream::AssistantMessageEventStream;
use crate::event_stream::Producer;
use crate::types::{
    AgentContext, AssistantMessage, Model, ModelEvent, StreamOptions, ToolDefinition,
};

/// How long a call waits for the next byte before it gives up, unless the
/// transport is told otherwise ([`OpenAiCompatibleTransport::with_idle_timeout`]).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest SSE line, and the most `data` one event may carry; past it,
/// the error `Provider stream has a line or event over 4 MiB`.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// A key shorter than this is a placeholder (`none`, `ollama`), not a secret.
pub const SHORTEST_SECRET: usize = 8;

// ---------------------------------------------------------------------------
// Outbound: the course's messages in the provider's shapes (Lab 5.1).
// ---------------------------------------------------------------------------

/// One message as an OpenAI-compatible API reads it: `role` first, content
/// flattened to a string.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ProviderWireMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// `content` is `null` when the message has no text but tool calls.
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<ProviderWireToolCall>>,
    },
    /// The course's `toolResult`, answering the call `tool_call_id`.
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
    },
}

/// The only kind of tool these APIs know; written `"function"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    Function,
}

/// A tool call inside an assistant wire message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderWireToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    pub function: ProviderWireFunctionCall,
}

/// The called function: its name and its arguments as JSON *text*.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderWireFunctionCall {
    pub name: String,
    pub arguments: String,
}

/// A tool offered to the model: `{"type":"function","function":{name, description, parameters}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderWireTool {
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    pub function: ToolDefinition,
}

/// What the adapter asks the transport to send. `tools` is left out when
/// there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderRequest {
    pub model: String,
    pub messages: Vec<ProviderWireMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ProviderWireTool>>,
}

/// The context as wire messages: one leading system message with the
/// replayed prompt (none when empty), every system message of the
/// transcript skipped where it stands, text blocks joined with `\n`.
pub fn to_provider_messages(_context: &AgentContext) -> Vec<ProviderWireMessage> {
    todo!("Lab 5.1 to_provider_messages 尚未实现")
}

/// The definitions wrapped as `{type: "function", function}`; `None` for no
/// tools, so the request carries no empty array.
pub fn to_provider_tools(_tools: Option<&[ToolDefinition]>) -> Option<Vec<ProviderWireTool>> {
    todo!("Lab 5.1 to_provider_tools 尚未实现")
}

// ---------------------------------------------------------------------------
// The seam: chunks, and what produces them (Lab 5.2).
// ---------------------------------------------------------------------------

/// One piece of a streamed answer, already checked and free of the
/// provider's JSON shape.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderChunk {
    /// More text.
    Text { delta: String },
    /// A piece of the tool call the provider numbers `index`. `id` and
    /// `name` usually come only with its first piece.
    Tool {
        index: u64,
        id: Option<String>,
        name: Option<String>,
        arguments_delta: Option<String>,
    },
    /// How the answer ended, with whatever usage the provider reported.
    Finish {
        reason: FinishReason,
        usage: Option<ProviderUsage>,
    },
}

/// The provider's finish reasons the course understands; on the wire
/// `stop`, `length` and `tool_calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
}

/// Usage as a provider reports it (`prompt_tokens`, `completion_tokens`,
/// `total_tokens` on the wire): any count may be missing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ProviderUsage {
    #[serde(rename = "prompt_tokens", default, deserialize_with = "count")]
    pub input: Option<u64>,
    #[serde(rename = "completion_tokens", default, deserialize_with = "count")]
    pub output: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub total_tokens: Option<u64>,
}

/// A token count: a non-negative integer, also when written as a float with
/// nothing after the point (`12.0`, as some servers do); anything else is
/// the error `must be a non-negative integer`.
fn count<'de, D: Deserializer<'de>>(_deserializer: D) -> Result<Option<u64>, D::Error> {
    todo!("Lab 5.3 count 尚未实现")
}

/// Something that sends a request and streams back chunks.
pub trait ProviderTransport: Send + Sync {
    /// Sends `request` and hands each chunk of the answer to `on_chunk`, in
    /// order, blocking until the answer is over. `Err` says why it failed;
    /// the chunks handed over before it still count. A transport watches
    /// `options.signal` and stops soon after it is set.
    fn stream(
        &self,
        request: &ProviderRequest,
        options: &StreamOptions,
        on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String>;
}

/// A transport that answers every request with the same chunks, offline.
pub struct FixedTransport(Vec<ProviderChunk>);

/// A transport that plays `chunks`, in order.
pub fn fixed_transport(chunks: Vec<ProviderChunk>) -> FixedTransport {
    FixedTransport(chunks)
}

impl ProviderTransport for FixedTransport {
    fn stream(
        &self,
        _request: &ProviderRequest,
        _options: &StreamOptions,
        _on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String> {
        todo!("Lab 5.2 FixedTransport::stream 尚未实现")
    }
}

// ---------------------------------------------------------------------------
// The adapter: chunks in, model events out (Lab 5.2).
// ---------------------------------------------------------------------------

/// A chapter 03 [`Model`] over any [`ProviderTransport`]. It only
/// translates: no retries, no tool runs, no transcript updates.
pub struct OpenAiCompatibleModel {
    provider: String,
    model: String,
    transport: Arc<dyn ProviderTransport>,
}

impl OpenAiCompatibleModel {
    /// A model named `model` at `provider`, reached through `transport`.
    pub fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
        transport: impl ProviderTransport + 'static,
    ) -> Self {
        OpenAiCompatibleModel {
            provider: provider.into(),
            model: model.into(),
            transport: Arc::new(transport),
        }
    }
}

impl Model for OpenAiCompatibleModel {
    type Stream = AssistantMessageEventStream;

    /// Builds the request now (the context is only borrowed), then runs the
    /// call on a thread of its own, as chapter 04's scripted model does.
    fn stream(&self, _context: &AgentContext, _options: StreamOptions) -> Self::Stream {
        todo!("Lab 5.2 OpenAiCompatibleModel::stream 尚未实现")
    }
}

/// The state of one call: everything here belongs to one `stream()`, and
/// moves into the thread that runs the call.
struct Reply {
    /// Pushes this call's events into its stream.
    producer: Producer<ModelEvent, AssistantMessage>,
    /// The message so far (provider, model, timestamp, and the content in
    /// order of first appearance), stopped `Stop`, with no usage: every
    /// delta event carries a copy.
    partial: AssistantMessage,
    /// The slot of the text block, once text has appeared.
    text_index: Option<usize>,
    /// One buffer per tool call, in order of first appearance.
    tools: Vec<ToolBuffer>,
    finish: Option<(FinishReason, Option<ProviderUsage>)>,
}

/// One tool call being received.
#[derive(Default)]
struct ToolBuffer {
    /// The provider's index: which later pieces belong here.
    index: u64,
    /// Where the call sits in the content: given once, at first appearance.
    content_index: usize,
    /// The id the provider gave this call, once it gave one.
    id: Option<String>,
    name: String,
    /// The arguments' text so far.
    arguments: String,
}

// ---------------------------------------------------------------------------
// The transport: HTTP out, SSE in (Lab 5.3, the request and the key: Lab 5.4).
// ---------------------------------------------------------------------------

/// One HTTP request, as the transport hands it to a [`Fetch`].
pub struct FetchRequest {
    pub url: String,
    pub method: String,
    /// In the order they are sent.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The call's signal, so the fetch can give up a blocked read.
    pub signal: Option<Arc<AtomicBool>>,
    /// How long to wait for the next byte before giving up.
    pub idle_timeout: Duration,
}

/// An HTTP answer: its status and its body, still to be read.
pub struct FetchResponse {
    pub status: u16,
    pub body: Box<dyn Read + Send>,
}

/// Sends one request. Tests inject their own; [`http_fetch`] is the real one.
pub type Fetch = Arc<dyn Fn(FetchRequest) -> io::Result<FetchResponse> + Send + Sync>;

/// The OpenAI-compatible chat completions transport. It holds the API key
/// and puts it in one place only, the `Authorization` header: no `Debug`,
/// and every error text it returns has the key replaced by `[redacted]`.
pub struct OpenAiCompatibleTransport {
    endpoint: String,
    api_key: String,
    idle_timeout: Duration,
    fetch: Fetch,
}

impl OpenAiCompatibleTransport {
    /// A transport to `<base_url>/chat/completions` (trailing slashes of
    /// `base_url` dropped), over real HTTP, with [`DEFAULT_IDLE_TIMEOUT`].
    pub fn new(_base_url: &str, _api_key: impl Into<String>) -> Result<Self, String> {
        todo!("Lab 5.3 OpenAiCompatibleTransport::new 尚未实现")
    }

    /// The same transport, sending through `fetch` instead.
    pub fn with_fetch(mut self, fetch: Fetch) -> Self {
        self.fetch = fetch;
        self
    }

    /// The same transport, giving up once no byte came for `idle_timeout`.
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }
}

impl ProviderTransport for OpenAiCompatibleTransport {
    /// Every error leaves through here, with the key redacted.
    fn stream(
        &self,
        _request: &ProviderRequest,
        _options: &StreamOptions,
        _on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String> {
        todo!("Lab 5.3 OpenAiCompatibleTransport::stream 尚未实现")
    }
}

// The provider's chunk, as far as the course reads it. Derived shapes check
// each field's type; unknown fields (`id`, `model`, `logprobs`, …) are
// ignored and `null` reads as absent. (An `error` field is looked at before
// these shapes: see LEARNING.md, section 5.)

#[derive(Deserialize)]
struct OpenAiChunk {
    choices: Vec<OpenAiChoice>,
    usage: Option<ProviderUsage>,
}

#[derive(Deserialize)]
struct OpenAiChoice {
    delta: OpenAiDelta,
    finish_reason: Option<FinishReason>,
}

#[derive(Deserialize)]
struct OpenAiDelta {
    content: Option<String>,
    tool_calls: Option<Vec<OpenAiToolCall>>,
}

#[derive(Deserialize)]
struct OpenAiToolCall {
    index: u64,
    id: Option<String>,
    #[serde(rename = "type")]
    _kind: Option<FunctionKind>,
    function: Option<OpenAiFunction>,
}

#[derive(Default, Deserialize)]
struct OpenAiFunction {
    name: Option<String>,
    arguments: Option<String>,
}

/// Sends `request` over real HTTP (ureq). A non-2xx status is an answer,
/// not an error; a 2xx answer that is not an event stream is an error
/// naming its status, both headers and first bytes. The idle timeout is
/// ureq's per-read timeout; a watcher thread shuts the connection down once
/// the signal is set.
pub fn http_fetch(_request: FetchRequest) -> io::Result<FetchResponse> {
    todo!("Lab 5.4 http_fetch 尚未实现")
}
