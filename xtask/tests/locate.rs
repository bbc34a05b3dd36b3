//! `checkpoint` and `list`: locating chapters, and every way that can fail.

mod common;

use std::fs;

use common::{Fixture, manifest, xtask_in};

#[test]
fn checkpoint_prints_parent_target_files_and_commands() {
    let fixture = Fixture::course();
    let run = fixture.xtask(&["checkpoint", "03"]);
    run.success();
    let json = fixture.xtask(&["checkpoint", "3", "--json"]).json();
    let target = fixture.rev("HEAD~1").to_string();
    let parent = fixture.rev("HEAD~2").to_string();
    assert_eq!(json["target"]["id"], target);
    assert_eq!(json["parent"]["id"], parent);
    assert_eq!(json["target"]["short"], &target[..7]);
    assert_eq!(
        json["target"]["subject"],
        "course(03): save one complete tool round-trip"
    );
    assert_eq!(json["focusedTest"], "course/tests/message_ir.rs");
    let files: Vec<String> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            format!(
                "{} {}",
                file["status"].as_str().unwrap(),
                file["path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            "M course/src/lib.rs",
            "A course/src/types.rs",
            "A course/tests/message_ir.rs"
        ]
    );
    assert_eq!(
        json["commands"]["practice"],
        "cargo xtask practice 03 ./lab"
    );
    assert_eq!(
        json["commands"]["diff"],
        format!(
            "git diff {} {} -- course/src/types.rs course/src/lib.rs",
            &parent[..7],
            &target[..7]
        )
    );

    for needle in [
        &target[..7],
        &parent[..7],
        &target,
        "course/src/types.rs",
        "cargo xtask practice 03",
        "git diff",
    ] {
        assert!(
            run.stdout.contains(needle),
            "{needle} missing from:\n{}",
            run.stdout
        );
    }
}

#[test]
fn the_newest_re_cut_wins() {
    let fixture = Fixture::course_recut_03("pub mod stream;\n");
    let first_cut = fixture.rev("HEAD~3");
    let second_cut = fixture.head();
    fixture.write("README.md", "later work\n");
    fixture.commit("Later work");

    let json = fixture.xtask(&["checkpoint", "03", "--json"]).json();
    assert_eq!(json["target"]["id"], second_cut.to_string());
    assert_ne!(first_cut, second_cut);
}

#[test]
fn the_parent_is_the_first_parent_of_a_merge() {
    let fixture = Fixture::course();
    let mainline = fixture.head();
    fixture.write("side.txt", "side\n");
    let side = fixture.commit("Side work");
    fixture.move_head(mainline);
    let tree = fixture.repo.find_commit(side).unwrap().tree_id();
    let merge = fixture.commit_with_parents("course(04): merge a chapter", tree, &[mainline, side]);
    fixture.write_manifest("04", &manifest("04", "side.txt", &[]));

    let json = fixture.xtask(&["checkpoint", "04", "--json"]).json();
    assert_eq!(json["target"]["id"], merge.to_string());
    // The first parent holds course(03)'s learner world, so the start is
    // named by course(03); the side branch is no part of it.
    let course_03 = fixture
        .repo
        .find_commit(mainline)
        .unwrap()
        .parent_id(0)
        .unwrap();
    assert_eq!(json["parent"]["id"], course_03.to_string());
}

#[test]
fn it_works_from_a_subfolder() {
    let fixture = Fixture::course();
    let run = xtask_in(
        &fixture.root().join("course/src"),
        &["checkpoint", "03", "--json"],
    );
    run.success();
    assert_eq!(run.json()["id"], "03");
}

/// `checkpoint` and `practice` print the chapter's `run` as a command a
/// shell splits back into the manifest's words: it can be pasted.
#[test]
fn the_run_command_is_printed_so_that_it_can_be_pasted() {
    let fixture = Fixture::course();
    let teaching = ["course/src/types.rs", "course/src/lib.rs"];
    let mut json: serde_json::Value =
        serde_json::from_str(&manifest("03", "course/tests/message_ir.rs", &teaching)).unwrap();
    let words = ["cargo", "test", "-p", "course", "--", "sum small", "it's"];
    json["run"] = words.into();
    fixture.write_manifest("03", &json.to_string());

    let printed = fixture.xtask(&["checkpoint", "03", "--json"]).json()["commands"]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let split = std::process::Command::new("sh")
        .args([
            "-c",
            &format!("for word in {printed}; do echo \"$word\"; done"),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&split.stdout)
            .lines()
            .collect::<Vec<_>>(),
        words
    );
    fixture
        .xtask(&["checkpoint", "03"])
        .success()
        .prints(&[&printed]);
    fixture
        .xtask(&["practice", "03", "lab"])
        .success()
        .prints(&[&printed]);
}

/// A tooling commit whose subject happens to start with `course(03):`
/// becomes chapter 03's target, and its parent (the real cut) holds the
/// answer: the learner commands warn in Chinese, verify refuses in English.
#[test]
fn a_target_whose_layer_changes_no_teaching_file_is_warned_about() {
    let fixture = Fixture::course();
    let quiet = fixture.xtask(&["checkpoint", "03"]);
    assert!(quiet.success().stderr.is_empty(), "{}", quiet.stderr);
    fixture.write("README.md", "a typo, fixed\n");
    fixture.commit("course(03): fix a typo in the README");
    let short = &fixture.head().to_string()[..7];

    for args in [["checkpoint", "03", "--json"], ["practice", "03", "lab"]] {
        let run = fixture.xtask(&args);
        let warned =
            run.stderr.contains("没有改动本章的任何教学文件") && run.stderr.contains(short);
        assert!(warned, "{args:?}: {}", run.success().stderr);
    }
    let verify = fixture.xtask(&["verify", "03"]);
    verify.fails_with(2, &["changes none of the chapter's teaching files", short]);
}

#[test]
fn an_unknown_chapter_lists_the_ones_that_exist() {
    let fixture = Fixture::course();
    fixture
        .xtask(&["checkpoint", "07"])
        .fails_with(2, &["没有第 07 章", "02、03"]);
    fixture
        .xtask(&["practice", "07", "lab"])
        .fails_with(2, &["没有第 07 章", "02、03"]);
    assert!(!fixture.root().join("lab").exists());
    // An author command says it in English.
    fixture
        .xtask(&["verify", "07"])
        .fails_with(2, &["error: unknown chapter 07", "02, 03"]);
}

#[test]
fn a_bad_chapter_id_is_bad_input() {
    let fixture = Fixture::course();
    fixture
        .xtask(&["checkpoint", "three"])
        .fails_with(2, &["`three`", "章号是一到两位数字"]);
}

/// The learner is told which file and where, in Chinese; `list` (an author
/// command) gives serde's detail.
#[test]
fn a_malformed_manifest_names_file_line_and_column() {
    let fixture = Fixture::course();
    fixture.write(
        "checkpoints/03/checkpoint.json",
        "{\n  \"id\": \"03\",\n  \"title\": 3\n}\n",
    );
    fixture.xtask(&["checkpoint", "03"]).fails_with(
        2,
        &[
            "checkpoints/03/checkpoint.json 第 3 行第 ",
            "cargo xtask list",
        ],
    );
    fixture
        .xtask(&["list"])
        .success()
        .prints(&["checkpoints/03/checkpoint.json:3:", "invalid type"]);
    fixture.write(
        "checkpoints/03/checkpoint.json",
        "{\"id\": \"03\",\n \"title\": \"t\"\n",
    );
    fixture
        .xtask(&["list"])
        .success()
        .prints(&["checkpoints/03/checkpoint.json:3:0", "EOF"]);
    fixture.write(
        "checkpoints/03/checkpoint.json",
        "{\"id\": \"03\", \"title\": \"t\"}",
    );
    fixture
        .xtask(&["list"])
        .success()
        .prints(&["checkpoint.json:1:", "missing field `focusedTest`"]);
}

#[test]
fn a_manifest_path_leaving_the_repository_is_refused() {
    let fixture = Fixture::course();
    for path in ["../outside.rs", "/etc/passwd", "course/../../x"] {
        fixture.write_manifest("03", &manifest("03", path, &[]));
        fixture
            .xtask(&["checkpoint", "03"])
            .fails_with(2, &["课程仓库的 checkpoints/03/checkpoint.json 第 1 行"]);
        fixture
            .xtask(&["list"])
            .success()
            .prints(&["leaves the repository"]);
        fixture.write_manifest("03", &manifest("03", "course/tests/message_ir.rs", &[path]));
        fixture
            .xtask(&["practice", "03", "lab"])
            .fails_with(2, &["课程仓库的 checkpoints/03/checkpoint.json 第 1 行"]);
        assert!(!fixture.root().join("lab").exists());
    }
}

#[test]
fn a_manifest_whose_id_disagrees_with_its_folder_is_refused() {
    let fixture = Fixture::course();
    fixture.write(
        "checkpoints/03/checkpoint.json",
        &manifest("02", "course/tests/message_ir.rs", &[]),
    );
    fixture
        .xtask(&["checkpoint", "03"])
        .fails_with(2, &["checkpoints/03/checkpoint.json"]);
    fixture
        .xtask(&["list"])
        .success()
        .prints(&["\"02\"", "checkpoints/03"]);
}

#[test]
fn a_missing_checkpoint_commit_says_how_to_cut_it() {
    let fixture = Fixture::course();
    fixture.write_manifest("05", &manifest("05", "x.rs", &[]));
    fixture
        .xtask(&["checkpoint", "05"])
        .fails_with(2, &["`course(05):`", "找不到第 05 章的提交"]);
}

#[test]
fn a_shallow_clone_explains_the_missing_parent() {
    let fixture = Fixture::course();
    let target = fixture.rev("HEAD~1");
    fixture.make_shallow(&[target]);
    fixture
        .xtask(&["checkpoint", "03"])
        .fails_with(2, &["浅克隆里没有父提交", "git fetch --unshallow"]);
    fixture
        .xtask(&["list"])
        .success()
        .prints(&["has no parent in this shallow clone"]);
}

#[test]
fn a_shallow_clone_explains_the_missing_checkpoint() {
    let fixture = Fixture::course();
    fixture.make_shallow(&[fixture.head()]);
    fixture.xtask(&["checkpoint", "03"]).fails_with(
        2,
        &[
            "找不到第 03 章的提交",
            "`course(03):`",
            "浅克隆",
            "git fetch --unshallow",
        ],
    );
    let list = fixture.xtask(&["list", "--json"]);
    list.success();
    assert_eq!(list.json()[1]["located"], false);
}

#[test]
fn a_root_commit_cannot_be_a_target() {
    let fixture = Fixture::empty();
    fixture.write("a.rs", "x\n");
    fixture.commit("course(01): everything at once");
    fixture.write_manifest("01", &manifest("01", "a.rs", &[]));
    fixture
        .xtask(&["checkpoint", "01"])
        .fails_with(2, &["是仓库的第一个提交", "告诉课程作者"]);
    fixture.xtask(&["list"]).success().prints(&["root commit"]);
}

/// HEAD on a branch that does not hold chapter 02 (made from the skeleton):
/// the commit is not reachable from HEAD, and the learner is told to switch.
#[test]
fn a_checkpoint_beyond_heads_history_is_said_to_be_unreachable() {
    let fixture = Fixture::course();
    let skeleton = fixture.rev("HEAD~3");
    let tree = fixture.repo.find_commit(fixture.head()).unwrap().tree_id();
    let aside = fixture.commit_with_parents("Work on a side branch", tree, &[skeleton]);
    fixture.move_head(aside);
    let run = fixture.xtask(&["checkpoint", "02"]);
    run.fails_with(2, &["从 HEAD 出发找不到第 02 章的提交", "git switch main"]);
    assert!(!run.stderr.contains("还没有做好"), "{}", run.stderr);
}

#[test]
fn an_empty_repository_is_bad_input() {
    let fixture = Fixture::empty();
    fixture
        .xtask(&["checkpoint", "03"])
        .fails_with(2, &["还没有任何提交"]);
    fixture.xtask(&["list"]).fails_with(2, &["no commits yet"]);
}

#[test]
fn outside_a_repository_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let run = xtask_in(dir.path(), &["checkpoint", "03"]);
    run.fails_with(2, &["不在 git 仓库里"]);
    xtask_in(dir.path(), &["practice", "03", "lab"]).fails_with(2, &["不在 git 仓库里"]);
    assert!(
        common::snapshot(dir.path()).is_empty(),
        "nothing was written"
    );
}

#[test]
fn list_shows_every_chapter_and_parses_as_json() {
    let fixture = Fixture::course();
    fixture.write("checkpoints/06/checkpoint.json", "not json");
    let run = fixture.xtask(&["list"]);
    run.success();
    assert!(run.stdout.contains("02  第 02 章"), "{}", run.stdout);
    assert!(
        run.stdout.contains("06  (manifest does not load)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("checkpoints/06/checkpoint.json:1:2: malformed manifest"),
        "the reason is shown: {}",
        run.stdout
    );
    let rows = fixture.xtask(&["list", "--json"]).json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["id"], "02");
    assert_eq!(rows[0]["located"], true);
    assert_eq!(
        rows[1]["target"]["subject"],
        "course(03): save one complete tool round-trip"
    );
    assert_eq!(rows[2]["located"], false);
    assert!(
        rows[2]["problem"]
            .as_str()
            .unwrap()
            .contains("checkpoint.json:1:")
    );
}

#[test]
fn a_repository_owned_by_another_user_says_how_to_trust_it() {
    let fixture = Fixture::course();
    // Only root can hand a folder to another user; elsewhere there is nothing to test.
    if std::os::unix::fs::chown(fixture.root(), Some(54_321), None).is_err() {
        return;
    }
    // An empty home, so no global `safe.directory` of this machine interferes.
    let home = tempfile::tempdir().unwrap();
    let run = common::xtask_with_env(fixture.root(), &["list"], &[("HOME", home.path())]);
    std::os::unix::fs::chown(fixture.root(), Some(0), None).unwrap();
    run.fails_with(2, &["owned by another user", "safe.directory"]);
}

#[test]
fn bad_flags_are_refused_before_any_work() {
    let fixture = Fixture::course();
    let bench = fixture.xtask(&["bench", "--only", "nope"]);
    bench.fails_with(2, &["invalid value 'nope'", "stream, replay"]);
    assert!(
        !bench.stderr.contains("release"),
        "nothing was built: {}",
        bench.stderr
    );
    fixture
        .xtask(&["verify", "--timeout", "0"])
        .fails_with(2, &["invalid value '0'"]);
}

#[test]
fn a_manifest_saved_with_a_byte_order_mark_loads() {
    let fixture = Fixture::course();
    let path = fixture.root().join("checkpoints/03/checkpoint.json");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, format!("\u{feff}{text}")).unwrap();
    fixture.xtask(&["checkpoint", "03"]).success();
}

#[test]
fn two_folders_for_one_chapter_are_bad_input() {
    let fixture = Fixture::course();
    fixture.write_manifest(
        "3",
        &common::manifest("03", "course/tests/message_ir.rs", &[]),
    );
    fixture
        .xtask(&["list"])
        .fails_with(2, &["are both chapter 03", "keep one folder per chapter"]);
}

/// What `git clone --separate-git-dir` makes: the git folder elsewhere and a
/// `.git` file in the work tree pointing at it. libgit2 names the git
/// folder's parent as the work tree; the work tree is where the command
/// runs, from its root or any subfolder.
#[test]
fn a_repository_with_a_separate_git_dir_finds_its_work_tree() {
    for gitdir in ["elsewhere/gitdir", "gitdir"] {
        let fixture = Fixture::course();
        let gitdir = fixture.dir.path().join(gitdir);
        fs::create_dir_all(gitdir.parent().unwrap()).unwrap();
        fs::rename(fixture.root().join(".git"), &gitdir).unwrap();
        fs::write(
            fixture.root().join(".git"),
            format!("gitdir: {}\n", gitdir.display()),
        )
        .unwrap();
        let subfolder = fixture.root().join("course/src");
        for dir in [fixture.root(), subfolder.as_path()] {
            xtask_in(dir, &["list"])
                .success()
                .prints(&["02  第 02 章", "03  第 03 章"]);
        }
        xtask_in(&subfolder, &["practice", "03", "lab"]).success();
        assert!(subfolder.join("lab/course/tests/message_ir.rs").is_file());
    }
}

#[test]
fn bench_has_no_partial_rows() {
    let fixture = Fixture::course();
    fixture
        .xtask(&["bench", "--only", "partial"])
        .fails_with(2, &["invalid value 'partial'"]);
}

/// A course benchmark that cannot run fails `bench` (exit 1), naming it; it
/// is not skipped. A stand-in cargo runs the debug build's release re-run as
/// this same binary (which then benches in place, and must not re-run
/// again) and hands every other call to the real cargo.
#[test]
fn a_course_benchmark_that_cannot_run_fails_bench() {
    use std::os::unix::fs::PermissionsExt;
    let fixture = common::tiny_course("", common::ANSWER, |_| {});
    fixture.write(
        "course/examples/bench_stream.rs",
        "fn main() {\n    panic!(\"the benchmark broke\");\n}\n",
    );
    let real = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let cargo = fixture.dir.path().join("cargo");
    let xtask = env!("CARGO_BIN_EXE_xtask");
    fs::write(
        &cargo,
        format!(
            "#!/bin/sh\nif [ \"$4\" = --manifest-path ]; then\n  \
             [ -n \"$RERUN\" ] && echo 'the release re-run re-ran itself' >&2 && exit 1\n  \
             shift 6; RERUN=1 exec '{xtask}' \"$@\"\nfi\nexec '{real}' \"$@\"\n"
        ),
    )
    .unwrap();
    fs::set_permissions(&cargo, fs::Permissions::from_mode(0o755)).unwrap();
    common::xtask_with_env(
        fixture.root(),
        &["bench", "--only", "stream", "--quick"],
        &[("CARGO", &cargo)],
    )
    .fails_with(1, &["bench: stream failed", "the benchmark broke"]);
}

/// A debug build re-runs `bench` from a release build with its own
/// arguments, as they were typed (a stand-in `cargo` records them).
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "a release build of xtask benches in place, without a re-run"
)]
fn bench_forwards_its_own_arguments_to_the_release_run() {
    use std::os::unix::fs::PermissionsExt;
    let fixture = Fixture::course();
    let record = fixture.dir.path().join("args");
    let cargo = fixture.dir.path().join("cargo");
    fs::write(
        &cargo,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}'\n",
            record.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&cargo, fs::Permissions::from_mode(0o755)).unwrap();
    common::xtask_with_env(
        fixture.root(),
        &["bench", "--only", "json,stream", "--quick", "--json"],
        &[("CARGO", &cargo)],
    )
    .success();
    let forwarded = fs::read_to_string(&record).unwrap();
    assert_eq!(
        forwarded.lines().collect::<Vec<_>>(),
        [
            "run",
            "--quiet",
            "--release",
            "--manifest-path",
            "xtask/Cargo.toml",
            "--",
            "bench",
            "--only",
            "json,stream",
            "--quick",
            "--json"
        ]
    );
}

#[test]
fn checkpoint_asks_for_a_prediction_before_the_diff_and_names_its_start() {
    let fixture = Fixture::course_recut_03("pub mod stream;\n");
    let run = fixture.xtask(&["checkpoint", "03"]);
    run.success();
    run.prints(&["起点：第 02 章的终点，提交 ", "终点：第 03 章的终点"]);
    assert!(
        !run.stdout.contains("Restore") && !run.stdout.contains("round-trip"),
        "no commit subject: {}",
        run.stdout
    );
    let predict = run
        .stdout
        .find("先预测")
        .expect("a prediction is asked for");
    let diff = run
        .stdout
        .find("git diff")
        .expect("the diff command is shown");
    assert!(
        predict < diff,
        "predict first, then the diff: {}",
        run.stdout
    );
}

/// After a re-cut, chapter 03 starts at recut's restore commit, which holds
/// course(02)'s learner world: every learner-facing report names that
/// start course(02), the chapter 02 end the learner already knows; a
/// restore whose learner code differs is named beside course(02).
#[test]
fn a_chapter_start_has_one_name_after_a_re_cut() {
    let fixture = Fixture::course_recut_03("pub mod stream;\n");
    let course_02 = short(&fixture, "HEAD~4");
    let restore = short(&fixture, "HEAD~1");
    let checkpoint = fixture.xtask(&["checkpoint", "03"]);
    checkpoint
        .success()
        .prints(&[&format!("起点：第 02 章的终点，提交 {course_02}")]);
    assert!(
        !checkpoint.stdout.contains(&restore),
        "{}",
        checkpoint.stdout
    );
    let json = fixture.xtask(&["checkpoint", "03", "--json"]).json();
    assert_eq!(json["parent"]["short"], course_02.as_str());
    let practice = fixture.xtask(&["practice", "03", "lab"]);
    practice.success().prints(&[&course_02]);
    assert!(!practice.stdout.contains(&restore), "{}", practice.stdout);
    let guide = fs::read_to_string(fixture.root().join("lab/LEARNING.md")).unwrap();
    assert!(
        guide.contains(&format!("第 02 章的终点，提交 `{course_02}`")),
        "{guide}"
    );
    assert!(!guide.contains(&restore), "{guide}");

    let differs = Fixture::course_recut_03("pub mod stream;\n// restored by hand\n");
    let course_02 = short(&differs, "HEAD~4");
    let restore = short(&differs, "HEAD~1");
    differs
        .xtask(&["checkpoint", "03"])
        .success()
        .prints(&[&restore, &course_02, "不一样"]);
}

fn short(fixture: &Fixture, spec: &str) -> String {
    fixture.rev(spec).to_string()[..7].to_string()
}

/// `checkpoint` tells the layer's files apart: those the learner writes,
/// those the lab gets from the target, those that stay in the repository.
#[test]
fn checkpoint_says_which_changed_files_reach_the_lab() {
    let contract = "#[test]\nfn contract() {}\n";
    let fixture = common::tiny_course_with(
        &[("course/src/lib.rs", "")],
        &[
            ("course/src/lib.rs", common::ANSWER),
            ("course/tests/contract.rs", contract),
        ],
        |_| {},
    );
    fixture.xtask(&["checkpoint", "01"]).success().prints(&[
        "本章改动 3 个文件：\n  你要写的（教学文件）：\n    M course/src/lib.rs\n  \
         练习目录从终点直接拿到的（测试和终点另给的文件）：\n    A course/tests/focused.rs\n  \
         只留在课程仓库里的（仓库自己的测试等，练习目录里没有）：\n    A course/tests/contract.rs\n",
    ]);
    let json = fixture.xtask(&["checkpoint", "01", "--json"]).json();
    let roles: Vec<(&str, &str)> = (json["files"].as_array().unwrap().iter())
        .map(|file| {
            (
                file["path"].as_str().unwrap(),
                file["role"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("course/src/lib.rs", "teaching"),
            ("course/tests/contract.rs", "repository"),
            ("course/tests/focused.rs", "lab")
        ]
    );
}
