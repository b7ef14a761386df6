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

/// Whether process `pid` certainly no longer exists (only known where `/proc` is mounted).
pub(crate) fn process_is_gone(pid: u32) -> bool {
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}
