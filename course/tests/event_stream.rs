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
            Event::Delta(_) => unreachable!("只有终态事件带着结果"),
        },
    )
}

/// Runs `work` on its own thread and gives up after a second, so a stream
/// that never ends fails the test instead of hanging the test run.
fn within_a_second<V: Send + 'static>(work: impl FnOnce() -> V + Send + 'static) -> V {
    let (report, finished) = mpsc::channel();
    thread::spawn(move || report.send(work()));
    finished
        .recv_timeout(Duration::from_secs(1))
        .expect("一秒后消费者还在等：终态事件有没有结束这个流？")
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

    assert_eq!(
        kinds,
        ["delta", "done"],
        "先排队的事件按顺序交付，终态事件本身也要交付"
    );
    assert_eq!(result, Ok("AB".to_string()), "结果来自终态事件");
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
        "还没有排队的事件，消费者要等待"
    );
    stream.push(Event::Delta("A")).unwrap();
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        1,
        "push 必须唤醒等待中的消费者"
    );
    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Ready(Some(Event::Delta("A"))),
        "被唤醒后再 poll，拿到刚 push 的事件"
    );

    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Pending,
        "队列又空了，流还没结束"
    );
    stream.end("A".to_string()).unwrap();
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        2,
        "end() 必须唤醒等待中的消费者"
    );
    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Ready(None),
        "end() 结束了迭代"
    );
    assert_eq!(
        stream.poll_result(&mut cx),
        Poll::Ready(Ok("A".to_string())),
        "结果是 end() 给出的值"
    );
    assert_eq!(
        block_on(stream.result()),
        Ok("A".to_string()),
        "再问一次，还是同一个结果"
    );
}
