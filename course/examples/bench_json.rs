//! Chapter 03's typed wire format against untyped `serde_json::Value`, on the
//! chapter's README round trip repeated into a long transcript: reading and
//! writing typed messages (tags checked, field order kept) should not cost
//! much more than reading and writing plain JSON values.
//!
//! `cargo run --release -p course --example bench_json [-- --quick]`

mod common;

use std::hint::black_box;

use common::{Goal, figure, interleaved, millis, row};
use course::types::AgentMessage;
use serde_json::Value;

const README_ROUND_TRIP: &str = concat!(
    r#"{"role":"user","content":[{"type":"text","text":"请读取 README，然后告诉我项目名。"}],"timestamp":1000},"#,
    r#"{"role":"assistant","content":[{"type":"text","text":"我先读取项目说明。"},"#,
    r#"{"type":"toolCall","id":"call_1","name":"read","arguments":{"path":"README.md"}}],"#,
    r#""provider":"scripted","model":"scripted-v1","usage":{"input":18,"output":12,"totalTokens":30},"#,
    r#""stopReason":"toolUse","timestamp":1010},"#,
    r#"{"role":"toolResult","toolCallId":"call_1","toolName":"read","#,
    r##""content":[{"type":"text","text":"# tiny-pi\nA small agent runtime."}],"isError":false,"timestamp":1020}"##,
);

/// Megabytes per second for `bytes` handled in `millis` milliseconds.
fn throughput(bytes: usize, millis: f64) -> f64 {
    bytes as f64 / 1e6 / (millis / 1e3)
}

fn main() {
    let turns = if common::quick() { 2_000 } else { 20_000 };
    let json = format!("[{}]", vec![README_ROUND_TRIP; turns].join(","));
    let typed: Vec<AgentMessage> = serde_json::from_str(&json).expect("the transcript parses");
    let untyped: Value = serde_json::from_str(&json).expect("the transcript parses");
    assert_eq!(serde_json::to_string(&typed).expect("writes"), json);
    let size = format!("{} messages, {} KB", 3 * turns, json.len() / 1_000);

    let (ours, baseline) = interleaved(
        || {
            let elapsed = millis(|| {
                let messages: Vec<AgentMessage> = serde_json::from_str(black_box(&json)).unwrap();
                black_box(messages);
            });
            throughput(json.len(), elapsed)
        },
        || {
            let elapsed = millis(|| {
                let value: Value = serde_json::from_str(black_box(&json)).unwrap();
                black_box(value);
            });
            throughput(json.len(), elapsed)
        },
    );
    row(
        "json",
        &format!("parse {size}"),
        figure(ours, "megabytes_per_second"),
        Some(figure(baseline, "megabytes_per_second")),
        Goal::Reported,
    );

    let (ours, baseline) = interleaved(
        || {
            throughput(
                json.len(),
                millis(|| drop(black_box(serde_json::to_string(&typed)))),
            )
        },
        || {
            throughput(
                json.len(),
                millis(|| drop(black_box(serde_json::to_string(&untyped)))),
            )
        },
    );
    row(
        "json",
        &format!("write {size}"),
        figure(ours, "megabytes_per_second"),
        Some(figure(baseline, "megabytes_per_second")),
        Goal::Reported,
    );
}
