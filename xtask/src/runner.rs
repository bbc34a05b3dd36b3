//! Running a command in a folder and capturing its output, in a process
//! group of its own that is killed when the run ends.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use crate::error::{self, Error, Result};
use crate::learner_text as say;
use crate::signals;

#[derive(Debug, Clone)]
pub struct Captured {
    pub success: bool,
    /// stderr then stdout, each bounded (see [`Invocation::run`]).
    pub output: String,
    pub stdout: String,
    pub timed_out: bool,
}

impl Captured {
    /// The stderr part of [`Captured::output`].
    pub fn stderr(&self) -> &str {
        &self.output[..self.output.len() - self.stdout.len()]
    }
}

pub struct Invocation<'a> {
    pub command: &'a [String],
    pub dir: &'a Path,
    /// The cargo target folder of this run, never the caller's.
    pub target_dir: &'a Path,
    pub timeout: Duration,
}

/// The time limit of a run when none is given (`--timeout`).
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(DEFAULT_TIMEOUT_SECS);

/// How often the wait loop looks at the child, the clock and the signals.
const POLL: Duration = Duration::from_millis(20);
/// How long to wait for the output pipes to close once the group is killed:
/// only a process that left the group (`setsid`) can still hold them.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How much of each output stream is kept at its start, and again at its end.
const KEEP: usize = 4 << 20;
/// How long a group [`run_live`] passed a signal on to may take to end.
const STOP_GRACE: Duration = Duration::from_secs(5);

enum Ended {
    Exited,
    TimedOut,
    Interrupted(i32),
}

impl Invocation<'_> {
    /// The command line, for progress messages.
    pub fn display(&self) -> String {
        self.command.join(" ")
    }

    /// Runs the command to completion, to its timeout or to a signal
    /// ([`Error::interrupted`]); each stream is bounded ([`Kept`]).
    pub fn run(&self) -> Result<Captured> {
        let _section = signals::defer();
        signals::check()?;
        let mut child = self.spawn()?;
        let group = Group(Pid::from_child(&child));
        let stdout = Drain::start(child.stdout.take().expect("stdout is piped"));
        let stderr = Drain::start(child.stderr.take().expect("stderr is piped"));
        let ended = wait(&child, self.timeout, true);
        drop(group);
        let drained_by = Instant::now() + DRAIN_GRACE;
        let waited = error::io(format!("cannot wait for `{}`", self.display()));
        let status = child.wait().map_err(waited)?;
        let stdout = stdout.finish(drained_by);
        let mut output = stderr.finish(drained_by);
        let timed_out = match ended? {
            Ended::Exited => false,
            Ended::TimedOut => true,
            Ended::Interrupted(signal) => return Err(Error::interrupted(signal)),
        };
        if !status.success()
            && !timed_out
            && let Some(why) = environment_failure(status, &output)
        {
            return Err(Error::environment(say::child_environment_failure(
                &self.display(),
                &self.dir.display().to_string(),
                &why,
            )));
        }
        output.push_str(&stdout);
        Ok(Captured {
            success: status.success() && !timed_out,
            output,
            stdout,
            timed_out,
        })
    }

    fn spawn(&self) -> Result<Child> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or_else(|| Error::bad_input("the manifest's `run` command is empty"))?;
        let program: OsString = match (program.as_str(), std::env::var_os("CARGO")) {
            ("cargo", Some(cargo)) => cargo,
            _ => program.into(),
        };
        let target_dir = std::path::absolute(self.target_dir).map_err(error::io(format!(
            "cannot resolve the target folder {}",
            self.target_dir.display()
        )))?;
        let mut command = Command::new(&program);
        command
            .args(args)
            .current_dir(self.dir)
            .env("CARGO_TERM_COLOR", "never")
            .env("CARGO_TARGET_DIR", &target_dir)
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        command.spawn().map_err(error::io_said(|error| {
            let dir = self.dir.display().to_string();
            let why = if !self.dir.is_dir() {
                say::run_folder_gone(&dir)
            } else if error.kind() == io::ErrorKind::NotFound {
                say::program_not_found(&program.to_string_lossy())
            } else {
                error.to_string()
            };
            say::cannot_run(&self.display(), &dir, &why)
        }))
    }
}

/// Runs `command` to its end, output shown live, no time limit; a signal is
/// passed on to its group (SIGQUIT as SIGTERM), killed after [`STOP_GRACE`].
pub fn run_live(command: &mut Command, what: &str) -> Result<ExitStatus> {
    let _section = signals::defer();
    signals::check()?;
    let mut child = command
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|error| Error::bad_input(format!("cannot run {what}: {error}")))?;
    let group = Group(Pid::from_child(&child));
    let ended = wait(&child, Duration::MAX, true);
    if let Ok(Ended::Interrupted(signal)) = ended {
        let signal = Signal::from_named_raw(signal).filter(|signal| *signal != Signal::QUIT);
        let _ = rustix::process::kill_process_group(group.0, signal.unwrap_or(Signal::TERM));
        let _ = wait(&child, STOP_GRACE, false);
    }
    drop(group);
    let status = child
        .wait()
        .map_err(error::io(format!("cannot wait for {what}")))?;
    if let Ended::Interrupted(signal) = ended? {
        return Err(Error::interrupted(signal));
    }
    match environment_failure(status, "") {
        Some(why) => Err(Error::environment(format!("{what} failed: {why}"))),
        None => Ok(status),
    }
}

/// Why a child failed because of the machine: a signal no user sent, or a
/// line of its `stderr` naming an OS failure.
pub fn environment_failure(status: ExitStatus, stderr: &str) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal().filter(|signal| *signal != libc::SIGINT) {
        let name = match signal {
            libc::SIGKILL => "SIGKILL".to_string(),
            libc::SIGXFSZ => "SIGXFSZ".to_string(),
            libc::SIGXCPU => "SIGXCPU".to_string(),
            libc::SIGTERM => "SIGTERM".to_string(),
            libc::SIGSEGV => "SIGSEGV".to_string(),
            libc::SIGABRT => "SIGABRT".to_string(),
            other => format!("signal {other}"),
        };
        return Some(say::child_killed(&name));
    }
    stderr
        .lines()
        .find(|line| names_machine_failure(line))
        .map(|line| line.trim().to_string())
}

/// True when `text` names a failure of the operating system.
pub fn names_machine_failure(text: &str) -> bool {
    const MACHINE: [&str; 7] = [
        "No space left on device",
        "Disk quota exceeded",
        "File too large",
        "Read-only file system",
        "Too many open files",
        "Permission denied",
        "Operation not permitted",
    ];
    MACHINE.iter().any(|phrase| text.contains(phrase))
}

/// Waits for the child's exit, the timeout or (`heed_signals`) a signal,
/// without reaping it (`WNOWAIT`), so its group id stays ours until killed.
fn wait(child: &Child, timeout: Duration, heed_signals: bool) -> Result<Ended> {
    let started = Instant::now();
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    // Doubling from 100 µs: a quick command is not rounded up to a POLL.
    let mut pause = Duration::from_micros(100);
    loop {
        match rustix::process::waitid(WaitId::Pid(Pid::from_child(child)), options) {
            Ok(Some(_)) => return Ok(Ended::Exited),
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(error::io("cannot wait for a child")(errno.into())),
        }
        if let Some(signal) = signals::received().filter(|_| heed_signals) {
            return Ok(Ended::Interrupted(signal));
        }
        if started.elapsed() >= timeout {
            return Ok(Ended::TimedOut);
        }
        thread::sleep(pause);
        pause = (pause * 2).min(POLL);
    }
}

/// The process group a child leads, killed (SIGKILL) when this is dropped:
/// drop it before the leader is reaped, while its id still names the group.
struct Group(Pid);

impl Drop for Group {
    fn drop(&mut self) {
        // ESRCH (already gone) is fine.
        let _ = rustix::process::kill_process_group(self.0, Signal::KILL);
    }
}

/// Reads a pipe to its end on a thread of its own, into a [`Kept`].
struct Drain {
    kept: Arc<Mutex<Kept>>,
    done: mpsc::Receiver<()>,
}

impl Drain {
    fn start(mut pipe: impl Read + Send + 'static) -> Self {
        let kept = Arc::new(Mutex::new(Kept::default()));
        let (sender, done) = mpsc::channel();
        let sink = Arc::clone(&kept);
        thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => lock(&sink).push(&chunk[..n]),
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = sender.send(());
        });
        Drain { kept, done }
    }

    /// What was kept, once the pipe closed or at `deadline`.
    fn finish(self, deadline: Instant) -> String {
        let _ = self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        std::mem::take(&mut *lock(&self.kept)).into_text()
    }
}

fn lock(kept: &Mutex<Kept>) -> std::sync::MutexGuard<'_, Kept> {
    kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The first and last [`KEEP`] bytes of a stream, plus libtest's result
/// lines between them, so a flood of output drops no test from the count.
#[derive(Default)]
struct Kept {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// A u64: an endless stream outgrows a 32-bit usize.
    left_out: u64,
    /// How many bytes were read past the head.
    past_head: u64,
    /// The start (past the head) and first bytes of the line being read.
    line: (u64, Vec<u8>),
    /// libtest's result lines past the head, with their starts (≤ [`KEEP`] bytes).
    results: Vec<(u64, Vec<u8>)>,
    results_size: usize,
}

/// The longest line read for libtest's result lines.
const RESULT_LINE: usize = 4096;

impl Kept {
    /// Keeps `bytes` (a read's chunk, much smaller than [`KEEP`]).
    fn push(&mut self, bytes: &[u8]) {
        let (head, rest) = bytes.split_at(bytes.len().min(KEEP - self.head.len()));
        self.head.extend_from_slice(head);
        self.tail.extend(rest);
        let over = self.tail.len().saturating_sub(KEEP);
        self.tail.drain(..over);
        self.left_out += over as u64;
        for piece in rest.split_inclusive(|&byte| byte == b'\n') {
            let line = &mut self.line.1;
            let room = RESULT_LINE.saturating_sub(line.len());
            line.extend_from_slice(&piece[..piece.len().min(room)]);
            self.past_head += piece.len() as u64;
            if piece.ends_with(b"\n") {
                let line = std::mem::replace(&mut self.line, (self.past_head, Vec::new()));
                let result = line.1.starts_with(b"test ") || line.1.starts_with(b"running ");
                // A flood of one line is kept once.
                let again = self.results.last().is_some_and(|last| last.1 == line.1);
                if result && !again && line.1.len() < RESULT_LINE && self.results_size < KEEP {
                    self.results_size += line.1.len();
                    self.results.push(line);
                }
            }
        }
    }

    /// The text kept: a gap falls between whole lines, marked by a line of
    /// its own and followed by the result lines from it.
    fn into_text(mut self) -> String {
        let tail = self.tail.make_contiguous();
        if self.left_out == 0 {
            self.head.extend_from_slice(tail);
            return String::from_utf8_lossy(&self.head).into_owned();
        }
        let head_end = self
            .head
            .iter()
            .rposition(|&byte| byte == b'\n')
            .map_or(self.head.len(), |newline| newline + 1);
        let tail_start = tail
            .iter()
            .position(|&byte| byte == b'\n')
            .map_or(0, |newline| newline + 1);
        let left_out = self.left_out + (self.head.len() - head_end + tail_start) as u64;
        let mut text = String::from_utf8_lossy(&self.head[..head_end]).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&say::output_left_out(left_out));
        text.push('\n');
        let gap_end = self.past_head - (tail.len() - tail_start) as u64;
        for (_, line) in self.results.iter().filter(|(start, _)| *start < gap_end) {
            text.push_str(&String::from_utf8_lossy(line));
        }
        text.push_str(&String::from_utf8_lossy(&tail[tail_start..]));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, dir: &Path, timeout: Duration) -> Result<Captured> {
        let command = ["sh".to_string(), "-c".to_string(), script.to_string()];
        Invocation {
            command: &command,
            dir,
            target_dir: &dir.join(crate::repo::TARGET_DIR),
            timeout,
        }
        .run()
    }

    #[test]
    fn output_keeps_stdout_apart_and_stderr_first() {
        let dir = tempfile::tempdir().unwrap();
        let run = sh(
            "echo out; echo err >&2",
            dir.path(),
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(run.success && !run.timed_out);
        assert_eq!(run.stdout, "out\n");
        assert_eq!(run.output, "err\nout\n");
    }

    #[test]
    fn a_background_process_holding_the_pipes_does_not_hang_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let run = sh(
            "sleep 1000 & echo started",
            dir.path(),
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(run.success);
        assert_eq!(run.stdout, "started\n");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn endless_output_is_kept_to_its_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let run = sh(
            "yes 'test adds ... FAILED' | head -c 67108864; echo; echo 'test doubles ... ok'; \
             yes 'noise' | head -c 67108864; echo; echo 'the last line'; \
             yes 'warning: noise' | head -c 67108864 >&2",
            dir.path(),
            Duration::from_secs(60),
        )
        .unwrap();
        assert!(run.success);
        let bound = 2 * KEEP + 200;
        assert!(
            run.stdout.len() <= bound,
            "stdout: {} bytes",
            run.stdout.len()
        );
        assert!(
            run.output.len() <= 2 * bound,
            "output: {} bytes",
            run.output.len()
        );
        assert!(run.stdout.starts_with("test adds ... FAILED\n"));
        assert!(
            run.stdout.ends_with("\nthe last line\n"),
            "the tail is kept"
        );
        assert!(run.output.starts_with("warning: noise\n"));
        assert!(run.output.ends_with("\nthe last line\n"));
        // Whole lines on either side of the gap, which says what it left out
        // and is followed by the result lines it held, a flood of one once.
        let gap = run
            .stdout
            .lines()
            .find(|line| line.contains("left out"))
            .expect("a line marks the gap");
        let results = "test adds ... FAILED\ntest doubles ... ok\n";
        let after_gap = format!("{gap}\n{results}noise\n");
        assert!(run.stdout.contains(&after_gap), "{after_gap:?}");
        let left_out: usize = gap
            .split_whitespace()
            .find_map(|word| word.parse().ok())
            .expect("the gap says how many bytes");
        let kept = run.stdout.len() - gap.len() - 1 - results.len();
        let total = (128 << 20) + "\ntest doubles ... ok\n\nthe last line\n".len();
        assert_eq!(left_out + kept, total);
        for line in run.stdout.lines().filter(|line| *line != gap) {
            assert!(
                ["test adds ... FAILED", "noise"]
                    .iter()
                    .any(|flood| flood.starts_with(line))
                    || ["the last line", "test doubles ... ok"].contains(&line),
                "{line:?}"
            );
        }
    }

    #[test]
    fn a_timeout_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let run = sh(
            "while :; do :; done",
            dir.path(),
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(run.timed_out && !run.success);
    }
}
