//! Writer locks: an exclusive `flock` per run (or per shared ref such as the backups chain)
//! held while a writer builds and publishes. The kernel drops it when the process dies, so a
//! killed writer never leaves a stale lock behind. A writer waits a bounded time for it.
//!
//! The post-commit lock is held by a post-commit checkpoint recorded in the background
//! (`hooks::background`) until it is written; writers and the CLI wait for it first.
//!
//! The lock serializes writers of one run on one machine; the compare-and-swap in `publish`
//! stays the authority (other machines, other tools).

use crate::repository::Store;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The store's our flocks: writers, the background post-commit checkpoint.
#[derive(Clone, Copy)]
pub struct Locks<'s> {
    pub(crate) store: &'s Store,
}

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
    agent_rewind_core::private::create_parent(path)?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .at(path)
}

/// Open the lock file at `path` and take its flock if no one holds it, without waiting.
/// `None`: another holds it.
pub fn try_lock_file(path: &Path) -> Result<Option<File>> {
    let file = open_lock_file(path)?;
    Ok(lock_within(&file, false, Duration::ZERO)
        .at(path)?
        .then_some(file))
}

/// How long a command waits for a post-commit checkpoint being recorded in the background
/// before it goes on without it (hooks wait their writer wait instead).
pub const POST_COMMIT_WAIT: Duration = Duration::from_secs(10);

/// What [`Store::wait_for_post_commit`] found.
pub enum PostCommitWait {
    /// None is being recorded; while the lock file is held (shared), none can start, so the
    /// files its process leaves can be read as they are.
    Done(Option<File>),
    /// One still was after the wait.
    StillRunning,
}

/// Set in the process that records a post-commit checkpoint in the background
/// (`hooks::background`): it holds the post-commit lock itself, so it must not wait for it.
static HOLDS_POST_COMMIT_LOCK: AtomicBool = AtomicBool::new(false);

/// Mark this process as the holder of its worktree's post-commit lock (inherited from the
/// hook that started it).
pub fn hold_post_commit_lock() {
    HOLDS_POST_COMMIT_LOCK.store(true, Ordering::Relaxed);
}

/// Poll for a flock on `file` (shared or exclusive) until `wait` has passed. `Ok(false)`:
/// still held by another.
fn lock_within(file: &File, shared: bool, wait: Duration) -> std::io::Result<bool> {
    let deadline = Instant::now() + wait;
    loop {
        let tried = if shared {
            file.try_lock_shared()
        } else {
            file.try_lock()
        };
        match tried {
            Ok(()) => return Ok(true),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TryLockError::WouldBlock) => return Ok(false),
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
}

impl Locks<'_> {
    /// Take this worktree's post-commit lock for a checkpoint recorded in the background,
    /// without waiting. `None`: the one before still holds it.
    pub fn lock_post_commit(&self) -> Result<Option<File>> {
        try_lock_file(&self.store.private().post_commit_lock())
    }

    /// Wait until no post-commit checkpoint is being recorded in the background in this
    /// worktree: at most the writer wait of this process when one is set (hooks), else
    /// [`POST_COMMIT_WAIT`]. Costs one failed `open` where none ever was.
    pub fn wait_for_post_commit(&self) -> PostCommitWait {
        let wait = match WRITER_WAIT_MS.load(Ordering::Relaxed) {
            0 => POST_COMMIT_WAIT,
            ms => Duration::from_millis(ms),
        };
        if HOLDS_POST_COMMIT_LOCK.load(Ordering::Relaxed) {
            return PostCommitWait::Done(None);
        }
        match File::open(self.store.private().post_commit_lock()) {
            Ok(file) => match lock_within(&file, true, wait) {
                Ok(true) => PostCommitWait::Done(Some(file)),
                Ok(false) => PostCommitWait::StillRunning,
                Err(_) => PostCommitWait::Done(None),
            },
            Err(_) => PostCommitWait::Done(None),
        }
    }

    /// Take the writer lock named `name` (a validated run id, or a fixed name like `backups`),
    /// waiting for other writers.
    pub fn writer_lock(&self, name: &str) -> Result<RunLock> {
        let path = self.store.private().writer_lock(name);
        let file = open_lock_file(&path)?;
        let wait_ms = WRITER_WAIT_MS.load(Ordering::Relaxed);
        if wait_ms == 0 {
            file.lock()
                .map_err(|e| Error::conflict(format!("could not lock {}: {e}", path.display())))?;
            return Ok(RunLock { _file: file, path });
        }
        let wait = Duration::from_millis(wait_ms);
        if !lock_within(&file, false, wait).at(&path)? {
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
        Ok(RunLock { _file: file, path })
    }
}
