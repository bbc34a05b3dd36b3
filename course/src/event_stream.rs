//! Chapter 02: one object that is both the process and the final fact.
//!
//! An [`EventStream`] delivers events one by one (the process) and resolves
//! [`result`](EventStream::result) once (the fact). It is built from two
//! functions: `is_complete` recognises the terminal event and `extract_result`
//! turns that event into the result. The terminal event itself is still
//! delivered to the consumer.
//!
//! # Design
//!
//! * **Runtime-agnostic.** All state sits behind one [`Mutex`]. Async consumers
//!   register a [`Waker`]; blocking consumers wait on a [`Condvar`]. A push
//!   wakes whoever is waiting. A waiter registers itself and re-checks the
//!   state under the same lock, and wakers are woken after the lock is
//!   released, so no event and no wake-up is ever lost.
//! * **Cheap per event.** The consumer takes the whole queue in one swap and
//!   then reads from its own buffer; a push only makes a wake-up system call
//!   when someone is actually waiting; a consumer that finds nothing looks
//!   again for a few microseconds before it sleeps or registers its waker,
//!   since the next event usually arrives that soon; and what the producer
//!   and the consumer write lives on separate cache lines.
//! * **One fact.** Once a terminal event or [`end`](EventStream::end) finished
//!   the stream, every later push or end is refused and handed back in a
//!   [`Refused`], so the caller can tell.
//! * **No consumer waits forever.** A producer on another thread takes a
//!   [`Producer`] handle. When the last handle is dropped before the stream
//!   finished, the stream ends with [`StreamError::ProducerDropped`]: queued
//!   events are still delivered, then iteration stops and `result()` returns
//!   the error. A sender that vanished never looks like a clean finish.
//!
//! Chapter 03 gives the two type parameters their meaning:
//! [`AssistantMessageEventStream`] carries [`ModelEvent`]s and resolves the
//! final [`AssistantMessage`].

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;

use crate::types::{AssistantMessage, ModelEvent, ModelStream};

/// How long a consumer that found nothing looks again before it sleeps:
/// busy spins, then the last 8 rounds yield; a few microseconds in all.
const SPIN_ROUNDS: u32 = 72;

/// A refill smaller than this means the consumer keeps up with the producer…
const SMALL_BATCH: usize = 32;
/// …so it pauses this many spin hints (a couple of microseconds) before the next.
const BATCH_PAUSE: u32 = 64;

/// When the last refill was small, the producer is barely ahead: give it a
/// moment to queue more, instead of fighting it for the lock on every event.
fn pause_if_keeping_up(last_refill: usize) {
    if last_refill < SMALL_BATCH {
        for _ in 0..BATCH_PAUSE {
            std::hint::spin_loop();
        }
    }
}

type IsComplete<T> = Box<dyn Fn(&T) -> bool + Send + Sync>;
type ExtractResult<T, R> = Box<dyn Fn(&T) -> R + Send + Sync>;

/// A queue of events of type `T` that finishes with one result of type `R`.
pub struct EventStream<T, R> {
    shared: Arc<Shared<T, R>>,
}

/// A handle for pushing into an [`EventStream`] from elsewhere, e.g. another
/// thread. Cloning it adds a producer; when the last one is dropped before the
/// stream finished, the stream fails with [`StreamError::ProducerDropped`].
pub struct Producer<T, R> {
    shared: Arc<Shared<T, R>>,
}

/// Why a stream could not produce its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamError {
    /// Every [`Producer`] was dropped before a terminal event or `end()`.
    ProducerDropped,
}

/// A push or end that the stream did not accept; the value is handed back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused<V> {
    /// The event or result that was not accepted.
    pub value: V,
    /// Why it was not accepted.
    pub reason: RefusedReason,
}

/// Why a [`Refused`] value was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedReason {
    /// The stream already finished (terminal event, `end()`, or all producers gone).
    Finished,
    /// The consuming [`EventStream`] was dropped; nobody would read the value.
    ConsumerGone,
}

struct Shared<T, R> {
    is_complete: IsComplete<T>,
    extract_result: ExtractResult<T, R>,
    state: Padded<Mutex<State<T, R>>>,
    /// Events already moved out of `state` for the consumer, oldest first.
    /// Only consumers lock it (before `state`, never after).
    taken: Padded<Mutex<VecDeque<T>>>,
    changed: Condvar,
    /// Counts state changes, so a spinning consumer can see one without the lock.
    changes: Padded<AtomicUsize>,
    /// How many events the async consumer's last refill brought.
    last_refill: AtomicUsize,
}

/// Keeps what the producer writes and what the consumer writes on separate
/// cache lines, so neither slows the other down by sharing one.
#[repr(align(128))]
struct Padded<V>(V);

impl<V> Deref for Padded<V> {
    type Target = V;

    fn deref(&self) -> &V {
        &self.0
    }
}

struct State<T, R> {
    events: VecDeque<T>,
    outcome: Outcome<R>,
    wakers: Vec<Waker>,
    /// Threads waiting on `changed`; a push signals it only when this is non-zero.
    blocked: usize,
    producers: usize,
    consumer_gone: bool,
}

enum Outcome<R> {
    Running,
    Finished(R),
    Failed(StreamError),
}

impl<T, R> EventStream<T, R> {
    /// Creates a stream that finishes at the first event for which
    /// `is_complete` is true, with `extract_result` of that event as result.
    pub fn new(
        is_complete: impl Fn(&T) -> bool + Send + Sync + 'static,
        extract_result: impl Fn(&T) -> R + Send + Sync + 'static,
    ) -> Self {
        let shared = Shared {
            is_complete: Box::new(is_complete),
            extract_result: Box::new(extract_result),
            state: Padded(Mutex::new(State {
                events: VecDeque::new(),
                outcome: Outcome::Running,
                wakers: Vec::new(),
                blocked: 0,
                producers: 0,
                consumer_gone: false,
            })),
            taken: Padded(Mutex::new(VecDeque::new())),
            changed: Condvar::new(),
            changes: Padded(AtomicUsize::new(0)),
            last_refill: AtomicUsize::new(SMALL_BATCH),
        };
        EventStream {
            shared: Arc::new(shared),
        }
    }

    /// Queues an event and wakes any waiting consumer. A terminal event
    /// finishes the stream. Refused once the stream has finished.
    pub fn push(&self, event: T) -> Result<(), Refused<T>> {
        self.shared.push(event)
    }

    /// Finishes the stream with `result`, unless it already finished (then the
    /// result is refused and the first fact stands).
    pub fn end(&self, result: R) -> Result<(), Refused<R>> {
        self.shared.end(result)
    }

    /// A handle for pushing from another thread or task. See [`Producer`].
    pub fn producer(&self) -> Producer<T, R> {
        self.shared.lock().producers += 1;
        Producer {
            shared: Arc::clone(&self.shared),
        }
    }

    /// True once the stream has finished; queued events may still be unread.
    pub fn is_finished(&self) -> bool {
        !matches!(self.shared.lock().outcome, Outcome::Running)
    }

    /// Polls for the next event: `Ready(None)` once the stream finished and
    /// every queued event was delivered.
    pub fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut taken = self.shared.taken();
        if let Some(event) = taken.pop_front() {
            return Poll::Ready(Some(event));
        }
        pause_if_keeping_up(self.shared.last_refill.load(Ordering::Relaxed));
        let mut spun = false;
        loop {
            let mut state = self.shared.lock();
            if !state.events.is_empty() {
                std::mem::swap(&mut state.events, &mut *taken);
                drop(state);
                self.shared
                    .last_refill
                    .store(taken.len(), Ordering::Relaxed);
                return Poll::Ready(taken.pop_front());
            }
            if !state.is_running() {
                return Poll::Ready(None);
            }
            if spun {
                state.register(cx.waker());
                return Poll::Pending;
            }
            // A waker costs the producer a wake-up per event; the next event
            // usually arrives within microseconds, so look once more first.
            let seen = self.shared.changes.load(Ordering::Acquire);
            drop(state);
            self.shared.spin_until_changed(seen);
            spun = true;
        }
    }

    /// The next event, asynchronously; `None` once the stream is drained and finished.
    pub fn next(&self) -> Next<'_, T, R> {
        Next { stream: self }
    }

    /// The next event, blocking the current thread while none is queued.
    pub fn blocking_next(&self) -> Option<T> {
        if let Some(event) = self.shared.taken().pop_front() {
            return Some(event);
        }
        let mut batch = VecDeque::new();
        if !self.shared.next_batch(&mut batch) {
            return None;
        }
        let first = batch.pop_front();
        self.shared.give_back(batch);
        first
    }

    /// A blocking iterator over the events; `for event in &stream` does the same.
    /// It reads a whole batch per lock; events it holds when dropped go back
    /// to the stream.
    pub fn iter(&self) -> Iter<'_, T, R> {
        Iter {
            stream: self,
            batch: VecDeque::new(),
            last_batch: SMALL_BATCH,
        }
    }
}

impl<T, R: Clone> EventStream<T, R> {
    /// Polls for the result; ready as soon as the stream finished.
    pub fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<R, StreamError>> {
        let mut state = self.shared.lock();
        match state.settled() {
            Some(result) => Poll::Ready(result),
            None => {
                state.register(cx.waker());
                Poll::Pending
            }
        }
    }

    /// The one result, asynchronously. Every caller gets the same value.
    pub fn result(&self) -> ResultOf<'_, T, R> {
        ResultOf { stream: self }
    }

    /// The one result, blocking the current thread until the stream finished.
    pub fn blocking_result(&self) -> Result<R, StreamError> {
        let mut state = self.shared.lock();
        loop {
            if let Some(result) = state.settled() {
                return result;
            }
            state = self.shared.wait(state);
        }
    }
}

impl<T, R> Drop for EventStream<T, R> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.consumer_gone = true;
        state.events.clear();
        drop(state);
        self.shared.taken().clear();
    }
}

impl<T, R> fmt::Debug for EventStream<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let taken = self.shared.taken().len();
        let state = self.shared.lock();
        f.debug_struct("EventStream")
            .field("queued", &(state.events.len() + taken))
            .field("finished", &!state.is_running())
            .field("producers", &state.producers)
            .finish()
    }
}

impl<T, R> Producer<T, R> {
    /// Same as [`EventStream::push`].
    pub fn push(&self, event: T) -> Result<(), Refused<T>> {
        self.shared.push(event)
    }

    /// Same as [`EventStream::end`].
    pub fn end(&self, result: R) -> Result<(), Refused<R>> {
        self.shared.end(result)
    }

    /// True once the stream has finished or its consumer is gone: stop producing.
    pub fn is_closed(&self) -> bool {
        let state = self.shared.lock();
        !state.is_running() || state.consumer_gone
    }
}

impl<T, R> Clone for Producer<T, R> {
    fn clone(&self) -> Self {
        self.shared.lock().producers += 1;
        Producer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T, R> Drop for Producer<T, R> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.producers -= 1;
        if state.producers == 0 && state.is_running() {
            state.outcome = Outcome::Failed(StreamError::ProducerDropped);
            self.shared.notify(state);
        }
    }
}

impl<T, R> fmt::Debug for Producer<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer").finish_non_exhaustive()
    }
}

impl<T, R> Shared<T, R> {
    fn lock(&self) -> MutexGuard<'_, State<T, R>> {
        // No user code runs under the lock, so a poisoned lock still holds a
        // consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn taken(&self) -> MutexGuard<'_, VecDeque<T>> {
        self.taken.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the next change, counted in `blocked` so pushes signal it.
    fn wait<'a>(&self, mut guard: MutexGuard<'a, State<T, R>>) -> MutexGuard<'a, State<T, R>> {
        guard.blocked += 1;
        let mut guard = self
            .changed
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner);
        guard.blocked -= 1;
        guard
    }

    fn push(&self, event: T) -> Result<(), Refused<T>> {
        // User functions run outside the lock: a panicking one cannot wedge the stream.
        let result = (self.is_complete)(&event).then(|| (self.extract_result)(&event));
        let mut state = self.lock();
        if let Some(reason) = state.refusal() {
            return Err(Refused {
                value: event,
                reason,
            });
        }
        state.events.push_back(event);
        if let Some(result) = result {
            state.outcome = Outcome::Finished(result);
        }
        self.notify(state);
        Ok(())
    }

    fn end(&self, result: R) -> Result<(), Refused<R>> {
        let mut state = self.lock();
        if let Some(reason) = state.refusal() {
            return Err(Refused {
                value: result,
                reason,
            });
        }
        state.outcome = Outcome::Finished(result);
        self.notify(state);
        Ok(())
    }

    /// Moves the oldest queued events into the empty `batch`, waiting while
    /// none is queued. False once the stream finished and nothing is left.
    fn next_batch(&self, batch: &mut VecDeque<T>) -> bool {
        let mut spun = false;
        loop {
            let mut taken = self.taken();
            if !taken.is_empty() {
                std::mem::swap(&mut *taken, batch);
                return true;
            }
            let mut state = self.lock();
            if !state.events.is_empty() {
                std::mem::swap(&mut state.events, batch);
                return true;
            }
            if !state.is_running() {
                return false;
            }
            drop(taken);
            if spun {
                // The state lock is held until the wait begins, so no push can
                // slip in between the check above and the wait.
                drop(self.wait(state));
                spun = false;
            } else {
                let seen = self.changes.load(Ordering::Acquire);
                drop(state);
                self.spin_until_changed(seen);
                spun = true;
            }
        }
    }

    /// Returns unread events to the front of the consumer buffer.
    fn give_back(&self, mut unread: VecDeque<T>) {
        if unread.is_empty() {
            return;
        }
        let mut taken = self.taken();
        unread.extend(taken.drain(..));
        *taken = unread;
    }

    /// Spins (then yields) for a short while until the state changes after `seen`.
    fn spin_until_changed(&self, seen: usize) {
        for round in 0..SPIN_ROUNDS {
            if self.changes.load(Ordering::Acquire) != seen {
                return;
            }
            if round < SPIN_ROUNDS - 8 {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
    }

    /// Wakes every waiter, after the lock is released.
    fn notify(&self, mut state: MutexGuard<'_, State<T, R>>) {
        // Written only under the state lock, so a plain store suffices.
        let changes = self.changes.load(Ordering::Relaxed);
        self.changes
            .store(changes.wrapping_add(1), Ordering::Release);
        let wakers = std::mem::take(&mut state.wakers);
        let blocked = state.blocked > 0;
        drop(state);
        if blocked {
            self.changed.notify_all();
        }
        for waker in wakers {
            waker.wake();
        }
    }
}

impl<T, R> State<T, R> {
    fn is_running(&self) -> bool {
        matches!(self.outcome, Outcome::Running)
    }

    fn refusal(&self) -> Option<RefusedReason> {
        if !self.is_running() {
            Some(RefusedReason::Finished)
        } else if self.consumer_gone {
            Some(RefusedReason::ConsumerGone)
        } else {
            None
        }
    }

    fn register(&mut self, waker: &Waker) {
        if !self.wakers.iter().any(|known| known.will_wake(waker)) {
            self.wakers.push(waker.clone());
        }
    }
}

impl<T, R: Clone> State<T, R> {
    fn settled(&self) -> Option<Result<R, StreamError>> {
        match &self.outcome {
            Outcome::Running => None,
            Outcome::Finished(result) => Some(Ok(result.clone())),
            Outcome::Failed(error) => Some(Err(*error)),
        }
    }
}

/// Future of [`EventStream::next`].
#[must_use = "futures do nothing unless awaited"]
pub struct Next<'a, T, R> {
    stream: &'a EventStream<T, R>,
}

impl<T, R> Future for Next<'_, T, R> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.stream.poll_next(cx)
    }
}

/// Future of [`EventStream::result`].
#[must_use = "futures do nothing unless awaited"]
pub struct ResultOf<'a, T, R> {
    stream: &'a EventStream<T, R>,
}

impl<T, R: Clone> Future for ResultOf<'_, T, R> {
    type Output = Result<R, StreamError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.stream.poll_result(cx)
    }
}

/// Blocking iterator of [`EventStream::iter`].
pub struct Iter<'a, T, R> {
    stream: &'a EventStream<T, R>,
    /// Events taken from the stream and not yet returned, oldest first.
    batch: VecDeque<T>,
    /// How many events the last refill brought.
    last_batch: usize,
}

impl<T, R> Iterator for Iter<'_, T, R> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.batch.is_empty() {
            pause_if_keeping_up(self.last_batch);
            if !self.stream.shared.next_batch(&mut self.batch) {
                return None;
            }
            self.last_batch = self.batch.len();
        }
        self.batch.pop_front()
    }
}

impl<T, R> Drop for Iter<'_, T, R> {
    fn drop(&mut self) {
        self.stream
            .shared
            .give_back(std::mem::take(&mut self.batch));
    }
}

impl<'a, T, R> IntoIterator for &'a EventStream<T, R> {
    type Item = T;
    type IntoIter = Iter<'a, T, R>;

    fn into_iter(self) -> Iter<'a, T, R> {
        self.iter()
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::ProducerDropped => f.write_str(
                "every producer was dropped before a terminal event or end(): the stream has no result",
            ),
        }
    }
}

impl Error for StreamError {}

impl<V> fmt::Display for Refused<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            RefusedReason::Finished => f.write_str("the stream already finished; its result stays"),
            RefusedReason::ConsumerGone => f.write_str("the stream's consumer was dropped"),
        }
    }
}

impl<V: fmt::Debug> Error for Refused<V> {}

/// The stream of one model call: `done` and `error` are terminal, and the
/// result is the assistant message the terminal event carries.
///
/// It derefs to the [`EventStream`] it specialises, so `push`, `next`,
/// `result` and iteration work as in chapter 02.
pub struct AssistantMessageEventStream(EventStream<ModelEvent, AssistantMessage>);

impl AssistantMessageEventStream {
    /// An empty stream, waiting for its first event.
    pub fn new() -> Self {
        AssistantMessageEventStream(EventStream::new(
            |event| matches!(event, ModelEvent::Done { .. } | ModelEvent::Error { .. }),
            |event| match event {
                ModelEvent::Done { message, .. } => message.clone(),
                ModelEvent::Error { error, .. } => error.clone(),
                _ => unreachable!("only a terminal event carries the final message"),
            },
        ))
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

impl<'a> IntoIterator for &'a AssistantMessageEventStream {
    type Item = ModelEvent;
    type IntoIter = Iter<'a, ModelEvent, AssistantMessage>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Debug for AssistantMessageEventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AssistantMessageEventStream")
            .field(&self.0)
            .finish()
    }
}

impl ModelStream for AssistantMessageEventStream {
    fn poll_event(&self, cx: &mut Context<'_>) -> Poll<Option<ModelEvent>> {
        self.0.poll_next(cx)
    }

    fn poll_message(&self, cx: &mut Context<'_>) -> Poll<Result<AssistantMessage, StreamError>> {
        self.0.poll_result(cx)
    }
}
