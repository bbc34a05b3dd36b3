//! Errors that end a command, each with the exit code it maps to.

use std::fmt;

/// What a failed command reports: a message that says what was wrong and
/// what to do, and whether the input was bad (exit 2) or a check failed (exit 1).
#[derive(Debug)]
pub struct Error {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Exit 1: the command ran and something it checks is wrong.
    CheckFailed,
    /// Exit 2: the input (arguments, repository, manifest) can't be used.
    BadInput,
}

/// The result of every fallible step of a command.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Bad input: exit code 2.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Error {
            kind: Kind::BadInput,
            message: message.into(),
        }
    }

    /// A failed check: exit code 1.
    pub fn check_failed(message: impl Into<String>) -> Self {
        Error {
            kind: Kind::CheckFailed,
            message: message.into(),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            Kind::CheckFailed => 1,
            Kind::BadInput => 2,
        }
    }

    /// Prefixes the message with what was being done.
    pub fn context(self, what: impl fmt::Display) -> Self {
        Error {
            kind: self.kind,
            message: format!("{what}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Git errors the tool can't recover from; the message says which operation failed.
pub fn git(what: impl fmt::Display) -> impl FnOnce(git2::Error) -> Error {
    move |error| Error::bad_input(format!("{what}: {}", error.message()))
}

/// I/O errors, naming the path involved.
pub fn io(what: impl fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    move |error| Error::bad_input(format!("{what}: {error}"))
}
