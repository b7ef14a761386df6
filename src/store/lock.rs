//! Writer locks: an exclusive `flock` per run (or per shared ref such as the backups chain)
//! held while a writer builds and publishes. The kernel drops it when the process dies, so a
//! killed writer never leaves a stale lock behind. A writer waits a bounded time for it.
//!
//! The lock serializes writers of one run on one machine; the compare-and-swap in `publish`
//! stays the authority (other machines, other tools).

use super::Store;
use crate::error::{Error, IoResultExt, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How long a writer waits for another writer of the same run, in ms; 0 (the default) waits
/// in the kernel for as long as it takes: the holder is a live process (the kernel drops the
/// lock of a dead one) making progress, and a blocking wait is served in turn where polling
/// can starve behind a stream of writers. Hooks set a bound (a commit is never held long).
static WRITER_WAIT_MS: AtomicU64 = AtomicU64::new(0);

/// Wait at most `d` for a writer lock in this process (hooks: a commit is never held long).
pub fn set_writer_wait(d: std::time::Duration) {
    WRITER_WAIT_MS.store(d.as_millis() as u64, Ordering::Relaxed);
}

/// A held writer lock; released on drop (or when the process exits).
pub struct RunLock {
    _file: File,
    pub path: PathBuf,
}

/// Open (creating it and its folder) the file at `path` that a `flock` is taken on, for
/// reading and writing, keeping what it holds.
pub fn open_lock_file(path: &Path) -> Result<File> {
    super::create_parent(path)?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .at(path)
}

impl Store {
    /// Take the writer lock named `name` (a validated run id, or a fixed name like `backups`),
    /// waiting for other writers.
    pub fn writer_lock(&self, name: &str) -> Result<RunLock> {
        let path = self.private().writer_lock(name);
        let file = open_lock_file(&path)?;
        let wait_ms = WRITER_WAIT_MS.load(Ordering::Relaxed);
        if wait_ms == 0 {
            file.lock()
                .map_err(|e| Error::conflict(format!("could not lock {}: {e}", path.display())))?;
            return Ok(RunLock { _file: file, path });
        }
        let wait = std::time::Duration::from_millis(wait_ms);
        let deadline = std::time::Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(Error::conflict(format!(
                        "another writer has held {} for over {} ms",
                        path.display(),
                        wait.as_millis()
                    ))
                    .with_hint(
                        "a process of this tool is still writing (a process that dies \
                         releases the lock by itself); try again when it is done",
                    ));
                }
                Err(TryLockError::Error(e)) => {
                    return Err(Error::io(&path, e));
                }
            }
        }
        Ok(RunLock { _file: file, path })
    }
}
