//! The library's error type: a one-line cause, an optional hint, the path it concerns, the
//! underlying error it came from, and a kind that the CLI maps to an exit code and to the
//! `--json` error document. Owns nothing else; it must never print.
//!
//! I/O errors have no blanket conversion: a `std::io::Error` alone does not say which file
//! failed ("Permission denied (os error 13)"), so every I/O call names its path with
//! [`IoResultExt::at`] (or [`Error::io`]).

use std::fmt;
use std::path::{Path, PathBuf};

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
    /// A file or folder could not be read or written; `path` names it. Exit 1.
    Io,
    /// git (the binary or gix) failed. Exit 1.
    Git,
    /// Anything else. Exit 1.
    Other,
}

impl ErrorKind {
    /// The name used in the `--json` error document.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::NotFound => "not-found",
            ErrorKind::Refused => "refused",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Io => "io",
            ErrorKind::Git => "git",
            ErrorKind::Other => "other",
        }
    }

    /// The process exit status for a command that failed with this kind.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Usage => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error with a one-line cause and an optional hint for the user.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    /// The file or folder the failure concerns, when there is one.
    pub path: Option<PathBuf>,
    source: Option<Source>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            hint: None,
            path: None,
            source: None,
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
    pub fn git(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Git, message)
    }
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Other, message)
    }

    /// An I/O failure on `path`: the message names the path, the source is kept.
    pub fn io(path: impl AsRef<Path>, err: std::io::Error) -> Self {
        let path = path.as_ref();
        let mut e = Self::new(ErrorKind::Io, format!("{}: {err}", path.display()));
        e.path = Some(path.to_path_buf());
        e.source = Some(Box::new(err));
        e
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Keep `source` as the underlying error (shown by `std::error::Error::source`).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The kind of the I/O error this one came from, when it came from one.
    pub fn source_io_kind(&self) -> Option<std::io::ErrorKind> {
        self.source
            .as_deref()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind)
    }

    /// Add context in front of the message, keeping kind, hint, path and source.
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

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::corrupt(format!("invalid JSON: {e}")).with_source(e)
    }
}

/// Naming the path of an I/O result: `fs::read(&p).at(&p)?`.
pub trait IoResultExt<T> {
    fn at(self, path: impl AsRef<Path>) -> Result<T>;
}

impl<T> IoResultExt<T> for std::io::Result<T> {
    fn at(self, path: impl AsRef<Path>) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
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
