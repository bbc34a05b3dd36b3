//! `practice NN DIR`: an isolated exercise folder — the parent's tree, the
//! target's test files and `labFiles`, and the learner's guide
//! ([`lab::build`]); no history, no answer.
//!
//! Nothing is written before every check passed (see [`Destination`]); the
//! folder is built in a staging folder beside DIR and renamed into place, so
//! a failed or interrupted run (SIGINT, SIGTERM) leaves neither DIR, nor the
//! staging folder, nor the parent folders it made. Nothing is read or
//! written through a symlink: not the chapter's guide, not a symlink of the
//! tree on the way to the focused test. Nothing is printed before DIR is
//! complete and in place.

use std::path::Path;

use crate::chapter::{self, Handout};
use crate::cli;
use crate::destination::Destination;
use crate::error::{Error, Result};
use crate::exclude::{self, Excluded};
use crate::lab;
use crate::learner_text as say;
use crate::locate::{self, Checkpoint};
use crate::manifest::Manifest;
use crate::out::{self, escape_control, outln, relative_or_absolute, shell_word};
use crate::repo::CourseRepo;
use crate::signals;
use crate::tree::Written;

/// What a finished run made, for the next steps.
struct Made {
    written: Written,
    excluded: Option<Excluded>,
}

impl cli::Practice {
    /// Runs the command: creates the folder and prints the next steps.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let (id, dir) = (self.id, self.dir.as_path());
        let chapter = chapter::find(&repo.checkpoints_dir(), id)?;
        let manifest = chapter.load()?;
        let checkpoint = locate::locate(&repo.git, id)?;
        chapter::check_target(repo, &manifest, &checkpoint)?;
        let handout = chapter.handout()?;
        let here = std::env::current_dir()
            .and_then(|here| here.canonicalize())
            .map_err(|error| {
                Error::bad_input(format!("cannot read the current directory: {error}"))
            })?;
        let destination = Destination::resolve(dir, &here)?;
        destination.check(repo, &here)?;
        let root = &repo.canonical_root;
        let pattern = match destination.path.strip_prefix(root) {
            Ok(relative) => Some(exclude::pattern_for(relative)?),
            Err(_) => None,
        };
        let made = {
            let _section = signals::defer();
            create(
                repo,
                &manifest,
                &checkpoint,
                &handout,
                &destination,
                pattern.as_deref(),
            )?
        };
        print_next_steps(
            &manifest,
            &checkpoint,
            &destination.path,
            root,
            &here,
            &made,
        )
    }
}

/// Builds the folder in a staging folder beside DIR, adds the exclude
/// entry and renames the folder into place. Runs inside a signal section:
/// on an error or an interrupt the staging folder and the parent folders it
/// made are removed on the way out.
fn create(
    repo: &CourseRepo,
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    handout: &Handout,
    destination: &Destination,
    pattern: Option<&[u8]>,
) -> Result<Made> {
    // Declared in this order so they are dropped the other way round: the
    // staging folder goes first, then the parent folders that held it.
    let parents = destination.create_parents()?;
    let staging = destination.staging()?;
    let root = shell_word(&repo.root.display().to_string());
    let lab_from_root = shell_word(&relative_or_absolute(&destination.path, &repo.root));
    let pointer = say::LabPointer {
        root: &root,
        lab_from_root: &lab_from_root,
    };
    let written = lab::build(
        repo,
        manifest,
        checkpoint,
        handout,
        staging.path(),
        Some(&pointer),
    )?;
    // The lab knows its chapter; written like the tree's files, never
    // through a symlink the tree put at that name.
    let marker = crate::lab_dir::marker(manifest.id);
    let at = Path::new(crate::lab_dir::MARKER_FILE);
    crate::safe_fs::write_inside(staging.path(), at, marker.as_bytes(), 0o644)
        .map_err(Error::from)?;
    let excluded = match pattern {
        Some(pattern) => Some(exclude::add(&repo.git, pattern)?),
        None => None,
    };
    signals::check()?;
    destination.move_into_place(staging)?;
    parents.keep();
    Ok(Made { written, excluded })
}

/// What `practice` made: the folder, where it starts, what was added to
/// it, and what it left out.
fn print_made(manifest: &Manifest, checkpoint: &Checkpoint, dir: &Path, made: &Made) -> Result<()> {
    let base = checkpoint.base(manifest.mode);
    let written = &made.written;
    let id = manifest.id.to_string();
    outln!(
        "{}",
        say::practice_ready(
            &id,
            &escape_control(&manifest.title),
            &escape_control(&dir.display().to_string())
        )
    );
    outln!(
        "  {}",
        say::practice_start(
            manifest.id,
            manifest.mode,
            &base.short,
            written.files,
            written.symlinks
        )
    );
    outln!(
        "  {}",
        say::practice_added(&checkpoint.target.short, manifest.focused_test.as_str())
    );
    for test in manifest.lab_tests().into_iter().skip(1) {
        outln!("  {}", say::practice_added_step_test(test.as_str()));
    }
    for file in &manifest.lab_files {
        outln!(
            "  {}",
            say::practice_added_lab_file(&checkpoint.target.short, file.as_str())
        );
    }
    for submodule in &written.submodules {
        outln!("  {}", say::practice_submodule(submodule));
    }
    if let Some(excluded) = &made.excluded {
        outln!(
            "  {}",
            say::practice_excluded(
                &excluded.pattern,
                excluded.added,
                &excluded.file.display().to_string()
            )
        );
    }
    Ok(())
}

/// What `practice` made, then the learner's next steps.
fn print_next_steps(
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    dir: &Path,
    root: &Path,
    here: &Path,
    made: &Made,
) -> Result<()> {
    print_made(manifest, checkpoint, dir, made)?;
    let id = manifest.id.to_string();
    let guide = format!(
        "{}/{}",
        relative_or_absolute(dir, here),
        chapter::GUIDE_FILE
    );
    let run: Vec<String> = manifest.run.iter().map(|word| shell_word(word)).collect();
    let steps = say::practice_next_steps(
        &id,
        &shell_word(&guide),
        &shell_word(&relative_or_absolute(dir, here)),
        &run.join(" "),
        &shell_word(&root.display().to_string()),
        &shell_word(&relative_or_absolute(dir, root)),
    );
    outln!("\n{steps}");
    out::flush();
    Ok(())
}
