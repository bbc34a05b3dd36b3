//! The course crate's hot paths against the obvious alternatives.

use std::hint::black_box;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use course::block_on;
use course::event_stream::EventStream;
use course::types::{
    AgentMessage, AssistantContent, AssistantMessage, DoneReason, MessageDraft, Sections,
    StopReason, SystemMessage, ToolCall, ToolResultMessage, UserMessage, assistant_message,
    current_system_prompt, text,
};
use serde_json::Value;

use super::Row;
use super::stats::{Figure, Unit, ms};
use crate::error::{Error, Result};

/// 1,000,000 events from a producer thread to a consumer, blocking and
/// async, against `std::sync::mpsc`.
pub fn stream(quick: bool, repeats: usize) -> Result<Vec<Row>> {
    let events: u64 = if quick { 200_000 } else { 1_000_000 };
    eprintln!("bench: stream of {events} events …");
    let throughput = |took: Duration| events as f64 / took.as_secs_f64() / 1e6;
    let mut mpsc = || {
        let (sender, receiver) = mpsc::channel::<u64>();
        let started = Instant::now();
        let producer = thread::spawn(move || {
            for n in 0..events {
                sender.send(n).expect("the receiver is alive");
            }
        });
        let received = receiver.iter().count();
        producer.join().expect("the producer finishes");
        assert_eq!(received as u64, events);
        throughput(started.elapsed())
    };
    let mut blocking = || {
        let (stream, producer) = numbers(events);
        let started = Instant::now();
        let received = stream.iter().count();
        producer.join().expect("the producer finishes");
        assert_eq!(received as u64, events + 1);
        throughput(started.elapsed())
    };
    let mut asynchronous = || {
        let (stream, producer) = numbers(events);
        let started = Instant::now();
        let received = block_on(async {
            let mut received = 0;
            while stream.next().await.is_some() {
                received += 1;
            }
            received
        });
        producer.join().expect("the producer finishes");
        assert_eq!(received, events + 1);
        throughput(started.elapsed())
    };
    let [mpsc, blocking, asynchronous] = Figure::interleaved(
        repeats * 2,
        Unit::MillionEventsPerSecond,
        [&mut mpsc, &mut blocking, &mut asynchronous],
    );
    Ok([("blocking", blocking), ("async", asynchronous)]
        .into_iter()
        .map(|(kind, ours)| {
            let ratio = ours.ratio(&mpsc);
            Row {
                workload: "stream",
                size: format!("{events} events, {kind}"),
                ours,
                baseline: Some(mpsc),
                ratio: Some(ratio),
                target: "≥ 0.8× mpsc".into(),
                met: Some(ratio >= 0.8),
            }
        })
        .collect())
}

/// A stream of `events` numbers, then a terminal `u64::MAX`, from a thread.
fn numbers(events: u64) -> (EventStream<u64, u64>, thread::JoinHandle<()>) {
    let stream = EventStream::new(|n: &u64| *n == u64::MAX, |n: &u64| *n);
    let producer = stream.producer();
    let handle = thread::spawn(move || {
        for n in 0..events {
            producer.push(n).expect("the consumer is alive");
        }
        producer.push(u64::MAX).expect("the consumer is alive");
    });
    (stream, handle)
}

/// N text deltas into one message, each event carrying its `partial`:
/// ns/event must stay flat. The baseline deep-copies the message per event.
pub fn partial(repeats: usize) -> Result<Vec<Row>> {
    const DELTA: &str = "token";
    let mut rows = Vec::new();
    let mut first = None;
    for deltas in [1_000_usize, 10_000, 100_000] {
        eprintln!("bench: partial with {deltas} deltas …");
        let per_event = |took: Duration| took.as_nanos() as f64 / deltas as f64;
        let ours = Figure::of(
            (0..repeats)
                .map(|_| {
                    let mut draft = MessageDraft::new(assistant_message(vec![], StopReason::Stop));
                    let started = Instant::now();
                    for _ in 0..deltas {
                        black_box(
                            draft
                                .text_delta(0, DELTA)
                                .expect("index 0 is the text block"),
                        );
                    }
                    black_box(draft.finish(DoneReason::Stop));
                    per_event(started.elapsed())
                })
                .collect(),
            Unit::NanosPerEvent,
        );
        // The copying baseline is quadratic: at 100,000 deltas it would copy ~25 GB.
        let baseline = (deltas <= 10_000).then(|| {
            Figure::of(
                (0..repeats)
                    .map(|_| {
                        let mut message =
                            assistant_message(vec![text("").into()], StopReason::Stop);
                        let started = Instant::now();
                        for _ in 0..deltas {
                            if let AssistantContent::Text(block) = &mut message.content[0] {
                                block.text.push_str(DELTA);
                            }
                            black_box(message.clone());
                        }
                        per_event(started.elapsed())
                    })
                    .collect(),
                Unit::NanosPerEvent,
            )
        });
        let flat = *first.get_or_insert(ours.median);
        let growth = ours.median / flat;
        rows.push(Row {
            workload: "partial",
            size: format!("{deltas} deltas"),
            ours,
            ratio: baseline.map(|baseline| ours.ratio(&baseline)),
            baseline,
            target: if deltas == 100_000 {
                format!("≤ 1.5× the 1,000-delta cost (is {growth:.2}×)")
            } else {
                "(baseline copies the message)".into()
            },
            met: (deltas == 100_000).then_some(growth <= 1.5),
        });
    }
    Ok(rows)
}

/// `current_system_prompt` against a bare loop that reads the same messages
/// and patches once and builds nothing.
pub fn replay(quick: bool, repeats: usize) -> Result<Vec<Row>> {
    let sizes: &[usize] = if quick {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    Ok(sizes
        .iter()
        .map(|&count| {
            eprintln!("bench: replay over {count} messages …");
            let transcript = transcript(count);
            // Each sample covers about two million messages, so small sizes time well.
            let rounds = (2_000_000 / count).max(1);
            let per_round = |work: &dyn Fn()| {
                let started = Instant::now();
                for _ in 0..rounds {
                    work();
                }
                started.elapsed() / rounds as u32
            };
            let mut ours = || {
                ms(per_round(&|| {
                    drop(black_box(current_system_prompt(black_box(&transcript))))
                }))
            };
            let mut baseline = || {
                ms(per_round(&|| {
                    // The one-pass limit: visit every message and read each
                    // system patch once, as the replay must, and build nothing.
                    let mut read = 0;
                    for message in black_box(&transcript) {
                        if let AgentMessage::System(system) = message {
                            read += system.content.len();
                            for (name, value) in system.sections.iter().flat_map(Sections::iter) {
                                read += name.len() + value.map_or(0, str::len);
                            }
                        }
                    }
                    black_box(read);
                }))
            };
            let [ours, baseline] =
                Figure::interleaved(repeats, Unit::Milliseconds, [&mut ours, &mut baseline]);
            Row::timed_against(
                "replay",
                format!("{count} messages"),
                ours,
                baseline,
                Some((2.0, "≤ 2× a bare loop")),
            )
        })
        .collect())
}

/// Parse and write a 10,000-message transcript: typed vs `serde_json::Value`.
pub fn json(repeats: usize) -> Result<Vec<Row>> {
    eprintln!("bench: json of 10000 messages …");
    let transcript = transcript(10_000);
    let text =
        serde_json::to_string(&transcript).map_err(|error| Error::bad_input(error.to_string()))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|error| Error::bad_input(error.to_string()))?;
    let megabytes = text.len() as f64 / 1e6;
    let speed = |run: &dyn Fn() -> Duration| {
        let samples = (0..repeats)
            .map(|_| megabytes / run().as_secs_f64())
            .collect();
        Figure::of(samples, Unit::MegabytesPerSecond)
    };
    let time = |work: &dyn Fn()| {
        let started = Instant::now();
        work();
        started.elapsed()
    };
    let parse_typed = speed(&|| {
        time(&|| {
            black_box(
                serde_json::from_str::<Vec<AgentMessage>>(&text).expect("the transcript parses"),
            );
        })
    });
    let parse_value = speed(&|| {
        time(&|| {
            black_box(serde_json::from_str::<Value>(&text).expect("the transcript parses"));
        })
    });
    let write_typed = speed(&|| time(&|| drop(black_box(serde_json::to_string(&transcript)))));
    let write_value = speed(&|| time(&|| drop(black_box(serde_json::to_string(&value)))));
    let size = format!("10000 messages, {megabytes:.1} MB");
    Ok(vec![
        Row {
            workload: "json parse",
            size: size.clone(),
            ratio: Some(parse_typed.ratio(&parse_value)),
            ours: parse_typed,
            baseline: Some(parse_value),
            target: "(reported; typed also checks tags)".into(),
            met: None,
        },
        Row {
            workload: "json write",
            size,
            ratio: Some(write_typed.ratio(&write_value)),
            ours: write_typed,
            baseline: Some(write_value),
            target: "(reported)".into(),
            met: None,
        },
    ])
}

/// A transcript of `count` messages: tool round-trips, with a system patch
/// every 100 messages.
fn transcript(count: usize) -> Vec<AgentMessage> {
    (0..count)
        .map(|index| {
            let timestamp = index as u64;
            match index % 100 {
                0 => AgentMessage::System(SystemMessage {
                    content: if index == 0 { "You are Pi.".into() } else { String::new() },
                    sections: Some(Sections::from([("rules", Some(format!("RULE v{index}")))])),
                    timestamp,
                }),
                n if n % 3 == 1 => AgentMessage::User(UserMessage {
                    content: vec![text(format!("Please read file {index} and summarise it."))],
                    timestamp,
                }),
                n if n % 3 == 2 => AgentMessage::Assistant(AssistantMessage {
                    timestamp,
                    ..assistant_message(
                        vec![
                            text("I will read the file first.").into(),
                            AssistantContent::ToolCall(ToolCall {
                                id: format!("call_{index}"),
                                name: "read".into(),
                                arguments: serde_json::json!({ "path": format!("src/file_{index}.rs") }),
                                raw_arguments: None,
                            }),
                        ],
                        StopReason::ToolUse,
                    )
                }),
                _ => AgentMessage::ToolResult(ToolResultMessage {
                    tool_call_id: format!("call_{}", index - 1),
                    tool_name: "read".into(),
                    content: vec![text("fn main() {\n    println!(\"hello\");\n}\n")],
                    details: None,
                    is_error: false,
                    timestamp,
                }),
            }
        })
        .collect()
}
