//! The proofs: each is a name and the function that proves it, listed once,
//! in the order they run and are shown. A proof's function writes the
//! folders it uses itself, so no proof depends on another one's leftovers.

use std::time::Instant;

use serde::Serialize;

use super::work::{Work, progress};
use super::{Chapter, faults, labs, leak};
use crate::error::Result;

/// What one proof found for one chapter: one cell of verify's table.
#[derive(Debug, Clone, Serialize)]
pub struct ProofResult {
    pub proof: &'static str,
    pub passed: bool,
    pub seconds: f64,
    /// What was proven, or why it failed.
    pub detail: String,
}

/// What a proof's function returns: what was proven, or why it failed.
type Prove = fn(&Work, &Chapter) -> Result<String>;

/// One proof: its name in the table and the function that proves it.
pub(super) struct Proof {
    pub name: &'static str,
    prove: Prove,
}

/// Every proof, in order.
pub(super) const PROOFS: [Proof; 6] = [
    Proof {
        name: "parent",
        prove: labs::parent,
    },
    Proof {
        name: "red",
        prove: labs::red,
    },
    Proof {
        name: "green",
        prove: labs::green,
    },
    Proof {
        name: "steps",
        prove: labs::steps,
    },
    Proof {
        name: "faults",
        prove: faults::faults,
    },
    Proof {
        name: "leak",
        prove: leak::leak,
    },
];

impl Proof {
    /// Proves it for one chapter, timed, with a progress line. A failure is
    /// the result's detail; only a signal or the machine failing (exit 3 or
    /// more) ends the whole run.
    pub fn prove(&self, work: &Work, chapter: &Chapter) -> Result<ProofResult> {
        let started = Instant::now();
        let outcome = (self.prove)(work, chapter);
        let seconds = started.elapsed().as_secs_f64();
        let (passed, detail) = match outcome {
            Ok(detail) => (true, detail),
            Err(error) if error.exit_code() >= 3 => return Err(error),
            Err(error) => (false, error.to_string()),
        };
        let mark = if passed { "ok" } else { "FAILED" };
        progress(
            chapter.id(),
            &format!("{}: {mark} ({seconds:.1}s) {detail}", self.name),
        );
        Ok(ProofResult {
            proof: self.name,
            passed,
            seconds,
            detail,
        })
    }
}
