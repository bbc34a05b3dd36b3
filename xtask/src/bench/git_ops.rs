//! Practice and locate on generated repositories, against the git commands
//! the original course (or a shell user) would run instead.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{Oid, Repository, Signature, Time};
use tempfile::TempDir;

use super::Row;
use super::stats::{Figure, Unit, ms};
use crate::error::{Error, Result};
use crate::out::noteln;
use crate::runner::Invocation;

const MANIFEST: &str = r#"{"id":"01","title":"bench","focusedTest":"course/tests/focused.rs","teachingFiles":[],"run":["true"]}"#;

/// `practice` vs `git archive <parent> | tar -x` at 100, 1,000 and 10,000 files.
pub fn practice(quick: bool, repeats: usize) -> Result<Vec<Row>> {
    let sizes: &[usize] = if quick {
        &[100, 1_000]
    } else {
        &[100, 1_000, 10_000]
    };
    sizes
        .iter()
        .map(|&files| {
            noteln!("bench: practice on {files} files …");
            let fixture = files_repo(files)?;
            let out = scratch_dir("xtask-bench-out-")?;
            let round = std::cell::Cell::new(0);
            let next_dir = || {
                round.set(round.get() + 1);
                out.path().join(format!("lab-{}", round.get()))
            };
            let parent = fixture.parent.to_string();
            let mut ours = || {
                let dir = next_dir();
                let took = timed(&xtask(&["practice", "01", &text(&dir)])?, &fixture.root);
                let _ = fs::remove_dir_all(&dir);
                Ok(ms(took?))
            };
            let mut baseline = || {
                let dir = next_dir();
                let script = r#"mkdir -p "$2" && git -C "$1" archive "$3" | tar -x -C "$2""#;
                let sh = words(&[
                    "sh",
                    "-c",
                    script,
                    "sh",
                    &text(&fixture.root),
                    &text(&dir),
                    &parent,
                ]);
                let took = timed(&sh, &fixture.root);
                let _ = fs::remove_dir_all(&dir);
                Ok(ms(took?))
            };
            let [ours, baseline] =
                Figure::interleaved(repeats, Unit::Milliseconds, [&mut ours, &mut baseline])?;
            let held = (files == 10_000).then_some((1.0, "≤ 1.0× git archive | tar"));
            Ok(Row::timed_against(
                "practice",
                format!("{files} files"),
                ours,
                baseline,
                held,
            ))
        })
        .collect()
}

/// `checkpoint` (locate) vs `git log --format='%H %P %s' | grep -m1`, with
/// the chapter at the oldest end of 1,000 to 100,000 commits.
pub fn locate(quick: bool, repeats: usize) -> Result<Vec<Row>> {
    let sizes: &[usize] = if quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 10_000, 100_000]
    };
    sizes
        .iter()
        .map(|&commits| {
            noteln!("bench: locate in {commits} commits …");
            let fixture = history_repo(commits)?;
            let mut ours = || {
                Ok(ms(timed(
                    &xtask(&["checkpoint", "01", "--json"])?,
                    &fixture.root,
                )?))
            };
            let mut baseline = || {
                let script = "git log --format='%H %P %s' | grep -m1 -F ' course(01):'";
                Ok(ms(timed(&words(&["sh", "-c", script]), &fixture.root)?))
            };
            let [ours, baseline] =
                Figure::interleaved(repeats, Unit::Milliseconds, [&mut ours, &mut baseline])?;
            let held = (commits == 100_000).then_some((1.0, "≤ 1.0× git log | grep"));
            Ok(Row::timed_against(
                "locate",
                format!("{commits} commits"),
                ours,
                baseline,
                held,
            ))
        })
        .collect()
}

/// A generated repository and the chapter's parent commit.
struct Generated {
    _dir: TempDir,
    root: PathBuf,
    parent: Oid,
}

/// How long one benchmarked command may take.
const TIMEOUT: Duration = crate::runner::DEFAULT_TIMEOUT;

/// This very binary with `args`.
fn xtask(args: &[&str]) -> Result<Vec<String>> {
    let exe = std::env::current_exe()
        .map_err(|error| Error::bad_input(format!("cannot find the running binary: {error}")))?;
    Ok(std::iter::once(text(&exe)).chain(words(args)).collect())
}

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

/// Runs `command` in `dir` (in its own process group, like every child) and
/// returns how long it took.
fn timed(command: &[String], dir: &Path) -> Result<Duration> {
    let started = Instant::now();
    let run = Invocation {
        command,
        extra: &[],
        dir,
        target_dir: &dir.join(crate::repo::TARGET_DIR),
        timeout: TIMEOUT,
    }
    .run()?;
    let took = started.elapsed();
    if run.success {
        Ok(took)
    } else {
        Err(Error::check_failed(format!(
            "the benchmarked command `{}` failed:\n{}",
            command.join(" "),
            run.output
        )))
    }
}

fn signature(time: i64) -> Result<Signature<'static>> {
    Signature::new("Bench", "bench@example.com", &Time::new(time, 0)).map_err(git_error)
}

fn git_error(error: git2::Error) -> Error {
    Error::bad_input(format!(
        "cannot generate a bench repository: {}",
        error.message()
    ))
}

/// A temporary folder in memory (`/dev/shm`) where there is one: the VM's
/// disk write-back stalls would otherwise drown the comparison in noise.
/// Both sides of every row use the same kind of folder.
fn scratch_dir(prefix: &str) -> Result<TempDir> {
    let memory = Path::new("/dev/shm");
    let builder = || {
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix);
        builder
    };
    let dir = if memory.is_dir() {
        builder().tempdir_in(memory)
    } else {
        builder().tempdir()
    };
    dir.map_err(|error| Error::bad_input(format!("cannot create a bench folder: {error}")))
}

fn new_repo() -> Result<(TempDir, Repository)> {
    let dir = scratch_dir("xtask-bench-")?;
    let repo = Repository::init(dir.path()).map_err(git_error)?;
    let chapter = dir.path().join("checkpoints/01");
    fs::create_dir_all(&chapter).map_err(|error| Error::bad_input(error.to_string()))?;
    fs::write(chapter.join("checkpoint.json"), MANIFEST)
        .map_err(|error| Error::bad_input(error.to_string()))?;
    fs::write(chapter.join("LEARNING.md"), "# bench\n")
        .map_err(|error| Error::bad_input(error.to_string()))?;
    Ok((dir, repo))
}

/// Packs the objects, as a clone would have them (the baselines run git).
fn repack(root: &Path) -> Result<()> {
    timed(&words(&["git", "repack", "-adq"]), root).map(drop)
}

/// `files` source files of about 1 KiB in folders of 100, then the chapter.
fn files_repo(files: usize) -> Result<Generated> {
    let (dir, repo) = new_repo()?;
    let mut root = repo.treebuilder(None).map_err(git_error)?;
    for folder in 0..files.div_ceil(100) {
        let mut builder = repo.treebuilder(None).map_err(git_error)?;
        for file in 0..100.min(files - folder * 100) {
            let content: String = (0..24)
                .map(|line| {
                    format!("// folder {folder} file {file} line {line}: some source text here\n")
                })
                .collect();
            let blob = repo.blob(content.as_bytes()).map_err(git_error)?;
            let mode = if file % 10 == 0 { 0o100755 } else { 0o100644 };
            builder
                .insert(format!("file_{file}.rs"), blob, mode)
                .map_err(git_error)?;
        }
        let tree = builder.write().map_err(git_error)?;
        root.insert(format!("module_{folder}"), tree, 0o040000)
            .map_err(git_error)?;
    }
    let parent_tree = root.write().map_err(git_error)?;
    let parent = commit(&repo, "Generated sources", parent_tree, &[], 1)?;
    let focused = repo
        .blob(b"#[test]\nfn focused() {}\n")
        .map_err(git_error)?;
    let tests = single(&repo, "focused.rs", focused, 0o100644)?;
    let course = single(&repo, "tests", tests, 0o040000)?;
    let mut target_tree = repo
        .treebuilder(Some(&repo.find_tree(parent_tree).map_err(git_error)?))
        .map_err(git_error)?;
    target_tree
        .insert("course", course, 0o040000)
        .map_err(git_error)?;
    let target_tree = target_tree.write().map_err(git_error)?;
    let target = commit(
        &repo,
        "course(01): bench chapter",
        target_tree,
        &[parent],
        2,
    )?;
    set_head(&repo, target)?;
    repack(dir.path())?;
    Ok(Generated {
        root: dir.path().to_path_buf(),
        _dir: dir,
        parent,
    })
}

/// `commits` commits with the chapter's target second from the root.
fn history_repo(commits: usize) -> Result<Generated> {
    let (dir, repo) = new_repo()?;
    let focused = repo
        .blob(b"#[test]\nfn focused() {}\n")
        .map_err(git_error)?;
    let tests = single(&repo, "focused.rs", focused, 0o100644)?;
    let course = single(&repo, "tests", tests, 0o040000)?;
    let tree = single(&repo, "course", course, 0o040000)?;
    let parent = commit(&repo, "Root", tree, &[], 0)?;
    let mut head = commit(&repo, "course(01): bench chapter", tree, &[parent], 1)?;
    for index in 2..commits {
        head = commit(
            &repo,
            &format!("Work item {index}"),
            tree,
            &[head],
            index as i64,
        )?;
    }
    set_head(&repo, head)?;
    repack(dir.path())?;
    Ok(Generated {
        root: dir.path().to_path_buf(),
        _dir: dir,
        parent,
    })
}

fn single(repo: &Repository, name: &str, oid: Oid, mode: i32) -> Result<Oid> {
    let mut builder = repo.treebuilder(None).map_err(git_error)?;
    builder.insert(name, oid, mode).map_err(git_error)?;
    builder.write().map_err(git_error)
}

fn commit(repo: &Repository, subject: &str, tree: Oid, parents: &[Oid], tick: i64) -> Result<Oid> {
    let signature = signature(1_700_000_000 + tick)?;
    let tree = repo.find_tree(tree).map_err(git_error)?;
    let parents: Vec<_> = parents
        .iter()
        .map(|id| repo.find_commit(*id))
        .collect::<Result<_, _>>()
        .map_err(git_error)?;
    let parents: Vec<_> = parents.iter().collect();
    repo.commit(None, &signature, &signature, subject, &tree, &parents)
        .map_err(git_error)
}

fn set_head(repo: &Repository, commit: Oid) -> Result<()> {
    repo.reference("refs/heads/main", commit, true, "bench")
        .map_err(git_error)?;
    repo.set_head("refs/heads/main").map_err(git_error)
}
