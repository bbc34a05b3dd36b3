//! Chapter 02's producer step (2.3): the stream fed from another thread.
//!
//! The focused test pushes on the stream itself. These tests push through
//! [`Producer`] handles, read with the blocking side (`iter`,
//! `blocking_result`), and check the two promises of the producer side: a
//! push or `end` after the finish is refused visibly, and a stream whose
//! producers are all gone ends with an error instead of hanging. A stream
//! that never ends fails its test after a second instead of hanging the run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use course::event_stream::{EventStream, Producer, Refused, StreamError};

/// Events are numbers; a negative number is terminal and its negation is
/// the result.
fn number_stream() -> EventStream<i64, i64> {
    EventStream::new(|n| *n < 0, |n| -n)
}

/// Runs `work` on its own thread and gives up after a second, so a consumer
/// that is never woken fails the test instead of hanging the test run.
fn within_a_second<V: Send + 'static>(work: impl FnOnce() -> V + Send + 'static) -> V {
    let (report, finished) = mpsc::channel();
    thread::spawn(move || report.send(work()));
    finished.recv_timeout(Duration::from_secs(1)).expect(
        "一秒后消费者还在等：流没有结束，或者结束时没有唤醒它（终态事件、end()、最后一个 Producer 被 drop 都要唤醒等待者）",
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
fn a_producer_on_another_thread_reaches_a_blocking_consumer() {
    let stream = number_stream();
    let producer: Producer<i64, i64> = stream.producer();
    let sender = thread::spawn(move || {
        for n in 0..1000 {
            producer.push(n).expect("流还没结束，push 应当被接受");
        }
        producer
            .push(-1000)
            .expect("流还没结束，终态事件应当被接受");
    });

    let (received, result) =
        within_a_second(move || (stream.iter().collect::<Vec<_>>(), stream.blocking_result()));
    sender.join().expect("生产者线程不应 panic");

    let expected: Vec<i64> = (0..1000).chain([-1000]).collect();
    assert_eq!(
        received, expected,
        "iter() 应当按 push 的顺序交付每一个事件，终态事件在最后"
    );
    assert_eq!(result, Ok(1000), "blocking_result() 是终态事件给出的结果");

    let waiting = number_stream();
    let producer = waiting.producer();
    let ender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        producer.end(7).expect("流还没结束，end 应当被接受");
    });
    let result = within_a_second(move || waiting.blocking_result());
    ender.join().expect("生产者线程不应 panic");
    assert_eq!(
        result,
        Ok(7),
        "blocking_result() 要一直等到另一个线程调用 end()"
    );
}

#[test]
fn a_push_or_end_after_the_finish_is_refused_and_changes_nothing() {
    let finished_by_event = number_stream();
    finished_by_event.push(1).unwrap();
    finished_by_event.push(-5).unwrap();
    assert_eq!(
        finished_by_event.push(7),
        Err(Refused(7)),
        "流结束后的 push 要被拒绝，并把事件原样交还"
    );
    assert_eq!(
        finished_by_event.producer().push(8),
        Err(Refused(8)),
        "通过 Producer 的迟到 push 同样被拒绝"
    );
    assert_eq!(
        finished_by_event.end(9),
        Err(Refused(9)),
        "终态事件之后的 end() 要被拒绝，不能产生第二个事实"
    );
    let (events, result) = within_a_second(move || {
        (
            finished_by_event.iter().collect::<Vec<_>>(),
            finished_by_event.blocking_result(),
        )
    });
    assert_eq!(events, [1, -5], "被拒绝的事件不进入队列");
    assert_eq!(result, Ok(5), "结果仍是第一个终态事件的结果");

    let finished_by_end = number_stream();
    finished_by_end.push(1).unwrap();
    finished_by_end.end(42).unwrap();
    assert_eq!(
        finished_by_end.push(-3),
        Err(Refused(-3)),
        "end() 之后，终态事件也要被拒绝"
    );
    let (events, result) = within_a_second(move || {
        (
            finished_by_end.iter().collect::<Vec<_>>(),
            finished_by_end.blocking_result(),
        )
    });
    assert_eq!(events, [1], "end() 之前排队的事件照常交付");
    assert_eq!(result, Ok(42), "结果是 end() 给出的值");
}

#[test]
fn when_every_producer_is_dropped_the_stream_ends_with_an_error() {
    let stream = number_stream();
    let first = stream.producer();
    let second = first.clone();
    let sender = thread::spawn(move || {
        let first_push = first.push(1);
        drop(first);
        let second_push = second.push(2);
        // `second` is dropped here, without a terminal event or end().
        (first_push, second_push)
    });

    let (received, result) =
        within_a_second(move || (stream.iter().collect::<Vec<_>>(), stream.blocking_result()));
    let pushed = sender.join().expect("生产者线程不应 panic");

    assert_eq!(
        pushed,
        (Ok(()), Ok(())),
        "clone 出来的 Producer 还活着，流不能在第一个句柄被 drop 时就结束"
    );
    assert_eq!(
        received,
        [1, 2],
        "生产者消失之前排队的事件照常交付，之后迭代结束"
    );
    assert_eq!(
        result,
        Err(StreamError::ProducerDropped),
        "生产者全部消失却没有终态事件：结果是 ProducerDropped，不是正常结束"
    );
}

#[test]
fn the_last_producer_dropped_wakes_a_waiting_consumer() {
    let stream = number_stream();
    let first = stream.producer();
    let second = first.clone();
    let counter = Arc::new(CountingWaker::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut cx = Context::from_waker(&waker);

    assert_eq!(stream.poll_next(&mut cx), Poll::Pending, "还没有事件");
    drop(first);
    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Pending,
        "还有一个 Producer 活着，流没有结束"
    );
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        0,
        "不是最后一个 Producer 的 drop 不改变流，也不唤醒"
    );

    drop(second);
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        1,
        "最后一个 Producer 被 drop 时，流以失败结束，要唤醒等待中的消费者"
    );
    assert_eq!(
        stream.poll_next(&mut cx),
        Poll::Ready(None),
        "流以失败结束后迭代结束"
    );
    assert_eq!(
        stream.poll_result(&mut cx),
        Poll::Ready(Err(StreamError::ProducerDropped))
    );
}
