//! Chapter 03's partial snapshots: every progress event carries the message
//! so far, so a stream that copied the message into each event would cost
//! O(N²) for N deltas. This measures the cost per event at three sizes; it
//! should stay flat.
//!
//! `cargo run --release -p course --example bench_partial [-- --quick]`

mod common;

use std::hint::black_box;

use common::{Goal, figure, millis, row, runs};
use course::assistant_stream::AssistantMessageEventStream;
use course::block_on;
use course::types::{DoneReason, MessageDraft, StopReason, assistant_message};

/// Nanoseconds per event: a draft turns `deltas` text deltas into events, a
/// stream carries them, and the consumer reads each one as it arrives (and
/// looks at its snapshot's size), then the final message.
fn nanos_per_event(deltas: usize) -> f64 {
    let mut blocks = 0;
    let elapsed = millis(|| {
        let stream = AssistantMessageEventStream::new();
        let mut draft = MessageDraft::new(assistant_message(vec![], StopReason::Stop));
        for _ in 0..deltas {
            stream.push(draft.text_delta("ab")).expect("running");
            let event = block_on(stream.next()).expect("one event queued");
            black_box(event);
        }
        stream
            .push(draft.finish(DoneReason::Stop))
            .expect("running");
        let message = stream.blocking_result().expect("finished");
        blocks = message.content.len();
    });
    assert_eq!(blocks, 1);
    elapsed * 1e6 / deltas as f64
}

fn main() {
    let sizes: &[usize] = if common::quick() {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    let mut smallest = None;
    for &deltas in sizes {
        let samples: Vec<f64> = (0..runs()).map(|_| nanos_per_event(deltas)).collect();
        let ours = figure(samples, "nanos_per_event");
        let size = format!("{deltas} deltas");
        match &smallest {
            None => {
                row("partial", &size, ours.clone(), None, Goal::Reported);
                smallest = Some(ours);
            }
            Some(base) => row(
                "partial",
                &size,
                ours,
                Some(base.clone()),
                Goal::AtMost(1.5, "≤ 1.5× the 1,000-delta cost"),
            ),
        }
    }
}
