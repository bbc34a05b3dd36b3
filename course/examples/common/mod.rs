//! What the benchmark examples share: the `--quick` switch, repeated runs,
//! and the one-JSON-object-per-line rows that `cargo xtask bench` reads.
//! Figures are printed, never asserted.

#![allow(dead_code)] // each example uses part of this module

use serde_json::{Value, json};

/// `--quick` asks for smaller sizes and fewer runs.
pub fn quick() -> bool {
    std::env::args().any(|arg| arg == "--quick")
}

/// How many times each figure is measured.
pub fn runs() -> usize {
    if quick() { 3 } else { 5 }
}

/// Runs `ours` and `baseline` alternately, a few times each, so a slow
/// moment of a busy machine hits both alike. Each run returns its sample.
pub fn interleaved(
    mut ours: impl FnMut() -> f64,
    mut baseline: impl FnMut() -> f64,
) -> (Vec<f64>, Vec<f64>) {
    (0..runs()).map(|_| (ours(), baseline())).unzip()
}

/// Milliseconds that `work` took.
pub fn millis(work: impl FnOnce()) -> f64 {
    let start = std::time::Instant::now();
    work();
    start.elapsed().as_secs_f64() * 1e3
}

/// The median, lowest and highest of `samples`, in `unit`.
pub fn figure(mut samples: Vec<f64>, unit: &str) -> Value {
    samples.sort_by(f64::total_cmp);
    json!({
        "median": samples[samples.len() / 2],
        "low": samples[0],
        "high": samples[samples.len() - 1],
        "unit": unit,
    })
}

/// What a row is held to.
pub enum Goal {
    /// `ours / baseline` must be at least the limit (higher is better).
    AtLeast(f64, &'static str),
    /// `ours / baseline` must be at most the limit (lower is better).
    AtMost(f64, &'static str),
    /// Shown for information only.
    Reported,
}

/// Prints one row on stdout.
pub fn row(workload: &str, size: &str, ours: Value, baseline: Option<Value>, target: Goal) {
    let ratio = baseline
        .as_ref()
        .map(|baseline| median(&ours) / median(baseline));
    let (target, met) = match (target, ratio) {
        (Goal::AtLeast(limit, words), Some(ratio)) => (words, Some(ratio >= limit)),
        (Goal::AtMost(limit, words), Some(ratio)) => (words, Some(ratio <= limit)),
        _ => ("(reported)", None),
    };
    let row = json!({
        "workload": workload,
        "size": size,
        "ours": ours,
        "baseline": baseline,
        "ratio": ratio,
        "target": target,
        "met": met,
    });
    println!("{row}");
}

fn median(figure: &Value) -> f64 {
    figure["median"].as_f64().expect("a figure has a median")
}
