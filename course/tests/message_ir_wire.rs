//! Chapter 03's wire step (3.3): the chapter's JSON, read and written back.
//!
//! Each test reads JSON text the way the chapter prints it, writes it back
//! with serde_json, and compares the two texts byte for byte: tags (`role`,
//! `type`), camelCase field names, field order and omitted optionals all
//! show up as a difference. This file stands alone, beside the focused test.

use course::types::{AgentMessage, ModelEvent, SystemMessage};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Reads `json` as a `T`, writes it back, and expects the same text.
fn assert_same_text<T: Serialize + DeserializeOwned>(json: &str) {
    let value: T = serde_json::from_str(json)
        .unwrap_or_else(|error| panic!("无法读入本章的 JSON：{error}\n{json}"));
    let written = serde_json::to_string(&value).expect("消息总能写成 JSON");
    assert_eq!(
        written, json,
        "写回的文本（left）和本章的 JSON（right）不一样"
    );
}

/// The chapter's README round trip: user → assistant (text + toolCall) → toolResult.
const README_ROUND_TRIP: [&str; 3] = [
    r#"{"role":"user","content":[{"type":"text","text":"请读取 README，然后告诉我项目名。"}],"timestamp":1000}"#,
    r#"{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"toolUse","timestamp":1010}"#,
    r##"{"role":"toolResult","toolCallId":"call_1","toolName":"read","content":[{"type":"text","text":"# tiny-pi\nA small agent runtime."}],"isError":false,"timestamp":1020}"##,
];

#[test]
fn readme_round_trip_is_written_back_byte_for_byte() {
    for json in README_ROUND_TRIP {
        assert_same_text::<AgentMessage>(json);
    }
    let transcript = format!("[{}]", README_ROUND_TRIP.join(","));
    assert_same_text::<Vec<AgentMessage>>(&transcript);
}

/// The events of the README turn: each `partial` is the final message with
/// only the blocks so far and stop reason `stop` (its usage is already the final one).
const README_EVENTS: [&str; 5] = [
    r#"{"type":"start","partial":{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"text_delta","contentIndex":0,"delta":"我先读取项目说明。","partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"toolcall_delta","contentIndex":1,"delta":"{\"path\":\"README.md\"}","partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{},"rawArguments":"{\"path\":\"README.md\"}"}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}},"partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"done","reason":"toolUse","message":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"toolUse","timestamp":1010}}"#,
];

/// A turn that fails after some text: the last event is `error`; the partials
/// already carry the final message's `errorMessage`.
const FAILED_EVENTS: [&str; 3] = [
    r#"{"type":"start","partial":{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":2000,"errorMessage":"socket reset"}}"#,
    r#"{"type":"text_delta","contentIndex":0,"delta":"部分回答","partial":{"role":"assistant","content":[{"type":"text","text":"部分回答"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":2000,"errorMessage":"socket reset"}}"#,
    r#"{"type":"error","reason":"error","error":{"role":"assistant","content":[{"type":"text","text":"部分回答"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"error","timestamp":2000,"errorMessage":"socket reset"}}"#,
];

#[test]
fn model_events_are_written_back_byte_for_byte() {
    for json in README_EVENTS.iter().chain(&FAILED_EVENTS) {
        assert_same_text::<ModelEvent>(json);
    }
}

#[test]
fn system_messages_keep_their_sections_in_order() {
    for json in [
        r#"{"role":"system","content":"You are Pi.","sections":{"rules":"RULE v1","scratch":"SCRATCH"},"timestamp":10}"#,
        r#"{"role":"system","content":"","sections":{"rules":"RULE v2","scratch":null},"timestamp":20}"#,
        r#"{"role":"system","content":"Prefer small diffs.","timestamp":30}"#,
    ] {
        assert_same_text::<AgentMessage>(json);
    }
    let not_text = r#"{"content":"","sections":{"rules":1},"timestamp":1}"#;
    assert!(
        serde_json::from_str::<SystemMessage>(not_text).is_err(),
        "section 的值只能是字符串或 null，这一行必须读失败：{not_text}"
    );
}

#[test]
fn a_terminal_event_must_agree_with_its_message() {
    let message = |stop_reason: &str| {
        format!(
            r#"{{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{{"input":0,"output":0,"totalTokens":0}},"stopReason":"{stop_reason}","timestamp":1}}"#
        )
    };
    let disagreeing = [
        format!(
            r#"{{"type":"done","reason":"stop","message":{}}}"#,
            message("aborted")
        ),
        format!(
            r#"{{"type":"error","reason":"aborted","error":{}}}"#,
            message("error")
        ),
    ];
    for json in disagreeing {
        assert!(
            serde_json::from_str::<ModelEvent>(&json).is_err(),
            "`reason` 和消息的 `stopReason` 不一致，读入必须失败：{json}"
        );
    }
}

#[test]
fn a_missing_or_wrong_tag_is_an_error() {
    let partial = r#"{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1}"#;
    let untagged_call = r#"{"id":"call_1","name":"read","arguments":{}}"#;
    let bad_events = [
        format!(
            r#"{{"type":"toolcall_end","contentIndex":0,"toolCall":{untagged_call},"partial":{partial}}}"#
        ),
        format!(
            r#"{{"type":"start","partial":{}}}"#,
            partial.replace("assistant", "user")
        ),
    ];
    for json in bad_events {
        assert!(
            serde_json::from_str::<ModelEvent>(&json).is_err(),
            "类型标签缺失或不对，读入必须失败：{json}"
        );
    }
    let untagged_text = r#"{"role":"user","content":[{"text":"hi"}],"timestamp":1}"#;
    assert!(
        serde_json::from_str::<AgentMessage>(untagged_text).is_err(),
        "文本块缺少 `type` 标签，读入必须失败：{untagged_text}"
    );
}
