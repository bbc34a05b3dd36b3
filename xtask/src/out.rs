//! Writing to stdout without panicking, and without losing the verdict.
//!
//! `println!` panics (exit 101) when stdout is closed or full. [`outln!`]
//! and [`out!`] remember the first failure, write nothing more, and the
//! command goes on to its verdict, its exit status; `main` then says in one
//! line on stderr that a full stdout lost the report.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Like `println!`, but never panics and never ends the command.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write_line(format_args!($($arg)*))
    };
}

/// Like `print!`, as [`outln!`] is like `println!`.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// Like `eprintln!`, but a closed or full stderr loses the note, no panic.
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::out::note(format_args!($($arg)*))
    };
}

pub(crate) use {noteln, out, outln};

/// Writes `value` to stdout as pretty JSON (`--json`).
pub fn json(value: &impl serde::Serialize) {
    let text = serde_json::to_string_pretty(value).expect("reports serialize");
    write_line(format_args!("{text}"));
}

/// The first failure to write to stdout; once set, nothing more is written.
static STDOUT_FAILED: OnceLock<io::Error> = OnceLock::new();

fn to_stdout(write: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<()>) {
    if STDOUT_FAILED.get().is_none()
        && let Err(error) = write(&mut io::stdout().lock())
    {
        let _ = STDOUT_FAILED.set(error);
    }
}

/// True once a write to stdout failed: for a loop that only prints
/// (`check --watch`) to stop.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.get().is_some()
}

/// True when stdout is a pipe whose reader has gone (`check --watch | head
/// -1`): a loop that only prints stops without waiting for a write to fail.
pub fn stdout_reader_gone() -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    let stdout = io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::OUT)];
    poll(&mut fds, Some(&rustix::event::Timespec::default())).is_ok()
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// The first failed write to stdout, unless its reader only closed the
/// pipe: for a command that must say what its lost report would have told.
pub fn stdout_lost() -> Option<&'static io::Error> {
    STDOUT_FAILED
        .get()
        .filter(|error| error.kind() != io::ErrorKind::BrokenPipe)
}

pub fn write(args: fmt::Arguments<'_>) {
    to_stdout(|stdout| stdout.write_fmt(args));
}

pub fn write_line(args: fmt::Arguments<'_>) {
    write(format_args!("{args}\n"));
}

pub fn flush() {
    to_stdout(|stdout| stdout.flush());
}

/// Flushes stdout and, when a full or broken stdout lost the report, says
/// so in one line on stderr, unless the command said it already
/// ([`stdout_loss_reported`]). `main` calls it once, whatever the verdict.
pub fn report_lost_output() {
    flush();
    if let Some(error) = stdout_lost()
        && !LOSS_REPORTED.load(Ordering::Relaxed)
    {
        note(format_args!(
            "{}{}",
            crate::learner_text::basic::note_prefix(),
            crate::learner_text::basic::report_lost(&error.to_string())
        ));
    }
}

static LOSS_REPORTED: AtomicBool = AtomicBool::new(false);

/// Tells [`report_lost_output`] the command already said its report was lost.
pub fn stdout_loss_reported() {
    LOSS_REPORTED.store(true, Ordering::Relaxed);
}

/// A line on stderr; a closed stderr is ignored.
pub fn note(args: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr(), "{args}");
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

/// `text` with every control character (and every invisible character that
/// reorders text) escaped as Rust writes it (`\n`, `\u{1b}`, `\u{202e}`),
/// for text from a commit or a manifest shown on a terminal: a subject
/// cannot move the cursor, recolour the screen or forge a line of the report.
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let escape = |c: char| match is_hidden(c) {
        true => c.escape_debug().to_string(),
        false => c.to_string(),
    };
    Cow::Owned(text.chars().map(escape).collect())
}

/// A character [`escape_control`] escapes: a control character or an
/// invisible one that reorders text.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}')
}

/// [`escape_control`] line by line: a multi-line report keeps its breaks.
pub fn escape_control_lines(text: &str) -> String {
    text.split('\n')
        .map(escape_control)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_line_by_line() {
        assert_eq!(
            escape_control_lines("a\u{1b}[2Jb\r\nc\td"),
            "a\\u{1b}[2Jb\\r\nc\\td"
        );
    }

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
    fn control_characters_are_escaped_and_plain_text_is_kept() {
        assert!(matches!(
            escape_control("course(03): 保存 a b"),
            Cow::Borrowed(_)
        ));
        assert_eq!(escape_control("a\nb"), r"a\nb");
        assert_eq!(escape_control("\u{1b}[2Jgone"), r"\u{1b}[2Jgone");
        assert_eq!(escape_control("tab\there\r"), r"tab\there\r");
        assert_eq!(escape_control("x\u{202e}y\u{7f}"), r"x\u{202e}y\u{7f}");
    }
}
