//! Repeated measurements reduced to a median and a spread.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// A measured figure: the median of the runs, and the lowest and highest.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Figure {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    pub unit: Unit,
}

/// How a figure reads; time-like units are better when lower.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Milliseconds,
    Seconds,
    MillionEventsPerSecond,
    MegabytesPerSecond,
}

impl Figure {
    /// Runs every workload once per round for `repeats` rounds, alternating;
    /// each run returns its seconds.
    pub fn interleaved<const N: usize>(
        repeats: usize,
        mut runs: [&mut dyn FnMut() -> Result<f64>; N],
    ) -> Result<[Figure; N]> {
        let mut samples: [Vec<f64>; N] = std::array::from_fn(|_| Vec::new());
        for _ in 0..repeats.max(1) {
            for (run, samples) in runs.iter_mut().zip(samples.iter_mut()) {
                samples.push(run()?);
            }
        }
        Ok(samples.map(|mut samples| {
            samples.sort_by(f64::total_cmp);
            Figure {
                median: samples[samples.len() / 2],
                low: samples[0],
                high: samples[samples.len() - 1],
                unit: Unit::Seconds,
            }
        }))
    }

    /// `self / other` of the medians.
    pub fn ratio(&self, other: &Figure) -> f64 {
        self.median / other.median
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spread = match self.median > 0.0 {
            true => 100.0 * (self.high - self.low) / self.median,
            false => 0.0,
        };
        let suffix = match self.unit {
            Unit::Milliseconds => "ms",
            Unit::Seconds => "s",
            Unit::MillionEventsPerSecond => "M events/s",
            Unit::MegabytesPerSecond => "MB/s",
        };
        let precision = match self.median {
            100.0.. => 0,
            10.0.. => 1,
            _ => 2,
        };
        write!(f, "{:.*} {suffix} ±{spread:.0}%", precision, self.median)
    }
}
