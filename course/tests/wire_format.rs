//! Chapter 03's JSON wire format, byte for byte: what is read from JSON text
//! is written back as the same text, in the chapter's field order.

use course::types::{
    AgentContext, AgentMessage, AssistantContent, AssistantMessage, DoneReason, ErrorReason,
    ModelEvent, Sections, StopReason, SystemMessage, ToolCall, ToolResultMessage, Usage,
    UserMessage, assistant_message, text,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The chapter's README round-trip: user → assistant (text + toolCall) → toolResult.
const README_ROUND_TRIP: &str = concat!(
    r#"[{"role":"user","content":[{"type":"text","text":"请读取 README，然后告诉我项目名。"}],"timestamp":1000},"#,
    r#"{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},"#,
    r#"{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"#,
    r#""provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"#,
    r#""stopReason":"toolUse","timestamp":1010},"#,
    r#"{"role":"toolResult","toolCallId":"call_1","toolName":"read","#,
    r##""content":[{"type":"text","text":"# tiny-pi\nA small agent runtime."}],"isError":false,"timestamp":1020}]"##,
);

fn parse<T: DeserializeOwned>(json: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(json)
}

fn write<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("every message serializes")
}

/// Reads `json` as a `T` and writes it back: the bytes must not change.
fn assert_round_trip<T: Serialize + DeserializeOwned>(json: &str) {
    let value: T = parse(json).unwrap_or_else(|error| panic!("{json}: {error}"));
    assert_eq!(write(&value), json);
}

#[test]
fn the_readme_round_trip_reads_and_writes_back_the_same_bytes() {
    let messages: Vec<AgentMessage> = parse(README_ROUND_TRIP).unwrap();
    let [
        AgentMessage::User(user),
        AgentMessage::Assistant(assistant),
        AgentMessage::ToolResult(result),
    ] = &messages[..]
    else {
        panic!("user → assistant → toolResult, got {messages:?}");
    };
    assert_eq!(user.content, [text("请读取 README，然后告诉我项目名。")]);
    assert_eq!(assistant.stop_reason, StopReason::ToolUse);
    assert_eq!(
        assistant.usage,
        Usage {
            input: 18,
            output: 12,
            total_tokens: 30
        }
    );
    let Some(AssistantContent::ToolCall(call)) = assistant.content.get(1) else {
        panic!("content[1] is the tool call");
    };
    assert_eq!(
        (call.id.as_str(), result.tool_call_id.as_str()),
        ("call_1", "call_1"),
        "the call and its result are paired by id"
    );
    assert_eq!(write(&messages), README_ROUND_TRIP);

    let context = format!(r#"{{"messages":{README_ROUND_TRIP}}}"#);
    assert_round_trip::<AgentContext>(&context);
}

#[test]
fn every_message_writes_its_fields_in_the_chapter_order() {
    for json in [
        r#"{"role":"system","content":"Be brief.","sections":{"rules":"R","scratch":null},"timestamp":1}"#,
        r#"{"role":"system","content":"","timestamp":2}"#,
        r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"timestamp":3}"#,
        r#"{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":1,"output":2,"totalTokens":3},"stopReason":"error","timestamp":4,"errorMessage":"socket reset"}"#,
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{"z":1,"a":[true,null]},"rawArguments":"{\"z\":1,"}],"provider":"p","model":"m","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"length","timestamp":5}"#,
        r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"details":{"zeta":1,"alpha":{"y":2,"b":3}},"isError":true,"timestamp":6}"#,
        r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":7}"#,
    ] {
        assert_round_trip::<AgentMessage>(json);
    }
}

#[test]
fn helpers_write_the_chapter_defaults() {
    let message = AssistantMessage {
        timestamp: 5,
        ..assistant_message(vec![text("hi").into()], StopReason::Stop)
    };
    assert_eq!(
        write(&AgentMessage::Assistant(message)),
        r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":5}"#
    );
    let system = SystemMessage {
        content: String::new(),
        sections: Some(Sections::from([("b", Some("B")), ("a", None)])),
        timestamp: 9,
    };
    assert_eq!(
        write(&system),
        r#"{"content":"","sections":{"b":"B","a":null},"timestamp":9}"#
    );
    let result: ToolResultMessage = ToolResultMessage {
        tool_call_id: "c".into(),
        tool_name: "read".into(),
        content: vec![text("x")],
        details: None,
        is_error: false,
        timestamp: 1,
    };
    assert_eq!(
        write(&result),
        r#"{"toolCallId":"c","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1}"#
    );
    let names: Vec<String> = [
        StopReason::Stop,
        StopReason::Length,
        StopReason::ToolUse,
        StopReason::Error,
        StopReason::Aborted,
    ]
    .iter()
    .map(write)
    .collect();
    assert_eq!(
        names,
        [
            r#""stop""#,
            r#""length""#,
            r#""toolUse""#,
            r#""error""#,
            r#""aborted""#
        ]
    );
}

/// The chapter's event sequence for the README turn, then a failed turn.
const EVENTS: [&str; 6] = [
    r#"{"type":"start","partial":{"role":"assistant","content":[],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"text_delta","contentIndex":0,"delta":"我先读取项目说明。","partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"toolcall_delta","contentIndex":1,"delta":"{\"path\":\"README.md\"}","partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{},"rawArguments":"{\"path\":\"README.md\"}"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}},"partial":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1010}}"#,
    r#"{"type":"done","reason":"toolUse","message":{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"stopReason":"toolUse","timestamp":1010}}"#,
    r#"{"type":"error","reason":"aborted","error":{"role":"assistant","content":[{"type":"text","text":"部分"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"aborted","timestamp":1010,"errorMessage":"user cancelled"}}"#,
];

/// The message so far at `timestamp` 1010, as the scripted model writes it.
fn so_far(content: Vec<AssistantContent>, stop_reason: StopReason) -> AssistantMessage {
    AssistantMessage {
        timestamp: 1_010,
        ..assistant_message(content, stop_reason)
    }
}

#[test]
fn the_readme_turn_streams_as_the_chapter_describes() {
    let said: AssistantContent = text("我先读取项目说明。").into();
    let writing = AssistantContent::ToolCall(ToolCall {
        id: "call_1".into(),
        name: "read".into(),
        arguments: parse("{}").unwrap(),
        raw_arguments: Some(r#"{"path":"README.md"}"#.into()),
    });
    let call = ToolCall {
        id: "call_1".into(),
        name: "read".into(),
        arguments: parse(r#"{"path":"README.md"}"#).unwrap(),
        raw_arguments: None,
    };
    let events = [
        ModelEvent::Start {
            partial: so_far(vec![], StopReason::Stop),
        },
        ModelEvent::TextDelta {
            content_index: 0,
            delta: "我先读取项目说明。".into(),
            partial: so_far(vec![said.clone()], StopReason::Stop),
        },
        ModelEvent::ToolCallDelta {
            content_index: 1,
            delta: r#"{"path":"README.md"}"#.into(),
            partial: so_far(vec![said.clone(), writing], StopReason::Stop),
        },
        ModelEvent::ToolCallEnd {
            content_index: 1,
            tool_call: call.clone(),
            partial: so_far(vec![said.clone(), call.clone().into()], StopReason::Stop),
        },
        ModelEvent::Done {
            reason: DoneReason::ToolUse,
            message: AssistantMessage {
                usage: Usage {
                    input: 18,
                    output: 12,
                    total_tokens: 30,
                },
                ..so_far(vec![said, call.into()], StopReason::ToolUse)
            },
        },
        ModelEvent::Error {
            reason: ErrorReason::Aborted,
            error: AssistantMessage {
                error_message: Some("user cancelled".into()),
                ..so_far(vec![text("部分").into()], StopReason::Aborted)
            },
        },
    ];

    let written: Vec<String> = events.iter().map(write).collect();
    assert_eq!(written, EVENTS);
    for json in EVENTS {
        assert_round_trip::<ModelEvent>(json);
    }
}

#[test]
fn a_terminal_reason_that_differs_from_the_stop_reason_is_refused() {
    let message = |stop_reason: &str| {
        format!(
            r#"{{"role":"assistant","content":[],"provider":"p","model":"m","usage":{{"input":0,"output":0,"totalTokens":0}},"stopReason":"{stop_reason}","timestamp":1}}"#
        )
    };
    for (json, expected) in [
        (
            format!(
                r#"{{"type":"done","reason":"stop","message":{}}}"#,
                message("aborted")
            ),
            r#"the event's reason "stop" differs from its message's stopReason "aborted""#,
        ),
        (
            format!(
                r#"{{"type":"done","reason":"toolUse","message":{}}}"#,
                message("length")
            ),
            r#"the event's reason "toolUse" differs from its message's stopReason "length""#,
        ),
        (
            format!(
                r#"{{"type":"error","reason":"aborted","error":{}}}"#,
                message("error")
            ),
            r#"the event's reason "aborted" differs from its message's stopReason "error""#,
        ),
        (
            format!(
                r#"{{"type":"error","reason":"error","error":{}}}"#,
                message("stop")
            ),
            r#"the event's reason "error" differs from its message's stopReason "stop""#,
        ),
    ] {
        let error = parse::<ModelEvent>(&json).expect_err(&json);
        assert!(error.to_string().contains(expected), "{json}: {error}");
    }
    for (kind, field, reason) in [
        ("done", "message", "stop"),
        ("done", "message", "length"),
        ("done", "message", "toolUse"),
        ("error", "error", "error"),
        ("error", "error", "aborted"),
    ] {
        let json = format!(
            r#"{{"type":"{kind}","reason":"{reason}","{field}":{}}}"#,
            message(reason)
        );
        assert_round_trip::<ModelEvent>(&json);
    }
}

#[test]
fn a_tool_call_without_its_type_tag_is_refused_everywhere() {
    let bad_calls = [
        r#"{"id":"c","name":"n","arguments":{}}"#,
        r#"{"type":"text","id":"c","name":"n","arguments":{}}"#,
        r#"{"type":"tool_call","id":"c","name":"n","arguments":{}}"#,
    ];
    let partial = r#"{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1}"#;
    for call in bad_calls {
        let end = format!(
            r#"{{"type":"toolcall_end","contentIndex":0,"toolCall":{call},"partial":{partial}}}"#
        );
        assert!(parse::<ModelEvent>(&end).is_err(), "{end}");
        let in_content = partial.replace(r#""content":[]"#, &format!(r#""content":[{call}]"#));
        assert!(
            parse::<AssistantMessage>(&in_content).is_err(),
            "{in_content}"
        );
    }
}

#[test]
fn unknown_fields_are_ignored() {
    let json = r#"{"messages":[
        {"role":"user","content":[{"type":"text","text":"hi","cacheControl":"x"}],"timestamp":1,"id":"m1"},
        {"role":"system","content":"S","timestamp":2,"toolsAdded":["read"]}
    ],"metadata":{"tags":[]}}"#;
    let context: AgentContext = parse(json).unwrap();
    assert_eq!(
        write(&context),
        r#"{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1},{"role":"system","content":"S","timestamp":2}]}"#
    );
}

#[test]
fn sections_keep_document_order_and_nulls() {
    let json = r#"{"content":"","sections":{"zeta":"Z","alpha":null,"mid":"M"},"timestamp":3}"#;
    let message: SystemMessage = parse(json).unwrap();
    let sections: Vec<(&str, Option<&str>)> =
        message.sections.iter().flat_map(Sections::iter).collect();
    assert_eq!(
        sections,
        [("zeta", Some("Z")), ("alpha", None), ("mid", Some("M"))]
    );
    assert_eq!(write(&message), json);

    let repeated: Sections = parse(r#"{"a":"1","b":"2","a":"3"}"#).unwrap();
    assert_eq!(
        repeated,
        Sections::from([("a", Some("3")), ("b", Some("2"))]),
        "a repeated name keeps its first place and its last value"
    );
}

#[test]
fn malformed_json_is_an_error_never_a_panic() {
    let cases = [
        ("not json", "expected ident"),
        (r#"[{"role":"user","#, "EOF while parsing"),
        (r#"[{"content":[],"timestamp":1}]"#, "missing field `role`"),
        (
            r#"[{"role":"robot","content":[],"timestamp":1}]"#,
            "unknown variant `robot`",
        ),
        (
            r#"[{"role":"user","content":[{"type":"image","data":""}],"timestamp":1}]"#,
            "unknown variant `image`",
        ),
        (
            r#"[{"role":"user","content":[{"text":"no tag"}],"timestamp":1}]"#,
            "missing field `type`",
        ),
        (
            r#"[{"role":"user","content":[{"type":"toolCall","id":"c","name":"n","arguments":{}}],"timestamp":1}]"#,
            "unknown variant `toolCall`",
        ),
        (
            r#"[{"role":"user","content":[],"timestamp":-1}]"#,
            "invalid value",
        ),
        (
            r#"[{"role":"user","content":[],"timestamp":1.5}]"#,
            "invalid type",
        ),
        (
            r#"[{"role":"toolResult","toolCallId":"c","toolName":"t","content":[],"timestamp":1}]"#,
            "missing field `isError`",
        ),
        (
            r#"[{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n"}],"provider":"p","model":"m","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1}]"#,
            "missing field `arguments`",
        ),
        (
            r#"[{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"pending","timestamp":1}]"#,
            "unknown variant `pending`",
        ),
        (
            r#"[{"role":"system","content":"","sections":{"a":1},"timestamp":1}]"#,
            "section `a` is 1, not a string or null",
        ),
        (
            r#"[{"role":"system","content":"","sections":["a"],"timestamp":1}]"#,
            "invalid type",
        ),
    ];
    for (json, expected) in cases {
        let error = parse::<Vec<AgentMessage>>(json).expect_err(json);
        assert!(error.to_string().contains(expected), "{json}: {error}");
    }
}

#[test]
fn done_and_error_reasons_cannot_hold_a_wrong_value() {
    let message = r#"{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":1}"#;
    for (json, expected) in [
        (
            format!(r#"{{"type":"done","reason":"error","message":{message}}}"#),
            "unknown variant `error`",
        ),
        (
            format!(r#"{{"type":"done","reason":"aborted","message":{message}}}"#),
            "unknown variant `aborted`",
        ),
        (
            format!(r#"{{"type":"error","reason":"stop","error":{message}}}"#),
            "unknown variant `stop`",
        ),
        (
            format!(r#"{{"type":"error","reason":"toolUse","error":{message}}}"#),
            "unknown variant `toolUse`",
        ),
        (
            format!(
                r#"{{"type":"done","reason":"stop","message":{}}}"#,
                message.replace("assistant", "user")
            ),
            "unknown variant `user`",
        ),
        (
            r#"{"type":"toolcall_start","contentIndex":0}"#.to_string(),
            "unknown variant `toolcall_start`",
        ),
    ] {
        let error = parse::<ModelEvent>(&json).expect_err(&json);
        assert!(error.to_string().contains(expected), "{json}: {error}");
    }
    let reasons: Vec<StopReason> = [DoneReason::Stop, DoneReason::Length, DoneReason::ToolUse]
        .into_iter()
        .map(StopReason::from)
        .chain([ErrorReason::Error, ErrorReason::Aborted].map(StopReason::from))
        .collect();
    assert_eq!(
        reasons,
        [
            StopReason::Stop,
            StopReason::Length,
            StopReason::ToolUse,
            StopReason::Error,
            StopReason::Aborted
        ]
    );
}

#[test]
fn a_user_message_is_text_only() {
    let user: UserMessage =
        parse(r#"{"content":[{"type":"text","text":"hi"}],"timestamp":1}"#).unwrap();
    assert_eq!(user.content, [text("hi")]);
    let value: Value = serde_json::to_value(&user).unwrap();
    assert_eq!(value["content"][0]["type"], "text");
}
