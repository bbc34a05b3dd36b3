//! `check` is never green on wrong work: whatever the lab holds now is what
//! is built, the lab's tests are the target's, zero tests run is red, and the
//! exit status is the verdict even when nobody reads the report. Nor is it
//! red on right work that prints a flood.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{ANSWER, Fixture, tiny_course};

/// Compiles, but `double` is wrong: red work.
fn wrong() -> String {
    ANSWER.replace("x * 2", "x + 2")
}

fn lab(fixture: &Fixture, lib: &str) -> PathBuf {
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    fs::write(lab.join("course/src/lib.rs"), lib).unwrap();
    lab
}

fn set_time(path: &Path, time: SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// `cp -p`: `content` with a time long before any build of this test.
fn restore_old_copy(path: &Path, content: &str, time: SystemTime) {
    fs::write(path, content).unwrap();
    set_time(path, time);
}

fn long_ago() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_600_000_000)
}

/// The learner's own `cargo test` in the lab, building into the lab's
/// `target/` as cargo does by default (whatever the test run's environment).
fn cargo_test_in(lab: &Path) {
    let run = Command::new(env!("CARGO"))
        .args(["test", "-p", "course", "--test", "focused"])
        .current_dir(lab)
        .env("CARGO_TARGET_DIR", lab.join("target"))
        .env("CARGO_TERM_COLOR", "never")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "the learner's own run passes:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn an_older_copy_restored_after_the_learner_ran_cargo_test_is_rebuilt() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, &wrong());
    let lib = lab.join("course/src/lib.rs");
    // check sees the wrong work, and says so.
    assert_eq!(fixture.xtask(&["check", "01", "lab"]).code, 1);
    // The learner fixes it and runs the tests directly: the green binary is
    // now in the lab's target/, built by something check never saw.
    fs::write(&lib, ANSWER).unwrap();
    cargo_test_in(&lab);
    // Then a backup of the wrong version comes back with its old time: the
    // content check saw last, older than the green build.
    restore_old_copy(&lib, &wrong(), long_ago());

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "wrong work is red:\n{}", run.stdout);
    run.prints(&["第一个失败的测试：doubles", "left: 6"]);
}

#[test]
fn a_lab_check_has_never_seen_is_built_from_what_it_holds() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    cargo_test_in(&lab);
    // Dated at the epoch itself: older than any time cargo could compare with.
    restore_old_copy(&lab.join("course/src/lib.rs"), &wrong(), UNIX_EPOCH);

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "wrong work is red:\n{}", run.stdout);
    run.prints(&["第一个失败的测试：doubles"]);
}

#[test]
fn cargo_fingerprints_kept_elsewhere_are_cleaned_too() {
    // A learner's cargo config may keep build state out of target/
    // (`build.build-dir`), beside check's record: `cargo clean -p` reaches
    // it, so the old copy is what is built.
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    let build_dir = fixture.dir.path().join("build-dir");
    fs::create_dir_all(lab.join(".cargo")).unwrap();
    fs::write(
        lab.join(".cargo/config.toml"),
        format!(
            "[build]\nbuild-dir = {:?}\n",
            build_dir.display().to_string()
        ),
    )
    .unwrap();
    cargo_test_in(&lab);
    assert!(build_dir.is_dir(), "precondition: cargo honours build-dir");
    restore_old_copy(&lab.join("course/src/lib.rs"), &wrong(), long_ago());

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "wrong work is red:\n{}", run.stdout);
    run.prints(&["第一个失败的测试：doubles"]);
}

#[test]
fn a_changed_focused_test_is_reported_with_the_command_that_restores_it() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, &wrong());
    let test = lab.join("course/tests/focused.rs");
    // The learner "fixes" the test instead of the code: it passes now.
    let weakened = fs::read_to_string(&test)
        .unwrap()
        .replace("assert_eq!(double(4), 8)", "assert_eq!(double(4), 6)");
    fs::write(&test, weakened).unwrap();
    // A test file of the learner's own is fine.
    fs::write(lab.join("course/tests/mine.rs"), "#[test]\nfn mine() {}\n").unwrap();

    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "a changed test is no verdict:\n{}", run.stdout);
    run.prints(&[
        "✗ course/tests/focused.rs 和本章终点的版本不一样",
        "在课程仓库根目录运行这条命令恢复它：\n    cargo xtask check 01 lab --restore-tests\n",
    ]);
    assert!(!run.stdout.contains("mine.rs"), "{}", run.stdout);
    let json = fixture.xtask(&["check", "01", "lab", "--json"]).json();
    assert_eq!(json["complete"], false);
    assert_eq!(json["changedTests"][0]["path"], "course/tests/focused.rs");
    assert_eq!(json["changedTests"][0]["missing"], false);

    common::restore_then_complete(
        &fixture,
        &lab,
        json["changedTests"][0]["restore"].as_str().unwrap(),
    );
}

#[test]
fn a_run_in_which_no_test_ran_is_red_whatever_expected_tests_says() {
    let fixture = tiny_course("", ANSWER, |manifest| {
        let object = manifest.as_object_mut().unwrap();
        object.remove("expectedTests");
        object.remove("steps");
        object["run"] = serde_json::json!([
            "cargo",
            "test",
            "-p",
            "course",
            "--test",
            "focused",
            "--",
            "no_such_test"
        ]);
    });
    lab(&fixture, ANSWER);
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(
        run.code, 1,
        "nothing ran, nothing is proven:\n{}",
        run.stdout
    );
    run.prints(&["✗ 没有一个聚焦测试真正运行"]);
    assert_eq!(
        fixture.xtask(&["check", "01", "lab", "--json"]).json()["ran"],
        0
    );
}

#[test]
fn the_exit_status_is_the_verdict_even_when_stdout_is_closed() {
    let fixture = tiny_course("", ANSWER, |_| {});
    lab(&fixture, &wrong());
    let status = |fixture: &Fixture| {
        // `check … | true`: the reader is gone before check writes a word.
        let mut child =
            common::spawn_xtask(fixture.root(), &["check", "01", "lab"], Stdio::piped());
        drop(child.stdout.take());
        common::wait_at_most(&mut child, Duration::from_secs(300))
            .expect("check ends")
            .code()
    };
    assert_eq!(status(&fixture), Some(1), "red work exits 1");
    fs::write(fixture.root().join("lab/course/src/lib.rs"), ANSWER).unwrap();
    assert_eq!(status(&fixture), Some(0), "green work exits 0");
}

#[test]
fn a_run_cargo_cannot_start_shows_cargos_own_words() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    let manifest = lab.join("course/Cargo.toml");
    let broken = fs::read_to_string(&manifest).unwrap() + "garbage = [\n";
    fs::write(&manifest, broken).unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    run.prints(&["运行失败了，但没有哪个测试失败", "course/Cargo.toml"]);
}

/// A panic in the learner's code, on a thread of its own (a producer's
/// `todo!`), is shown with the line cargo prints for it: which file, which
/// line fired.
#[test]
fn a_panic_on_a_learners_thread_is_shown_with_its_file_and_line() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let producer = ANSWER.replace(
        "    a + b\n",
        "    std::thread::spawn(move || if a > 0 { todo!() } else { a + b })\n        \
         .join()\n        .expect(\"the producer thread ended\")\n",
    );
    lab(&fixture, &producer);
    let run = fixture.xtask(&["check", "01", "lab"]);
    run.fails_with(1, &[]);
    run.prints(&[
        "panicked at course/src/lib.rs:2:",
        "not yet implemented",
        "the producer thread ended",
    ]);
}

/// An unchanged lab that check built itself is not rebuilt: its record
/// vouches for cargo's build. Any edit (even one restored to the same
/// bytes with an old time after a build check never saw) loses that.
#[test]
fn an_unchanged_lab_is_not_rebuilt_and_an_edited_one_is() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    let compiled = |fixture: &Fixture| {
        let run = fixture.xtask(&["check", "01", "lab", "--json", "--verbose"]);
        let output = run.json()["cargoOutput"].as_str().unwrap().to_string();
        (run.code, output.contains("Compiling course"))
    };
    // A real lab has its Cargo.lock from the start; this one gets it here,
    // from a build check never saw.
    cargo_test_in(&lab);
    assert_eq!(compiled(&fixture), (0, true), "the first check builds");
    assert_eq!(
        compiled(&fixture),
        (0, false),
        "nothing changed: no rebuild"
    );
    fs::write(lab.join("course/src/lib.rs"), wrong()).unwrap();
    assert_eq!(compiled(&fixture), (1, true), "an edit is rebuilt");
    restore_old_copy(&lab.join("course/src/lib.rs"), ANSWER, long_ago());
    assert_eq!(compiled(&fixture), (0, true), "an older copy is rebuilt");
}

/// An edit, even an older copy restored with its old time, keeps cargo's
/// incremental state: check makes the changed file newer than its last
/// build instead of cleaning it, so the rebuild is as quick as a plain
/// `cargo test`'s. (`cargo clean -p` would remove every folder below.)
#[test]
fn an_edit_is_rebuilt_without_losing_cargos_incremental_state() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    // A file named in no encoding is the learner's business too.
    let odd: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(b"notes-\xff.txt");
    fs::write(lab.join(odd), "").unwrap();
    cargo_test_in(&lab);
    fixture.xtask(&["check", "01", "lab"]).success();
    let incremental = fs::read_dir(lab.join("target/debug/incremental")).unwrap();
    let sentinels: Vec<PathBuf> = incremental
        .map(|entry| entry.unwrap().path().join("kept"))
        .collect();
    assert!(!sentinels.is_empty(), "cargo builds incrementally");
    for sentinel in &sentinels {
        fs::write(sentinel, "").unwrap();
    }
    let lib = lab.join("course/src/lib.rs");
    fs::write(&lib, wrong()).unwrap();
    let run = fixture.xtask(&["check", "01", "lab"]);
    run.prints(&["第一个失败的测试：doubles"]);
    restore_old_copy(&lib, ANSWER, long_ago());
    fixture.xtask(&["check", "01", "lab"]).success();
    assert!(
        sentinels.iter().all(|sentinel| sentinel.exists()),
        "{sentinels:?}"
    );
}

/// A deleted focused test is told with the command that brings it back,
/// every word quoted as the shell needs: it works in a folder named with a
/// quote and a space.
#[test]
fn a_deleted_focused_test_comes_back_with_the_printed_command() {
    let fixture = tiny_course("", ANSWER, |_| {});
    fixture.xtask(&["practice", "01", "it's lab"]).success();
    let lab = fixture.root().join("it's lab");
    fs::remove_file(lab.join("course/tests/focused.rs")).unwrap();
    let run = fixture.xtask(&["check", "01", "it's lab"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let restore = run
        .stdout
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("cargo xtask check "))
        .unwrap_or_else(|| panic!("a restore command in:\n{}", run.stdout))
        .to_string();
    assert_eq!(
        restore,
        "cargo xtask check 01 'it'\\''s lab' --restore-tests"
    );
    common::run_printed(fixture.root(), &restore)
        .fails_with(1, &["已把 course/tests/focused.rs 恢复成本章终点的版本"]);
    assert_eq!(
        fs::read_to_string(lab.join("course/tests/focused.rs")).unwrap(),
        common::FOCUSED
    );
}

#[test]
fn failing_tests_that_ran_are_not_called_tests_that_never_ran() {
    let fixture = tiny_course("", ANSWER, |_| {});
    // Both focused tests fail.
    lab(&fixture, &wrong().replace("a + b", "a - b"));
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

/// A manifest naming a file its target lacks (a typo of the author's) is
/// bad input, named as `checkpoint` and `practice` name it, never a red lab
/// or a shallow clone.
#[test]
fn a_manifest_naming_a_file_the_target_lacks_is_bad_input() {
    let fixture = tiny_course("", ANSWER, |_| {});
    let lab = lab(&fixture, ANSWER);
    let path = fixture.root().join("checkpoints/01/checkpoint.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    manifest["teachingFiles"]
        .as_array_mut()
        .unwrap()
        .push("course/src/typo.rs".into());
    fs::write(&path, manifest.to_string()).unwrap();
    let run = common::xtask_in(fixture.root(), &["check", "01", lab.to_str().unwrap()]);
    run.fails_with(2, &["course/src/typo.rs"]);
    assert!(!run.stderr.contains("--unshallow"), "{}", run.stderr);
}

/// A complete lab whose run prints 5 MiB before the focused tests' result
/// lines and 5 MiB after them (two test programs without libtest, run
/// before and after the focused test): check keeps the output's first and
/// last 4 MiB, yet counts every test, and says in Chinese what it left out.
#[test]
fn a_complete_lab_whose_run_prints_a_flood_around_the_results_is_complete() {
    let flood = "use std::io::Write;\n\nfn main() {\n    let mut out = std::io::stdout().lock();\n    \
                 for _ in 0..5 * 1024 {\n        out.write_all(&[b'.'; 1023]).unwrap();\n        \
                 out.write_all(b\"\\n\").unwrap();\n    }\n}\n";
    let crate_manifest = "[package]\nname = \"course\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                          [[test]]\nname = \"a_flood\"\nharness = false\n\n\
                          [[test]]\nname = \"z_flood\"\nharness = false\n\n\
                          [[test]]\nname = \"focused\"\n";
    let parent = [
        ("course/src/lib.rs", ""),
        ("course/Cargo.toml", crate_manifest),
        ("course/tests/a_flood.rs", flood),
        ("course/tests/z_flood.rs", flood),
    ];
    let fixture = common::tiny_course_with(&parent, &[("course/src/lib.rs", ANSWER)], |manifest| {
        manifest["run"] = "cargo test -p course".split(' ').collect();
    });
    lab(&fixture, ANSWER);
    let run = fixture.xtask(&["check", "01", "lab", "--verbose"]);
    run.success()
        .prints(&["第 01 章完成", "xtask 在这里略去了"]);
    let gap = run.stdout.find("略去了").unwrap();
    assert!(
        run.stdout[gap..].contains("test adds ... ok"),
        "{}",
        &run.stdout[gap..]
    );
}
