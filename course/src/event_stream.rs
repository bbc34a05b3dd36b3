//! Chapter 02: one stream that delivers a process and its final fact.
//!
//! A long-running job is watched while it happens (events, one at a time)
//! and recorded once it is over (one result). An [`EventStream`] is both: you
//! iterate it for the events, and [`result`](EventStream::result) resolves to
//! the result. The two functions given to [`EventStream::new`] decide which
//! event ends the stream (`is_complete`) and which result that event stands
//! for (`extract_result`); the terminal event is still delivered.
//!
//! The rules it keeps:
//!
//! * **One fact.** The first terminal event, or [`end`](EventStream::end),
//!   fixes the result. A later push or end is refused: the value comes back
//!   in a [`Refused`], so the caller can tell.
//! * **No lost event, no lost wake-up.** The shared state (queue, outcome,
//!   waiting consumers) sits behind one mutex. A consumer that finds nothing
//!   to read registers its waker under the same lock it used to look, so no
//!   push can slip in between; a push wakes the registered consumers after it
//!   has released the lock.
//! * **No runtime needed.** The async side is plain polling (`poll_next`,
//!   `next().await`, `result().await`), so any executor can drive it; the
//!   blocking side (`iter`, `blocking_result`) is the same futures driven by
//!   [`block_on`].
//! * **No consumer waits forever.** Code on another thread pushes through a
//!   [`Producer`] handle. When the last producer is dropped before the
//!   stream finished, the stream fails with [`StreamError::ProducerDropped`]:
//!   the queued events are still delivered, then iteration stops and
//!   `result()` returns the error.

use std::collections::VecDeque;
use std::fmt;
use std::future::{Future, poll_fn};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::block_on;

/// A queue of events of type `T` that finishes with one result of type `R`.
pub struct EventStream<T, R> {
    shared: Arc<Shared<T, R>>,
}

/// A handle for pushing into an [`EventStream`] from another thread or task.
/// Each clone counts as one more producer; dropping the last one before the
/// stream finished fails it with [`StreamError::ProducerDropped`].
pub struct Producer<T, R> {
    shared: Arc<Shared<T, R>>,
}

/// Why a stream has no result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamError {
    /// Every [`Producer`] was dropped before a terminal event or `end()`.
    ProducerDropped,
}

/// A push or `end()` after the stream finished. The value is handed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused<V>(pub V);

struct Shared<T, R> {
    is_complete: Box<dyn Fn(&T) -> bool + Send + Sync>,
    extract_result: Box<dyn Fn(&T) -> R + Send + Sync>,
    state: Mutex<State<T, R>>,
}

struct State<T, R> {
    /// Pushed and not read yet, oldest first.
    events: VecDeque<T>,
    /// `None` while the stream runs; then its one outcome, for good.
    outcome: Option<Result<R, StreamError>>,
    /// Consumers waiting for the next change.
    wakers: Vec<Waker>,
    /// How many [`Producer`] handles are alive.
    producers: usize,
}

impl<T, R> EventStream<T, R> {
    /// A stream that finishes at the first event for which `is_complete` is
    /// true, with `extract_result` of that event as its result.
    pub fn new(
        is_complete: impl Fn(&T) -> bool + Send + Sync + 'static,
        extract_result: impl Fn(&T) -> R + Send + Sync + 'static,
    ) -> Self {
        let state = State {
            events: VecDeque::new(),
            outcome: None,
            wakers: Vec::new(),
            producers: 0,
        };
        EventStream {
            shared: Arc::new(Shared {
                is_complete: Box::new(is_complete),
                extract_result: Box::new(extract_result),
                state: Mutex::new(state),
            }),
        }
    }

    /// Queues `event` and wakes the waiting consumers. A terminal event
    /// finishes the stream (and is still delivered).
    pub fn push(&self, event: T) -> Result<(), Refused<T>> {
        self.shared.push(event)
    }

    /// Finishes the stream with `result`, unless it has already finished.
    pub fn end(&self, result: R) -> Result<(), Refused<R>> {
        self.shared.end(result)
    }

    /// A new [`Producer`] for this stream.
    pub fn producer(&self) -> Producer<T, R> {
        Producer::new(&self.shared)
    }

    /// The next event if one is queued; `Ready(None)` once the stream has
    /// finished and every event was read; otherwise `Pending`, and the
    /// context's waker is woken by the next change.
    pub fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = self.shared.lock();
        if let Some(event) = state.events.pop_front() {
            return Poll::Ready(Some(event));
        }
        if state.outcome.is_some() {
            return Poll::Ready(None);
        }
        // Still under the lock that saw the queue empty: no push can slip
        // in between the look and the registration.
        state.register(cx.waker());
        Poll::Pending
    }

    /// The next event, asynchronously; `None` at the end of the stream.
    pub fn next(&self) -> impl Future<Output = Option<T>> {
        poll_fn(|cx| self.poll_next(cx))
    }

    /// The events, blocking the current thread while none is queued.
    pub fn iter(&self) -> impl Iterator<Item = T> {
        std::iter::from_fn(|| block_on(self.next()))
    }
}

impl<T, R: Clone> EventStream<T, R> {
    /// The outcome once the stream has finished (even if events are still
    /// unread); otherwise `Pending` until it finishes.
    pub fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<R, StreamError>> {
        let mut state = self.shared.lock();
        match &state.outcome {
            Some(outcome) => Poll::Ready(outcome.clone()),
            None => {
                state.register(cx.waker());
                Poll::Pending
            }
        }
    }

    /// The one result, asynchronously. Every caller gets the same value.
    pub fn result(&self) -> impl Future<Output = Result<R, StreamError>> {
        poll_fn(|cx| self.poll_result(cx))
    }

    /// The one result, blocking the current thread until the stream finished.
    pub fn blocking_result(&self) -> Result<R, StreamError> {
        block_on(self.result())
    }
}

impl<T, R> Producer<T, R> {
    fn new(shared: &Arc<Shared<T, R>>) -> Self {
        shared.lock().producers += 1;
        Producer {
            shared: Arc::clone(shared),
        }
    }

    /// Same as [`EventStream::push`].
    pub fn push(&self, event: T) -> Result<(), Refused<T>> {
        self.shared.push(event)
    }

    /// Same as [`EventStream::end`].
    pub fn end(&self, result: R) -> Result<(), Refused<R>> {
        self.shared.end(result)
    }
}

impl<T, R> Clone for Producer<T, R> {
    fn clone(&self) -> Self {
        Producer::new(&self.shared)
    }
}

impl<T, R> Drop for Producer<T, R> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.producers -= 1;
        if state.producers == 0 && state.outcome.is_none() {
            state.outcome = Some(Err(StreamError::ProducerDropped));
            wake(state);
        }
    }
}

impl<T, R> Shared<T, R> {
    fn lock(&self) -> MutexGuard<'_, State<T, R>> {
        // Nothing under this lock can panic half-way through a change, so
        // even a poisoned lock guards a consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, event: T) -> Result<(), Refused<T>> {
        // The caller's functions run before the lock is taken: if one of
        // them panics, the stream is left as it was.
        let result = (self.is_complete)(&event).then(|| (self.extract_result)(&event));
        let mut state = self.lock();
        if state.outcome.is_some() {
            return Err(Refused(event));
        }
        state.events.push_back(event);
        if let Some(result) = result {
            state.outcome = Some(Ok(result));
        }
        wake(state);
        Ok(())
    }

    fn end(&self, result: R) -> Result<(), Refused<R>> {
        let mut state = self.lock();
        if state.outcome.is_some() {
            return Err(Refused(result));
        }
        state.outcome = Some(Ok(result));
        wake(state);
        Ok(())
    }
}

impl<T, R> State<T, R> {
    /// Remembers `waker` until the next change (each task only once).
    fn register(&mut self, waker: &Waker) {
        if !self.wakers.iter().any(|known| known.will_wake(waker)) {
            self.wakers.push(waker.clone());
        }
    }
}

/// Wakes every registered consumer, after releasing the lock.
fn wake<T, R>(mut state: MutexGuard<'_, State<T, R>>) {
    let wakers = std::mem::take(&mut state.wakers);
    drop(state);
    wakers.into_iter().for_each(Waker::wake);
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("every producer was dropped before the stream finished")
    }
}

impl std::error::Error for StreamError {}

impl<V> fmt::Display for Refused<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the stream has already finished; the value was refused")
    }
}

impl<V: fmt::Debug> std::error::Error for Refused<V> {}
