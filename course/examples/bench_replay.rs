//! Chapter 03's system prompt replay against a bare loop over the same
//! transcript: the replay is one pass, so it should cost a small constant
//! factor of the loop at every size.
//!
//! `cargo run --release -p course --example bench_replay [-- --quick]`

mod common;

use std::hint::black_box;

use common::{Goal, figure, interleaved, millis, row};
use course::types::{
    AgentMessage, Sections, SystemMessage, current_system_prompt, text, user_message,
};

/// `messages` user messages with a system patch every thousand.
fn transcript(messages: usize) -> Vec<AgentMessage> {
    let mut transcript = Vec::with_capacity(messages + messages / 1_000 + 1);
    for i in 0..messages {
        if i % 1_000 == 0 {
            let rules = format!("rule v{i}");
            transcript.push(AgentMessage::System(SystemMessage {
                content: if i == 0 {
                    "You are Pi.".into()
                } else {
                    String::new()
                },
                sections: Some(Sections::from([("rules", Some(rules.as_str()))])),
                timestamp: i as u64,
            }));
        }
        let mut user = user_message("go");
        user.content.push(text("on"));
        transcript.push(AgentMessage::User(user));
    }
    transcript
}

fn main() {
    let sizes: &[usize] = if common::quick() {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    for &messages in sizes {
        let transcript = transcript(messages);
        let (ours, baseline) = interleaved(
            || millis(|| drop(black_box(current_system_prompt(black_box(&transcript))))),
            || {
                millis(|| {
                    let systems = black_box(&transcript)
                        .iter()
                        .filter(|message| matches!(message, AgentMessage::System(_)))
                        .count();
                    black_box(systems);
                })
            },
        );
        row(
            "replay",
            &format!("{messages} messages"),
            figure(ours, "milliseconds"),
            Some(figure(baseline, "milliseconds")),
            Goal::Reported,
        );
    }
}
