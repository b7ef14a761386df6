//! gix's errors as ours: `Git`, flattened to one line; conflicts keep their classification.
//! Core's error type knows nothing of gix, so the conversion lives with gix: here, in the
//! lowest crate that names it, and the store uses the same one.

use agent_rewind_core::error::{Error, ErrorKind, one_line};

/// A gix error as ours.
pub fn from_gix(e: gix::Error) -> Error {
    let kind = if e.is_conflict() || e.is_retryable() {
        ErrorKind::Conflict
    } else {
        ErrorKind::Git
    };
    Error::new(kind, one_line(&format!("{e}"))).with_source(e)
}
