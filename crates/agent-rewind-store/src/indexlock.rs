//! Replacing the user's index the way git does, under git's `index.lock`, while holding the
//! lock as briefly as possible: the new index is written to a private temp file, hard-linked
//! as `index.lock` (which takes the lock only if it is free) and renamed over `index`.
//!
//! Owns recognising a lock left by one of our own processes that was killed between link and
//! rename (the same inode as the temp file of a process that is gone) and removing it. Must
//! never remove any other lock, or leave `index.lock` behind when it returns.

use crate::lockfile::{lock_path, process_is_gone};
use agent_rewind_core::error::{Error, IoResultExt, Result};
use std::path::Path;

/// How many times a held `index.lock` is waited for, 10 ms apart.
const LOCK_ATTEMPTS: u32 = 100;

/// Replace the index file `index` with `bytes` under git's lock: the new index is written to
/// a private temp file in `tmp_dir`, hard-linked to `index.lock` (taking the lock only when
/// it is free) and renamed over `index`, so the lock is held for a rename, not for the write.
/// With `mtime`, the new index file carries that modification time (an index put back as it
/// was keeps the time git's racy-entry checks compare against).
pub(crate) fn install_index(
    index: &Path,
    tmp_dir: &Path,
    bytes: &[u8],
    mtime: Option<std::time::SystemTime>,
) -> Result<()> {
    use std::io::Write;
    let lock = lock_path(index);
    std::fs::create_dir_all(tmp_dir).at(tmp_dir)?;
    sweep_dead_index_temps(tmp_dir, &lock);
    let tmp = tmp_dir.join(format!("index-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .at(&tmp)?;
    f.write_all(bytes).at(&tmp)?;
    if let Some(t) = mtime {
        f.set_modified(t).at(&tmp)?;
    }
    drop(f);
    let result = take_lock_and_rename(&tmp, &lock, index, bytes, mtime);
    let _ = std::fs::remove_file(&tmp);
    result
}

/// Whether `index.lock` is held for the index file `index`; one left by a process of ours
/// that was killed while holding it (its temp file in `tmp_dir`) is removed first.
pub(crate) fn index_locked(index: &Path, tmp_dir: &Path) -> bool {
    let lock = lock_path(index);
    sweep_dead_index_temps(tmp_dir, &lock);
    std::fs::symlink_metadata(&lock).is_ok()
}

/// Link `tmp` to `lock` (waiting a while for a lock held by someone else), then rename the
/// lock over `index`. Where hard links are not possible, the lock is created and written.
fn take_lock_and_rename(
    tmp: &Path,
    lock: &Path,
    index: &Path,
    bytes: &[u8],
    mtime: Option<std::time::SystemTime>,
) -> Result<()> {
    use std::io::Write;
    let mut attempt = 0;
    loop {
        match std::fs::hard_link(tmp, lock) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                attempt += 1;
                if attempt >= LOCK_ATTEMPTS {
                    return Err(lock_held(lock));
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(_) => {
                // No hard links here (or across these folders): git's own way.
                let mut f = match std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(lock)
                {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Err(lock_held(lock));
                    }
                    Err(e) => return Err(Error::io(lock, e)),
                };
                if let Err(e) = f
                    .write_all(bytes)
                    .and_then(|()| mtime.map_or(Ok(()), |t| f.set_modified(t)))
                {
                    let _ = std::fs::remove_file(lock);
                    return Err(Error::io(lock, e));
                }
                break;
            }
        }
    }
    agent_rewind_core::crash_point!("index:locked");
    std::fs::rename(lock, index).map_err(|e| {
        let _ = std::fs::remove_file(lock);
        Error::io(index, e)
    })
}

fn lock_held(lock: &Path) -> Error {
    Error::refused(format!(
        "{} exists: another git process is using this worktree's index",
        lock.display()
    ))
    .with_hint(
        "the files are written and HEAD moved; once that process is done, run \
         `git read-tree --reset HEAD` (or `git agent-rewind undo` to go back)",
    )
}

/// Remove temp indexes of our processes that died, and an `index.lock` that is one of them
/// (a process killed between taking the lock and renaming it): that lock is ours and stale.
fn sweep_dead_index_temps(tmp_dir: &Path, lock: &Path) {
    use agent_rewind_core::platform::fileid::file_id;
    let Ok(dir) = std::fs::read_dir(tmp_dir) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("index-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || !process_is_gone(pid) {
            continue;
        }
        let path = entry.path();
        if let (Ok(t), Ok(l)) = (
            std::fs::symlink_metadata(&path),
            std::fs::symlink_metadata(lock),
        ) && file_id(&t).is_some_and(|id| Some(id) == file_id(&l))
        {
            let _ = std::fs::remove_file(lock);
        }
        let _ = std::fs::remove_file(&path);
    }
}
