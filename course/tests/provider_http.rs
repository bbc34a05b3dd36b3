//! Chapter 05's real transport ([`http_fetch`], ureq) against a loopback
//! server this test starts on 127.0.0.1: chunked transfer encoding, one
//! byte per write; the request as it arrives on the socket; a provider's
//! error body with the key in several spellings (and a placeholder key left
//! alone); answers that are not event streams (HTML, JSON, gzip); the
//! quirks of real servers; cancellation, the idle timeout and the line cap
//! while the server stalls or never ends a line, each of which must end the
//! call with the partial and close the connection, never hang. A stall is
//! tried with each way an answer marks its end: chunked, `Content-Length`,
//! and none (the server closes), where a shut-down read returns `Ok(0)`.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use course::assistant_stream::AssistantMessageEventStream;
use course::provider_adapter::{OpenAiCompatibleModel, OpenAiCompatibleTransport};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, Model, ModelEvent, StopReason,
    StreamOptions, ToolCall, Usage, text, user_message,
};
use serde_json::json;

const KEY: &str = "sk-loopback-secret";

/// A generous bound: a stream that takes longer has hung.
const BOUND: Duration = Duration::from_secs(10);

const MAIN_LINE: &str = concat!(
    ": keep-alive\r\n\r\n",
    r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"先读"},"finish_reason":null}]}"#,
    "\r\n\r\n",
    r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call-1","type":"function","function":{"name":"read","arguments":"{\"path\":"}}]},"finish_reason":null}]}"#,
    "\r\n\r\n",
    r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"README.md\"}"}}]},"finish_reason":null}]}"#,
    "\r\n\r\n",
    r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    "\r\n\r\n",
    r#"data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}"#,
    "\r\n\r\n",
    "data: [DONE]\r\n\r\n",
);

/// A request as the server read it off the socket.
struct Received {
    head: String,
    body: String,
}

/// Reads one HTTP request: the head up to the blank line, then
/// `Content-Length` bytes of body.
fn receive(connection: &TcpStream) -> Received {
    let mut reader = BufReader::new(connection);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        head.push_str(&line);
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    Received {
        head,
        body: String::from_utf8(body).unwrap(),
    }
}

/// Writes `bytes` as HTTP/1.1 chunked body data, one byte per chunk and per write.
fn write_one_byte_chunks(connection: &mut TcpStream, bytes: &[u8]) {
    for byte in bytes {
        connection.write_all(b"1\r\n").unwrap();
        connection.write_all(&[*byte]).unwrap();
        connection.write_all(b"\r\n").unwrap();
    }
}

/// Starts a server for one connection; `respond` answers it. Returns the
/// base URL and what the server handler returns.
fn serve<T: Send + 'static>(
    respond: impl FnOnce(TcpStream, Received) -> T + Send + 'static,
) -> (String, mpsc::Receiver<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1/", listener.local_addr().unwrap());
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let (connection, _) = listener.accept().unwrap();
        connection.set_nodelay(true).unwrap();
        let received = receive(&connection);
        let _ = report.send(respond(connection, received));
    });
    (base_url, reported)
}

fn model(base_url: &str) -> OpenAiCompatibleModel {
    let transport = OpenAiCompatibleTransport::new(base_url, KEY).unwrap();
    OpenAiCompatibleModel::new("loopback", "fake-1", transport)
}

fn ask(prompt: &str) -> AgentContext {
    AgentContext {
        messages: vec![AgentMessage::User(user_message(prompt))],
        ..AgentContext::default()
    }
}

/// Reads the stream on a helper thread; `on_event` sees each event first.
fn play(
    stream: AssistantMessageEventStream,
    mut on_event: impl FnMut(&ModelEvent) + Send + 'static,
) -> (Vec<ModelEvent>, AssistantMessage) {
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let mut events = Vec::new();
        for event in stream.iter() {
            on_event(&event);
            events.push(event);
        }
        let _ = report.send((events, stream.blocking_result()));
    });
    let (events, result) = reported
        .recv_timeout(BOUND)
        .expect("the stream ends, never hangs");
    (events, result.expect("the stream has a result"))
}

#[test]
fn the_real_transport_reads_chunked_sse_one_byte_per_write() {
    let (base_url, server) = serve(|mut connection, received| {
        connection
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        write_one_byte_chunks(&mut connection, MAIN_LINE.as_bytes());
        connection.write_all(b"0\r\n\r\n").unwrap();
        received
    });

    let (_, result) = play(
        model(&base_url).stream(&ask("读取 README.md"), StreamOptions::default()),
        |_| {},
    );

    assert_eq!(
        AssistantMessage {
            timestamp: 0,
            ..result
        },
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
            provider: "loopback".to_string(),
            model: "fake-1".to_string(),
            usage: Usage {
                input: 9,
                output: 4,
                total_tokens: 13,
            },
            stop_reason: StopReason::ToolUse,
            timestamp: 0,
            error_message: None,
        }
    );
    let received = server.recv_timeout(BOUND).unwrap();
    let head = received.head.to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/chat/completions http/1.1\r\n"),
        "{head}"
    );
    assert!(head.contains("\r\naccept: text/event-stream\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nauthorization: bearer {KEY}\r\n")),
        "{head}"
    );
    assert!(
        head.contains("\r\ncontent-type: application/json\r\n"),
        "{head}"
    );
    assert_eq!(
        received.body,
        r#"{"model":"fake-1","messages":[{"role":"user","content":"读取 README.md"}],"stream":true,"stream_options":{"include_usage":true}}"#
    );
}

#[test]
fn a_401_names_the_status_and_the_providers_message_without_the_key() {
    let (base_url, _server) = serve(|mut connection, _| {
        let body = format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error"}}}}"#
        );
        let head = format!(
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        connection.write_all(head.as_bytes()).unwrap();
        connection.write_all(body.as_bytes()).unwrap();
    });

    let (events, result) = play(
        model(&base_url).stream(&ask("hi"), StreamOptions::default()),
        |_| {},
    );

    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some(
            "OpenAI-compatible request failed with HTTP 401: Incorrect API key provided: [redacted]."
        )
    );
    assert!(!serde_json::to_string(&events).unwrap().contains(KEY));
}

/// How an answer marks where its body ends.
#[derive(Clone, Copy, Debug)]
enum Framing {
    /// `Transfer-Encoding: chunked`, one byte per chunk.
    Chunked,
    /// `Content-Length`, here longer than what is sent before the stall.
    Length,
    /// Neither: the body ends when the server closes the connection
    /// (HTTP/1.0 style). A shutdown then ends a blocked read as `Ok(0)`,
    /// which looks like the end of the body.
    Close,
}

const FRAMINGS: [Framing; 3] = [Framing::Chunked, Framing::Length, Framing::Close];

/// Answers 200 with an event stream framed as `framing` and sends `event`
/// as its first event (then the caller stalls).
fn send_one_event(connection: &mut TcpStream, framing: Framing) {
    let event =
        r#"data: {"choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}"#;
    let body = format!("{event}\n\n");
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n";
    match framing {
        Framing::Chunked => {
            let head = format!("{head}Transfer-Encoding: chunked\r\n\r\n");
            connection.write_all(head.as_bytes()).unwrap();
            write_one_byte_chunks(connection, body.as_bytes());
        }
        Framing::Length => {
            let head = format!("{head}Content-Length: {}\r\n\r\n", body.len() + 100);
            connection.write_all(head.as_bytes()).unwrap();
            connection.write_all(body.as_bytes()).unwrap();
        }
        Framing::Close => {
            connection
                .write_all(format!("{head}Connection: close\r\n\r\n").as_bytes())
                .unwrap();
            connection.write_all(body.as_bytes()).unwrap();
        }
    }
}

#[test]
fn cancelling_while_the_server_stalls_ends_aborted_with_the_partial_and_closes_the_connection() {
    for framing in FRAMINGS {
        let (stalled, stalling) = mpsc::channel();
        let (base_url, server) = serve(move |mut connection, _| {
            send_one_event(&mut connection, framing);
            stalled.send(()).unwrap();
            wait_for_close(&mut connection) // and send nothing more
        });
        let signal = Arc::new(AtomicBool::new(false));
        let options = StreamOptions {
            signal: Some(Arc::clone(&signal)),
        };
        let canceller = Arc::clone(&signal);
        let cancelled_at: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
        let stamp = Arc::clone(&cancelled_at);

        let (events, result) = play(model(&base_url).stream(&ask("go"), options), move |event| {
            if matches!(event, ModelEvent::TextDelta { .. }) {
                // The event is read; make sure the reader is blocked on the socket.
                stalling.recv_timeout(BOUND).unwrap();
                thread::sleep(Duration::from_millis(50));
                *stamp.lock().unwrap() = Some(Instant::now());
                canceller.store(true, Ordering::SeqCst);
            }
        });
        let waited = cancelled_at.lock().unwrap().unwrap().elapsed();
        eprintln!("{framing:?}: aborted {waited:?} after the signal was set");

        assert!(
            matches!(events.last(), Some(ModelEvent::Error { .. })),
            "{framing:?}: {events:?}"
        );
        assert_eq!(result.stop_reason, StopReason::Aborted, "{framing:?}");
        assert_eq!(
            result.error_message.as_deref(),
            Some("Request was aborted"),
            "{framing:?}"
        );
        assert_eq!(result.content, [AssistantContent::from(text("partial"))]);
        assert!(waited < BOUND, "{framing:?}: cancellation took {waited:?}");
        assert_eq!(server.recv_timeout(BOUND).unwrap(), "closed", "{framing:?}");
    }
}

#[test]
fn a_stream_without_a_finish_reason_keeps_its_text_as_an_error() {
    let (base_url, _server) = serve(|mut connection, _| {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\ndata: [DONE]\n\n";
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        connection.write_all(head.as_bytes()).unwrap();
        connection.write_all(body.as_bytes()).unwrap();
    });

    let (_, result) = play(
        model(&base_url).stream(&ask("go"), StreamOptions::default()),
        |_| {},
    );

    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some("Provider stream ended without a finish chunk")
    );
    assert_eq!(result.content, [AssistantContent::from(text("half"))]);
}

#[test]
fn a_refused_connection_is_an_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (_, result) = play(
        model(&format!("http://127.0.0.1:{port}/v1")).stream(&ask("go"), StreamOptions::default()),
        |_| {},
    );
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(!result.error_message.unwrap().is_empty());
}

/// A 200 answer with `content_type`, an optional `Content-Encoding` and `body`.
fn answer_with(content_type: &str, encoding: Option<&str>, body: &[u8]) -> Vec<u8> {
    let encoding = encoding
        .map(|encoding| format!("Content-Encoding: {encoding}\r\n"))
        .unwrap_or_default();
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{encoding}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn error_for(answer: Vec<u8>) -> String {
    let (base_url, _server) = serve(move |mut connection, _| {
        connection.write_all(&answer).unwrap();
    });
    let (_, result) = play(
        model(&base_url).stream(&ask("hi"), StreamOptions::default()),
        |_| {},
    );
    assert_eq!(result.stop_reason, StopReason::Error);
    result.error_message.unwrap()
}

#[test]
fn an_answer_that_is_not_an_event_stream_names_status_content_type_and_first_bytes() {
    let html = error_for(answer_with(
        "text/html; charset=utf-8",
        None,
        b"<!doctype html>\n<html><body>Welcome to nginx!</body></html>",
    ));
    assert_eq!(
        html,
        r#"OpenAI-compatible response is not an event stream: HTTP 200, Content-Type "text/html; charset=utf-8", Content-Encoding "", first bytes "<!doctype html>\n<html><body>Welcome to nginx!</body></html>""#
    );
    let json = error_for(answer_with(
        "application/json",
        None,
        br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}"#,
    ));
    assert_eq!(
        json,
        r#"OpenAI-compatible response is not an event stream: HTTP 200, Content-Type "application/json", Content-Encoding "", first bytes "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index""#
    );
    // The start of a gzip stream: its magic bytes.
    let gzip = error_for(answer_with(
        "text/event-stream",
        Some("gzip"),
        &[0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03],
    ));
    assert_eq!(
        gzip,
        r#"OpenAI-compatible response is not an event stream: HTTP 200, Content-Type "text/event-stream", Content-Encoding "gzip", first bytes "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03""#
    );
    let none = error_for(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec());
    assert_eq!(
        none,
        r#"OpenAI-compatible response is not an event stream: HTTP 200, Content-Type "", Content-Encoding "", first bytes "ok""#
    );
}

#[test]
fn an_event_stream_with_parameters_in_its_content_type_is_read() {
    let (base_url, _server) = serve(|mut connection, _| {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n";
        connection
            .write_all(&answer_with(
                "Text/Event-Stream; charset=utf-8",
                None,
                body.as_bytes(),
            ))
            .unwrap();
    });
    let (_, result) = play(
        model(&base_url).stream(&ask("hi"), StreamOptions::default()),
        |_| {},
    );
    assert_eq!(result.stop_reason, StopReason::Stop, "{result:?}");
    assert_eq!(result.content, [AssistantContent::from(text("ok"))]);
}

/// Waits until the client closes the connection; what the server saw.
fn wait_for_close(connection: &mut TcpStream) -> &'static str {
    connection.set_read_timeout(Some(BOUND)).unwrap();
    let mut rest = [0; 64];
    match connection.read(&mut rest) {
        Ok(0) => "closed",
        Ok(_) => "more bytes",
        Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            "still open"
        }
        Err(_) => "closed",
    }
}

#[test]
fn a_server_that_stops_sending_ends_the_call_at_the_idle_timeout_with_the_partial() {
    for framing in FRAMINGS {
        let (base_url, server) = serve(move |mut connection, _| {
            send_one_event(&mut connection, framing);
            wait_for_close(&mut connection) // and send nothing more
        });
        let transport = OpenAiCompatibleTransport::new(&base_url, KEY)
            .unwrap()
            .with_idle_timeout(Duration::from_millis(300));
        let model = OpenAiCompatibleModel::new("loopback", "fake-1", transport);

        let (_, result) = play(model.stream(&ask("go"), StreamOptions::default()), |_| {});

        assert_eq!(result.stop_reason, StopReason::Error, "{framing:?}");
        assert_eq!(
            result.error_message.as_deref(),
            Some("No byte from the provider for 300ms (idle timeout)"),
            "{framing:?}: a stall is not the end of the body"
        );
        assert_eq!(result.content, [AssistantContent::from(text("partial"))]);
        assert_eq!(server.recv_timeout(BOUND).unwrap(), "closed", "{framing:?}");
    }
}

#[test]
fn a_server_that_never_answers_ends_the_call_at_the_idle_timeout() {
    let (base_url, server) = serve(|mut connection, _| wait_for_close(&mut connection));
    let transport = OpenAiCompatibleTransport::new(&base_url, KEY)
        .unwrap()
        .with_idle_timeout(Duration::from_millis(300));
    let model = OpenAiCompatibleModel::new("loopback", "fake-1", transport);
    let (_, result) = play(model.stream(&ask("go"), StreamOptions::default()), |_| {});
    assert_eq!(
        result.error_message.as_deref(),
        Some("No byte from the provider for 300ms (idle timeout)")
    );
    assert_eq!(server.recv_timeout(BOUND).unwrap(), "closed");
}

#[test]
fn a_line_that_never_ends_ends_the_call_at_the_cap_and_closes_the_connection() {
    let (base_url, server) = serve(|mut connection, _| {
        connection
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ")
            .unwrap();
        let filler = [b'x'; 64 * 1024];
        let mut sent = 0usize;
        // Until the client hangs up: at most 64 MiB, far past the cap.
        while sent < 64 << 20 && connection.write_all(&filler).is_ok() {
            sent += filler.len();
        }
        sent
    });
    let (_, result) = play(
        model(&base_url).stream(&ask("go"), StreamOptions::default()),
        |_| {},
    );
    assert_eq!(
        result.error_message.as_deref(),
        Some("Provider stream has a line or event over 4 MiB")
    );
    let sent = server.recv_timeout(BOUND).unwrap();
    assert!(sent < 64 << 20, "the client hung up after {sent} bytes");
}

/// The error text of a call under `key` whose server answers 401 with a
/// body quoting the key raw, JSON-escaped and percent-encoded.
fn unauthorized(key: &str) -> String {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {key}. Request was {{\"key\":\"{}\"}} from ?key={}"}}}}"#,
        key.replace('/', "\\\\/"),
        key.replace('/', "%2F"),
    );
    let (base_url, _server) = serve(move |mut connection, _| {
        let head = format!(
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        connection.write_all(head.as_bytes()).unwrap();
        connection.write_all(body.as_bytes()).unwrap();
    });
    let transport = OpenAiCompatibleTransport::new(&base_url, key).unwrap();
    let model = OpenAiCompatibleModel::new("loopback", "fake-1", transport);
    let (_, result) = play(model.stream(&ask("hi"), StreamOptions::default()), |_| {});
    result.error_message.unwrap()
}

#[test]
fn a_real_key_is_redacted_in_every_spelling_and_a_placeholder_key_is_left_alone() {
    assert_eq!(
        unauthorized("sk-proj/abc123"),
        r#"OpenAI-compatible request failed with HTTP 401: Incorrect API key provided: [redacted]. Request was {"key":"[redacted]"} from ?key=[redacted]"#
    );
    assert_eq!(
        unauthorized("ollama"),
        r#"OpenAI-compatible request failed with HTTP 401: Incorrect API key provided: ollama. Request was {"key":"ollama"} from ?key=ollama"#
    );
}

#[test]
fn real_server_quirks_over_http_azure_opening_index_zero_calls_and_float_usage() {
    let body = concat!(
        r#"data: {"choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}"#,
        "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}}]}}]}"#,
        "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"list","arguments":"{}"}}]}}]}"#,
        "\n\n",
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":12.0,"completion_tokens":4.0}}"#,
        "\n\n",
        "data: [DONE]\n\n",
    );
    let (base_url, _server) = serve(move |mut connection, _| {
        connection
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        write_one_byte_chunks(&mut connection, body.as_bytes());
        connection.write_all(b"0\r\n\r\n").unwrap();
    });
    let (_, result) = play(
        model(&base_url).stream(&ask("read a.txt and list"), StreamOptions::default()),
        |_| {},
    );
    assert_eq!(result.stop_reason, StopReason::ToolUse, "{result:?}");
    let calls: Vec<(&str, &str)> = result
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::ToolCall(call) => Some((call.id.as_str(), call.name.as_str())),
            AssistantContent::Text(_) => None,
        })
        .collect();
    assert_eq!(calls, [("call_a", "read"), ("call_b", "list")]);
    assert_eq!(
        result.usage,
        Usage {
            input: 12,
            output: 4,
            total_tokens: 16,
        }
    );
}
