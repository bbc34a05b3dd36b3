//! `verify [NN…]`: proves every checkpoint honest (README, "The main job and
//! the tests"), each proof in a fresh folder ([`work`]): [`labs`], [`faults`],
//! [`leak`], [`starter`]. No proof depends on another's leftovers.

mod faults;
mod labs;
mod leak;
mod report;
mod starter;
mod work;

use std::time::{Duration, Instant};

use crate::chapter::{self, ChapterFolder, Handout};
use crate::cli;
use crate::error::{Error, Result};
use crate::locate::{self, Checkpoint};
use crate::manifest::{ChapterId, Manifest};
use crate::repo::CourseRepo;

pub use report::Report;
use report::{ChapterReport, ProofResult};

/// A proof's function: what was proven, or why it failed.
type Prove = fn(&work::Work, &Chapter) -> Result<String>;

/// Every proof, in the order they run and are shown, by its name in the table.
const PROOFS: [(&str, Prove); 7] = [
    ("parent", labs::parent),
    ("red", labs::red),
    ("green", labs::green),
    ("steps", labs::steps),
    ("starter", starter::starter),
    ("faults", faults::faults),
    ("leak", leak::leak),
];

/// Why proof `name` does not apply to `chapter`, when it does not.
fn not_applicable(name: &str, chapter: &Chapter) -> Option<&'static str> {
    let no_starter = name == "starter" && chapter.handout.starter.is_empty();
    no_starter.then_some("no starter folder: nothing to prove")
}

/// What to verify, and how long one run may take.
#[derive(Debug, Clone)]
pub struct Options {
    /// The chapters to verify; every chapter of `checkpoints/` when empty.
    pub ids: Vec<ChapterId>,
    /// How long one command may run before its process tree is stopped.
    pub timeout: Duration,
}

/// Proves the chapters `options` names: `Err` when they cannot be proven
/// (exit 2, 3 or a signal), a failed proof in the [`Report`].
pub fn run(repo: &CourseRepo, options: &Options) -> Result<Report> {
    let chapters = chapters(repo, &options.ids)?;
    let ids: Vec<ChapterId> = chapters.iter().map(Chapter::id).collect();
    let work = work::Work::open(repo, &ids, options.timeout)?;
    let mut report = Report {
        passed: true,
        chapters: Vec::new(),
    };
    for chapter in &chapters {
        let mut proofs = Vec::new();
        for (name, prove) in PROOFS {
            if let Some(why) = not_applicable(name, chapter) {
                work::progress(chapter.id(), &format!("{name}: skipped, {why}"));
                let (passed, skipped, seconds, detail) = (true, true, 0.0, why.to_string());
                let proof = name;
                proofs.push(ProofResult {
                    proof,
                    passed,
                    skipped,
                    seconds,
                    detail,
                });
                continue;
            }
            let started = Instant::now();
            let outcome = prove(&work, chapter);
            let seconds = started.elapsed().as_secs_f64();
            // A failure is the proof's detail; only a signal or the machine
            // failing (exit 3 or more) ends the whole run.
            let (passed, detail) = match outcome {
                Ok(detail) => (true, detail),
                Err(error) if error.exit_code() >= 3 => return Err(error),
                Err(error) => (false, error.to_string()),
            };
            let mark = if passed { "ok" } else { "FAILED" };
            let line = format!("{name}: {mark} ({seconds:.1}s) {detail}");
            work::progress(chapter.id(), &line);
            report.passed &= passed;
            proofs.push(ProofResult {
                proof: name,
                passed,
                skipped: false,
                seconds,
                detail,
            });
        }
        report.chapters.push(ChapterReport {
            id: chapter.id(),
            proofs,
        });
    }
    Ok(report)
}

impl cli::Verify {
    /// Runs the command: exit 2 when a chapter can't be read, 1 when a proof fails.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let options = Options {
            ids: self.ids.clone(),
            timeout: self.limit.duration(),
        };
        run(repo, &options)?.show(self.json)
    }
}

/// Every chapter to verify, read and located up front (exit 2 when one can't be).
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
        // A target that is no real cut can prove nothing: refused, not warned.
        if let Some(idle) = chapter::idle_layer(repo, &manifest, &checkpoint)? {
            return Err(Error::bad_input(idle));
        }
        chapter::check_target(repo, &manifest, &checkpoint)?;
        let handout = folder.handout(&manifest)?;
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
