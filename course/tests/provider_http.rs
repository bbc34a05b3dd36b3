//! Chapter 05's real transport ([`http_fetch`], ureq) against a loopback
//! server this test starts on 127.0.0.1: chunked transfer encoding, one
//! byte per write; the request as it arrives on the socket; a provider's
//! error body; and cancellation while the server stalls, which must end
//! `aborted` with the partial and close the connection, never hang.

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

#[test]
fn cancelling_while_the_server_stalls_ends_aborted_with_the_partial_and_closes_the_connection() {
    let (stalled, stalling) = mpsc::channel();
    let (base_url, server) = serve(move |mut connection, _| {
        connection
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap();
        let event =
            r#"data: {"choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}"#;
        write_one_byte_chunks(&mut connection, format!("{event}\n\n").as_bytes());
        stalled.send(()).unwrap();
        // Stall: send nothing more, and wait for the client to close.
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
    eprintln!("aborted {waited:?} after the signal was set");

    assert!(
        matches!(events.last(), Some(ModelEvent::Error { .. })),
        "{events:?}"
    );
    assert_eq!(result.stop_reason, StopReason::Aborted);
    assert_eq!(result.error_message.as_deref(), Some("Request was aborted"));
    assert_eq!(result.content, [AssistantContent::from(text("partial"))]);
    assert!(waited < BOUND, "cancellation took {waited:?}");
    assert_eq!(server.recv_timeout(BOUND).unwrap(), "closed");
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
