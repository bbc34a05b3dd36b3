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
//!   through a [`Fetch`] (injectable; [`http_fetch`] is real HTTP), cuts the
//!   answer's bytes into lines and events, checks every external field
//!   before it becomes a chunk, and keeps the API key out of everything but
//!   the `Authorization` header.
//!
//! The TypeScript original pulls chunks from an async generator. Rust has no
//! generators, so a transport *pushes* them instead: its blocking `stream`
//! hands each chunk to a closure, in order, and returns how it ended.

use std::io::{self, Read};
use std::mem;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::assistant_stream::AssistantMessageEventStream;
use crate::event_stream::Producer;
use crate::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, DoneReason, ErrorReason, Model,
    ModelEvent, StopReason, StreamOptions, ToolCall, ToolDefinition, Usage, assistant_message,
    current_system_prompt, text, text_of,
};

/// The error message of a call whose signal was set.
const ABORTED: &str = "Request was aborted";

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
    /// `content` is `null` when the message has no text (only tool calls).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    let mut wire = Vec::new();
    if let Some(prompt) = current_system_prompt(&context.messages) {
        if !prompt.is_empty() {
            wire.push(ProviderWireMessage::System { content: prompt });
        }
    }
    for message in &context.messages {
        match message {
            AgentMessage::System(_) => {}
            AgentMessage::User(_) => wire.push(ProviderWireMessage::User {
                content: text_of(message),
            }),
            AgentMessage::Assistant(assistant) => {
                let content = Some(text_of(message)).filter(|text| !text.is_empty());
                let calls: Vec<ProviderWireToolCall> = assistant
                    .content
                    .iter()
                    .filter_map(wire_tool_call)
                    .collect();
                let tool_calls = Some(calls).filter(|calls| !calls.is_empty());
                wire.push(ProviderWireMessage::Assistant {
                    content,
                    tool_calls,
                });
            }
            AgentMessage::ToolResult(result) => wire.push(ProviderWireMessage::Tool {
                tool_call_id: result.tool_call_id.clone(),
                name: result.tool_name.clone(),
                content: text_of(message),
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
    let arguments = match &call.raw_arguments {
        Some(raw) => raw.clone(),
        None => call.arguments.to_string(),
    };
    Some(ProviderWireToolCall {
        id: call.id.clone(),
        kind: FunctionKind::Function,
        function: ProviderWireFunctionCall {
            name: call.name.clone(),
            arguments,
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

/// The provider's finish reasons the course understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
}

/// Usage as a provider reports it: any count may be missing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderUsage {
    pub input: Option<u64>,
    pub output: Option<u64>,
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
        for chunk in &self.0 {
            on_chunk(chunk.clone());
        }
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
        let reply = Reply::new(&self.provider, &self.model, stream.producer());
        let transport = Arc::clone(&self.transport);
        thread::spawn(move || reply.run(&*transport, &request, &options));
        stream
    }
}

/// The state of one call: everything here belongs to one `stream()`.
struct Reply {
    /// Pushes this call's events into its stream.
    producer: Producer<ModelEvent, AssistantMessage>,
    /// provider, model and timestamp of every message this call builds.
    base: AssistantMessage,
    /// The content so far, in order of first appearance.
    content: Vec<AssistantContent>,
    /// The slot of the text block, once text has appeared.
    text_index: Option<usize>,
    text: String,
    /// One buffer per provider tool index, in order of first appearance.
    tools: Vec<ToolBuffer>,
    finish: Option<(FinishReason, Option<ProviderUsage>)>,
}

/// One tool call being received.
struct ToolBuffer {
    /// The provider's index: which later pieces belong here.
    index: u64,
    /// Where the call sits in the content: given once, at first appearance.
    content_index: usize,
    id: String,
    name: String,
    /// The arguments' text so far.
    arguments: String,
}

impl ToolBuffer {
    fn call(&self, arguments: Value) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments,
            raw_arguments: Some(self.arguments.clone()),
        }
    }
}

impl Reply {
    fn new(provider: &str, model: &str, producer: Producer<ModelEvent, AssistantMessage>) -> Self {
        let base = AssistantMessage {
            provider: provider.to_string(),
            model: model.to_string(),
            ..assistant_message(Vec::new(), StopReason::Stop)
        };
        Reply {
            producer,
            base,
            content: Vec::new(),
            text_index: None,
            text: String::new(),
            tools: Vec::new(),
            finish: None,
        }
    }

    /// The whole call: `start`, a delta per chunk, then `done` or `error`.
    /// A set signal ends it `aborted`, whatever the transport said.
    fn run(
        mut self,
        transport: &dyn ProviderTransport,
        request: &ProviderRequest,
        options: &StreamOptions,
    ) {
        self.emit(ModelEvent::Start {
            partial: self.message(StopReason::Stop),
        });
        let streamed = transport.stream(request, options, &mut |chunk| {
            if !is_set(&options.signal) {
                self.apply(chunk);
            }
        });
        let terminal = if is_set(&options.signal) {
            self.failed(ErrorReason::Aborted, ABORTED.to_string())
        } else {
            match streamed.and_then(|()| self.finish()) {
                Ok(done) => done,
                Err(error) => self.failed(ErrorReason::Error, error),
            }
        };
        self.emit(terminal);
    }

    fn emit(&self, event: ModelEvent) {
        // Refused only if the caller already ended the stream.
        let _ = self.producer.push(event);
    }

    /// A copy of the message so far, stopped for `stop_reason`.
    fn message(&self, stop_reason: StopReason) -> AssistantMessage {
        AssistantMessage {
            content: self.content.clone(),
            stop_reason,
            ..self.base.clone()
        }
    }

    fn apply(&mut self, chunk: ProviderChunk) {
        match chunk {
            ProviderChunk::Text { delta } => self.on_text(delta),
            ProviderChunk::Tool {
                index,
                id,
                name,
                arguments_delta,
            } => self.on_tool(index, id, name, arguments_delta.unwrap_or_default()),
            ProviderChunk::Finish { reason, usage } => self.finish = Some((reason, usage)),
        }
    }

    /// Text goes to one slot, given when the first text arrives.
    fn on_text(&mut self, delta: String) {
        let content_index = match self.text_index {
            Some(index) => index,
            None => {
                self.content.push(text("").into()); // the slot, filled below
                self.text_index = Some(self.content.len() - 1);
                self.content.len() - 1
            }
        };
        self.text.push_str(&delta);
        self.content[content_index] = text(self.text.clone()).into();
        self.emit(ModelEvent::TextDelta {
            content_index,
            delta,
            partial: self.message(StopReason::Stop),
        });
    }

    /// A tool piece goes to the buffer of its provider index; a new index
    /// gets the next free slot of the content. Until the finish, the call's
    /// `arguments` are its raw text too.
    fn on_tool(&mut self, index: u64, id: Option<String>, name: Option<String>, delta: String) {
        let position = match self.tools.iter().position(|tool| tool.index == index) {
            Some(position) => position,
            None => {
                self.tools.push(ToolBuffer {
                    index,
                    content_index: self.content.len(),
                    id: format!("call-{index}"),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.content.push(text("").into()); // the slot, filled below
                self.tools.len() - 1
            }
        };
        let tool = &mut self.tools[position];
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            tool.id = id;
        }
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            tool.name = name;
        }
        tool.arguments.push_str(&delta);
        let content_index = tool.content_index;
        let call = tool.call(Value::String(tool.arguments.clone()));
        self.content[content_index] = call.into();
        self.emit(ModelEvent::ToolCallDelta {
            content_index,
            delta,
            partial: self.message(StopReason::Stop),
        });
    }

    /// After the last chunk: map the finish reason, end every tool call in
    /// content order, and build `done`. Only `tool_calls` parses arguments;
    /// after `length` they stay the raw, possibly cut-off, text.
    fn finish(&mut self) -> Result<ModelEvent, String> {
        let (reason, usage) = self
            .finish
            .ok_or("Provider stream ended without a finish chunk")?;
        let reason = match reason {
            FinishReason::Stop => DoneReason::Stop,
            FinishReason::Length => DoneReason::Length,
            FinishReason::ToolCalls => DoneReason::ToolUse,
        };
        for position in 0..self.tools.len() {
            let tool = &self.tools[position];
            let arguments = if reason == DoneReason::ToolUse {
                parse_arguments(tool)?
            } else {
                Value::String(tool.arguments.clone())
            };
            let (content_index, tool_call) = (tool.content_index, tool.call(arguments));
            self.content[content_index] = tool_call.clone().into();
            self.emit(ModelEvent::ToolCallEnd {
                content_index,
                tool_call,
                partial: self.message(reason.into()),
            });
        }
        let message = AssistantMessage {
            usage: usage.unwrap_or_default().normalized(),
            ..self.message(reason.into())
        };
        Ok(ModelEvent::Done { reason, message })
    }

    /// The terminal event of a failed call: the partial content is kept.
    fn failed(&self, reason: ErrorReason, error_message: String) -> ModelEvent {
        let error = AssistantMessage {
            error_message: Some(error_message),
            ..self.message(reason.into())
        };
        ModelEvent::Error { reason, error }
    }
}

/// A finished call's arguments as JSON (empty text is `{}`).
fn parse_arguments(tool: &ToolBuffer) -> Result<Value, String> {
    let text = if tool.arguments.is_empty() {
        "{}"
    } else {
        &tool.arguments
    };
    serde_json::from_str(text).map_err(|_| {
        let name = if tool.name.is_empty() {
            tool.index.to_string()
        } else {
            tool.name.clone()
        };
        format!("Tool {name} arguments 不是完整 JSON")
    })
}

fn is_set(signal: &Option<Arc<AtomicBool>>) -> bool {
    signal
        .as_ref()
        .is_some_and(|signal| signal.load(Ordering::SeqCst))
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
}

/// An HTTP answer: its status and its body, still to be read.
pub struct FetchResponse {
    pub status: u16,
    pub body: Box<dyn Read + Send>,
}

/// Sends one request. Tests inject their own; [`http_fetch`] is the real one.
pub type Fetch = Arc<dyn Fn(FetchRequest) -> io::Result<FetchResponse> + Send + Sync>;

/// The OpenAI-compatible chat completions transport. It holds the API key
/// and never shows it: no `Debug`, and `[redacted]` replaces it in every
/// error and every chunk it returns (providers echo keys they were sent).
pub struct OpenAiCompatibleTransport {
    endpoint: String,
    api_key: String,
    fetch: Fetch,
}

impl OpenAiCompatibleTransport {
    /// A transport to `<base_url>/chat/completions` (trailing slashes of
    /// `base_url` dropped), over real HTTP.
    pub fn new(base_url: &str, api_key: impl Into<String>) -> Result<Self, String> {
        let endpoint = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        let uri: ureq::http::Uri = endpoint
            .parse()
            .map_err(|_| "OpenAI-compatible baseUrl must be an absolute URL".to_string())?;
        if uri.scheme().is_none() || uri.host().is_none() {
            return Err("OpenAI-compatible baseUrl must be an absolute URL".to_string());
        }
        Ok(OpenAiCompatibleTransport {
            endpoint,
            api_key: api_key.into(),
            fetch: Arc::new(http_fetch),
        })
    }

    /// The same transport, sending through `fetch` instead.
    pub fn with_fetch(self, fetch: Fetch) -> Self {
        OpenAiCompatibleTransport { fetch, ..self }
    }

    /// The request: POST, the three headers, and the body `model, messages,
    /// tools, stream, stream_options`. The key goes into one header only.
    fn fetch_request(&self, request: &ProviderRequest, options: &StreamOptions) -> FetchRequest {
        #[derive(Serialize)]
        struct Body<'a> {
            #[serde(flatten)]
            request: &'a ProviderRequest,
            stream: bool,
            stream_options: IncludeUsage,
        }
        #[derive(Serialize)]
        struct IncludeUsage {
            include_usage: bool,
        }
        let body = Body {
            request,
            stream: true,
            stream_options: IncludeUsage {
                include_usage: true,
            },
        };
        let header = |name: &str, value: String| (name.to_string(), value);
        FetchRequest {
            url: self.endpoint.clone(),
            method: "POST".to_string(),
            headers: vec![
                header("Accept", "text/event-stream".to_string()),
                header("Authorization", format!("Bearer {}", self.api_key)),
                header("Content-Type", "application/json".to_string()),
            ],
            body: serde_json::to_string(&body).expect("a request always serializes"),
            signal: options.signal.clone(),
        }
    }

    /// `text` with the key replaced by `[redacted]`, also where it is
    /// written as inside a JSON string (a key with `"` or `\`).
    fn hide_key(&self, text: &str) -> String {
        if self.api_key.is_empty() {
            return text.to_string();
        }
        let quoted = serde_json::to_string(&self.api_key).expect("a string serializes");
        let escaped = &quoted[1..quoted.len() - 1];
        text.replace(&self.api_key, "[redacted]")
            .replace(escaped, "[redacted]")
    }

    /// The same chunk with the key hidden in every text it carries: a
    /// provider may echo the key in its answer as well as in its errors.
    fn redact_chunk(&self, chunk: ProviderChunk) -> ProviderChunk {
        let hide = |text: Option<String>| text.map(|text| self.hide_key(&text));
        match chunk {
            ProviderChunk::Text { delta } => ProviderChunk::Text {
                delta: self.hide_key(&delta),
            },
            ProviderChunk::Tool {
                index,
                id,
                name,
                arguments_delta,
            } => ProviderChunk::Tool {
                index,
                id: hide(id),
                name: hide(name),
                arguments_delta: hide(arguments_delta),
            },
            finish => finish,
        }
    }

    /// An error text with the key hidden; never empty.
    fn redact(&self, text: &str) -> String {
        let text = self.hide_key(text);
        if text.is_empty() {
            "OpenAI-compatible transport failed".to_string()
        } else {
            text
        }
    }

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
        let mut events = SseReader::new(response.body, &options.signal);
        let mut finish = None;
        let mut usage: Option<ProviderUsage> = None;
        while let Some(data) = events.next_data()? {
            check(&options.signal)?;
            if data.trim() == "[DONE]" {
                break;
            }
            let payload = parse_payload(&data)?;
            if finish.is_some() && !payload.chunks.is_empty() {
                return Err(invalid("content arrived after finish_reason"));
            }
            if finish.is_some() && payload.finish.is_some() && finish != payload.finish {
                return Err(invalid("finish_reason changed during the stream"));
            }
            for chunk in payload.chunks {
                on_chunk(self.redact_chunk(chunk));
            }
            finish = payload.finish.or(finish);
            if let Some(later) = payload.usage {
                usage = Some(usage.unwrap_or_default().merge(later));
            }
        }
        check(&options.signal)?;
        // The finish reason and the trailing usage may come in different
        // events: the one finish chunk is made here, at the end.
        if let Some(reason) = finish {
            on_chunk(ProviderChunk::Finish { reason, usage });
        }
        Ok(())
    }
}

impl ProviderTransport for OpenAiCompatibleTransport {
    fn stream(
        &self,
        request: &ProviderRequest,
        options: &StreamOptions,
        on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String> {
        self.stream_sse(request, options, on_chunk)
            .map_err(|error| self.redact(&error))
    }
}

/// `Err` once the signal is set.
fn check(signal: &Option<Arc<AtomicBool>>) -> Result<(), String> {
    if is_set(signal) {
        Err(ABORTED.to_string())
    } else {
        Ok(())
    }
}

/// A non-2xx answer: its status and, when the body says, the provider's
/// `error.message`.
fn status_error(response: FetchResponse) -> String {
    let mut body = Vec::new();
    let _ = response.body.take(64 * 1024).read_to_end(&mut body);
    let status = response.status;
    let error: Option<Value> = serde_json::from_slice(&body).ok();
    let message = error
        .as_ref()
        .and_then(|error| error["error"]["message"].as_str());
    match message {
        Some(message) => format!("OpenAI-compatible request failed with HTTP {status}: {message}"),
        None => format!("OpenAI-compatible request failed with HTTP {status}"),
    }
}

/// Cuts a body into SSE events. A read is just some bytes: it may end in the
/// middle of an event, a line, or a UTF-8 character. So bytes wait in
/// `pending` until a line end (LF, CRLF or CR) arrives, and only whole lines
/// are decoded: line ends are ASCII, never part of another character.
struct SseReader<'a> {
    body: Box<dyn Read + Send>,
    signal: &'a Option<Arc<AtomicBool>>,
    pending: Vec<u8>,
    /// How far `pending` is known to hold no line end: a long line is
    /// scanned once, not again after every read.
    scanned: usize,
    /// No line decoded yet: the first one may start with a BOM.
    first_line: bool,
    /// The last line ended in CR: an LF right after it belongs to that end.
    after_cr: bool,
    /// The `data:` lines of the event being read.
    data: Vec<String>,
    at_end: bool,
}

impl<'a> SseReader<'a> {
    fn new(body: Box<dyn Read + Send>, signal: &'a Option<Arc<AtomicBool>>) -> Self {
        SseReader {
            body,
            signal,
            pending: Vec::new(),
            scanned: 0,
            first_line: true,
            after_cr: false,
            data: Vec::new(),
            at_end: false,
        }
    }

    /// The data of the next event; `None` at the end of the body. An event
    /// the end of the body cut off still counts, as in the original.
    fn next_data(&mut self) -> Result<Option<String>, String> {
        loop {
            while let Some(line) = self.next_line() {
                if let Some(data) = self.take_line(&line) {
                    return Ok(Some(data));
                }
            }
            if self.at_end {
                let rest = mem::take(&mut self.pending);
                self.scanned = 0;
                if !rest.is_empty() {
                    let line = self.decode(&rest);
                    self.take_line(&line);
                }
                if self.data.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(mem::take(&mut self.data).join("\n")));
            }
            self.read_more()?;
        }
    }

    /// One read, with the signal checked before and after it.
    fn read_more(&mut self) -> Result<(), String> {
        check(self.signal)?;
        let mut buffer = [0; 4096];
        let read = match self.body.read(&mut buffer) {
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return Ok(()), // again
            Err(error) => return Err(error.to_string()),
        };
        check(self.signal)?;
        if read == 0 {
            self.at_end = true;
        }
        self.pending.extend_from_slice(&buffer[..read]);
        Ok(())
    }

    /// The next whole line in `pending`, without its line end.
    fn next_line(&mut self) -> Option<String> {
        if self.after_cr && !self.pending.is_empty() {
            if self.pending[0] == b'\n' {
                self.pending.remove(0);
            }
            self.after_cr = false;
        }
        let found = self.pending[self.scanned..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r');
        let Some(found) = found else {
            self.scanned = self.pending.len();
            return None;
        };
        let end = self.scanned + found;
        self.scanned = 0;
        let line: Vec<u8> = self.pending.drain(..=end).collect();
        self.after_cr = line[end] == b'\r';
        Some(self.decode(&line[..end]))
    }

    /// A whole line as text. One UTF-8 byte order mark at the very start of
    /// the body is dropped: it would hide the first line's `data:`.
    fn decode(&mut self, line: &[u8]) -> String {
        let line = String::from_utf8_lossy(line);
        if mem::replace(&mut self.first_line, false) {
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                return rest.to_string();
            }
        }
        line.into_owned()
    }

    /// Takes in one line; a blank line ends the event and gives its data
    /// lines joined with `\n`. Comments (`:`) and other fields (`event:`,
    /// `id:`, `retry:`) are ignored.
    fn take_line(&mut self, line: &str) -> Option<String> {
        if line.is_empty() {
            if self.data.is_empty() {
                return None;
            }
            return Some(mem::take(&mut self.data).join("\n"));
        }
        if line == "data" {
            self.data.push(String::new());
        } else if let Some(value) = line.strip_prefix("data:") {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_string());
        }
        None
    }
}

/// What one SSE payload said, after checking.
struct Payload {
    chunks: Vec<ProviderChunk>,
    finish: Option<FinishReason>,
    usage: Option<ProviderUsage>,
}

fn invalid(detail: impl std::fmt::Display) -> String {
    format!("Invalid provider chunk: {detail}")
}

/// `key` of `object`, with `null` read as absent.
fn field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|value| !value.is_null())
}

fn optional_string(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, String> {
    match field(object, key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(invalid(format!("{path}.{key} must be a string"))),
    }
}

fn optional_count(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, String> {
    match field(object, key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| invalid(format!("{path}.{key} must be a non-negative integer"))),
    }
}

/// The provider's JSON is unknown data: each field the course uses is
/// checked before it becomes a [`ProviderChunk`], and an error names the
/// path. One choice per payload; an empty `choices` only carries usage.
fn parse_payload(data: &str) -> Result<Payload, String> {
    let value: Value =
        serde_json::from_str(data).map_err(|_| invalid("data line is not valid JSON"))?;
    let payload = value
        .as_object()
        .ok_or_else(|| invalid("payload must be an object"))?;
    if let Some(error) = field(payload, "error") {
        let message = error["message"].as_str().unwrap_or("no message");
        return Err(invalid(format!(
            "provider returned an error payload: {message}"
        )));
    }
    let choices = payload
        .get("choices")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("choices must be an array"))?;
    if choices.len() > 1 {
        return Err(invalid("only one streamed choice is supported"));
    }
    let usage = parse_usage(payload.get("usage"))?;
    let Some(choice) = choices.first() else {
        if usage.is_none() {
            return Err(invalid("empty choices require usage"));
        }
        let chunks = Vec::new();
        return Ok(Payload {
            chunks,
            finish: None,
            usage,
        });
    };
    let choice = choice
        .as_object()
        .ok_or_else(|| invalid("choices[0] must be an object"))?;
    optional_count(choice, "index", "choices[0]")?;
    let delta = choice
        .get("delta")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("choices[0].delta must be an object"))?;

    let mut chunks = Vec::new();
    if let Some(delta) = optional_string(delta, "content", "choices[0].delta")? {
        if !delta.is_empty() {
            chunks.push(ProviderChunk::Text { delta });
        }
    }
    match field(delta, "tool_calls") {
        None => {}
        Some(Value::Array(calls)) => {
            for (i, call) in calls.iter().enumerate() {
                let path = format!("choices[0].delta.tool_calls[{i}]");
                chunks.push(parse_tool_chunk(call, &path)?);
            }
        }
        Some(_) => return Err(invalid("choices[0].delta.tool_calls must be an array")),
    }
    let finish = parse_finish_reason(field(choice, "finish_reason"))?;
    Ok(Payload {
        chunks,
        finish,
        usage,
    })
}

fn parse_usage(value: Option<&Value>) -> Result<Option<ProviderUsage>, String> {
    let Some(value) = value.filter(|value| !value.is_null()) else {
        return Ok(None);
    };
    let usage = value
        .as_object()
        .ok_or_else(|| invalid("usage must be an object"))?;
    Ok(Some(ProviderUsage {
        input: optional_count(usage, "prompt_tokens", "usage")?,
        output: optional_count(usage, "completion_tokens", "usage")?,
        total_tokens: optional_count(usage, "total_tokens", "usage")?,
    }))
}

fn parse_finish_reason(value: Option<&Value>) -> Result<Option<FinishReason>, String> {
    match value.map(|value| value.as_str()) {
        None => Ok(None),
        Some(Some("stop")) => Ok(Some(FinishReason::Stop)),
        Some(Some("length")) => Ok(Some(FinishReason::Length)),
        Some(Some("tool_calls")) => Ok(Some(FinishReason::ToolCalls)),
        Some(_) => Err(invalid(format!(
            "choices[0].finish_reason {} is not supported",
            value.unwrap_or(&Value::Null)
        ))),
    }
}

fn parse_tool_chunk(value: &Value, path: &str) -> Result<ProviderChunk, String> {
    let call = value
        .as_object()
        .ok_or_else(|| invalid(format!("{path} must be an object")))?;
    let index = call
        .get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| invalid(format!("{path}.index must be a non-negative integer")))?;
    if field(call, "type").is_some_and(|kind| kind != "function") {
        return Err(invalid(format!("{path}.type must be function")));
    }
    let id = optional_string(call, "id", path)?;
    let (name, arguments_delta) = match field(call, "function") {
        None => (None, None),
        Some(Value::Object(function)) => {
            let path = format!("{path}.function");
            let name = optional_string(function, "name", &path)?;
            (name, optional_string(function, "arguments", &path)?)
        }
        Some(_) => return Err(invalid(format!("{path}.function must be an object"))),
    };
    if id.is_none() && name.is_none() && arguments_delta.is_none() {
        return Err(invalid(format!("{path} has no tool-call delta")));
    }
    Ok(ProviderChunk::Tool {
        index,
        id,
        name,
        arguments_delta,
    })
}

// ---------------------------------------------------------------------------
// The real fetch: ureq, blocking, and a signal that can stop a blocked read.
// ---------------------------------------------------------------------------

/// Sends `request` over real HTTP with its own ureq agent. A non-2xx status
/// is an answer, not an error, so its body (the provider's error message)
/// can be read.
///
/// A connection that does not come up within 5 s is an error: ureq sets no
/// connect timeout of its own (the system gives up after about two
/// minutes), and shutting the agent down (below) does not interrupt a
/// connect, so without this bound Ctrl-C would wait that long too.
///
/// Cancellation: a thread blocked in a socket read does not look at any
/// flag, so setting the signal alone wakes nothing. While the request and
/// its body are alive, a watcher thread looks at the signal every 10 ms;
/// once it is set, it shuts the agent down, which closes the agent's
/// sockets and makes the blocked read return an error at once.
pub fn http_fetch(request: FetchRequest) -> io::Result<FetchResponse> {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(5)))
        .build();
    let agent = ureq::Agent::new_with_config(config);
    let watcher = request.signal.map(|signal| watch(agent.clone(), signal));
    let mut http = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(&request.url);
    for (name, value) in &request.headers {
        http = http.header(name, value);
    }
    let http = http.body(request.body).map_err(io::Error::other)?;
    let response = agent.run(http).map_err(io::Error::other)?;
    let status = response.status().as_u16();
    let body = WatchedBody {
        body: Box::new(response.into_body().into_reader()),
        _watcher: watcher,
    };
    Ok(FetchResponse {
        status,
        body: Box::new(body),
    })
}

/// Starts the watcher of one request; it stops when the returned sender is
/// dropped (the body is gone) or after it shut the agent down.
fn watch(agent: ureq::Agent, signal: Arc<AtomicBool>) -> mpsc::Sender<()> {
    let (stop, stopped) = mpsc::channel::<()>();
    thread::spawn(move || {
        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(Duration::from_millis(10)) {
            if signal.load(Ordering::SeqCst) {
                agent.shutdown();
                return;
            }
        }
    });
    stop
}

/// A response body that keeps its watcher alive while it is read.
struct WatchedBody {
    body: Box<dyn Read + Send>,
    _watcher: Option<mpsc::Sender<()>>,
}

impl Read for WatchedBody {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        self.body.read(buffer)
    }
}
