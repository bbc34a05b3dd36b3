//! What a learner waits for: a cold build of the focused test in a fresh
//! practice folder, and `check` on the finished, unchanged lab. The cold
//! build's baseline is the same workspace whose crate holds a single
//! serde-derived struct: the floor that serde's derive chain sets; `check`'s
//! is a plain `cargo test` of the focused test in the same lab. Each is
//! measured in alternation with its baseline.

use std::fs;
use std::path::Path;
use std::time::Instant;

use tempfile::TempDir;

use super::Row;
use super::stats::Figure;
use crate::chapter;
use crate::error::{self, Error, Result};
use crate::locate;
use crate::out::noteln;
use crate::repo::{CourseRepo, TARGET_DIR};
use crate::runner::{DEFAULT_TIMEOUT, Invocation};
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
    let finished = lab(repo, &checkpoint)?;
    let bare = lab(repo, &checkpoint)?;
    hollow_out(bare.path(), manifest.focused_test.as_str())
        .map_err(error::io("cannot write the bare crate"))?;
    noteln!("bench: warming the registry for the learner loop …");
    run(&manifest.run, finished.path())?;

    noteln!("bench: cold builds, each from an empty target folder …");
    let cold = |lab: &Path| {
        let target = lab.join(TARGET_DIR);
        if target.exists() {
            fs::remove_dir_all(&target)
                .map_err(error::io("cannot clear the practice target folder"))?;
        }
        run(&manifest.run, lab)
    };
    let [cold_finished, cold_bare] = Figure::interleaved(
        repeats,
        [&mut || cold(finished.path()), &mut || cold(bare.path())],
    )?;

    noteln!("bench: check on an unchanged lab …");
    let mut check = || -> Result<f64> {
        let started = Instant::now();
        let lab = finished.path();
        if !crate::check::position(repo, &manifest, lab, DEFAULT_TIMEOUT)?.complete() {
            return Err(Error::check_failed(format!(
                "check does not call chapter {} complete in {}",
                manifest.id,
                lab.display()
            )));
        }
        Ok(started.elapsed().as_secs_f64())
    };
    check()?;
    let [check, plain] = Figure::interleaved(
        repeats.max(3),
        [&mut check, &mut || run(&manifest.run, finished.path())],
    )?;
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

/// Runs the focused test in `lab`: how many seconds it took, or an error
/// when it failed.
fn run(command: &[String], lab: &Path) -> Result<f64> {
    let started = Instant::now();
    let outcome = Invocation {
        command,
        extra: &[],
        dir: lab,
        target_dir: &safe_fs::folder_inside(lab, Path::new(TARGET_DIR))?,
        timeout: DEFAULT_TIMEOUT,
    }
    .run()?;
    if !outcome.success {
        return Err(Error::check_failed(format!(
            "the focused test failed in {}",
            lab.display()
        )));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The chapter's target tree in a fresh folder, as a learner who finished
/// it has it.
fn lab(repo: &CourseRepo, checkpoint: &locate::Checkpoint) -> Result<TempDir> {
    let folder = tempfile::Builder::new()
        .prefix("xtask-bench-lab-")
        .tempdir()
        .map_err(error::io("cannot create a temporary folder"))?;
    let tree = repo.tree_of(checkpoint.target.oid)?;
    tree::write_tree(&repo.git, &tree, folder.path(), &worlds::is_tooling)?;
    Ok(folder)
}

/// Replaces the crate's code in `lab` with one serde-derived struct and one
/// test, keeping the workspace, manifest and lock file.
fn hollow_out(lab: &Path, focused_test: &str) -> std::io::Result<()> {
    for folder in ["src", "tests"] {
        let folder = lab.join("course").join(folder);
        fs::remove_dir_all(&folder)?;
        fs::create_dir(&folder)?;
    }
    let lib = "#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]\n\
               pub struct Message { pub role: String, pub timestamp: u64 }\n";
    let test = "#[test]\nfn round_trips() {\n    let m = course::Message { role: \"user\".into(), timestamp: 1 };\n    \
                let json = serde_json::to_string(&m).unwrap();\n    \
                assert_eq!(serde_json::from_str::<course::Message>(&json).unwrap(), m);\n}\n";
    fs::write(lab.join("course/src/lib.rs"), lib)?;
    fs::write(lab.join(focused_test), test)
}
