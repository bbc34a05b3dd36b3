//! Chapter 02's focused test: one stream carries the process and the fact.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

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

fn text_stream() -> EventStream<Event, String> {
    EventStream::new(
        |event| matches!(event, Event::Done(_)),
        |event| match event {
            Event::Done(text) => text.to_string(),
            Event::Delta(_) => unreachable!("only a terminal event carries the result"),
        },
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
    let stream = text_stream();
    stream.push(Event::Delta("A")).unwrap();
    stream.push(Event::Done("AB")).unwrap();

    let mut kinds = Vec::new();
    block_on(async {
        while let Some(event) = stream.next().await {
            kinds.push(kind(&event));
        }
    });

    assert_eq!(kinds, ["delta", "done"]);
    assert_eq!(block_on(stream.result()), Ok("AB".to_string()));
}

#[test]
fn a_waiting_consumer_is_woken_by_the_next_push_and_end_finishes_it() {
    let stream = text_stream();
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
    assert_eq!(block_on(stream.result()), Ok("A".to_string()));
}
