//! Chapter 05's edges step 5.5, handed to the lab: what the twelve focused
//! tests leave open and the guide answers.
//!
//! * A payload without `choices`, or a choice without `delta`, is an error
//!   that starts with `Invalid provider chunk: ` and names the field.
//! * Content after `finish_reason` is such an error too, with that prefix.
//! * An `error` payload is the provider's error: its `message` when it has
//!   one, nothing more when it has none.
//! * An invalid UTF-8 sequence in a line is no error: it becomes U+FFFD.
//! * A `toolcall_end` partial carries no usage yet (zero, like every
//!   partial); only the final message has the provider's usage.
//! * The first call whose arguments do not parse ends the call in `error`;
//!   the `toolcall_end`s already sent stand.
//! * A call the provider gave no id is named `call-<index>` until an id
//!   comes; the first id names it; only an id other than the one it was
//!   given starts a new call on the same index.
//! * Over real HTTP (a server this test starts on 127.0.0.1): an answer that
//!   is not an event stream names its status, both headers and at most its
//!   first 64 bytes; an answer whose end is marked only by the server
//!   closing the connection, stalled, ends at the idle timeout (not as a
//!   finished stream) or, when cancelled, `aborted`.
//!
//! The first five are offline: the fetch is injected and answers with bytes.

use std::io::{BufRead, BufReader, Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use course::provider_adapter::{
    FetchResponse, FinishReason, OpenAiCompatibleModel, OpenAiCompatibleTransport, ProviderChunk,
    fixed_transport,
};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, Model, ModelEvent, StopReason,
    StreamOptions, ToolCall, Usage, text, user_message,
};
use serde_json::json;

/// Every event and the result of one call whose answer is `body`.
fn call(body: &[u8]) -> (Vec<ModelEvent>, AssistantMessage) {
    let body = body.to_vec();
    let transport = OpenAiCompatibleTransport::new("https://provider.invalid/v1", "sk-edge-test")
        .expect("合法的 base URL")
        .with_fetch(Arc::new(move |_| {
            Ok(FetchResponse {
                status: 200,
                body: Box::new(Cursor::new(body.clone())),
            })
        }));
    let model = OpenAiCompatibleModel::new("fixture", "fixture-1", transport);
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message("go"))],
        ..AgentContext::default()
    };
    let stream = model.stream(&context, StreamOptions::default());
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let events: Vec<ModelEvent> = stream.iter().collect();
        let _ = report.send((events, stream.blocking_result()));
    });
    let (events, result) = reported
        .recv_timeout(Duration::from_secs(1))
        .expect("一秒内流没有结束：每次调用都必须以 done 或 error 结束");
    (events, result.expect("流应交出结果"))
}

fn error_of(body: &str) -> String {
    let (_, result) = call(body.as_bytes());
    match result.error_message {
        Some(error) => error,
        None => panic!("应以 error 结束，实际是 {:?}", result.content),
    }
}

#[test]
fn a_payload_without_choices_or_a_choice_without_delta_is_an_invalid_chunk() {
    let no_choices = error_of("data: {\"id\":\"chatcmpl-1\"}\n\n");
    assert!(
        no_choices.starts_with("Invalid provider chunk: ") && no_choices.contains("choices"),
        "没有 choices 的 payload 是错误，并指出 choices，实际是 {no_choices:?}"
    );
    let no_delta = error_of("data: {\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}\n\n");
    assert!(
        no_delta.starts_with("Invalid provider chunk: ") && no_delta.contains("delta"),
        "没有 delta 的 choice 是错误，并指出 delta，实际是 {no_delta:?}"
    );
}

#[test]
fn content_after_finish_reason_is_an_invalid_chunk_with_the_prefix() {
    let late = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"late\"}}]}\n\n",
    );
    assert_eq!(
        error_of(late),
        "Invalid provider chunk: content arrived after finish_reason"
    );
}

#[test]
fn an_error_payload_gives_its_message_or_none() {
    assert_eq!(
        error_of("data: {\"error\":{\"message\":\"rate limited\"}}\n\n"),
        "Invalid provider chunk: provider returned an error payload: rate limited"
    );
    assert_eq!(
        error_of("data: {\"error\":{\"code\":429}}\n\n"),
        "Invalid provider chunk: provider returned an error payload",
        "没有 message 时，错误到 payload 为止，不加冒号"
    );
}

#[test]
fn invalid_utf8_in_a_line_becomes_the_replacement_character() {
    let mut body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a".to_vec();
    body.push(0xff);
    body.extend_from_slice(b"b\"},\"finish_reason\":\"stop\"}]}\n\n");
    let (_, result) = call(&body);
    assert_eq!(
        result.content,
        [AssistantContent::from(text("a\u{fffd}b"))],
        "无效的 UTF-8 字节变成 U+FFFD，不是错误：{:?}",
        result.error_message
    );
}

#[test]
fn a_toolcall_end_partial_has_no_usage_and_the_final_message_has_it() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call-1\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":5,\"total_tokens\":12}}\n\n",
        "data: [DONE]\n\n",
    );
    let (events, result) = call(body.as_bytes());
    let usage = Usage {
        input: 7,
        output: 5,
        total_tokens: 12,
    };
    let ends: Vec<Usage> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallEnd { partial, .. } => Some(partial.usage),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [Usage::default()],
        "toolcall_end 的 partial 和其他 partial 一样，usage 为零"
    );
    assert_eq!(result.usage, usage, "只有最终消息带 Provider 的 usage");
}

/// Every event and the result of one call to a model over `chunks`.
fn play(chunks: Vec<ProviderChunk>) -> (Vec<ModelEvent>, AssistantMessage) {
    let model = OpenAiCompatibleModel::new("fixture", "fixture-1", fixed_transport(chunks));
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message("go"))],
        ..AgentContext::default()
    };
    let stream = model.stream(&context, StreamOptions::default());
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let events: Vec<ModelEvent> = stream.iter().collect();
        let _ = report.send((events, stream.blocking_result()));
    });
    let (events, result) = reported
        .recv_timeout(Duration::from_secs(1))
        .expect("一秒内流没有结束：每次调用都必须以 done 或 error 结束");
    (events, result.expect("流应交出结果"))
}

fn piece(index: u64, id: Option<&str>, name: Option<&str>, delta: &str) -> ProviderChunk {
    ProviderChunk::Tool {
        index,
        id: id.map(str::to_string),
        name: name.map(str::to_string),
        arguments_delta: Some(delta.to_string()),
    }
}

fn tool_calls() -> ProviderChunk {
    ProviderChunk::Finish {
        reason: FinishReason::ToolCalls,
        usage: None,
    }
}

fn tool_call(id: &str, name: &str, arguments: serde_json::Value, raw: &str) -> AssistantContent {
    AssistantContent::from(ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
        raw_arguments: Some(raw.to_string()),
    })
}

#[test]
fn a_later_call_that_does_not_parse_ends_in_error_after_the_earlier_toolcall_end() {
    let (events, result) = play(vec![
        piece(0, Some("call-a"), Some("read"), r#"{"path":"a.txt"}"#),
        piece(1, Some("call-b"), Some("list"), r#"{"path":"#),
        tool_calls(),
    ]);
    let ends: Vec<usize> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [0],
        "第一个调用的 toolcall_end 已经发出（不收回），解析失败的调用没有 toolcall_end"
    );
    assert!(
        matches!(events.last(), Some(ModelEvent::Error { .. })),
        "最后是 error：{events:?}"
    );
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some("Tool list arguments 不是完整 JSON")
    );
    assert_eq!(
        result.content,
        [
            tool_call(
                "call-a",
                "read",
                json!({ "path": "a.txt" }),
                r#"{"path":"a.txt"}"#
            ),
            tool_call("call-b", "list", json!(r#"{"path":"#), r#"{"path":"#),
        ],
        "error 的 partial：前面的调用是解析后的，失败的那个仍是原文"
    );
}

#[test]
fn a_call_without_an_id_takes_the_first_id_and_only_another_id_starts_a_new_call() {
    let (events, result) = play(vec![
        piece(0, None, Some("read"), r#"{"path":"#),
        piece(0, Some("call_a"), None, r#""a.txt"}"#),
        piece(0, None, None, ""),
        piece(0, Some("call_a"), None, ""),
        piece(0, Some("call_b"), Some("list"), "{}"),
        tool_calls(),
    ]);
    let deltas: Vec<(usize, String)> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolCallDelta {
                content_index,
                partial,
                ..
            } => match &partial.content[*content_index] {
                AssistantContent::ToolCall(call) => Some((*content_index, call.id.clone())),
                AssistantContent::Text(_) => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        [
            (0, "call-0".to_string()),
            (0, "call_a".to_string()),
            (0, "call_a".to_string()),
            (0, "call_a".to_string()),
            (1, "call_b".to_string()),
        ],
        "还没有 id 的调用叫 call-<index>；第一个 id 给它命名；没带 id 或同一个 id 是同一个调用；另一个 id 才开始新调用"
    );
    assert_eq!(
        result.content,
        [
            tool_call(
                "call_a",
                "read",
                json!({ "path": "a.txt" }),
                r#"{"path":"a.txt"}"#
            ),
            tool_call("call_b", "list", json!({}), "{}"),
        ]
    );
}

// Over real HTTP: a server this test starts on 127.0.0.1, one connection.

/// The idle timeout of these calls, unless a test says otherwise.
const IDLE: Duration = Duration::from_millis(300);

/// A generous bound: a call that takes longer has hung.
const BOUND: Duration = Duration::from_secs(5);

/// Starts a server for one connection: it reads the request's head and
/// body, then `respond` answers. Returns the base URL and what `respond`
/// returned.
fn serve<T: Send + 'static>(
    respond: impl FnOnce(&mut TcpStream) -> T + Send + 'static,
) -> (String, mpsc::Receiver<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let (mut connection, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(&connection);
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            match line.split_once(':') {
                Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                    length = value.trim().parse().unwrap()
                }
                _ if line.trim_end().is_empty() => break,
                _ => {}
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        let _ = report.send(respond(&mut connection));
    });
    (base_url, reported)
}

/// The result of one call to the server at `base_url`, with `options` and
/// `idle_timeout`.
fn call_over_http(
    base_url: &str,
    options: StreamOptions,
    idle_timeout: Duration,
) -> AssistantMessage {
    let transport = OpenAiCompatibleTransport::new(base_url, "sk-edge-test")
        .expect("合法的 base URL")
        .with_idle_timeout(idle_timeout);
    let model = OpenAiCompatibleModel::new("loopback", "fake-1", transport);
    let context = AgentContext {
        messages: vec![AgentMessage::User(user_message("go"))],
        ..AgentContext::default()
    };
    let stream = model.stream(&context, options);
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let _ = report.send(stream.blocking_result());
    });
    let result = reported
        .recv_timeout(BOUND)
        .expect("五秒内调用没有结束：它挂住了");
    result.expect("流应交出结果")
}

#[test]
fn an_answer_that_is_not_an_event_stream_names_both_headers_and_at_most_64_bytes() {
    let json = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"content":"hi"}}]}"#;
    let (base_url, _server) = serve(move |connection| {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            json.len()
        );
        connection.write_all(head.as_bytes()).unwrap();
        connection.write_all(json.as_bytes()).unwrap();
    });
    let result = call_over_http(&base_url, StreamOptions::default(), IDLE);
    assert_eq!(
        result.error_message.as_deref(),
        Some(
            r#"OpenAI-compatible response is not an event stream: HTTP 200, Content-Type "application/json", Content-Encoding "", first bytes "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index""#
        ),
        "前 64 个字节，不加省略号；没有 Content-Encoding 时写空串"
    );

    let gzip = [0x1f, 0x8b, 0x08, 0x00];
    let (base_url, _server) = serve(move |connection| {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n";
        connection.write_all(head.as_bytes()).unwrap();
        connection.write_all(&gzip).unwrap();
    });
    let result = call_over_http(&base_url, StreamOptions::default(), IDLE);
    assert_eq!(
        result.error_message.as_deref(),
        Some(
            r#"OpenAI-compatible response is not an event stream: HTTP 200, Content-Type "text/event-stream", Content-Encoding "gzip", first bytes "\x1f\x8b\x08\x00""#
        )
    );
}

/// Answers with an event stream whose end only the server's closing would
/// mark (no `Content-Length`, not chunked), sends one event, then stalls
/// until the client closes. Tells `stalled` when the event is sent.
fn stall_after_one_event(connection: &mut TcpStream, stalled: mpsc::Sender<()>) -> &'static str {
    let event = r#"data: {"choices":[{"index":0,"delta":{"content":"partial"}}]}"#;
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{event}\n\n"
    );
    connection.write_all(answer.as_bytes()).unwrap();
    let _ = stalled.send(());
    connection.set_read_timeout(Some(BOUND)).unwrap();
    match connection.read(&mut [0; 64]) {
        Ok(0) | Err(_) => "closed or timed out",
        Ok(_) => "more bytes",
    }
}

#[test]
fn a_stalled_answer_ended_only_by_closing_fails_at_the_idle_timeout_or_ends_aborted() {
    let (stalled, _) = mpsc::channel();
    let (base_url, _server) = serve(move |connection| stall_after_one_event(connection, stalled));
    let result = call_over_http(&base_url, StreamOptions::default(), IDLE);
    assert_eq!(
        result.error_message.as_deref(),
        Some("No byte from the provider for 300ms (idle timeout)"),
        "停住的回答不是读完了的回答：它在空闲超时时失败，不是“ended without a finish chunk”"
    );
    assert_eq!(result.content, [AssistantContent::from(text("partial"))]);

    let (stalled, stalling) = mpsc::channel();
    let (base_url, _server) = serve(move |connection| stall_after_one_event(connection, stalled));
    let signal = Arc::new(AtomicBool::new(false));
    let canceller = Arc::clone(&signal);
    thread::spawn(move || {
        if stalling.recv_timeout(BOUND).is_ok() {
            thread::sleep(Duration::from_millis(100)); // the read is blocked by now
            canceller.store(true, Ordering::SeqCst);
        }
    });
    let options = StreamOptions {
        signal: Some(signal),
    };
    // A long idle timeout: only the watcher can end this call in time.
    let result = call_over_http(&base_url, options, Duration::from_secs(60));
    assert_eq!(
        result.stop_reason,
        StopReason::Aborted,
        "取消一个停住的回答：aborted（被取消的 read 不能用 ErrorKind::Interrupted，read_until 会无限重试它）"
    );
    assert_eq!(result.content, [AssistantContent::from(text("partial"))]);
}
