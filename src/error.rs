//! The library's error type: a one-line cause, an optional hint, and a kind that the CLI maps
//! to an exit code. Owns nothing else; it must never print.

use std::fmt;

/// What kind of failure this is; decides the exit code and lets callers branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The caller gave something invalid (a name, a flag value, a file). Exit 2.
    Usage,
    /// Something addressed does not exist (run, checkpoint, step). Exit 1.
    NotFound,
    /// The repository is in a state we refuse to work in (bare, conflicted, dirty...). Exit 1.
    Refused,
    /// Stored data could not be read (malformed note, foreign commit). Exit 1.
    Corrupt,
    /// Another writer won every retry, or a lock could not be taken. Exit 1.
    Conflict,
    /// Anything else (I/O, git failures). Exit 1.
    Other,
}

/// An error with a one-line cause and an optional hint for the user.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            hint: None,
        }
    }
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Refused, message)
    }
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Corrupt, message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Other, message)
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    /// Add context in front of the message, keeping kind and hint.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// gix errors become `Other`, flattened to one line; conflicts keep their classification.
impl From<gix::Error> for Error {
    fn from(e: gix::Error) -> Self {
        let kind = if e.is_conflict() || e.is_retryable() {
            ErrorKind::Conflict
        } else {
            ErrorKind::Other
        };
        Error::new(kind, one_line(&format!("{e}")))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::other(e.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::corrupt(format!("invalid JSON: {e}"))
    }
}

/// Collapse a multi-line message into one line.
pub fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ")
}

/// Shorthand for `Err(Error::usage(..))` etc. in `?`-heavy code.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::$kind(format!($($arg)*)))
    };
}
