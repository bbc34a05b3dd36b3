//! `recut NN`: re-cutting chapters by appending commits, on fixture courses.
//! Every run hides git's global and system configuration, so the author's
//! identity is the fixture's own (`set_identity`) and nothing of the caller's
//! environment counts.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{ANSWER, Blob, Fixture, Run, manifest, tiny_course};
use git2::Oid;

const RESTORE_03: &str = "Restore chapter 03's starting point, to re-cut it";
const RESTORE_02: &str = "Restore chapter 02's starting point, to re-cut it";
const COURSE_02: &str = "course(02): the stream";
const COURSE_03: &str = "course(03): save one complete tool round-trip";

/// Chapters 02 and 03 cut, the chapter folders committed, an identity set.
fn course() -> Fixture {
    let fixture = Fixture::course();
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

/// Everything a refused or failed re-cut must leave as it was.
#[derive(Debug, PartialEq)]
struct Everything {
    head_file: Vec<u8>,
    refs: Vec<(String, Option<Oid>)>,
    index_file: Vec<u8>,
    work_tree: BTreeMap<String, (u32, Vec<u8>)>,
}

fn everything(fixture: &Fixture) -> Everything {
    let git = fixture.repo.path();
    let mut refs: Vec<(String, Option<Oid>)> = fixture
        .repo
        .references()
        .unwrap()
        .map(|reference| {
            let reference = reference.unwrap();
            (reference.name().unwrap().to_string(), reference.target())
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

/// Asserts that `run` was refused with exit 2 and left everything as it was.
fn refused(fixture: &Fixture, args: &[&str], needles: &[&str]) {
    let before = everything(fixture);
    fixture.xtask_own_config(args).fails_with(2, needles);
    assert_eq!(
        everything(fixture),
        before,
        "a refused re-cut changes nothing"
    );
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
    refused(&fixture, &["recut", "03"], &["a merge is in progress"]);
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
