//! Chapter 03's JSON wire format: exactly the chapter's shapes, in both directions.

use course::types::{
    AgentContext, AgentMessage, AssistantMessage, DoneReason, ErrorReason, MessageDraft,
    ModelEvent, Sections, StopReason, SystemMessage, ToolResultMessage, assistant_message, text,
};
use serde_json::{Value, json};

/// The chapter's README round-trip: user → assistant (text + toolCall) → toolResult.
const TRANSCRIPT: &str = r##"[
  {"role":"user","content":[{"type":"text","text":"请读取 README，然后告诉我项目名。"}],"timestamp":1000},
  {"role":"assistant",
   "content":[{"type":"text","text":"我先读取项目说明。"},
              {"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],
   "provider":"scripted","model":"scripted-v1",
   "usage":{"input":18,"output":12,"totalTokens":30},
   "stopReason":"toolUse","timestamp":1010},
  {"role":"toolResult","toolCallId":"call_1","toolName":"read",
   "content":[{"type":"text","text":"# tiny-pi\nA small agent runtime."}],
   "isError":false,"timestamp":1020}
]"##;

fn parse<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(json)
}

#[test]
fn the_chapter_transcript_round_trips_to_an_equal_value() {
    let messages: Vec<AgentMessage> = parse(TRANSCRIPT).unwrap();
    assert_eq!(messages.len(), 3);
    let AgentMessage::Assistant(assistant) = &messages[1] else {
        panic!("second message is the assistant's: {:?}", messages[1]);
    };
    assert_eq!(assistant.stop_reason, StopReason::ToolUse);
    assert_eq!(assistant.usage.total_tokens, 30);
    let AgentMessage::ToolResult(result) = &messages[2] else {
        panic!("third message is the tool result");
    };
    assert_eq!(result.tool_call_id, "call_1");

    let written = serde_json::to_value(&messages).unwrap();
    let original: Value = parse(TRANSCRIPT).unwrap();
    assert_eq!(written, original);
}

#[test]
fn fields_are_camel_case_and_absent_optionals_are_omitted() {
    let message = AgentMessage::Assistant(AssistantMessage {
        timestamp: 5,
        ..assistant_message(vec![text("hi").into()], StopReason::Stop)
    });
    let written = serde_json::to_string(&message).unwrap();
    assert_eq!(
        written,
        r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"scripted","model":"scripted-v1","usage":{"input":0,"output":0,"totalTokens":0},"stopReason":"stop","timestamp":5}"#
    );
    assert!(!written.contains("null"));
}

#[test]
fn every_role_and_stop_reason_has_its_wire_name() {
    let system = AgentMessage::System(SystemMessage {
        content: "Be brief.".into(),
        sections: None,
        timestamp: 1,
    });
    assert_eq!(
        serde_json::to_value(&system).unwrap(),
        json!({"role": "system", "content": "Be brief.", "timestamp": 1})
    );
    let result = AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: "c".into(),
        tool_name: "read".into(),
        content: vec![text("x")],
        details: Some(json!({"bytes": 1})),
        is_error: true,
        timestamp: 2,
    });
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"role": "toolResult", "toolCallId": "c", "toolName": "read",
               "content": [{"type": "text", "text": "x"}], "details": {"bytes": 1},
               "isError": true, "timestamp": 2})
    );
    let names: Vec<Value> = [
        StopReason::Stop,
        StopReason::Length,
        StopReason::ToolUse,
        StopReason::Error,
        StopReason::Aborted,
    ]
    .iter()
    .map(|reason| serde_json::to_value(reason).unwrap())
    .collect();
    assert_eq!(
        names,
        [
            json!("stop"),
            json!("length"),
            json!("toolUse"),
            json!("error"),
            json!("aborted")
        ]
    );
}

#[test]
fn every_model_event_has_the_chapter_shape() {
    let mut draft = MessageDraft::new(AssistantMessage {
        timestamp: 7,
        ..assistant_message(vec![], StopReason::Stop)
    });
    let start = draft.start();
    let text_delta = draft.text_delta(0, "我先读取项目说明。").unwrap();
    let tool_delta = draft
        .tool_call_delta(1, "call_1", "read", r#"{"path":"README.md"}"#)
        .unwrap();
    let tool_end = draft
        .tool_call_end(1, json!({"path": "README.md"}))
        .unwrap();
    let done = draft.finish(DoneReason::ToolUse);

    let header = json!({"role": "assistant", "provider": "scripted", "model": "scripted-v1",
        "usage": {"input": 0, "output": 0, "totalTokens": 0}, "stopReason": "stop", "timestamp": 7});
    let with = |content: Value, stop: &str| {
        let mut message = header.clone();
        message["content"] = content;
        message["stopReason"] = json!(stop);
        message
    };
    let said = json!({"type": "text", "text": "我先读取项目说明。"});

    assert_eq!(
        serde_json::to_value(&start).unwrap(),
        json!({"type": "start", "partial": with(json!([]), "stop")})
    );
    assert_eq!(
        serde_json::to_value(&text_delta).unwrap(),
        json!({"type": "text_delta", "contentIndex": 0, "delta": "我先读取项目说明。",
               "partial": with(json!([said]), "stop")})
    );
    assert_eq!(
        serde_json::to_value(&tool_delta).unwrap(),
        json!({"type": "toolcall_delta", "contentIndex": 1, "delta": "{\"path\":\"README.md\"}",
               "partial": with(json!([said, {"type": "toolCall", "id": "call_1", "name": "read",
                   "arguments": {}, "rawArguments": "{\"path\":\"README.md\"}"}]), "stop")})
    );
    let call = json!({"type": "toolCall", "id": "call_1", "name": "read",
        "arguments": {"path": "README.md"}, "rawArguments": "{\"path\":\"README.md\"}"});
    let mut bare_call = call.clone();
    bare_call.as_object_mut().unwrap().remove("type");
    assert_eq!(
        serde_json::to_value(&tool_end).unwrap(),
        json!({"type": "toolcall_end", "contentIndex": 1, "toolCall": bare_call,
               "partial": with(json!([said, call]), "stop")})
    );
    assert_eq!(
        serde_json::to_value(&done).unwrap(),
        json!({"type": "done", "reason": "toolUse", "message": with(json!([said, call]), "toolUse")})
    );

    let failed = MessageDraft::new(assistant_message(vec![], StopReason::Stop))
        .fail(ErrorReason::Aborted, "user cancelled");
    let written = serde_json::to_value(&failed).unwrap();
    assert_eq!(written["type"], "error");
    assert_eq!(written["reason"], "aborted");
    assert_eq!(written["error"]["role"], "assistant");
    assert_eq!(written["error"]["stopReason"], "aborted");
    assert_eq!(written["error"]["errorMessage"], "user cancelled");

    for event in [start, text_delta, tool_delta, tool_end, done, failed] {
        let json = serde_json::to_string(&event).unwrap();
        let back: ModelEvent = parse(&json).unwrap();
        assert_eq!(back, event, "{json}");
    }
}

#[test]
fn sections_keep_document_order_through_serde() {
    let json = r#"{"content":"","sections":{"zeta":"Z","alpha":null,"mid":"M"},"timestamp":3}"#;
    let message: SystemMessage = parse(json).unwrap();
    let names: Vec<&str> = message
        .sections
        .as_ref()
        .unwrap()
        .iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names, ["zeta", "alpha", "mid"]);
    assert_eq!(
        message.sections.as_ref().unwrap().get("alpha"),
        Some(None),
        "null is kept as a deletion"
    );
    assert_eq!(serde_json::to_string(&message).unwrap(), json);
}

#[test]
fn sections_update_in_place_and_re_added_names_go_last() {
    let mut sections = Sections::from([("a", Some("1")), ("b", Some("2")), ("c", Some("3"))]);
    assert_eq!(
        sections.insert("a", Some("1'".into())),
        Some(Some("1".into()))
    );
    assert_eq!(sections.remove("b"), Some(Some("2".into())));
    assert_eq!(sections.insert("b", Some("2'".into())), None);
    let order: Vec<(&str, Option<&str>)> = sections.iter().collect();
    assert_eq!(
        order,
        [("a", Some("1'")), ("c", Some("3")), ("b", Some("2'"))]
    );
    assert_eq!(sections.remove("missing"), None);
    assert_eq!(sections.len(), 3);
}

#[test]
fn duplicate_section_names_keep_the_first_position_and_the_last_value() {
    let sections: Sections = parse(r#"{"a":"1","b":"2","a":"3"}"#).unwrap();
    let order: Vec<(&str, Option<&str>)> = sections.iter().collect();
    assert_eq!(order, [("a", Some("3")), ("b", Some("2"))]);
}

#[test]
fn unknown_fields_are_ignored() {
    let json = r#"{"messages":[
        {"role":"user","content":[{"type":"text","text":"hi","cacheControl":"x"}],"timestamp":1,"id":"m1"},
        {"role":"system","content":"S","timestamp":2,"toolsAdded":["read"]}
    ],"tools":[]}"#;
    let context: AgentContext = parse(json).unwrap();
    assert_eq!(context.messages.len(), 2);
}

#[test]
fn malformed_transcripts_are_errors_not_panics() {
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
            "invalid type",
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
fn invalid_done_and_error_reasons_cannot_be_built() {
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
    // In code, the reason types only hold their own values.
    assert_eq!(StopReason::from(DoneReason::ToolUse), StopReason::ToolUse);
    assert_eq!(StopReason::from(ErrorReason::Aborted), StopReason::Aborted);
}
