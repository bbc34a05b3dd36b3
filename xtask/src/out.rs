//! Writing to stdout without panicking.
//!
//! `println!` panics when stdout is closed (`xtask list | head`) or full
//! (`xtask list > /dev/full`): Rust ignores SIGPIPE, so the write fails and
//! the macro turns that into a panic (exit 101). Commands print through
//! [`outln!`] and [`out!`] instead, which return a [`Result`], and pass the
//! error on with `?`: a closed pipe ends the command quietly with exit 0,
//! any other failure is one line on stderr and exit 1 ([`Error::stdout`]).
//! [`catch_print_panics`] turns a `println!` that is still left somewhere
//! into the same error, so no command ever reports a panic for it.

use std::any::Any;
use std::fmt;
use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use crate::error::{Error, Result};

/// Like `println!`, but returns `Result<()>` instead of panicking.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_line(format_args!($($arg)*))
    };
}

/// Like `print!`, but returns `Result<()>` instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// Like `eprintln!` for progress and notes, but never panics: a closed or
/// full stderr loses the note, nothing else.
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::out::note(format_args!($($arg)*))
    };
}

pub(crate) use {noteln, out, outln};

/// Writes `value` to stdout as pretty JSON, the `--json` form of a report.
pub fn json(value: &impl serde::Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("reports serialize");
    write_line(format_args!("{text}"))
}

/// Writes `args` to stdout.
pub fn write(args: fmt::Arguments<'_>) -> Result<()> {
    io::stdout().lock().write_fmt(args).map_err(Error::stdout)
}

/// Writes `args` and a newline to stdout.
pub fn write_line(args: fmt::Arguments<'_>) -> Result<()> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"))
        .map_err(Error::stdout)
}

/// Flushes stdout (e.g. after [`out!`] without a newline).
pub fn flush() -> Result<()> {
    io::stdout().lock().flush().map_err(Error::stdout)
}

/// A line on stderr. A closed stderr is ignored: there is nowhere left to
/// report it.
pub fn note(args: fmt::Arguments<'_>) {
    let mut stderr = io::stderr().lock();
    let _ = stderr
        .write_fmt(args)
        .and_then(|()| stderr.write_all(b"\n"));
}

/// `word` as one shell word: unchanged when it is made of characters no
/// shell treats specially, else in single quotes (`my lab` → `'my lab'`,
/// `it's` → `'it'\''s'`).
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| !c.is_ascii() || c.is_ascii_alphanumeric() || "-_./+,:@%=".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `path` relative to `base` when it is below it, else absolute.
pub fn relative_or_absolute(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// `dir` relative to the current directory when it is below it, else absolute.
pub fn display_path(dir: &Path) -> String {
    let here = std::env::current_dir().unwrap_or_default();
    relative_or_absolute(dir, &here)
}

/// Runs `run`, turning a panic of `print!`/`println!` on a closed or full
/// stdout into the error [`Error::stdout`] gives (and keeping its panic
/// message off stderr). Every other panic is left as it is.
pub fn catch_print_panics<T>(run: impl FnOnce() -> Result<T>) -> Result<T> {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let failed_print = message(info.payload()).and_then(print_failure).is_some();
        if !failed_print {
            default(info);
        }
    }));
    match panic::catch_unwind(AssertUnwindSafe(run)) {
        Ok(result) => result,
        Err(payload) => match message(&*payload).and_then(print_failure) {
            Some(error) => Err(error),
            None => panic::resume_unwind(payload),
        },
    }
}

fn message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
}

/// The error for the panic message std's `print!` gives when stdout fails.
fn print_failure(message: &str) -> Option<Error> {
    let reason = message
        .strip_prefix("failed printing to stdout: ")
        .or_else(|| message.strip_prefix("failed printing to stderr: "))?;
    let broken_pipe = reason.ends_with(&format!("(os error {})", libc::EPIPE));
    Some(if broken_pipe {
        Error::stdout(io::ErrorKind::BrokenPipe.into())
    } else {
        Error::check_failed(format!("cannot write to standard output: {reason}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("lab"), "lab");
        assert_eq!(shell_word("../labs/第三章"), "../labs/第三章");
        assert_eq!(shell_word("my lab"), "'my lab'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word("a*"), "'a*'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn print_panics_become_errors() {
        let closed = print_failure("failed printing to stdout: Broken pipe (os error 32)");
        assert!(closed.is_some_and(|error| error.is_silent()));
        let full =
            print_failure("failed printing to stdout: No space left on device (os error 28)")
                .unwrap();
        assert_eq!(full.exit_code(), 1);
        assert!(print_failure("index out of bounds").is_none());
    }
}
