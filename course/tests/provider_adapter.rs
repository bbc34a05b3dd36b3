//! Chapter 05's focused test: the provider adapter, 12 tests, offline.
//!
//! Steps filter these tests by name: `outbound_conversion` and
//! `system_folding` (step 5.1, 1 test each), `normalized_transport`
//! (step 5.2, 3 tests), `sse_` (step 5.3, 5 tests), `fetch_transport`
//! (step 5.4, 2 tests), and no filter (all 12).
//!
//! No test touches the network: the SSE tests inject a fetch that answers
//! with bytes split in the middle of an event. Each stream is read on a
//! helper thread; one that never ends fails its test after a second.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use course::block_on;
use course::provider_adapter::{
    FetchRequest, FetchResponse, FinishReason, OpenAiCompatibleModel, OpenAiCompatibleTransport,
    ProviderChunk, ProviderRequest, ProviderTransport, ProviderUsage, fixed_transport,
    to_provider_messages, to_provider_tools,
};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, DoneReason, ErrorReason, Model,
    ModelEvent, ModelStream, Sections, StopReason, StreamOptions, SystemMessage, ToolCall,
    ToolDefinition, ToolResultMessage, Usage, UserMessage, assistant_message,
    current_system_prompt, text, user_message,
};
use serde_json::{Value, json};

/// The wire name of an event.
fn kind(event: &ModelEvent) -> &'static str {
    match event {
        ModelEvent::Start { .. } => "start",
        ModelEvent::TextDelta { .. } => "text_delta",
        ModelEvent::ToolCallDelta { .. } => "toolcall_delta",
        ModelEvent::ToolCallEnd { .. } => "toolcall_end",
        ModelEvent::Done { .. } => "done",
        ModelEvent::Error { .. } => "error",
    }
}

/// Reads every event of `stream`, then its result, allowing one second.
/// `on_event` sees each event as it arrives.
fn consume_with<S>(
    stream: S,
    mut on_event: impl FnMut(&ModelEvent) + Send + 'static,
) -> (Vec<ModelEvent>, AssistantMessage)
where
    S: ModelStream + Send + 'static,
{
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let mut events = Vec::new();
        while let Some(event) = block_on(poll_fn(|cx| stream.poll_next(cx))) {
            on_event(&event);
            events.push(event);
        }
        let result = block_on(poll_fn(|cx| stream.poll_result(cx)));
        let _ = report.send((events, result));
    });
    let (events, result) = match reported.recv_timeout(Duration::from_secs(1)) {
        Ok(read) => read,
        Err(RecvTimeoutError::Timeout) => {
            panic!("一秒内流没有结束：每次调用，即使失败，也必须以 `done` 或 `error` 结束")
        }
        Err(RecvTimeoutError::Disconnected) => panic!("读取流的线程 panic 了"),
    };
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    let result = result.unwrap_or_else(|error| {
        panic!(
            "流在 {kinds:?} 之后结束却没有结果（{error}）：每次调用都必须以 `done` 或 `error` 结束"
        )
    });
    (events, result)
}

fn consume<S: ModelStream + Send + 'static>(stream: S) -> (Vec<ModelEvent>, AssistantMessage) {
    consume_with(stream, |_| {})
}

/// The message with its timestamp zeroed, so two messages compare.
fn without_timestamp(message: &AssistantMessage) -> AssistantMessage {
    AssistantMessage {
        timestamp: 0,
        ..message.clone()
    }
}

// Built with `..Default::default()` so later chapters may add fields.
#[allow(clippy::needless_update)]
fn context(messages: Vec<AgentMessage>) -> AgentContext {
    AgentContext {
        messages,
        ..AgentContext::default()
    }
}

fn user(value: &str) -> AgentMessage {
    AgentMessage::User(user_message(value))
}

/// A tool call whose `arguments` is `arguments` and whose raw text is `raw`.
fn call(id: &str, name: &str, arguments: Value, raw: &str) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
        raw_arguments: Some(raw.to_string()),
    })
}

fn tool_piece(index: u64, id: Option<&str>, name: Option<&str>, delta: &str) -> ProviderChunk {
    ProviderChunk::Tool {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments_delta: Some(delta.to_string()),
    }
}

fn text_piece(delta: &str) -> ProviderChunk {
    ProviderChunk::Text {
        delta: delta.to_string(),
    }
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read".to_string(),
        description: "Read one file".to_string(),
        parameters: json!({
            "type": "object",
            "properties": { "path": { "type": "string" } },
            "required": ["path"],
        }),
    }
}

/// A body that hands out its pieces one read at a time.
struct Pieces(VecDeque<Vec<u8>>);

impl Read for Pieces {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let Some(mut piece) = self.0.pop_front() else {
            return Ok(0);
        };
        let n = piece.len().min(buffer.len());
        buffer[..n].copy_from_slice(&piece[..n]);
        if n < piece.len() {
            self.0.push_front(piece.split_off(n));
        }
        Ok(n)
    }
}

/// An SSE answer with one `data:` event per payload (a JSON string is
/// written as it is, like `[DONE]`), arriving in two reads split in the
/// middle of the bytes.
fn sse_response(payloads: &[Value]) -> FetchResponse {
    let body: String = payloads
        .iter()
        .map(|payload| match payload {
            Value::String(raw) => format!("data: {raw}\n\n"),
            other => format!("data: {other}\n\n"),
        })
        .collect();
    let mut bytes = body.into_bytes();
    let second = bytes.split_off(bytes.len() / 2);
    FetchResponse {
        status: 200,
        body: Box::new(Pieces(VecDeque::from([bytes, second]))),
    }
}

/// An SSE transport that answers every request with `payloads`.
fn sse_transport(api_key: &str, payloads: Vec<Value>) -> OpenAiCompatibleTransport {
    OpenAiCompatibleTransport::new("https://provider.invalid/v1", api_key)
        .expect("合法的 base URL")
        .with_fetch(Arc::new(move |_| Ok(sse_response(&payloads))))
}

fn fixture_model(transport: impl ProviderTransport + 'static) -> OpenAiCompatibleModel {
    OpenAiCompatibleModel::new("fixture", "fixture-1", transport)
}

fn first_text(message: &AssistantMessage) -> &str {
    match message.content.first() {
        Some(AssistantContent::Text(block)) => &block.text,
        _ => "",
    }
}

#[test]
fn normalized_transport_keeps_first_appearance_order_and_whole_partials() {
    let model = fixture_model(fixed_transport(vec![
        tool_piece(4, Some("call-read"), Some("read"), r#"{"path":"#),
        text_piece("先读"),
        tool_piece(2, Some("call-search"), Some("search"), r#"{"query":"#),
        tool_piece(4, None, None, r#""README.md"}"#),
        text_piece("，再查"),
        tool_piece(2, None, None, r#""pi"}"#),
        ProviderChunk::Finish {
            reason: FinishReason::ToolCalls,
            usage: Some(ProviderUsage {
                input: Some(7),
                output: Some(5),
                total_tokens: Some(12),
            }),
        },
    ]));

    let (events, result) =
        consume(model.stream(&context(vec![user("go")]), StreamOptions::default()));

    let read_opening = call("call-read", "read", json!(r#"{"path":"#), r#"{"path":"#);
    let read_raw = call(
        "call-read",
        "read",
        json!(r#"{"path":"README.md"}"#),
        r#"{"path":"README.md"}"#,
    );
    let search_opening = call(
        "call-search",
        "search",
        json!(r#"{"query":"#),
        r#"{"query":"#,
    );
    let search_raw = call(
        "call-search",
        "search",
        json!(r#"{"query":"pi"}"#),
        r#"{"query":"pi"}"#,
    );
    let read_final = call(
        "call-read",
        "read",
        json!({ "path": "README.md" }),
        r#"{"path":"README.md"}"#,
    );
    let search_final = call(
        "call-search",
        "search",
        json!({ "query": "pi" }),
        r#"{"query":"pi"}"#,
    );
    let first_text: AssistantContent = text("先读").into();
    let final_text: AssistantContent = text("先读，再查").into();
    let final_content = vec![read_final.clone(), final_text.clone(), search_final.clone()];

    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "toolcall_delta",
            "text_delta",
            "toolcall_delta",
            "toolcall_delta",
            "text_delta",
            "toolcall_delta",
            "toolcall_end",
            "toolcall_end",
            "done",
        ],
        "事件顺序不对"
    );

    let deltas: Vec<(&str, usize, &str, &AssistantMessage)> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta {
                content_index,
                delta,
                partial,
            } => Some(("text_delta", *content_index, delta.as_str(), partial)),
            ModelEvent::ToolCallDelta {
                content_index,
                delta,
                partial,
            } => Some(("toolcall_delta", *content_index, delta.as_str(), partial)),
            _ => None,
        })
        .collect();
    let slots: Vec<(&str, usize, &str)> = deltas
        .iter()
        .map(|(kind, index, delta, _)| (*kind, *index, *delta))
        .collect();
    assert_eq!(
        slots,
        [
            ("toolcall_delta", 0, r#"{"path":"#),
            ("text_delta", 1, "先读"),
            ("toolcall_delta", 2, r#"{"query":"#),
            ("toolcall_delta", 0, r#""README.md"}"#),
            ("text_delta", 1, "，再查"),
            ("toolcall_delta", 2, r#""pi"}"#),
        ],
        "contentIndex 应按内容第一次出现的顺序分配（工具 4 → 0，文本 → 1，工具 2 → 2），而不是 Provider 的 index"
    );
    let partials: Vec<Vec<AssistantContent>> = deltas
        .iter()
        .map(|(_, _, _, partial)| partial.content.clone())
        .collect();
    assert_eq!(
        partials,
        [
            vec![read_opening.clone()],
            vec![read_opening.clone(), first_text.clone()],
            vec![
                read_opening.clone(),
                first_text.clone(),
                search_opening.clone()
            ],
            vec![read_raw.clone(), first_text.clone(), search_opening.clone()],
            vec![read_raw.clone(), final_text.clone(), search_opening.clone()],
            vec![read_raw.clone(), final_text.clone(), search_raw.clone()],
        ],
        "每个增量事件的 partial 应是当时完整的 content（工具参数此时仍是原文字符串）"
    );
    for (_, _, _, partial) in &deltas {
        assert_eq!(
            without_timestamp(partial),
            AssistantMessage {
                content: partial.content.clone(),
                provider: "fixture".to_string(),
                model: "fixture-1".to_string(),
                usage: Usage::default(),
                stop_reason: StopReason::Stop,
                timestamp: 0,
                error_message: None,
            },
            "增量事件的 partial：provider、model 来自配置，usage 为零，stopReason 为 stop"
        );
    }

    let ends: Vec<(usize, &ToolCall, &Vec<AssistantContent>)> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallEnd {
                content_index,
                tool_call,
                partial,
            } => Some((*content_index, tool_call, &partial.content)),
            _ => None,
        })
        .collect();
    let AssistantContent::ToolCall(read_call) = &read_final else {
        unreachable!()
    };
    let AssistantContent::ToolCall(search_call) = &search_final else {
        unreachable!()
    };
    assert_eq!(
        ends,
        [
            (
                0,
                read_call,
                &vec![read_final.clone(), final_text.clone(), search_raw.clone()]
            ),
            (2, search_call, &final_content),
        ],
        "toolcall_end 按 content 顺序发出，参数已解析，partial 逐个换上完整调用"
    );
    assert_eq!(
        without_timestamp(&result),
        AssistantMessage {
            content: final_content,
            provider: "fixture".to_string(),
            model: "fixture-1".to_string(),
            usage: Usage {
                input: 7,
                output: 5,
                total_tokens: 12,
            },
            stop_reason: StopReason::ToolUse,
            timestamp: 0,
            error_message: None,
        },
        "最终消息不对"
    );
    match events.last() {
        Some(ModelEvent::Done { reason, message }) => {
            assert_eq!(*reason, DoneReason::ToolUse, "tool_calls 应映射为 toolUse");
            assert_eq!(*message, result, "done 携带的消息就是 result()");
        }
        other => panic!("最后一个事件应是 done，实际是 {other:?}"),
    }
}

#[test]
fn outbound_conversion_maps_canonical_roles_to_wire_roles_at_the_boundary() {
    let context = context(vec![
        AgentMessage::System(SystemMessage {
            content: "You are precise.".to_string(),
            sections: None,
            timestamp: 0,
        }),
        AgentMessage::User(UserMessage {
            content: vec![text("read a.txt"), text("then search")],
            timestamp: 1,
        }),
        AgentMessage::Assistant(assistant_message(
            vec![
                text("I will inspect both.").into(),
                ToolCall {
                    id: "call-1".to_string(),
                    name: "read".to_string(),
                    arguments: json!({ "path": "wrong.txt" }),
                    raw_arguments: Some(r#"{"path":"a.txt"}"#.to_string()),
                }
                .into(),
                ToolCall {
                    id: "call-2".to_string(),
                    name: "search".to_string(),
                    arguments: json!({ "query": "pi" }),
                    raw_arguments: None,
                }
                .into(),
            ],
            StopReason::ToolUse,
        )),
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "call-1".to_string(),
            tool_name: "read".to_string(),
            content: vec![text("A"), text("B")],
            details: None,
            is_error: false,
            timestamp: 1,
        }),
    ]);
    let input_snapshot = context.clone();

    let messages = to_provider_messages(&context);

    assert_eq!(
        serde_json::to_value(&messages).unwrap(),
        json!([
            { "role": "system", "content": "You are precise." },
            { "role": "user", "content": "read a.txt\nthen search" },
            {
                "role": "assistant",
                "content": "I will inspect both.",
                "tool_calls": [
                    {
                        "id": "call-1",
                        "type": "function",
                        "function": { "name": "read", "arguments": r#"{"path":"a.txt"}"# },
                    },
                    {
                        "id": "call-2",
                        "type": "function",
                        "function": { "name": "search", "arguments": r#"{"query":"pi"}"# },
                    },
                ],
            },
            { "role": "tool", "tool_call_id": "call-1", "name": "read", "content": "A\nB" },
        ]),
        "wire messages 不对（rawArguments 优先，没有时才序列化 arguments）"
    );
    assert_eq!(context, input_snapshot, "出站转换不能改动输入的 context");
    assert_eq!(
        serde_json::to_value(to_provider_tools(Some(&[read_tool()]))).unwrap(),
        json!([
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read one file",
                    "parameters": {
                        "type": "object",
                        "properties": { "path": { "type": "string" } },
                        "required": ["path"],
                    },
                },
            },
        ]),
        "wire tools 应是 {{type: \"function\", function}}"
    );
}

#[test]
fn system_folding_leaves_one_leading_system_and_the_transcript_unchanged() {
    let context = context(vec![
        AgentMessage::System(SystemMessage {
            content: "BASE".to_string(),
            sections: Some(Sections::from([
                ("rules", Some("RULE v1")),
                ("scratch", Some("SCRATCH")),
            ])),
            timestamp: 0,
        }),
        AgentMessage::User(UserMessage {
            content: vec![text("first")],
            timestamp: 1,
        }),
        AgentMessage::Assistant(assistant_message(vec![text("ok").into()], StopReason::Stop)),
        AgentMessage::System(SystemMessage {
            content: String::new(),
            sections: Some(Sections::from([
                ("rules", Some("RULE v2")),
                ("scratch", None),
            ])),
            timestamp: 2,
        }),
        AgentMessage::User(UserMessage {
            content: vec![text("second")],
            timestamp: 3,
        }),
    ]);
    let input_snapshot = context.clone();

    let messages = serde_json::to_value(to_provider_messages(&context)).unwrap();

    assert_eq!(
        messages,
        json!([
            { "role": "system", "content": "BASE\n\nRULE v2" },
            { "role": "user", "content": "first" },
            { "role": "assistant", "content": "ok" },
            { "role": "user", "content": "second" },
        ]),
        "wire 上应只有一条开头的 system，内容是重放结果；中途的 system 不出线"
    );
    let systems = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "system")
        .count();
    assert_eq!(systems, 1, "wire 上只能有一条 system");
    assert_eq!(
        current_system_prompt(&context.messages).as_deref(),
        Some("BASE\n\nRULE v2"),
        "折叠结果就是 transcript 的重放结果"
    );
    assert_eq!(
        context, input_snapshot,
        "折叠只发生在请求出线那一刻，不回写 transcript"
    );
    let roles: Vec<Value> = serde_json::to_value(to_provider_messages(&self::context(vec![user(
        "no system",
    )])))
    .unwrap()
    .as_array()
    .unwrap()
    .iter()
    .map(|message| message["role"].clone())
    .collect();
    assert_eq!(
        roles,
        [json!("user")],
        "没有 system message 时，wire 上也没有 system"
    );
}

/// A transport that sends some text, then fails.
struct ResetTransport;

impl ProviderTransport for ResetTransport {
    fn stream(
        &self,
        _request: &ProviderRequest,
        _options: &StreamOptions,
        on_chunk: &mut dyn FnMut(ProviderChunk),
    ) -> Result<(), String> {
        on_chunk(text_piece("partial"));
        Err("socket reset".to_string())
    }
}

#[test]
fn normalized_transport_error_keeps_the_partial_and_ends_in_error() {
    let model = fixture_model(ResetTransport);
    let (_, result) = consume(model.stream(&context(vec![user("go")]), StreamOptions::default()));
    assert_eq!(
        result.stop_reason,
        StopReason::Error,
        "transport 失败应以 error 结束"
    );
    assert!(
        matches!(result.content.first(), Some(AssistantContent::Text(_))),
        "失败前收到的文本应保留在 content[0]，实际 content 是 {:?}",
        result.content
    );
    assert_eq!(
        first_text(&result),
        "partial",
        "失败前的 partial 文本应保留"
    );
}

#[test]
fn normalized_transport_length_keeps_the_raw_arguments() {
    let raw_arguments = r#"{"path":"a"#;
    let model = fixture_model(fixed_transport(vec![
        tool_piece(0, Some("call-1"), Some("read"), raw_arguments),
        ProviderChunk::Finish {
            reason: FinishReason::Length,
            usage: None,
        },
    ]));
    let (_, result) = consume(model.stream(&context(vec![user("go")]), StreamOptions::default()));
    let call = result.content.iter().find_map(|block| match block {
        AssistantContent::ToolCall(call) => Some(call),
        AssistantContent::Text(_) => None,
    });
    assert_eq!(
        result.stop_reason,
        StopReason::Length,
        "length 应映射为 length"
    );
    assert_eq!(
        call.map(|call| &call.arguments),
        Some(&json!(raw_arguments)),
        "length 下 arguments 保留原文字符串，不解析"
    );
    assert_eq!(
        call.and_then(|call| call.raw_arguments.as_deref()),
        Some(raw_arguments),
        "length 下 rawArguments 保留原文"
    );
}

/// Looks up a header by name, ignoring case, as HTTP does.
fn header<'a>(request: &'a FetchRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

#[test]
fn fetch_transport_sends_the_whole_request_and_keeps_the_key_out_of_the_body() {
    let signal = Arc::new(AtomicBool::new(false));
    let captured: Arc<Mutex<Option<FetchRequest>>> = Arc::default();
    let recorder = Arc::clone(&captured);
    let transport =
        OpenAiCompatibleTransport::new("https://provider.invalid/v1/", "offline-test-key")
            .expect("合法的 base URL")
            .with_fetch(Arc::new(move |request| {
                *recorder.lock().unwrap() = Some(request);
                Ok(sse_response(&[
                    json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }),
                    json!("[DONE]"),
                ]))
            }));
    let model = fixture_model(transport);

    let request = AgentContext {
        tools: Some(vec![read_tool()]),
        ..context(vec![user("read a.txt")])
    };
    let options = StreamOptions {
        signal: Some(Arc::clone(&signal)),
    };
    let (_, result) = consume(model.stream(&request, options));

    assert_eq!(
        result.stop_reason,
        StopReason::Stop,
        "finish_reason stop 应以 stop 结束"
    );
    let captured = captured
        .lock()
        .unwrap()
        .take()
        .expect("transport 应调用注入的 fetch");
    assert_eq!(
        captured.url, "https://provider.invalid/v1/chat/completions",
        "URL 是去掉末尾斜杠的 base URL 加 /chat/completions"
    );
    assert_eq!(captured.method, "POST", "请求方法应是 POST");
    assert!(
        captured
            .signal
            .as_ref()
            .is_some_and(|seen| Arc::ptr_eq(seen, &signal)),
        "fetch 应拿到调用者的同一个 signal"
    );
    assert_eq!(
        header(&captured, "authorization"),
        Some("Bearer offline-test-key"),
        "API key 只放在 Authorization header 里"
    );
    assert_eq!(
        header(&captured, "accept"),
        Some("text/event-stream"),
        "Accept header 不对"
    );
    assert_eq!(
        header(&captured, "content-type"),
        Some("application/json"),
        "Content-Type header 不对"
    );
    let body: Value = serde_json::from_str(&captured.body).expect("请求体应是 JSON");
    assert_eq!(
        body,
        json!({
            "model": "fixture-1",
            "messages": [{ "role": "user", "content": "read a.txt" }],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "read",
                        "description": "Read one file",
                        "parameters": {
                            "type": "object",
                            "properties": { "path": { "type": "string" } },
                            "required": ["path"],
                        },
                    },
                },
            ],
            "stream": true,
            "stream_options": { "include_usage": true },
        }),
        "请求体不对"
    );
    assert!(body.get("apiKey").is_none(), "请求体里不能有 apiKey 字段");
    assert!(
        !captured.body.contains("offline-test-key"),
        "API key 不能出现在请求体里"
    );
}

#[test]
fn sse_transport_rebuilds_interleaved_tool_arguments_by_index_and_merges_trailing_usage() {
    let piece = |tool_calls: Value| json!({ "choices": [{ "index": 0, "delta": { "tool_calls": tool_calls }, "finish_reason": null }] });
    let transport = sse_transport(
        "offline-test-key",
        vec![
            piece(json!([
                {
                    "index": 0,
                    "id": "call-read",
                    "type": "function",
                    "function": { "name": "read", "arguments": r#"{"path":"# },
                },
                {
                    "index": 1,
                    "id": "call-search",
                    "type": "function",
                    "function": { "name": "search", "arguments": r#"{"query":"# },
                },
            ])),
            piece(json!([{ "index": 1, "function": { "arguments": r#""pi"}"# } }])),
            piece(json!([{ "index": 0, "function": { "arguments": r#""README.md"}"# } }])),
            json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }),
            json!({
                "choices": [],
                "usage": { "prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20 },
            }),
            json!("[DONE]"),
        ],
    );
    let model = fixture_model(transport);

    let (events, result) =
        consume(model.stream(&context(vec![user("use tools")]), StreamOptions::default()));

    assert_eq!(
        result.stop_reason,
        StopReason::ToolUse,
        "tool_calls 应映射为 toolUse"
    );
    assert_eq!(
        result.usage,
        Usage {
            input: 12,
            output: 8,
            total_tokens: 20,
        },
        "finish 之后那条空 choices 的 usage 应合并进最终消息"
    );
    let calls: Vec<(&str, &str, &Value, Option<&str>)> = result
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some((
                call.id.as_str(),
                call.name.as_str(),
                &call.arguments,
                call.raw_arguments.as_deref(),
            )),
            AssistantContent::Text(_) => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call-read",
                "read",
                &json!({ "path": "README.md" }),
                Some(r#"{"path":"README.md"}"#)
            ),
            (
                "call-search",
                "search",
                &json!({ "query": "pi" }),
                Some(r#"{"query":"pi"}"#)
            ),
        ],
        "交错到达的参数应按 index 拼回各自的调用"
    );
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        [r#"{"path":"#, r#"{"query":"#, r#""pi"}"#, r#""README.md"}"#],
        "toolcall_delta 按到达顺序发出"
    );
}

#[test]
fn sse_without_finish_reason_keeps_the_partial_and_ends_in_error() {
    let transport = sse_transport(
        "offline-test-key",
        vec![
            json!({ "choices": [{ "index": 0, "delta": { "content": "partial" }, "finish_reason": null }] }),
            json!("[DONE]"),
        ],
    );
    let model = fixture_model(transport);

    let (events, result) =
        consume(model.stream(&context(vec![user("go")]), StreamOptions::default()));

    assert_eq!(
        events.last().map(kind),
        Some("error"),
        "没有 finish 的流应以 error 事件结束"
    );
    assert_eq!(
        result.stop_reason,
        StopReason::Error,
        "没有 finish 的流应以 error 结束"
    );
    let error_message = result.error_message.as_deref().unwrap_or("");
    assert!(
        error_message.contains("without a finish chunk"),
        "errorMessage 应说明流结束时没有 finish chunk，实际是 {error_message:?}"
    );
    assert_eq!(first_text(&result), "partial", "已经收到的文本应保留");
}

/// A body that sends one event, then blocks until the signal is set and
/// fails as an aborted read would.
struct StallingBody {
    first: Option<Vec<u8>>,
    signal: Arc<AtomicBool>,
}

impl Read for StallingBody {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if let Some(first) = self.first.take() {
            buffer[..first.len()].copy_from_slice(&first);
            return Ok(first.len());
        }
        while !self.signal.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(1));
        }
        Err(io::Error::other("Request was aborted"))
    }
}

#[test]
fn sse_transport_turns_cancellation_mid_stream_into_aborted_with_the_partial() {
    let signal = Arc::new(AtomicBool::new(false));
    let seen_signal: Arc<Mutex<Option<Arc<AtomicBool>>>> = Arc::default();
    let recorder = Arc::clone(&seen_signal);
    let transport = OpenAiCompatibleTransport::new(
        "https://provider.invalid/v1",
        "offline-test-key",
    )
    .expect("合法的 base URL")
    .with_fetch(Arc::new(move |request: FetchRequest| {
        *recorder.lock().unwrap() = request.signal.clone();
        let event = json!({
            "choices": [{ "index": 0, "delta": { "content": "partial" }, "finish_reason": null }],
        });
        Ok(FetchResponse {
            status: 200,
            body: Box::new(StallingBody {
                first: Some(format!("data: {event}\n\n").into_bytes()),
                signal: request.signal.expect("fetch 应拿到 signal"),
            }),
        })
    }));
    let model = fixture_model(transport);
    let options = StreamOptions {
        signal: Some(Arc::clone(&signal)),
    };
    let canceller = Arc::clone(&signal);

    let (events, result) = consume_with(
        model.stream(&context(vec![user("go")]), options),
        move |event| {
            if kind(event) == "text_delta" {
                canceller.store(true, Ordering::SeqCst);
            }
        },
    );

    assert!(
        seen_signal
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|seen| Arc::ptr_eq(seen, &signal)),
        "fetch 应拿到调用者的同一个 signal"
    );
    match events.last() {
        Some(ModelEvent::Error { reason, .. }) => {
            assert_eq!(*reason, ErrorReason::Aborted, "流中取消应以 aborted 结束")
        }
        other => panic!("最后一个事件应是 error，实际是 {other:?}"),
    }
    assert_eq!(
        result.stop_reason,
        StopReason::Aborted,
        "流中取消应以 aborted 结束"
    );
    assert_eq!(first_text(&result), "partial", "取消前收到的文本应保留");
}

#[test]
fn sse_transport_refuses_an_invalid_external_chunk() {
    let transport = sse_transport(
        "offline-test-key",
        vec![json!({ "choices": "not-an-array" }), json!("[DONE]")],
    );
    let model = fixture_model(transport);

    let (events, result) =
        consume(model.stream(&context(vec![user("go")]), StreamOptions::default()));

    assert_eq!(
        events.last().map(kind),
        Some("error"),
        "形状无效的 chunk 应以 error 事件结束"
    );
    assert_eq!(
        result.stop_reason,
        StopReason::Error,
        "形状无效的 chunk 应以 error 结束"
    );
    let error_message = result.error_message.as_deref().unwrap_or("");
    assert!(
        error_message.contains("Invalid provider chunk"),
        "errorMessage 应以 Invalid provider chunk 说明，实际是 {error_message:?}"
    );
}

#[test]
fn sse_transport_refuses_an_unknown_finish_reason_without_leaking_the_key() {
    let api_key = "never-print-this-secret";
    let transport = sse_transport(
        api_key,
        vec![
            json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "content_filter" }] }),
            json!("[DONE]"),
        ],
    );
    let model = fixture_model(transport);

    let (_, result) = consume(model.stream(&context(vec![user("go")]), StreamOptions::default()));

    assert_eq!(
        result.stop_reason,
        StopReason::Error,
        "未知 finish reason 应以 error 结束"
    );
    let error_message = result.error_message.as_deref().unwrap_or("");
    assert!(
        error_message.contains("finish_reason"),
        "errorMessage 应指出 finish_reason，实际是 {error_message:?}"
    );
    assert!(
        !error_message.contains(api_key),
        "errorMessage 不能包含 API key"
    );
}

#[test]
fn fetch_transport_redacts_the_key_in_an_underlying_error() {
    let api_key = "never-print-this-secret";
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", api_key)
        .expect("合法的 base URL")
        .with_fetch(Arc::new(move |_| {
            Err(io::Error::other(format!(
                "socket failed while using {api_key}"
            )))
        }));
    let model = fixture_model(transport);

    let (_, result) = consume(model.stream(&context(vec![user("go")]), StreamOptions::default()));

    assert_eq!(
        result.stop_reason,
        StopReason::Error,
        "fetch 失败应以 error 结束"
    );
    let error_message = result.error_message.as_deref().unwrap_or("");
    assert!(
        error_message.contains("[redacted]"),
        "底层错误里的 API key 应换成 [redacted]，实际是 {error_message:?}"
    );
    assert!(
        !error_message.contains(api_key),
        "errorMessage 不能包含 API key"
    );
}
