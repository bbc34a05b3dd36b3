//! Hostile repositories, interrupts and concurrent runs (issue 10): nothing
//! is written or read outside the practice folder and the repository, no
//! process outlives its run, a closed stdout is no panic, and concurrent
//! runs never lose each other's work.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{
    Fixture, is_running, send_signal, snapshot, spawn_xtask, staging_folders, stderr_of,
    wait_at_most, wait_until, xtask_in, xtask_with_env,
};
use git2::Repository;

const LONG: Duration = Duration::from_secs(30);

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn no_panic(stderr: &str) {
    assert!(!stderr.contains("panicked at"), "a panic:\n{stderr}");
}

// ── 1. Symlinks in the tree and in the chapter folder ─────────────────────

/// A course whose parent tree has a symlink at `link` (pointing at
/// `target`) where the target tree has the folder of the focused test.
fn parent_with_symlink(link: &str, target: &str) -> Fixture {
    let fixture = Fixture::empty();
    fixture.write("Cargo.toml", "[workspace]\nmembers = [\"course\"]\n");
    fixture.write("course/src/lib.rs", "// skeleton\n");
    if let Some(folder) = Path::new(link).parent() {
        fs::create_dir_all(fixture.root().join(folder)).unwrap();
    }
    if link.starts_with("course/") {
        fs::remove_dir_all(fixture.root().join("course/src")).unwrap();
    } else {
        fs::remove_dir_all(fixture.root().join("course")).unwrap();
    }
    fixture.symlink(target, link);
    fixture.commit("Skeleton with a symlink");
    fs::remove_file(fixture.root().join(link)).unwrap();
    fixture.write("course/src/lib.rs", "// answer\n");
    fixture.write("course/tests/message_ir.rs", "// focused 03\n");
    fixture.commit("course(03): save one complete tool round-trip");
    fixture.write_manifest(
        "03",
        &common::manifest("03", "course/tests/message_ir.rs", &[]),
    );
    fixture.commit("Describe chapter 03");
    fixture
}

#[test]
fn a_symlinked_folder_in_the_parent_tree_is_never_written_through() {
    for (link, absolute) in [("course", true), ("course", false), ("course/tests", true)] {
        let outside_holder = tempfile::tempdir().unwrap();
        let outside = outside_holder.path().join("outside");
        fs::create_dir_all(outside.join("tests")).unwrap();
        fs::write(outside.join("tests/message_ir.rs"), "precious\n").unwrap();
        fs::write(outside.join("message_ir.rs"), "precious\n").unwrap();
        let target = if absolute {
            outside.to_str().unwrap().to_string()
        } else {
            "..".to_string()
        };
        let fixture = parent_with_symlink(link, &target);
        let outside_before = snapshot(&outside);
        let beside = fixture.dir.path().to_path_buf();
        let beside_before = snapshot(&beside);

        let run = fixture.xtask(&["practice", "03", "lab"]);
        run.fails_with(2, &["symlink", link]);
        no_panic(&run.stderr);
        assert_eq!(snapshot(&outside), outside_before, "{link} -> {target}");
        assert_eq!(read(&outside.join("tests/message_ir.rs")), "precious\n");
        assert_eq!(read(&outside.join("message_ir.rs")), "precious\n");
        assert_eq!(
            snapshot(&beside),
            beside_before,
            "{link} -> {target}: nothing written beside the folder"
        );
    }
}

/// A course tree's own `target/` entries stay out of the lab, so cargo
/// never builds through a link found there.
#[test]
fn a_symlink_in_the_course_trees_target_folder_never_reaches_the_lab() {
    let outside_holder = tempfile::tempdir().unwrap();
    let outside = outside_holder.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let fixture = parent_with_symlink("target/debug", outside.to_str().unwrap());
    fixture.xtask(&["practice", "03", "lab"]).success();
    let lab = fixture.root().join("lab");
    assert!(fs::symlink_metadata(lab.join("target/debug")).is_err());
    assert!(fs::symlink_metadata(lab.join("target")).is_err());
    assert!(lab.join("course/tests/message_ir.rs").is_file());
}

/// A step's own test file gets the same care as the focused test.
#[test]
fn a_symlinked_folder_on_the_way_to_a_step_test_file_is_never_written_through() {
    let outside_holder = tempfile::tempdir().unwrap();
    let outside = outside_holder.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let fixture = parent_with_symlink("course/tests", outside.to_str().unwrap());
    let manifest = serde_json::json!({
        "id": "03", "title": "t", "focusedTest": "course/src/lib.rs",
        "teachingFiles": [], "run": ["true"],
        "steps": [{"id": "3.3", "filter": "", "expectedTests": 1,
                   "testFile": "course/tests/message_ir.rs", "run": ["true"]}]
    });
    fixture.write_manifest("03", &manifest.to_string());
    let beside_before = snapshot(fixture.dir.path());
    let run = fixture.xtask(&["practice", "03", "lab"]);
    run.fails_with(2, &["symlink", "course/tests"]);
    no_panic(&run.stderr);
    assert!(snapshot(&outside).is_empty(), "nothing written outside");
    assert_eq!(snapshot(fixture.dir.path()), beside_before);
}

/// So does a lab file.
#[test]
fn a_symlinked_folder_on_the_way_to_a_lab_file_is_never_written_through() {
    let outside_holder = tempfile::tempdir().unwrap();
    let outside = outside_holder.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let fixture = parent_with_symlink("course/tests", outside.to_str().unwrap());
    let manifest = serde_json::json!({
        "id": "03", "title": "t", "focusedTest": "course/src/lib.rs",
        "teachingFiles": [], "run": ["true"], "labFiles": ["course/tests/message_ir.rs"]
    });
    fixture.write_manifest("03", &manifest.to_string());
    let beside_before = snapshot(fixture.dir.path());
    let run = fixture.xtask(&["practice", "03", "lab"]);
    run.fails_with(2, &["symlink", "course/tests"]);
    no_panic(&run.stderr);
    assert!(snapshot(&outside).is_empty(), "nothing written outside");
    assert_eq!(snapshot(fixture.dir.path()), beside_before);
}

#[test]
fn a_symlinked_guide_or_focused_test_in_the_parent_tree_is_replaced_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    let guide = outside.path().join("guide");
    let test = outside.path().join("test");
    fs::write(&guide, "outside guide\n").unwrap();
    fs::write(&test, "outside test\n").unwrap();
    let fixture = Fixture::empty();
    fixture.write("Cargo.toml", "[workspace]\n");
    fixture.write("course/src/lib.rs", "// skeleton\n");
    fs::create_dir_all(fixture.root().join("course/tests")).unwrap();
    fixture.symlink(guide.to_str().unwrap(), "LEARNING.md");
    fixture.symlink(test.to_str().unwrap(), "course/tests/message_ir.rs");
    fixture.commit("Skeleton with symlinks");
    fs::remove_file(fixture.root().join("course/tests/message_ir.rs")).unwrap();
    fixture.write("course/tests/message_ir.rs", "// focused 03\n");
    fixture.commit("course(03): save one complete tool round-trip");
    fixture.write_manifest(
        "03",
        &common::manifest("03", "course/tests/message_ir.rs", &[]),
    );

    fixture.xtask(&["practice", "03", "lab"]).success();
    let lab = fixture.root().join("lab");
    assert_eq!(read(&guide), "outside guide\n");
    assert_eq!(read(&test), "outside test\n");
    for written in ["LEARNING.md", "course/tests/message_ir.rs"] {
        let meta = fs::symlink_metadata(lab.join(written)).unwrap();
        assert!(meta.is_file(), "{written} is a file of its own");
    }
    assert_eq!(
        read(&lab.join("course/tests/message_ir.rs")),
        "// focused 03\n"
    );
}

#[test]
fn a_symlinked_chapter_guide_is_never_read() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    fs::write(&secret, "root:x:0:0:secret\n").unwrap();
    let fixture = Fixture::course();
    let guide = fixture.root().join("checkpoints/03/LEARNING.md");
    fs::remove_file(&guide).unwrap();
    std::os::unix::fs::symlink(&secret, &guide).unwrap();
    let before = snapshot(fixture.root());

    let run = fixture.xtask(&["practice", "03", "lab"]);
    run.fails_with(2, &["checkpoints/03/LEARNING.md", "符号链接"]);
    no_panic(&run.stderr);
    assert_eq!(snapshot(fixture.root()), before, "no lab was created");
}

// ── 2. Process groups, interrupts, target folders ─────────────────────────

/// Writes its own pid and a grandchild's into `pids`, then spins; the
/// grandchild sleeps and holds stdout open.
const PROCESS_TREE: &str =
    "sh -c 'echo $$ >> pids; exec sleep 1000' & echo $$ >> pids; while :; do :; done";

/// A course whose chapter 03 runs `script` with `sh -c`, and a lab.
fn course_running(script: &str) -> (Fixture, PathBuf) {
    let fixture = Fixture::course();
    let manifest = serde_json::json!({
        "id": "03",
        "title": "第 03 章",
        "focusedTest": "course/tests/message_ir.rs",
        "teachingFiles": ["course/src/types.rs"],
        "run": ["sh", "-c", script],
    });
    fixture.write_manifest("03", &manifest.to_string());
    // A lab as check recognises one: a workspace, the guide and the focused test.
    let lab = fixture.root().join("lab");
    fs::create_dir_all(lab.join("course/tests")).unwrap();
    fs::write(lab.join("Cargo.toml"), "[workspace]\n").unwrap();
    fs::write(lab.join("LEARNING.md"), "# 第 03 章\n").unwrap();
    fs::write(lab.join("course/tests/message_ir.rs"), "").unwrap();
    (fixture, lab)
}

fn pids(lab: &Path) -> Vec<i32> {
    fs::read_to_string(lab.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Kills what a failed test left running, then fails it.
fn fail_and_clean(lab: &Path, why: &str) -> ! {
    for pid in pids(lab) {
        // SAFETY: plain kill(2) of processes this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    panic!("{why}");
}

fn assert_all_ended(lab: &Path) {
    let pids = pids(lab);
    assert_eq!(
        pids.len(),
        2,
        "the child and the grandchild wrote their pids"
    );
    if !wait_until(Duration::from_secs(5), || {
        pids.iter().all(|&pid| !is_running(pid))
    }) {
        fail_and_clean(lab, &format!("processes left running: {pids:?}"));
    }
}

#[test]
fn a_timeout_ends_the_whole_process_group() {
    let (fixture, lab) = course_running(PROCESS_TREE);
    let mut child = spawn_xtask(
        fixture.root(),
        &["check", "03", "lab", "--timeout", "2"],
        Stdio::null(),
    );
    let Some(status) = wait_at_most(&mut child, LONG) else {
        fail_and_clean(&lab, "check --timeout 2 did not return within 30s");
    };
    let stderr = stderr_of(&mut child);
    assert_all_ended(&lab);
    no_panic(&stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
}

/// SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal closed) and SIGQUIT
/// (Ctrl-\) all end the run's process group; xtask exits 128 + the signal.
#[test]
fn a_signal_during_a_run_leaves_no_process_behind() {
    for (signal, code) in [
        (libc::SIGTERM, 143),
        (libc::SIGINT, 130),
        (libc::SIGHUP, 129),
        (libc::SIGQUIT, 131),
    ] {
        let (fixture, lab) = course_running(PROCESS_TREE);
        let mut child = spawn_xtask(fixture.root(), &["check", "03", "lab"], Stdio::null());
        if !wait_until(LONG, || pids(&lab).len() == 2) {
            let _ = child.kill();
            fail_and_clean(&lab, "the run never started");
        }
        send_signal(child.id(), signal);
        let Some(status) = wait_at_most(&mut child, LONG) else {
            fail_and_clean(&lab, "xtask did not stop after the signal");
        };
        let stderr = stderr_of(&mut child);
        assert_all_ended(&lab);
        no_panic(&stderr);
        assert_eq!(status.code(), Some(code), "signal {signal}: {stderr}");
    }
}

/// A process that leaves the group (`setsid`) cannot be killed with it and
/// may hold the output pipes open; the run still ends soon after its timeout.
/// compare asks check in-process: Ctrl-C on compare ends check's run and
/// its whole process group too.
#[test]
fn ctrl_c_on_compare_leaves_no_process_behind() {
    let (fixture, lab) = course_running(PROCESS_TREE);
    let mut child = spawn_xtask(fixture.root(), &["compare", "03", "lab"], Stdio::null());
    if !wait_until(LONG, || pids(&lab).len() == 2) {
        let _ = child.kill();
        fail_and_clean(&lab, "the run never started");
    }
    send_signal(child.id(), libc::SIGINT);
    let Some(status) = wait_at_most(&mut child, LONG) else {
        fail_and_clean(&lab, "compare did not stop after Ctrl-C");
    };
    let stderr = stderr_of(&mut child);
    assert_all_ended(&lab);
    no_panic(&stderr);
    assert_eq!(status.code(), Some(130), "{stderr}");
}

#[test]
fn an_escaped_process_holding_the_pipes_does_not_stretch_a_timeout() {
    let (fixture, lab) = course_running(
        "setsid sh -c 'echo $$ >> pids; exec sleep 1000' & echo $$ >> pids; while :; do :; done",
    );
    let started = std::time::Instant::now();
    let mut child = spawn_xtask(
        fixture.root(),
        &["check", "03", "lab", "--timeout", "1"],
        Stdio::null(),
    );
    let status = wait_at_most(&mut child, LONG);
    let took = started.elapsed();
    let stderr = stderr_of(&mut child);
    // The escaped process is beyond xtask's reach: the test ends it.
    for pid in pids(&lab) {
        // SAFETY: plain kill(2) of processes this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    no_panic(&stderr);
    assert_eq!(status.and_then(|status| status.code()), Some(1), "{stderr}");
    assert!(
        took < Duration::from_secs(4),
        "a 1 s timeout took {took:?}: {stderr}"
    );
}

/// A test printing without end cannot make xtask hold all of it: each
/// output stream keeps its first and last few MiB, and says what it left out.
#[test]
fn a_flood_of_output_is_kept_bounded_with_its_last_line() {
    const MIB: usize = 1 << 20;
    let (fixture, lab) = course_running(
        "yes 'warning: unused variable' | head -c 67108864; echo; echo 'the last line of the flood'; exit 1",
    );
    let mut child = spawn_xtask(
        fixture.root(),
        &["check", "03", "lab", "--verbose"],
        Stdio::piped(),
    );
    let mut pipe = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut pipe, &mut text).unwrap();
        String::from_utf8_lossy(&text).into_owned()
    });
    let Some((status, peak)) = common::wait_with_peak_memory(&mut child, LONG) else {
        fail_and_clean(&lab, "check did not return within 30s");
    };
    let stdout = reader.join().unwrap();
    let stderr = stderr_of(&mut child);
    no_panic(&stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stdout.len() < 9 * MIB,
        "the report holds {} bytes of 64 MiB",
        stdout.len()
    );
    assert!(
        stdout.contains("the last line of the flood"),
        "the tail is kept"
    );
    assert!(
        stdout.contains("warning: unused variable\n"),
        "the head is kept"
    );
    assert!(
        stdout.contains("xtask 在这里略去了"),
        "the gap is marked, in the learner's language"
    );
    assert!(
        peak < (100 * MIB) as u64,
        "xtask peaked at {} MiB for 64 MiB of output",
        peak / MIB as u64
    );
}

/// A stand-in for cargo: prints its arguments on stdout and a line on
/// stderr. Unless `quick`, it then writes its pid and its child's into
/// `pids` beside it and waits for that child (`sleep 1000`, as a release
/// bench would run on); on SIGINT or SIGTERM it writes `cleaned up` beside
/// it, as the release xtask cleans up, and exits.
fn fake_cargo(folder: &Path, quick: bool) -> PathBuf {
    let script = folder.join("fake-cargo");
    let pids = folder.join("pids");
    let body = if quick {
        "echo \"fake cargo: $*\"\necho 'fake cargo on stderr' >&2\n".to_string()
    } else {
        format!(
            "echo \"fake cargo: $*\"\necho 'fake cargo on stderr' >&2\n\
             trap \"echo done > '{cleaned}'; exit 1\" INT TERM\n\
             echo $$ >> '{pids}'\nsleep 1000 &\necho $! >> '{pids}'\nwait\n",
            pids = pids.display(),
            cleaned = folder.join("cleaned up").display(),
        )
    };
    fs::write(&script, format!("#!/bin/sh\n{body}")).unwrap();
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

/// A debug build's `bench` re-runs itself through `cargo run --release`,
/// whose output shows live.
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "a release xtask benches at once, with no cargo to fake"
)]
fn benchs_release_rerun_shows_cargos_output() {
    let fixture = Fixture::course();
    let cargo = fake_cargo(fixture.dir.path(), true);
    let mut child = common::spawn_xtask_with_env(
        fixture.root(),
        &["bench", "--only", "json"],
        &[("CARGO", &cargo)],
        Stdio::piped(),
    );
    let mut pipe = child.stdout.take().unwrap();
    let status = wait_at_most(&mut child, LONG).expect("it returns");
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut pipe, &mut stdout).unwrap();
    let stderr = stderr_of(&mut child);
    no_panic(&stderr);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("fake cargo: run --quiet --release --manifest-path xtask/Cargo.toml -- bench --only json"),
        "{stdout}"
    );
    assert!(stderr.contains("fake cargo on stderr"), "{stderr}");
}

/// SIGTERM or SIGINT while `bench` waits for its release build (or the
/// release bench it runs) is passed on to that build, then its whole process
/// group is ended. (The fake's `sleep`, started in the background, ignores
/// SIGINT.)
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "a release xtask benches at once, with no cargo to fake"
)]
fn a_signal_during_benchs_release_rerun_leaves_no_process_behind() {
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let fixture = Fixture::course();
        let folder = fixture.dir.path();
        let cargo = fake_cargo(folder, false);
        let mut child = common::spawn_xtask_with_env(
            fixture.root(),
            &["bench", "--only", "json"],
            &[("CARGO", &cargo)],
            Stdio::null(),
        );
        if !wait_until(LONG, || pids(folder).len() == 2) {
            let _ = child.kill();
            fail_and_clean(folder, "the fake cargo never started");
        }
        send_signal(child.id(), signal);
        let Some(status) = wait_at_most(&mut child, LONG) else {
            fail_and_clean(folder, "xtask did not stop after the signal");
        };
        // Before reading stderr: a process left running would hold it open.
        let pids = pids(folder);
        if !wait_until(Duration::from_secs(5), || {
            pids.iter().all(|&pid| !is_running(pid))
        }) {
            fail_and_clean(
                folder,
                &format!("signal {signal}: processes left running: {pids:?}"),
            );
        }
        let stderr = stderr_of(&mut child);
        no_panic(&stderr);
        assert_eq!(status.code(), Some(code), "signal {signal}: {stderr}");
        assert!(
            folder.join("cleaned up").exists(),
            "signal {signal}: the build got the signal first, to clean up"
        );
    }
}

#[test]
fn a_run_builds_in_the_labs_own_target_folder_whatever_the_environment() {
    let (fixture, lab) =
        course_running("echo \"$CARGO_TARGET_DIR|${CARGO_BUILD_TARGET_DIR-unset}\" > env.txt");
    let shared = fixture.dir.path().join("shared-target");
    let run = xtask_with_env(
        fixture.root(),
        &["check", "03", "lab"],
        &[
            ("CARGO_TARGET_DIR", &shared),
            ("CARGO_BUILD_TARGET_DIR", &shared),
        ],
    );
    no_panic(&run.stderr);
    assert_eq!(
        read(&lab.join("env.txt")).trim(),
        format!("{}|unset", lab.join("target").display())
    );
}

// ── 3. A closed or full stdout ────────────────────────────────────────────

#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    let fixture = Fixture::course();
    for args in [
        &["list"][..],
        &["checkpoint", "03"],
        &["practice", "03", "lab"],
    ] {
        let mut child = spawn_xtask(fixture.root(), args, Stdio::piped());
        drop(child.stdout.take());
        let status = wait_at_most(&mut child, LONG).expect("it returns");
        let stderr = stderr_of(&mut child);
        no_panic(&stderr);
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
    }
    assert!(fixture.root().join("lab/LEARNING.md").is_file());
}

/// The command succeeded but its report was lost: the verdict (exit 0)
/// stands, and the loss is one line on stderr, in the command's language.
#[test]
fn a_full_stdout_is_one_line_on_stderr_and_changes_no_verdict() {
    let fixture = Fixture::course();
    for args in [&["list"][..], &["practice", "03", "lab"]] {
        let full = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let mut child = spawn_xtask(fixture.root(), args, Stdio::from(full));
        let status = wait_at_most(&mut child, LONG).expect("it returns");
        let stderr = stderr_of(&mut child);
        no_panic(&stderr);
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        let said = if args[0] == "practice" {
            "标准输出"
        } else {
            "standard output"
        };
        assert!(stderr.contains(said), "{stderr}");
    }
}

// ── 4. Where DIR may not be ───────────────────────────────────────────────

#[test]
fn dir_inside_git_the_current_folder_or_the_repository_is_refused() {
    let fixture = Fixture::course();
    let root = fixture.root().to_path_buf();
    fs::create_dir(root.join("empty")).unwrap();
    fixture.symlink(".git", "gitlink");
    let before = snapshot(&root);
    let beside = fixture.dir.path().to_path_buf();
    let beside_before = fs::read_dir(&beside).unwrap().count();
    for (cwd, dir, needle) in [
        (root.clone(), ".git/refs/heads/lab", ".git"),
        (root.clone(), ".git/lab", ".git"),
        (root.clone(), "course/.GIT/lab", ".git"),
        (root.clone(), "gitlink/lab", ".git"),
        (root.join("empty"), ".", "就是当前目录"),
        (root.join("empty"), "./", "就是当前目录"),
        (root.join("empty"), "..", "课程仓库本身"),
        (root.clone(), "..", "课程仓库本身"),
        (root.join("course/src"), "../..", "课程仓库本身"),
    ] {
        let run = xtask_in(&cwd, &["practice", "03", dir]);
        no_panic(&run.stderr);
        run.fails_with(2, &[needle, "什么都没有改动"]);
    }
    assert_eq!(snapshot(&root), before, "nothing touched");
    assert_eq!(fs::read_dir(&beside).unwrap().count(), beside_before);
}

// ── 5. The exclude entry ──────────────────────────────────────────────────

/// Points the fixture's `core.excludesFile` at an empty file, so the
/// caller's global excludes cannot change what git ignores here.
fn without_global_excludes(fixture: &Fixture) {
    let empty = fixture.dir.path().join("no-global-excludes");
    fs::write(&empty, "").unwrap();
    fixture
        .repo
        .config()
        .unwrap()
        .set_str("core.excludesFile", empty.to_str().unwrap())
        .unwrap();
}

#[test]
fn the_exclude_pattern_matches_the_folder_alone() {
    let fixture = Fixture::course();
    without_global_excludes(&fixture);
    let cases = [
        ("*", "other"),
        ("lab[1]", "lab1"),
        ("my lab", "my"),
        ("q?", "qx"),
        ("#hash", "hash"),
        ("!bang", "bang"),
        ("back\\slash", "backslash"),
        ("trailing ", "trailing"),
        ("a*b/c d", "axb/c d"),
    ];
    for (name, _) in cases {
        let run = fixture.xtask(&["practice", "03", name]);
        no_panic(&run.stderr);
        run.success();
    }
    let repo = Repository::open(fixture.root()).unwrap();
    for (name, sibling) in cases {
        assert!(
            repo.status_should_ignore(&Path::new(name).join("Cargo.toml"))
                .unwrap(),
            "{name:?} is ignored"
        );
        assert!(
            !repo
                .status_should_ignore(&Path::new(sibling).join("x"))
                .unwrap(),
            "{sibling:?} is not ignored (after excluding {name:?})"
        );
    }
    assert!(
        !repo
            .status_should_ignore(Path::new("course/src/lib.rs"))
            .unwrap()
    );
}

#[test]
fn a_name_with_a_newline_is_refused_inside_the_work_tree() {
    let fixture = Fixture::course();
    let before = snapshot(fixture.root());
    let run = fixture.xtask(&["practice", "03", "a\nb"]);
    no_panic(&run.stderr);
    run.fails_with(2, &["换行符"]);
    assert_eq!(snapshot(fixture.root()), before);
}

#[test]
fn a_worktree_is_excluded_in_the_exclude_file_git_reads() {
    let fixture = Fixture::course();
    without_global_excludes(&fixture);
    let worktree = fixture.dir.path().join("wt");
    fixture.repo.worktree("wt", &worktree, None).unwrap();
    assert!(worktree.join("checkpoints/03/checkpoint.json").is_file());

    let run = xtask_in(&worktree, &["practice", "03", "lab"]);
    no_panic(&run.stderr);
    run.success();
    let common_exclude = fixture.root().join(".git/info/exclude");
    assert!(
        read(&common_exclude).lines().any(|line| line == "/lab/"),
        "{}",
        read(&common_exclude)
    );
    run.prints(&[&common_exclude.display().to_string()]);
    let repo = Repository::open(&worktree).unwrap();
    assert!(
        repo.status_should_ignore(Path::new("lab/Cargo.toml"))
            .unwrap()
    );
    assert!(!repo.status_should_ignore(Path::new("labs/x")).unwrap());
}

#[test]
fn twelve_concurrent_runs_keep_twelve_exclude_lines() {
    let fixture = Fixture::course();
    let root = fixture.root().to_path_buf();
    let runs: Vec<_> = (0..12)
        .map(|n| {
            let root = root.clone();
            std::thread::spawn(move || {
                xtask_in(&root, &["practice", "03", &format!("labs/lab{n}")])
            })
        })
        .collect();
    for run in runs {
        let run = run.join().unwrap();
        no_panic(&run.stderr);
        run.success();
    }
    let exclude = read(&root.join(".git/info/exclude"));
    for n in 0..12 {
        let line = format!("/labs/lab{n}/");
        assert_eq!(
            exclude.lines().filter(|l| *l == line).count(),
            1,
            "{line} once in:\n{exclude}"
        );
    }
}

// ── 6. Leftovers ──────────────────────────────────────────────────────────

/// A course whose chapter 04 starts from a tree of 20 000 files, so writing
/// a practice folder takes a moment.
fn course_with_a_big_parent() -> Fixture {
    let fixture = Fixture::course();
    {
        let repo = &fixture.repo;
        let blob = repo.blob(b"x\n").unwrap();
        let mut leaf = repo.treebuilder(None).unwrap();
        for n in 0..1000 {
            leaf.insert(format!("f{n:04}"), blob, 0o100644).unwrap();
        }
        let leaf = leaf.write().unwrap();
        let mut big = repo.treebuilder(None).unwrap();
        for n in 0..20 {
            big.insert(format!("d{n:02}"), leaf, 0o040000).unwrap();
        }
        let big = big.write().unwrap();
        let head = repo.find_commit(fixture.head()).unwrap().tree().unwrap();
        let mut top = repo.treebuilder(Some(&head)).unwrap();
        top.insert("big", big, 0o040000).unwrap();
        let parent = top.write().unwrap();
        fixture.commit_tree("Many files", parent);
        let mut top = repo
            .treebuilder(Some(&repo.find_tree(parent).unwrap()))
            .unwrap();
        top.insert("marker", blob, 0o100644).unwrap();
        let target = top.write().unwrap();
        fixture.commit_tree("course(04): after many files", target);
    }
    fixture.write_manifest("04", &common::manifest("04", "marker", &[]));
    fixture
}

#[test]
fn an_interrupted_practice_leaves_no_staging_folder_and_no_parent_folder() {
    for (signal, code, dir, parent) in [
        (libc::SIGINT, 130, "lab", ""),
        (libc::SIGTERM, 143, "p/q/lab", "p/q"),
    ] {
        let fixture = course_with_a_big_parent();
        let before = snapshot(fixture.root());
        let staging_in = fixture.root().join(parent);
        let mut child = spawn_xtask(fixture.root(), &["practice", "04", dir], Stdio::null());
        assert!(
            wait_until(LONG, || !staging_folders(&staging_in).is_empty()),
            "a staging folder appears"
        );
        send_signal(child.id(), signal);
        let status = wait_at_most(&mut child, LONG).expect("it stops");
        let stderr = stderr_of(&mut child);
        no_panic(&stderr);
        assert_eq!(status.code(), Some(code), "signal {signal}: {stderr}");
        assert_eq!(
            snapshot(fixture.root()),
            before,
            "no folder, no staging folder, no parent folder left"
        );
    }
}

/// A DIR name near the 255-byte limit is practised into, in ASCII or in a
/// script of 3-byte characters.
#[test]
fn a_long_dir_name_is_practised_into() {
    let fixture = Fixture::course();
    for name in ["a".repeat(240), "练".repeat(80), "練".repeat(85)] {
        assert!(name.len() >= 240 && name.len() <= 255, "{}", name.len());
        let run = fixture.xtask(&["practice", "03", &name]);
        no_panic(&run.stderr);
        run.success();
        assert!(fixture.root().join(&name).join("LEARNING.md").is_file());
    }
    assert!(staging_folders(fixture.root()).is_empty());
}

#[test]
fn a_failed_run_removes_the_parent_folders_it_created() {
    let fixture = Fixture::course();
    fixture.write_manifest(
        "03",
        &common::manifest("03", "course/tests/missing.rs", &[]),
    );
    fs::create_dir(fixture.root().join("work")).unwrap();
    let before = snapshot(fixture.root());
    for dir in ["a/b/c", "newparent/../x", "work/new/../../y/z"] {
        let run = fixture.xtask(&["practice", "03", dir]);
        no_panic(&run.stderr);
        run.fails_with(2, &["course/tests/missing.rs"]);
        assert_eq!(snapshot(fixture.root()), before, "{dir}: nothing left");
    }
}

// ── 7. Messages ───────────────────────────────────────────────────────────

#[test]
fn next_steps_quote_paths_and_name_the_repository_root() {
    let fixture = Fixture::course();
    let root = fixture.root().display().to_string();
    let run = fixture.xtask(&["practice", "03", "my lab"]);
    run.success().prints(&[
        "my lab/LEARNING.md",
        "cd 'my lab' && cargo test -p course",
        &format!("cd {root} && cargo xtask check 03 'my lab' --watch"),
        "cargo xtask hint 03",
        "课程仓库",
    ]);

    fs::create_dir(fixture.root().join("work")).unwrap();
    let run = xtask_in(&fixture.root().join("work"), &["practice", "03", "it's"]);
    run.success().prints(&[
        r"cd 'it'\''s' && cargo test -p course",
        &format!(r"cd {root} && cargo xtask check 03 'work/it'\''s' --watch"),
    ]);
}

#[test]
fn the_losing_concurrent_run_says_another_run_created_the_folder() {
    // Writing 20 000 files takes long enough for both runs to get past the
    // destination check before either moves its folder into place.
    let fixture = course_with_a_big_parent();
    let mut first = spawn_xtask(fixture.root(), &["practice", "04", "lab"], Stdio::null());
    let mut second = spawn_xtask(fixture.root(), &["practice", "04", "lab"], Stdio::null());
    let codes = [
        wait_at_most(&mut first, LONG).unwrap().code(),
        wait_at_most(&mut second, LONG).unwrap().code(),
    ];
    let stderrs = [stderr_of(&mut first), stderr_of(&mut second)];
    let loser = match codes {
        [Some(0), Some(2)] => &stderrs[1],
        [Some(2), Some(0)] => &stderrs[0],
        _ => panic!("one run wins, one loses: {codes:?} {stderrs:?}"),
    };
    for needle in ["被别的运行", "这次的副本已经删掉"] {
        assert!(loser.contains(needle), "{needle}: {loser}");
    }
    assert!(!loser.contains("nothing was left there"), "{loser}");
    assert!(staging_folders(fixture.root()).is_empty());
    assert!(fixture.root().join("lab/LEARNING.md").is_file());
}

#[test]
#[ignore = "needs root to hand a folder to another user: run `cargo test -- --ignored` as root"]
fn the_safe_directory_hint_names_the_repository() {
    let fixture = Fixture::course();
    std::os::unix::fs::chown(fixture.root(), Some(54_321), None)
        .expect("chown to another user, which needs root");
    let home = tempfile::tempdir().unwrap();
    let run = xtask_with_env(
        &fixture.root().join("course/src"),
        &["list"],
        &[("HOME", home.path())],
    );
    std::os::unix::fs::chown(fixture.root(), Some(0), None).unwrap();
    run.fails_with(
        2,
        &[&format!(
            "git config --global --add safe.directory {}",
            fixture.root().display()
        )],
    );
    assert!(!run.stderr.contains("<its path>"), "{}", run.stderr);
}
