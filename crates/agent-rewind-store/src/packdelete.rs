//! Deleting many packed refs at once (`gc` of 90,000 runs): one rewrite of `packed-refs`
//! under `packed-refs.lock`, git's own protocol for that file, instead of a transaction that
//! locks every ref's loose file (which costs a lock file, and a folder, per ref: minutes at
//! 100,000 runs, for git's `update-ref --stdin` too).
//!
//! Only refs that exist solely in `packed-refs` are deleted this way, in groups (a run's
//! refs) that go together or not at all, each ref compare-and-swap against the value the
//! caller read. A group with a loose file or a held `<ref>.lock` is left to the caller (who
//! uses [`Store::publish`]); one whose value changed is reported as changed. A loose file
//! that appears for a deleted ref while the new file is written (a writer that read the old
//! packed value) wins: the group is then reported as changed, never as deleted.
//!
//! Must never write `packed-refs` except by renaming its lock, never leave the lock behind,
//! and never delete a ref whose value is not the expected one.

use super::reflock::{Claim, lock_path};
use crate::repository::Store;
use agent_rewind_core::error::{Error, IoResultExt, Result};
use gix::ObjectId;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

/// What happened to one group of [`Store::delete_packed_groups`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackedDelete {
    Deleted,
    /// Some ref of the group is loose (or being written): delete it another way.
    NotPacked,
    /// Some ref of the group does not have the expected value (or moved meanwhile).
    Changed,
}

/// [`Refs::delete_packed_groups`].
pub(crate) fn delete_packed_groups(
    store: &Store,
    groups: &[Vec<(String, ObjectId)>],
) -> Result<Vec<PackedDelete>> {
    if store.reftable() {
        // No `packed-refs`: every group goes through `publish` (one git transaction).
        return Ok(vec![PackedDelete::NotPacked; groups.len()]);
    }
    let mut edit = PackedRefsEdit::begin(store)?;
    let text = std::mem::take(&mut edit.text);
    let has_loose = |name: &str| edit.has_loose(name);
    let values = packed_values(&text);
    let mut out: Vec<PackedDelete> = groups
        .iter()
        .map(|g| {
            if g.iter().any(|(n, _)| has_loose(n)) {
                PackedDelete::NotPacked
            } else if g.iter().all(|(n, id)| values.get(n.as_bytes()) == Some(id)) {
                PackedDelete::Deleted
            } else {
                PackedDelete::Changed
            }
        })
        .collect();
    let gone: HashSet<&[u8]> = groups
        .iter()
        .zip(&out)
        .filter(|(_, r)| **r == PackedDelete::Deleted)
        .flat_map(|(g, _)| g.iter().map(|(n, _)| n.as_bytes()))
        .collect();
    if gone.is_empty() {
        return Ok(out);
    }
    let body = without_refs(&text, &gone);
    let common = edit.commit(&body, || {})?;
    // A writer that read the old packed value may have written a loose file meanwhile:
    // its value stands, and the group was not deleted.
    for (g, r) in groups.iter().zip(out.iter_mut()) {
        if *r == PackedDelete::Deleted && g.iter().any(|(n, _)| loose_or_locked(&common, n)) {
            *r = PackedDelete::Changed;
        }
    }
    for (g, _) in groups
        .iter()
        .zip(&out)
        .filter(|(_, r)| **r == PackedDelete::Deleted)
    {
        for (name, _) in g {
            remove_reflog(&common, name);
        }
    }
    Ok(out)
}

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
pub(super) struct PackedRefsEdit {
    common: std::path::PathBuf,
    packed: std::path::PathBuf,
    lock: HeldLock,
    claim: Claim,
    /// The file's text when the lock was taken (empty when there is none); callers take it.
    pub(super) text: Vec<u8>,
}

impl PackedRefsEdit {
    pub(super) fn begin(store: &Store) -> Result<PackedRefsEdit> {
        let common = store.repo.common_dir().to_path_buf();
        let packed = common.join("packed-refs");
        let lock = lock_path(&packed);
        store.remove_stale_locks(std::slice::from_ref(&lock));
        let claim = Claim(store.claim_path());
        agent_rewind_core::private::create_parent(&claim.0)?;
        std::fs::write(&claim.0, b"").at(&claim.0)?;
        store.take_lock_by_link(&claim.0, &lock)?;
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
    pub(super) fn has_loose(&self, name: &str) -> bool {
        loose_or_locked(&self.common, name)
    }

    /// Write `body` as the new `packed-refs`; `before_rename` runs between the write and the
    /// rename (a crash point). Returns the common dir.
    pub(super) fn commit(
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
fn loose_or_locked(common: &Path, name: &str) -> bool {
    let f = common.join(name);
    f.symlink_metadata().is_ok() || lock_path(&f).symlink_metadata().is_ok()
}

/// A `packed-refs` text without the refs named in `gone` (nor their peeled `^` lines).
pub(super) fn without_refs(text: &[u8], gone: &HashSet<&[u8]>) -> Vec<u8> {
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
pub(super) fn ref_line(line: &[u8]) -> Option<(&[u8], ObjectId)> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let sp = line.iter().position(|b| *b == b' ')?;
    let id = ObjectId::from_hex(&line[..sp]).ok()?;
    Some((&line[sp + 1..], id))
}

fn packed_values(text: &[u8]) -> HashMap<&[u8], ObjectId> {
    text.split(|b| *b == b'\n')
        .filter(|l| !l.starts_with(b"#") && !l.starts_with(b"^"))
        .filter_map(ref_line)
        .collect()
}

/// Remove `logs/<name>` and the folders it leaves empty (up to `logs/refs/`).
pub(super) fn remove_reflog(common: &Path, name: &str) {
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
