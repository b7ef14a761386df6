//! The loose-ref transaction, git's own protocol, over a repository's ref files: each ref is
//! locked (an update's lock is created already holding the new value, by linking a claim)
//! and checked under its lock; each update's reflog entry is appended and its lock renamed
//! into place. A transaction that only creates or updates refs never takes
//! `packed-refs.lock`, so a lock left on `packed-refs` by anything cannot block a checkpoint
//! or a hook; one that deletes takes it after the refs' locks, drops the refs from
//! `packed-refs`, then removes their loose files and reflogs.
//!
//! Free functions over [`RefFiles`] (paths) and ids: the one place a loose ref moves. Must
//! never write a ref whose value under its lock is not the expected one, never create a lock
//! before its claim, and never leave a lock or a claim of its transaction behind when it
//! returns.

use crate::lockfile::lock_path;
use crate::packedrefs::{PackedRefsEdit, remove_reflog, without_refs};
use crate::reffiles::{Claim, RefFiles};
use agent_rewind_core::error::{Error, Result};
use gix::ObjectId;
use std::path::PathBuf;

/// One change of a loose-ref transaction: the ref, its new value (`None` deletes it) and
/// the value it must have (`None`: it must not exist).
pub(crate) type LooseChange = (String, Option<ObjectId>, Option<ObjectId>);

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

impl Drop for HeldRef {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.lock);
        }
    }
}

/// Create, update or delete refs with compare-and-swap, git's way: lock each ref in order
/// (its lock created by linking a claim) and check its value under the lock with `current`.
/// Then write each update's reflog entry (`reflog_line_tail` follows the two ids) and rename
/// its lock in order. Deletions take `packed-refs.lock` too (after the refs' locks, as git
/// does), drop the refs from `packed-refs`, then remove their loose files, reflogs and
/// locks. `Ok(Err(name))` is a compare-and-swap that failed on `name`; nothing changed then.
pub(crate) fn apply_loose_refs(
    files: &RefFiles,
    changes: &[LooseChange],
    reflog_line_tail: &[u8],
    current: &dyn Fn(&str) -> Result<Option<ObjectId>>,
) -> Result<std::result::Result<(), String>> {
    let mut held: Vec<HeldRef> = Vec::with_capacity(changes.len());
    for (name, new, expected) in changes {
        held.push(lock_loose_ref(files, name, *new, *expected)?);
        agent_rewind_core::crash_point!("publish:ref-locked");
        if current(name)? != *expected {
            return Ok(Err(name.clone()));
        }
    }
    let packed = match held.iter().any(|h| h.new.is_none()) {
        true => Some(PackedRefsEdit::begin(files)?),
        false => None,
    };
    if packed.is_some() {
        agent_rewind_core::crash_point!("delete:refs-locked");
    }
    for h in held.iter_mut().filter(|h| h.new.is_some()) {
        append_reflog(files, h, reflog_line_tail)?;
        agent_rewind_core::crash_point!("publish:reflog-written");
        std::fs::rename(&h.lock, &h.target).map_err(|e| Error::io(&h.target, e))?;
        h.committed = true;
    }
    if let Some(edit) = packed {
        finish_deletions(files, edit, &held)?;
    }
    let deleted: Vec<PathBuf> = held
        .iter()
        .filter(|h| h.new.is_none())
        .map(|h| h.target.clone())
        .collect();
    // Dropped: the deleted refs' locks and every claim go.
    drop(held);
    for target in &deleted {
        files.remove_empty_ref_folders(target);
    }
    Ok(Ok(()))
}

/// Take the lock of ref `name` for a change to `new` (`None`: a deletion): a claim is
/// written first (holding the new value, which the lock then holds too) and the lock is
/// created as a hard link to it.
fn lock_loose_ref(
    files: &RefFiles,
    name: &str,
    new: Option<ObjectId>,
    old: Option<ObjectId>,
) -> Result<HeldRef> {
    let target = files.common.join(name);
    let lock = lock_path(&target);
    let body = new.map(|n| format!("{n}\n")).unwrap_or_default();
    let claim = files.claim_and_lock(&lock, body.as_bytes())?;
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
fn append_reflog(files: &RefFiles, h: &HeldRef, reflog_line_tail: &[u8]) -> Result<()> {
    use std::io::Write;
    let new = h.new.expect("an update");
    let log = files.common.join("logs").join(&h.name);
    let mut line = Vec::with_capacity(200);
    let zero = ObjectId::null(new.kind());
    write!(line, "{} {} ", h.old.unwrap_or(zero), new).expect("in memory");
    line.extend_from_slice(reflog_line_tail);
    // The folder may be pruned by a concurrent `git gc` between making it and opening the
    // log: make it again then.
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
fn finish_deletions(files: &RefFiles, edit: PackedRefsEdit, held: &[HeldRef]) -> Result<()> {
    let gone: std::collections::HashSet<&[u8]> = held
        .iter()
        .filter(|h| h.new.is_none())
        .map(|h| h.name.as_bytes())
        .collect();
    let body = without_refs(&edit.text, &gone);
    if body.len() != edit.text.len() {
        edit.commit(&body, || {})?;
    } // else dropped: the lock goes, packed-refs stays as it is
    for h in held.iter().filter(|h| h.new.is_none()) {
        remove_reflog(&files.common, &h.name);
        match std::fs::remove_file(&h.target) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&h.target, e)),
        }
    }
    Ok(())
}
