//! What a verify run found: one row per chapter, one cell per proof; shown
//! as a table or as JSON, and the verdict. The exit status is the verdict
//! even when the output goes nowhere (`verify … | true`): a failed proof is
//! never turned into success by a closed stdout.

use serde::Serialize;

use super::proof::{PROOFS, ProofResult};
use crate::error::{Error, Result};
use crate::manifest::ChapterId;
use crate::out::{self, outln};

/// One row of the table.
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
    pub(super) fn new(chapters: Vec<ChapterReport>) -> Report {
        let passed = chapters
            .iter()
            .all(|chapter| chapter.proofs.iter().all(|proof| proof.passed));
        Report { passed, chapters }
    }

    /// How many proofs failed.
    pub fn failed(&self) -> usize {
        self.chapters
            .iter()
            .flat_map(|chapter| &chapter.proofs)
            .filter(|proof| !proof.passed)
            .count()
    }

    /// Prints the report (the table, or JSON) and returns the verdict:
    /// `Err` (exit 1) when a proof failed, whether or not the output could be
    /// written.
    pub fn show(&self, json: bool) -> Result<()> {
        if json {
            out::json(self);
        } else {
            self.print_table();
        }
        match self.failed() {
            0 => Ok(()),
            failed => Err(Error::check_failed(format!(
                "verify: {failed} proof(s) failed (details above)"
            ))),
        }
    }

    fn print_table(&self) {
        outln!();
        let mut header = format!("{:<8}", "chapter");
        for proof in &PROOFS {
            header.push_str(&format!("{:<14}", proof.name));
        }
        outln!("{}", header.trim_end());
        for chapter in &self.chapters {
            let mut row = format!("{:<8}", chapter.id.to_string());
            for proof in &chapter.proofs {
                let mark = if proof.passed { "pass" } else { "FAIL" };
                row.push_str(&format!(
                    "{:<14}",
                    format!("{mark} {:>5.1}s", proof.seconds)
                ));
            }
            outln!("{}", row.trim_end());
        }
        for chapter in &self.chapters {
            for proof in chapter.proofs.iter().filter(|proof| !proof.passed) {
                let detail = out::escape_control_lines(&proof.detail);
                outln!("\n{} {}: {detail}", chapter.id, proof.proof);
            }
        }
        let verdict = if self.passed {
            "every checkpoint is honest"
        } else {
            "some proofs failed"
        };
        outln!("\n{verdict}");
    }
}
