//! git's lock files in the ref store as we take them: `<ref>.lock` and `packed-refs.lock`.
//!
//! Owns three things. (1) Claims: every such lock a process of ours takes is created by
//! hard-linking a claim, `agent-rewind/lock-claims/<pid>@<host>#<n>`, that exists first (the
//! same inode), so no lock of ours ever exists unclaimed, and a lock left by a killed
//! process of ours is recognised exactly — same inode as a claim whose process is gone on
//! this host — and removed. (2) The loose-ref transaction, git's own protocol: each ref is
//! locked (an update's lock is created already holding the new value) and checked under its
//! lock; a transaction that only creates or updates refs never takes `packed-refs.lock`, so
//! a lock left on `packed-refs` by anything cannot block a checkpoint or a hook; one that
//! deletes takes it after the refs' locks, drops the refs from `packed-refs`, then removes
//! their loose files and reflogs. (3) The error for a lock someone else holds: it names the
//! file and how to remove it.
//!
//! Must never remove a lock it cannot prove is a dead process's of ours, never create a
//! lock before its claim, and never leave a lock or a claim of a live transaction behind
//! when it returns.

use crate::repository::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_scan::gixerror::from_gix;
use gix::ObjectId;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a lock file held by someone else is waited for before giving up (git waits
/// 100 ms for a ref lock and 1 s for `packed-refs.lock`).
pub(crate) const LOCK_WAIT: Duration = Duration::from_millis(1000);

static CLAIMS: AtomicU32 = AtomicU32::new(0);

/// A claim on one lock file: removed (the claim only, never the lock) on drop.
pub(crate) struct Claim(pub(super) PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A loose-ref lock of ours: until committed, dropping it removes the lock (a rollback; for
/// a deletion, the end of the transaction).
struct HeldRef {
    lock: PathBuf,
    target: PathBuf,
    name: String,
    old: Option<ObjectId>,
    /// `None`: the ref is deleted.
    new: Option<ObjectId>,
    _claim: Claim,
    committed: bool,
}

/// One change of a loose-ref transaction: the ref, its new value (`None` deletes it) and
/// the value it must have (`None`: it must not exist).
pub(crate) type LooseChange = (String, Option<ObjectId>, Option<ObjectId>);

impl Drop for HeldRef {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.lock);
        }
    }
}

/// `<path>.lock`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
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

impl Store {
    fn claims_dir(&self) -> PathBuf {
        self.private().lock_claims()
    }

    /// A fresh claim name for this process.
    pub(super) fn claim_path(&self) -> PathBuf {
        let n = CLAIMS.fetch_add(1, Ordering::Relaxed);
        self.claims_dir().join(format!(
            "{}@{}#{n}",
            std::process::id(),
            agent_rewind_core::time::host_name()
        ))
    }

    /// Remove every lock among `locks` that a dead process of ours left, and the claims of
    /// dead processes. Returns how many locks were removed. Cheap when no lock exists.
    pub(crate) fn remove_stale_locks(&self, locks: &[PathBuf]) -> usize {
        use std::os::unix::fs::MetadataExt;
        let present: Vec<(&PathBuf, (u64, u64))> = locks
            .iter()
            .filter_map(|l| {
                std::fs::symlink_metadata(l)
                    .ok()
                    .map(|m| (l, (m.dev(), m.ino())))
            })
            .collect();
        if present.is_empty() {
            return 0;
        }
        let Ok(dir) = std::fs::read_dir(self.claims_dir()) else {
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
                if *id == (m.dev(), m.ino()) && std::fs::remove_file(lock).is_ok() {
                    matched = true;
                    removed += 1;
                }
            }
            // A dead claim is dropped once its lock is gone (no other name for its inode);
            // one still linked may be the stale lock another call is about to look for.
            if matched || m.nlink() == 1 {
                let _ = std::fs::remove_file(&path);
            }
        }
        removed
    }

    /// Whether `name` is a shared ref this module may update as a loose file (not `HEAD`,
    /// not a per-worktree ref).
    pub(crate) fn is_plain_shared_ref(name: &str) -> bool {
        name.starts_with("refs/")
            && !["refs/worktree/", "refs/bisect/", "refs/rewritten/"]
                .iter()
                .any(|p| name.starts_with(p))
    }

    /// Create, update or delete refs with compare-and-swap, git's way: lock each ref in
    /// order (its lock created by linking a claim) and check its value under the lock. Then
    /// write each update's reflog entry and rename its lock in order. Deletions take
    /// `packed-refs.lock` too (after the refs' locks, as git does), drop the refs from
    /// `packed-refs`, then remove their loose files, reflogs and locks. `packed-refs` is never
    /// locked by a transaction without deletions. `Ok(Err(name))` is a compare-and-swap that
    /// failed on `name`; nothing changed then.
    pub(crate) fn apply_loose_refs(
        &self,
        changes: &[LooseChange],
        reflog_line_tail: &[u8],
    ) -> Result<std::result::Result<(), String>> {
        let mut held: Vec<HeldRef> = Vec::with_capacity(changes.len());
        for (name, new, expected) in changes {
            held.push(self.lock_loose_ref(name, *new, *expected)?);
            agent_rewind_core::crash_point!("publish:ref-locked");
            let now = self.direct_ref_target(name)?;
            if now != *expected {
                return Ok(Err(name.clone()));
            }
        }
        let packed = match held.iter().any(|h| h.new.is_none()) {
            true => Some(super::packdelete::PackedRefsEdit::begin(self)?),
            false => None,
        };
        if packed.is_some() {
            agent_rewind_core::crash_point!("delete:refs-locked");
        }
        for h in held.iter_mut().filter(|h| h.new.is_some()) {
            self.append_reflog(h, reflog_line_tail)?;
            agent_rewind_core::crash_point!("publish:reflog-written");
            std::fs::rename(&h.lock, &h.target).map_err(|e| Error::io(&h.target, e))?;
            h.committed = true;
        }
        if let Some(edit) = packed {
            self.finish_deletions(edit, &held)?;
        }
        let deleted: Vec<PathBuf> = held
            .iter()
            .filter(|h| h.new.is_none())
            .map(|h| h.target.clone())
            .collect();
        // Dropped: the deleted refs' locks and every claim go.
        drop(held);
        for target in &deleted {
            self.remove_empty_ref_folders(target);
        }
        Ok(Ok(()))
    }

    /// Take the lock of ref `name` for a change to `new` (`None`: a deletion): a claim is
    /// written first (holding the new value, which the lock then holds too) and the lock is
    /// created as a hard link to it.
    fn lock_loose_ref(
        &self,
        name: &str,
        new: Option<ObjectId>,
        old: Option<ObjectId>,
    ) -> Result<HeldRef> {
        let target = self.repo.common_dir().join(name);
        let lock = lock_path(&target);
        agent_rewind_core::private::create_parent(&lock)?;
        let claim = self.claim_path();
        agent_rewind_core::private::create_parent(&claim)?;
        let body = new.map(|n| format!("{n}\n")).unwrap_or_default();
        std::fs::write(&claim, body).map_err(|e| Error::io(&claim, e))?;
        let claim = Claim(claim);
        self.take_lock_by_link(&claim.0, &lock)?;
        Ok(HeldRef {
            lock,
            target,
            name: name.to_string(),
            old,
            new,
            _claim: claim,
            committed: false,
        })
    }

    /// Append the reflog entry of an update.
    fn append_reflog(&self, h: &HeldRef, reflog_line_tail: &[u8]) -> Result<()> {
        use std::io::Write;
        let new = h.new.expect("an update");
        let log = self.repo.common_dir().join("logs").join(&h.name);
        let mut line = Vec::with_capacity(200);
        let zero = ObjectId::null(new.kind());
        write!(line, "{} {} ", h.old.unwrap_or(zero), new).expect("in memory");
        line.extend_from_slice(reflog_line_tail);
        // The folder may be pruned by a concurrent `git gc` between making it and opening
        // the log: make it again then.
        let mut tries = 0;
        loop {
            agent_rewind_core::private::create_parent(&log)?;
            match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
            {
                Ok(mut f) => return f.write_all(&line).map_err(|e| Error::io(&log, e)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 8 => tries += 1,
                Err(e) => return Err(Error::io(&log, e)),
            }
        }
    }

    /// The deletions of a transaction, every lock held: the refs leave `packed-refs` (one
    /// rewrite, only when one of them is there), then their loose files and reflogs go.
    fn finish_deletions(
        &self,
        edit: super::packdelete::PackedRefsEdit,
        held: &[HeldRef],
    ) -> Result<()> {
        let gone: std::collections::HashSet<&[u8]> = held
            .iter()
            .filter(|h| h.new.is_none())
            .map(|h| h.name.as_bytes())
            .collect();
        let body = super::packdelete::without_refs(&edit.text, &gone);
        if body.len() != edit.text.len() {
            edit.commit(&body, || {})?;
        } // else dropped: the lock goes, packed-refs stays as it is
        for h in held.iter().filter(|h| h.new.is_none()) {
            super::packdelete::remove_reflog(self.repo.common_dir(), &h.name);
            match std::fs::remove_file(&h.target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&h.target, e)),
            }
        }
        Ok(())
    }

    /// Remove the folders a deleted ref leaves empty, as git does: never `refs/` nor the
    /// folder right under it (`refs/agent-runs/`).
    fn remove_empty_ref_folders(&self, target: &Path) {
        let Ok(rel) = target.strip_prefix(self.repo.common_dir()) else {
            return;
        };
        let mut dir = rel.parent();
        while let Some(d) = dir {
            if d.components().count() <= 2
                || std::fs::remove_dir(self.repo.common_dir().join(d)).is_err()
            {
                break;
            }
            dir = d.parent();
        }
    }

    /// Link `claim` to `lock` (taking the lock only if it is free), waiting up to
    /// [`LOCK_WAIT`] for a holder and removing a lock a dead process of ours left.
    pub(super) fn take_lock_by_link(&self, claim: &Path, lock: &Path) -> Result<()> {
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

    /// The id a ref points at directly (`None` when it does not exist); a symbolic ref is an
    /// error (we only ever write direct refs).
    fn direct_ref_target(&self, name: &str) -> Result<Option<ObjectId>> {
        match self.repo.try_find_reference(name).map_err(from_gix)? {
            None => Ok(None),
            Some(r) => match r.target().try_id() {
                Some(id) => Ok(Some(id.to_owned())),
                None => Err(Error::corrupt(format!("{name} is a symbolic ref"))),
            },
        }
    }
}

/// Whether some claim is still linked to a lock: without one, no lock of ours exists and
/// there is nothing to sweep (one read of the claims folder).
fn any_claim_linked(store: &Store) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(claims) = std::fs::read_dir(store.claims_dir()) else {
        return false;
    };
    claims
        .flatten()
        .any(|e| std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.nlink() > 1))
}

/// [`Refs::remove_stale_locks_under`].
pub(crate) fn remove_stale_locks_under(store: &Store, prefix: &str) -> usize {
    if !any_claim_linked(store) {
        return 0;
    }
    let mut locks = vec![lock_path(&store.repo.common_dir().join("packed-refs"))];
    if let Ok(dir) = std::fs::read_dir(store.repo.common_dir().join(prefix)) {
        locks.extend(
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "lock")),
        );
    }
    store.remove_stale_locks(&locks)
}

/// [`Refs::sweep_stale_locks`].
pub(crate) fn sweep_stale_locks(store: &Store) -> usize {
    if !any_claim_linked(store) {
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
    let mut locks = vec![lock_path(&store.repo.common_dir().join("packed-refs"))];
    walk(&store.repo.common_dir().join("refs"), &mut locks);
    let removed = store.remove_stale_locks(&locks);
    if removed > 0 {
        for lock in locks.iter().filter(|l| !l.exists()) {
            store.remove_empty_ref_folders(lock);
        }
    }
    removed
}

/// [`Refs::ensure_unlocked`].
pub(crate) fn ensure_unlocked(store: &Store, name: &str) -> Result<()> {
    let target = match name {
        "HEAD" => store.repo.git_dir().join("HEAD"),
        _ => store.repo.common_dir().join(name),
    };
    let lock = lock_path(&target);
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        if std::fs::symlink_metadata(&lock).is_err() {
            return Ok(());
        }
        if store.remove_stale_locks(std::slice::from_ref(&lock)) > 0 {
            continue;
        }
        if Instant::now() >= deadline {
            return Err(lock_held(&lock));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether process `pid` certainly no longer exists (only known where `/proc` is mounted).
pub(crate) fn process_is_gone(pid: u32) -> bool {
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}
