//! What a learner waits for: a cold build of the focused test in a fresh
//! practice folder, edit → result after touching one teaching file, and
//! `check` on the finished, unchanged lab. The cold build's baseline is the
//! same workspace whose crate holds a single serde-derived struct: the floor
//! that serde's derive chain sets; `check`'s is a plain `cargo test` of the
//! focused test in the same lab, measured in alternation with it.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use super::Row;
use super::stats::{Figure, Unit};
use crate::chapter;
use crate::cli;
use crate::error::{self, Error, Result};
use crate::locate;
use crate::out::noteln;
use crate::repo::CourseRepo;
use crate::runner::Invocation;
use crate::safe_fs;
use crate::tree;
use crate::worlds;

/// The last chapter of this repository, finished: its target's learner world
/// in a fresh folder, each lab built in a target folder of its own.
pub fn learner_loop(repo: &CourseRepo, repeats: usize) -> Result<Vec<Row>> {
    let folder = chapter::all(&repo.checkpoints_dir())?
        .pop()
        .ok_or_else(|| Error::bad_input("no chapter to measure: checkpoints/ is empty"))?;
    let manifest = folder.load()?;
    let checkpoint = locate::locate(&repo.git, folder.id)?;
    let finished = Lab::new(repo, &checkpoint)?;
    let bare = Lab::new(repo, &checkpoint)?;
    bare.hollow_out(manifest.focused_test.as_str())?;
    noteln!("bench: warming the registry for the learner loop …");
    run(&manifest.run, &finished)?;
    let cold_finished = cold(&manifest.run, &finished, repeats)?;
    let cold_bare = cold(&manifest.run, &bare, repeats)?;
    let edit = edit_to_result(&manifest.run, &finished, repeats)?;
    let (check, plain) = check_unchanged(repo, &manifest, &finished, repeats)?;
    Ok(vec![
        Row {
            workload: "learner cold build".into(),
            size: manifest.run.join(" "),
            met: Some(cold_finished.median <= 8.0),
            ratio: Some(cold_finished.ratio(&cold_bare)),
            ours: cold_finished,
            baseline: Some(cold_bare),
            target: "≤ 8 s (baseline: one serde struct)".into(),
        },
        Row {
            workload: "learner edit → result".into(),
            size: "touch types.rs".into(),
            met: Some(edit.median <= 1.0),
            ours: edit,
            baseline: None,
            ratio: None,
            target: "≤ 1 s".into(),
        },
        Row {
            workload: "check, unchanged lab".into(),
            size: format!("check {} (solved)", manifest.id),
            met: Some(check.ratio(&plain) <= 2.5),
            ratio: Some(check.ratio(&plain)),
            ours: check,
            baseline: Some(plain),
            target: "≤ 2.5× (baseline: the focused `cargo test`)".into(),
        },
    ])
}

/// `check` on the finished `lab` when nothing changed since its last check,
/// and a plain run of the focused test there, alternating.
fn check_unchanged(
    repo: &CourseRepo,
    manifest: &crate::manifest::Manifest,
    lab: &Lab,
    repeats: usize,
) -> Result<(Figure, Figure)> {
    noteln!("bench: check on an unchanged lab …");
    let limit = cli::Timeout {
        secs: crate::runner::DEFAULT_TIMEOUT_SECS,
    };
    let mut check = || -> Result<f64> {
        let started = Instant::now();
        let position = crate::check::position(repo, manifest, lab.path(), limit.duration())?;
        if !position.complete() {
            return Err(Error::check_failed(format!(
                "check does not call chapter {} complete in {}",
                manifest.id,
                lab.path().display()
            )));
        }
        Ok(started.elapsed().as_secs_f64())
    };
    check()?;
    let mut plain = || run(&manifest.run, lab).map(|took| took.as_secs_f64());
    let [check, plain] =
        Figure::interleaved(repeats.max(3), Unit::Seconds, [&mut check, &mut plain])?;
    Ok((check, plain))
}

/// Runs the focused test in `lab`: how long it took, or an error when it
/// failed.
fn run(command: &[String], lab: &Lab) -> Result<Duration> {
    let started = Instant::now();
    let outcome = Invocation {
        command,
        extra: &[],
        dir: lab.path(),
        target_dir: &safe_fs::folder_inside(lab.path(), Path::new(crate::repo::TARGET_DIR))?,
        timeout: crate::runner::DEFAULT_TIMEOUT,
    }
    .run()?;
    if !outcome.success {
        return Err(Error::check_failed(format!(
            "the focused test failed in {}",
            lab.path().display()
        )));
    }
    Ok(started.elapsed())
}

/// `repeats` builds of the focused test in `lab`, each from an empty
/// target folder.
fn cold(command: &[String], lab: &Lab, repeats: usize) -> Result<Figure> {
    let mut samples = Vec::new();
    for round in 0..repeats {
        noteln!(
            "bench: cold build {} of {repeats} in {} …",
            round + 1,
            lab.path().display()
        );
        let target = lab.path().join(crate::repo::TARGET_DIR);
        if target.exists() {
            fs::remove_dir_all(&target)
                .map_err(error::io("cannot clear the practice target folder"))?;
        }
        samples.push(run(command, lab)?.as_secs_f64());
    }
    Ok(Figure::of(samples, Unit::Seconds))
}

/// Edit → result: append a comment to a teaching file of the built `lab`
/// and run the focused test again, at least three times.
fn edit_to_result(command: &[String], lab: &Lab, repeats: usize) -> Result<Figure> {
    let teaching = lab.path().join("course/src/types.rs");
    let mut edits = Vec::new();
    for round in 0..repeats.max(3) {
        noteln!("bench: edit → result {} …", round + 1);
        let mut source =
            fs::read_to_string(&teaching).map_err(error::io("cannot read types.rs"))?;
        source.push_str(&format!("\n// learner edit {round}\n"));
        fs::write(&teaching, source).map_err(error::io("cannot edit types.rs"))?;
        edits.push(run(command, lab)?.as_secs_f64());
    }
    Ok(Figure::of(edits, Unit::Seconds))
}

/// Chapter 03's target tree in a fresh folder, as a learner who finished it has it.
struct Lab(tempfile::TempDir);

impl Lab {
    fn new(repo: &CourseRepo, checkpoint: &locate::Checkpoint) -> Result<Lab> {
        let folder = tempfile::Builder::new()
            .prefix("xtask-bench-lab-")
            .tempdir()
            .map_err(error::io("cannot create a temporary folder"))?;
        let tree = repo.tree_of(checkpoint.target.oid)?;
        tree::write_tree(&repo.git, &tree, folder.path(), &worlds::is_tooling)?;
        Ok(Lab(folder))
    }

    fn path(&self) -> &std::path::Path {
        self.0.path()
    }

    /// Replaces the crate's code with one serde-derived struct and one test,
    /// keeping the workspace, manifest and lock file.
    fn hollow_out(&self, focused_test: &str) -> Result<()> {
        let course = self.path().join("course");
        for folder in ["src", "tests"] {
            let folder = course.join(folder);
            fs::remove_dir_all(&folder).map_err(error::io("cannot clear the bare crate"))?;
            fs::create_dir(&folder).map_err(error::io("cannot create the bare crate"))?;
        }
        let lib = "#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]\n\
                   pub struct Message { pub role: String, pub timestamp: u64 }\n";
        let test = "#[test]\nfn round_trips() {\n    let m = course::Message { role: \"user\".into(), timestamp: 1 };\n    \
                    let json = serde_json::to_string(&m).unwrap();\n    \
                    assert_eq!(serde_json::from_str::<course::Message>(&json).unwrap(), m);\n}\n";
        fs::write(course.join("src/lib.rs"), lib)
            .map_err(error::io("cannot write the bare crate"))?;
        fs::write(self.path().join(focused_test), test)
            .map_err(error::io("cannot write the bare crate"))?;
        Ok(())
    }
}
