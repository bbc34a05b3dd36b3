//! Chapter 04's focused test: one scripted model, played through the real
//! model interface.
//!
//! Steps filter these three tests by name:
//! `scripted_messages` (step 4.1, 1 test) and no filter (step 4.2, all 3).
//!
//! Each stream is read on a helper thread, as any consumer of chapter 03's
//! `ModelStream` would read it. A stream that never ends fails its test
//! after a second instead of hanging the run.

use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use course::block_on;
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, DoneReason, ErrorReason, Model,
    ModelEvent, ModelStream, StopReason, StreamOptions, ToolCall, assistant_message, text, text_of,
    user_message,
};
use serde_json::json;

/// The wire name of an event, as the chapter prints it.
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
fn read_all<S>(stream: S) -> (Vec<ModelEvent>, AssistantMessage)
where
    S: ModelStream + Send + 'static,
{
    let (report, reported) = mpsc::channel();
    thread::spawn(move || {
        let events: Vec<ModelEvent> =
            std::iter::from_fn(|| block_on(poll_fn(|cx| stream.poll_next(cx)))).collect();
        let result = block_on(poll_fn(|cx| stream.poll_result(cx)));
        let _ = report.send((events, result));
    });
    let (events, result) = match reported.recv_timeout(Duration::from_secs(1)) {
        Ok(read) => read,
        Err(RecvTimeoutError::Timeout) => panic!(
            "the stream did not end within a second: every call, even a failed one, must end with `done` or `error`"
        ),
        Err(RecvTimeoutError::Disconnected) => panic!("reading the stream panicked"),
    };
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    let result = result.unwrap_or_else(|error| {
        panic!(
            "the stream ended after {kinds:?} without a result ({error}): every call must end with `done` or `error`"
        )
    });
    (events, result)
}

// Chapter 05 gives `AgentContext` more fields; the rest stay at their defaults.
#[allow(clippy::needless_update)]
fn context(messages: Vec<AgentMessage>) -> AgentContext {
    AgentContext {
        messages,
        ..AgentContext::default()
    }
}

#[test]
fn scripted_messages_play_the_event_protocol_and_requests_are_snapshots() {
    let read_call = ToolCall {
        id: "c1".to_string(),
        name: "read".to_string(),
        arguments: json!({ "path": "README.md" }),
        raw_arguments: None,
    };
    let first_turn = assistant_message(
        vec![text("先看").into(), read_call.clone().into()],
        StopReason::ToolUse,
    );
    let second_turn = assistant_message(vec![text("第二轮").into()], StopReason::Stop);
    let model = ScriptedModel::new(vec![first_turn.clone().into(), second_turn.into()]);

    let mut first_context = context(vec![AgentMessage::User(user_message("go"))]);
    let stream = model.stream(&first_context, StreamOptions::default());
    first_context
        .messages
        .push(AgentMessage::User(user_message("事后追加")));
    let (events, result) = read_all(stream);

    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "text_delta",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );

    let ModelEvent::Start { partial } = &events[0] else {
        unreachable!()
    };
    assert_eq!(
        partial.content,
        Vec::<AssistantContent>::new(),
        "start's partial has no content yet"
    );

    let ModelEvent::TextDelta {
        content_index,
        delta,
        partial,
    } = &events[1]
    else {
        unreachable!()
    };
    assert_eq!(*content_index, 0);
    assert_eq!(delta, "先看");
    assert_eq!(
        partial.content,
        [AssistantContent::from(text("先看"))],
        "the partial already holds this delta"
    );

    let ModelEvent::ToolCallDelta {
        content_index,
        delta,
        partial,
    } = &events[2]
    else {
        unreachable!()
    };
    assert_eq!(*content_index, 1);
    assert_eq!(delta, r#"{"path":"README.md"}"#);
    assert_eq!(partial.content[0], AssistantContent::from(text("先看")));
    assert_eq!(
        partial.content[1],
        AssistantContent::ToolCall(ToolCall {
            arguments: json!({}),
            raw_arguments: Some(r#"{"path":"README.md"}"#.to_string()),
            ..read_call.clone()
        }),
        "while its arguments arrive, a call has raw JSON text and `arguments` `{{}}`"
    );

    let ModelEvent::ToolCallEnd {
        content_index,
        tool_call,
        partial,
    } = &events[3]
    else {
        unreachable!()
    };
    assert_eq!(*content_index, 1);
    assert_eq!(*tool_call, read_call);
    assert_eq!(
        partial.content, first_turn.content,
        "the finished call replaces the one being written, in place"
    );

    let ModelEvent::Done { reason, message } = &events[4] else {
        unreachable!()
    };
    assert_eq!(*reason, DoneReason::ToolUse);
    assert_eq!(*message, first_turn);
    assert_eq!(result, first_turn, "result() is the scripted message");

    let requests = model.requests();
    assert_eq!(requests.len(), 1, "each call records its request");
    assert_eq!(
        requests[0].messages.len(),
        1,
        "a change after the call must not reach the recorded request"
    );
    assert_eq!(requests[0].messages[0], first_context.messages[0]);

    let second_stream = model.stream(&context(Vec::new()), StreamOptions::default());
    let (_, second_result) = read_all(second_stream);
    assert_eq!(
        text_of(&AgentMessage::Assistant(second_result)),
        "第二轮",
        "the second call plays the second turn"
    );
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn error_turn_keeps_its_partial_text_and_diagnosis() {
    let model = ScriptedModel::new(vec![ScriptedTurn::Error {
        stop_reason: ErrorReason::Error,
        error_message: "rate limited".to_string(),
        partial_text: Some("正在".to_string()),
    }]);
    let (events, result) = read_all(model.stream(&context(Vec::new()), StreamOptions::default()));

    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(kinds, ["start", "text_delta", "error"]);
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(text_of(&AgentMessage::Assistant(result.clone())), "正在");
    assert_eq!(result.error_message.as_deref(), Some("rate limited"));
}

#[test]
fn exhausted_script_and_cancelled_signal_both_end_in_error() {
    let exhausted = ScriptedModel::new(Vec::new());
    let (events, result) =
        read_all(exhausted.stream(&context(Vec::new()), StreamOptions::default()));
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(kinds, ["error"], "an exhausted script is an `error` event");
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        result.error_message.as_deref(),
        Some("ScriptedModel 没有更多响应")
    );

    let signal = Arc::new(AtomicBool::new(true));
    let cancelled = ScriptedModel::new(vec![
        assistant_message(vec![text("不应出现").into()], StopReason::Stop).into(),
    ]);
    let options = StreamOptions {
        signal: Some(signal),
    };
    let (events, result) = read_all(cancelled.stream(&context(Vec::new()), options));
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(kinds, ["error"], "a cancelled call plays nothing");
    assert_eq!(result.stop_reason, StopReason::Aborted);
    assert_eq!(result.error_message.as_deref(), Some("Request was aborted"));
}
