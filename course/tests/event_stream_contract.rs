//! Chapter 02's stream under pressure, beyond what the chapter's lab tests
//! (`event_stream.rs`, `event_stream_producer.rs`) check: many rounds across
//! threads, several waiters, a producer dropped after the finish, a panicking
//! `is_complete`, `block_on` on its own, and the texts of the two errors
//! (which chapter 02's guide states).

use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use course::block_on;
use course::event_stream::{EventStream, StreamError};

/// Events are numbers; a negative number is terminal and its negation is the result.
fn number_stream() -> EventStream<i64, i64> {
    EventStream::new(|n| *n < 0, |n| -n)
}

/// Runs `work` on its own thread and fails the test if it has not finished in
/// time, so a lost wake-up shows up as a failure instead of a hung test run.
fn within<V: Send + 'static>(seconds: u64, work: impl FnOnce() -> V + Send + 'static) -> V {
    let (report, finished) = mpsc::channel();
    thread::spawn(move || report.send(work()));
    finished
        .recv_timeout(Duration::from_secs(seconds))
        .expect("the consumer hung: an event or a wake-up was lost")
}

/// Counts its wake-ups.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Counter {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

fn counting_waker() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter::default());
    (Arc::clone(&counter), Waker::from(counter))
}

#[test]
fn no_event_or_wake_up_is_lost_across_threads_for_a_blocking_consumer() {
    within(5, || {
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
    within(5, || {
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
fn the_result_is_ready_before_the_events_are_read() {
    let stream = number_stream();
    stream.push(1).unwrap();
    stream.push(-2).unwrap();
    assert_eq!(within(5, move || stream.blocking_result()), Ok(2));
}

#[test]
fn several_waiters_receive_the_same_result() {
    let stream = Arc::new(number_stream());
    let producer = stream.producer();
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
    producer.push(-8).unwrap();
    let results = within(5, move || {
        waiters
            .into_iter()
            .map(|waiter| waiter.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(results, [Ok(8); 4]);
    assert_eq!(
        within(5, move || block_on(stream.result())),
        Ok(8),
        "asking again gives the same fact"
    );
}

#[test]
fn a_change_wakes_every_waiting_task_and_each_task_once() {
    let stream = number_stream();
    let (events, events_waker) = counting_waker();
    let (result, result_waker) = counting_waker();
    let mut events_cx = Context::from_waker(&events_waker);
    let mut result_cx = Context::from_waker(&result_waker);

    assert_eq!(stream.poll_next(&mut events_cx), Poll::Pending);
    assert_eq!(
        stream.poll_next(&mut events_cx),
        Poll::Pending,
        "polled twice"
    );
    assert_eq!(stream.poll_result(&mut result_cx), Poll::Pending);
    stream.push(1).unwrap();
    assert_eq!(
        (events.count(), result.count()),
        (1, 1),
        "both tasks woken, once each"
    );

    assert_eq!(stream.poll_result(&mut result_cx), Poll::Pending);
    stream.push(2).unwrap();
    assert_eq!(
        (events.count(), result.count()),
        (1, 2),
        "a woken task is forgotten until it waits again"
    );
}

#[test]
fn a_producer_dropped_after_the_finish_changes_nothing() {
    within(5, || {
        let stream = number_stream();
        let producer = stream.producer();
        producer.push(-4).unwrap();
        drop(producer);
        assert_eq!(stream.blocking_result(), Ok(4));
        let other = stream.producer();
        other.end(5).unwrap_err();
        drop(other);
        assert_eq!(stream.blocking_result(), Ok(4));
    });
}

#[test]
fn only_producer_handles_count_a_stream_without_them_stays_open() {
    within(5, || {
        let handed_out = number_stream();
        drop(handed_out.producer());
        assert_eq!(
            handed_out.blocking_result(),
            Err(StreamError::ProducerDropped)
        );

        let owned = number_stream();
        let (_, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        assert_eq!(owned.poll_next(&mut cx), Poll::Pending);
        assert_eq!(owned.poll_result(&mut cx), Poll::Pending);
    });
}

#[test]
fn a_panicking_is_complete_leaves_the_stream_as_it_was() {
    within(5, || {
        let stream: EventStream<i64, i64> = EventStream::new(
            |n| {
                assert_ne!(*n, 13, "unlucky");
                *n < 0
            },
            |n| -n,
        );
        stream.push(1).unwrap();
        let pushed = panic::catch_unwind(AssertUnwindSafe(|| stream.push(13)));
        assert!(pushed.is_err());
        stream.push(-2).unwrap();
        assert_eq!(stream.iter().collect::<Vec<_>>(), [1, -2]);
        assert_eq!(stream.blocking_result(), Ok(2));
    });
}

#[test]
fn block_on_sleeps_until_woken_from_another_thread() {
    /// Pending until another thread sets the flag and wakes it.
    struct Flag(Arc<std::sync::Mutex<(bool, Option<Waker>)>>);

    impl Future for Flag {
        type Output = &'static str;

        fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
            let mut state = self.0.lock().unwrap();
            if state.0 {
                Poll::Ready("set")
            } else {
                state.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    let shared = Arc::new(std::sync::Mutex::new((false, None::<Waker>)));
    let setter = Arc::clone(&shared);
    let output = within(5, move || {
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            let waker = {
                let mut state = setter.lock().unwrap();
                state.0 = true;
                state.1.take()
            };
            waker.expect("block_on registered a waker").wake();
        });
        block_on(Flag(shared))
    });
    assert_eq!(output, "set");
    assert_eq!(block_on(async { 7 }), 7, "a ready future needs no wake-up");
}

#[test]
fn refusals_and_errors_explain_themselves() {
    let stream = number_stream();
    stream.end(0).unwrap();
    let refused = stream.push(1).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "the stream has already finished; the value was refused"
    );
    assert_eq!(
        StreamError::ProducerDropped.to_string(),
        "every producer was dropped before the stream finished"
    );
    // Both are `std::error::Error`s, so `?` carries them into a caller's error type.
    let errors: [Box<dyn std::error::Error>; 2] =
        [Box::new(refused), Box::new(StreamError::ProducerDropped)];
    assert!(errors[0].to_string().contains("refused"));
}
