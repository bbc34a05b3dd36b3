//! Errors that end a command, each with the exit code it maps to.

use std::fmt;

/// A failed command's message and exit code: 1 a check failed, 2 bad
/// input, 3 the machine failed, 128 + n a signal.
#[derive(Debug)]
pub struct Error {
    code: u8,
    message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    /// A failed check: exit code 1.
    pub fn check_failed(message: impl Into<String>) -> Self {
        Error::new(1, message)
    }

    /// Bad input: exit code 2.
    pub fn bad_input(message: impl Into<String>) -> Self {
        Error::new(2, message)
    }

    /// The environment failed (disk, permissions): exit code 3.
    pub fn environment(message: impl Into<String>) -> Self {
        Error::new(3, message)
    }

    /// Stopped by signal `signal`: exit code 128 + signal, as a shell reports it.
    pub fn interrupted(signal: i32) -> Self {
        let code = u8::try_from(128 + signal).unwrap_or(u8::MAX);
        Error::new(code, crate::learner_text::basic::interrupted(signal))
    }

    pub fn exit_code(&self) -> u8 {
        self.code
    }

    /// Prefixes the message with what was being done.
    pub fn context(self, what: impl fmt::Display) -> Self {
        Error::new(self.code, format!("{what}: {}", self.message))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Git errors, naming the operation; an error of the operating system under
/// libgit2 (permissions, a full disk) is the environment's (exit 3).
pub fn git(what: impl fmt::Display) -> impl FnOnce(git2::Error) -> Error {
    move |error| {
        let code = if error.class() == git2::ErrorClass::Os {
            3
        } else {
            2
        };
        Error::new(code, format!("{what}: {}", error.message()))
    }
}

/// I/O errors, naming the path involved: [`io_said`] with `what: error`.
pub fn io(what: impl fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    io_said(move |error| format!("{what}: {error}"))
}

/// I/O errors: a full disk, a denied permission or a read-only file system
/// is the environment's (exit 3), anything else bad input (exit 2).
pub fn io_said(
    message: impl FnOnce(&std::io::Error) -> String,
) -> impl FnOnce(std::io::Error) -> Error {
    move |error| Error::new(if is_environment(&error) { 3 } else { 2 }, message(&error))
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
