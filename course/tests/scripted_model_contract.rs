//! Chapter 04's rules beyond the focused test: the exact bytes of a played
//! turn, the cursor past the end, the order of a cancelled call, every stop
//! reason, and the script's own raw arguments.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use course::assistant_stream::AssistantMessageEventStream;
use course::scripted_model::{ScriptedModel, ScriptedTurn};
use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, ErrorReason, Model, ModelEvent,
    StopReason, StreamOptions, ToolCall, Usage, assistant_message, text, user_message,
};
use serde_json::json;

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

/// One call with an empty context: its events as JSON lines, and its result.
fn call(model: &ScriptedModel) -> (Vec<String>, AssistantMessage) {
    let (events, result) = play(model.stream(&AgentContext::default(), StreamOptions::default()));
    let lines = events
        .iter()
        .map(|event| serde_json::to_string(event).unwrap());
    (lines.collect(), result)
}

/// The events of one call with an empty context.
fn events_of(model: &ScriptedModel) -> Vec<ModelEvent> {
    play(model.stream(&AgentContext::default(), StreamOptions::default())).0
}

fn read_call() -> ToolCall {
    ToolCall {
        id: "c1".to_string(),
        name: "read".to_string(),
        arguments: json!({ "path": "README.md" }),
        raw_arguments: None,
    }
}

/// The first turn of the focused test, stamped 1000, as the guide prints it.
const FIRST_TURN: &str = r#"{"type":"start","partial":{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1000}}
{"type":"text_delta","contentIndex":0,"delta":"先看","partial":{"role":"assistant","content":[{"type":"text","text":"先看"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1000}}
{"type":"toolcall_delta","contentIndex":1,"delta":"{\"path\":\"README.md\"}","partial":{"role":"assistant","content":[{"type":"text","text":"先看"},{"type":"toolCall","id":"c1","name":"read","arguments":{},"rawArguments":"{\"path\":\"README.md\"}"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1000}}
{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"README.md"}},"partial":{"role":"assistant","content":[{"type":"text","text":"先看"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1000}}
{"type":"done","reason":"toolUse","message":{"role":"assistant","content":[{"type":"text","text":"先看"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"toolUse","timestamp":1000}}"#;

/// Chapter 03's README turn and its failed turn, as chapter 03's guide
/// prints their events: the scripted model plays exactly that sequence.
const CHAPTER_03: &str = r#"{"type":"start","partial":{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}
{"type":"text_delta","contentIndex":0,"delta":"我先读取项目说明。","partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}
{"type":"toolcall_delta","contentIndex":1,"delta":"{\"path\":\"README.md\"}","partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{},"rawArguments":"{\"path\":\"README.md\"}"}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}
{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}},"partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}
{"type":"done","reason":"toolUse","message":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"toolUse","timestamp":1010}}
{"type":"start","partial":{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":2000,"errorMessage":"socket reset"}}
{"type":"text_delta","contentIndex":0,"delta":"部分回答","partial":{"role":"assistant","content":[{"type":"text","text":"部分回答"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":2000,"errorMessage":"socket reset"}}
{"type":"error","reason":"error","error":{"role":"assistant","content":[{"type":"text","text":"部分回答"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"error","timestamp":2000,"errorMessage":"socket reset"}}"#;

#[test]
fn a_played_turn_is_the_guides_json_byte_for_byte() {
    let first = AssistantMessage {
        timestamp: 1000,
        ..assistant_message(
            vec![text("先看").into(), read_call().into()],
            StopReason::ToolUse,
        )
    };
    let (lines, result) = call(&ScriptedModel::new(vec![first.clone().into()]));
    assert_eq!(lines.join("\n"), FIRST_TURN);
    assert_eq!(result, first);
}

#[test]
fn chapter_03s_messages_play_as_chapter_03s_event_sequence() {
    let readme = AssistantMessage {
        usage: Usage {
            input: 18,
            output: 12,
            total_tokens: 30,
        },
        timestamp: 1010,
        ..assistant_message(
            vec![
                text("我先读取项目说明。").into(),
                ToolCall {
                    id: "call_1".to_string(),
                    ..read_call()
                }
                .into(),
            ],
            StopReason::ToolUse,
        )
    };
    let failed = AssistantMessage {
        timestamp: 2000,
        error_message: Some("socket reset".to_string()),
        ..assistant_message(vec![text("部分回答").into()], StopReason::Error)
    };
    let model = ScriptedModel::new(vec![readme.into(), failed.clone().into()]);
    let (mut lines, _) = call(&model);
    let (failed_lines, result) = call(&model);
    lines.extend(failed_lines);
    assert_eq!(lines.join("\n"), CHAPTER_03);
    assert_eq!(
        result, failed,
        "a message that failed ends in `error`, carrying itself"
    );
}

#[test]
fn two_text_blocks_each_get_their_index_and_the_partial_grows() {
    let model = ScriptedModel::new(vec![
        assistant_message(vec![text("A").into(), text("B").into()], StopReason::Stop).into(),
    ]);
    let events = events_of(&model);
    let ModelEvent::TextDelta {
        content_index: 0,
        partial: first,
        ..
    } = &events[1]
    else {
        panic!("the first delta is block 0: {:?}", events[1])
    };
    let ModelEvent::TextDelta {
        content_index: 1,
        partial: second,
        ..
    } = &events[2]
    else {
        panic!("the second delta is block 1: {:?}", events[2])
    };
    let a_and_b: Vec<AssistantContent> = vec![text("A").into(), text("B").into()];
    assert_eq!(first.content, a_and_b[..1]);
    assert_eq!(second.content, a_and_b);
}

#[test]
fn the_cursor_never_wraps_and_every_call_is_recorded() {
    let model = ScriptedModel::new(vec![
        assistant_message(vec![text("唯一").into()], StopReason::Stop).into(),
    ]);
    let (_, first) = call(&model);
    let (_, second) = call(&model);
    let (_, third) = call(&model);
    assert_eq!(first.stop_reason, StopReason::Stop);
    for result in [second, third] {
        assert_eq!(
            result.error_message.as_deref(),
            Some("ScriptedModel 没有更多响应"),
            "past the end the script stays exhausted; it never repeats a turn"
        );
    }
    assert_eq!(model.requests().len(), 3);
}

#[test]
fn a_cancelled_call_still_records_its_request_and_uses_its_turn() {
    let model = ScriptedModel::new(vec![
        assistant_message(vec![text("被跳过").into()], StopReason::Stop).into(),
        assistant_message(vec![text("下一轮").into()], StopReason::Stop).into(),
    ]);
    #[allow(clippy::needless_update)] // chapter 05 gives `AgentContext` more fields
    let asked = AgentContext {
        messages: vec![AgentMessage::User(user_message("取消我"))],
        ..AgentContext::default()
    };
    let (events, result) = play(model.stream(
        &asked,
        StreamOptions {
            signal: Some(Arc::new(AtomicBool::new(true))),
        },
    ));
    assert_eq!(events.len(), 1);
    assert_eq!(result.stop_reason, StopReason::Aborted);
    assert_eq!(result.content, Vec::<AssistantContent>::new());
    assert_eq!(model.requests(), [asked]);

    let (_, next) = call(&model);
    assert_eq!(next.content, [AssistantContent::from(text("下一轮"))]);
}

#[test]
fn each_stop_reason_picks_its_terminal_event() {
    let cases = [
        (StopReason::Stop, r#""type":"done","reason":"stop""#),
        (StopReason::Length, r#""type":"done","reason":"length""#),
        (StopReason::ToolUse, r#""type":"done","reason":"toolUse""#),
        (StopReason::Error, r#""type":"error","reason":"error""#),
        (StopReason::Aborted, r#""type":"error","reason":"aborted""#),
    ];
    for (stop_reason, terminal) in cases {
        let message = assistant_message(vec![text("x").into()], stop_reason);
        let (lines, result) = call(&ScriptedModel::new(vec![message.clone().into()]));
        let last = lines.last().expect("a terminal event");
        assert!(
            last.starts_with(&format!("{{{terminal},")),
            "{stop_reason:?}: {last}"
        );
        assert_eq!(result, message);
    }
}

#[test]
fn an_error_turn_may_have_no_partial_text_and_may_be_aborted() {
    let model = ScriptedModel::new(vec![ScriptedTurn::Error {
        stop_reason: ErrorReason::Aborted,
        error_message: "user pressed Esc".to_string(),
        partial_text: None,
    }]);
    let (lines, result) = call(&model);
    assert_eq!(lines.len(), 2, "start, then error: {lines:?}");
    assert!(lines[1].starts_with(r#"{"type":"error","reason":"aborted","#));
    assert_eq!(result.content, Vec::<AssistantContent>::new());
    assert_eq!(result.stop_reason, StopReason::Aborted);
    assert_eq!(result.error_message.as_deref(), Some("user pressed Esc"));
}

#[test]
fn an_empty_partial_text_is_no_text_block_and_partials_keep_the_final_fields() {
    // As the original's truthiness check: `Some("")` generates nothing.
    let model = ScriptedModel::new(vec![ScriptedTurn::Error {
        stop_reason: ErrorReason::Error,
        error_message: "socket reset".to_string(),
        partial_text: Some(String::new()),
    }]);
    let (lines, result) = call(&model);
    assert_eq!(
        lines.len(),
        2,
        "start, then error, no text_delta: {lines:?}"
    );
    assert_eq!(result.content, Vec::<AssistantContent>::new());
    let events = events_of(&ScriptedModel::new(vec![
        AssistantMessage {
            usage: Usage {
                input: 3,
                output: 4,
                total_tokens: 7,
            },
            error_message: Some("late".to_string()),
            ..assistant_message(vec![text("A").into()], StopReason::Length)
        }
        .into(),
    ]));
    let ModelEvent::Start { partial } = &events[0] else {
        panic!("a call starts with `start`: {:?}", events[0])
    };
    assert_eq!(
        partial.usage.total_tokens, 7,
        "the partial keeps the final usage"
    );
    assert_eq!(partial.error_message.as_deref(), Some("late"));
    assert_eq!(partial.stop_reason, StopReason::Stop);
}

#[test]
fn the_scripts_own_raw_arguments_are_the_delta() {
    let cut_off = ToolCall {
        arguments: json!({}),
        raw_arguments: Some(r#"{"path":"READ"#.to_string()),
        ..read_call()
    };
    let message = assistant_message(vec![cut_off.clone().into()], StopReason::Length);
    let events = events_of(&ScriptedModel::new(vec![message.into()]));
    let ModelEvent::ToolCallDelta { delta, .. } = &events[1] else {
        panic!("a tool call starts with its delta: {:?}", events[1])
    };
    assert_eq!(delta, r#"{"path":"READ"#);
    let ModelEvent::ToolCallEnd { tool_call, .. } = &events[2] else {
        panic!("then ends: {:?}", events[2])
    };
    assert_eq!(*tool_call, cut_off);
}
