//! Chapter 03's model events on the chapter 02 stream: partial snapshots,
//! the draft that builds them, and the terminal mapping.

use std::thread;

use course::block_on;
use course::event_stream::{AssistantMessageEventStream, StreamError};
use course::types::{
    AssistantContent, AssistantMessage, DoneReason, DraftError, ErrorReason, MessageDraft,
    ModelEvent, ModelStream, PartialMessage, StopReason, ToolCall, Usage, assistant_message,
    final_message, next_event, text,
};
use serde_json::json;

fn draft() -> MessageDraft {
    MessageDraft::new(AssistantMessage {
        timestamp: 1_010,
        ..assistant_message(vec![], StopReason::Stop)
    })
}

fn partial_of(event: &ModelEvent) -> &PartialMessage {
    match event {
        ModelEvent::Start { partial }
        | ModelEvent::TextDelta { partial, .. }
        | ModelEvent::ToolCallDelta { partial, .. }
        | ModelEvent::ToolCallEnd { partial, .. } => partial,
        other => panic!("{other:?} carries no partial"),
    }
}

#[test]
fn snapshots_never_change_after_they_were_taken() {
    let mut draft = draft();
    let first = draft.text_delta(0, "我先").unwrap();
    let second = draft.text_delta(0, "读取").unwrap();
    draft.text_delta(0, "项目说明。").unwrap();

    assert_eq!(
        partial_of(&first).to_message().content,
        [AssistantContent::Text(text("我先"))]
    );
    assert_eq!(
        partial_of(&second).to_message().content,
        [AssistantContent::Text(text("我先读取"))]
    );
    assert_eq!(
        draft.message().content,
        [AssistantContent::Text(text("我先读取项目说明。"))]
    );
}

#[test]
fn a_tool_call_shows_raw_arguments_until_it_ends() {
    let mut draft = draft();
    draft.text_delta(0, "我先读取项目说明。").unwrap();
    let streaming = draft
        .tool_call_delta(1, "call_1", "read", r#"{"path":"#)
        .unwrap();
    draft
        .tool_call_delta(1, "ignored", "ignored", r#""README.md"}"#)
        .unwrap();
    let ended = draft
        .tool_call_end(1, json!({"path": "README.md"}))
        .unwrap();

    let before = partial_of(&streaming).to_message();
    assert_eq!(
        before.content[1],
        AssistantContent::ToolCall(ToolCall {
            id: "call_1".into(),
            name: "read".into(),
            arguments: json!({}),
            raw_arguments: Some(r#"{"path":"#.into()),
        })
    );
    let ModelEvent::ToolCallEnd { tool_call, .. } = &ended else {
        panic!("expected toolcall_end, got {ended:?}");
    };
    assert_eq!(tool_call.id, "call_1", "later deltas keep the call's id");
    assert_eq!(tool_call.arguments, json!({"path": "README.md"}));
    assert_eq!(
        tool_call.raw_arguments.as_deref(),
        Some(r#"{"path":"README.md"}"#)
    );
    assert_eq!(
        partial_of(&ended).to_message().content[1],
        AssistantContent::ToolCall(tool_call.clone())
    );
    assert_eq!(
        partial_of(&streaming).to_message(),
        before,
        "the earlier snapshot still shows `{{}}`"
    );
}

#[test]
fn deltas_that_do_not_fit_the_message_are_refused() {
    let mut draft = draft();
    assert_eq!(
        draft.text_delta(1, "x").unwrap_err(),
        DraftError::IndexOutOfOrder {
            content_index: 1,
            blocks: 0
        }
    );
    draft.text_delta(0, "x").unwrap();
    assert_eq!(
        draft.tool_call_delta(0, "c", "read", "{").unwrap_err(),
        DraftError::WrongKind {
            content_index: 0,
            expected: "toolCall"
        }
    );
    assert_eq!(
        draft.tool_call_end(0, json!({})).unwrap_err(),
        DraftError::WrongKind {
            content_index: 0,
            expected: "toolCall"
        }
    );
    draft.tool_call_delta(1, "c", "read", "{}").unwrap();
    assert_eq!(
        draft.text_delta(1, "x").unwrap_err(),
        DraftError::WrongKind {
            content_index: 1,
            expected: "text"
        }
    );
    draft.tool_call_end(1, json!({})).unwrap();
    assert_eq!(
        draft.tool_call_end(1, json!({})).unwrap_err(),
        DraftError::ToolCallEnded { content_index: 1 }
    );
    assert_eq!(
        draft.tool_call_delta(1, "c", "read", "x").unwrap_err(),
        DraftError::ToolCallEnded { content_index: 1 }
    );
    assert!(
        DraftError::IndexOutOfOrder {
            content_index: 3,
            blocks: 2
        }
        .to_string()
        .contains("next new block is 2")
    );
    assert_eq!(
        draft.message().content.len(),
        2,
        "refused deltas changed nothing"
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
    assert_eq!(partial_of(&before).to_message().usage, Usage::default());
    assert_eq!(draft.snapshot().to_message().usage, usage);
}

#[test]
fn a_complete_message_converts_to_a_snapshot_and_back() {
    let message = assistant_message(
        vec![
            text("a").into(),
            AssistantContent::ToolCall(ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: json!({"path": "x"}),
                raw_arguments: None,
            }),
        ],
        StopReason::ToolUse,
    );
    let partial = PartialMessage::from(message.clone());
    assert_eq!(partial.content_len(), 2);
    assert_eq!(partial.to_message(), message);
}

#[test]
fn the_readme_turn_streams_from_another_thread_into_one_final_message() {
    let stream = AssistantMessageEventStream::new();
    let producer = stream.producer();
    let sender = thread::spawn(move || {
        let mut draft = draft();
        producer.push(draft.start()).unwrap();
        producer
            .push(draft.text_delta(0, "我先读取项目说明。").unwrap())
            .unwrap();
        producer
            .push(
                draft
                    .tool_call_delta(1, "call_1", "read", r#"{"path":"README.md"}"#)
                    .unwrap(),
            )
            .unwrap();
        producer
            .push(
                draft
                    .tool_call_end(1, json!({"path": "README.md"}))
                    .unwrap(),
            )
            .unwrap();
        draft.set_usage(Usage {
            input: 18,
            output: 12,
            total_tokens: 30,
        });
        producer.push(draft.finish(DoneReason::ToolUse)).unwrap();
    });

    let (kinds, message) = block_on(async {
        let mut kinds = Vec::new();
        while let Some(event) = next_event(&stream).await {
            kinds.push(
                serde_json::to_value(&event).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        (kinds, final_message(&stream).await)
    });
    sender.join().unwrap();

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
    let message = message.unwrap();
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.usage.total_tokens, 30);
    assert_eq!(message.content.len(), 2);
}

#[test]
fn done_is_terminal_and_later_events_are_refused() {
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
}

#[test]
fn a_model_stream_whose_producer_vanished_reports_it() {
    let stream = AssistantMessageEventStream::new();
    let producer = stream.producer();
    producer.push(draft().start()).unwrap();
    drop(producer);
    let polled: &dyn ModelStream = &stream;
    assert!(block_on(next_event(polled)).is_some());
    assert!(block_on(next_event(polled)).is_none());
    assert_eq!(
        block_on(final_message(polled)),
        Err(StreamError::ProducerDropped)
    );
}

#[test]
fn many_deltas_build_the_whole_text() {
    let mut draft = draft();
    let events: Vec<ModelEvent> = (0..20_000)
        .map(|_| draft.text_delta(0, "ab").unwrap())
        .collect();
    assert_eq!(
        partial_of(&events[9_999]).to_message().content,
        [AssistantContent::Text(text("ab".repeat(10_000)))]
    );
    let ModelEvent::Done { message, .. } = draft.finish(DoneReason::Length) else {
        unreachable!()
    };
    assert_eq!(
        message.content,
        [AssistantContent::Text(text("ab".repeat(20_000)))]
    );
    assert_eq!(message.stop_reason, StopReason::Length);
}
