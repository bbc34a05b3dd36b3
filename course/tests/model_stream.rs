//! Chapter 03's model events on chapter 02's stream: the terminal mapping,
//! the snapshots the events carry, and a model behind the `ModelStream` trait.

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
    AgentContext, AssistantContent, AssistantMessage, DoneReason, ErrorReason, Model, ModelEvent,
    ModelStream, StopReason, StreamOptions, ToolCall, assistant_message, text,
};
use serde_json::json;

/// The message so far, as the scripted model of the next chapter starts it.
fn message(content: Vec<AssistantContent>, stop_reason: StopReason) -> AssistantMessage {
    AssistantMessage {
        timestamp: 1_010,
        ..assistant_message(content, stop_reason)
    }
}

fn start() -> ModelEvent {
    ModelEvent::Start {
        partial: message(vec![], StopReason::Stop),
    }
}

fn text_delta(so_far: &str, delta: &str) -> ModelEvent {
    ModelEvent::TextDelta {
        content_index: 0,
        delta: delta.into(),
        partial: message(vec![text(so_far).into()], StopReason::Stop),
    }
}

fn read_call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: "read".into(),
        arguments: json!({ "path": "README.md" }),
        raw_arguments: None,
    }
}

fn done(content: Vec<AssistantContent>) -> ModelEvent {
    ModelEvent::Done {
        reason: DoneReason::ToolUse,
        message: message(content, StopReason::ToolUse),
    }
}

fn failed(reason: ErrorReason, why: &str) -> ModelEvent {
    ModelEvent::Error {
        reason,
        error: AssistantMessage {
            error_message: Some(why.into()),
            ..message(vec![], reason.into())
        },
    }
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
fn the_readme_turn_streams_from_another_thread_into_one_final_message() {
    let stream = AssistantMessageEventStream::new();
    let producer = stream.producer();
    let sender = thread::spawn(move || {
        producer.push(start()).unwrap();
        producer
            .push(text_delta("我先读取项目说明。", "我先读取项目说明。"))
            .unwrap();
        producer
            .push(ModelEvent::ToolCallDelta {
                content_index: 1,
                delta: r#"{"path":"README.md"}"#.into(),
                partial: message(vec![text("我先读取项目说明。").into()], StopReason::Stop),
            })
            .unwrap();
        producer
            .push(done(vec![
                text("我先读取项目说明。").into(),
                read_call().into(),
            ]))
            .unwrap();
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
        let done = done(vec![]);
        stream.push(done.clone()).unwrap();
        let late = failed(ErrorReason::Error, "too late");
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
        stream.push(start()).unwrap();
        stream.push(text_delta("a", "a")).unwrap();
        stream
            .push(ModelEvent::ToolCallDelta {
                content_index: 1,
                delta: "{}".into(),
                partial: message(vec![text("a").into()], StopReason::Stop),
            })
            .unwrap();
        stream
            .push(ModelEvent::ToolCallEnd {
                content_index: 1,
                tool_call: read_call(),
                partial: message(vec![text("a").into(), read_call().into()], StopReason::Stop),
            })
            .unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            stream.poll_result(&mut cx).is_pending(),
            "no result before done or error"
        );
        stream.push(failed(ErrorReason::Aborted, "stop")).unwrap();
        assert_eq!(stream.iter().count(), 5);
    });
}

/// A model that answers every call with the same text, or fails once aborted.
struct EchoModel;

impl Model for EchoModel {
    type Stream = AssistantMessageEventStream;

    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        stream.push(start()).unwrap();
        let aborted = options
            .signal
            .is_some_and(|signal| signal.load(Ordering::SeqCst));
        let last = if aborted {
            failed(ErrorReason::Aborted, "aborted")
        } else {
            let said = format!("{} messages", context.messages.len());
            stream.push(text_delta(&said, &said)).unwrap();
            ModelEvent::Done {
                reason: DoneReason::Stop,
                message: message(vec![text(said).into()], StopReason::Stop),
            }
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
    producer.push(start()).unwrap();
    drop(producer);
    let (kinds, result) = read_all(stream);
    assert_eq!(kinds, [r#""start""#], "queued events are still delivered");
    assert_eq!(result, Err(StreamError::ProducerDropped));
}

#[test]
fn end_finishes_the_stream_with_its_message_and_refuses_a_later_done() {
    within(|| {
        let stream = AssistantMessageEventStream::new();
        stream.push(start()).unwrap();
        let ended = message(vec![text("ended early").into()], StopReason::Stop);
        stream.end(ended.clone()).unwrap();
        assert!(stream.push(done(vec![])).is_err(), "no event after end()");
        assert!(stream.end(ended.clone()).is_err(), "no second end()");
        assert_eq!(stream.iter().count(), 1);
        assert_eq!(stream.blocking_result(), Ok(ended));
    });
}
