//! Chapter 03: chapter 02's stream, carrying one model call.
//!
//! [`EventStream<T, R>`](EventStream) gets its meaning: the events are
//! [`ModelEvent`]s, the result is the [`AssistantMessage`] that gets saved.
//! This stream only says which events are terminal (`done` and `error`) and
//! which message a terminal event stands for (the one it carries).

use std::future::Future;
use std::task::{Context, Poll};

use crate::event_stream::{EventStream, Producer, Refused, StreamError};
use crate::types::{AssistantMessage, ModelEvent, ModelStream};

/// The stream of one model call. Each method hands the call on to the
/// chapter 02 stream inside, so they work as they did there.
pub struct AssistantMessageEventStream {
    inner: EventStream<ModelEvent, AssistantMessage>,
}

// A refused event or message is handed back whole, as in chapter 02.
#[allow(clippy::result_large_err)]
impl AssistantMessageEventStream {
    /// An empty stream, waiting for its first event.
    pub fn new() -> Self {
        AssistantMessageEventStream {
            inner: EventStream::new(is_terminal, final_message),
        }
    }

    /// Queues `event`; `done` or `error` finishes the stream.
    pub fn push(&self, event: ModelEvent) -> Result<(), Refused<ModelEvent>> {
        self.inner.push(event)
    }

    /// Finishes the stream with `message`, unless it has already finished.
    pub fn end(&self, message: AssistantMessage) -> Result<(), Refused<AssistantMessage>> {
        self.inner.end(message)
    }

    /// A handle for pushing from another thread.
    pub fn producer(&self) -> Producer<ModelEvent, AssistantMessage> {
        self.inner.producer()
    }

    /// The next event, asynchronously; `None` at the end of the stream.
    pub fn next(&self) -> impl Future<Output = Option<ModelEvent>> {
        self.inner.next()
    }

    /// The events, blocking the current thread while none is queued.
    pub fn iter(&self) -> impl Iterator<Item = ModelEvent> {
        self.inner.iter()
    }

    /// The final message, asynchronously.
    pub fn result(&self) -> impl Future<Output = Result<AssistantMessage, StreamError>> {
        self.inner.result()
    }

    /// The final message, blocking the current thread until it is there.
    pub fn blocking_result(&self) -> Result<AssistantMessage, StreamError> {
        self.inner.blocking_result()
    }
}

impl Default for AssistantMessageEventStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelStream for AssistantMessageEventStream {
    fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<ModelEvent>> {
        self.inner.poll_next(cx)
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<AssistantMessage, StreamError>> {
        self.inner.poll_result(cx)
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
