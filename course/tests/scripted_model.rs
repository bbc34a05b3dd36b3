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
        Err(RecvTimeoutError::Timeout) => {
            panic!("一秒内流没有结束：每次调用，哪怕失败了，都要以 `done` 或 `error` 结束")
        }
        Err(RecvTimeoutError::Disconnected) => panic!("读流的线程 panic 了"),
    };
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    let result = result.unwrap_or_else(|error| {
        panic!(
            "流在 {kinds:?} 之后结束了，却没有结果（{error}）：每次调用都要以 `done` 或 `error` 结束"
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
        ],
        "一个带工具调用的回合按这个顺序播放事件"
    );

    let ModelEvent::Start { partial } = &events[0] else {
        unreachable!()
    };
    assert_eq!(
        partial.content,
        Vec::<AssistantContent>::new(),
        "start 的 partial 还没有内容"
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
        "partial 里已经包含这一段增量"
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
        "参数还在到达时，工具调用带着原始 JSON 文本，`arguments` 是 `{{}}`"
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
        "写完的工具调用原地替换正在写的那一个"
    );

    let ModelEvent::Done { reason, message } = &events[4] else {
        unreachable!()
    };
    assert_eq!(*reason, DoneReason::ToolUse);
    assert_eq!(*message, first_turn);
    assert_eq!(result, first_turn, "result() 就是脚本里的那条消息");

    let requests = model.requests();
    assert_eq!(requests.len(), 1, "每次调用都记下它的请求");
    assert_eq!(
        requests[0].messages.len(),
        1,
        "调用之后对上下文的修改不能影响已记下的请求"
    );
    assert_eq!(requests[0].messages[0], first_context.messages[0]);

    let second_stream = model.stream(&context(Vec::new()), StreamOptions::default());
    let (_, second_result) = read_all(second_stream);
    assert_eq!(
        text_of(&AgentMessage::Assistant(second_result)),
        "第二轮",
        "第二次调用播放第二个回合"
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
    assert_eq!(
        kinds,
        ["start", "text_delta", "error"],
        "出错的回合先播放已有的部分文字，再以 error 结束"
    );
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(
        text_of(&AgentMessage::Assistant(result.clone())),
        "正在",
        "出错之前的部分文字留在结果里"
    );
    assert_eq!(
        result.error_message.as_deref(),
        Some("rate limited"),
        "结果带着出错原因"
    );
}

#[test]
fn exhausted_script_and_cancelled_signal_both_end_in_error() {
    let exhausted = ScriptedModel::new(Vec::new());
    let (events, result) =
        read_all(exhausted.stream(&context(Vec::new()), StreamOptions::default()));
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(kinds, ["error"], "脚本用完了，就是一个 `error` 事件");
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
    assert_eq!(kinds, ["error"], "已取消的调用什么都不播放");
    assert_eq!(result.stop_reason, StopReason::Aborted);
    assert_eq!(result.error_message.as_deref(), Some("Request was aborted"));
}
