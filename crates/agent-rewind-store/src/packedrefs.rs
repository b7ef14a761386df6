//! `packed-refs` as git writes it: one rewrite of the file under `packed-refs.lock`, claimed
//! like our other locks (so a killed writer's lock is recognised and removed), and the
//! reading of its lines. Used by the loose-ref transaction's deletions and by the bulk
//! writers (`packcreate`, `packdelete`).
//!
//! Must never write `packed-refs` except by renaming its lock, and never leave the lock
//! behind.

use crate::lockfile::lock_path;
use crate::reffiles::{Claim, RefFiles};
use agent_rewind_core::error::{Error, IoResultExt, Result};
use gix::ObjectId;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

/// The lock is ours until renamed: removed if we return early.
struct HeldLock(std::path::PathBuf);

impl HeldLock {
    fn release(self) {
        std::mem::forget(self);
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One rewrite of `packed-refs` under git's `packed-refs.lock`, claimed like our other locks
/// (so a killed writer's lock is recognised and removed): [`PackedRefsEdit::begin`] takes
/// the lock and reads the file, [`PackedRefsEdit::commit`] writes the new text into the lock
/// and renames it into place. Dropped uncommitted, the lock goes and nothing changed.
pub(crate) struct PackedRefsEdit {
    common: std::path::PathBuf,
    packed: std::path::PathBuf,
    lock: HeldLock,
    claim: Claim,
    /// The file's text when the lock was taken (empty when there is none); callers take it.
    pub(crate) text: Vec<u8>,
}

impl PackedRefsEdit {
    pub(crate) fn begin(files: &RefFiles) -> Result<PackedRefsEdit> {
        let common = files.common.clone();
        let packed = common.join("packed-refs");
        let lock = lock_path(&packed);
        files.remove_stale_locks(std::slice::from_ref(&lock));
        let claim = files.claim_and_lock(&lock, b"")?;
        let lock = HeldLock(lock);
        let text = match std::fs::read(&packed) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
            Err(e) => return Err(Error::io(&packed, e)),
        };
        Ok(PackedRefsEdit {
            common,
            packed,
            lock,
            claim,
            text,
        })
    }

    /// Whether `name` has a loose file or a `<name>.lock` (a writer at work).
    pub(crate) fn has_loose(&self, name: &str) -> bool {
        loose_or_locked(&self.common, name)
    }

    /// Write `body` as the new `packed-refs`; `before_rename` runs between the write and the
    /// rename (a crash point). Returns the common dir.
    pub(crate) fn commit(
        self,
        body: &[u8],
        before_rename: impl FnOnce(),
    ) -> Result<std::path::PathBuf> {
        let lock = self.lock.0.clone();
        {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&lock)
                .at(&lock)?;
            f.write_all(body).at(&lock)?;
        }
        before_rename();
        std::fs::rename(&lock, &self.packed).at(&self.packed)?;
        self.lock.release();
        drop(self.claim);
        Ok(self.common)
    }
}

/// Whether the ref `name` has a loose file or a `<name>.lock` in the common dir `common`.
pub(crate) fn loose_or_locked(common: &Path, name: &str) -> bool {
    let f = common.join(name);
    f.symlink_metadata().is_ok() || lock_path(&f).symlink_metadata().is_ok()
}

/// A `packed-refs` text without the refs named in `gone` (nor their peeled `^` lines).
pub(crate) fn without_refs(text: &[u8], gone: &HashSet<&[u8]>) -> Vec<u8> {
    let mut body = Vec::with_capacity(text.len());
    let mut skipping = false;
    for line in text.split_inclusive(|b| *b == b'\n') {
        if line.starts_with(b"^") {
            if !skipping {
                body.extend_from_slice(line);
            }
            continue;
        }
        skipping =
            !line.starts_with(b"#") && ref_line(line).is_some_and(|(name, _)| gone.contains(name));
        if !skipping {
            body.extend_from_slice(line);
        }
    }
    body
}

/// `<hex> SP <name>` of one packed-refs line.
pub(crate) fn ref_line(line: &[u8]) -> Option<(&[u8], ObjectId)> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let sp = line.iter().position(|b| *b == b' ')?;
    let id = ObjectId::from_hex(&line[..sp]).ok()?;
    Some((&line[sp + 1..], id))
}

pub(crate) fn packed_values(text: &[u8]) -> HashMap<&[u8], ObjectId> {
    text.split(|b| *b == b'\n')
        .filter(|l| !l.starts_with(b"#") && !l.starts_with(b"^"))
        .filter_map(ref_line)
        .collect()
}

/// Remove `logs/<name>` and the folders it leaves empty (up to `logs/refs/`).
pub(crate) fn remove_reflog(common: &Path, name: &str) {
    let log = common.join("logs").join(name);
    if std::fs::remove_file(&log).is_err() {
        return;
    }
    let stop = common.join("logs").join("refs");
    let mut dir = log.parent();
    while let Some(d) = dir {
        if d == stop || !d.starts_with(&stop) || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_packed_lines() {
        let text = b"# pack-refs with: peeled fully-peeled sorted \n\
            0123456789abcdef0123456789abcdef01234567 refs/agent-runs/r1/HEAD\n\
            ^89abcdef0123456789abcdef0123456789abcdef\n\
            89abcdef0123456789abcdef0123456789abcdef refs/notes/agent-runs/r1\n";
        let v = packed_values(text);
        assert_eq!(v.len(), 2);
        assert!(v.contains_key(&b"refs/agent-runs/r1/HEAD"[..]));
    }
}
