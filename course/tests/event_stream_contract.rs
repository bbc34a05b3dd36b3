//! Chapter 02's stream under pressure: threads, late pushes, several waiters,
//! and a producer that disappears.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use course::block_on;
use course::event_stream::{EventStream, RefusedReason, StreamError};

/// Events are numbers; a negative number is terminal and its negation is the result.
fn number_stream() -> EventStream<i64, i64> {
    EventStream::new(|n| *n < 0, |n| -n)
}

/// Runs `work` on its own thread and fails the test if it has not finished in time,
/// so a lost wake-up shows up as a failure instead of a hung test run.
fn within<T: Send + 'static>(seconds: u64, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    thread::spawn(move || done.send(work()));
    finished
        .recv_timeout(Duration::from_secs(seconds))
        .expect("the consumer hung: an event or a wake-up was lost")
}

#[test]
fn no_event_or_wake_up_is_lost_across_threads_for_a_blocking_consumer() {
    within(60, || {
        for round in 0..200_i64 {
            let stream = number_stream();
            let producer = stream.producer();
            let count = 1 + round * 7;
            let sender = thread::spawn(move || {
                for n in 0..count {
                    producer.push(n).unwrap();
                }
                producer.push(-count).unwrap();
            });
            let received: Vec<i64> = stream.iter().collect();
            sender.join().unwrap();
            let expected: Vec<i64> = (0..count).chain([-count]).collect();
            assert_eq!(received, expected, "round {round}");
            assert_eq!(stream.blocking_result(), Ok(count));
        }
    });
}

#[test]
fn no_event_or_wake_up_is_lost_across_threads_for_an_async_consumer() {
    within(60, || {
        for round in 0..200_i64 {
            let stream = number_stream();
            let producer = stream.producer();
            let count = 1 + round * 7;
            let sender = thread::spawn(move || {
                for n in 0..count {
                    producer.push(n).unwrap();
                    if n % 64 == 0 {
                        thread::yield_now();
                    }
                }
                producer.end(count).unwrap();
            });
            let received = block_on(async {
                let mut received = Vec::new();
                while let Some(n) = stream.next().await {
                    received.push(n);
                }
                received
            });
            sender.join().unwrap();
            assert_eq!(received, (0..count).collect::<Vec<_>>(), "round {round}");
            assert_eq!(block_on(stream.result()), Ok(count));
        }
    });
}

#[test]
fn a_push_after_the_terminal_event_is_refused_and_changes_nothing() {
    let stream = number_stream();
    stream.push(1).unwrap();
    stream.push(-5).unwrap();

    let refused = stream.push(7).unwrap_err();
    assert_eq!(refused.value, 7, "the refused event is handed back");
    assert_eq!(refused.reason, RefusedReason::Finished);
    let refused_terminal = stream.push(-9).unwrap_err();
    assert_eq!(refused_terminal.value, -9);

    assert_eq!(stream.iter().collect::<Vec<_>>(), [1, -5]);
    assert_eq!(stream.blocking_result(), Ok(5), "no second fact");
}

#[test]
fn end_before_a_terminal_event_sets_the_result_and_refuses_the_terminal_event() {
    let stream = number_stream();
    stream.push(1).unwrap();
    stream.end(42).unwrap();
    assert!(stream.is_finished());
    assert_eq!(stream.push(-3).unwrap_err().reason, RefusedReason::Finished);
    assert_eq!(
        stream.iter().collect::<Vec<_>>(),
        [1],
        "queued events are still drained"
    );
    assert_eq!(stream.blocking_result(), Ok(42));
}

#[test]
fn end_after_a_terminal_event_keeps_the_terminal_result() {
    let stream = number_stream();
    stream.push(-3).unwrap();
    let refused = stream.end(99).unwrap_err();
    assert_eq!(
        (refused.value, refused.reason),
        (99, RefusedReason::Finished)
    );
    assert_eq!(stream.blocking_result(), Ok(3));
    assert_eq!(stream.iter().collect::<Vec<_>>(), [-3]);
}

#[test]
fn several_waiters_receive_the_same_result() {
    let stream = Arc::new(number_stream());
    let waiters: Vec<_> = (0..4)
        .map(|i| {
            let stream = Arc::clone(&stream);
            thread::spawn(move || {
                if i % 2 == 0 {
                    stream.blocking_result()
                } else {
                    block_on(stream.result())
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(20));
    stream.push(-8).unwrap();
    for waiter in waiters {
        assert_eq!(waiter.join().unwrap(), Ok(8));
    }
    assert_eq!(
        block_on(stream.result()),
        Ok(8),
        "asking again gives the same fact"
    );
}

#[test]
fn a_dropped_producer_ends_the_stream_with_an_error_instead_of_hanging() {
    let stream = Arc::new(number_stream());
    let producer = stream.producer();
    let consumer = {
        let stream = Arc::clone(&stream);
        thread::spawn(move || stream.iter().collect::<Vec<_>>())
    };
    let second = producer.clone();
    producer.push(1).unwrap();
    drop(producer);
    assert!(!stream.is_finished(), "a clone still produces");
    second.push(2).unwrap();
    drop(second);

    let received = within(5, move || consumer.join().unwrap());
    assert_eq!(
        received,
        [1, 2],
        "events pushed before the drop are still delivered"
    );
    assert_eq!(stream.blocking_result(), Err(StreamError::ProducerDropped));
    assert_eq!(block_on(stream.result()), Err(StreamError::ProducerDropped));
}

#[test]
fn a_producer_dropped_after_the_finish_changes_nothing() {
    let stream = number_stream();
    let producer = stream.producer();
    producer.push(-4).unwrap();
    drop(producer);
    assert_eq!(stream.blocking_result(), Ok(4));
}

#[test]
fn pushes_are_refused_once_the_consumer_is_gone() {
    let stream = number_stream();
    let producer = stream.producer();
    producer.push(1).unwrap();
    drop(stream);
    assert!(producer.is_closed());
    let refused = producer.push(2).unwrap_err();
    assert_eq!(
        (refused.value, refused.reason),
        (2, RefusedReason::ConsumerGone)
    );
}

#[test]
fn refusals_and_errors_explain_themselves() {
    let stream = number_stream();
    stream.end(0).unwrap();
    let refused = stream.push(1).unwrap_err();
    assert!(
        refused.to_string().contains("already finished"),
        "{refused}"
    );
    assert!(
        StreamError::ProducerDropped
            .to_string()
            .contains("producer was dropped")
    );
}

#[test]
fn an_iterator_dropped_midway_loses_no_event() {
    let stream = number_stream();
    for n in 1..=5 {
        stream.push(n).unwrap();
    }
    let mut iter = stream.iter();
    assert_eq!(iter.next(), Some(1));
    drop(iter);
    assert_eq!(
        stream.blocking_next(),
        Some(2),
        "the iterator's unread batch went back"
    );
    assert_eq!(block_on(stream.next()), Some(3));
    stream.push(-6).unwrap();
    assert_eq!(stream.iter().collect::<Vec<_>>(), [4, 5, -6]);
}
