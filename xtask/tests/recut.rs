//! `recut NN`: re-cutting chapters by appending commits, on fixture courses,
//! and what a re-cut leaves when something goes wrong: one line saying
//! where things are, and nothing lost (AUTHORING.md, "Re-cutting a chapter"). recut runs the `git` on
//! PATH; every run hides git's global configuration (HOME points into the
//! fixture), so the author's identity is the fixture's own
//! (`set_identity`) and nothing of the caller's environment counts.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{ANSWER, Blob, Fixture, Run, manifest, tiny_course};
use git2::Oid;

const RESTORE_03: &str = "Restore chapter 03's starting point, to re-cut it";
const RESTORE_02: &str = "Restore chapter 02's starting point, to re-cut it";
const COURSE_02: &str = "course(02): the stream";
const COURSE_03: &str = "course(03): save one complete tool round-trip";
const AS_THEY_WERE: &str = "the branch, the index and the work tree are all as they were";
const AT_NEW: &str = "the branch, the index and the work tree are all at the new state";
const STAGED: &str = "the branch and the work tree are as they were, and the index holds \
                      the work tree's learner files";

/// Chapters 02 and 03 cut, the chapter folders committed, an identity set.
fn course() -> Fixture {
    course_with(&[])
}

/// [`course`] with `extra` files added by chapter 03's layer (in the
/// commits and the index only: the work tree is about to be brought back
/// to chapter 02 anyway).
fn course_with(extra: &[(String, String)]) -> Fixture {
    let fixture = Fixture::course_with_index_only(extra);
    fixture.set_identity();
    fixture
}

fn recut(fixture: &Fixture, args: &[&str]) -> Run {
    let mut all = vec!["recut"];
    all.extend_from_slice(args);
    fixture.xtask_own_config(&all)
}

/// Brings the work tree's learner world back to chapter 02's end state.
fn back_to_chapter_02(fixture: &Fixture) {
    fixture.write("course/src/lib.rs", "pub mod stream;\n");
    fs::remove_file(fixture.root().join("course/src/types.rs")).unwrap();
    fs::remove_file(fixture.root().join("course/tests/message_ir.rs")).unwrap();
}

/// [`back_to_chapter_02`], and an edit: `recut 02` then re-cuts 02 and
/// replays 03 into the work tree.
fn edit_chapter_02(fixture: &Fixture) {
    back_to_chapter_02(fixture);
    fixture.write("course/src/stream.rs", "// chapter 02, second cut\n");
}

fn files(entries: &[(&str, &str)]) -> BTreeMap<String, Blob> {
    entries
        .iter()
        .map(|(path, content)| (path.to_string(), (0o100644, content.as_bytes().to_vec())))
        .collect()
}

/// The index, entry by entry, with the stat data git keeps.
fn index_entries(fixture: &Fixture) -> BTreeMap<String, (Oid, u32, u32, i32, u32, u32)> {
    let mut index = fixture.repo.index().unwrap();
    index.read(true).unwrap();
    index
        .iter()
        .map(|entry| {
            (
                String::from_utf8_lossy(&entry.path).into_owned(),
                (
                    entry.id,
                    entry.mode,
                    entry.file_size,
                    entry.mtime.seconds(),
                    entry.mtime.nanoseconds(),
                    entry.ino,
                ),
            )
        })
        .collect()
}

/// The index's learner entries: path → (id, mode).
fn learner_index(fixture: &Fixture) -> BTreeMap<String, (Oid, u32)> {
    index_entries(fixture)
        .into_iter()
        .filter(|(path, _)| !common::is_tooling(path))
        .map(|(path, (id, mode, ..))| (path, (id, mode)))
        .collect()
}

/// HEAD's learner blobs as the index would list them: path → (id, mode).
fn learner_of_head(fixture: &Fixture) -> BTreeMap<String, (Oid, u32)> {
    fixture
        .learner_at("HEAD")
        .into_iter()
        .map(|(path, (mode, content))| {
            let id = Oid::hash_object(git2::ObjectType::Blob, &content).unwrap();
            (path, (id, mode as u32))
        })
        .collect()
}

/// The work tree's learner files: path → content.
fn learner_work_tree(fixture: &Fixture) -> BTreeMap<String, Vec<u8>> {
    fixture
        .work_tree()
        .into_iter()
        .filter(|(path, _)| !common::is_tooling(path))
        .map(|(path, (_, content))| (path, content))
        .collect()
}

/// The learner's world of the index, of HEAD and of the work tree agree.
fn all_at_head(fixture: &Fixture) {
    let expected: BTreeMap<String, Vec<u8>> = fixture
        .learner_at("HEAD")
        .into_iter()
        .map(|(path, (_, content))| (path, content))
        .collect();
    assert_eq!(
        learner_work_tree(fixture),
        expected,
        "the work tree is HEAD's"
    );
    assert_eq!(
        learner_index(fixture),
        learner_of_head(fixture),
        "the index is HEAD's"
    );
}

/// Everything a refused or failed re-cut must leave as it was.
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

/// Asserts that `args` is refused with exit 2, naming `needles`, and that
/// it changed nothing.
fn refused(fixture: &Fixture, args: &[&str], needles: &[&str]) {
    let before = everything(fixture);
    fixture.xtask_own_config(args).fails_with(2, needles);
    assert_eq!(everything(fixture), before, "{args:?} changed something");
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

/// `cargo xtask ARGS` as `xtask_own_config` runs it, for tests that set up
/// the child themselves (limits, PATH, stdout).
fn command(fixture: &Fixture, args: &[&str]) -> Command {
    let caller_home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| caller_home.join(".cargo"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| caller_home.join(".rustup"));
    let home = fixture.dir.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        .args(args)
        .current_dir(fixture.root())
        .env("CARGO_TERM_COLOR", "never")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
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

/// Installs git's `reference-transaction` hook: `script` runs once, the
/// first time git reaches `state` while moving a reference (`prepared`:
/// before the move, where a failing hook stops it; `committed`: after it).
fn hook_once(fixture: &Fixture, state: &str, script: &str) {
    let hooks = fixture.repo.path().join("hooks");
    fs::create_dir_all(&hooks).unwrap();
    let done = fixture.dir.path().join("hook-ran");
    let hook = hooks.join("reference-transaction");
    fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\n[ \"$1\" = {state} ] || exit 0\n\
             [ -e '{done}' ] && exit 0\ntouch '{done}'\n{script}\n",
            done = done.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Runs `git ARGS` in the fixture, as the author would.
fn git(fixture: &Fixture, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(fixture.root())
        .args(args)
        .env("HOME", fixture.dir.path())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn re_cutting_the_last_chapter_appends_a_restore_and_a_new_cut() {
    let fixture = course();
    let old_head = fixture.head();
    let old_tooling = fixture.tooling_at("HEAD");
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    // Tooling edits of the work tree: one staged, one not. Neither is committed.
    fixture.write("checkpoints/02/LEARNING.md", "# staged guide edit\n");
    let mut index = fixture.repo.index().unwrap();
    index
        .add_path(Path::new("checkpoints/02/LEARNING.md"))
        .unwrap();
    index.write().unwrap();
    fixture.write("checkpoints/03/LEARNING.md", "# unstaged guide edit\n");
    let tooling_index_before: BTreeMap<_, _> = index_entries(&fixture)
        .into_iter()
        .filter(|(path, _)| common::is_tooling(path))
        .collect();

    let run = recut(&fixture, &["03", "--no-verify"]);
    run.success().prints(&[RESTORE_03, COURSE_03]);

    assert_eq!(fixture.rev("HEAD~2"), old_head, "appended on top of HEAD");
    assert_eq!(fixture.subject("HEAD~1"), RESTORE_03);
    let chapter_02 = fixture.rev(&format!("{old_head}~2")).to_string();
    assert_eq!(fixture.subject(&chapter_02), COURSE_02);
    assert_eq!(
        fixture.learner_at("HEAD~1"),
        fixture.learner_at(&chapter_02),
        "the restore commit holds chapter 02's end state"
    );
    assert_eq!(
        fixture.message("HEAD"),
        "course(03): save one complete tool round-trip\n\nThe chapter's layer as the work tree \
         holds it, cut on top of its starting point.\nMade by `cargo xtask recut 03`.\n",
        "the chapter keeps its subject; the old body, which described the old layer, does not carry over"
    );
    let mut expected = fixture.learner_at(&old_head.to_string());
    expected.insert(
        "course/src/types.rs".into(),
        (0o100644, b"// chapter 03, second cut\n".to_vec()),
    );
    assert_eq!(fixture.learner_at("HEAD"), expected);
    assert_eq!(fixture.tooling_at("HEAD"), old_tooling, "tooling is HEAD's");
    assert_eq!(fixture.tooling_at("HEAD~1"), old_tooling);

    // The restore commit holds course(02)'s learner world, so the start
    // keeps course(02)'s name (one name per thing).
    let json = fixture.xtask(&["checkpoint", "03", "--json"]).json();
    assert_eq!(json["target"]["id"], fixture.rev("HEAD").to_string());
    let start = json["parent"]["id"].as_str().unwrap().to_string();
    assert!(
        json["parent"]["subject"]
            .as_str()
            .unwrap()
            .starts_with("course(02):"),
        "{json}"
    );
    assert_eq!(fixture.learner_at(&start), fixture.learner_at("HEAD~1"));

    // The tooling edits are still only in the work tree (and the index).
    let work_tree = fixture.work_tree();
    assert_eq!(
        work_tree["checkpoints/03/LEARNING.md"].1,
        b"# unstaged guide edit\n"
    );
    assert_eq!(
        work_tree["checkpoints/02/LEARNING.md"].1,
        b"# staged guide edit\n"
    );
    let tooling_index_after: BTreeMap<_, _> = index_entries(&fixture)
        .into_iter()
        .filter(|(path, _)| common::is_tooling(path))
        .collect();
    assert_eq!(tooling_index_after, tooling_index_before);
    assert_eq!(learner_index(&fixture), learner_of_head(&fixture));

    let branch = fixture.repo.head().unwrap().name().unwrap().to_string();
    let reflog = fixture.repo.reflog(&branch).unwrap();
    assert!(
        reflog
            .get(0)
            .unwrap()
            .message()
            .unwrap()
            .unwrap_or_default()
            .starts_with("recut 03"),
        "the branch's reflog says what moved it"
    );
}

#[test]
fn re_cutting_an_earlier_chapter_replays_the_later_one() {
    let fixture = course();
    let old_head = fixture.head();
    let old_02 = fixture.rev("HEAD~2");
    let old_03 = fixture.rev("HEAD~1");
    let skeleton = fixture.rev("HEAD~3");
    back_to_chapter_02(&fixture);
    // Chapter 02 again: its stream changes, its focused test moves to a new file.
    fixture.write("course/src/stream.rs", "// chapter 02, second cut\n");
    fs::remove_file(fixture.root().join("course/tests/stream.rs")).unwrap();
    fixture.write("course/tests/stream_events.rs", "// focused 02, renamed\n");

    let run = recut(&fixture, &["02", "--no-verify"]);
    run.success().prints(&[RESTORE_02, COURSE_02, COURSE_03]);
    // The author's manifest follows the renamed focused test (tooling stays uncommitted).
    fixture.write_manifest(
        "02",
        &common::manifest(
            "02",
            "course/tests/stream_events.rs",
            &["course/src/stream.rs"],
        ),
    );

    assert_eq!(
        fixture.rev("HEAD~3"),
        old_head,
        "history before is unchanged"
    );
    for old in [old_02, old_03] {
        assert!(
            fixture
                .repo
                .graph_descendant_of(fixture.head(), old)
                .unwrap(),
            "the old checkpoints stay reachable"
        );
    }
    assert_eq!(fixture.subject("HEAD~2"), RESTORE_02);
    assert_eq!(
        fixture.learner_at("HEAD~2"),
        fixture.learner_at(&skeleton.to_string()),
        "the first chapter starts where it started"
    );
    assert_eq!(fixture.subject("HEAD~1"), COURSE_02);
    assert_eq!(fixture.subject("HEAD"), COURSE_03);
    let chapter_03 = files(&[
        ("Cargo.toml", "[workspace]\nmembers = [\"course\"]\n"),
        ("course/src/lib.rs", "pub mod stream;\npub mod types;\n"),
        ("course/src/stream.rs", "// chapter 02, second cut\n"),
        ("course/src/types.rs", "// chapter 03 answer\n"),
        ("course/tests/message_ir.rs", "// focused 03\n"),
        ("course/tests/stream_events.rs", "// focused 02, renamed\n"),
    ]);
    assert_eq!(
        fixture.learner_at("HEAD"),
        chapter_03,
        "chapter 03's layer on top of the new chapter 02"
    );

    for (id, target, parent) in [("02", "HEAD~1", "HEAD~2"), ("03", "HEAD", "HEAD~1")] {
        let json = fixture.xtask(&["checkpoint", id, "--json"]).json();
        assert_eq!(
            json["target"]["id"],
            fixture.rev(target).to_string(),
            "{id}"
        );
        assert_eq!(
            json["parent"]["id"],
            fixture.rev(parent).to_string(),
            "{id}"
        );
    }
    // The work tree and the index now hold chapter 03's new end state.
    let work_tree: BTreeMap<String, Vec<u8>> = fixture
        .work_tree()
        .into_iter()
        .filter(|(path, _)| !common::is_tooling(path))
        .map(|(path, (_, content))| (path, content))
        .collect();
    let expected: BTreeMap<String, Vec<u8>> = chapter_03
        .into_iter()
        .map(|(path, (_, content))| (path, content))
        .collect();
    assert_eq!(work_tree, expected);
    assert!(!fixture.root().join("course/tests/stream.rs").exists());
    assert_eq!(learner_index(&fixture), learner_of_head(&fixture));
}

#[test]
fn the_first_chapter_takes_the_work_trees_top_level_files() {
    let fixture = course();
    let skeleton = fixture.rev("HEAD~3").to_string();
    back_to_chapter_02(&fixture);
    let cargo_toml = "[workspace]\nmembers = [\"course\"]\nresolver = \"2\"\n";
    fixture.write("Cargo.toml", cargo_toml);
    fixture.write(".gitignore", "/target\n");

    recut(&fixture, &["02", "--no-verify"]).success();

    let mut expected = fixture.learner_at(&skeleton);
    expected.insert("Cargo.toml".into(), (0o100644, cargo_toml.into()));
    expected.insert(".gitignore".into(), (0o100644, b"/target\n".to_vec()));
    assert_eq!(
        fixture.learner_at("HEAD~2"),
        expected,
        "the crate from the old parent, the top-level files from the work tree"
    );
    assert_eq!(
        fixture.learner_at("HEAD~2")["course/src/lib.rs"].1,
        b"// skeleton\n"
    );
    for later in ["HEAD~1", "HEAD"] {
        assert_eq!(
            fixture.learner_at(later)["Cargo.toml"].1,
            cargo_toml.as_bytes(),
            "{later} has the new workspace file"
        );
    }
    assert_eq!(
        fixture.learner_at("HEAD")["course/src/types.rs"].1,
        b"// chapter 03 answer\n"
    );
}

#[test]
fn a_conflict_changes_nothing_and_names_the_file() {
    let fixture = course();
    back_to_chapter_02(&fixture);
    // Chapter 03 adds `pub mod types;` exactly where this adds a line.
    fixture.write("course/src/lib.rs", "pub mod stream;\npub mod extra;\n");
    fixture.write("course/src/extra.rs", "// extra\n");
    let before = everything(&fixture);
    let index_tree_before = fixture.repo.index().unwrap().write_tree().unwrap();

    let run = recut(&fixture, &["02", "--no-verify"]);
    run.fails_with(
        1,
        &[
            "chapter 03",
            "course/src/lib.rs",
            "Nothing was changed",
            "recut 02 --only",
            "recut 03",
        ],
    );
    assert!(
        !run.stderr.contains("course/src/extra.rs"),
        "{}",
        run.stderr
    );
    assert_eq!(
        everything(&fixture),
        before,
        "HEAD, refs, index and work tree"
    );
    let mut index = fixture.repo.index().unwrap();
    index.read(true).unwrap();
    assert_eq!(index.write_tree().unwrap(), index_tree_before);
}

#[test]
fn only_leaves_later_chapters_alone() {
    let fixture = course();
    let old_03 = fixture.rev("HEAD~1");
    back_to_chapter_02(&fixture);
    fixture.write("course/src/stream.rs", "// chapter 02, second cut\n");
    let learner_before: BTreeMap<_, _> = fixture
        .work_tree()
        .into_iter()
        .filter(|(path, _)| !common::is_tooling(path))
        .collect();

    let run = recut(&fixture, &["02", "--only", "--no-verify"]);
    run.success().prints(&[RESTORE_02, COURSE_02]);
    assert!(!run.stdout.contains(COURSE_03), "{}", run.stdout);

    assert_eq!(fixture.subject("HEAD"), COURSE_02);
    assert_eq!(fixture.subject("HEAD~1"), RESTORE_02);
    let json = fixture.xtask(&["checkpoint", "03", "--json"]).json();
    assert_eq!(
        json["target"]["id"],
        old_03.to_string(),
        "chapter 03 is the old cut"
    );
    let learner_after: BTreeMap<_, _> = fixture
        .work_tree()
        .into_iter()
        .filter(|(path, _)| !common::is_tooling(path))
        .collect();
    assert_eq!(
        learner_after, learner_before,
        "the work tree is chapter 02's new end state"
    );
}

#[test]
fn a_chapter_never_cut_gets_its_first_checkpoint() {
    let fixture = course();
    fixture.write_manifest("04", &manifest("04", "course/tests/agent.rs", &[]));
    fixture.commit("Describe chapter 04");
    let chapter_03 = fixture.rev("HEAD~1").to_string();
    fixture.write("course/src/agent.rs", "// chapter 04\n");
    fixture.write("course/tests/agent.rs", "// focused 04\n");

    recut(&fixture, &["04", "--no-verify"]).success();

    assert_eq!(fixture.subject("HEAD"), "course(04): 第 04 章");
    assert_eq!(
        fixture.learner_at("HEAD~1"),
        fixture.learner_at(&chapter_03)
    );
    let json = fixture.xtask(&["checkpoint", "04", "--json"]).json();
    let start = json["parent"]["id"].as_str().unwrap().to_string();
    assert_eq!(fixture.learner_at(&start), fixture.learner_at(&chapter_03));
    let subject = json["parent"]["subject"].as_str().unwrap();
    assert!(
        subject.starts_with("course(03):"),
        "named by course(03): {json}"
    );
}

#[test]
fn files_symlinks_and_executable_bits_are_committed_as_git_would() {
    let fixture = course();
    fixture.write(".gitignore", "*.log\n/course/scratch/\n");
    fixture.write("course/src/new.rs", "// not yet tracked\n");
    fixture.write("course/run.sh", "#!/bin/sh\n");
    fixture.make_executable("course/run.sh");
    // Git looks at the owner's execute bit only: group and others' bits
    // alone leave a plain file (0o755 above cannot tell the two rules apart).
    fixture.write("course/group.sh", "#!/bin/sh\n");
    fs::set_permissions(
        fixture.root().join("course/group.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o654),
    )
    .unwrap();
    fixture.write("course/owner.sh", "#!/bin/sh\n");
    fs::set_permissions(
        fixture.root().join("course/owner.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o744),
    )
    .unwrap();
    fixture.symlink("src/lib.rs", "course/lib-link");
    // (A link out of the work tree is refused: see recut_safety.rs.)
    fixture.symlink("../Cargo.toml", "course/workspace-link");
    fixture.write("course/debug.log", "ignored\n");
    fixture.write("course/scratch/notes.txt", "ignored folder\n");
    fs::create_dir_all(fixture.root().join("course/empty")).unwrap();
    // git commits no FIFO, and nor does recut.
    let fifo = std::ffi::CString::new(
        fixture
            .root()
            .join("course/pipe")
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let before = fixture.work_tree();

    recut(&fixture, &["03", "--no-verify"]).success();

    let head = fixture.learner_at("HEAD");
    assert_eq!(
        head["course/src/new.rs"],
        (0o100644, b"// not yet tracked\n".to_vec())
    );
    assert_eq!(head["course/run.sh"].0, 0o100755);
    assert_eq!(
        head["course/group.sh"].0, 0o100644,
        "group/other x bits only"
    );
    assert_eq!(
        head["course/owner.sh"].0, 0o100755,
        "the owner's x bit alone"
    );
    assert_eq!(head["course/lib-link"], (0o120000, b"src/lib.rs".to_vec()));
    assert_eq!(
        head["course/workspace-link"],
        (0o120000, b"../Cargo.toml".to_vec())
    );
    assert!(!head.contains_key("course/debug.log"));
    assert!(!head.contains_key("course/pipe"));
    assert!(!head.keys().any(|path| path.starts_with("course/scratch")));
    assert_eq!(
        fixture.work_tree(),
        before,
        "the work tree already was HEAD's learner world"
    );
    assert!(
        fixture
            .root()
            .join("course/workspace-link")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(learner_index(&fixture), learner_of_head(&fixture));
}

#[test]
fn refusals_change_nothing() {
    Fixture::empty()
        .xtask_own_config(&["recut", "01"])
        .fails_with(2, &["no commits yet"]);
    let fixture = course();
    refused(
        &fixture,
        &["recut", "09"],
        &["unknown chapter 09", "02, 03"],
    );
    refused(
        &fixture,
        &["recut", "03"],
        &["nothing to re-cut", "chapter 03's end state"],
    );
    // The work tree holds chapter 03's end state: as chapter 02's, it would
    // swallow chapter 03's whole layer.
    let chapter_02 = fixture.rev("HEAD~2").to_string();
    refused(
        &fixture,
        &["recut", "02"],
        &[
            "would leave chapter 03's layer empty",
            &format!(
                "git restore --source={} -- Cargo.toml course",
                &chapter_02[..7]
            ),
        ],
    );
    back_to_chapter_02(&fixture);
    refused(
        &fixture,
        &["recut", "03"],
        &[
            "chapter 03's layer would be empty",
            "chapter 02's end state",
        ],
    );

    fixture.write("course/src/types.rs", "// edited\n");
    let branch = fixture.repo.head().unwrap().name().unwrap().to_string();
    fixture.repo.set_head_detached(fixture.head()).unwrap();
    refused(
        &fixture,
        &["recut", "03"],
        &["HEAD is detached", "git switch"],
    );
    fixture.repo.set_head(&branch).unwrap();

    fs::write(
        fixture.repo.path().join("MERGE_HEAD"),
        format!("{}\n", fixture.head()),
    )
    .unwrap();
    refused(&fixture, &["recut", "03"], &["merge is in progress"]);
    fs::remove_file(fixture.repo.path().join("MERGE_HEAD")).unwrap();

    let mut config = fixture.repo.config().unwrap();
    config.remove("user.name").unwrap();
    config.remove("user.email").unwrap();
    refused(
        &fixture,
        &["recut", "03", "--no-verify"],
        &["user.name", "user.email", "nothing was changed"],
    );
}

#[test]
fn a_re_cut_chapter_passes_verify() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.commit("Describe chapter 01");
    fixture.set_identity();
    let skeleton = fixture.rev("HEAD~2").to_string();
    let workspace =
        "[workspace]\nmembers = [\"course\"]\nresolver = \"2\"\n\n[profile.dev]\ndebug = 0\n";
    fixture.write("Cargo.toml", workspace);
    fixture.write(
        "course/src/lib.rs",
        &format!("//! Chapter 01: two small functions.\n\n{ANSWER}"),
    );

    let run = recut(&fixture, &["01"]);
    run.success()
        .prints(&["course(01): add and double", "every checkpoint is honest"]);
    assert_eq!(
        fixture.learner_at("HEAD~1")["Cargo.toml"].1,
        workspace.as_bytes()
    );
    assert_eq!(
        fixture.learner_at("HEAD~1")["course/src/lib.rs"],
        fixture.learner_at(&skeleton)["course/src/lib.rs"]
    );
}

/// A re-cut whose commits are dated before the old cut (a clock behind,
/// `GIT_COMMITTER_DATE`) is still the newest in history: recut's own
/// verify, then checkpoint, practice and check all take it as the chapter.
#[test]
fn a_re_cut_dated_before_the_old_cut_is_the_chapter_everywhere() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["expectedTests"] = 3.into();
    });
    fixture.commit("Describe chapter 01, with a third test");
    fixture.set_identity();
    let answer = format!("{ANSWER}\npub fn triple(x: i32) -> i32 {{\n    x * 3\n}}\n");
    let triples = "\n#[test]\nfn triples() {\n    assert_eq!(course::triple(2), 6);\n}\n";
    let focused = format!("{}{triples}", common::FOCUSED);
    fixture.write("course/src/lib.rs", &answer);
    fixture.write("course/tests/focused.rs", &focused);

    let mut recut = command(&fixture, &["recut", "01"]);
    let year_2000 = "@946684800 +0000";
    recut
        .env("GIT_COMMITTER_DATE", year_2000)
        .env("GIT_AUTHOR_DATE", year_2000);
    run(recut).success().prints(&["every checkpoint is honest"]);
    let time = |spec: &str| fixture.repo.find_commit(fixture.rev(spec)).unwrap().time();
    assert!(time("HEAD") < time("HEAD~3"), "the old cut is dated later");

    let json = fixture.xtask(&["checkpoint", "01", "--json"]).json();
    assert_eq!(json["target"]["id"], fixture.head().to_string());
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    assert_eq!(
        fs::read_to_string(lab.join("course/tests/focused.rs")).unwrap(),
        focused
    );
    fs::write(lab.join("course/src/lib.rs"), &answer).unwrap();
    fixture
        .xtask(&["check", "01", "lab"])
        .success()
        .prints(&["第 01 章完成"]);
}

#[test]
fn a_verify_that_fails_after_the_commits_exits_1_not_2() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.commit("Describe chapter 01");
    fixture.set_identity();
    fixture.write(
        "course/src/lib.rs",
        &format!("//! Chapter 01: two small functions.\n\n{ANSWER}"),
    );
    // Another verify holds the work folder: this one is refused (bad input).
    let work = fixture.root().join("target/xtask-verify");
    fs::create_dir_all(&work).unwrap();
    let held = fs::File::create(work.join("lock")).unwrap();
    held.lock().unwrap();

    let old_head = fixture.head();
    let run = recut(&fixture, &["01"]);
    run.fails_with(1, &["the re-cut commits are in place, but verify failed"]);
    assert_eq!(fixture.rev("HEAD~2"), old_head, "the branch did move");
    drop(held);
}

#[test]
fn a_locked_index_loses_nothing() {
    let fixture = course();
    edit_chapter_02(&fixture);
    fs::write(fixture.repo.path().join("index.lock"), "").unwrap();
    let before = everything(&fixture);

    let run = recut(&fixture, &["02", "--no-verify"]);

    run.fails_with(2, &["index.lock", "File exists", AS_THEY_WERE]);
    one_line_saying(&run, AS_THEY_WERE);
    assert_eq!(everything(&fixture), before);
    assert!(fixture.repo.path().join("index.lock").exists(), "not ours");
}

#[test]
fn a_sparse_checkout_commits_no_deletion_it_did_not_see() {
    let fixture = course();
    let old_head = fixture.head().to_string();
    // The focused tests are outside the checkout: missing from the work
    // tree, marked skip-worktree in the index.
    git(
        &fixture,
        &[
            "sparse-checkout",
            "set",
            "--no-cone",
            "/*",
            "!/course/tests/",
        ],
    );
    assert!(!fixture.root().join("course/tests").exists());
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");

    recut(&fixture, &["03", "--no-verify"]).success();

    let mut expected = fixture.learner_at(&old_head);
    expected.insert(
        "course/src/types.rs".into(),
        (0o100644, b"// chapter 03, second cut\n".to_vec()),
    );
    assert_eq!(fixture.learner_at("HEAD"), expected, "no test was deleted");
    assert_eq!(
        fixture.learner_at("HEAD~1")["course/tests/stream.rs"].1,
        b"// focused 02\n"
    );
    assert!(
        !fixture.root().join("course/tests").exists(),
        "still sparse"
    );
    assert_eq!(learner_index(&fixture), learner_of_head(&fixture));
}

#[test]
fn an_edit_saved_while_recut_runs_is_never_lost() {
    // Saved after the commits are built and the branch moved, before the
    // work tree follows, to a file chapter 03's replay changes: git's
    // up-to-date check refuses, and recut moves the branch back.
    let fixture = course();
    edit_chapter_02(&fixture);
    let old_head = fixture.head();
    let lib = fixture.root().join("course/src/lib.rs");
    hook_once(
        &fixture,
        "committed",
        &format!("echo '// saved while recut ran' >> '{}'", lib.display()),
    );
    let mut expected = learner_work_tree(&fixture);
    expected.insert(
        "course/src/lib.rs".into(),
        b"pub mod stream;\n// saved while recut ran\n".to_vec(),
    );

    let run = recut(&fixture, &["02", "--no-verify"]);

    run.fails_with(2, &["course/src/lib.rs", "moved", "back", STAGED]);
    one_line_saying(&run, STAGED);
    assert_eq!(fixture.head(), old_head);
    assert_eq!(learner_work_tree(&fixture), expected, "the edit is kept");

    // Saved to a file the re-cut does not change: git keeps it, uncommitted.
    let fixture = course();
    let stream = fixture.root().join("course/src/stream.rs");
    hook_once(
        &fixture,
        "committed",
        &format!("echo '// saved while recut ran' >> '{}'", stream.display()),
    );
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");

    let run = recut(&fixture, &["03", "--no-verify"]);

    run.success()
        .prints(&["changed while recut ran", "course/src/stream.rs", AT_NEW]);
    assert_eq!(
        fs::read_to_string(&stream).unwrap(),
        "// chapter 02\n// saved while recut ran\n"
    );
    assert_eq!(
        fixture.learner_at("HEAD")["course/src/stream.rs"].1,
        b"// chapter 02\n"
    );
}

/// An object store recut may not write (`chattr +i` as root: git says
/// "Operation not permitted"; read-only folders otherwise: "insufficient
/// permission") is the machine's failure: exit 3, and nothing changed.
#[test]
fn an_object_store_it_may_not_write_is_the_machines_failure() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let old_head = fixture.head();
    let folders: Vec<PathBuf> = walkdir::WalkDir::new(fixture.repo.path().join("objects"))
        .into_iter()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().is_dir())
        .map(|entry| entry.into_path())
        .collect();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let lock = |locked: bool| {
        for folder in &folders {
            if root {
                let flag = if locked { "+i" } else { "-i" };
                let done = Command::new("chattr").arg(flag).arg(folder).status();
                assert!(
                    done.unwrap().success(),
                    "this test needs `chattr +i` as root"
                );
            } else {
                let mode = if locked { 0o555 } else { 0o755 };
                fs::set_permissions(folder, fs::Permissions::from_mode(mode)).unwrap();
            }
        }
    };
    lock(true);
    let run = recut(&fixture, &["03", "--no-verify"]);
    lock(false);

    run.fails_with(3, &[]);
    one_line_saying(&run, AS_THEY_WERE);
    assert_eq!(fixture.head(), old_head);
}

#[test]
fn a_branch_that_cannot_move_commits_nothing() {
    let fixture = course();
    edit_chapter_02(&fixture);
    let old_head = fixture.head();
    let work_tree = fixture.work_tree();
    hook_once(&fixture, "prepared", "echo 'hook: no' >&2; exit 1");

    let run = recut(&fixture, &["02", "--no-verify"]);

    run.fails_with(2, &["update-ref", "did not move", STAGED]);
    one_line_saying(&run, STAGED);
    assert_eq!(fixture.head(), old_head);
    assert_eq!(fixture.work_tree(), work_tree);
}

#[test]
fn a_signal_after_the_branch_moved_finishes_the_re_cut() {
    let fixture = course();
    edit_chapter_02(&fixture);
    let old_head = fixture.head();
    // The hook's parent is `git update-ref`, whose parent is recut.
    hook_once(
        &fixture,
        "committed",
        "kill -TERM \"$(cut -d' ' -f4 /proc/$PPID/stat)\"",
    );
    let mut recut = command(&fixture, &["recut", "02", "--no-verify"]);
    // SAFETY: signal(2) only, between fork and exec: the child starts
    // with the default disposition even when this test run ignores it.
    unsafe {
        recut.pre_exec(|| {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }

    let run = run(recut);

    assert_eq!(run.code, 143, "{}", run.stderr);
    one_line_saying(&run, AT_NEW);
    assert_eq!(fixture.rev("HEAD~3"), old_head);
    all_at_head(&fixture);
}

#[test]
fn a_write_that_fails_for_lack_of_space_loses_nothing() {
    // Chapter 03 brings a 2 MB file; git may write files of 1 MB.
    let big = "0123456789abcdef\n".repeat(2 << 20 >> 4);
    let fixture = course_with(&[("course/data/big.txt".to_string(), big)]);
    edit_chapter_02(&fixture);
    let old_head = fixture.head();
    let before = learner_work_tree(&fixture);
    let tooling_before: BTreeMap<_, _> = fixture
        .work_tree()
        .into_iter()
        .filter(|(path, _)| common::is_tooling(path))
        .collect();

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

    run.fails_with(3, &["unable to write file course/data/big.txt"]);
    one_line_saying(&run, "the branch has the re-cut commits");
    assert_eq!(fixture.rev("HEAD~3"), old_head);
    // Every learner file is still in the work tree, or in the new chapter 02.
    let cut = fixture.learner_at("HEAD~1");
    let now = learner_work_tree(&fixture);
    for (path, content) in before {
        let kept = now.get(&path) == Some(&content);
        assert!(
            kept || cut.get(&path).map(|blob| &blob.1) == Some(&content),
            "{path}"
        );
    }
    let tooling_after: BTreeMap<_, _> = fixture
        .work_tree()
        .into_iter()
        .filter(|(path, _)| common::is_tooling(path))
        .collect();
    assert_eq!(tooling_after, tooling_before);
}

#[test]
fn an_ignored_symlink_on_the_way_is_never_written_through() {
    let fixture = course_with(&[("course/gen/f.rs".to_string(), "// gen\n".to_string())]);
    edit_chapter_02(&fixture);
    let outside = tempfile::tempdir().unwrap();
    fixture.write(".gitignore", "/course/gen\n");
    fixture.symlink(outside.path().to_str().unwrap(), "course/gen");

    recut(&fixture, &["02", "--no-verify"]).success();

    assert_eq!(common::snapshot(outside.path()), Vec::<PathBuf>::new());
    let gen_dir = fixture
        .root()
        .join("course/gen")
        .symlink_metadata()
        .unwrap();
    assert!(gen_dir.is_dir(), "a folder now, not the symlink");
    assert_eq!(
        fs::read_to_string(fixture.root().join("course/gen/f.rs")).unwrap(),
        "// gen\n"
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

    let run = recut(&fixture, &["02", "--no-verify"]);

    run.fails_with(1, &["chapter 03's layer does not replay", "course/tests"]);
    assert_eq!(everything(&fixture), before);
}

#[test]
fn an_unborn_branch_or_an_old_git_is_refused() {
    let fixture = course();
    fixture.write("course/src/types.rs", "// chapter 03, second cut\n");
    let branch = fixture.repo.head().unwrap().name().unwrap().to_string();
    fixture.repo.set_head("refs/heads/fresh").unwrap();
    refused(
        &fixture,
        &["recut", "03", "--no-verify"],
        &["`fresh`, which has no commits yet"],
    );
    fixture.repo.set_head(&branch).unwrap();

    let bin = fixture.dir.path().join("old-git");
    fs::create_dir_all(&bin).unwrap();
    fs::write(bin.join("git"), "#!/bin/sh\necho 'git version 2.30.1'\n").unwrap();
    fs::set_permissions(bin.join("git"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let before = everything(&fixture);
    let mut recut = command(&fixture, &["recut", "03", "--no-verify"]);
    recut.env("PATH", path);
    run(recut).fails_with(
        2,
        &[
            "git 2.38 or newer",
            "`git version 2.30.1`",
            "nothing was changed",
        ],
    );
    assert_eq!(everything(&fixture), before);
}

/// A pipe whose reader has gone: `recut … | true`.
fn closed_stdout() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Stdio::from(writer)
}

/// Chapter 01 of `tiny_course`, ready to be re-cut (a doc comment added).
fn tiny_recut(patch: impl FnOnce(&mut serde_json::Value)) -> Fixture {
    let fixture = tiny_course("", ANSWER, patch);
    fixture.commit("Describe chapter 01");
    fixture.set_identity();
    fixture.write(
        "course/src/lib.rs",
        &format!("//! Chapter 01: two small functions.\n\n{ANSWER}"),
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
fn learner_changes_committed_after_the_last_chapter_are_never_dropped() {
    // A fix to chapter 03's test, committed after its checkpoint, is in no
    // chapter's layer: replaying chapter 03 would drop it from HEAD.
    let fixture = course();
    fixture.write("course/tests/message_ir.rs", "// focused 03, fixed\n");
    fixture.commit("Fix chapter 03's test");
    edit_chapter_02(&fixture);
    refused(
        &fixture,
        &["recut", "02", "--no-verify"],
        &["not chapter 03's end state", "Re-cut chapter 03 first"],
    );

    // Re-cut as it says, chapter 03 holds the fix and chapter 02 replays it.
    git(&fixture, &["checkout", "HEAD", "--", "course"]);
    recut(&fixture, &["03", "--no-verify"]).success();
    edit_chapter_02(&fixture);
    recut(&fixture, &["02", "--no-verify"]).success();
    assert_eq!(
        fixture.learner_at("HEAD")["course/tests/message_ir.rs"].1,
        b"// focused 03, fixed\n"
    );
    all_at_head(&fixture);
}

/// An edit of the same size made in the second the index was last written
/// looks clean by its stat data alone; git then compares its content ("racy
/// git"), as long as the index's own time says the edit may be that late.
/// recut's copy of the index keeps that time, so the edit is re-cut however
/// long after it recut runs.
#[test]
fn a_same_size_edit_in_the_index_s_last_second_is_re_cut() {
    use std::os::unix::fs::MetadataExt;
    let edited = "// chapter 03 ANSWER\n";
    let fixture = (0..10)
        .find_map(|_| {
            let fixture = course();
            let before = fs::read_to_string(fixture.root().join("course/src/types.rs")).unwrap();
            assert_eq!(
                before.len(),
                edited.len(),
                "the fixture's types.rs: {before:?}"
            );
            fixture.write("course/src/types.rs", edited);
            let time = |path: &str| fs::metadata(fixture.root().join(path)).unwrap();
            let same_second = time(".git/index").mtime() == time("course/src/types.rs").ctime();
            same_second.then_some(fixture)
        })
        .expect("an edit in the index's second within ten tries");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    recut(&fixture, &["03", "--no-verify"]).success();
    assert_eq!(
        fixture.learner_at("HEAD").get("course/src/types.rs"),
        Some(&(0o100644, edited.as_bytes().to_vec())),
        "the edit is in the new course(03) commit"
    );
}
