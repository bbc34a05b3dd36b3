//! What a learner waits for, each measured in alternation with its baseline:
//! a cold build of the focused test (baseline: a one-struct serde crate) and
//! `check` on the finished lab, unchanged and after an edit (baseline: the
//! plain `cargo test` runs check makes).

use std::cell::Cell;
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

/// The last chapter finished, in a fresh folder, each lab with its own target folder.
pub fn learner_loop(repo: &CourseRepo, repeats: usize) -> Result<Vec<Row>> {
    let folder = chapter::all(&repo.checkpoints_dir())?
        .pop()
        .ok_or_else(|| Error::bad_input("no chapter to measure: checkpoints/ is empty"))?;
    let manifest = folder.load()?;
    let checkpoint = locate::locate(&repo.git, folder.id)?;
    let finished = lab_of(repo, &checkpoint)?;
    let bare = lab_of(repo, &checkpoint)?;
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
    let lab = finished.path();
    let check = || -> Result<f64> {
        let started = Instant::now();
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
    let repeats = repeats.max(3);
    let [unchanged, plain] =
        Figure::interleaved(repeats, [&mut || check(), &mut || run(&manifest.run, lab)])?;

    noteln!("bench: check after an edit …");
    // The plain runs get a lab of their own: a build check did not see
    // would make check clean its lab (README, "Freshness").
    let other = lab_of(repo, &checkpoint)?;
    run(&manifest.run, other.path())?;
    // A one-line edit of the first teaching file (a new private function)
    // before each run, outside its time.
    let teaching = manifest.teaching_files[0].as_str();
    let original = fs::read_to_string(Path::new(lab).join(teaching))
        .map_err(error::io("cannot read a teaching file"))?;
    let edits = Cell::new(0);
    let edit = |lab: &Path| {
        edits.set(edits.get() + 1);
        let line = format!(
            "#[allow(dead_code)]\nfn xtask_bench_edit_{}() {{}}\n",
            edits.get()
        );
        fs::write(lab.join(teaching), format!("{original}{line}"))
            .map_err(error::io("cannot edit a teaching file"))
    };
    // On a solved lab check runs the whole suite after its own runs (README,
    // "The whole lab"), so the plain side runs it too.
    let suite = ["cargo", "test", "--workspace"].map(String::from);
    run(&suite, other.path())?;
    let [edited, edited_plain] = Figure::interleaved(
        repeats,
        [&mut || edit(lab).and_then(|()| check()), &mut || {
            edit(other.path()).and_then(|()| run(&suite, other.path()))
        }],
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
            met: Some(unchanged.ratio(&plain) <= 2.5),
            ratio: Some(unchanged.ratio(&plain)),
            ours: unchanged,
            baseline: Some(plain),
            target: "≤ 2.5× (baseline: the focused `cargo test`)".into(),
        },
        Row {
            workload: "check after an edit".into(),
            size: format!("check {} (solved), one line added", manifest.id),
            met: Some(edited.ratio(&edited_plain) <= 1.5),
            ratio: Some(edited.ratio(&edited_plain)),
            ours: edited,
            baseline: Some(edited_plain),
            target: "≤ 1.5× (baseline: the same edit, then `cargo test --workspace`)".into(),
        },
    ])
}

/// Runs `command` (a cargo test) in `lab`: its seconds, or an error when it failed.
fn run(command: &[String], lab: &Path) -> Result<f64> {
    let started = Instant::now();
    let outcome = Invocation {
        command,
        dir: lab,
        target_dir: &safe_fs::folder_inside(lab, Path::new(TARGET_DIR))?,
        timeout: DEFAULT_TIMEOUT,
    }
    .run()?;
    if !outcome.success {
        return Err(Error::check_failed(format!(
            "`{}` failed in {}",
            command.join(" "),
            lab.display()
        )));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The chapter's target tree in a fresh folder, as a learner who finished it has it.
fn lab_of(repo: &CourseRepo, checkpoint: &locate::Checkpoint) -> Result<TempDir> {
    let folder = tempfile::Builder::new()
        .prefix("xtask-bench-lab-")
        .tempdir()
        .map_err(error::io("cannot create a temporary folder"))?;
    let tree = repo.tree_of(checkpoint.target.oid)?;
    tree::write_tree(&repo.git, &tree, folder.path(), &worlds::is_tooling)?;
    Ok(folder)
}

/// Replaces the crate's code in `lab` with one serde-derived struct and one test.
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
