//! Chapter 02's focused test: one stream carries the process and the fact.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use course::block_on;
use course::event_stream::EventStream;

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Delta(&'static str),
    Done(&'static str),
}

fn kind(event: &Event) -> &'static str {
    match event {
        Event::Delta(_) => "delta",
        Event::Done(_) => "done",
    }
}

/// A stream whose `Done` event is terminal and carries the result.
fn letter_stream() -> EventStream<Event, String> {
    EventStream::new(
        |event| matches!(event, Event::Done(_)),
        |event| match event {
            Event::Done(letters) => letters.to_string(),
            Event::Delta(_) => unreachable!("only a terminal event carries the result"),
        },
    )
}

/// Runs `work` on its own thread and gives up after a second, so a stream
/// that never ends fails the test instead of hanging the test run.
fn within_a_second<V: Send + 'static>(work: impl FnOnce() -> V + Send + 'static) -> V {
    let (report, finished) = mpsc::channel();
    thread::spawn(move || report.send(work()));
    finished.recv_timeout(Duration::from_secs(1)).expect(
        "the consumer still waits after a second: did the terminal event finish the stream?",
    )
}

/// Counts how often the stream woke its consumer.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn queued_events_are_delivered_and_the_terminal_event_sets_the_result() {
    let stream = letter_stream();
    stream.push(Event::Delta("A")).unwrap();
    stream.push(Event::Done("AB")).unwrap();

    let (kinds, result) = within_a_second(move || {
        block_on(async {
            let mut kinds = Vec::new();
            while let Some(event) = stream.next().await {
                kinds.push(kind(&event));
            }
            (kinds, stream.result().await)
        })
    });

    assert_eq!(kinds, ["delta", "done"]);
    assert_eq!(result, Ok("AB".to_string()));
}

#[test]
fn a_waiting_consumer_is_woken_by_the_next_push_and_end_finishes_it() {
    let stream = letter_stream();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);

    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Pending,
        "nothing queued yet"
    );
    stream.push(Event::Delta("A")).unwrap();
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        1,
        "the push must wake the waiting consumer"
    );
    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Ready(Some(Event::Delta("A")))
    );

    assert_eq!(stream.poll_next(&mut cx), Poll::Pending);
    stream.end("A".to_string()).unwrap();
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        2,
        "end() must wake the waiting consumer"
    );
    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Ready(None),
        "end() ends iteration"
    );
    assert_eq!(
        stream.poll_result(&mut cx),
        Poll::Ready(Ok("A".to_string()))
    );
    assert_eq!(block_on(stream.result()), Ok("A".to_string()));
}
