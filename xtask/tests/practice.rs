//! `practice`: the parent's tree byte for byte, the focused test, the guide;
//! nothing else, nothing overwritten, nothing written outside the folder.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Fixture, snapshot, xtask_in};
use git2::{ObjectType, Oid};

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn the_folder_holds_the_parent_tree_the_focused_test_and_the_guide() {
    let fixture = Fixture::course();
    let run = fixture.xtask(&["practice", "03", "lab"]);
    run.success();
    let lab = fixture.root().join("lab");

    assert_eq!(
        read(&lab.join("course/src/lib.rs")),
        "pub mod stream;\n",
        "teaching files are the parent's"
    );
    assert!(
        !lab.join("course/src/types.rs").exists(),
        "the answer is not there"
    );
    assert_eq!(
        read(&lab.join("course/tests/message_ir.rs")),
        "// focused 03\n"
    );
    assert_eq!(read(&lab.join("course/src/stream.rs")), "// chapter 02\n");
    assert!(!lab.join(".git").exists());
    assert!(!lab.join("checkpoints").exists());

    let guide = read(&lab.join("LEARNING.md"));
    let target = fixture.rev("HEAD~1").to_string();
    let parent = fixture.rev("HEAD~2").to_string();
    assert!(guide.starts_with("> 第 03 章 · 第 03 章\n"), "{guide}");
    for needle in [
        &target[..7],
        &parent[..7],
        "course/tests/message_ir.rs",
        "# 第 03 章练习",
    ] {
        assert!(
            guide.contains(needle),
            "{needle} missing from the guide:\n{guide}"
        );
    }
    let mut expected: Vec<_> = [
        ".xtask-lab",
        "Cargo.toml",
        "LEARNING.md",
        "course",
        "course/src",
        "course/src/lib.rs",
        "course/src/stream.rs",
        "course/tests",
        "course/tests/message_ir.rs",
        "course/tests/stream.rs",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .collect();
    expected.sort();
    assert_eq!(snapshot(&lab), expected, "nothing else from the target");

    for needle in [
        "cd lab && cargo test -p course",
        "cargo xtask check 03 lab --watch",
        "LEARNING.md",
    ] {
        assert!(
            run.stdout.contains(needle),
            "{needle} missing from:\n{}",
            run.stdout
        );
    }
}

#[test]
fn modes_symlinks_submodules_and_unusual_names_round_trip() {
    let fixture = Fixture::course();
    fixture.write("tools/run.sh", "#!/bin/sh\necho hi\n");
    fixture.make_executable("tools/run.sh");
    fixture.symlink("tools/run.sh", "run-link");
    fixture.symlink("../outside/nowhere", "dangling");
    fixture.write("文档/说明 with space.md", "内容\r\nCRLF stays\r\n");
    let base = fixture.commit("Add odd files");
    // A gitlink (submodule) entry added with the tree builder.
    let base_tree = fixture.repo.find_commit(base).unwrap().tree().unwrap();
    let mut builder = fixture.repo.treebuilder(Some(&base_tree)).unwrap();
    builder
        .insert(
            "vendor-sub",
            Oid::from_str(&"ab".repeat(20)).unwrap(),
            0o160000,
        )
        .unwrap();
    let with_gitlink = builder.write().unwrap();
    fixture.commit_tree("Add a submodule", with_gitlink);
    fixture.write("course/src/stream.rs", "// chapter 04\n");
    fixture.commit("course(04): next chapter");
    fixture.write_manifest("04", &common::manifest("04", "course/src/stream.rs", &[]));

    let run = fixture.xtask(&["practice", "04", "lab"]);
    run.success();
    let lab = fixture.root().join("lab");
    let mode = fs::metadata(lab.join("tools/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "the executable bit survives");
    let plain = fs::metadata(lab.join("Cargo.toml"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(plain & 0o111, 0, "plain files are not executable");
    assert_eq!(
        fs::read_link(lab.join("run-link")).unwrap(),
        Path::new("tools/run.sh")
    );
    assert_eq!(
        fs::read_link(lab.join("dangling")).unwrap(),
        Path::new("../outside/nowhere")
    );
    assert_eq!(
        fs::read(lab.join("文档/说明 with space.md")).unwrap(),
        "内容\r\nCRLF stays\r\n".as_bytes()
    );
    assert!(lab.join("vendor-sub").is_dir());
    assert!(
        fs::read_dir(lab.join("vendor-sub"))
            .unwrap()
            .next()
            .is_none()
    );
    assert!(
        run.stdout.contains("子模块 vendor-sub 没有复制"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_non_utf8_file_name_round_trips() {
    use std::os::unix::ffi::OsStrExt;
    let fixture = Fixture::course();
    let blob = fixture.repo.blob(b"bytes\n").unwrap();
    let head_tree = fixture
        .repo
        .find_commit(fixture.head())
        .unwrap()
        .tree()
        .unwrap();
    let mut builder = fixture.repo.treebuilder(Some(&head_tree)).unwrap();
    builder
        .insert(b"caf\xe9.txt".as_slice(), blob, 0o100644)
        .unwrap();
    let tree = builder.write().unwrap();
    fixture.commit_tree("A Latin-1 name", tree);
    fixture.write("marker", "x\n");
    let tree = fixture
        .repo
        .find_commit(fixture.head())
        .unwrap()
        .tree()
        .unwrap();
    let mut builder = fixture.repo.treebuilder(Some(&tree)).unwrap();
    builder
        .insert("marker", fixture.repo.blob(b"x\n").unwrap(), 0o100644)
        .unwrap();
    let tree = builder.write().unwrap();
    fixture.commit_tree("course(05): after the odd name", tree);
    fixture.write_manifest("05", &common::manifest("05", "marker", &[]));

    fixture.xtask(&["practice", "05", "lab"]).success();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    assert_eq!(
        fs::read(fixture.root().join("lab").join(name)).unwrap(),
        b"bytes\n"
    );
}

/// Builds a raw tree object, which lets a test plant names git itself refuses.
fn raw_tree(fixture: &Fixture, entries: &[(&str, &[u8], Oid)]) -> Oid {
    let mut bytes = Vec::new();
    for (mode, name, oid) in entries {
        bytes.extend_from_slice(mode.as_bytes());
        bytes.push(b' ');
        bytes.extend_from_slice(name);
        bytes.push(0);
        bytes.extend_from_slice(oid.as_bytes());
    }
    fixture
        .repo
        .odb()
        .unwrap()
        .write(ObjectType::Tree, &bytes)
        .unwrap()
}

#[test]
fn crafted_tree_entries_are_refused_and_nothing_escapes() {
    for (name, why) in [
        (b"..".as_slice(), "points outside"),
        (b".git".as_slice(), "`.git`"),
        (b".GIT".as_slice(), "`.git`"),
        (b"a/../../escaped".as_slice(), "`/`"),
        (b".".as_slice(), "points outside"),
    ] {
        let fixture = Fixture::course();
        let payload = fixture.repo.blob(b"planted\n").unwrap();
        let inner = raw_tree(&fixture, &[("100644", b"escaped", payload)]);
        let parent_tree = fixture.repo.find_commit(fixture.head()).unwrap().tree_id();
        // Keep the real entries, then add the crafted one so some files are written first.
        let mut entries: Vec<(String, Vec<u8>, Oid)> = fixture
            .repo
            .find_tree(parent_tree)
            .unwrap()
            .iter()
            .map(|entry| {
                (
                    format!("{:o}", entry.filemode()),
                    entry.name_bytes().to_vec(),
                    entry.id(),
                )
            })
            .collect();
        let (mode, id) = if name.contains(&b'/') {
            ("100644", payload)
        } else {
            ("40000", inner)
        };
        entries.push((mode.to_string(), name.to_vec(), id));
        entries.sort_by(|a, b| a.1.cmp(&b.1));
        let borrowed: Vec<(&str, &[u8], Oid)> = entries
            .iter()
            .map(|(mode, name, oid)| (mode.as_str(), name.as_slice(), *oid))
            .collect();
        let crafted = raw_tree(&fixture, &borrowed);
        fixture.commit_tree("Crafted", crafted);
        let next = fixture.repo.find_commit(fixture.head()).unwrap().tree_id();
        fixture.commit_tree("course(06): on top of the crafted tree", next);
        fixture.write_manifest("06", &common::manifest("06", "Cargo.toml", &[]));

        let outer = fixture.root().parent().unwrap().to_path_buf();
        let before_outer = fs::read_dir(&outer).unwrap().count();
        let work = fixture.root().join("work");
        fs::create_dir(&work).unwrap();
        let run = xtask_in(&work, &["practice", "06", "lab"]);
        run.fails_with(2, &["refusing crafted tree entry", why]);
        assert!(
            snapshot(&work).is_empty(),
            "no lab and no staging folder left: {:?}",
            snapshot(&work)
        );
        assert!(!fixture.root().join("escaped").exists());
        assert!(!fixture.root().join(".git/escaped").exists());
        assert_eq!(
            fs::read_dir(&outer).unwrap().count(),
            before_outer,
            "nothing written beside the repository"
        );
    }
}

#[test]
fn an_existing_folder_with_content_or_a_file_is_never_touched() {
    let fixture = Fixture::course();
    fixture.write("lab/work.rs", "my work\n");
    fixture.write("file-lab", "not a folder\n");
    let before = snapshot(fixture.root());

    fixture
        .xtask(&["practice", "03", "lab"])
        .fails_with(2, &["已经存在，而且不是空的", "什么都没有改动"]);
    fixture
        .xtask(&["practice", "03", "file-lab"])
        .fails_with(2, &["已经存在，而且不是文件夹"]);

    assert_eq!(read(&fixture.root().join("lab/work.rs")), "my work\n");
    assert_eq!(read(&fixture.root().join("file-lab")), "not a folder\n");
    assert_eq!(snapshot(fixture.root()), before);
}

/// An existing empty folder is written into, not replaced: it keeps its
/// inode, so its mode and owner (and a shell sitting in it) stay.
#[test]
fn an_existing_empty_folder_is_used_and_keeps_its_mode_and_inode() {
    use std::os::unix::fs::MetadataExt;
    let fixture = Fixture::course();
    let lab = fixture.root().join("lab");
    fs::create_dir(&lab).unwrap();
    fs::set_permissions(&lab, fs::Permissions::from_mode(0o751)).unwrap();
    let before = fs::metadata(&lab).unwrap();
    fixture.xtask(&["practice", "03", "lab"]).success();
    let after = fs::metadata(&lab).unwrap();
    assert!(lab.join("course/tests/message_ir.rs").is_file());
    assert_eq!(after.ino(), before.ino(), "the same folder");
    assert_eq!(after.mode() & 0o7777, 0o751);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert!(common::staging_folders(fixture.root()).is_empty());
}

/// A new DIR is made as `mkdir` would make it, not private like the
/// staging folder it was built in.
#[test]
fn a_new_folder_gets_the_usual_mode() {
    let fixture = Fixture::course();
    fixture.xtask(&["practice", "03", "lab"]).success();
    let mode = fs::metadata(fixture.root().join("lab"))
        .unwrap()
        .permissions()
        .mode();
    let created = fixture.dir.path().join("mkdir-made");
    fs::create_dir(&created).unwrap();
    let usual = fs::metadata(&created).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, usual & 0o777);
}

/// A course whose chapter 01 has a step with a test file of its own.
fn course_with_a_step_test(patch: impl FnOnce(&mut serde_json::Value)) -> Fixture {
    common::tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", common::ANSWER),
            ("course/tests/wire.rs", "// the wire step's test\n"),
        ],
        |manifest| {
            manifest["steps"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({
                    "id": "1.2", "title": "线上格式", "filter": "", "expectedTests": 1,
                    "testFile": "course/tests/wire.rs",
                    "run": ["cargo", "test", "-p", "course", "--test", "wire"]
                }));
            patch(manifest);
        },
    )
}

#[test]
fn a_step_with_its_own_test_file_brings_it_into_the_lab() {
    let fixture = course_with_a_step_test(|_| {});
    fixture
        .xtask(&["practice", "01", "lab"])
        .success()
        .prints(&["course/tests/focused.rs", "course/tests/wire.rs"]);
    let lab = fixture.root().join("lab");
    assert_eq!(
        read(&lab.join("course/tests/wire.rs")),
        "// the wire step's test\n"
    );
    assert_eq!(read(&lab.join("course/tests/focused.rs")), common::FOCUSED);
    assert_eq!(read(&lab.join("course/src/lib.rs")), "", "no answer");
}

#[test]
fn a_step_test_file_missing_at_the_target_leaves_nothing() {
    let fixture = course_with_a_step_test(|manifest| {
        manifest["steps"][1]["testFile"] = "course/tests/missing.rs".into();
    });
    let before = snapshot(fixture.root());
    fixture
        .xtask(&["practice", "01", "lab"])
        .fails_with(2, &["`course/tests/missing.rs`", "终点提交"]);
    assert_eq!(snapshot(fixture.root()), before);
}

#[test]
fn a_focused_test_missing_at_the_target_leaves_no_folder() {
    let fixture = Fixture::course();
    // The manifest is checked against the target before anything is written.
    fixture.write_manifest(
        "03",
        &common::manifest("03", "course/tests/missing.rs", &[]),
    );
    let before = snapshot(fixture.root());
    fixture
        .xtask(&["practice", "03", "lab"])
        .fails_with(2, &["`course/tests/missing.rs`", "不存在"]);
    assert_eq!(
        snapshot(fixture.root()),
        before,
        "no lab, no staging folder, no exclude entry"
    );
}

#[test]
fn a_missing_guide_is_reported_before_anything_is_written() {
    let fixture = Fixture::course();
    fs::remove_file(fixture.root().join("checkpoints/03/LEARNING.md")).unwrap();
    let before = snapshot(fixture.root());
    fixture
        .xtask(&["practice", "03", "lab"])
        .fails_with(2, &["LEARNING.md"]);
    assert_eq!(snapshot(fixture.root()), before);
}

#[test]
fn a_folder_inside_the_work_tree_is_excluded_from_git() {
    let fixture = Fixture::course();
    fixture.xtask(&["practice", "03", "labs/first"]).success();
    fixture.xtask(&["practice", "02", "labs/second"]).success();
    let exclude = read(&fixture.root().join(".git/info/exclude"));
    assert!(
        exclude.lines().any(|line| line == "/labs/first/"),
        "{exclude}"
    );
    assert!(
        exclude.lines().any(|line| line == "/labs/second/"),
        "{exclude}"
    );
    for path in ["labs/first/Cargo.toml", "labs/second/course/src/lib.rs"] {
        assert!(
            fixture.repo.status_should_ignore(Path::new(path)).unwrap(),
            "{path} is ignored by git"
        );
    }
    assert!(
        !fixture
            .repo
            .status_should_ignore(Path::new("labs/third/x"))
            .unwrap()
    );

    let outside = tempfile::tempdir().unwrap();
    let before = read(&fixture.root().join(".git/info/exclude"));
    let target = outside.path().join("lab");
    fixture
        .xtask(&["practice", "03", target.to_str().unwrap()])
        .success();
    assert_eq!(
        read(&fixture.root().join(".git/info/exclude")),
        before,
        "outside folders are not excluded"
    );
    assert!(target.join("LEARNING.md").is_file());
}

#[test]
fn observe_mode_practises_from_the_target() {
    let fixture = Fixture::course();
    let manifest = common::manifest("03", "course/tests/message_ir.rs", &["course/src/types.rs"])
        .replace("\"id\":", "\"mode\":\"observe\",\"id\":");
    fixture.write_manifest("03", &manifest);
    fixture.xtask(&["practice", "03", "lab"]).success();
    assert_eq!(
        read(&fixture.root().join("lab/course/src/types.rs")),
        "// chapter 03 answer\n"
    );
}

#[test]
fn a_large_tree_is_written_completely_on_two_threads() {
    let fixture = Fixture::course();
    for folder in 0..6 {
        for file in 0..100 {
            fixture.write(
                &format!("big/{folder}/{file}.txt"),
                &format!("{folder}/{file}\n"),
            );
        }
    }
    fixture.make_executable("big/5/99.txt");
    fixture.commit("Many files");
    fixture.write("course/src/lib.rs", "// next\n");
    fixture.commit("course(07): after many files");
    fixture.write_manifest("07", &common::manifest("07", "course/src/lib.rs", &[]));

    let run = fixture.xtask(&["practice", "07", "lab"]);
    run.success();
    let big = fixture.root().join("lab/big");
    let written: usize = (0..6)
        .map(|folder| fs::read_dir(big.join(folder.to_string())).unwrap().count())
        .sum();
    assert_eq!(written, 600);
    for (folder, file) in [(0, 0), (2, 57), (5, 99)] {
        assert_eq!(
            read(&big.join(format!("{folder}/{file}.txt"))),
            format!("{folder}/{file}\n")
        );
    }
    let mode = fs::metadata(big.join("5/99.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
}

#[test]
fn the_course_tutor_protocol_is_handed_out_with_the_guide() {
    let fixture = Fixture::course();
    fixture.write("checkpoints/AGENTS.md", "先预测，再运行。\n");
    fixture.xtask(&["practice", "03", "lab"]).success();
    assert_eq!(
        read(&fixture.root().join("lab/AGENTS.md")),
        "先预测，再运行。\n"
    );

    fs::remove_file(fixture.root().join("checkpoints/AGENTS.md")).unwrap();
    fixture.xtask(&["practice", "03", "lab2"]).success();
    assert!(
        !fixture.root().join("lab2/AGENTS.md").exists(),
        "a course without one hands none out"
    );
}

#[test]
fn lab_files_come_from_the_target_over_the_parents_and_checkpoint_lists_them() {
    let fixture = common::tiny_course_with_lab_files(|_| {});
    let target = fixture.head().to_string()[..7].to_string();
    fixture
        .xtask(&["practice", "01", "lab"])
        .success()
        .prints(&[
            &format!("另有终点 {target} 的文件 Cargo.lock"),
            "course/Cargo.toml",
            "course/examples/demo.rs",
        ]);
    let lab = fixture.root().join("lab");
    let at_target = fixture.files_at("HEAD");
    for file in ["Cargo.lock", "course/Cargo.toml", "course/examples/demo.rs"] {
        assert_eq!(
            fs::read(lab.join(file)).unwrap(),
            at_target[file].1,
            "{file} is the target's, byte for byte"
        );
    }
    assert_eq!(read(&lab.join("course/Cargo.toml")), common::LAB_CARGO_TOML);
    assert_eq!(read(&lab.join("course/src/lib.rs")), "", "no answer");

    let json = fixture.xtask(&["checkpoint", "01", "--json"]).json();
    assert_eq!(
        json["labFiles"],
        serde_json::json!(["Cargo.lock", "course/Cargo.toml", "course/examples/demo.rs"])
    );
    fixture
        .xtask(&["checkpoint", "01"])
        .success()
        .prints(&["练习目录从终点直接拿到的（测试和终点另给的文件）：\n    \
                   A Cargo.lock\n    M course/Cargo.toml\n    A course/examples/demo.rs\n"]);
}

#[test]
fn a_lab_file_missing_at_the_target_is_named_and_leaves_nothing() {
    let fixture = common::tiny_course_with_lab_files(|manifest| {
        manifest["labFiles"][2] = "course/examples/gone.rs".into();
    });
    let before = snapshot(fixture.root());
    fixture
        .xtask(&["practice", "01", "lab"])
        .fails_with(2, &["`course/examples/gone.rs`", "不存在"]);
    assert_eq!(snapshot(fixture.root()), before);
}
