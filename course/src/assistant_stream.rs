//! Chapter 03: chapter 02's stream, carrying one model call.
//!
//! [`EventStream<T, R>`](EventStream) was generic; here both parameters get
//! their meaning. The events are [`ModelEvent`]s, the process of generating;
//! the result is the [`AssistantMessage`] that gets saved once it is over.
//! The specialised stream only has to say two things: which events are
//! terminal (`done` and `error`), and which message a terminal event stands
//! for (the one it carries).

use std::ops::Deref;
use std::task::{Context, Poll};

use crate::event_stream::{EventStream, StreamError};
use crate::types::{AssistantMessage, ModelEvent, ModelStream};

/// The stream of one model call. It derefs to the [`EventStream`] it
/// specialises (the chapter's `extends`), so `push`, `producer`, `next`,
/// `iter`, `result` and `blocking_result` work as in chapter 02.
pub struct AssistantMessageEventStream(EventStream<ModelEvent, AssistantMessage>);

impl AssistantMessageEventStream {
    /// An empty stream, waiting for its first event.
    pub fn new() -> Self {
        AssistantMessageEventStream(EventStream::new(is_terminal, final_message))
    }
}

/// `done` and `error` are the two ways a generation ends.
fn is_terminal(event: &ModelEvent) -> bool {
    matches!(event, ModelEvent::Done { .. } | ModelEvent::Error { .. })
}

/// The message a terminal event carries, so the result is what the consumer
/// saw in the event.
fn final_message(event: &ModelEvent) -> AssistantMessage {
    match event {
        ModelEvent::Done { message, .. } => message.clone(),
        ModelEvent::Error { error, .. } => error.clone(),
        _ => unreachable!("only done and error are terminal"),
    }
}

impl Default for AssistantMessageEventStream {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for AssistantMessageEventStream {
    type Target = EventStream<ModelEvent, AssistantMessage>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl ModelStream for AssistantMessageEventStream {
    fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<ModelEvent>> {
        self.0.poll_next(cx)
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<AssistantMessage, StreamError>> {
        self.0.poll_result(cx)
    }
}
