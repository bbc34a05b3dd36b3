//! Chapter 02's stream beside `std::sync::mpsc`, for scale, not for a record.
//!
//! What it measures: throughput, in millions of events per second. One
//! producer thread pushes a million `u64` events (100 000 with `--quick`)
//! through a [`Producer`](course::event_stream::Producer) and ends the stream;
//! the main thread reads them, once with the blocking `iter()` and once with
//! `next().await` under [`block_on`]. The clock runs from before the producer
//! thread is spawned until the last event is read. The baseline sends the
//! same numbers through an `mpsc::channel` and reads them with its `iter()`.
//! The runs alternate (see `common::interleaved`) and each row shows the
//! medians and their ratio, ours over mpsc.
//!
//! The stream is the teaching design (one mutex, a wake-up whenever a
//! consumer waits), so the ratio is only held to the course's bar: within
//! an order of magnitude of mpsc. A ratio far below that points at a lock
//! held too long or a wake-up nobody waited for, not at a missing trick.
//!
//! `cargo run --release -p course --example bench_stream [-- --quick]`

mod common;

use std::hint::black_box;
use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use common::{Goal, figure, interleaved, row};
use course::block_on;
use course::event_stream::EventStream;

/// Millions of events per second through our stream.
fn ours(events: u64, blocking: bool) -> f64 {
    let stream = EventStream::new(|_: &u64| false, |_| 0_u64);
    let producer = stream.producer();
    let start = Instant::now();
    let sender = thread::spawn(move || {
        for n in 0..events {
            producer.push(n).expect("the stream is running");
        }
        producer.end(events).expect("the stream is running");
    });
    let sum: u64 = if blocking {
        stream.iter().sum()
    } else {
        block_on(async {
            let mut sum = 0;
            while let Some(n) = stream.next().await {
                sum += n;
            }
            sum
        })
    };
    sender.join().expect("the producer thread finished");
    assert_eq!(stream.blocking_result(), Ok(events));
    black_box(sum);
    events as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// Millions of events per second through `std::sync::mpsc`.
fn mpsc(events: u64) -> f64 {
    let (sender, receiver) = mpsc::channel();
    let start = Instant::now();
    let producer = thread::spawn(move || {
        for n in 0..events {
            sender.send(n).expect("the receiver is alive");
        }
    });
    let sum: u64 = receiver.iter().sum();
    producer.join().expect("the producer thread finished");
    black_box(sum);
    events as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let events = if common::quick() { 100_000 } else { 1_000_000 };
    for (mode, blocking) in [("blocking", true), ("async", false)] {
        let (ours, baseline) = interleaved(|| ours(events, blocking), || mpsc(events));
        row(
            "stream",
            &format!("{events} events, {mode}"),
            figure(ours, "million_events_per_second"),
            Some(figure(baseline, "million_events_per_second")),
            Goal::AtLeast(0.1, "≥ 0.1× mpsc (an order of magnitude)"),
        );
    }
}
