//! Chapter 04: a scripted model that plays its turns through chapter 03's stream.
//!
//! A [`ScriptedModel`] is a *test double*: it stands in for a real model and
//! keeps the real [`Model`] interface, so code above it never asks whether
//! the model is fake. Its script is an *executable specification*: the turns
//! it will answer with are written down before the run, so every run gives
//! the same trace.
//!
//! Three small ideas make it:
//!
//! * **The cursor** is an index into the turns. Each call takes the turn
//!   under it and moves it on by one; past the end, the script is exhausted.
//! * **Requests are snapshots.** Each call copies the context it was given
//!   into [`requests`](ScriptedModel::requests), so a later change to the
//!   caller's context never shows there. (Rust makes this the only choice:
//!   `stream` only borrows the context, and a borrow cannot be kept.)
//! * **Two timelines.** `stream` itself only does the synchronous part:
//!   create the stream, record the request, take the turn, hand the stream
//!   back. Producing events happens on a second timeline: a thread holding
//!   a [`Producer`](crate::event_stream::Producer) (chapter 02). It checks
//!   the signal and the turn, projects the turn's message into events, and
//!   ends with `done` or `error`.
//!
//! The chapter's TypeScript gets its second timeline from `queueMicrotask`.
//! Rust has no microtask queue; a thread is the honest equivalent. Unlike the
//! microtask it may start before the caller holds the stream — harmless,
//! since the stream queues events until they are read. What matters is kept:
//! `stream` never fails and never waits, and every outcome, even an
//! exhausted script, arrives as an event the caller can read. If the
//! producer thread panicked, dropping its `Producer` would still end the
//! stream, so no consumer waits forever.

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::thread;

use serde_json::json;

use crate::assistant_stream::AssistantMessageEventStream;
use crate::types::{
    AgentContext, AssistantContent, AssistantMessage, DoneReason, ErrorReason, Model, ModelEvent,
    StopReason, StreamOptions, ToolCall, assistant_message, text,
};

/// The error message of a call made after the last turn was played.
const EXHAUSTED: &str = "ScriptedModel 没有更多响应";

/// The error message of a call whose signal was already set.
const ABORTED: &str = "Request was aborted";

/// What one call of the model will end with.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedTurn {
    /// A final message, played block by block and then as `done` (or as
    /// `error`, if its stop reason says it failed).
    Message(AssistantMessage),
    /// A call that fails, after generating `partial_text` if there is some.
    Error {
        stop_reason: ErrorReason,
        error_message: String,
        partial_text: Option<String>,
    },
}

/// A model whose answers are written down in advance, one turn per call.
pub struct ScriptedModel {
    turns: Vec<ScriptedTurn>,
    /// The index of the turn the next call plays.
    cursor: Cell<usize>,
    /// The context of every call, copied when the call was made.
    requests: RefCell<Vec<AgentContext>>,
}

impl ScriptedModel {
    /// A model that answers its calls with `turns`, in order.
    pub fn new(turns: Vec<ScriptedTurn>) -> Self {
        ScriptedModel {
            turns,
            cursor: Cell::new(0),
            requests: RefCell::new(Vec::new()),
        }
    }

    /// The context of each call so far, as it was at the time of the call.
    pub fn requests(&self) -> Vec<AgentContext> {
        self.requests.borrow().clone()
    }

    /// The turn under the cursor (`None` once the script is exhausted); the
    /// cursor moves on either way, like `turns[cursor++]`.
    fn next_turn(&self) -> Option<ScriptedTurn> {
        let index = self.cursor.replace(self.cursor.get() + 1);
        self.turns.get(index).cloned()
    }
}

impl Model for ScriptedModel {
    type Stream = AssistantMessageEventStream;

    /// The synchronous part of a call: snapshot the request, take the turn,
    /// start the producer and return the stream. Nothing here can fail.
    fn stream(&self, context: &AgentContext, options: StreamOptions) -> Self::Stream {
        let stream = AssistantMessageEventStream::new();
        self.requests.borrow_mut().push(context.clone());
        let turn = self.next_turn();
        let producer = stream.producer();
        thread::spawn(move || {
            for event in events(turn, &options) {
                // Refused only if the caller already ended the stream.
                let _ = producer.push(event);
            }
        });
        stream
    }
}

/// The producer's timeline: what one call plays, in order. A set signal and
/// an exhausted script are checked first and give one `error` event, without
/// `start`; a turn is projected into its events.
fn events(turn: Option<ScriptedTurn>, options: &StreamOptions) -> Vec<ModelEvent> {
    let signal = options.signal.as_ref();
    if signal.is_some_and(|signal| signal.load(Ordering::SeqCst)) {
        return vec![terminal(failed(ErrorReason::Aborted, ABORTED, Vec::new()))];
    }
    match turn {
        None => vec![terminal(failed(ErrorReason::Error, EXHAUSTED, Vec::new()))],
        Some(turn) => project(turn.into_message()),
    }
}

/// A message that failed for `reason` after generating `content`.
fn failed(
    reason: ErrorReason,
    error_message: impl Into<String>,
    content: Vec<AssistantContent>,
) -> AssistantMessage {
    AssistantMessage {
        error_message: Some(error_message.into()),
        ..assistant_message(content, reason.into())
    }
}

/// Projects a final message into the chapter 03 protocol: `start` with an
/// empty partial, then per block `text_delta` (the whole text), or
/// `toolcall_delta` (the arguments as raw JSON text, `arguments` still `{}`)
/// and `toolcall_end`, then the terminal event carrying the message itself.
///
/// Each `partial` is a copy of the message after its event: the final
/// message with only the blocks so far, in place, and stop reason `stop`.
/// Every other field (provider, model, usage, error message, timestamp) is
/// already the final message's; the terminal event tells how it really ended.
fn project(message: AssistantMessage) -> Vec<ModelEvent> {
    let mut partial = AssistantMessage {
        content: Vec::new(),
        stop_reason: StopReason::Stop,
        ..message.clone()
    };
    let mut events = vec![ModelEvent::Start {
        partial: partial.clone(),
    }];
    for (content_index, block) in message.content.iter().enumerate() {
        match block {
            AssistantContent::Text(block) => {
                partial.content.push(block.clone().into());
                events.push(ModelEvent::TextDelta {
                    content_index,
                    delta: block.text.clone(),
                    partial: partial.clone(),
                });
            }
            AssistantContent::ToolCall(call) => {
                let raw = call
                    .raw_arguments
                    .clone()
                    .unwrap_or_else(|| call.arguments.to_string());
                let started = ToolCall {
                    arguments: json!({}),
                    raw_arguments: Some(raw.clone()),
                    ..call.clone()
                };
                partial.content.push(started.into());
                events.push(ModelEvent::ToolCallDelta {
                    content_index,
                    delta: raw,
                    partial: partial.clone(),
                });
                partial.content[content_index] = block.clone();
                events.push(ModelEvent::ToolCallEnd {
                    content_index,
                    tool_call: call.clone(),
                    partial: partial.clone(),
                });
            }
        }
    }
    events.push(terminal(message));
    events
}

/// `done` for a message that ended normally, `error` for one that failed;
/// either way the event carries the message, which becomes the result.
fn terminal(message: AssistantMessage) -> ModelEvent {
    let ended = match message.stop_reason {
        StopReason::Stop => Ok(DoneReason::Stop),
        StopReason::Length => Ok(DoneReason::Length),
        StopReason::ToolUse => Ok(DoneReason::ToolUse),
        StopReason::Error => Err(ErrorReason::Error),
        StopReason::Aborted => Err(ErrorReason::Aborted),
    };
    match ended {
        Ok(reason) => ModelEvent::Done { reason, message },
        Err(reason) => ModelEvent::Error {
            reason,
            error: message,
        },
    }
}

impl ScriptedTurn {
    /// The final message of this turn. An error turn becomes a failed
    /// message holding its partial text, if there is some (an empty text is
    /// none: no empty text block).
    fn into_message(self) -> AssistantMessage {
        match self {
            ScriptedTurn::Message(message) => message,
            ScriptedTurn::Error {
                stop_reason,
                error_message,
                partial_text,
            } => {
                let content = partial_text
                    .into_iter()
                    .filter(|t| !t.is_empty())
                    .map(|t| text(t).into());
                failed(stop_reason, error_message, content.collect())
            }
        }
    }
}

impl From<AssistantMessage> for ScriptedTurn {
    fn from(message: AssistantMessage) -> Self {
        ScriptedTurn::Message(message)
    }
}
