//! `verify [NN…]`: proves every checkpoint honest (README, "The main job and
//! the tests"), each proof in a folder of its own written fresh from git
//! objects under `target/xtask-verify/`.
//!
//! This module is the API: [`Options`] in, [`Report`] out ([`run`]), called
//! by the CLI (`impl cli::Verify`) and by `recut`; it reads the chapters to
//! prove. The rest, one thing per module:
//!
//! * [`proof`] — the proofs, each a name and the function that proves it, in
//!   the order they run and are shown;
//! * [`labs`] — **parent**, **red**, **green** and **steps**: the proofs that
//!   run a lab's tests and count them;
//! * [`faults`] — **faults**: each declared bug, applied to a private copy of
//!   the target, is caught by its test;
//! * [`leak`] — **leak**: what a practice folder may hold;
//! * [`names`] — the leak scanner's reading of Rust: public names, whole words;
//! * [`work`] — the work folder: fresh folders, labs, running commands;
//! * [`lock`] — one verify per repository, and what a killed one left running;
//! * [`report`] — the table, the JSON and the verdict.
//!
//! No proof depends on another's leftovers: each writes the folder it uses.

mod faults;
mod labs;
mod leak;
mod lock;
mod names;
mod proof;
mod report;
mod work;

use std::time::Duration;

use crate::chapter::{self, ChapterFolder, Handout};
use crate::cli;
use crate::error::{Error, Result};
use crate::locate::{self, Checkpoint};
use crate::manifest::{ChapterId, Manifest};
use crate::repo::CourseRepo;

pub use report::Report;

/// What to verify, and how long one run may take.
#[derive(Debug, Clone)]
pub struct Options {
    /// The chapters to verify; every chapter of `checkpoints/` when empty.
    pub ids: Vec<ChapterId>,
    /// How long one command may run before its process tree is stopped.
    pub timeout: Duration,
}

/// Proves the chapters `options` names. An `Err` is input that cannot be
/// proven (exit 2: an unknown chapter, a malformed manifest, a work folder
/// that is a symlink or a FIFO), the machine failing (exit 3) or a signal;
/// a failed proof is in the [`Report`], whose [`Report::show`] gives the verdict.
pub fn run(repo: &CourseRepo, options: &Options) -> Result<Report> {
    let chapters = chapters(repo, &options.ids)?;
    let ids: Vec<ChapterId> = chapters.iter().map(Chapter::id).collect();
    let work = work::Work::open(repo, &ids, options.timeout)?;
    let mut results = Vec::new();
    for chapter in &chapters {
        let mut proofs = Vec::new();
        for proof in &proof::PROOFS {
            proofs.push(proof.prove(&work, chapter)?);
        }
        results.push(report::ChapterReport {
            id: chapter.id(),
            proofs,
        });
    }
    Ok(Report::new(results))
}

impl cli::Verify {
    /// Runs the command: exit 2 when a chapter can't be read, 1 when any
    /// proof fails (whatever happened to the output).
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let options = Options {
            ids: self.ids.clone(),
            timeout: self.limit.duration(),
        };
        run(repo, &options)?.show(self.json)
    }
}

/// Every chapter to verify, read and located up front: a chapter that
/// can't be read is bad input (exit 2), not a failed proof.
fn chapters(repo: &CourseRepo, ids: &[ChapterId]) -> Result<Vec<Chapter>> {
    let checkpoints = repo.checkpoints_dir();
    let folders: Vec<ChapterFolder> = if ids.is_empty() {
        chapter::all(&checkpoints)?
    } else {
        ids.iter()
            .map(|id| chapter::find(&checkpoints, *id))
            .collect::<Result<_>>()?
    };
    if folders.is_empty() {
        return Err(Error::bad_input(format!(
            "nothing to verify: {} holds no chapter folders",
            checkpoints.display()
        )));
    }
    folders
        .into_iter()
        .map(|folder| Chapter::open(repo, folder))
        .collect()
}

/// Everything the proofs of one chapter share.
struct Chapter {
    manifest: Manifest,
    checkpoint: Checkpoint,
    handout: Handout,
}

impl Chapter {
    fn open(repo: &CourseRepo, folder: ChapterFolder) -> Result<Chapter> {
        let manifest = folder.load()?;
        let checkpoint = locate::locate(&repo.git, folder.id)?;
        chapter::check_target(repo, &manifest, &checkpoint)?;
        let handout = folder.handout()?;
        Ok(Chapter {
            manifest,
            checkpoint,
            handout,
        })
    }

    fn id(&self) -> ChapterId {
        self.manifest.id
    }
}
