//! Writer locks: an exclusive `flock` per run (or per shared ref such as the backups chain)
//! held while a writer builds and publishes. The kernel drops it when the process dies, so a
//! killed writer never leaves a stale lock behind — and while we hold it, a leftover
//! `<ref>.lock` file of one of that run's refs can only come from a killed writer.
//!
//! The lock serializes writers of one run on one machine; the compare-and-swap in `publish`
//! stays the authority (other machines, other tools).

use super::Store;
use crate::error::{Error, IoResultExt, Result};
use std::fs::{File, OpenOptions};
use std::path::PathBuf;

/// A held writer lock; released on drop (or when the process exits).
pub struct RunLock {
    _file: File,
    pub path: PathBuf,
}

impl Store {
    /// Take the writer lock named `name` (a validated run id, or a fixed name like `backups`),
    /// waiting for other writers.
    pub fn writer_lock(&self, name: &str) -> Result<RunLock> {
        let path = self.private().writer_lock(name);
        super::create_parent(&path)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .at(&path)?;
        file.lock()
            .map_err(|e| Error::conflict(format!("could not lock {}: {e}", path.display())))?;
        Ok(RunLock { _file: file, path })
    }

    /// Remove `<ref>.lock` files left by a killed writer for the given loose refs. Call only
    /// while holding the writer lock that covers those refs.
    pub(crate) fn remove_stale_ref_locks(&self, refs: &[String]) -> usize {
        let mut removed = 0;
        for name in refs {
            let path = self.common_dir().join(format!("{name}.lock"));
            if path.is_file() && std::fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}
