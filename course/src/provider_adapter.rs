//! Chapter 05: the provider adapter — one model call to an OpenAI-compatible API.
//!
//! A real model lives outside the process. Our messages have to be written
//! as an HTTP request, and the answer comes back as a stream of bytes
//! (server-sent events, SSE). Two pieces of code translate, in opposite
//! directions, and one small type sits between them:
//!
//! * **Outbound**, pure functions: [`to_provider_messages`] and
//!   [`to_provider_tools`] turn an [`AgentContext`] into the provider's wire
//!   shapes. The transcript's system messages are folded into one leading
//!   system message (the replay of [`current_system_prompt`]); the context
//!   itself is only read.
//! * **[`ProviderChunk`] is the seam**: text, a piece of one tool call (by the
//!   provider's index), or the finish. A [`ProviderTransport`] produces
//!   chunks; the adapter consumes them and never sees HTTP, SSE or the
//!   provider's JSON.
//! * **The adapter**, [`OpenAiCompatibleModel`], is a chapter 03 [`Model`]:
//!   one `stream()` call keeps its own content, text slot, tool buffers and
//!   finish, and turns chunks into [`ModelEvent`]s. A slot in the content is
//!   given at first appearance; the provider's tool index only finds the
//!   buffer again.
//! * **The transport**, [`OpenAiCompatibleTransport`], sends the request
//!   through a [`Fetch`] (injectable; [`http_fetch`] is real HTTP), reads the
//!   answer's bytes as lines and events, checks every external field with
//!   derived shapes before it becomes a chunk, and keeps the API key out of
//!   every error text it builds.
//!
//! The TypeScript original pulls chunks from an async generator. Rust has no
//! generators, so a transport *pushes* them instead: its blocking `stream`
//! hands each chunk to a closure, in order, and returns how it ended. The
//! SSE reader pushes each event's data the same way.

use std::io::{self, BufRead, BufReader, Read};
use std::mem;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value, json};
use ureq::Agent;

use crate::assistant_stream::AssistantMessageEventStream;
use crate::event_stream::Producer;
use crate::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, DoneReason, ErrorReason, Model,
    ModelEvent, StopReason, StreamOptions, ToolCall, ToolDefinition, Usage, assistant_message,
    current_system_prompt, text, text_of,
};

/// The error message of a call whose signal was set.
const ABORTED: &str = "Request was aborted";

/// How long a call waits for the next byte before it gives up, unless the
/// transport is told otherwise ([`OpenAiCompatibleTransport::with_idle_timeout`]).
/// Generous: a local model on a CPU may think for minutes over a long
/// prompt before its first byte.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest SSE line, and the most `data` one event may carry. A real
/// chunk is a few hundred bytes; past this the call fails instead of letting
/// a line that never ends eat the memory.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// The error past [`MAX_EVENT_BYTES`].
const TOO_LONG: &str = "Provider stream has a line or event over 4 MiB";

/// A key shorter than this is a placeholder (`none`, `ollama`) that local
/// servers accept, not a secret: error texts are left as they are.
pub const SHORTEST_SECRET: usize = 8;

// ---------------------------------------------------------------------------
// Outbound: the course's messages in the provider's shapes.
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

/// The context as wire messages. One leading system message holds the
/// replayed prompt (none when it is empty); every system message of the
/// transcript is skipped where it stands, because not every model accepts a
/// system message in mid-conversation. Text blocks are joined with `\n`.
pub fn to_provider_messages(context: &AgentContext) -> Vec<ProviderWireMessage> {
    let prompt = current_system_prompt(&context.messages).filter(|prompt| !prompt.is_empty());
    let mut wire: Vec<_> = prompt
        .map(|content| ProviderWireMessage::System { content })
        .into_iter()
        .collect();
    for message in &context.messages {
        let content = text_of(message);
        match message {
            AgentMessage::System(_) => {}
            AgentMessage::User(_) => wire.push(ProviderWireMessage::User { content }),
            AgentMessage::Assistant(assistant) => {
                let calls: Vec<_> = assistant
                    .content
                    .iter()
                    .filter_map(wire_tool_call)
                    .collect();
                let tool_calls = Some(calls).filter(|calls| !calls.is_empty());
                // `null` only beside tool calls: OpenAI refuses an assistant
                // message with neither (a failed call leaves one), so it is "".
                let content = Some(content).filter(|text| !text.is_empty() || tool_calls.is_none());
                wire.push(ProviderWireMessage::Assistant {
                    content,
                    tool_calls,
                });
            }
            AgentMessage::ToolResult(result) => wire.push(ProviderWireMessage::Tool {
                tool_call_id: result.tool_call_id.clone(),
                name: result.tool_name.clone(),
                content,
            }),
        }
    }
    wire
}

/// A tool-call block on the wire. The provider's own text (`raw_arguments`)
/// goes back as it came: re-serializing the parsed arguments could change
/// spacing or key order, and cannot write a cut-off text at all.
fn wire_tool_call(block: &AssistantContent) -> Option<ProviderWireToolCall> {
    let AssistantContent::ToolCall(call) = block else {
        return None;
    };
    let raw = call.raw_arguments.clone();
    Some(ProviderWireToolCall {
        id: call.id.clone(),
        kind: FunctionKind::Function,
        function: ProviderWireFunctionCall {
            name: call.name.clone(),
            arguments: raw.unwrap_or_else(|| call.arguments.to_string()),
        },
    })
}

/// The definitions wrapped as `{type: "function", function}`; `None` for no
/// tools, so the request carries no empty array.
pub fn to_provider_tools(tools: Option<&[ToolDefinition]>) -> Option<Vec<ProviderWireTool>> {
    let tools = tools.filter(|tools| !tools.is_empty())?;
    let wrap = |tool: &ToolDefinition| ProviderWireTool {
        kind: FunctionKind::Function,
        function: tool.clone(),
    };
    Some(tools.iter().map(wrap).collect())
}

// ---------------------------------------------------------------------------
// The seam: chunks, and what produces them.
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

impl ProviderUsage {
    /// `later`'s counts where it has them, ours elsewhere.
    fn merge(self, later: ProviderUsage) -> ProviderUsage {
        ProviderUsage {
            input: later.input.or(self.input),
            output: later.output.or(self.output),
            total_tokens: later.total_tokens.or(self.total_tokens),
        }
    }

    /// Missing counts are 0; a missing total is input + output. The counts
    /// come from outside, so the sum saturates instead of overflowing.
    fn normalized(self) -> Usage {
        let input = self.input.unwrap_or(0);
        let output = self.output.unwrap_or(0);
        Usage {
            input,
            output,
            total_tokens: self.total_tokens.unwrap_or(input.saturating_add(output)),
        }
    }
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
        on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String> {
        self.0.iter().cloned().for_each(on_chunk);
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The adapter: chunks in, model events out.
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
    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        let request = ProviderRequest {
            model: self.model.clone(),
            messages: to_provider_messages(context),
            tools: to_provider_tools(context.tools.as_deref()),
        };
        let reply = Reply {
            producer: stream.producer(),
            partial: AssistantMessage {
                provider: self.provider.clone(),
                model: self.model.clone(),
                ..assistant_message(Vec::new(), StopReason::Stop)
            },
            text_index: None,
            tools: Vec::new(),
            finish: None,
        };
        let transport = Arc::clone(&self.transport);
        thread::spawn(move || reply.run(&*transport, &request, &options));
        stream
    }
}

/// The state of one call: everything here belongs to one `stream()`.
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

impl ToolBuffer {
    /// The call with these `arguments`; `raw_arguments` is always the text.
    /// Until the provider gives an id, the call is named `call-<index>`.
    fn call(&self, arguments: Value) -> ToolCall {
        let id = self.id.clone();
        ToolCall {
            id: id.unwrap_or_else(|| format!("call-{}", self.index)),
            name: self.name.clone(),
            arguments,
            raw_arguments: Some(self.arguments.clone()),
        }
    }

    /// The finished call's arguments as JSON (empty text is `{}`).
    fn parsed(&self) -> Result<Value, String> {
        let text = Some(self.arguments.as_str()).filter(|text| !text.is_empty());
        serde_json::from_str(text.unwrap_or("{}")).map_err(|_| {
            let name = Some(self.name.clone()).filter(|name| !name.is_empty());
            let name = name.unwrap_or_else(|| self.index.to_string());
            format!("Tool {name} arguments 不是完整 JSON")
        })
    }
}

impl Reply {
    /// The whole call: `start`, a delta per chunk, then `done` or `error`.
    /// A set signal ends it `aborted`, whatever the transport said; chunks
    /// that arrive after it are not taken in.
    fn run(
        mut self,
        transport: &dyn ProviderTransport,
        request: &ProviderRequest,
        options: &StreamOptions,
    ) {
        self.emit(ModelEvent::Start {
            partial: self.partial.clone(),
        });
        let streamed = transport.stream(request, options, &mut |chunk| match chunk {
            _ if is_set(&options.signal) => {}
            ProviderChunk::Text { delta } => self.on_text(delta),
            ProviderChunk::Tool {
                index,
                id,
                name,
                arguments_delta,
            } => self.on_tool(index, id, name, arguments_delta.unwrap_or_default()),
            ProviderChunk::Finish { reason, usage } => self.finish = Some((reason, usage)),
        });
        let end = if is_set(&options.signal) {
            self.failed(ErrorReason::Aborted, ABORTED.to_string())
        } else {
            let done = streamed.and_then(|()| self.finish());
            done.unwrap_or_else(|error| self.failed(ErrorReason::Error, error))
        };
        self.emit(end);
    }

    fn emit(&self, event: ModelEvent) {
        // Refused only if the caller already ended the stream.
        let _ = self.producer.push(event);
    }

    /// Text goes to one slot, given when the first text arrives.
    fn on_text(&mut self, delta: String) {
        let content = &mut self.partial.content;
        let content_index = *self.text_index.get_or_insert(content.len());
        if content_index == content.len() {
            content.push(text("").into());
        }
        if let AssistantContent::Text(block) = &mut content[content_index] {
            block.text.push_str(&delta);
        }
        let partial = self.partial.clone();
        self.emit(ModelEvent::TextDelta {
            content_index,
            delta,
            partial,
        });
    }

    /// A tool piece goes to the latest call of its provider index, unless it
    /// brings an id other than the one that call was given (some servers
    /// number every parallel call 0): a new index, or such an id, starts a
    /// call in the next free slot. A call given no id yet takes the piece's.
    /// Until the finish, the call's `arguments` are its raw text too.
    fn on_tool(&mut self, index: u64, id: Option<String>, name: Option<String>, delta: String) {
        let id = id.filter(|id| !id.is_empty());
        let same_call = |tool: &ToolBuffer| tool.id.is_none() || id.is_none() || tool.id == id;
        let latest = self.tools.iter().rposition(|tool| tool.index == index);
        let position = match latest {
            Some(position) if same_call(&self.tools[position]) => position,
            _ => {
                let content_index = self.partial.content.len();
                self.partial.content.push(text("").into()); // the slot, filled below
                let tool = ToolBuffer {
                    index,
                    content_index,
                    ..ToolBuffer::default()
                };
                self.tools.push(tool);
                self.tools.len() - 1
            }
        };
        let tool = &mut self.tools[position];
        tool.id = id.or(tool.id.take());
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            tool.name = name;
        }
        tool.arguments.push_str(&delta);
        let content_index = tool.content_index;
        self.partial.content[content_index] = tool.call(tool.arguments.clone().into()).into();
        let partial = self.partial.clone();
        self.emit(ModelEvent::ToolCallDelta {
            content_index,
            delta,
            partial,
        });
    }

    /// After the last chunk: map the finish reason, end every tool call in
    /// content order, and build `done`. Only `tool_calls` parses arguments;
    /// after `length` they stay the raw, possibly cut-off, text. The first
    /// call that does not parse ends the call in `error` (the `toolcall_end`s
    /// already sent stand). Like every partial, a `toolcall_end` partial has
    /// no usage: only `done` has it.
    fn finish(&mut self) -> Result<ModelEvent, String> {
        let (reason, usage) = self
            .finish
            .ok_or("Provider stream ended without a finish chunk")?;
        let reason = match reason {
            FinishReason::Stop => DoneReason::Stop,
            FinishReason::Length => DoneReason::Length,
            FinishReason::ToolCalls => DoneReason::ToolUse,
        };
        self.partial.stop_reason = reason.into();
        for tool in &self.tools {
            let arguments = if reason == DoneReason::ToolUse {
                tool.parsed()?
            } else {
                Value::String(tool.arguments.clone())
            };
            let tool_call = tool.call(arguments);
            self.partial.content[tool.content_index] = tool_call.clone().into();
            self.emit(ModelEvent::ToolCallEnd {
                content_index: tool.content_index,
                tool_call,
                partial: self.partial.clone(),
            });
        }
        self.partial.usage = usage.unwrap_or_default().normalized();
        let message = self.partial.clone();
        Ok(ModelEvent::Done { reason, message })
    }

    /// The terminal event of a failed call: the partial content is kept.
    fn failed(&self, reason: ErrorReason, error_message: String) -> ModelEvent {
        let error = AssistantMessage {
            stop_reason: reason.into(),
            error_message: Some(error_message),
            ..self.partial.clone()
        };
        ModelEvent::Error { reason, error }
    }
}

fn is_set(signal: &Option<Arc<AtomicBool>>) -> bool {
    matches!(signal, Some(signal) if signal.load(Ordering::SeqCst))
}

/// `Err` once the signal is set.
fn check(signal: &Option<Arc<AtomicBool>>) -> Result<(), String> {
    match is_set(signal) {
        true => Err(ABORTED.to_string()),
        false => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// The transport: HTTP out, SSE in.
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
/// and every error text it returns has the key replaced by `[redacted]`
/// (providers quote the key they were sent in their errors).
pub struct OpenAiCompatibleTransport {
    endpoint: String,
    api_key: String,
    idle_timeout: Duration,
    fetch: Fetch,
}

impl OpenAiCompatibleTransport {
    /// A transport to `<base_url>/chat/completions` (trailing slashes of
    /// `base_url` dropped), over real HTTP, with [`DEFAULT_IDLE_TIMEOUT`].
    pub fn new(base_url: &str, api_key: impl Into<String>) -> Result<Self, String> {
        let endpoint = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        let uri = endpoint.parse::<ureq::http::Uri>().ok();
        if uri.is_none_or(|uri| uri.scheme().is_none() || uri.host().is_none()) {
            return Err("OpenAI-compatible baseUrl must be an absolute URL".to_string());
        }
        Ok(OpenAiCompatibleTransport {
            endpoint,
            api_key: api_key.into(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            fetch: Arc::new(http_fetch),
        })
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

    /// The request: POST, the three headers, and the body `model, messages,
    /// tools, stream, stream_options` (the crate keeps JSON keys in the
    /// order they are written). The key goes into one header only.
    fn fetch_request(&self, request: &ProviderRequest, options: &StreamOptions) -> FetchRequest {
        let mut body = serde_json::to_value(request).expect("a request serializes");
        body["stream"] = json!(true);
        body["stream_options"] = json!({ "include_usage": true });
        let header = |name: &str, value: &str| (name.to_string(), value.to_string());
        FetchRequest {
            url: self.endpoint.clone(),
            method: "POST".to_string(),
            headers: vec![
                header("Accept", "text/event-stream"),
                header("Authorization", &format!("Bearer {}", self.api_key)),
                header("Content-Type", "application/json"),
            ],
            body: body.to_string(),
            signal: options.signal.clone(),
            idle_timeout: self.idle_timeout,
        }
    }

    /// The call: fetch, check the status, then read the events. The finish
    /// reason and the trailing usage may come in different events, so the
    /// one `Finish` chunk is handed over at the end.
    fn stream_sse(
        &self,
        request: &ProviderRequest,
        options: &StreamOptions,
        on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String> {
        check(&options.signal)?;
        let response = (self.fetch)(self.fetch_request(request, options))
            .map_err(|error| error.to_string())?;
        check(&options.signal)?;
        if !(200..300).contains(&response.status) {
            return Err(status_error(response));
        }
        let (mut finish, mut usage) = (None, ProviderUsage::default());
        read_events(response.body, &options.signal, &mut |data| {
            if data.trim() == "[DONE]" {
                return Ok(false);
            }
            let (chunks, reason, later) = parse_payload(data)?;
            if finish.is_some() && !chunks.is_empty() {
                return Err(invalid("content arrived after finish_reason"));
            }
            if finish.is_some() && reason.is_some() && finish != reason {
                return Err(invalid("finish_reason changed during the stream"));
            }
            chunks.into_iter().for_each(&mut *on_chunk);
            finish = reason.or(finish);
            usage = usage.merge(later.unwrap_or_default());
            Ok(true)
        })?;
        check(&options.signal)?;
        if let Some(reason) = finish {
            on_chunk(ProviderChunk::Finish {
                reason,
                usage: Some(usage),
            });
        }
        Ok(())
    }
}

impl ProviderTransport for OpenAiCompatibleTransport {
    /// Every error leaves through here, with the key redacted: one exit is
    /// easier to trust than every error path remembering it.
    fn stream(
        &self,
        request: &ProviderRequest,
        options: &StreamOptions,
        on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String> {
        self.stream_sse(request, options, on_chunk)
            .map_err(|error| redact(&error, &self.api_key))
    }
}

/// A non-2xx answer: its status and, when the body says, the provider's
/// `error.message`.
fn status_error(response: FetchResponse) -> String {
    let mut body = Vec::new();
    let _ = response.body.take(64 * 1024).read_to_end(&mut body);
    let status = response.status;
    let error: Value = serde_json::from_slice(&body).unwrap_or_default();
    match error["error"]["message"].as_str() {
        Some(message) => format!("OpenAI-compatible request failed with HTTP {status}: {message}"),
        None => format!("OpenAI-compatible request failed with HTTP {status}"),
    }
}

/// `text` with the API key replaced by `[redacted]` wherever it is written
/// raw, JSON-escaped (`\u0073k-…`, `\"`) or percent-encoded (`%73k-…`),
/// each character in any of these spellings. Nothing is replaced for a
/// placeholder key (under [`SHORTEST_SECRET`] characters).
fn redact(text: &str, key: &str) -> String {
    if key.chars().count() < SHORTEST_SECRET {
        return text.to_string();
    }
    let (mut redacted, mut rest) = (String::new(), text);
    while let Some(next) = rest.chars().next() {
        let length = key_length(rest, key);
        redacted.push_str(length.map_or(&rest[..next.len_utf8()], |_| "[redacted]"));
        rest = &rest[length.unwrap_or(next.len_utf8())..];
    }
    redacted
}

/// How many bytes at the start of `text` spell `key`: each character as
/// itself or as one of its escapes `\c`, `\uXXXX`, `%XX` (hex digits in
/// lower or upper case).
fn key_length(text: &str, key: &str) -> Option<usize> {
    key.chars().try_fold(0, |at, c| {
        let code = c as u32;
        let spellings = [
            c.to_string(),
            format!("\\{c}"),
            format!("\\u{code:04x}"),
            format!("\\u{code:04X}"),
            format!("%{code:02x}"),
            format!("%{code:02X}"),
        ];
        let spelled = spellings
            .iter()
            .find(|spelling| text[at..].starts_with(*spelling))?;
        Some(at + spelled.len())
    })
}

/// Reads an SSE body and hands the data of each event (its `data` lines
/// joined with `\n`) to `on_data`, until the body ends or `on_data` says
/// `false`. A read is just some bytes: it may end inside an event, a line
/// or a UTF-8 character. So `read_until` gathers bytes up to a line feed,
/// and only whole lines are decoded (lossily: invalid UTF-8 becomes U+FFFD,
/// as with the original's `TextDecoder`); line ends are ASCII, never part
/// of another character. A lone CR ends a line too (`a\rb\n` is two lines),
/// seen once a line feed or the end of the body follows. The end of the
/// body ends the last event, as a blank line would. Comments (`:`) and
/// other fields (`event:`, `id:`, `retry:`) are ignored.
fn read_events(
    body: Box<dyn Read + Send>,
    signal: &Option<Arc<AtomicBool>>,
    on_data: &mut dyn FnMut(&str) -> Result<bool, String>,
) -> Result<(), String> {
    let mut body = BufReader::new(body);
    let (mut data, mut first) = (None::<String>, true);
    loop {
        check(signal)?;
        let mut bytes = Vec::new();
        let limit = MAX_EVENT_BYTES as u64 + 1;
        let read = (&mut body).take(limit).read_until(b'\n', &mut bytes);
        let read = read.map_err(|error| error.to_string())?;
        if read > MAX_EVENT_BYTES {
            return Err(TOO_LONG.to_string());
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut text = text.strip_suffix('\n').unwrap_or(&text);
        text = text.strip_suffix('\r').unwrap_or(text);
        if mem::take(&mut first) {
            text = text.strip_prefix('\u{feff}').unwrap_or(text); // a byte order mark
        }
        for line in text.split('\r') {
            if line.is_empty() {
                if let Some(data) = data.take() {
                    if !on_data(&data[1..])? {
                        return Ok(());
                    }
                }
            } else if let Some(value) = data_value(line) {
                let data = data.get_or_insert_with(String::new);
                data.extend(["\n", value]); // each line adds "\n" and its value
                if data.len() > MAX_EVENT_BYTES + 1 {
                    return Err(TOO_LONG.to_string());
                }
            }
        }
        if read == 0 {
            return Ok(());
        }
    }
}

/// The value of a `data` line (`data: x`, `data:x`, or `data` alone).
fn data_value(line: &str) -> Option<&str> {
    let value = line
        .strip_prefix("data:")
        .or((line == "data").then_some(""))?;
    Some(value.strip_prefix(' ').unwrap_or(value))
}

// The provider's chunk, as far as the course reads it. Derived shapes check
// each field's type; unknown fields (`id`, `model`, `logprobs`, …) are
// ignored and `null` reads as absent.

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

/// A token count: a non-negative integer, also when written as a float with
/// nothing after the point (`12.0`, as some servers do).
fn count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let integral = number.as_f64().filter(|n| n.fract() == 0.0 && *n >= 0.0);
    let count = number.as_u64().or(integral.map(|n| n as u64));
    let error = || D::Error::custom("must be a non-negative integer");
    count.map(Some).ok_or_else(error)
}

fn invalid(detail: impl std::fmt::Display) -> String {
    format!("Invalid provider chunk: {detail}")
}

/// What one payload said: its chunks, its finish reason, its usage.
type Payload = (
    Vec<ProviderChunk>,
    Option<FinishReason>,
    Option<ProviderUsage>,
);

/// One payload, checked: an error names the path of the field that failed
/// (`choices[0].finish_reason: unknown variant …`). A payload with an
/// `error` is the provider's error; one choice per payload; an empty
/// `choices` may carry usage, or nothing (Azure OpenAI's opening chunk).
fn parse_payload(data: &str) -> Result<Payload, String> {
    let value: Value =
        serde_json::from_str(data).map_err(|_| invalid("data line is not valid JSON"))?;
    if !value.is_object() {
        return Err(invalid("payload must be an object")); // serde would read an array too
    }
    if !value["error"].is_null() {
        let message = value["error"]["message"].as_str();
        let message = message.map(|message| format!(": {message}"));
        let detail = "provider returned an error payload";
        return Err(invalid(format!("{detail}{}", message.unwrap_or_default())));
    }
    let chunk: OpenAiChunk = serde_path_to_error::deserialize(value).map_err(invalid)?;
    if chunk.choices.len() > 1 {
        return Err(invalid("only one streamed choice is supported"));
    }
    let Some(choice) = chunk.choices.into_iter().next() else {
        return Ok((Vec::new(), None, chunk.usage));
    };
    let mut chunks = Vec::new();
    if let Some(delta) = choice.delta.content.filter(|text| !text.is_empty()) {
        chunks.push(ProviderChunk::Text { delta });
    }
    for call in choice.delta.tool_calls.unwrap_or_default() {
        let function = call.function.unwrap_or_default();
        chunks.push(ProviderChunk::Tool {
            index: call.index,
            id: call.id,
            name: function.name,
            arguments_delta: function.arguments,
        });
    }
    Ok((chunks, choice.finish_reason, chunk.usage))
}

// ---------------------------------------------------------------------------
// The real fetch: ureq, blocking, and a watcher that can stop a blocked read.
// ---------------------------------------------------------------------------

/// Sends `request` over real HTTP with its own ureq agent. A non-2xx status
/// is an answer, not an error, so its body (the provider's error message)
/// can be read. A 2xx answer that is not an event stream (a `Content-Type`
/// other than `text/event-stream`, or a compressed body) is an error naming
/// its status, content type (and encoding) and first bytes: the rule a
/// browser's `EventSource` applies too.
///
/// The idle timeout is ureq's per-read timeout: every read of the answer
/// waits at most that long for a byte. A connection that does not come up
/// within 5 s is an error: ureq sets no connect timeout of its own.
pub fn http_fetch(request: FetchRequest) -> io::Result<FetchResponse> {
    let idle_timeout = request.idle_timeout;
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_per_read(Some(idle_timeout))
        .build();
    let agent = Agent::new_with_config(config);
    let stop = watch(agent.clone(), request.signal)?;
    let mut http = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(&request.url);
    for (name, value) in &request.headers {
        http = http.header(name, value);
    }
    let http = http.body(request.body).map_err(io::Error::other)?;
    let response = agent.run(http);
    let response = response.map_err(|error| named(error.into_io(), idle_timeout))?;
    let status = response.status().as_u16();
    let header = |name: &str| {
        let value = response.headers().get(name).map(|value| value.to_str());
        value.and_then(Result::ok).unwrap_or("").to_string()
    };
    let (content_type, encoding) = (header("content-type"), header("content-encoding"));
    let mut body = WatchedBody {
        body: Box::new(response.into_body().into_reader()),
        idle_timeout,
        _stop: stop,
    };
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    let event_stream = media_type.eq_ignore_ascii_case("text/event-stream");
    let plain = encoding.is_empty() || encoding.eq_ignore_ascii_case("identity");
    if (200..300).contains(&status) && !(event_stream && plain) {
        let mut first = Vec::new();
        let _ = body.by_ref().take(64).read_to_end(&mut first);
        return Err(io::Error::other(format!(
            "OpenAI-compatible response is not an event stream: HTTP {status}, Content-Type {content_type:?}, Content-Encoding {encoding:?}, first bytes \"{}\"",
            first.escape_ascii()
        )));
    }
    let body = Box::new(body);
    Ok(FetchResponse { status, body })
}

/// A blocked read does not look at any flag, so a thread looks instead,
/// every 10 ms, until the returned sender is dropped: once the signal is
/// set, it shuts the agent down, which closes its connection and ends the
/// blocked read at once.
fn watch(agent: Agent, signal: Option<Arc<AtomicBool>>) -> io::Result<mpsc::Sender<()>> {
    let (stop, stopped) = mpsc::channel::<()>();
    let tick = Duration::from_millis(10);
    thread::Builder::new().spawn(move || {
        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
            if is_set(&signal) {
                return agent.shutdown();
            }
        }
    })?;
    Ok(stop)
}

/// `error`, named for what it is when ureq's per-read timeout ran out.
fn named(error: io::Error, idle_timeout: Duration) -> io::Error {
    let inner = error.get_ref().and_then(|inner| inner.downcast_ref());
    match inner {
        Some(ureq::Error::Timeout(ureq::Timeout::PerRead)) => io::Error::other(format!(
            "No byte from the provider for {idle_timeout:?} (idle timeout)"
        )),
        _ => error,
    }
}

/// A response body that keeps its watcher alive while it is read. After
/// the watcher's shutdown, a blocked read fails, or returns `Ok(0)` as if
/// the body were complete (when the server marks the end by closing the
/// connection): either way the reading stops, and the adapter, seeing the
/// signal, ends the call `aborted`.
struct WatchedBody {
    body: Box<dyn Read + Send>,
    idle_timeout: Duration,
    _stop: mpsc::Sender<()>,
}

impl Read for WatchedBody {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let read = self.body.read(buffer);
        read.map_err(|error| named(error, self.idle_timeout))
    }
}
