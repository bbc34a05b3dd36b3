//! Running a chapter's focused command in a folder and capturing its output.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// A finished run.
#[derive(Debug, Clone)]
pub struct Captured {
    pub success: bool,
    /// stderr (cargo's compiler messages) followed by stdout (the test report).
    pub output: String,
    /// stdout alone, for commands that print data.
    pub stdout: String,
    pub timed_out: bool,
}

/// What to run and where.
pub struct Invocation<'a> {
    /// The manifest's `run` command.
    pub command: &'a [String],
    /// Extra arguments, e.g. a test-name filter.
    pub extra: &'a [String],
    pub dir: &'a Path,
    /// A cargo target folder shared between runs, so repeated builds are incremental.
    pub target_dir: Option<&'a Path>,
    pub timeout: Duration,
}

impl Invocation<'_> {
    /// The command line, for progress messages.
    pub fn display(&self) -> String {
        self.command
            .iter()
            .chain(self.extra)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the command to completion (or to its timeout).
    pub fn run(&self) -> Result<Captured> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or_else(|| Error::bad_input("the manifest's `run` command is empty"))?;
        let program: OsString = match (program.as_str(), std::env::var_os("CARGO")) {
            ("cargo", Some(cargo)) => cargo,
            _ => program.into(),
        };
        let mut command = Command::new(&program);
        command
            .args(args)
            .args(self.extra)
            .current_dir(self.dir)
            .env("CARGO_TERM_COLOR", "never")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(target_dir) = self.target_dir {
            command.env("CARGO_TARGET_DIR", target_dir);
        }
        let mut child = command.spawn().map_err(|error| {
            Error::bad_input(format!(
                "cannot run `{}` in {}: {error}",
                self.display(),
                self.dir.display()
            ))
        })?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let started = Instant::now();
        let mut timed_out = false;
        let status = loop {
            if let Some(status) = child
                .try_wait()
                .map_err(|error| Error::bad_input(error.to_string()))?
            {
                break status;
            }
            if started.elapsed() > self.timeout {
                timed_out = true;
                let _ = child.kill();
                break child
                    .wait()
                    .map_err(|error| Error::bad_input(error.to_string()))?;
            }
            thread::sleep(Duration::from_millis(20));
        };
        let stdout = stdout.join().unwrap_or_default();
        let mut output = stderr.join().unwrap_or_default();
        output.push_str(&stdout);
        Ok(Captured {
            success: status.success() && !timed_out,
            output,
            stdout,
            timed_out,
        })
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
