//! What git's lock files and our claims on them have in common: the name of a lock
//! (`<file>.lock`) and whether the process that left one is certainly gone. Used by the ref
//! files (`reffiles`) and the user's index (`indexlock`).
//!
//! Must never decide on its own that a lock may be removed: it only answers questions.

use std::path::{Path, PathBuf};

/// `<path>.lock`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Whether process `pid` certainly no longer exists (the platform's answer:
/// [`agent_rewind_core::platform::process`]).
pub(crate) use agent_rewind_core::platform::process::process_is_gone;
