//! Chapter 03's focused test: one tool round-trip, saved as messages.
//!
//! Steps filter these four tests by name:
//! `text_projection` (step 3.1, 1 test), `system` (step 3.1, 2 tests),
//! and no filter (step 3.2, all 4).

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use course::assistant_stream::AssistantMessageEventStream;
use course::types::{
    AgentMessage, AssistantContent, AssistantMessage, ErrorReason, ModelEvent, Sections,
    StopReason, SystemMessage, ToolCall, assistant_message, current_system_message,
    current_system_prompt, system_message_text, text, text_of, user_message,
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

fn system(content: &str, sections: Option<Sections>, timestamp: u64) -> AgentMessage {
    AgentMessage::System(SystemMessage {
        content: content.to_string(),
        sections,
        timestamp,
    })
}

#[test]
fn text_projection_keeps_only_text_blocks_and_changes_nothing() {
    let message = AgentMessage::Assistant(assistant_message(
        vec![
            text("先读取").into(),
            AssistantContent::ToolCall(ToolCall {
                id: "c1".to_string(),
                name: "read".to_string(),
                arguments: json!({ "path": "README.md" }),
                raw_arguments: None,
            }),
            text("再回答").into(),
        ],
        StopReason::ToolUse,
    ));
    let before = message.clone();

    assert_eq!(
        text_of(&message),
        "先读取\n再回答",
        "只取文本块，用换行连接，工具调用不出现"
    );
    assert_eq!(message, before, "text_of 不能改动消息");
}

#[test]
fn error_event_ends_the_stream_by_itself_and_is_the_result() {
    let failed = AssistantMessage {
        error_message: Some("socket reset".to_string()),
        ..assistant_message(vec![text("部分回答").into()], StopReason::Error)
    };
    let stream = AssistantMessageEventStream::new();
    stream
        .push(ModelEvent::Error {
            reason: ErrorReason::Error,
            error: failed.clone(),
        })
        .expect("第一个事件应当被接受");
    // No end(): the error event alone must finish the stream.

    let (finished, report) = mpsc::channel();
    thread::spawn(move || {
        let kinds: Vec<&str> = stream.iter().map(|event| kind(&event)).collect();
        let _ = finished.send((kinds, stream.blocking_result()));
    });
    let (kinds, result) = report
        .recv_timeout(Duration::from_secs(1))
        .expect("`error` 事件之后一秒内迭代没有结束：`error` 和 `done` 一样，是终态事件");

    assert_eq!(kinds, ["error"], "迭代交付这一个 error 事件后停止");
    let result = result.expect("流应当有结果");
    assert_eq!(
        result.error_message.as_deref(),
        Some("socket reset"),
        "结果保留出错信息"
    );
    assert_eq!(result, failed, "result() 就是 error 事件携带的那条消息");
}

#[test]
fn system_messages_replay_in_order_into_the_current_prompt() {
    let base = system(
        "You are Pi.",
        Some(Sections::from([
            ("rules", Some("RULE v1")),
            ("scratch", Some("SCRATCH")),
        ])),
        10,
    );
    let transcript = vec![
        base.clone(),
        AgentMessage::User(user_message("go")),
        system(
            "",
            Some(Sections::from([
                ("rules", Some("RULE v2")),
                ("scratch", None),
            ])),
            20,
        ),
        AgentMessage::Assistant(assistant_message(vec![text("ok").into()], StopReason::Stop)),
        system("Prefer small diffs.", None, 30),
    ];
    let before = transcript.clone();

    assert_eq!(
        current_system_message(&transcript),
        Some(SystemMessage {
            content: "You are Pi.\n\nPrefer small diffs.".to_string(),
            sections: Some(Sections::from([("rules", Some("RULE v2"))])),
            timestamp: 10,
        }),
        "按顺序重放：content 追加，sections 按名字设置，null 删除，时间戳取第一条"
    );
    assert_eq!(
        current_system_prompt(&transcript).as_deref(),
        Some("You are Pi.\n\nPrefer small diffs.\n\nRULE v2"),
        "系统提示：先 content，再按顺序接上各 section 的文字"
    );
    assert_eq!(transcript, before, "重放不能改动 transcript");

    let AgentMessage::System(base_message) = &base else {
        unreachable!()
    };
    assert_eq!(
        current_system_message(std::slice::from_ref(&base)).as_ref(),
        Some(base_message),
        "只有一条 system 消息时，重放结果就是它本身"
    );
    assert_eq!(
        current_system_message(&transcript[1..2]),
        None,
        "没有 system 消息，就没有当前的 system 消息"
    );
    assert_eq!(
        current_system_prompt(&[]),
        None,
        "空的 transcript 没有系统提示"
    );

    let updated = [
        base.clone(),
        system("", Some(Sections::from([("rules", Some("RULE v2"))])), 40),
    ];
    assert_eq!(
        current_system_prompt(&updated).as_deref(),
        Some("You are Pi.\n\nRULE v2\n\nSCRATCH"),
        "更新过的 section 留在原来的位置"
    );

    let cleared = [
        base,
        system(
            "",
            Some(Sections::from([("rules", None::<&str>), ("scratch", None)])),
            50,
        ),
    ];
    let current = current_system_message(&cleared).expect("这里有 system 消息");
    assert_eq!(
        current.sections, None,
        "删掉所有 section 之后不留 `sections`"
    );
    assert_eq!(
        current.content, "You are Pi.",
        "content 不受删除 section 的影响"
    );
}

#[test]
fn system_message_text_renders_sections_in_order_and_skips_empty_text() {
    let message = SystemMessage {
        content: String::new(),
        sections: Some(Sections::from([
            ("first", Some("A")),
            ("empty", Some("")),
            ("removed", None),
            ("last", Some("B")),
        ])),
        timestamp: 1,
    };
    assert_eq!(
        system_message_text(&message),
        "A\n\nB",
        "section 按顺序渲染，空文字和 null 都跳过"
    );
    assert_eq!(
        text_of(&AgentMessage::System(message.clone())),
        "A\n\nB",
        "system 消息的 text_of 就是 system_message_text"
    );

    let content_only = SystemMessage {
        content: "Read the relevant files first.".to_string(),
        sections: None,
        timestamp: 2,
    };
    assert_eq!(
        system_message_text(&content_only),
        "Read the relevant files first.",
        "只有 content 时，渲染结果就是 content"
    );
    assert_eq!(
        text_of(&AgentMessage::System(content_only)),
        "Read the relevant files first."
    );
}
