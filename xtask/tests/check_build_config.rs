//! `check` trusts a run only when the lab builds the way its base tree
//! does: its `Cargo.toml` files are the base's, and it holds no build
//! configuration the base lacks (`.cargo/`, `build.rs`, a toolchain file).
//! And it writes nowhere but the lab: a symlink inside `target/` is refused.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{ANSWER, Fixture, tiny_course};

/// Compiles, but both focused tests fail: red work.
fn broken() -> String {
    ANSWER.replace("a + b", "a - b").replace("x * 2", "x + 2")
}

fn lab(fixture: &Fixture, lib: &str) -> PathBuf {
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    fs::write(lab.join("course/src/lib.rs"), lib).unwrap();
    lab
}

/// The base of chapter 01 (rebuild mode: the parent), abbreviated.
fn base_short(fixture: &Fixture) -> String {
    fixture.rev("HEAD~1").to_string()[..7].to_string()
}

#[test]
fn a_cargo_toml_that_redirects_the_focused_test_is_reported_and_restorable() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, &broken());
    // The focused test stays byte for byte; the manifest points its name at
    // a test that always passes.
    fs::write(
        lab.join("course/tests/fake.rs"),
        "#[test]\nfn adds() {}\n#[test]\nfn doubles() {}\n",
    )
    .unwrap();
    let manifest = lab.join("course/Cargo.toml");
    let redirected = fs::read_to_string(&manifest).unwrap()
        + "\n[[test]]\nname = \"focused\"\npath = \"tests/fake.rs\"\n\n\
           [[test]]\nname = \"real\"\npath = \"tests/focused.rs\"\ntest = false\n";
    fs::write(&manifest, redirected).unwrap();

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(
        run.code, 1,
        "a redirected test is no verdict:\n{}",
        run.stdout
    );
    run.prints(&[
        "✗ course/Cargo.toml",
        &format!("show {}:course/Cargo.toml > ", base_short(&fixture)),
    ]);
    assert!(
        !run.stdout.contains(" ✓"),
        "no step is green:\n{}",
        run.stdout
    );
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["complete"], false);
    let changed = &json["changedBuildConfig"][0];
    assert_eq!(changed["path"], "course/Cargo.toml");
    assert_eq!(changed["change"], "changed");

    common::restore_then_complete(&fixture, &lab, changed["restore"].as_str().unwrap());
}

/// The lab's base is the parent with the target's `labFiles` over it: the
/// target's crate manifest is no change, and a change to it is restored from
/// the target.
#[test]
fn the_targets_lab_files_are_the_labs_base_build_files() {
    let fixture = common::tiny_course_with_lab_files(|_| {});
    let lab = lab(&fixture, ANSWER);
    fixture
        .xtask(&["check", "01", "lab"])
        .success()
        .prints(&["第 01 章完成"]);

    fs::write(lab.join("course/src/lib.rs"), broken()).unwrap();
    fs::write(
        lab.join("course/Cargo.toml"),
        common::LAB_CARGO_TOML.replace("loud", "quiet"),
    )
    .unwrap();
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["complete"], false);
    let changed = &json["changedBuildConfig"];
    assert_eq!(changed.as_array().unwrap().len(), 1, "{changed}");
    assert_eq!(changed[0]["path"], "course/Cargo.toml");
    let target = fixture.head().to_string()[..7].to_string();
    let restore = changed[0]["restore"].as_str().unwrap();
    assert!(
        restore.contains(&format!("show {target}:course/Cargo.toml > ")),
        "{restore}"
    );

    common::restore_then_complete(&fixture, &lab, restore);
    assert_eq!(
        fs::read_to_string(lab.join("course/Cargo.toml")).unwrap(),
        common::LAB_CARGO_TOML
    );
}

#[test]
fn a_cargo_config_whose_runner_fakes_the_report_is_reported_as_added() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, &broken());
    runner_config(&lab, &fake_runner(&fixture));

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "a faked report is no verdict:\n{}", run.stdout);
    run.prints(&["✗ .cargo", "删掉 .cargo"]);
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["complete"], false);
    let added = &json["changedBuildConfig"][0];
    assert_eq!(added["path"], ".cargo");
    assert_eq!(added["change"], "added");
}

#[test]
fn a_build_script_or_package_cargo_config_the_base_lacks_is_reported() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    fs::write(lab.join("course/build.rs"), "fn main() {}\n").unwrap();
    fs::create_dir_all(lab.join("course/.cargo")).unwrap();
    fs::write(lab.join("course/.cargo/config.toml"), "").unwrap();

    let run = fixture.xtask(&["check", "01", "lab", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let json = run.json();
    let paths: Vec<&str> = json["changedBuildConfig"]
        .as_array()
        .unwrap()
        .iter()
        .map(|changed| changed["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["course/.cargo", "course/build.rs"]);
}

#[test]
fn a_symlink_inside_target_is_refused_before_cargo_writes_through_it() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    let outside = fixture.dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(lab.join("target")).unwrap();
    std::os::unix::fs::symlink(&outside, lab.join("target/debug")).unwrap();

    fixture
        .xtask(&["check", "01", "lab"])
        .fails_with(2, &["target/debug", "符号链接"]);
    assert!(
        fs::read_dir(&outside).unwrap().next().is_none(),
        "nothing was written outside the lab"
    );

    // Deeper down too: a dep-info file cargo would overwrite through a link,
    // and a FIFO cargo would wait on.
    fs::remove_file(lab.join("target/debug")).unwrap();
    fs::create_dir_all(lab.join("target/debug/deps")).unwrap();
    let victim = outside.join("victim.d");
    fs::write(&victim, "someone else's\n").unwrap();
    std::os::unix::fs::symlink(&victim, lab.join("target/debug/deps/course-0.d")).unwrap();
    fixture
        .xtask(&["check", "01", "lab"])
        .fails_with(2, &["target/debug/deps/course-0.d"]);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "someone else's\n");
    fs::remove_file(lab.join("target/debug/deps/course-0.d")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        lab.join("target/debug/deps/course-1.d"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    fixture
        .xtask(&["check", "01", "lab"])
        .fails_with(2, &["target/debug/deps/course-1.d"]);
}

#[test]
fn a_fifo_among_the_labs_files_is_refused_not_waited_on() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    for file in [
        "course/src/lib.rs",
        "course/Cargo.toml",
        "course/tests/focused.rs",
    ] {
        let saved = fs::read(lab.join(file)).unwrap();
        fs::remove_file(lab.join(file)).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            lab.join(file),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let started = std::time::Instant::now();
        fixture
            .xtask(&["check", "01", "lab", "--timeout", "60"])
            .fails_with(2, &[file, "不是普通文件"]);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{file}"
        );
        fs::remove_file(lab.join(file)).unwrap();
        fs::write(lab.join(file), saved).unwrap();
    }
}

#[test]
fn failing_tests_that_ran_are_not_called_tests_that_never_ran() {
    let fixture = tiny_course("", ANSWER, |_| {});
    lab(&fixture, &broken());
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    run.prints(&["第一个失败的测试"]);
    assert!(
        !run.stdout.contains("没有一个聚焦测试真正运行"),
        "two tests ran and failed:\n{}",
        run.stdout
    );
}

#[test]
fn a_step_id_with_trailing_spaces_is_shown_quoted() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        manifest["steps"][0]["id"] = "2.1  ".into();
    });
    lab(&fixture, ANSWER);
    let run = fixture.xtask(&["check", "01", "lab"]);
    run.prints(&["  \"2.1  \" "]);
}

/// A test runner that prints a passing report for both focused tests,
/// whatever the code does.
fn fake_runner(fixture: &Fixture) -> PathBuf {
    let runner = fixture.dir.path().join("fake-runner.sh");
    fs::write(
        &runner,
        "#!/bin/sh\nprintf 'running 2 tests\\ntest adds ... ok\\ntest doubles ... ok\\n\\n\
         test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\\n\\n'\n",
    )
    .unwrap();
    fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).unwrap();
    runner
}

/// A `.cargo/config.toml` in `folder` that makes `runner` run every test
/// binary, on any target.
fn runner_config(folder: &Path, runner: &Path) {
    fs::create_dir_all(folder.join(".cargo")).unwrap();
    fs::write(
        folder.join(".cargo/config.toml"),
        format!(
            "[target.'cfg(all())']\nrunner = {:?}\n",
            runner.display().to_string()
        ),
    )
    .unwrap();
}

#[test]
fn a_runner_set_in_the_environment_never_answers_for_the_tests() {
    let fixture = tiny_course("", ANSWER, |_| {});
    lab(&fixture, &broken());
    let runner = fake_runner(&fixture);
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let variable = format!(
        "CARGO_TARGET_{}_RUNNER",
        triple.to_uppercase().replace('-', "_")
    );
    let run = common::xtask_with_env(
        fixture.root(),
        &["check", "01", "lab"],
        &[(variable.as_str(), runner.as_path())],
    );
    assert_eq!(
        run.code, 1,
        "the runner's report is no verdict:\n{}",
        run.stdout
    );
}

#[test]
fn a_runner_in_a_cargo_config_above_the_lab_makes_the_run_untrustworthy() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.xtask(&["practice", "01", "sub/lab"]).success();
    fs::write(fixture.root().join("sub/lab/course/src/lib.rs"), broken()).unwrap();
    runner_config(&fixture.root().join("sub"), &fake_runner(&fixture));
    let run = fixture.xtask(&["check", "01", "sub/lab"]);
    assert_eq!(run.code, 1, "a faked report is no verdict:\n{}", run.stdout);
    run.prints(&["sub/.cargo/config.toml", "练习目录之外"]);
    let json = fixture.xtask(&["check", "01", "sub/lab", "--json"]).json();
    assert_eq!(json["changedBuildConfig"][0]["change"], "outside");
}
