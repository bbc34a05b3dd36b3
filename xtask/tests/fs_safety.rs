//! Issue 16, "nothing hangs": the exit status is the verdict whatever became of
//! stdout; text from a commit reaches the terminal with its control
//! characters escaped; signals ignored when xtask starts still stop it.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Fixture, snapshot, spawn_xtask, stderr_of, wait_at_most, wait_until};

const LONG: Duration = Duration::from_secs(30);

/// A course whose chapter 03 runs `script` with `sh -c`, and a lab `check`
/// recognises (as tests/hostile.rs builds it).
fn course_running(script: &str) -> Fixture {
    let fixture = Fixture::course();
    let manifest = serde_json::json!({
        "id": "03",
        "title": "第 03 章",
        "focusedTest": "course/tests/message_ir.rs",
        "teachingFiles": ["course/src/types.rs"],
        "run": ["sh", "-c", script],
    });
    fixture.write_manifest("03", &manifest.to_string());
    let lab = fixture.root().join("lab");
    fs::create_dir_all(lab.join("course/tests")).unwrap();
    fs::write(lab.join("Cargo.toml"), "[workspace]\n").unwrap();
    fs::write(lab.join("LEARNING.md"), "# 第 03 章\n").unwrap();
    fs::write(lab.join("course/tests/message_ir.rs"), "").unwrap();
    fixture
}

/// Runs xtask with stdout closed before it starts writing, or on /dev/full.
fn exit_code_with_stdout(fixture: &Fixture, args: &[&str], stdout: &str) -> (i32, String) {
    let pipe = match stdout {
        "closed" => Stdio::piped(),
        "full" => Stdio::from(
            fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full, which every Linux has"),
        ),
        _ => unreachable!(),
    };
    let mut child = spawn_xtask(fixture.root(), args, pipe);
    drop(child.stdout.take());
    let status = wait_at_most(&mut child, LONG).expect("it returns");
    let stderr = stderr_of(&mut child);
    assert!(!stderr.contains("panicked"), "{stderr}");
    (status.code().unwrap_or(-1), stderr)
}

#[test]
fn a_closed_or_full_stdout_leaves_the_verdict_as_the_exit_status() {
    let fixture = course_running("echo 'test adds ... FAILED'; exit 101");
    for stdout in ["closed", "full"] {
        let (code, stderr) = exit_code_with_stdout(&fixture, &["check", "03", "lab"], stdout);
        assert_eq!(code, 1, "red work, stdout {stdout}: {stderr}");
        let (code, stderr) = exit_code_with_stdout(&fixture, &["checkpoint", "07"], stdout);
        assert_eq!(code, 2, "bad input, stdout {stdout}: {stderr}");
    }
    // Both streams closed: still the verdict.
    for (args, expected) in [(&["check", "03", "lab"][..], 1), (&["checkpoint", "07"], 2)] {
        let mut child = spawn_xtask(fixture.root(), args, Stdio::piped());
        drop(child.stdout.take());
        drop(child.stderr.take());
        let status = wait_at_most(&mut child, LONG).expect("it returns");
        assert_eq!(
            status.code(),
            Some(expected),
            "{args:?} with both streams closed"
        );
    }
    // A command that succeeded: a closed pipe is no failure, and a full
    // stdout changes no verdict either: the lost report is one line.
    let (code, stderr) = exit_code_with_stdout(&fixture, &["list"], "closed");
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = exit_code_with_stdout(&fixture, &["list"], "full");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("standard output"), "{stderr}");
    // The help is a report like any other: the same rule.
    for stdout in ["closed", "full"] {
        let (code, stderr) = exit_code_with_stdout(&fixture, &["--help"], stdout);
        assert_eq!(code, 0, "--help, stdout {stdout}: {stderr}");
        let (code, stderr) = exit_code_with_stdout(&fixture, &["check", "--help"], stdout);
        assert_eq!(code, 0, "check --help, stdout {stdout}: {stderr}");
    }
    let (_, stderr) = exit_code_with_stdout(&fixture, &["--help"], "full");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// A write over `ulimit -f` (SIGXFSZ) is a failure of the machine like a
/// full disk: exit 3, and nothing half made is left behind (no lab, no
/// staging folder, no lock).
#[test]
fn a_write_over_the_file_size_limit_is_exit_3_and_leaves_nothing() {
    let fixture = Fixture::course();
    let before = snapshot(fixture.root());
    let output = Command::new("sh")
        .args(["-c", "ulimit -f 0 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_xtask"))
        .args(["practice", "03", "lab"])
        .current_dir(fixture.root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(snapshot(fixture.root()), before, "nothing left: {stderr}");
    assert!(common::staging_folders(fixture.root()).is_empty());
}

/// A child that fails because of the machine (killed by a signal nobody
/// sent, or saying the disk is full) ends the command with exit 3, not as
/// red work (1).
#[test]
fn an_environment_failure_of_a_child_is_exit_3() {
    for script in [
        "kill -KILL $$",
        "echo 'error: failed to write target/x: No space left on device (os error 28)' >&2; exit 101",
    ] {
        let fixture = course_running(script);
        let run = fixture.xtask(&["check", "03", "lab"]);
        run.fails_with(3, &["机器"]);
        let run = fixture.xtask(&["compare", "03", "lab"]);
        run.fails_with(3, &["机器"]);
    }
    // A test's own failure is still red work.
    course_running("echo 'test adds ... FAILED'; exit 101")
        .xtask(&["check", "03", "lab"])
        .fails_with(1, &[]);
}

/// rustc, or the linker it runs, failing to write past `ulimit -f` says so
/// in cargo's JSON messages, not on cargo's stderr: on a complete lab that is
/// still the machine's failure (exit 3), never "does not compile".
#[test]
fn a_build_past_the_file_size_limit_is_the_machines_failure_not_the_code() {
    use std::os::unix::process::CommandExt;
    let fixture = common::tiny_course("", common::ANSWER, |_| {});
    fixture.xtask(&["practice", "01", "lab"]).success();
    let lab = fixture.root().join("lab");
    fs::write(lab.join("course/src/lib.rs"), common::ANSWER).unwrap();
    // 200 KiB stops rustc's own writes, 2 MiB the linker's.
    for limit in [200 << 10, 2 << 20] {
        let _ = fs::remove_dir_all(lab.join("target"));
        let mut check = Command::new(env!("CARGO_BIN_EXE_xtask"));
        check
            .args(["check", "01", "lab"])
            .current_dir(fixture.root());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            check.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let output = check.stdin(Stdio::null()).output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert_eq!(output.status.code(), Some(3), "{limit}: {stdout}{stderr}");
        assert!(
            stderr.contains("不在你的代码里") && stderr.contains("File too large"),
            "{stderr}"
        );
    }
    let _ = fs::remove_dir_all(lab.join("target"));
    fixture.xtask(&["check", "01", "lab"]).success();
}

#[test]
fn commit_subjects_reach_the_terminal_with_control_characters_escaped() {
    let fixture = Fixture::empty();
    fixture.write("Cargo.toml", "[workspace]\n");
    fixture.write("course/src/lib.rs", "// skeleton\n");
    fixture.commit("Skeleton \u{1b}[2J\u{1b}[31mred\rforged");
    fixture.write("course/tests/t.rs", "// focused\n");
    fixture.commit("course(01): a \u{1b}]0;title\u{7} b");
    fixture.write_manifest("01", &common::manifest("01", "course/tests/t.rs", &[]));
    let run = fixture.xtask(&["list"]);
    run.success();
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\r'),
        "{:?}",
        run.stdout
    );
    for shown in [
        r"\u{1b}[2J\u{1b}[31mred\rforged",
        r"a \u{1b}]0;title\u{7} b",
    ] {
        assert!(run.stdout.contains(shown), "{shown} in {:?}", run.stdout);
    }
    // JSON keeps the text itself (JSON escapes it).
    let json = fixture.xtask(&["list", "--json"]).json();
    assert_eq!(
        json[0]["target"]["subject"],
        "course(01): a \u{1b}]0;title\u{7} b"
    );

    // practice names its start by what it is, never by a commit subject.
    let run = fixture.xtask(&["practice", "01", "lab"]);
    run.success();
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
}

/// Writes its own pid and a grandchild's into `pids`, then spins.
const PROCESS_TREE: &str =
    "sh -c 'echo $$ >> pids; exec sleep 1000' & echo $$ >> pids; while :; do :; done";

fn pids(lab: &Path) -> Vec<i32> {
    fs::read_to_string(lab.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Starts `xtask check 03 lab` in `fixture` with `ignored` signals ignored
/// from the start (a shell's `trap '' …` survives exec).
fn check_with_ignored(fixture: &Fixture, ignored: &str) -> std::process::Child {
    Command::new("sh")
        .args(["-c", &format!("trap '' {ignored}; exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_xtask"))
        .args(["check", "03", "lab"])
        .current_dir(fixture.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Kills what a test left running.
fn kill_all(lab: &Path) {
    for pid in pids(lab) {
        // SAFETY: plain kill(2) of processes this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// A background job of a non-interactive shell (`cmd &`) starts with SIGINT
/// and SIGQUIT ignored; xtask still stops on them, ends its run's process
/// group and exits 128 + the signal.
#[test]
fn signals_ignored_at_start_still_stop_a_run() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGQUIT, 131)] {
        let fixture = course_running(PROCESS_TREE);
        let lab = fixture.root().join("lab");
        let mut child = check_with_ignored(&fixture, "INT QUIT");
        let started = wait_until(LONG, || pids(&lab).len() == 2);
        if started {
            common::send_signal(child.id(), signal);
        }
        let status = wait_at_most(&mut child, Duration::from_secs(10));
        let ended = wait_until(Duration::from_secs(5), || {
            pids(&lab).iter().all(|&pid| !common::is_running(pid))
        });
        kill_all(&lab);
        let stderr = stderr_of(&mut child);
        assert!(started, "the run never started: {stderr}");
        assert_eq!(
            status.and_then(|status| status.code()),
            Some(code),
            "signal {signal}: {stderr}"
        );
        assert!(
            ended,
            "signal {signal}: the run's processes were left running"
        );
    }
}

/// `nohup xtask …` starts with SIGHUP ignored: it stays ignored (the run
/// goes on), while SIGTERM still stops it.
#[test]
fn a_sighup_ignored_at_start_stays_ignored() {
    let fixture = course_running(PROCESS_TREE);
    let lab = fixture.root().join("lab");
    let mut child = check_with_ignored(&fixture, "HUP");
    let started = wait_until(LONG, || pids(&lab).len() == 2);
    if started {
        common::send_signal(child.id(), libc::SIGHUP);
    }
    // Still running a moment later: the run's own process answers for it.
    let survived = started
        && !wait_until(Duration::from_millis(500), || {
            child.try_wait().unwrap().is_some()
        });
    common::send_signal(child.id(), libc::SIGTERM);
    let status = wait_at_most(&mut child, Duration::from_secs(10));
    kill_all(&lab);
    let stderr = stderr_of(&mut child);
    assert!(started, "the run never started: {stderr}");
    assert!(survived, "SIGHUP ended a nohup run: {stderr}");
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(143),
        "{stderr}"
    );
}
