//! Writing to stdout without panicking: [`outln!`] and [`out!`] remember the
//! first failure and write nothing more; the command still reaches its exit
//! status, and `main` says on stderr that the report was lost.

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

/// True once a write to stdout failed.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.get().is_some()
}

/// True when stdout is a pipe whose reader has gone (`check --watch | head -1`).
pub fn stdout_reader_gone() -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    let stdout = io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::OUT)];
    poll(&mut fds, Some(&rustix::event::Timespec::default())).is_ok()
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// The first failed write to stdout, unless its reader only closed the pipe.
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

/// Flushes stdout and says once on stderr when the report was lost.
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

/// `word` as one shell word, single-quoted unless plain.
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

/// `words` as one command line that a shell splits back into them.
pub fn shell_line(words: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let words: Vec<String> = (words.into_iter())
        .map(|word| shell_word(word.as_ref()))
        .collect();
    words.join(" ")
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

/// `text` with control and reordering characters escaped as Rust writes
/// them, so text from a commit or manifest cannot drive the terminal.
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

/// A control character or an invisible one that reorders text.
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
