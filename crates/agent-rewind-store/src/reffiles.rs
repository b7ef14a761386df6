//! The files of git's ref store as we lock them: `<ref>.lock` and `packed-refs.lock`, and the
//! claims behind every lock of ours. A [`RefFiles`] is only paths: it knows nothing of a
//! repository object, so the git-format writers over it (`looserefs`, `packedrefs`,
//! `packcreate`, `packdelete`) are free functions of paths and ids.
//!
//! Claims: every lock a process of ours takes is created by hard-linking a claim,
//! `agent-rewind/lock-claims/<pid>@<host>#<n>`, that exists first (the same inode), so no lock
//! of ours ever exists unclaimed, and a lock left by a killed process of ours is recognised
//! exactly — same inode as a claim whose process is gone on this host — and removed. The
//! error for a lock someone else holds names the file and how to remove it.
//!
//! Must never remove a lock it cannot prove is a dead process's of ours, and never create a
//! lock before its claim.

use crate::lockfile::{lock_path, process_is_gone};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::platform::fileid::{file_id, link_count};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a lock file held by someone else is waited for before giving up (git waits
/// 100 ms for a ref lock and 1 s for `packed-refs.lock`).
pub(crate) const LOCK_WAIT: Duration = Duration::from_millis(1000);

static CLAIMS: AtomicU32 = AtomicU32::new(0);

/// Where a repository's ref files and our lock claims live.
#[derive(Debug, Clone)]
pub(crate) struct RefFiles {
    /// The common dir: shared refs, `packed-refs`, `logs/`.
    pub(crate) common: PathBuf,
    /// This worktree's git dir: its `HEAD`.
    pub(crate) git_dir: PathBuf,
    /// The folder of our lock claims.
    pub(crate) claims: PathBuf,
}

/// A claim on one lock file: removed (the claim only, never the lock) on drop.
pub(crate) struct Claim(pub(crate) PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The error for a lock file that another process holds (or a process that is not ours left).
pub(crate) fn lock_held(lock: &Path) -> Error {
    Error::refused(format!(
        "{} exists: another git process is updating refs here, or one was killed",
        lock.display()
    ))
    .with_hint(format!(
        "if no git process is running in this repository, remove it: rm '{}'",
        lock.display()
    ))
}

/// Whether `name` is a shared ref we may update as a loose file (not `HEAD`, not a
/// per-worktree ref).
pub(crate) fn is_plain_shared_ref(name: &str) -> bool {
    name.starts_with("refs/")
        && !["refs/worktree/", "refs/bisect/", "refs/rewritten/"]
            .iter()
            .any(|p| name.starts_with(p))
}

impl RefFiles {
    /// A fresh claim name for this process.
    pub(crate) fn claim_path(&self) -> PathBuf {
        let n = CLAIMS.fetch_add(1, Ordering::Relaxed);
        self.claims.join(format!(
            "{}@{}#{n}",
            std::process::id(),
            agent_rewind_core::time::host_name()
        ))
    }

    /// Write a claim holding `body`, then take `lock` by linking it.
    pub(crate) fn claim_and_lock(&self, lock: &Path, body: &[u8]) -> Result<Claim> {
        agent_rewind_core::private::create_parent(lock)?;
        let claim = self.claim_path();
        agent_rewind_core::private::create_parent(&claim)?;
        std::fs::write(&claim, body).map_err(|e| Error::io(&claim, e))?;
        let claim = Claim(claim);
        self.take_lock_by_link(&claim.0, lock)?;
        Ok(claim)
    }

    /// Remove every lock among `locks` that a dead process of ours left, and the claims of
    /// dead processes. Returns how many locks were removed. Cheap when no lock exists.
    pub(crate) fn remove_stale_locks(&self, locks: &[PathBuf]) -> usize {
        let present: Vec<(&PathBuf, (u64, u64))> = locks
            .iter()
            .filter_map(|l| {
                std::fs::symlink_metadata(l)
                    .ok()
                    .and_then(|m| file_id(&m))
                    .map(|id| (l, id))
            })
            .collect();
        if present.is_empty() {
            return 0;
        }
        let Ok(dir) = std::fs::read_dir(&self.claims) else {
            return 0;
        };
        let host = agent_rewind_core::time::host_name();
        let mut removed = 0;
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some((pid, claim_host)) = name
                .to_str()
                .and_then(|n| n.split_once('#'))
                .and_then(|(who, _)| who.split_once('@'))
                .and_then(|(pid, h)| pid.parse::<u32>().ok().map(|p| (p, h)))
            else {
                continue;
            };
            if claim_host != host || pid == std::process::id() || !process_is_gone(pid) {
                continue;
            }
            let path = entry.path();
            let Ok(m) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let mut matched = false;
            for (lock, id) in &present {
                if file_id(&m) == Some(*id) && std::fs::remove_file(lock).is_ok() {
                    matched = true;
                    removed += 1;
                }
            }
            // A dead claim is dropped once its lock is gone (no other name for its inode);
            // one still linked may be the stale lock another call is about to look for.
            if matched || link_count(&m) == Some(1) {
                let _ = std::fs::remove_file(&path);
            }
        }
        removed
    }

    /// Link `claim` to `lock` (taking the lock only if it is free), waiting up to
    /// [`LOCK_WAIT`] for a holder and removing a lock a dead process of ours left.
    pub(crate) fn take_lock_by_link(&self, claim: &Path, lock: &Path) -> Result<()> {
        let deadline = Instant::now() + LOCK_WAIT;
        let mut swept = false;
        let mut recreated = 0;
        loop {
            match std::fs::hard_link(claim, lock) {
                Ok(()) => return Ok(()),
                // A concurrent `git pack-refs` prunes ref folders it emptied, between our
                // `create_dir_all` and the link: make the folder again, as git's
                // raceproof_create_file does.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && recreated < 8 => {
                    recreated += 1;
                    agent_rewind_core::private::create_parent(lock)?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    // Look for a dead holder of ours first and once more before giving up.
                    let late = Instant::now() >= deadline;
                    if (!swept || late) && self.remove_stale_locks(&[lock.to_path_buf()]) > 0 {
                        swept = true;
                        continue;
                    }
                    swept = true;
                    if late {
                        return Err(lock_held(lock));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(Error::io(lock, e)),
            }
        }
    }

    /// Whether some claim is still linked to a lock: without one, no lock of ours exists and
    /// there is nothing to sweep (one read of the claims folder).
    fn any_claim_linked(&self) -> bool {
        let Ok(claims) = std::fs::read_dir(&self.claims) else {
            return false;
        };
        claims.flatten().any(|e| {
            std::fs::symlink_metadata(e.path()).is_ok_and(|m| link_count(&m).is_some_and(|n| n > 1))
        })
    }

    /// [`crate::Refs::remove_stale_locks_under`].
    pub(crate) fn remove_stale_locks_under(&self, prefix: &str) -> usize {
        if !self.any_claim_linked() {
            return 0;
        }
        let mut locks = vec![lock_path(&self.common.join("packed-refs"))];
        if let Ok(dir) = std::fs::read_dir(self.common.join(prefix)) {
            locks.extend(
                dir.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "lock")),
            );
        }
        self.remove_stale_locks(&locks)
    }

    /// [`crate::Refs::sweep_stale_locks`].
    pub(crate) fn sweep_stale_locks(&self) -> usize {
        if !self.any_claim_linked() {
            return 0;
        }
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&p, out),
                    Ok(_) if p.extension().is_some_and(|x| x == "lock") => out.push(p),
                    _ => {}
                }
            }
        }
        let mut locks = vec![lock_path(&self.common.join("packed-refs"))];
        walk(&self.common.join("refs"), &mut locks);
        let removed = self.remove_stale_locks(&locks);
        if removed > 0 {
            for lock in locks.iter().filter(|l| !l.exists()) {
                self.remove_empty_ref_folders(lock);
            }
        }
        removed
    }

    /// [`crate::Refs::ensure_unlocked`].
    pub(crate) fn ensure_unlocked(&self, name: &str) -> Result<()> {
        let target = match name {
            "HEAD" => self.git_dir.join("HEAD"),
            _ => self.common.join(name),
        };
        let lock = lock_path(&target);
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            if std::fs::symlink_metadata(&lock).is_err() {
                return Ok(());
            }
            if self.remove_stale_locks(std::slice::from_ref(&lock)) > 0 {
                continue;
            }
            if Instant::now() >= deadline {
                return Err(lock_held(&lock));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Remove the folders a deleted ref (or its lock) leaves empty, as git does: never
    /// `refs/` nor the folder right under it (`refs/agent-runs/`).
    pub(crate) fn remove_empty_ref_folders(&self, target: &Path) {
        let Ok(rel) = target.strip_prefix(&self.common) else {
            return;
        };
        let mut dir = rel.parent();
        while let Some(d) = dir {
            if d.components().count() <= 2 || std::fs::remove_dir(self.common.join(d)).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
}
