//! Chapter 03's model events on chapter 02's stream: the draft that builds
//! them, the partial snapshots they carry, and the terminal mapping.

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Waker};
use std::thread;
use std::time::Duration;

use course::assistant_stream::AssistantMessageEventStream;
use course::block_on;
use course::event_stream::StreamError;
use course::types::{
    AgentContext, AssistantContent, AssistantMessage, DoneReason, ErrorReason, MessageDraft, Model,
    ModelEvent, ModelStream, PartialMessage, StopReason, StreamOptions, ToolCall, Usage,
    assistant_message, text,
};
use serde_json::json;

fn draft() -> MessageDraft {
    MessageDraft::new(AssistantMessage {
        timestamp: 1_010,
        ..assistant_message(vec![], StopReason::Stop)
    })
}

fn partial(event: &ModelEvent) -> AssistantMessage {
    match event {
        ModelEvent::Start { partial }
        | ModelEvent::TextDelta { partial, .. }
        | ModelEvent::ToolCallDelta { partial, .. }
        | ModelEvent::ToolCallEnd { partial, .. } => partial.to_message(),
        other => panic!("{other:?} carries no partial"),
    }
}

fn content_index(event: &ModelEvent) -> usize {
    match event {
        ModelEvent::TextDelta { content_index, .. }
        | ModelEvent::ToolCallDelta { content_index, .. }
        | ModelEvent::ToolCallEnd { content_index, .. } => *content_index,
        other => panic!("{other:?} has no content index"),
    }
}

fn call(id: &str, arguments: serde_json::Value, raw: Option<&str>) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments,
        raw_arguments: raw.map(String::from),
    })
}

/// Runs `work` on its own thread; fails instead of hanging after five seconds.
fn within<V: Send + 'static>(work: impl FnOnce() -> V + Send + 'static) -> V {
    let (report, finished) = mpsc::channel();
    thread::spawn(move || report.send(work()));
    finished
        .recv_timeout(Duration::from_secs(5))
        .expect("the stream hung")
}

#[test]
fn snapshots_never_change_after_they_were_taken() {
    let mut draft = draft();
    let start = draft.start();
    let first = draft.text_delta("我先");
    let second = draft.text_delta("读取");
    let last = draft.text_delta("项目说明。");

    assert_eq!(partial(&start).content, []);
    assert_eq!(partial(&first).content, [text("我先").into()]);
    assert_eq!(partial(&second).content, [text("我先读取").into()]);
    assert_eq!(partial(&last).content, [text("我先读取项目说明。").into()]);
    assert_eq!(
        [&first, &second, &last].map(content_index),
        [0, 0, 0],
        "one block"
    );
}

#[test]
fn a_tool_call_shows_raw_arguments_until_it_ends() {
    let mut draft = draft();
    draft.text_delta("我先读取项目说明。");
    let opening = draft.tool_call_delta("call_1", "read", r#"{"path":"#);
    let more = draft.tool_call_delta("call_1", "ignored", r#""README.md"}"#);
    let arguments = json!({ "path": "README.md" });
    let ended = draft.tool_call_end(ToolCall {
        id: "call_1".into(),
        name: "read".into(),
        arguments: arguments.clone(),
        raw_arguments: Some(r#"{"path":"README.md"}"#.into()),
    });

    assert_eq!(
        partial(&opening).content[1],
        call("call_1", json!({}), Some(r#"{"path":"#))
    );
    assert_eq!(
        partial(&more).content[1],
        call("call_1", json!({}), Some(r#"{"path":"README.md"}"#)),
        "later deltas keep the call's name"
    );
    assert_eq!(
        partial(&ended).content,
        [
            text("我先读取项目说明。").into(),
            call("call_1", arguments, Some(r#"{"path":"README.md"}"#))
        ]
    );
    assert_eq!([&opening, &more, &ended].map(content_index), [1, 1, 1]);
    let ModelEvent::ToolCallEnd { tool_call, .. } = &ended else {
        panic!("expected toolcall_end, got {ended:?}");
    };
    assert_eq!(
        AssistantContent::from(tool_call.clone()),
        partial(&ended).content[1]
    );
}

#[test]
fn a_new_kind_of_delta_or_another_call_starts_a_new_block() {
    let whole = |id: &str| ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: json!({}),
        raw_arguments: None,
    };
    let mut draft = draft();
    let first = draft.tool_call_delta("c1", "read", "{}");
    let second = draft.tool_call_delta("c2", "read", "{");
    let after_a_call = draft.tool_call_end(whole("c3"));
    let after_calls = draft.text_delta("done");
    let after_text = draft.tool_call_end(whole("c4"));
    let last = draft.text_delta("bye");

    assert_eq!(
        [
            &first,
            &second,
            &after_a_call,
            &after_calls,
            &after_text,
            &last
        ]
        .map(content_index),
        [0, 1, 2, 3, 4, 5],
        "a call that arrived whole comes last"
    );
    assert_eq!(
        partial(&last).content,
        [
            call("c1", json!({}), Some("{}")),
            call("c2", json!({}), Some("{")),
            call("c3", json!({}), None),
            text("done").into(),
            call("c4", json!({}), None),
            text("bye").into(),
        ]
    );
}

#[test]
fn a_draft_continues_the_content_it_started_with() {
    let mut draft = MessageDraft::new(assistant_message(
        vec![text("Hello").into()],
        StopReason::Stop,
    ));
    let event = draft.text_delta(", world");
    assert_eq!(content_index(&event), 0);
    assert_eq!(partial(&event).content, [text("Hello, world").into()]);
    assert_eq!(
        partial(&draft.start()).content,
        [text("Hello, world").into()]
    );
}

#[test]
fn usage_shows_in_later_snapshots_only() {
    let mut draft = draft();
    let before = draft.start();
    let usage = Usage {
        input: 18,
        output: 12,
        total_tokens: 30,
    };
    draft.set_usage(usage);
    assert_eq!(partial(&before).usage, Usage::default());
    assert_eq!(partial(&draft.start()).usage, usage);
    let ModelEvent::Done { message, .. } = draft.finish(DoneReason::Length) else {
        panic!("finish gives done");
    };
    assert_eq!(message.usage, usage);
    assert_eq!(message.stop_reason, StopReason::Length);
}

#[test]
fn a_failed_generation_keeps_its_content_and_says_why() {
    let mut draft = draft();
    draft.text_delta("部分回答");
    let ModelEvent::Error { reason, error } = draft.fail(ErrorReason::Error, "socket reset") else {
        panic!("fail gives error");
    };
    assert_eq!(reason, ErrorReason::Error);
    assert_eq!(error.stop_reason, StopReason::Error);
    assert_eq!(error.error_message.as_deref(), Some("socket reset"));
    assert_eq!(error.content, [text("部分回答").into()]);
}

#[test]
fn a_complete_message_converts_to_a_snapshot_and_back() {
    let message = assistant_message(
        vec![text("a").into(), call("c", json!({"path": "x"}), None)],
        StopReason::ToolUse,
    );
    let snapshot = PartialMessage::from(message.clone());
    assert_eq!(snapshot.to_message(), message);
    assert_eq!(snapshot, PartialMessage::from(message.clone()));
    assert_ne!(
        snapshot,
        PartialMessage::from(assistant_message(vec![], StopReason::ToolUse))
    );
    assert_eq!(format!("{snapshot:?}"), format!("{message:?}"));
}

#[test]
fn streaming_many_deltas_keeps_every_snapshot_right() {
    let mut draft = draft();
    let events: Vec<ModelEvent> = (0..20_000).map(|_| draft.text_delta("ab")).collect();
    assert_eq!(
        partial(&events[9_999]).content,
        [text("ab".repeat(10_000)).into()]
    );
    assert_eq!(
        partial(&events[19_999]).content,
        [text("ab".repeat(20_000)).into()]
    );
}

#[test]
fn the_readme_turn_streams_from_another_thread_into_one_final_message() {
    let stream = AssistantMessageEventStream::new();
    let producer = stream.producer();
    let sender = thread::spawn(move || {
        let mut draft = draft();
        producer.push(draft.start()).unwrap();
        producer
            .push(draft.text_delta("我先读取项目说明。"))
            .unwrap();
        producer
            .push(draft.tool_call_delta("call_1", "read", r#"{"path":"README.md"}"#))
            .unwrap();
        producer.push(draft.finish(DoneReason::ToolUse)).unwrap();
    });

    let (kinds, message) = within(move || {
        block_on(async {
            let mut kinds = Vec::new();
            while let Some(event) = stream.next().await {
                kinds.push(serde_json::to_value(&event).unwrap()["type"].to_string());
            }
            (kinds, stream.result().await)
        })
    });
    sender.join().unwrap();

    assert_eq!(
        kinds,
        [
            r#""start""#,
            r#""text_delta""#,
            r#""toolcall_delta""#,
            r#""done""#
        ]
    );
    let message = message.unwrap();
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.content.len(), 2);
}

#[test]
fn done_is_terminal_and_later_events_are_refused() {
    within(|| {
        let stream = AssistantMessageEventStream::default();
        let done = draft().finish(DoneReason::Stop);
        stream.push(done.clone()).unwrap();
        let late = draft().fail(ErrorReason::Error, "too late");
        assert!(stream.push(late).is_err(), "no second final message");
        assert_eq!(stream.iter().count(), 1);
        let ModelEvent::Done { message, .. } = done else {
            unreachable!()
        };
        assert_eq!(stream.blocking_result(), Ok(message));
    });
}

#[test]
fn progress_events_do_not_end_the_stream() {
    within(|| {
        let stream = AssistantMessageEventStream::new();
        let mut draft = draft();
        stream.push(draft.start()).unwrap();
        stream.push(draft.text_delta("a")).unwrap();
        stream
            .push(draft.tool_call_delta("c", "read", "{}"))
            .unwrap();
        stream
            .push(draft.tool_call_end(ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: json!({}),
                raw_arguments: None,
            }))
            .unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            stream.poll_result(&mut cx).is_pending(),
            "no result before done or error"
        );
        stream
            .push(draft.fail(ErrorReason::Aborted, "stop"))
            .unwrap();
        assert_eq!(stream.iter().count(), 5);
    });
}

/// A model that answers every call with the same text, or fails once aborted.
struct EchoModel;

impl Model for EchoModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        let mut draft = draft();
        stream.push(draft.start()).unwrap();
        let aborted = options
            .signal
            .is_some_and(|signal| signal.load(Ordering::SeqCst));
        let last = if aborted {
            draft.fail(ErrorReason::Aborted, "aborted")
        } else {
            let said = format!("{} messages", context.messages.len());
            stream.push(draft.text_delta(&said)).unwrap();
            draft.finish(DoneReason::Stop)
        };
        stream.push(last).unwrap();
        stream
    }
}

/// Reads any model stream through the trait alone: the kinds of its events,
/// then its final message.
fn read_all(
    stream: impl ModelStream + Send + 'static,
) -> (Vec<String>, Result<AssistantMessage, StreamError>) {
    within(move || {
        block_on(async {
            let mut kinds = Vec::new();
            while let Some(event) = poll_fn(|cx| stream.poll_next(cx)).await {
                kinds.push(serde_json::to_value(&event).unwrap()["type"].to_string());
            }
            (kinds, poll_fn(|cx| stream.poll_result(cx)).await)
        })
    })
}

#[test]
fn a_model_returns_a_model_stream_and_honours_its_abort_signal() {
    let context = AgentContext::default();
    let (kinds, answer) = read_all(EchoModel.stream(&context, StreamOptions::default()));
    assert_eq!(kinds, [r#""start""#, r#""text_delta""#, r#""done""#]);
    assert_eq!(answer.unwrap().content, [text("0 messages").into()]);

    let signal = Arc::new(AtomicBool::new(true));
    let options = StreamOptions {
        signal: Some(signal),
    };
    let (kinds, aborted) = read_all(EchoModel.stream(&context, options));
    assert_eq!(kinds, [r#""start""#, r#""error""#]);
    assert_eq!(aborted.unwrap().stop_reason, StopReason::Aborted);
}

#[test]
fn a_model_stream_whose_producer_vanished_reports_it() {
    let stream = AssistantMessageEventStream::new();
    let producer = stream.producer();
    producer.push(draft().start()).unwrap();
    drop(producer);
    let (kinds, result) = read_all(stream);
    assert_eq!(kinds, [r#""start""#], "queued events are still delivered");
    assert_eq!(result, Err(StreamError::ProducerDropped));
}
