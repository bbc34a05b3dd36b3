//! Chapter 05's rules beyond the focused test, offline: SSE framing from raw
//! bytes (line ends, comments, other fields, multi-line data, UTF-8 split
//! across reads, every split point), the exact bytes of the request, non-2xx
//! answers, the key redacted everywhere, the quirks of real servers, and the
//! chunk checks' error texts.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use course::assistant_stream::AssistantMessageEventStream;
use course::provider_adapter::{
    FetchRequest, FetchResponse, FinishReason, MAX_EVENT_BYTES, OpenAiCompatibleModel,
    OpenAiCompatibleTransport, ProviderChunk, ProviderUsage, fixed_transport, to_provider_messages,
    to_provider_tools,
};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, Model, ModelEvent, Sections,
    StopReason, StreamOptions, SystemMessage, ToolCall, ToolDefinition, ToolResultMessage, Usage,
    UserMessage, assistant_message, text, user_message,
};
use serde_json::json;

const KEY: &str = "sk-never-print-this";

/// The chapter's main line, as a provider streams it: a role-only first
/// delta with text, `call-1` `read` in two argument pieces, the finish, then
/// the usage in a chunk of its own. Extra fields as real servers send them.
const MAIN_LINE: &str = concat!(
    r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"先读"},"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call-1","type":"function","function":{"name":"read","arguments":"{\"path\":"}}]},"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"README.md\"}"}}]},"finish_reason":null}]}"#,
    "\n\n",
    r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    "\n\n",
    r#"data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

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

/// An answer whose body arrives in `pieces` (an empty one is left out: a
/// read of 0 bytes means the end).
fn answer(status: u16, pieces: Vec<Vec<u8>>) -> FetchResponse {
    let pieces = pieces.into_iter().filter(|piece| !piece.is_empty());
    FetchResponse {
        status,
        body: Box::new(Pieces(pieces.collect())),
    }
}

fn one_byte_per_read(body: &str) -> Vec<Vec<u8>> {
    body.bytes().map(|byte| vec![byte]).collect()
}

/// A transport whose fetch answers with `status` and `pieces`, recording
/// each request.
fn transport_with(
    status: u16,
    pieces: Vec<Vec<u8>>,
) -> (OpenAiCompatibleTransport, Arc<Mutex<Vec<FetchRequest>>>) {
    let requests: Arc<Mutex<Vec<FetchRequest>>> = Arc::default();
    let recorder = Arc::clone(&requests);
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", KEY)
        .unwrap()
        .with_fetch(Arc::new(move |request| {
            recorder.lock().unwrap().push(request);
            Ok(answer(status, pieces.clone()))
        }));
    (transport, requests)
}

fn model(transport: OpenAiCompatibleTransport) -> OpenAiCompatibleModel {
    OpenAiCompatibleModel::new("fixture", "fixture-1", transport)
}

fn ask(prompt: &str) -> AgentContext {
    AgentContext {
        messages: vec![AgentMessage::User(user_message(prompt))],
        ..AgentContext::default()
    }
}

/// The events of `stream`, then its result, within a second.
fn play(stream: AssistantMessageEventStream) -> (Vec<ModelEvent>, AssistantMessage) {
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let events: Vec<ModelEvent> = stream.iter().collect();
        let _ = report.send((events, stream.blocking_result()));
    });
    let (events, result) = reported
        .recv_timeout(Duration::from_secs(1))
        .expect("the stream ends within a second");
    (events, result.expect("the stream has a result"))
}

/// One call with `body` arriving in `pieces`: the deltas and the result
/// (timestamp zeroed).
fn run(pieces: Vec<Vec<u8>>) -> (Vec<(String, usize, String)>, AssistantMessage) {
    let (transport, _) = transport_with(200, pieces);
    let (events, result) =
        play(model(transport).stream(&ask("读取 README.md"), StreamOptions::default()));
    let deltas = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta {
                content_index,
                delta,
                ..
            } => Some(("text".to_string(), *content_index, delta.clone())),
            ModelEvent::ToolCallDelta {
                content_index,
                delta,
                ..
            } => Some(("tool".to_string(), *content_index, delta.clone())),
            _ => None,
        })
        .collect();
    (
        deltas,
        AssistantMessage {
            timestamp: 0,
            ..result
        },
    )
}

fn main_line_result() -> AssistantMessage {
    AssistantMessage {
        content: vec![
            text("先读").into(),
            ToolCall {
                id: "call-1".to_string(),
                name: "read".to_string(),
                arguments: json!({ "path": "README.md" }),
                raw_arguments: Some(r#"{"path":"README.md"}"#.to_string()),
            }
            .into(),
        ],
        provider: "fixture".to_string(),
        model: "fixture-1".to_string(),
        usage: Usage {
            input: 9,
            output: 4,
            total_tokens: 13,
        },
        stop_reason: StopReason::ToolUse,
        timestamp: 0,
        error_message: None,
    }
}

fn error_of(body: &str) -> String {
    let (_, result) = run(vec![body.as_bytes().to_vec()]);
    assert_eq!(result.stop_reason, StopReason::Error, "{result:?}");
    result.error_message.unwrap()
}

#[test]
fn the_main_line_in_one_read_gives_the_chapter_message() {
    let (deltas, result) = run(vec![MAIN_LINE.as_bytes().to_vec()]);
    assert_eq!(result, main_line_result());
    assert_eq!(
        deltas,
        [
            ("text".to_string(), 0, "先读".to_string()),
            ("tool".to_string(), 1, r#"{"path":"#.to_string()),
            ("tool".to_string(), 1, r#""README.md"}"#.to_string()),
        ]
    );
}

#[test]
fn every_split_point_of_the_main_line_gives_the_same_events_and_message() {
    let whole = run(vec![MAIN_LINE.as_bytes().to_vec()]);
    let bytes = MAIN_LINE.as_bytes();
    for split in 0..=bytes.len() {
        let pieces = vec![bytes[..split].to_vec(), bytes[split..].to_vec()];
        assert_eq!(run(pieces), whole, "split at byte {split}");
    }
    assert_eq!(
        run(one_byte_per_read(MAIN_LINE)),
        whole,
        "one byte per read"
    );
}

#[test]
fn lf_crlf_and_cr_all_end_lines() {
    let whole = run(vec![MAIN_LINE.as_bytes().to_vec()]);
    let crlf = MAIN_LINE.replace('\n', "\r\n");
    let cr = MAIN_LINE.replace('\n', "\r");
    assert_eq!(run(vec![crlf.as_bytes().to_vec()]), whole, "CRLF");
    assert_eq!(
        run(one_byte_per_read(&crlf)),
        whole,
        "CRLF, one byte per read"
    );
    assert_eq!(run(vec![cr.as_bytes().to_vec()]), whole, "CR");
    assert_eq!(run(one_byte_per_read(&cr)), whole, "CR, one byte per read");
}

#[test]
fn comments_and_other_fields_are_ignored() {
    let whole = run(vec![MAIN_LINE.as_bytes().to_vec()]);
    let noisy = format!(
        ": keep-alive\n\n{}",
        MAIN_LINE.replace(
            "data: ",
            ": keep-alive\r\nevent: message\r\nid: 7\r\nretry: 100\r\ndata: "
        )
    );
    assert_eq!(run(vec![noisy.as_bytes().to_vec()]), whole);
    assert_eq!(run(one_byte_per_read(&noisy)), whole);
}

#[test]
fn the_data_lines_of_one_event_join_with_a_newline() {
    let split_at_a_token = concat!(
        "data: {\"choices\":[{\"index\":0,\n",
        "data:\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n",
    );
    let (_, result) = run(vec![split_at_a_token.as_bytes().to_vec()]);
    assert_eq!(result.stop_reason, StopReason::Stop);
    assert_eq!(result.content, [AssistantContent::from(text("a"))]);

    // Joined with nothing, these two lines would read as 12.
    let split_in_a_number = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1\ndata: 2}}\n\n";
    assert_eq!(
        error_of(split_in_a_number),
        "Invalid provider chunk: data line is not valid JSON"
    );
}

#[test]
fn a_utf8_character_split_across_reads_is_not_mangled() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"读取\"},\"finish_reason\":\"stop\"}]}\n\n";
    let bytes = body.as_bytes();
    let inside = body.find("读").unwrap() + 1;
    for split in [inside, inside + 1, inside + 3] {
        let (_, result) = run(vec![bytes[..split].to_vec(), bytes[split..].to_vec()]);
        assert_eq!(
            result.content,
            [AssistantContent::from(text("读取"))],
            "split at {split}"
        );
    }
    let (_, result) = run(one_byte_per_read(body));
    assert_eq!(result.content, [AssistantContent::from(text("读取"))]);
}

#[test]
fn done_closes_the_stream_and_the_end_of_input_closes_it_too() {
    let after_done = format!("{MAIN_LINE}data: not json at all\n\n");
    assert_eq!(run(vec![after_done.into_bytes()]).1, main_line_result());

    let without_done = MAIN_LINE.replace("data: [DONE]\n\n", "");
    assert_eq!(run(vec![without_done.into_bytes()]).1, main_line_result());

    // An event cut off by the end of the body still counts.
    let cut_off = MAIN_LINE
        .replace("data: [DONE]\n\n", "")
        .trim_end()
        .to_string();
    assert_eq!(run(vec![cut_off.into_bytes()]).1, main_line_result());
}

#[test]
fn real_server_quirks_are_not_errors() {
    let body = concat!(
        r#"data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"list","arguments":""}}]},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]}"#,
        "\n\n",
        r#"data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "\n\n",
        "data: [DONE]\n\n",
    );
    let (deltas, result) = run(vec![body.as_bytes().to_vec()]);
    assert_eq!(result.stop_reason, StopReason::ToolUse);
    assert_eq!(
        result.usage,
        Usage::default(),
        "no usage chunk: usage stays zero"
    );
    assert_eq!(
        result.content,
        [AssistantContent::from(ToolCall {
            id: "call_9".to_string(),
            name: "list".to_string(),
            arguments: json!({}),
            raw_arguments: Some("{}".to_string()),
        })]
    );
    assert_eq!(
        deltas,
        [
            ("tool".to_string(), 0, String::new()),
            ("tool".to_string(), 0, "{}".to_string()),
        ]
    );
}

#[test]
fn usage_without_a_total_adds_input_and_output() {
    let body = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}"#,
        "\n\n",
        r#"data: {"choices":[],"usage":{"completion_tokens":2}}"#,
        "\n\n",
    );
    let (_, result) = run(vec![body.as_bytes().to_vec()]);
    assert_eq!(
        result.usage,
        Usage {
            input: 3,
            output: 2,
            total_tokens: 5,
        }
    );
}

#[test]
fn the_request_has_the_originals_bytes() {
    let (transport, requests) = transport_with(200, vec![MAIN_LINE.as_bytes().to_vec()]);
    let context = AgentContext {
        tools: Some(vec![ToolDefinition {
            name: "read".to_string(),
            description: "Read one file".to_string(),
            parameters: json!({
                "type": "object",
                "properties": { "path": { "type": "string" } },
                "required": ["path"],
            }),
        }]),
        ..ask("读取 README.md")
    };
    play(model(transport).stream(&context, StreamOptions::default()));
    let request = requests.lock().unwrap().remove(0);
    assert_eq!(request.url, "https://provider.invalid/v1/chat/completions");
    assert_eq!(request.method, "POST");
    assert_eq!(
        request.headers,
        [
            ("Accept".to_string(), "text/event-stream".to_string()),
            ("Authorization".to_string(), format!("Bearer {KEY}")),
            ("Content-Type".to_string(), "application/json".to_string()),
        ]
    );
    assert_eq!(
        request.body,
        concat!(
            r#"{"model":"fixture-1","messages":[{"role":"user","content":"读取 README.md"}],"#,
            r#""tools":[{"type":"function","function":{"name":"read","description":"Read one file","#,
            r#""parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}],"#,
            r#""stream":true,"stream_options":{"include_usage":true}}"#,
        )
    );

    let (transport, requests) = transport_with(200, vec![MAIN_LINE.as_bytes().to_vec()]);
    let empty_tools = AgentContext {
        tools: Some(Vec::new()),
        ..ask("hi")
    };
    play(model(transport).stream(&empty_tools, StreamOptions::default()));
    assert_eq!(
        requests.lock().unwrap()[0].body,
        r#"{"model":"fixture-1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}"#,
        "no tools: no tools key"
    );
}

#[test]
fn outbound_messages_have_the_originals_bytes() {
    let context = AgentContext {
        messages: vec![
            AgentMessage::System(SystemMessage {
                content: "回答要简洁。".to_string(),
                sections: Some(Sections::from([("rules", Some("R"))])),
                timestamp: 0,
            }),
            AgentMessage::User(UserMessage {
                content: vec![text("读取 README.md")],
                timestamp: 1,
            }),
            AgentMessage::Assistant(assistant_message(
                vec![
                    ToolCall {
                        id: "call-1".to_string(),
                        name: "read".to_string(),
                        arguments: json!({ "path": "README.md" }),
                        raw_arguments: Some(r#"{"path": "README.md"}"#.to_string()),
                    }
                    .into(),
                ],
                StopReason::ToolUse,
            )),
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: "call-1".to_string(),
                tool_name: "read".to_string(),
                content: vec![text("# Project")],
                details: Some(json!({ "bytes": 9 })),
                is_error: false,
                timestamp: 2,
            }),
        ],
        tools: None,
    };
    assert_eq!(
        serde_json::to_string(&to_provider_messages(&context)).unwrap(),
        concat!(
            r#"[{"role":"system","content":"回答要简洁。\n\nR"},"#,
            r#"{"role":"user","content":"读取 README.md"},"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call-1","type":"function","function":{"name":"read","arguments":"{\"path\": \"README.md\"}"}}]},"#,
            r##"{"role":"tool","tool_call_id":"call-1","name":"read","content":"# Project"}]"##,
        )
    );
    assert_eq!(to_provider_tools(None), None);
    assert_eq!(to_provider_tools(Some(&[])), None);
    let empty_prompt = AgentContext {
        messages: vec![AgentMessage::System(SystemMessage {
            content: String::new(),
            sections: None,
            timestamp: 0,
        })],
        tools: None,
    };
    assert_eq!(to_provider_messages(&empty_prompt), []);
}

#[test]
fn an_assistant_message_without_text_or_calls_goes_out_with_empty_text() {
    // A failed call leaves such a message in the transcript. The original
    // sends `"content":null`, which OpenAI refuses without tool calls
    // ("expected a string, got null"): every later request would fail.
    let failed = assistant_message(Vec::new(), StopReason::Error);
    let context = AgentContext {
        messages: vec![
            AgentMessage::User(user_message("hi")),
            AgentMessage::Assistant(failed),
            AgentMessage::User(user_message("again")),
        ],
        tools: None,
    };
    assert_eq!(
        serde_json::to_string(&to_provider_messages(&context)).unwrap(),
        concat!(
            r#"[{"role":"user","content":"hi"},"#,
            r#"{"role":"assistant","content":""},"#,
            r#"{"role":"user","content":"again"}]"#,
        )
    );
}

#[test]
fn a_non_2xx_answer_names_the_status_and_the_providers_message_with_the_key_redacted() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. You can find your API key elsewhere.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let (transport, _) = transport_with(401, one_byte_per_read(&body));
    let (events, result) = play(model(transport).stream(&ask("hi"), StreamOptions::default()));
    assert_eq!(events.len(), 2, "start, then error");
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some(
            "OpenAI-compatible request failed with HTTP 401: Incorrect API key provided: [redacted]. You can find your API key elsewhere."
        )
    );
    let whole = serde_json::to_string(&events).unwrap();
    assert!(!whole.contains(KEY), "the key is nowhere in the events");

    let (transport, _) = transport_with(503, vec![b"upstream down".to_vec()]);
    let (_, result) = play(model(transport).stream(&ask("hi"), StreamOptions::default()));
    assert_eq!(
        result.error_message.as_deref(),
        Some("OpenAI-compatible request failed with HTTP 503")
    );
}

#[test]
fn the_key_is_redacted_in_an_error_payload_inside_the_stream() {
    let body = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"a\"}}}}]}}\n\ndata: {{\"error\":{{\"message\":\"key {KEY} revoked\"}}}}\n\n"
    );
    let message = error_of(&body);
    assert_eq!(
        message,
        "Invalid provider chunk: provider returned an error payload: key [redacted] revoked"
    );
    let (_, result) = run(vec![body.into_bytes()]);
    assert_eq!(
        result.content,
        [AssistantContent::from(text("a"))],
        "the partial stays"
    );
}

#[test]
fn invalid_chunks_name_the_path() {
    let cases = [
        (r#"[1]"#, "payload must be an object"),
        (r#"{"id":"x"}"#, "missing field `choices`"),
        (
            r#"{"choices":[{"delta":{}},{"delta":{}}]}"#,
            "only one streamed choice is supported",
        ),
        (
            r#"{"choices":[1]}"#,
            "choices[0]: invalid type: integer `1`, expected struct OpenAiChoice",
        ),
        (
            r#"{"choices":[{"index":0}]}"#,
            "choices[0]: missing field `delta`",
        ),
        (
            r#"{"choices":[{"delta":{"content":42}}]}"#,
            "choices[0].delta.content: invalid type: integer `42`, expected a string",
        ),
        (
            r#"{"choices":[{"delta":{"tool_calls":{}}}]}"#,
            "choices[0].delta.tool_calls: invalid type: map, expected a sequence",
        ),
        (
            r#"{"choices":[{"delta":{"tool_calls":[{"index":-1,"id":"a"}]}}]}"#,
            "choices[0].delta.tool_calls[0].index: invalid value: integer `-1`, expected u64",
        ),
        (
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a"},{"index":1,"type":"custom","id":"b"}]}}]}"#,
            "choices[0].delta.tool_calls[1].type: unknown variant `custom`, expected `function`",
        ),
        (
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":7}}]}}]}"#,
            "choices[0].delta.tool_calls[0].function.name: invalid type: integer `7`, expected a string",
        ),
        (
            r#"{"choices":[],"usage":{"prompt_tokens":1.5}}"#,
            "usage.prompt_tokens: must be a non-negative integer",
        ),
        (
            r#"{"choices":[],"usage":{"completion_tokens":-1}}"#,
            "usage.completion_tokens: must be a non-negative integer",
        ),
        (
            r#"{"choices":[{"delta":{},"finish_reason":"content_filter"}]}"#,
            "choices[0].finish_reason: unknown variant `content_filter`, expected one of `stop`, `length`, `tool_calls`",
        ),
    ];
    for (payload, detail) in cases {
        assert_eq!(
            error_of(&format!("data: {payload}\n\n")),
            format!("Invalid provider chunk: {detail}"),
            "{payload}"
        );
    }
}

#[test]
fn nothing_after_the_finish_and_no_change_of_finish() {
    let late_text = concat!(
        r#"data: {"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        "\n\n",
        r#"data: {"choices":[{"delta":{"content":"late"}}]}"#,
        "\n\n",
    );
    assert_eq!(
        error_of(late_text),
        "Invalid provider chunk: content arrived after finish_reason"
    );
    let changed = concat!(
        r#"data: {"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        "\n\n",
        r#"data: {"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        "\n\n",
    );
    assert_eq!(
        error_of(changed),
        "Invalid provider chunk: finish_reason changed during the stream"
    );
}

#[test]
fn tool_calls_with_cut_off_arguments_is_an_error_that_keeps_the_partial() {
    let model = OpenAiCompatibleModel::new(
        "fixture",
        "fixture-1",
        fixed_transport(vec![
            ProviderChunk::Tool {
                index: 3,
                id: None,
                name: Some("read".to_string()),
                arguments_delta: Some(r#"{"path":"#.to_string()),
            },
            ProviderChunk::Finish {
                reason: FinishReason::ToolCalls,
                usage: Some(ProviderUsage::default()),
            },
        ]),
    );
    let (_, result) = play(model.stream(&ask("go"), StreamOptions::default()));
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some("Tool read arguments 不是完整 JSON")
    );
    assert_eq!(
        result.content,
        [AssistantContent::from(ToolCall {
            id: "call-3".to_string(),
            name: "read".to_string(),
            arguments: json!(r#"{"path":"#),
            raw_arguments: Some(r#"{"path":"#.to_string()),
        })],
        "a call without an id is named after its index"
    );
}

#[test]
fn a_signal_set_before_the_call_sends_nothing_and_ends_aborted() {
    let fetched = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&fetched);
    let transport = OpenAiCompatibleTransport::new("http://127.0.0.1:9/v1", KEY)
        .unwrap()
        .with_fetch(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(answer(200, vec![MAIN_LINE.as_bytes().to_vec()]))
        }));
    let options = StreamOptions {
        signal: Some(Arc::new(AtomicBool::new(true))),
    };
    let (events, result) = play(model(transport).stream(&ask("go"), options.clone()));
    assert_eq!(fetched.load(Ordering::SeqCst), 0, "no request is sent");
    assert_eq!(events.len(), 2, "start, then error");
    assert_eq!(result.stop_reason, StopReason::Aborted);
    assert_eq!(result.error_message.as_deref(), Some("Request was aborted"));

    let fixed = OpenAiCompatibleModel::new(
        "fixture",
        "fixture-1",
        fixed_transport(vec![ProviderChunk::Text {
            delta: "never".to_string(),
        }]),
    );
    let (_, result) = play(fixed.stream(&ask("go"), options));
    assert_eq!(result.stop_reason, StopReason::Aborted);
    assert_eq!(result.content, []);
}

#[test]
fn a_base_url_must_be_absolute_and_trailing_slashes_go() {
    for bad in ["", "provider/v1", "/v1"] {
        assert_eq!(
            OpenAiCompatibleTransport::new(bad, KEY).err().as_deref(),
            Some("OpenAI-compatible baseUrl must be an absolute URL"),
            "{bad:?}"
        );
    }
    let recorded: Arc<Mutex<Vec<String>>> = Arc::default();
    let recorder = Arc::clone(&recorded);
    let transport = OpenAiCompatibleTransport::new("http://127.0.0.1:8080/v1///", KEY)
        .unwrap()
        .with_fetch(Arc::new(move |request| {
            recorder.lock().unwrap().push(request.url);
            Err(io::Error::other("offline"))
        }));
    let (_, result) = play(model(transport).stream(&ask("go"), StreamOptions::default()));
    assert_eq!(result.error_message.as_deref(), Some("offline"));
    assert_eq!(
        recorded.lock().unwrap().as_slice(),
        ["http://127.0.0.1:8080/v1/chat/completions"]
    );
}

#[test]
fn a_contexts_tools_are_written_only_when_present() {
    let bare = ask("hi");
    let text = serde_json::to_string(&bare).unwrap();
    assert!(!text.contains("tools"), "{text}");
    assert_eq!(serde_json::from_str::<AgentContext>(&text).unwrap(), bare);

    let with_tools = AgentContext {
        tools: Some(vec![ToolDefinition {
            name: "read".to_string(),
            description: "Read one file".to_string(),
            parameters: json!({ "type": "object", "required": ["path"] }),
        }]),
        ..AgentContext::default()
    };
    let text = serde_json::to_string(&with_tools).unwrap();
    assert_eq!(
        text,
        r#"{"messages":[],"tools":[{"name":"read","description":"Read one file","parameters":{"type":"object","required":["path"]}}]}"#
    );
    assert_eq!(
        serde_json::from_str::<AgentContext>(&text).unwrap(),
        with_tools
    );
}

/// A body that reads `first`, then fails once with `failure`, then reads `rest`.
struct Failing {
    first: Option<Vec<u8>>,
    failure: Option<io::Error>,
    rest: Pieces,
}

impl Read for Failing {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if let Some(first) = self.first.take() {
            buffer[..first.len()].copy_from_slice(&first);
            return Ok(first.len());
        }
        if let Some(failure) = self.failure.take() {
            return Err(failure);
        }
        self.rest.read(buffer)
    }
}

fn run_failing(failure: io::Error) -> AssistantMessage {
    let (first, rest) = MAIN_LINE.split_at(MAIN_LINE.find("\n\n").unwrap() + 2);
    let body = Mutex::new(Some(Failing {
        first: Some(first.as_bytes().to_vec()),
        failure: Some(failure),
        rest: Pieces(VecDeque::from([rest.as_bytes().to_vec()])),
    }));
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", KEY)
        .unwrap()
        .with_fetch(Arc::new(move |_| {
            let body = body.lock().unwrap().take().expect("one request");
            Ok(FetchResponse {
                status: 200,
                body: Box::new(body),
            })
        }));
    let (_, result) =
        play(model(transport).stream(&ask("读取 README.md"), StreamOptions::default()));
    AssistantMessage {
        timestamp: 0,
        ..result
    }
}

#[test]
fn an_interrupted_read_is_tried_again_and_a_failed_one_keeps_the_partial() {
    let interrupted = io::Error::new(io::ErrorKind::Interrupted, "signal");
    assert_eq!(run_failing(interrupted), main_line_result());

    let reset = run_failing(io::Error::new(
        io::ErrorKind::ConnectionReset,
        format!("connection reset while sending {KEY}"),
    ));
    assert_eq!(reset.stop_reason, StopReason::Error);
    assert_eq!(
        reset.error_message.as_deref(),
        Some("connection reset while sending [redacted]")
    );
    assert_eq!(reset.content, [AssistantContent::from(text("先读"))]);
}

#[test]
fn a_long_error_body_still_gives_the_providers_message() {
    let message = "x".repeat(4000);
    let body = format!(r#"{{"error":{{"message":"{message}"}}}}"#);
    let (transport, _) = transport_with(500, vec![body.into_bytes()]);
    let (_, result) = play(model(transport).stream(&ask("hi"), StreamOptions::default()));
    assert_eq!(
        result.error_message,
        Some(format!(
            "OpenAI-compatible request failed with HTTP 500: {message}"
        ))
    );
}

#[test]
fn a_huge_prompt_count_without_a_total_does_not_overflow() {
    let body = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":1}}"#,
        "\n\n",
    );
    let (_, result) = run(vec![body.as_bytes().to_vec()]);
    assert_eq!(result.stop_reason, StopReason::Stop, "{result:?}");
    assert_eq!(
        result.usage,
        Usage {
            input: u64::MAX,
            output: 1,
            total_tokens: u64::MAX,
        },
        "总数饱和在 u64::MAX，不会溢出"
    );
}

#[test]
fn an_error_field_that_is_null_is_no_error() {
    let body = concat!(
        r#"data: {"error":null,"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        "\n\n",
    );
    let (_, result) = run(vec![body.as_bytes().to_vec()]);
    assert_eq!(result.stop_reason, StopReason::Stop, "{result:?}");
    assert_eq!(result.content, [AssistantContent::from(text("a"))]);
}

#[test]
fn a_byte_order_mark_at_the_start_of_the_body_is_dropped() {
    let event = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        "\n\n",
    );
    let body = format!("\u{feff}{event}");
    for pieces in [vec![body.clone().into_bytes()], one_byte_per_read(&body)] {
        let (_, result) = run(pieces);
        assert_eq!(result.stop_reason, StopReason::Stop, "{result:?}");
        assert_eq!(result.content, [AssistantContent::from(text("a"))]);
    }
}

/// A body of `bytes` handed out `step` bytes per read.
struct Trickle {
    bytes: Vec<u8>,
    at: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buffer.len()).min(self.bytes.len() - self.at);
        buffer[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn a_long_line_in_small_reads_is_read_in_linear_time() {
    let long = "x".repeat(1 << 20);
    let body = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{long}\"}},\"finish_reason\":\"stop\"}}]}}\n\n"
    );
    let body = Mutex::new(Some(body.into_bytes()));
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", KEY)
        .unwrap()
        .with_fetch(Arc::new(move |_| {
            let bytes = body.lock().unwrap().take().expect("one request");
            Ok(FetchResponse {
                status: 200,
                body: Box::new(Trickle {
                    bytes,
                    at: 0,
                    step: 16,
                }),
            })
        }));
    let stream = model(transport).stream(&ask("hi"), StreamOptions::default());
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let _ = report.send(stream.blocking_result());
    });
    let result = reported
        .recv_timeout(Duration::from_secs(10))
        .expect("1 MiB 的一行按 16 字节读入，10 秒内读完（行尾只扫描一次）")
        .unwrap();
    assert_eq!(result.stop_reason, StopReason::Stop);
    assert_eq!(result.content, [AssistantContent::from(text(long))]);
}

#[test]
fn model_content_is_never_altered_even_when_it_holds_the_key() {
    let body = format!(
        concat!(
            r#"data: {{"choices":[{{"index":0,"delta":{{"content":"your key is {key}"}}}}]}}"#,
            "\n\n",
            r#"data: {{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"id-{key}","function":{{"name":"n{key}","arguments":"{{\"k\":\"{key}\"}}"}}}}]}}}}]}}"#,
            "\n\n",
            r#"data: {{"choices":[{{"index":0,"delta":{{}},"finish_reason":"tool_calls"}}]}}"#,
            "\n\n",
        ),
        key = KEY
    );
    let (transport, _) = transport_with(200, vec![body.into_bytes()]);
    let (_, result) = play(model(transport).stream(&ask("hi"), StreamOptions::default()));
    assert_eq!(result.stop_reason, StopReason::ToolUse, "{result:?}");
    assert_eq!(
        result.content,
        [
            AssistantContent::from(text(format!("your key is {KEY}"))),
            ToolCall {
                id: format!("id-{KEY}"),
                name: format!("n{KEY}"),
                arguments: json!({ "k": KEY }),
                raw_arguments: Some(format!(r#"{{"k":"{KEY}"}}"#)),
            }
            .into(),
        ],
        "the model's text and arguments are the model's: only error texts are redacted"
    );
}

/// The error text of a call whose fetch fails with `message`, under `key`.
fn fetch_error(key: &str, message: &str) -> String {
    let message = message.to_string();
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", key)
        .unwrap()
        .with_fetch(Arc::new(move |_| Err(io::Error::other(message.clone()))));
    let (_, result) = play(model(transport).stream(&ask("hi"), StreamOptions::default()));
    result.error_message.unwrap()
}

#[test]
fn the_key_is_redacted_raw_json_escaped_and_percent_encoded_in_any_mix() {
    let key = "sk-AbC/123";
    let cases = [
        ("raw sk-AbC/123.", "raw [redacted]."),
        (r"json sk-AbC\/123", "json [redacted]"),
        (r"unicode \u0073\u006b-AbC\u002f123", "unicode [redacted]"),
        (r"mixed s\u006B-A%62C\/123", "mixed [redacted]"),
        ("url ?key=sk-AbC%2F123&x", "url ?key=[redacted]&x"),
        ("lower %73%6b-AbC%2f123", "lower [redacted]"),
        ("twice sk-AbC/123 sk-AbC/123", "twice [redacted] [redacted]"),
        ("a prefix only sk-AbC/12", "a prefix only sk-AbC/12"),
        ("case matters SK-ABC/123", "case matters SK-ABC/123"),
    ];
    for (message, expected) in cases {
        assert_eq!(fetch_error(key, message), expected, "{message}");
    }
}

#[test]
fn a_placeholder_key_is_no_secret_and_nothing_is_redacted() {
    // Local servers accept any key; people set `none`, `ollama`, `mock`.
    for key in ["x", "none", "mock", "ollama", "1234567"] {
        let message = format!("the mock server says: key {key} accepted, then failed");
        assert_eq!(fetch_error(key, &message), message, "key {key:?}");
    }
    assert_eq!(
        fetch_error("12345678", "key 12345678"),
        "key [redacted]",
        "8 characters are a secret"
    );
    let body = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"content":"This is a mock response"},"finish_reason":"stop"}]}"#,
        "\n\n",
    );
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", "mock")
        .unwrap()
        .with_fetch(Arc::new(move |_| {
            Ok(answer(200, vec![body.as_bytes().to_vec()]))
        }));
    let (_, result) = play(model(transport).stream(&ask("hi"), StreamOptions::default()));
    assert_eq!(
        result.content,
        [AssistantContent::from(text("This is a mock response"))]
    );
}

#[test]
fn a_key_written_as_in_json_is_redacted_in_error_texts() {
    let key = r#"sk-"quoted\key"#;
    // The provider's message quotes the request's JSON, so the key arrives
    // escaped even after the message itself is decoded.
    let body = r#"{"error":{"message":"bad body {\"key\":\"sk-\\\"quoted\\\\key\"}"}}"#;
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", key)
        .unwrap()
        .with_fetch(Arc::new(move |_| {
            Ok(answer(400, vec![body.as_bytes().to_vec()]))
        }));
    let (_, result) = play(model(transport).stream(&ask("hi"), StreamOptions::default()));
    assert_eq!(
        result.error_message.as_deref(),
        Some(r#"OpenAI-compatible request failed with HTTP 400: bad body {"key":"[redacted]"}"#)
    );
}

#[test]
fn azures_opening_chunk_with_empty_choices_and_no_usage_is_skipped() {
    let body = concat!(
        r#"data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}"#,
        "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null,"content_filter_results":{}}]}"#,
        "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "\n\n",
        "data: [DONE]\n\n",
    );
    let (_, result) = run(vec![body.as_bytes().to_vec()]);
    assert_eq!(result.stop_reason, StopReason::Stop, "{result:?}");
    assert_eq!(result.content, [AssistantContent::from(text("hi"))]);
    assert_eq!(result.usage, Usage::default());
}

#[test]
fn parallel_calls_all_numbered_zero_are_told_apart_by_their_ids() {
    let piece = |call: &str| {
        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{call}]}}}}]}}\n\n")
    };
    let body = [
        piece(r#"{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}"#),
        piece(r#"{"index":0,"function":{"arguments":"{\"path\":\"a.txt\"}"}}"#),
        piece(r#"{"index":0,"id":"call_b","type":"function","function":{"name":"list","arguments":""}}"#),
        piece(r#"{"index":0,"function":{"arguments":"{}"}}"#),
        piece(r#"{"index":0,"id":"call_b","function":{"arguments":""}}"#),
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
            .to_string(),
    ]
    .concat();
    let (deltas, result) = run(vec![body.into_bytes()]);
    assert_eq!(result.stop_reason, StopReason::ToolUse, "{result:?}");
    assert_eq!(
        result.content,
        [
            AssistantContent::from(ToolCall {
                id: "call_a".to_string(),
                name: "read".to_string(),
                arguments: json!({ "path": "a.txt" }),
                raw_arguments: Some(r#"{"path":"a.txt"}"#.to_string()),
            }),
            AssistantContent::from(ToolCall {
                id: "call_b".to_string(),
                name: "list".to_string(),
                arguments: json!({}),
                raw_arguments: Some("{}".to_string()),
            }),
        ],
        "a new id on index 0 starts a new call; the same id again continues it"
    );
    let slots: Vec<usize> = deltas.iter().map(|(_, slot, _)| *slot).collect();
    assert_eq!(slots, [0, 0, 1, 1, 1]);
}

#[test]
fn usage_counts_written_as_integral_floats_are_counts() {
    let body = concat!(
        r#"data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        "\n\n",
        r#"data: {"choices":[],"usage":{"prompt_tokens":12.0,"completion_tokens":3,"total_tokens":15.0}}"#,
        "\n\n",
    );
    let (_, result) = run(vec![body.as_bytes().to_vec()]);
    assert_eq!(result.stop_reason, StopReason::Stop, "{result:?}");
    assert_eq!(
        result.usage,
        Usage {
            input: 12,
            output: 3,
            total_tokens: 15,
        }
    );
}

#[test]
fn invalid_utf8_in_a_line_becomes_the_replacement_character() {
    let mut body = br#"data: {"choices":[{"index":0,"delta":{"content":"a"#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe]);
    body.extend_from_slice(b"b\"},\"finish_reason\":\"stop\"}]}\n\n");
    let (_, result) = run(vec![body]);
    assert_eq!(result.stop_reason, StopReason::Stop, "{result:?}");
    assert_eq!(
        result.content,
        [AssistantContent::from(text("a\u{fffd}\u{fffd}b"))]
    );
}

/// A body that never ends: `head`, then `filler` for ever.
struct Endless {
    head: Vec<u8>,
    filler: u8,
    read: usize,
}

impl Read for Endless {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        for byte in buffer.iter_mut() {
            *byte = self.head.get(self.read).copied().unwrap_or(self.filler);
            self.read += 1;
        }
        Ok(buffer.len())
    }
}

fn endless_result(head: &[u8], filler: u8) -> AssistantMessage {
    let body = Mutex::new(Some(Endless {
        head: head.to_vec(),
        filler,
        read: 0,
    }));
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", KEY)
        .unwrap()
        .with_fetch(Arc::new(move |_| {
            let body = body.lock().unwrap().take().expect("one request");
            Ok(FetchResponse {
                status: 200,
                body: Box::new(body),
            })
        }));
    let stream = model(transport).stream(&ask("hi"), StreamOptions::default());
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let _ = report.send(stream.blocking_result());
    });
    reported
        .recv_timeout(Duration::from_secs(30))
        .expect("an endless line ends at the cap")
        .unwrap()
}

#[test]
fn a_line_that_never_ends_is_an_error_at_the_cap() {
    assert_eq!(MAX_EVENT_BYTES, 4 * 1024 * 1024, "README states 4 MiB");
    let result = endless_result(b"data: {\"choices\":", b'x');
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some("Provider stream has a line or event over 4 MiB")
    );
}

#[test]
fn an_event_of_endless_data_lines_is_an_error_at_the_cap() {
    // Every line is short; the event never ends: `data: x\n` for ever.
    let line = b"data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
    let mut head = Vec::new();
    for _ in 0..200_000 {
        head.extend_from_slice(line);
    }
    let result = endless_result(&head, b'\n');
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some("Provider stream has a line or event over 4 MiB")
    );
}
