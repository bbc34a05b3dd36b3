//! `recut NN` is all or nothing (issue 16): on a failure or a signal the
//! branch, the index and the work tree end all as they were or all at the
//! new state, and one line says which; it never writes through a symlink,
//! never overwrites an ignored file, and refuses (exit 2, nothing changed)
//! what it cannot commit faithfully. Every run hides git's global
//! configuration (`xtask_own_config`), so only the fixture's counts.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Fixture, Run, manifest};
use git2::Oid;

const AS_THEY_WERE: &str = "the branch, the index and the work tree are all as they were";
const AT_NEW: &str = "the branch, the index and the work tree are all at the new state";

/// Chapters 02 and 03 cut as in `Fixture::course`, with `extra` files added
/// by chapter 03's layer (in the commits and the index only: the work tree
/// is about to be brought back to chapter 02 anyway), an identity set.
fn course_with(extra: &[(String, String)]) -> Fixture {
    let fixture = Fixture::course_with_index_only(extra);
    fixture.set_identity();
    fixture
}

fn course() -> Fixture {
    course_with(&[])
}

/// Brings the work tree's learner world back to chapter 02's end state and
/// edits it, so that `recut 02` re-cuts 02 and replays 03 into the work tree.
fn edit_chapter_02(fixture: &Fixture) {
    fixture.write("course/src/lib.rs", "pub mod stream;\n");
    fs::remove_file(fixture.root().join("course/src/types.rs")).unwrap();
    fs::remove_file(fixture.root().join("course/tests/message_ir.rs")).unwrap();
    for extra in ["course/gen", "course/data"] {
        let _ = fs::remove_dir_all(fixture.root().join(extra));
    }
    fixture.write("course/src/stream.rs", "// chapter 02, second cut\n");
}

/// Chapter 03's layer with `count` extra files in a folder of their own.
fn many_files(count: usize) -> Vec<(String, String)> {
    (0..count)
        .map(|n| (format!("course/gen/f{n:05}.rs"), format!("// file {n}\n")))
        .collect()
}

fn home(fixture: &Fixture) -> PathBuf {
    let home = fixture.dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    home
}

/// `cargo xtask ARGS` as `xtask_own_config` runs it, for tests that set up
/// the child themselves (limits, signals, another user, stdout).
fn command(fixture: &Fixture, args: &[&str]) -> Command {
    let caller_home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| caller_home.join(".cargo"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| caller_home.join(".rustup"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        .args(args)
        .current_dir(fixture.root())
        .env("CARGO_TERM_COLOR", "never")
        .env("HOME", home(fixture))
        .env("XDG_CONFIG_HOME", home(fixture))
        .stdin(Stdio::null());
    command
}

fn run(mut command: Command) -> Run {
    let output = command.output().unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Everything a re-cut that ends "as they were" must leave as it was.
#[derive(Debug, PartialEq)]
struct Everything {
    head_file: Vec<u8>,
    refs: Vec<(String, Option<Oid>, Option<String>)>,
    index_file: Vec<u8>,
    work_tree: BTreeMap<String, (u32, Vec<u8>)>,
}

fn everything(fixture: &Fixture) -> Everything {
    let git = fixture.repo.path();
    let mut refs: Vec<_> = fixture
        .repo
        .references()
        .unwrap()
        .map(|reference| {
            let reference = reference.unwrap();
            (
                reference.name().unwrap().to_string(),
                reference.target(),
                reference.symbolic_target().unwrap().map(str::to_string),
            )
        })
        .collect();
    refs.sort();
    Everything {
        head_file: fs::read(git.join("HEAD")).unwrap(),
        refs,
        index_file: fs::read(git.join("index")).unwrap_or_default(),
        work_tree: fixture.work_tree(),
    }
}

/// Nothing of recut's own is left in the git dir: no lock, no staging
/// (but a staging folder the test itself planted).
fn no_leftovers(fixture: &Fixture) {
    let names: Vec<String> = fs::read_dir(fixture.repo.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name == "index.lock" || name.starts_with("xtask-recut"))
        .filter(|name| name != "xtask-recut-4242")
        .collect();
    assert!(names.is_empty(), "left in .git: {names:?}");
}

/// Exactly one `error:` line, and it says where everything is.
fn one_line_saying(run: &Run, state: &str) {
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(errors[0].contains(state), "{}", run.stderr);
}

/// The learner's world of the index, of HEAD and of the work tree agree.
fn all_at_head(fixture: &Fixture) {
    let head = fixture.learner_at("HEAD");
    let work_tree: BTreeMap<String, Vec<u8>> = fixture
        .work_tree()
        .into_iter()
        .filter(|(path, _)| !common::is_tooling(path))
        .map(|(path, (_, content))| (path, content))
        .collect();
    let expected: BTreeMap<String, Vec<u8>> = head
        .iter()
        .map(|(path, (_, content))| (path.clone(), content.clone()))
        .collect();
    assert_eq!(work_tree, expected, "the work tree is HEAD's");
    let mut index = fixture.repo.index().unwrap();
    index.read(true).unwrap();
    let indexed: BTreeMap<String, Oid> = index
        .iter()
        .map(|entry| (String::from_utf8(entry.path).unwrap(), entry.id))
        .filter(|(path, _)| !common::is_tooling(path))
        .collect();
    let at_head: BTreeMap<String, Oid> = head
        .iter()
        .map(|(path, (_, content))| {
            let id = Oid::hash_object(git2::ObjectType::Blob, content).unwrap();
            (path.clone(), id)
        })
        .collect();
    assert_eq!(indexed, at_head, "the index is HEAD's");
}

#[test]
fn a_locked_index_changes_nothing() {
    let fixture = course();
    edit_chapter_02(&fixture);
    fs::write(fixture.repo.path().join("index.lock"), "").unwrap();
    let before = everything(&fixture);

    let run = fixture.xtask_own_config(&["recut", "02", "--no-verify"]);

    run.fails_with(2, &["index.lock exists", AS_THEY_WERE]);
    assert_eq!(everything(&fixture), before);
    assert!(fixture.repo.path().join("index.lock").exists(), "not ours");
}

/// Runs `command` as an unprivileged user when the test runs as root (for
/// whom permissions do not apply), with the fixture handed to that user.
fn as_unprivileged(fixture: &Fixture, command: &mut Command) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return false;
    }
    chown_all(fixture.dir.path(), 65534);
    command.uid(65534).gid(65534);
    true
}

fn chown_all(dir: &Path, id: u32) {
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry.unwrap();
        std::os::unix::fs::lchown(entry.path(), Some(id), Some(id)).unwrap();
    }
}

#[test]
fn an_unwritable_folder_half_way_through_is_undone() {
    let fixture = course();
    edit_chapter_02(&fixture);
    // course/src/lib.rs and types.rs go in first; course/tests refuses.
    let tests = fixture.root().join("course/tests");
    fs::set_permissions(&tests, fs::Permissions::from_mode(0o555)).unwrap();
    let before = everything(&fixture);

    let mut recut = command(&fixture, &["recut", "02", "--no-verify"]);
    let dropped = as_unprivileged(&fixture, &mut recut);
    let run = run(recut);
    if dropped {
        chown_all(fixture.dir.path(), 0);
    }
    fs::set_permissions(&tests, fs::Permissions::from_mode(0o755)).unwrap();

    run.fails_with(3, &["course/tests", "recut undid every change"]);
    one_line_saying(&run, AS_THEY_WERE);
    assert_eq!(everything(&fixture), before);
    no_leftovers(&fixture);
}

#[test]
fn a_write_that_fails_for_lack_of_space_changes_nothing() {
    // Chapter 03 brings a 2 MB file; the re-cut may write files of 1 MB.
    let big = "0123456789abcdef\n".repeat(2 << 20 >> 4);
    let fixture = course_with(&[("course/data/big.txt".to_string(), big)]);
    edit_chapter_02(&fixture);
    let before = everything(&fixture);

    let mut recut = command(&fixture, &["recut", "02", "--no-verify"]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        recut.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 1 << 20,
                rlim_max: 1 << 20,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let run = run(recut);

    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("course/data/big.txt"), "{}", run.stderr);
    one_line_saying(&run, AS_THEY_WERE);
    assert_eq!(everything(&fixture), before);
    no_leftovers(&fixture);
}

#[test]
fn a_signal_during_the_swap_leaves_all_old_or_all_new() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let fixture = course_with(&many_files(1500));
        edit_chapter_02(&fixture);
        let old_head = fixture.head();
        let before = everything(&fixture);

        let mut recut = command(&fixture, &["recut", "02", "--no-verify"]);
        recut.stdout(Stdio::null()).stderr(Stdio::piped());
        // SAFETY: signal(2) only, between fork and exec: the child starts
        // with the default disposition even when this test run ignores it.
        unsafe {
            recut.pre_exec(move || {
                libc::signal(signal, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = recut.spawn().unwrap();
        // The swap has begun once chapter 03's new folder appears.
        let first = fixture.root().join("course/gen");
        let began = common::wait_until(Duration::from_secs(60), || first.exists());
        common::send_signal(child.id(), signal);
        let status = common::wait_at_most(&mut child, Duration::from_secs(60)).unwrap();
        let run = Run {
            code: status.code().unwrap_or(-1),
            stdout: String::new(),
            stderr: common::stderr_of(&mut child),
        };
        assert!(began, "the swap never began: {}", run.stderr);

        assert_eq!(run.code, code, "{}", run.stderr);
        if run.stderr.contains(AS_THEY_WERE) {
            one_line_saying(&run, AS_THEY_WERE);
            assert_eq!(everything(&fixture), before);
        } else {
            one_line_saying(&run, AT_NEW);
            assert_eq!(fixture.rev("HEAD~3"), old_head);
            all_at_head(&fixture);
        }
        no_leftovers(&fixture);
    }
}

#[test]
fn an_ignored_symlink_on_the_way_is_never_written_through() {
    let fixture = course_with(&many_files(2));
    edit_chapter_02(&fixture);
    let outside = tempfile::tempdir().unwrap();
    fixture.write(".gitignore", "/course/gen\n");
    fixture.symlink(outside.path().to_str().unwrap(), "course/gen");
    let before = everything(&fixture);

    let run = fixture.xtask_own_config(&["recut", "02", "--no-verify"]);

    run.fails_with(2, &["`course/gen`", "symlink", AS_THEY_WERE]);
    assert_eq!(everything(&fixture), before);
    assert_eq!(common::snapshot(outside.path()), Vec::<PathBuf>::new());
    no_leftovers(&fixture);
}

#[test]
fn an_ignored_file_is_never_overwritten() {
    let fixture = course();
    edit_chapter_02(&fixture);
    // The author keeps notes where chapter 03's answer goes, ignored and
    // untracked (`git rm --cached`).
    fixture.write(".gitignore", "/course/src/types.rs\n");
    fixture.write("course/src/types.rs", "my notes\n");
    let mut index = fixture.repo.index().unwrap();
    index.remove_path(Path::new("course/src/types.rs")).unwrap();
    index.write().unwrap();
    let before = everything(&fixture);

    let run = fixture.xtask_own_config(&["recut", "02", "--no-verify"]);

    run.fails_with(2, &["`course/src/types.rs`", "ignores", AS_THEY_WERE]);
    assert_eq!(everything(&fixture), before);
    no_leftovers(&fixture);
}

/// Asserts that `args` is refused with exit 2, naming `needles`, and that
/// it changed nothing.
fn refused(fixture: &Fixture, args: &[&str], needles: &[&str]) {
    let before = everything(fixture);
    fixture.xtask_own_config(args).fails_with(2, needles);
    assert_eq!(everything(fixture), before, "{args:?} changed something");
    no_leftovers(fixture);
}

fn make_fifo(path: &Path) {
    let path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
}

#[test]
fn what_git_cannot_commit_is_refused() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let recut = ["recut", "03", "--no-verify"];

    let fifo = fixture.root().join("course/pipe");
    make_fifo(&fifo);
    refused(&fixture, &recut, &["`course/pipe`", "FIFO"]);
    fs::remove_file(&fifo).unwrap();

    let socket = fixture.root().join("course/agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    refused(&fixture, &recut, &["`course/agent.sock`", "socket"]);
    drop(listener);
    fs::remove_file(&socket).unwrap();

    // Ignored, a FIFO is simply left out, as git leaves it.
    fixture.write(".gitignore", "/course/pipe\n");
    make_fifo(&fifo);
    let run = fixture.xtask_own_config(&recut);
    run.success();
    assert!(!fixture.learner_at("HEAD").contains_key("course/pipe"));
}

#[test]
fn what_git_would_convert_is_refused() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let recut = ["recut", "03", "--no-verify"];
    for (attributes, needle) in [
        ("*.rs filter=lfs\n", "filter=lfs"),
        ("*.rs text eol=crlf\n", "has the git attribute `text`"),
        ("* text=auto\n", "text=auto"),
        ("course/tests/* eol=crlf\n", "eol=crlf"),
    ] {
        fixture.write(".gitattributes", attributes);
        refused(&fixture, &recut, &[needle, "byte for byte"]);
    }
    fixture.write(".gitattributes", "*.rs -text\n");
    fixture.xtask_own_config(&recut).success();
}

#[test]
fn settings_that_change_what_git_commits_are_refused() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let recut = ["recut", "03", "--no-verify"];
    let mut config = fixture.repo.config().unwrap();

    config.set_bool("core.fileMode", false).unwrap();
    refused(&fixture, &recut, &["core.fileMode is false"]);
    config.set_bool("core.fileMode", true).unwrap();

    config.set_str("core.autocrlf", "input").unwrap();
    refused(&fixture, &recut, &["core.autocrlf"]);
    config.remove("core.autocrlf").unwrap();

    // A sparse checkout: chapter 02's focused test is outside it.
    config.set_bool("core.sparseCheckout", true).unwrap();
    fs::create_dir_all(fixture.repo.path().join("info")).unwrap();
    fs::write(
        fixture.repo.path().join("info/sparse-checkout"),
        "/*\n!/course/tests/\n",
    )
    .unwrap();
    refused(&fixture, &recut, &["sparse checkout", "deletion"]);
    config.set_bool("core.sparseCheckout", false).unwrap();

    // Only the entry's flag is left: still sparse.
    let mut index = fixture.repo.index().unwrap();
    let mut entry = index
        .get_path(Path::new("course/tests/stream.rs"), 0)
        .unwrap();
    entry.flags_extended |= git2::IndexEntryExtendedFlag::SKIP_WORKTREE.bits();
    index.add(&entry).unwrap();
    index.write().unwrap();
    fs::remove_file(fixture.root().join("course/tests/stream.rs")).unwrap();
    refused(
        &fixture,
        &recut,
        &["skip-worktree", "`course/tests/stream.rs`"],
    );
}

#[test]
fn head_through_another_symbolic_ref_gets_a_true_message() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let branch = fixture.repo.head().unwrap().name().unwrap().to_string();
    fixture
        .repo
        .reference_symbolic("refs/heads/alias", &branch, true, "test")
        .unwrap();
    fixture.repo.set_head("refs/heads/alias").unwrap();

    refused(
        &fixture,
        &["recut", "03", "--no-verify"],
        &[
            "`refs/heads/alias`, which is itself a symbolic reference",
            &format!("to `{branch}`"),
        ],
    );
    let alias = fixture.repo.find_reference("refs/heads/alias").unwrap();
    assert_eq!(alias.symbolic_target().unwrap(), Some(branch.as_str()));
}

#[test]
fn an_unborn_branch_gets_a_true_message() {
    let fixture = course();
    fixture.repo.set_head("refs/heads/fresh").unwrap();
    refused(
        &fixture,
        &["recut", "03", "--no-verify"],
        &["`fresh`, which has no commits yet"],
    );
}

/// A pipe whose reader has gone: `recut … | true`.
fn closed_stdout() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_failed_verify_exits_1_even_when_nobody_reads_the_output() {
    let fixture = common::tiny_course("", common::ANSWER, |_| {});
    fixture.commit("Describe chapter 01");
    fixture.set_identity();
    fixture.write(
        "course/src/lib.rs",
        &format!("//! Chapter 01: two small functions.\n\n{}", common::ANSWER),
    );
    // Another verify holds the work folder: this one fails.
    let work = fixture.root().join("target/xtask-verify");
    fs::create_dir_all(&work).unwrap();
    let held = fs::File::create(work.join("lock")).unwrap();
    held.lock().unwrap();
    let old_head = fixture.head();

    let mut recut = command(&fixture, &["recut", "01"]);
    recut.stdout(closed_stdout());
    let run = run(recut);

    run.fails_with(1, &["verify failed"]);
    assert_eq!(fixture.rev("HEAD~2"), old_head, "the re-cut is in place");
    drop(held);
}

/// Chapter 01 of `tiny_course`, ready to be re-cut (a doc comment added).
fn tiny_recut(patch: impl FnOnce(&mut serde_json::Value)) -> Fixture {
    let fixture = common::tiny_course("", common::ANSWER, patch);
    fixture.commit("Describe chapter 01");
    fixture.set_identity();
    fixture.write(
        "course/src/lib.rs",
        &format!("//! Chapter 01: two small functions.\n\n{}", common::ANSWER),
    );
    fixture
}

#[test]
fn verify_runs_and_decides_the_exit_status_when_stdout_is_closed() {
    // Passing: nobody reads the table, and that is no failure.
    let fixture = tiny_recut(|_| {});
    let old_head = fixture.head();
    let mut recut = command(&fixture, &["recut", "01"]);
    recut.stdout(closed_stdout());
    let passed = run(recut);
    assert_eq!(passed.code, 0, "{}", passed.stderr);
    assert!(
        passed.stderr.contains("[01]"),
        "verify ran: {}",
        passed.stderr
    );
    assert_eq!(fixture.rev("HEAD~2"), old_head);

    // Failing: a fault the focused test cannot catch (addition commutes).
    let fixture = tiny_recut(|manifest| {
        manifest["faults"][0]["replace"] = "b + a".into();
    });
    let mut recut = command(&fixture, &["recut", "01"]);
    recut.stdout(closed_stdout());
    let failed = run(recut);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert!(failed.stderr.contains("verify failed"), "{}", failed.stderr);
}

#[test]
fn what_a_killed_re_cut_left_behind_is_never_taken_for_the_learners_world() {
    let fixture = course();
    edit_chapter_02(&fixture);
    // A re-cut killed by SIGKILL half way: its staging folder holds the
    // old files it had moved away (and it held the index lock, since removed).
    let left = fixture.repo.path().join("xtask-recut-4242");
    fs::create_dir_all(left.join("old")).unwrap();
    fs::write(left.join("old/0"), "pub mod stream;\n").unwrap();

    refused(
        &fixture,
        &["recut", "02", "--no-verify"],
        &["xtask-recut-4242", "killed half way", "`old`"],
    );
    assert!(left.join("old/0").exists(), "the only copy is kept");
}

#[test]
fn a_full_stdout_is_reported_after_a_complete_re_cut() {
    let full = Path::new("/dev/full");
    assert!(full.exists(), "this test needs /dev/full (Linux)");
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let old_head = fixture.head();

    let mut recut = command(&fixture, &["recut", "03", "--no-verify"]);
    recut.stdout(fs::OpenOptions::new().write(true).open(full).unwrap());
    let run = run(recut);

    // The verdict stands (exit 0); one line on stderr says where everything is.
    assert_eq!(run.code, 0, "{}", run.stderr);
    let notes: Vec<&str> = run.stderr.lines().filter(|line| !line.is_empty()).collect();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    assert!(notes[0].contains(AT_NEW) && notes[0].contains("cannot write to standard output"));
    assert_eq!(fixture.rev("HEAD~2"), old_head);
    all_at_head(&fixture);
}

#[test]
fn a_tracked_symlink_the_new_head_makes_a_folder_is_moved_not_followed() {
    // Chapter 02 has `course/gen` as a symlink to a folder elsewhere in the
    // work tree (a symlink out of it is refused); chapter 03 turns it into
    // a folder of its own.
    let target = "../.ci/elsewhere";
    let fixture = Fixture::empty();
    let outside = fixture.root().join(".ci/elsewhere");
    fs::create_dir_all(&outside).unwrap();
    fixture.write("Cargo.toml", "[workspace]\nmembers = [\"course\"]\n");
    fixture.write("course/src/lib.rs", "// skeleton\n");
    fixture.commit("Skeleton");
    fixture.write("course/src/stream.rs", "// chapter 02\n");
    fixture.symlink(target, "course/gen");
    fixture.commit("course(02): the stream");
    fs::remove_file(fixture.root().join("course/gen")).unwrap();
    fixture.write("course/gen/types.rs", "// chapter 03\n");
    fixture.commit("course(03): save one complete tool round-trip");
    fixture.write_manifest("02", &manifest("02", "course/src/stream.rs", &[]));
    fixture.write_manifest("03", &manifest("03", "course/gen/types.rs", &[]));
    fixture.commit("Describe chapters 02 and 03");
    fixture.set_identity();
    // Back at chapter 02, edited.
    fs::remove_dir_all(fixture.root().join("course/gen")).unwrap();
    fixture.symlink(target, "course/gen");
    fixture.write("course/src/stream.rs", "// chapter 02, second cut\n");

    let run = fixture.xtask_own_config(&["recut", "02", "--no-verify"]);

    run.success().prints(&[AT_NEW]);
    assert_eq!(common::snapshot(&outside), Vec::<PathBuf>::new());
    assert_eq!(fixture.learner_at("HEAD~1")["course/gen"].0, 0o120000);
    assert_eq!(
        fixture.learner_at("HEAD")["course/gen/types.rs"].1,
        b"// chapter 03\n"
    );
    let gen_dir = fixture
        .root()
        .join("course/gen")
        .symlink_metadata()
        .unwrap();
    assert!(gen_dir.is_dir(), "a folder now, not the symlink");
    all_at_head(&fixture);
    no_leftovers(&fixture);
}

#[test]
fn a_signal_while_reading_the_work_tree_changes_nothing() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    // Enough new files that reading the work tree takes a while.
    for n in 0..4000 {
        fixture.write(&format!("course/data/d{n:05}.txt"), &format!("{n}\n"));
    }
    let before = everything(&fixture);
    let lock = fixture.repo.path().join("index.lock");

    let mut recut = command(&fixture, &["recut", "03", "--no-verify"]);
    recut.stdout(Stdio::null()).stderr(Stdio::piped());
    // SAFETY: signal(2) only, between fork and exec.
    unsafe {
        recut.pre_exec(|| {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = recut.spawn().unwrap();
    // recut holds the index lock from its first read to its last write.
    let locked = common::wait_until(Duration::from_secs(60), || lock.exists());
    common::send_signal(child.id(), libc::SIGTERM);
    let status = common::wait_at_most(&mut child, Duration::from_secs(60)).unwrap();
    let run = Run {
        code: status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: common::stderr_of(&mut child),
    };
    assert!(locked, "recut never took the index lock: {}", run.stderr);

    assert_eq!(run.code, 143, "{}", run.stderr);
    one_line_saying(&run, AS_THEY_WERE);
    assert!(run.stderr.contains("SIGTERM"), "{}", run.stderr);
    assert_eq!(everything(&fixture), before);
    no_leftovers(&fixture);
}

/// Moves the folder `course/tests` to `to` and leaves a symlink `target`
/// in its place (`mv course/tests /outside && ln -s /outside course/tests`).
fn tests_folder_as_symlink(fixture: &Fixture, to: &Path, target: &str) {
    fs::rename(fixture.root().join("course/tests"), to).unwrap();
    fixture.symlink(target, "course/tests");
}

#[test]
fn a_symlink_out_of_the_work_tree_is_refused() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let outside = tempfile::tempdir().unwrap();
    let moved = outside.path().join("tests");
    tests_folder_as_symlink(&fixture, &moved, moved.to_str().unwrap());
    let recut = ["recut", "03", "--no-verify"];
    refused(
        &fixture,
        &recut,
        &["`course/tests`", "absolute", "nothing was changed"],
    );

    // Relative, through a symlink inside the work tree that climbs out:
    // `course/up` is the repository's root, so `course/up/..` is outside it.
    fs::remove_file(fixture.root().join("course/tests")).unwrap();
    fs::rename(&moved, fixture.root().join("course/tests")).unwrap();
    fixture.symlink("..", "course/up");
    fixture.symlink("up/../outside", "course/away");
    refused(
        &fixture,
        &recut,
        &["`course/away`", "outside the work tree"],
    );
}

#[test]
fn a_symlink_where_the_chapter_has_a_folder_is_refused() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let inside = fixture.root().join("course/tests-real");
    tests_folder_as_symlink(&fixture, &inside, "tests-real");
    refused(
        &fixture,
        &["recut", "03", "--no-verify"],
        &[
            "`course/tests`",
            "where chapter 03 has a folder",
            "nothing was changed",
        ],
    );
}

#[test]
fn a_file_where_a_later_chapter_keeps_a_folder_is_a_conflict() {
    let fixture = course();
    edit_chapter_02(&fixture);
    // Chapter 02's tests folder becomes one file; chapter 03 adds a test
    // to the folder.
    fs::remove_dir_all(fixture.root().join("course/tests")).unwrap();
    fixture.write("course/tests", "// all the tests in one file\n");
    let before = everything(&fixture);

    let run = fixture.xtask_own_config(&["recut", "02", "--no-verify"]);

    run.fails_with(1, &["chapter 03's layer does not replay", "course/tests"]);
    assert_eq!(everything(&fixture), before);
    no_leftovers(&fixture);
}

#[test]
fn what_is_in_the_way_of_the_staging_folder_is_named_truly() {
    let outside = tempfile::tempdir().unwrap();
    for (kind, needle) in [
        ("symlink", "is a symlink"),
        ("file", "is not a folder"),
        ("folder", "a folder without the re-cut's files"),
    ] {
        let fixture = course();
        edit_chapter_02(&fixture);
        let left = fixture.repo.path().join("xtask-recut-4242");
        match kind {
            "symlink" => std::os::unix::fs::symlink(outside.path(), &left).unwrap(),
            "file" => fs::write(&left, "").unwrap(),
            _ => fs::create_dir(&left).unwrap(),
        }
        let before = everything(&fixture);
        let run = fixture.xtask_own_config(&["recut", "02", "--no-verify"]);
        run.fails_with(2, &["xtask-recut-4242", needle, "remove it"]);
        assert!(!run.stderr.contains("killed half way"), "{}", run.stderr);
        assert!(!run.stderr.contains("`old`"), "{}", run.stderr);
        assert_eq!(everything(&fixture), before);
    }
}

#[test]
fn a_symlink_where_a_later_chapter_keeps_a_folder_is_a_conflict() {
    // Chapter 02 has `course/gen` as a symlink; a commit between the
    // chapters makes it a folder, and chapter 03 adds a file to the folder.
    let fixture = Fixture::empty();
    fixture.write("Cargo.toml", "[workspace]\nmembers = [\"course\"]\n");
    fixture.write("course/src/lib.rs", "// skeleton\n");
    fixture.commit("Skeleton");
    fixture.write("course/src/stream.rs", "// chapter 02\n");
    fixture.symlink("src", "course/gen");
    fixture.commit("course(02): the stream");
    fs::remove_file(fixture.root().join("course/gen")).unwrap();
    fixture.write("course/gen/kept.rs", "// between the chapters\n");
    fixture.commit("Generated code in a folder of its own");
    fixture.write("course/gen/types.rs", "// chapter 03\n");
    fixture.commit("course(03): save one complete tool round-trip");
    fixture.write_manifest("02", &manifest("02", "course/src/stream.rs", &[]));
    fixture.write_manifest("03", &manifest("03", "course/gen/types.rs", &[]));
    fixture.commit("Describe chapters 02 and 03");
    fixture.set_identity();
    // Back at chapter 02, edited.
    fs::remove_dir_all(fixture.root().join("course/gen")).unwrap();
    fixture.symlink("src", "course/gen");
    fixture.write("course/src/stream.rs", "// chapter 02, second cut\n");
    let before = everything(&fixture);

    let run = fixture.xtask_own_config(&["recut", "02", "--no-verify"]);

    run.fails_with(1, &["chapter 03's layer does not replay", "course/gen"]);
    assert_eq!(everything(&fixture), before);
    no_leftovers(&fixture);
}
