//! The runner lock of a run: one runner at a time. An exclusive `flock` on
//! `<git-common-dir>/agent-rewind/runners/<run>.lock`, whose content names the holder (pid and
//! host). The kernel releases it when the runner dies, so a lock file that exists but is not
//! locked is stale: it is taken over and the caller reconciles the steps the dead runner left
//! open.

use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::store::Store;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;

pub struct RunnerLock {
    file: File,
    pub path: PathBuf,
    /// The holder a stale lock named, when this lock was taken over.
    pub took_over_from: Option<String>,
}

fn path(store: &Store, run: &RunId) -> PathBuf {
    Store::private_dir(store.common_dir())
        .join("runners")
        .join(format!("{run}.lock"))
}

/// Take the runner lock of `run`, or fail naming the runner that holds it.
pub fn acquire(store: &Store, run: &RunId) -> Result<RunnerLock> {
    let p = path(store, run);
    std::fs::create_dir_all(p.parent().expect("has parent"))?;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&p)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(Error::refused(format!(
                "run {run} is being executed by another runner ({})",
                holder.trim().replace('\n', ", ")
            ))
            .with_hint("wait for it to finish; a runner that died releases the lock by itself"));
        }
        Err(TryLockError::Error(e)) => {
            return Err(Error::other(format!("could not lock {}: {e}", p.display())));
        }
    }
    let mut previous = String::new();
    file.read_to_string(&mut previous)?;
    let took_over_from = (!previous.trim().is_empty()).then(|| previous.trim().replace('\n', ", "));
    file.set_len(0)?;
    file.rewind()?;
    let host = crate::time::writer_id();
    writeln!(
        file,
        "pid {}\nhost {host}\nsince {}",
        std::process::id(),
        crate::time::now_rfc3339()
    )?;
    file.flush()?;
    Ok(RunnerLock {
        file,
        path: p,
        took_over_from,
    })
}

/// Whether a runner currently holds the lock of `run`.
pub fn is_running(store: &Store, run: &RunId) -> Result<bool> {
    let p = path(store, run);
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

impl Drop for RunnerLock {
    fn drop(&mut self) {
        // A clean exit empties the holder, so the next runner does not report a take-over.
        let _ = self.file.set_len(0);
    }
}
