//! `check` trusts a run only when the lab builds the way its base tree
//! does: its `Cargo.toml` files are the base's, and it holds no build
//! configuration the base lacks (`.cargo/`, `build.rs`, a toolchain file).
//! What the learner's machine sets up outside the lab (a rustc wrapper, a
//! cargo home of its own) is theirs and never blocks a verdict.

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

/// A pass-through rustc wrapper (what sccache is to cargo) that leaves a
/// line in `log` each time cargo calls it.
fn pass_through_wrapper(fixture: &Fixture, log: &Path) -> PathBuf {
    let wrapper = fixture.dir.path().join("pass-through.sh");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho called >> '{}'\nexec \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

/// The learner's machine setup is theirs (the threat model): a rustc
/// wrapper in the environment or in cargo's home config never keeps a
/// solved lab from complete, and the wrapper is really used.
#[test]
fn a_rustc_wrapper_from_the_environment_or_cargos_home_never_blocks_complete() {
    let fixture = tiny_course("", ANSWER, |_| {});
    lab(&fixture, ANSWER);
    let log = fixture.dir.path().join("wrapper.log");
    let wrapper = pass_through_wrapper(&fixture, &log);

    let run = common::xtask_with_env(
        fixture.root(),
        &["check", "01", "lab"],
        &[("RUSTC_WRAPPER", wrapper.as_path())],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.prints(&["第 01 章完成"]);
    assert!(log.is_file(), "cargo ran the wrapper from the environment");

    // sccache's usual setup: `build.rustc-wrapper` in cargo's home config.
    // The course has no dependencies, so an empty cargo home serves.
    fs::remove_file(&log).unwrap();
    let home = fixture.dir.path().join("cargo-home");
    fs::create_dir_all(&home).unwrap();
    fs::write(
        home.join("config.toml"),
        format!(
            "[build]\nrustc-wrapper = {:?}\n",
            wrapper.display().to_string()
        ),
    )
    .unwrap();
    let run = common::xtask_with_env(
        fixture.root(),
        &["check", "01", "lab"],
        &[("CARGO_HOME", home.as_path())],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.prints(&["第 01 章完成"]);
    assert!(log.is_file(), "cargo ran the wrapper from its home config");
}
