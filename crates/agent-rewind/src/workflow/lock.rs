//! The runner lock of a run: one runner at a time. An exclusive `flock` on
//! `<git-common-dir>/agent-rewind/runners/<run>.lock`, whose content names the holder (pid and
//! host, in the private envelope `RUNNER_LOCK`). The kernel releases it when the runner dies, so a lock file that exists but is not
//! locked is stale: it is taken over and the caller reconciles the steps the dead runner left
//! open.

use crate::store::{Store, open_lock_file};
use agent_rewind_core::error::{Error, IoResultExt, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::private::envelope::RUNNER_LOCK;
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;

pub struct RunnerLock {
    file: File,
    pub path: PathBuf,
    /// The holder a stale lock named, when this lock was taken over.
    pub took_over_from: Option<String>,
}

/// Take the runner lock of `run`, or fail naming the runner that holds it.
pub fn acquire(store: &Store, run: &RunId) -> Result<RunnerLock> {
    match try_acquire(store, run)? {
        Ok(lock) => Ok(lock),
        Err(holder) => Err(Error::refused(format!(
            "run {run} is being executed by another runner ({holder})"
        ))
        .with_hint("wait for it to finish; a runner that died releases the lock by itself")),
    }
}

/// Take the runner lock of `run`; `Err(holder)` (pid, host) when another runner holds it.
pub fn try_acquire(store: &Store, run: &RunId) -> Result<std::result::Result<RunnerLock, String>> {
    let p = store.private().runner_lock(run);
    let mut file = open_lock_file(&p)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut bytes = Vec::new();
            let _ = file.read_to_end(&mut bytes);
            let holder = match holder_of(&p, &bytes) {
                Ok(holder) => holder,
                Err(e) => e.message,
            };
            return Ok(Err(holder));
        }
        Err(TryLockError::Error(e)) => {
            return Err(Error::io(&p, e));
        }
    }
    let mut previous = Vec::new();
    file.read_to_end(&mut previous).at(&p)?;
    let took_over_from = match holder_of(&p, &previous) {
        Ok(holder) => (!holder.is_empty()).then_some(holder),
        Err(e) => {
            // Refused: the damaged content stays as it was for the user to look at.
            let _ = file.unlock();
            return Err(e);
        }
    };
    let host = agent_rewind_core::time::writer_id();
    let holder = format!(
        "pid {}\nhost {host}\nsince {}\n",
        std::process::id(),
        agent_rewind_core::time::Timestamp::now()
    );
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(&RUNNER_LOCK.encode(holder.as_bytes())))
        .and_then(|()| file.flush())
        .at(&p)?;
    Ok(Ok(RunnerLock {
        file,
        path: p,
        took_over_from,
    }))
}

/// The holder the lock file at `path` names (`bytes`), on one line; empty when none.
fn holder_of(path: &std::path::Path, bytes: &[u8]) -> Result<String> {
    if bytes.is_empty() {
        return Ok(String::new());
    }
    let text = RUNNER_LOCK.state_body(path, bytes)?;
    Ok(String::from_utf8_lossy(text).trim().replace('\n', ", "))
}

/// Whether a runner currently holds the lock of `run`.
pub fn is_running(store: &Store, run: &RunId) -> Result<bool> {
    let p = store.private().runner_lock(run);
    let Ok(file) = File::open(&p) else {
        return Ok(false);
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(false),
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(e)) => Err(Error::other(format!(
            "could not check {}: {e}",
            p.display()
        ))),
    }
}

/// Whether a runner of `run` died while it ran: its lock file still names a holder (a runner
/// that ends, even by Ctrl-C, empties it) and no process holds the lock. Never takes the
/// lock over (a shared lock, released at once, as [`is_running`]).
pub fn runner_gone(store: &Store, run: &RunId) -> Result<bool> {
    let p = store.private().runner_lock(run);
    let Ok(mut file) = File::open(&p) else {
        return Ok(false);
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let mut bytes = Vec::new();
            let read = file.read_to_end(&mut bytes);
            let _ = file.unlock();
            Ok(read.is_ok() && !bytes.is_empty())
        }
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(Error::other(format!(
            "could not check {}: {e}",
            p.display()
        ))),
    }
}

impl Drop for RunnerLock {
    fn drop(&mut self) {
        // A clean exit empties the holder, so the next runner does not report a take-over.
        let _ = self.file.set_len(0);
    }
}
