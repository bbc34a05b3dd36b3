//! What a verify run found: one row per chapter, one cell per proof; shown
//! as a table or as JSON, and the verdict. The exit status is the verdict
//! even when the output goes nowhere (`verify … | true`).

use serde::Serialize;

use super::PROOFS;
use crate::error::{Error, Result};
use crate::manifest::ChapterId;
use crate::out::{self, outln};

/// What one proof found for one chapter: one cell of the table.
#[derive(Debug, Clone, Serialize)]
pub struct ProofResult {
    pub proof: &'static str,
    pub passed: bool,
    /// True when the proof does not apply (a chapter without a starter).
    pub skipped: bool,
    pub seconds: f64,
    /// What was proven, or why it failed.
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChapterReport {
    pub id: ChapterId,
    pub proofs: Vec<ProofResult>,
}

/// Every chapter's proofs; this is also the `--json` shape.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub passed: bool,
    pub chapters: Vec<ChapterReport>,
}

impl Report {
    /// Prints the report and returns the verdict, written or not.
    pub fn show(&self, json: bool) -> Result<()> {
        if json {
            out::json(self);
        } else {
            self.print_table();
        }
        match self.failures().len() {
            0 => Ok(()),
            failed => Err(Error::check_failed(format!(
                "verify: {failed} proof(s) failed (details above)"
            ))),
        }
    }

    fn failures(&self) -> Vec<(ChapterId, &ProofResult)> {
        let proofs = self.chapters.iter().flat_map(|chapter| {
            let failed = chapter.proofs.iter().filter(|proof| !proof.passed);
            failed.map(|proof| (chapter.id, proof))
        });
        proofs.collect()
    }

    fn print_table(&self) {
        outln!();
        let mut header = format!("{:<8}", "chapter");
        for (name, _) in &PROOFS {
            header.push_str(&format!("{name:<14}"));
        }
        outln!("{}", header.trim_end());
        for chapter in &self.chapters {
            let mut row = format!("{:<8}", chapter.id.to_string());
            for proof in &chapter.proofs {
                let cell = match (proof.skipped, proof.passed) {
                    (true, _) => "–".to_string(),
                    (false, true) => format!("pass {:>5.1}s", proof.seconds),
                    (false, false) => format!("FAIL {:>5.1}s", proof.seconds),
                };
                row.push_str(&format!("{cell:<14}"));
            }
            outln!("{}", row.trim_end());
        }
        for (id, proof) in self.failures() {
            let detail = out::escape_control_lines(&proof.detail);
            outln!("\n{id} {}: {detail}", proof.proof);
        }
        let verdict = if self.passed {
            "every checkpoint is honest"
        } else {
            "some proofs failed"
        };
        outln!("\n{verdict}");
    }
}
