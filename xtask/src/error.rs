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
    /// Exit 3: the machine failed the command (disk full, permission denied,
    /// out of file handles), not the input.
    Environment,
    /// Exit 128 + the signal: SIGINT or SIGTERM arrived; the command stopped
    /// what it ran and cleaned up on its way out.
    Interrupted(i32),
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

    /// The environment failed (disk, permissions): exit code 3.
    pub fn environment(message: impl Into<String>) -> Self {
        Error {
            kind: Kind::Environment,
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

    /// Stopped by signal `signal` (SIGINT or SIGTERM): exit code 128 + signal.
    pub fn interrupted(signal: i32) -> Self {
        Error {
            kind: Kind::Interrupted(signal),
            message: crate::learner_text::basic::interrupted(signal),
        }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            Kind::CheckFailed => 1,
            Kind::BadInput => 2,
            Kind::Environment => 3,
            Kind::Interrupted(signal) => signal_exit_code(signal),
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
/// An error of the operating system under libgit2 (a file it could not
/// write: permissions, a full disk) is the environment's (exit 3).
pub fn git(what: impl fmt::Display) -> impl FnOnce(git2::Error) -> Error {
    move |error| {
        let message = format!("{what}: {}", error.message());
        if error.class() == git2::ErrorClass::Os {
            Error::environment(message)
        } else {
            Error::bad_input(message)
        }
    }
}

/// I/O errors, naming the path involved. A full disk, a denied permission or
/// a read-only file system is the environment's failure (exit 3); anything
/// else is taken as bad input (exit 2: a path that is not what it should be).
pub fn io(what: impl fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    move |error| {
        let message = format!("{what}: {error}");
        if is_environment(&error) {
            Error::environment(message)
        } else {
            Error::bad_input(message)
        }
    }
}

/// [`io`] with a message of its own: `message` says, from the error, what
/// failed and what to do.
pub fn io_said(
    message: impl FnOnce(&std::io::Error) -> String,
) -> impl FnOnce(std::io::Error) -> Error {
    move |error| {
        let message = message(&error);
        if is_environment(&error) {
            Error::environment(message)
        } else {
            Error::bad_input(message)
        }
    }
}

/// True for I/O failures that come from the machine, not from the input.
pub fn is_environment(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::StorageFull
            | ErrorKind::PermissionDenied
            | ErrorKind::ReadOnlyFilesystem
            | ErrorKind::QuotaExceeded
            | ErrorKind::FileTooLarge
            | ErrorKind::OutOfMemory
    ) || matches!(
        rustix::io::Errno::from_io_error(error),
        Some(rustix::io::Errno::MFILE | rustix::io::Errno::NFILE)
    )
}

/// The exit code for a command ended by `signal`: 128 + the signal.
fn signal_exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_os_failure_under_git_is_the_environments() {
        let os = git2::Error::new(
            git2::ErrorCode::GenericError,
            git2::ErrorClass::Os,
            "Permission denied",
        );
        assert_eq!(git("cannot write the ref")(os).exit_code(), 3);
        let other = git2::Error::new(
            git2::ErrorCode::NotFound,
            git2::ErrorClass::Reference,
            "no such ref",
        );
        assert_eq!(git("cannot read the ref")(other).exit_code(), 2);
    }
}
