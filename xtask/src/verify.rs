//! `verify [NN…]`: proves every checkpoint honest, each proof in a folder of
//! its own written fresh from git objects under `target/xtask-verify/`.
//!
//! * **parent** — the practice folder without the focused test builds and
//!   its whole test suite passes: the starting point is a working workspace;
//! * **red** — with the focused test it fails, with every `red` string;
//! * **green** — the target passes exactly `expectedTests` focused tests, and
//!   the whole target workspace's tests pass;
//! * **steps** — each step's filter passes exactly its count at the target;
//! * **faults** — each declared fault, applied to a private copy of the
//!   target, makes its test fail;
//! * **leak** — the practice folder holds no tooling, no `.git`, nothing but
//!   the base tree, the focused test and the guide, and none of the public
//!   names the layer adds appears outside the focused test and the guide.
//!
//! One cargo target folder is shared by all runs so dependencies build once.
//! That is safe because every folder is written fresh right before its first
//! build (newer than anything cargo has built) and no folder is modified
//! afterwards: a fault gets its own copy, so an interrupted run leaves no
//! fault applied anywhere. A lock on the work folder keeps a second `verify`
//! of the same repository from running at the same time.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, TryLockError};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{ObjectType, Oid};
use serde::Serialize;

use crate::chapter::{self, ChapterFolder, Handout};
use crate::cli;
use crate::error::{self, Error, Result};
use crate::libtest::{self, Report};
use crate::locate::{self, Checkpoint};
use crate::manifest::{ChapterId, Manifest, Mode, RepoPath};
use crate::out::{noteln, outln};
use crate::repo::CourseRepo;
use crate::runner::{Captured, Invocation};
use crate::safe_fs;
use crate::tree;
use crate::worlds;

/// The command that runs a learner workspace's whole test suite.
pub const SUITE: [&str; 3] = ["cargo", "test", "--workspace"];

/// The proofs, in the order they run and are shown.
const PROOFS: [&str; 6] = ["parent", "red", "green", "steps", "faults", "leak"];

/// One cell of the table.
#[derive(Debug, Serialize)]
struct Proof {
    proof: &'static str,
    passed: bool,
    seconds: f64,
    /// What was proven, or why it failed.
    detail: String,
}

#[derive(Debug, Serialize)]
struct ChapterResult {
    id: ChapterId,
    proofs: Vec<Proof>,
}

/// The `--json` shape.
#[derive(Debug, Serialize)]
struct Summary {
    passed: bool,
    chapters: Vec<ChapterResult>,
}

impl cli::Verify {
    /// Runs the command: exit 2 when a chapter can't be read, 1 when any
    /// proof fails.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        let chapters = self.chapters(repo)?;
        let work = safe_fs::folder_inside(&repo.root, Path::new(WORK_FOLDER))
            .map_err(|refusal| work_refused(repo, refusal))?;
        let _lock = lock(&work)?;
        let cargo_target = safe_fs::folder_inside(&work, Path::new("cargo-target"))
            .map_err(|refusal| work_refused(repo, refusal))?;
        let verifier = Verifier {
            repo,
            cargo_target,
            work,
            timeout: self.timeout(),
        };
        let results: Vec<ChapterResult> = chapters
            .iter()
            .map(|chapter| verifier.chapter(chapter))
            .collect();
        let summary = Summary {
            passed: results
                .iter()
                .all(|chapter| chapter.proofs.iter().all(|proof| proof.passed)),
            chapters: results,
        };
        if self.json {
            crate::out::json(&summary)?;
        } else {
            print_table(&summary)?;
        }
        let failed = summary
            .chapters
            .iter()
            .flat_map(|chapter| chapter.proofs.iter().filter(|proof| !proof.passed))
            .count();
        if failed == 0 {
            Ok(())
        } else {
            Err(Error::check_failed(format!(
                "verify: {failed} proof(s) failed (details above)"
            )))
        }
    }

    /// Every chapter to verify, read and located up front: a chapter that
    /// can't be read is bad input (exit 2), not a failed proof.
    fn chapters(&self, repo: &CourseRepo) -> Result<Vec<Chapter>> {
        let checkpoints = repo.checkpoints_dir();
        let folders: Vec<ChapterFolder> = if self.ids.is_empty() {
            chapter::all(&checkpoints)?
        } else {
            self.ids
                .iter()
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
}

/// Where verify works, below the repository root.
const WORK_FOLDER: &str = "target/xtask-verify";

/// A work folder that would pass through a symlink: nothing is written there.
fn work_refused(repo: &CourseRepo, refusal: safe_fs::Refusal) -> Error {
    Error::bad_input(format!(
        "cannot use {} as verify's work folder: {refusal}; verify never writes through a symlink \
         (remove it, e.g. `rm -r target`, and run verify again)",
        repo.root.join(WORK_FOLDER).display()
    ))
}

/// Holds the work folder's lock until dropped (the OS releases it if the
/// process dies). The lock file is never opened through a symlink.
fn lock(work: &Path) -> Result<File> {
    let path = work.join("lock");
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(error::io(format!(
            "cannot open the lock file {} (it must be a plain file, not a symlink)",
            path.display()
        )))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Error::bad_input(format!(
            "another `cargo xtask verify` is running in this repository (it holds {}): \
             wait for it to finish, then run verify again",
            path.display()
        ))),
        Err(TryLockError::Error(error)) => Err(Error::bad_input(format!(
            "cannot lock {}: {error}",
            path.display()
        ))),
    }
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

struct Verifier<'a> {
    repo: &'a CourseRepo,
    work: PathBuf,
    cargo_target: PathBuf,
    timeout: Duration,
}

impl Verifier<'_> {
    fn chapter(&self, chapter: &Chapter) -> ChapterResult {
        let checks: [fn(&Self, &Chapter) -> Result<String>; 6] = [
            Self::parent,
            Self::red,
            Self::green,
            Self::steps,
            Self::faults,
            Self::leak,
        ];
        let proofs = PROOFS
            .iter()
            .zip(checks)
            .map(|(proof, check)| self.timed(proof, chapter, check))
            .collect();
        ChapterResult {
            id: chapter.id(),
            proofs,
        }
    }

    fn timed(
        &self,
        proof: &'static str,
        chapter: &Chapter,
        check: fn(&Self, &Chapter) -> Result<String>,
    ) -> Proof {
        let started = Instant::now();
        let outcome = check(self, chapter);
        let seconds = started.elapsed().as_secs_f64();
        let (passed, detail) = match outcome {
            Ok(detail) => (true, detail),
            Err(error) => (false, error.to_string()),
        };
        let mark = if passed { "ok" } else { "FAILED" };
        progress(
            chapter.id(),
            &format!("{proof}: {mark} ({seconds:.1}s) {detail}"),
        );
        Proof {
            proof,
            passed,
            seconds,
            detail,
        }
    }

    /// The practice folder without the focused test is a working workspace.
    fn parent(&self, chapter: &Chapter) -> Result<String> {
        let dir = self.practice_folder(chapter, "parent", Mode::Rebuild)?;
        let focused = chapter.manifest.focused_test.under(&dir);
        fs::remove_file(&focused)
            .map_err(error::io(format!("cannot remove {}", focused.display())))?;
        let report = self.passing(chapter, "parent", &dir, &command(&SUITE), &[])?;
        Ok(format!(
            "{} test(s) pass at {} without the focused test",
            report.passed.len(),
            chapter.checkpoint.parent.short
        ))
    }

    /// Parent + focused test (the practice folder of a rebuild) must fail.
    fn red(&self, chapter: &Chapter) -> Result<String> {
        let parent = &chapter.checkpoint.parent;
        let dir = self.practice_folder(chapter, "red", Mode::Rebuild)?;
        let run = self.run(chapter, "red", &dir, &chapter.manifest.run, &[])?;
        if run.success {
            return Err(Error::check_failed(format!(
                "the parent {} already passes the focused test: it must fail before the chapter's layer",
                parent.short
            )));
        }
        let missing: Vec<&str> = chapter
            .manifest
            .red
            .iter()
            .map(String::as_str)
            .filter(|red| !run.output.contains(red))
            .collect();
        if !missing.is_empty() {
            return Err(Error::check_failed(format!(
                "the parent fails, but its output lacks {}",
                quoted(missing.into_iter())
            )));
        }
        Ok(format!(
            "fails at {} with all {} red string(s)",
            parent.short,
            chapter.manifest.red.len()
        ))
    }

    /// The target passes exactly `expectedTests`, and its whole suite passes.
    fn green(&self, chapter: &Chapter) -> Result<String> {
        let target = &chapter.checkpoint.target;
        let dir = self.target_folder(chapter, "green")?;
        let report = self.passing(chapter, "green", &dir, &chapter.manifest.run, &[])?;
        expect_count(chapter.manifest.expected_tests, &report, "the target")?;
        let suite = self.passing(chapter, "green", &dir, &command(&SUITE), &[])?;
        Ok(format!(
            "{} focused and {} test(s) in all pass at {}",
            report.passed.len(),
            suite.passed.len(),
            target.short
        ))
    }

    /// Each step's filter passes exactly its count at the target.
    fn steps(&self, chapter: &Chapter) -> Result<String> {
        let dir = self.work_folder(chapter, "green");
        let mut shown = Vec::new();
        for step in &chapter.manifest.steps {
            let label = if step.filter.is_empty() {
                "(all)"
            } else {
                step.filter.as_str()
            };
            let filter: Vec<String> = Some(step.filter.clone())
                .filter(|filter| !filter.is_empty())
                .into_iter()
                .collect();
            let what = format!("step {} ({label})", step.id);
            let report = self
                .passing(chapter, "steps", &dir, &chapter.manifest.run, &filter)
                .map_err(|error| error.context(&what))?;
            expect_count(Some(step.expected_tests), &report, &what)?;
            shown.push(format!(
                "{} {label} {}/{}",
                step.id,
                report.passed.len(),
                step.expected_tests
            ));
        }
        Ok(if shown.is_empty() {
            "no steps declared".to_string()
        } else {
            shown.join(", ")
        })
    }

    /// Each fault, applied to a private copy of the target, makes its test fail.
    fn faults(&self, chapter: &Chapter) -> Result<String> {
        let mut problems = Vec::new();
        for (index, fault) in chapter.manifest.faults.iter().enumerate() {
            let dir = self.target_folder(chapter, &format!("fault-{index}"))?;
            let file = Path::new(fault.file.as_str());
            let refused =
                |refusal: safe_fs::Refusal| fault_refused(&fault.id, &fault.file, refusal);
            let original = safe_fs::read_inside(&dir, file)
                .map_err(refused)?
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .ok_or_else(|| {
                    Error::check_failed(format!(
                        "fault {}: {} is not in the target",
                        fault.id, fault.file
                    ))
                })?;
            let found = original.matches(fault.find.as_str()).count();
            if found != 1 {
                problems.push(format!(
                    "fault `{}`: its `find` text occurs {found} times in {} (it must occur exactly once)",
                    fault.id, fault.file
                ));
                continue;
            }
            let faulty = original.replacen(&fault.find, &fault.replace, 1);
            safe_fs::write_inside(&dir, file, faulty.as_bytes(), 0o644).map_err(refused)?;
            progress(
                chapter.id(),
                &format!("faults: `{}` in {}", fault.id, fault.file),
            );
            let run = self.run(chapter, "faults", &dir, &chapter.manifest.run, &[])?;
            let report = libtest::parse(&run.output);
            if !report.compiled {
                problems.push(format!(
                    "fault `{}` does not compile: make it a behaviour change",
                    fault.id
                ));
            } else if !report.failed_test(&fault.failing_test) {
                let seen = if report.failed.is_empty() {
                    "every test passed".to_string()
                } else {
                    format!(
                        "failing: {}",
                        quoted(report.failed.iter().map(|failure| failure.name.as_str()))
                    )
                };
                problems.push(format!(
                    "fault `{}` was not caught by `{}` ({seen}): strengthen the focused test",
                    fault.id, fault.failing_test
                ));
            }
        }
        if problems.is_empty() {
            Ok(format!("{} fault(s) caught", chapter.manifest.faults.len()))
        } else {
            Err(Error::check_failed(problems.join("; ")))
        }
    }

    /// A practice folder holds the base tree, the target's focused test and
    /// the guide, nothing else, and no name the layer adds.
    fn leak(&self, chapter: &Chapter) -> Result<String> {
        progress(chapter.id(), "leak: writing a practice folder");
        let dir = self.practice_folder(chapter, "leak", chapter.manifest.mode)?;
        let mut problems = differences(self.repo, chapter, &dir)?;
        let names = added_names(self.repo, chapter)?;
        problems.extend(name_leaks(chapter, &dir, &names)?);
        if problems.is_empty() {
            Ok(format!(
                "no tooling, history or answer; none of the layer's {} public name(s)",
                names.len()
            ))
        } else {
            Err(Error::check_failed(problems.join("; ")))
        }
    }

    /// The folder of one proof, under the chapter's work folder.
    fn work_folder(&self, chapter: &Chapter, name: &str) -> PathBuf {
        self.work.join(chapter.id().to_string()).join(name)
    }

    /// An empty folder for one proof, written fresh. Nothing on the way may
    /// be a symlink; an old folder (or a link in its place) is removed
    /// without following anything inside it.
    fn fresh_folder(&self, chapter: &Chapter, name: &str) -> Result<PathBuf> {
        let chapter_work = safe_fs::folder_inside(&self.work, Path::new(&chapter.id().to_string()))
            .map_err(|refusal| work_refused(self.repo, refusal))?;
        let dir = chapter_work.join(name);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(&dir),
            Ok(_) => fs::remove_file(&dir),
            Err(_) => Ok(()),
        }
        .map_err(error::io(format!("cannot clear {}", dir.display())))?;
        fs::create_dir(&dir).map_err(error::io(format!("cannot create {}", dir.display())))?;
        Ok(dir)
    }

    /// A practice folder as `practice` writes it, in the given mode.
    fn practice_folder(&self, chapter: &Chapter, name: &str, mode: Mode) -> Result<PathBuf> {
        let dir = self.fresh_folder(chapter, name)?;
        let manifest = Manifest {
            mode,
            ..chapter.manifest.clone()
        };
        crate::lab::build(
            self.repo,
            &manifest,
            &chapter.checkpoint,
            &chapter.handout,
            &dir,
        )?;
        Ok(dir)
    }

    /// The target's learner world in a fresh folder.
    fn target_folder(&self, chapter: &Chapter, name: &str) -> Result<PathBuf> {
        let dir = self.fresh_folder(chapter, name)?;
        let tree = self.repo.tree_of(chapter.checkpoint.target.oid)?;
        tree::write_tree(&self.repo.git, &tree, &dir, &worlds::is_tooling)?;
        Ok(dir)
    }

    /// Runs `program` in `dir`, showing the command first.
    fn run(
        &self,
        chapter: &Chapter,
        proof: &str,
        dir: &Path,
        program: &[String],
        extra: &[String],
    ) -> Result<Captured> {
        let invocation = Invocation {
            command: program,
            extra,
            dir,
            target_dir: &self.cargo_target,
            timeout: self.timeout,
        };
        let shown = dir.strip_prefix(&self.repo.root).unwrap_or(dir);
        progress(
            chapter.id(),
            &format!("{proof}: `{}` in {}", invocation.display(), shown.display()),
        );
        let run = invocation.run()?;
        if run.timed_out {
            return Err(Error::check_failed(format!(
                "`{}` ran past {}s and was stopped",
                invocation.display(),
                self.timeout.as_secs()
            )));
        }
        Ok(run)
    }

    /// Runs and requires success; the error quotes the first problem.
    fn passing(
        &self,
        chapter: &Chapter,
        proof: &str,
        dir: &Path,
        program: &[String],
        extra: &[String],
    ) -> Result<Report> {
        let run = self.run(chapter, proof, dir, program, extra)?;
        let report = libtest::parse(&run.output);
        if run.success {
            return Ok(report);
        }
        let shown = program.join(" ");
        Err(Error::check_failed(
            match (report.first_error(), report.failed.first()) {
                (Some(error), _) => format!(
                    "`{shown}` does not compile: {} at {}",
                    error.message,
                    error.location.as_deref().unwrap_or("?")
                ),
                (None, Some(failure)) => {
                    format!("`{shown}` fails `{}`: {}", failure.name, failure.message)
                }
                (None, None) => format!("`{shown}` failed:\n{}", tail(&run.output)),
            },
        ))
    }
}

/// A fault's file that is a symlink (or lies behind one) in the target tree:
/// faults are only ever written into the private copy.
fn fault_refused(id: &str, file: &RepoPath, refusal: safe_fs::Refusal) -> Error {
    let why = if refusal.is_symlink() {
        format!("passes through the symlink `{}`", refusal.at.display())
    } else {
        refusal.to_string()
    };
    Error::bad_input(format!(
        "fault `{id}`: {file} {why} in the target tree: faults are applied to real files only"
    ))
}

fn command(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| word.to_string()).collect()
}

fn expect_count(expected: Option<usize>, report: &Report, what: &str) -> Result<()> {
    match expected {
        Some(expected) if report.passed.len() != expected => Err(Error::check_failed(format!(
            "{what} passed {} test(s), expected exactly {expected}",
            report.passed.len()
        ))),
        _ => Ok(()),
    }
}

/// Compares a practice folder with the trees it was made from: no tooling,
/// no `.git`, every file the base tree's (or the focused test, or the guide).
fn differences(repo: &CourseRepo, chapter: &Chapter, dir: &Path) -> Result<Vec<String>> {
    let git = &repo.git;
    let manifest = &chapter.manifest;
    let base = chapter.checkpoint.base(manifest.mode);
    let base_tree = repo.tree_of(base.oid)?;
    let target_tree = repo.tree_of(chapter.checkpoint.target.oid)?;
    let mut expected = tree::list_tree(git, &base_tree, &worlds::is_tooling)?;
    let focused = PathBuf::from(manifest.focused_test.as_str());
    let focused_blob = tree::list_tree(git, &target_tree, &|_| false)?.remove(&focused);
    let guide = chapter::guide_with_header(manifest, &chapter.checkpoint, &chapter.handout.guide);
    let tutor = chapter.handout.tutor.as_deref();

    let mut problems = Vec::new();
    for forbidden in worlds::TOOLING.iter().chain([&".git"]) {
        if fs::symlink_metadata(dir.join(forbidden)).is_ok() {
            problems.push(format!("the practice folder holds `{forbidden}`"));
        }
    }
    let mut seen = BTreeSet::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry.map_err(|error| {
            Error::check_failed(format!("cannot walk {}: {error}", dir.display()))
        })?;
        if entry.file_type().is_dir() {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(dir)
            .expect("walkdir stays below its root")
            .to_path_buf();
        let shown = relative.display().to_string();
        seen.insert(relative.clone());
        if relative == Path::new(chapter::GUIDE_FILE) {
            if fs::read_to_string(entry.path()).ok().as_deref() != Some(guide.as_str()) {
                problems.push(format!(
                    "{shown} is not the chapter's guide with its header"
                ));
            }
            continue;
        }
        if relative == Path::new(chapter::TUTOR_FILE) && tutor.is_some() {
            if fs::read_to_string(entry.path()).ok().as_deref() != tutor {
                problems.push(format!("{shown} is not the course's tutor protocol"));
            }
            continue;
        }
        let wanted = if relative == focused {
            focused_blob
        } else {
            expected.remove(&relative)
        };
        let Some(wanted) = wanted else {
            problems.push(format!("{shown} is not in {}'s learner world", base.short));
            continue;
        };
        if blob_of(entry.path())? != (wanted.oid, normal_mode(wanted.mode)) {
            let from = if relative == focused {
                "the target's focused test"
            } else {
                "the base tree"
            };
            problems.push(format!("{shown} differs from {from}"));
        }
    }
    if !seen.contains(&focused) {
        problems.push(format!("the focused test {} is missing", focused.display()));
    }
    expected.remove(&focused);
    problems.extend(
        expected
            .keys()
            .filter(|path| !seen.contains(*path))
            .map(|path| format!("{} from the base tree is missing", path.display())),
    );
    Ok(problems)
}

/// The item kinds whose names count as a layer's public names.
const ITEM_KINDS: [&str; 8] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "mod",
];

/// Top-level public item names of a Rust source (`pub fn name`, `pub struct
/// Name`, …, also `pub(crate)`), in the order they appear.
pub fn public_names(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("pub ")
                .or_else(|| line.strip_prefix("pub(crate) "))?;
            let rest = rest
                .trim_start_matches("async ")
                .trim_start_matches("unsafe ");
            let (kind, rest) = rest.split_once(' ')?;
            ITEM_KINDS.contains(&kind).then_some(())?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The public names the layer adds to its teaching files, with the file
/// that adds each.
fn added_names(repo: &CourseRepo, chapter: &Chapter) -> Result<BTreeMap<String, String>> {
    let parent = repo.tree_of(chapter.checkpoint.parent.oid)?;
    let target = repo.tree_of(chapter.checkpoint.target.oid)?;
    let names_in = |tree: &git2::Tree<'_>, path: &str| -> Result<BTreeSet<String>> {
        let source = tree::file_at(&repo.git, tree, path)?.unwrap_or_default();
        Ok(public_names(&String::from_utf8_lossy(&source))
            .into_iter()
            .collect())
    };
    let mut before = BTreeSet::new();
    for teaching in &chapter.manifest.teaching_files {
        before.extend(names_in(&parent, teaching.as_str())?);
    }
    let mut added = BTreeMap::new();
    for teaching in &chapter.manifest.teaching_files {
        for name in names_in(&target, teaching.as_str())? {
            if !before.contains(&name) {
                added.entry(name).or_insert_with(|| teaching.to_string());
            }
        }
    }
    Ok(added)
}

/// Every file of the practice folder but the focused test and the guide
/// that mentions one of `names` as a whole word.
fn name_leaks(
    chapter: &Chapter,
    dir: &Path,
    names: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    let allowed = [
        PathBuf::from(chapter.manifest.focused_test.as_str()),
        PathBuf::from(chapter::GUIDE_FILE),
    ];
    let mut problems = Vec::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry.map_err(|error| {
            Error::check_failed(format!("cannot walk {}: {error}", dir.display()))
        })?;
        let relative = entry.path().strip_prefix(dir).expect("below its root");
        if !entry.file_type().is_file() || allowed.iter().any(|path| path == relative) {
            continue;
        }
        let text = String::from_utf8_lossy(
            &fs::read(entry.path())
                .map_err(error::io(format!("cannot read {}", entry.path().display())))?,
        )
        .into_owned();
        for (name, teaching) in names {
            if contains_word(&text, name) {
                problems.push(format!(
                    "`{name}` (added to {teaching} by the layer) appears in {}",
                    relative.display()
                ));
            }
        }
    }
    Ok(problems)
}

/// True when `word` occurs in `text` with no identifier character on either side.
pub fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The blob id and git mode a file on disk would have.
fn blob_of(path: &Path) -> Result<(Oid, i32)> {
    let meta = fs::symlink_metadata(path)
        .map_err(error::io(format!("cannot inspect {}", path.display())))?;
    let (content, mode) = if meta.file_type().is_symlink() {
        let target =
            fs::read_link(path).map_err(error::io(format!("cannot read {}", path.display())))?;
        (target.as_os_str().as_bytes().to_vec(), tree::MODE_SYMLINK)
    } else {
        let executable = meta.permissions().mode() & 0o111 != 0;
        let content =
            fs::read(path).map_err(error::io(format!("cannot read {}", path.display())))?;
        let mode = if executable {
            tree::MODE_EXECUTABLE
        } else {
            tree::MODE_FILE
        };
        (content, mode)
    };
    let oid =
        Oid::hash_object(ObjectType::Blob, &content).map_err(error::git("cannot hash a file"))?;
    Ok((oid, mode))
}

/// Git's legacy group-writable mode counts as a plain file.
fn normal_mode(mode: i32) -> i32 {
    if mode == tree::MODE_GROUP_WRITABLE {
        tree::MODE_FILE
    } else {
        mode
    }
}

fn progress(id: ChapterId, message: &str) {
    noteln!("[{id}] {message}");
}

fn quoted<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

fn print_table(summary: &Summary) -> Result<()> {
    outln!()?;
    let mut header = format!("{:<8}", "chapter");
    for proof in PROOFS {
        header.push_str(&format!("{proof:<14}"));
    }
    outln!("{}", header.trim_end())?;
    for chapter in &summary.chapters {
        let mut row = format!("{:<8}", chapter.id.to_string());
        for proof in &chapter.proofs {
            let mark = if proof.passed { "pass" } else { "FAIL" };
            row.push_str(&format!(
                "{:<14}",
                format!("{mark} {:>5.1}s", proof.seconds)
            ));
        }
        outln!("{}", row.trim_end())?;
    }
    for chapter in &summary.chapters {
        for proof in chapter.proofs.iter().filter(|proof| !proof.passed) {
            outln!("\n{} {}: {}", chapter.id, proof.proof, proof.detail)?;
        }
    }
    let verdict = if summary.passed {
        "every checkpoint is honest"
    } else {
        "some proofs failed"
    };
    outln!("\n{verdict}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_names_are_the_top_level_pub_items() {
        let source = "pub fn text_of(m: &M) -> String {}\npub struct Usage {\n    pub input: u64,\n}\n\
                      pub(crate) enum Kind {}\npub mod types;\npub use x::Y;\nfn private() {}\n    pub fn method() {}\n\
                      pub const EMPTY_USAGE: Usage = Usage;\npub trait Model {}\npub type Alias = u8;\n";
        assert_eq!(
            public_names(source),
            [
                "text_of",
                "Usage",
                "Kind",
                "types",
                "EMPTY_USAGE",
                "Model",
                "Alias"
            ]
        );
    }

    #[test]
    fn a_word_is_found_only_between_non_identifier_characters() {
        assert!(contains_word("use course::types::{text};", "text"));
        assert!(contains_word("text", "text"));
        assert!(!contains_word("text_stream(texts)", "text"));
        assert!(!contains_word("context", "text"));
        assert!(
            !contains_word("日本text語", "text"),
            "letters of any script continue an identifier"
        );
    }
}
