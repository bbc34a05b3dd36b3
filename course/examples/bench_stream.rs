//! Chapter 02's stream against `std::sync::mpsc`: one producer thread, one
//! consumer, a million small events. It guards against a stream that is
//! slow per event (a lock held too long, a wake-up per event that nobody
//! needed), not for records.
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
            Goal::AtLeast(0.8, "≥ 0.8× mpsc"),
        );
    }
}
