//! `practice NN DIR`: an isolated exercise folder — the parent's tree, the
//! target's focused test and the learner's guide; no history, no answer.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use crate::chapter::{self, ChapterFolder};
use crate::cli;
use crate::error::{self, Error, Result};
use crate::locate::{self, Checkpoint};
use crate::manifest::{ChapterId, Manifest};
use crate::repo::CourseRepo;
use crate::tree::{self, Written};
use crate::worlds;

/// Runs the command: creates `dir` and prints the next steps.
impl cli::Practice {
    /// Runs the command: creates the folder and prints the next steps.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        run(repo, self.id, &self.dir)
    }
}

fn run(repo: &CourseRepo, id: ChapterId, dir: &Path) -> Result<()> {
    let chapter = chapter::find(&repo.checkpoints_dir(), id)?;
    let manifest = chapter.load()?;
    let checkpoint = locate::locate(&repo.git, id)?;
    let dir =
        std::path::absolute(dir).map_err(error::io(format!("cannot resolve {}", dir.display())))?;
    check_destination(&dir)?;

    let written = create(repo, &chapter, &manifest, &checkpoint, &dir)?;
    let excluded = exclude_if_inside(repo, &dir)?;
    print_next_steps(&manifest, &checkpoint, &dir, &written, excluded.as_deref());
    Ok(())
}

/// Refuses a destination that holds anything: existing work is never overwritten.
fn check_destination(dir: &Path) -> Result<()> {
    match fs::symlink_metadata(dir) {
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Error::bad_input(format!(
            "cannot inspect {}: {error}",
            dir.display()
        ))),
        Ok(meta) if !meta.is_dir() => Err(Error::bad_input(format!(
            "{} exists and is not a folder: choose a new folder name; nothing was touched",
            dir.display()
        ))),
        Ok(_) => {
            let mut entries =
                fs::read_dir(dir).map_err(error::io(format!("cannot read {}", dir.display())))?;
            if entries.next().is_some() {
                Err(Error::bad_input(format!(
                    "{} exists and is not empty: choose a new folder (existing work is never overwritten); nothing was touched",
                    dir.display()
                )))
            } else {
                Ok(())
            }
        }
    }
}

/// Builds the folder in a temporary sibling and renames it into place, so an
/// interrupted or failed run leaves no half-written `dir`.
fn create(
    repo: &CourseRepo,
    chapter: &ChapterFolder,
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    dir: &Path,
) -> Result<Written> {
    let parent = dir
        .parent()
        .ok_or_else(|| Error::bad_input(format!("{} has no parent folder", dir.display())))?;
    fs::create_dir_all(parent).map_err(error::io(format!("cannot create {}", parent.display())))?;
    let name = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.practice-"))
        .tempdir_in(parent)
        .map_err(error::io(format!(
            "cannot create a temporary folder in {}",
            parent.display()
        )))?;
    let guide = fs::read_to_string(chapter.guide_path()).map_err(|error| {
        Error::bad_input(format!(
            "cannot read {}: {error}; every chapter folder needs its learner's guide",
            chapter.guide_path().display()
        ))
    })?;
    let written = build(repo, manifest, checkpoint, &guide, staging.path())?;
    fs::rename(staging.path(), dir).map_err(|error| {
        Error::bad_input(format!(
            "cannot move the practice folder into place at {}: {error}; nothing was left there",
            dir.display()
        ))
    })?;
    // Renamed away: nothing is left for the guard to clean up.
    let _ = staging.keep();
    Ok(written)
}

/// Writes a practice folder's content into the empty folder `dest`: the base
/// tree (the parent's when rebuilding) without `checkpoints/`, the target's
/// focused test and `LEARNING.md` with a header. `verify` builds its leak
/// proof with this same function.
pub fn build(
    repo: &CourseRepo,
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    guide: &str,
    dest: &Path,
) -> Result<Written> {
    let git = &repo.git;
    let base_tree = repo.tree_of(checkpoint.base(manifest.mode).oid)?;
    let written = tree::write_tree(git, &base_tree, dest, &worlds::is_tooling)?;

    let target_tree = repo.tree_of(checkpoint.target.oid)?;
    let focused = manifest.focused_test.as_str();
    let test = tree::file_at(git, &target_tree, focused)?.ok_or_else(|| {
        Error::bad_input(format!(
            "the focused test {focused} is not in target {}: fix `focusedTest` in the manifest",
            checkpoint.target.short
        ))
    })?;
    let test_path = manifest.focused_test.under(dest);
    remove_if_present(&test_path)?;
    if let Some(folder) = test_path.parent() {
        fs::create_dir_all(folder)
            .map_err(error::io(format!("cannot create {}", folder.display())))?;
    }
    tree::write_new_file(&test_path, &test, 0o644)?;

    let guide_path = dest.join(chapter::GUIDE_FILE);
    remove_if_present(&guide_path)?;
    tree::write_new_file(
        &guide_path,
        chapter::guide_with_header(manifest, checkpoint, guide).as_bytes(),
        0o644,
    )?;
    Ok(written)
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(Error::bad_input(format!(
            "{} is a folder in the base tree: it can't be replaced by a file",
            path.display()
        ))),
        Ok(_) => {
            fs::remove_file(path).map_err(error::io(format!("cannot replace {}", path.display())))
        }
        Err(_) => Ok(()),
    }
}

/// Adds `dir` to `.git/info/exclude` when it lies inside the work tree, so
/// the exercise can't be committed by accident. Returns the pattern added.
fn exclude_if_inside(repo: &CourseRepo, dir: &Path) -> Result<Option<String>> {
    let (Ok(dir), Ok(root)) = (dir.canonicalize(), repo.root.canonicalize()) else {
        return Ok(None);
    };
    let Ok(relative) = dir.strip_prefix(&root) else {
        return Ok(None);
    };
    let pattern = format!("/{}/", relative.to_string_lossy());
    let exclude = repo.git.path().join("info").join("exclude");
    let existing = match fs::read_to_string(&exclude) {
        Ok(text) => text,
        Err(error) if error.kind() == ErrorKind::NotFound => String::new(),
        Err(error) => {
            return Err(Error::bad_input(format!(
                "cannot read {}: {error}",
                exclude.display()
            )));
        }
    };
    if existing.lines().any(|line| line.trim() == pattern) {
        return Ok(Some(pattern));
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&pattern);
    text.push('\n');
    if let Some(info) = exclude.parent() {
        fs::create_dir_all(info).map_err(error::io(format!("cannot create {}", info.display())))?;
    }
    fs::write(&exclude, text).map_err(error::io(format!("cannot write {}", exclude.display())))?;
    Ok(Some(pattern))
}

fn print_next_steps(
    manifest: &Manifest,
    checkpoint: &Checkpoint,
    dir: &Path,
    written: &Written,
    excluded: Option<&str>,
) {
    let base = checkpoint.base(manifest.mode);
    println!(
        "Practice folder for chapter {} ({}) is ready: {}",
        manifest.id,
        manifest.title,
        dir.display()
    );
    println!(
        "  tree of {} {} ({} files, {} symlinks)",
        base.short, base.subject, written.files, written.symlinks
    );
    println!(
        "  plus the focused test {} from target {}",
        manifest.focused_test, checkpoint.target.short
    );
    for submodule in &written.submodules {
        println!("  note: submodule {submodule} was skipped (left as an empty folder)");
    }
    if let Some(pattern) = excluded {
        println!("  added {pattern} to .git/info/exclude so it can't be committed by accident");
    }
    let shown = display_path(dir);
    println!();
    println!("Next steps:");
    println!("  1. Read {shown}/{}.", chapter::GUIDE_FILE);
    println!("  2. Predict the first result, then run the focused test:");
    println!("       cd {shown} && {}", manifest.run.join(" "));
    println!("  3. From the course repository, keep a report running while you edit:");
    println!("       cargo xtask check {} {shown} --watch", manifest.id);
    println!(
        "     and when you are stuck: cargo xtask hint {}",
        manifest.id
    );
}

/// `dir` relative to the current directory when it is below it, else absolute.
pub fn display_path(dir: &Path) -> String {
    let here = std::env::current_dir().unwrap_or_default();
    match dir.strip_prefix(&here) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => dir.display().to_string(),
    }
}
