//! `verify [NN…]`: proves every checkpoint honest, in folders built from git
//! objects under `target/xtask-verify/`, with one shared cargo target folder
//! so repeated builds are incremental.
//!
//! * **red** — the parent plus the focused test fails, with every `red` string;
//! * **green** — the target passes exactly `expectedTests` tests;
//! * **steps** — each step's filter passes exactly its count at the target;
//! * **faults** — each declared fault, applied to the target, fails its test;
//! * **leak** — a practice folder holds nothing of the answer.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use git2::{ObjectType, Oid};
use serde::Serialize;

use crate::chapter::{self, ChapterFolder};
use crate::cli;
use crate::error::{self, Error, Result};
use crate::libtest::{self, Report};
use crate::locate::{self, Checkpoint};
use crate::manifest::{self, Manifest};
use crate::practice;
use crate::repo::CourseRepo;
use crate::runner::{Captured, Invocation};
use crate::tree;
use crate::worlds;

/// The proofs, in the order they run and are shown.
const PROOFS: [&str; 5] = ["red", "green", "steps", "faults", "leak"];

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
    id: String,
    proofs: Vec<Proof>,
}

/// The `--json` shape.
#[derive(Debug, Serialize)]
struct Summary {
    passed: bool,
    chapters: Vec<ChapterResult>,
}

/// Runs the command: exit 1 when any proof fails.
impl cli::Verify {
    /// Runs the command: exit 1 when any proof fails.
    pub fn run(&self, repo: &CourseRepo) -> Result<()> {
        run(repo, self)
    }
}

fn run(repo: &CourseRepo, options: &cli::Verify) -> Result<()> {
    let checkpoints = repo.checkpoints_dir();
    let chapters: Vec<ChapterFolder> = if options.ids.is_empty() {
        chapter::all(&checkpoints)?
    } else {
        options
            .ids
            .iter()
            .map(|id| chapter::find(&checkpoints, *id))
            .collect::<Result<_>>()?
    };
    if chapters.is_empty() {
        return Err(Error::bad_input(format!(
            "nothing to verify: {} holds no chapter folders",
            checkpoints.display()
        )));
    }
    let work = repo.root.join("target").join("xtask-verify");
    let verifier = Verifier {
        repo,
        cargo_target: work.join("cargo-target"),
        work,
        timeout: options.timeout(),
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
    if options.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).expect("the summary serializes")
        );
    } else {
        print_table(&summary);
    }
    if summary.passed {
        Ok(())
    } else {
        let failed = summary
            .chapters
            .iter()
            .flat_map(|chapter| chapter.proofs.iter().filter(|proof| !proof.passed))
            .count();
        Err(Error::check_failed(format!(
            "verify: {failed} proof(s) failed (details above)"
        )))
    }
}

struct Verifier<'a> {
    repo: &'a CourseRepo,
    work: PathBuf,
    cargo_target: PathBuf,
    timeout: Duration,
}

/// Everything the proofs of one chapter share.
struct Chapter<'a> {
    folder: &'a ChapterFolder,
    manifest: Manifest,
    checkpoint: Checkpoint,
    guide: String,
}

impl Verifier<'_> {
    fn chapter(&self, folder: &ChapterFolder) -> ChapterResult {
        let id = folder.id.to_string();
        let prepared = folder.load().and_then(|manifest| {
            let checkpoint = locate::locate(&self.repo.git, folder.id)?;
            let guide = fs::read_to_string(folder.guide_path()).map_err(error::io(format!(
                "cannot read {}",
                folder.guide_path().display()
            )))?;
            Ok(Chapter {
                folder,
                manifest,
                checkpoint,
                guide,
            })
        });
        let chapter = match prepared {
            Ok(chapter) => chapter,
            Err(error) => {
                progress(&id, &format!("cannot be verified: {error}"));
                let proofs = PROOFS
                    .iter()
                    .map(|proof| Proof {
                        proof,
                        passed: false,
                        seconds: 0.0,
                        detail: error.to_string(),
                    })
                    .collect();
                return ChapterResult { id, proofs };
            }
        };
        let proofs = vec![
            self.timed("red", &chapter, Self::red),
            self.timed("green", &chapter, Self::green),
            self.timed("steps", &chapter, Self::steps),
            self.timed("faults", &chapter, Self::faults),
            self.timed("leak", &chapter, Self::leak),
        ];
        ChapterResult { id, proofs }
    }

    fn timed(
        &self,
        proof: &'static str,
        chapter: &Chapter<'_>,
        check: fn(&Self, &Chapter<'_>) -> Result<String>,
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
            &chapter.manifest.id,
            &format!("{proof}: {mark} ({seconds:.1}s) {detail}"),
        );
        Proof {
            proof,
            passed,
            seconds,
            detail,
        }
    }

    /// Parent + focused test (the practice folder of a rebuild) must fail.
    fn red(&self, chapter: &Chapter<'_>) -> Result<String> {
        let parent = &chapter.checkpoint.parent;
        progress(
            &chapter.manifest.id,
            &format!(
                "red: building parent {} + the focused test (expected to fail)",
                parent.short
            ),
        );
        let dir = self.fresh_dir(chapter, "red")?;
        let mut manifest = chapter.manifest.clone();
        manifest.mode = manifest::Mode::Rebuild;
        practice::build(
            self.repo,
            &manifest,
            &chapter.checkpoint,
            &chapter.guide,
            &dir,
        )?;
        let run = self.run(chapter, &dir, &[])?;
        if run.success {
            return Err(Error::check_failed(format!(
                "the parent {} already passes the focused test: it must fail before the chapter's layer",
                parent.short
            )));
        }
        let missing: Vec<&String> = chapter
            .manifest
            .red
            .iter()
            .filter(|red| !run.output.contains(*red))
            .collect();
        if !missing.is_empty() {
            return Err(Error::check_failed(format!(
                "the parent fails, but its output lacks {}",
                quoted(missing.iter().map(|s| s.as_str()))
            )));
        }
        Ok(format!(
            "fails at {} with all {} red string(s)",
            parent.short,
            chapter.manifest.red.len()
        ))
    }

    /// The target passes with exactly `expectedTests`.
    fn green(&self, chapter: &Chapter<'_>) -> Result<String> {
        let target = &chapter.checkpoint.target;
        progress(
            &chapter.manifest.id,
            &format!("green: building target {}", target.short),
        );
        let dir = self.target_dir(chapter, true)?;
        let report = self.passing(chapter, &dir, &[])?;
        expect_count(chapter.manifest.expected_tests, &report, "the target")?;
        Ok(format!(
            "{} passed at {}",
            report.passed.len(),
            target.short
        ))
    }

    /// Each step's filter passes exactly its count at the target.
    fn steps(&self, chapter: &Chapter<'_>) -> Result<String> {
        let dir = self.target_dir(chapter, false)?;
        let mut shown = Vec::new();
        for step in &chapter.manifest.steps {
            let filter: Vec<String> = if step.filter.is_empty() {
                vec![]
            } else {
                vec![step.filter.clone()]
            };
            let label = if step.filter.is_empty() {
                "(all)"
            } else {
                step.filter.as_str()
            };
            progress(
                &chapter.manifest.id,
                &format!("steps: {} filter {label}", step.id),
            );
            let report = self
                .passing(chapter, &dir, &filter)
                .map_err(|error| error.context(format!("step {} ({label})", step.id)))?;
            expect_count(
                Some(step.expected_tests),
                &report,
                &format!("step {} ({label})", step.id),
            )?;
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

    /// Each fault, applied to the target, makes its test fail.
    fn faults(&self, chapter: &Chapter<'_>) -> Result<String> {
        let dir = self.target_dir(chapter, false)?;
        let mut problems = Vec::new();
        for fault in &chapter.manifest.faults {
            progress(
                &chapter.manifest.id,
                &format!("faults: {} in {}", fault.id, fault.file),
            );
            let path = fault.file.under(&dir);
            let original = fs::read_to_string(&path).map_err(|error| {
                Error::check_failed(format!(
                    "fault {}: cannot read {}: {error}",
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
            fs::write(&path, original.replacen(&fault.find, &fault.replace, 1))
                .map_err(error::io(format!("cannot write {}", path.display())))?;
            let outcome = self.run(chapter, &dir, &[]);
            fs::write(&path, &original)
                .map_err(error::io(format!("cannot restore {}", path.display())))?;
            let run = outcome?;
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
    /// the guide, and nothing else.
    fn leak(&self, chapter: &Chapter<'_>) -> Result<String> {
        progress(&chapter.manifest.id, "leak: building a practice folder");
        let dir = self.fresh_dir(chapter, "leak")?;
        practice::build(
            self.repo,
            &chapter.manifest,
            &chapter.checkpoint,
            &chapter.guide,
            &dir,
        )?;
        let problems = leaks(self.repo, chapter, &dir)?;
        if problems.is_empty() {
            Ok("no answer, history or authoring file in the practice folder".to_string())
        } else {
            Err(Error::check_failed(problems.join("; ")))
        }
    }

    /// The target's tree, written once per chapter and reused by later proofs.
    fn target_dir(&self, chapter: &Chapter<'_>, fresh: bool) -> Result<PathBuf> {
        let dir = self
            .work
            .join(chapter.folder.id.to_string())
            .join("target-tree");
        if fresh || !dir.exists() {
            let dir = self.fresh_dir(chapter, "target-tree")?;
            let tree = self.repo.tree_of(chapter.checkpoint.target.oid)?;
            tree::write_tree(&self.repo.git, &tree, &dir, &worlds::is_tooling)?;
        }
        Ok(dir)
    }

    fn fresh_dir(&self, chapter: &Chapter<'_>, name: &str) -> Result<PathBuf> {
        let dir = self.work.join(chapter.folder.id.to_string()).join(name);
        if dir.exists() {
            fs::remove_dir_all(&dir)
                .map_err(error::io(format!("cannot clear {}", dir.display())))?;
        }
        fs::create_dir_all(&dir).map_err(error::io(format!("cannot create {}", dir.display())))?;
        Ok(dir)
    }

    fn run(&self, chapter: &Chapter<'_>, dir: &Path, extra: &[String]) -> Result<Captured> {
        let run = Invocation {
            command: &chapter.manifest.run,
            extra,
            dir,
            target_dir: &self.cargo_target,
            timeout: self.timeout,
        }
        .run()?;
        if run.timed_out {
            return Err(Error::check_failed(format!(
                "`{}` ran past {}s and was stopped",
                chapter.manifest.run.join(" "),
                self.timeout.as_secs()
            )));
        }
        Ok(run)
    }

    /// Runs and requires success; the error quotes the first problem.
    fn passing(&self, chapter: &Chapter<'_>, dir: &Path, extra: &[String]) -> Result<Report> {
        let run = self.run(chapter, dir, extra)?;
        let report = libtest::parse(&run.output);
        if run.success {
            return Ok(report);
        }
        Err(Error::check_failed(
            match (report.first_error(), report.failed.first()) {
                (Some(error), _) => format!(
                    "the target does not compile: {} at {}",
                    error.message,
                    error.location.as_deref().unwrap_or("?")
                ),
                (None, Some(failure)) => {
                    format!("the target fails `{}`: {}", failure.name, failure.message)
                }
                (None, None) => format!(
                    "`{}` failed:\n{}",
                    chapter.manifest.run.join(" "),
                    tail(&run.output)
                ),
            },
        ))
    }
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

/// Compares a practice folder with the trees it was made from.
fn leaks(repo: &CourseRepo, chapter: &Chapter<'_>, dir: &Path) -> Result<Vec<String>> {
    let git = &repo.git;
    let manifest = &chapter.manifest;
    let base = chapter.checkpoint.base(manifest.mode);
    let base_tree = repo.tree_of(base.oid)?;
    let target_tree = repo.tree_of(chapter.checkpoint.target.oid)?;
    let mut expected = tree::list_tree(git, &base_tree, &worlds::is_tooling)?;
    let focused = PathBuf::from(manifest.focused_test.as_str());
    let focused_blob = tree::list_tree(git, &target_tree, &|_| false)?.remove(&focused);
    let guide = chapter::guide_with_header(manifest, &chapter.checkpoint, &chapter.guide);

    let mut problems = Vec::new();
    for forbidden in [".git", "checkpoints"] {
        if fs::symlink_metadata(dir.join(forbidden)).is_ok() {
            problems.push(format!("the practice folder holds `{forbidden}`"));
        }
    }
    for teaching in &manifest.teaching_files {
        let path = teaching.under(dir);
        let base_content = tree::file_at(git, &base_tree, teaching.as_str())?;
        let practice_content = fs::read(&path).ok();
        if practice_content != base_content {
            problems.push(format!(
                "teaching file {teaching} differs from {}'s",
                base.short
            ));
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
        let wanted = if relative == focused {
            focused_blob
        } else {
            expected.remove(&relative)
        };
        let Some(wanted) = wanted else {
            problems.push(format!("{shown} is not in {}'s tree", base.short));
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
        problems.push(format!("the focused test {focused:?} is missing"));
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

/// The blob id and git mode a file on disk would have.
fn blob_of(path: &Path) -> Result<(Oid, i32)> {
    let meta = fs::symlink_metadata(path)
        .map_err(error::io(format!("cannot inspect {}", path.display())))?;
    let (content, mode) = if meta.file_type().is_symlink() {
        let target =
            fs::read_link(path).map_err(error::io(format!("cannot read {}", path.display())))?;
        (target.as_os_str().as_bytes().to_vec(), 0o120000)
    } else {
        let executable = meta.permissions().mode() & 0o111 != 0;
        let content =
            fs::read(path).map_err(error::io(format!("cannot read {}", path.display())))?;
        (content, if executable { 0o100755 } else { 0o100644 })
    };
    let oid =
        Oid::hash_object(ObjectType::Blob, &content).map_err(error::git("cannot hash a file"))?;
    Ok((oid, mode))
}

/// Git's legacy group-writable mode counts as a plain file.
fn normal_mode(mode: i32) -> i32 {
    if mode == 0o100664 { 0o100644 } else { mode }
}

fn progress(id: &str, message: &str) {
    eprintln!("[{id}] {message}");
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

fn print_table(summary: &Summary) {
    println!();
    print!("{:<8}", "chapter");
    for proof in PROOFS {
        print!("{proof:<16}");
    }
    println!();
    for chapter in &summary.chapters {
        print!("{:<8}", chapter.id);
        for proof in &chapter.proofs {
            let mark = if proof.passed { "pass" } else { "FAIL" };
            print!("{:<16}", format!("{mark} {:>6.1}s", proof.seconds));
        }
        println!();
    }
    for chapter in &summary.chapters {
        for proof in chapter.proofs.iter().filter(|proof| !proof.passed) {
            println!("\n{} {}: {}", chapter.id, proof.proof, proof.detail);
        }
    }
    let verdict = if summary.passed {
        "every checkpoint is honest"
    } else {
        "some proofs failed"
    };
    println!("\n{verdict}");
}
