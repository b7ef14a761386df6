//! Tombstones that travel (issue 33 item 5): when `gc` deletes a run, it leaves a
//! tombstone, `refs/agent-runs-tombstones/<run>/<tip>` pointing at a small JSON blob (the
//! run, its tip, when and by whom it was deleted, when the tombstone expires). `push`
//! carries tombstones to the remote and `push --all` no longer sends a run a tombstone
//! covers; `fetch` of everything brings tombstones home and does not import a run they
//! cover. A tombstone covers a run whose `HEAD` is its tip or an ancestor of it: a copy
//! that moved on since (new checkpoints) is new work and travels again. Tombstones expire
//! after `agentRewind.tombstoneLifetime` (90 days by default); `gc` drops expired ones.
//!
//! Nothing here deletes a run: a tombstone only keeps one from coming back. Tombstones from
//! a remote are parsed, never trusted: a bad one is skipped. Every ref is created only if
//! absent (compare-and-swap) or deleted at the value read.

use crate::error::{Error, Result};
use crate::ids::{RemoteName, RunId};
use crate::store::{ObjectId, PackedCreate, RefChange, Store};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// Where tombstones live, here and on a remote.
pub const PREFIX: &str = crate::store::layout::TOMBSTONES_PREFIX;
/// Where a fetch stages a remote's tombstones.
pub const STAGING_PREFIX: &str = crate::store::layout::REMOTE_TOMBSTONES_PREFIX;
/// The most bytes a tombstone blob may have.
const MAX_BYTES: u64 = 4096;
/// From this many tombstones on, they are created in one rewrite of `packed-refs` (as
/// `delete` removes that many runs' refs).
const PACKED_FROM: usize = 100;
/// The default lifetime, in days.
const DEFAULT_DAYS: i64 = 90;

/// One tombstone, as its blob holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tombstone {
    #[serde(rename = "type")]
    pub kind: String,
    pub run: String,
    pub tip: String,
    pub deleted_at: Timestamp,
    pub expires_at: Timestamp,
    pub by: String,
}

/// `agentRewind.tombstoneLifetime` in seconds (a duration like `90d`).
pub fn lifetime(store: &Store) -> Result<i64> {
    match store.config_string("agentRewind.tombstoneLifetime") {
        None => Ok(DEFAULT_DAYS * 86_400),
        Some(v) => crate::time::parse_age(v.trim()).map_err(|e| {
            Error::usage(format!(
                "config agentRewind.tombstoneLifetime = {v:?}: {}",
                e.message
            ))
            .with_hint("a duration like 90d")
        }),
    }
}

/// Leave a tombstone for each deleted run (with its tip), living `lifetime` seconds
/// ([`lifetime`], read before anything was deleted). Returns how many were written.
pub fn write(store: &Store, deleted: &[(RunId, ObjectId)], lifetime: i64) -> Result<usize> {
    if deleted.is_empty() {
        return Ok(0);
    }
    let now = Timestamp::now();
    let expires_at = now.minus_seconds(-lifetime);
    let by = store.identity().unwrap_or_else(crate::time::writer_id);
    // The blobs go in one pack (a gc may delete thousands of runs), then the refs in one
    // transaction; when one of them exists already, one by one.
    let staged = store.with_staged_objects();
    let mut changes = Vec::with_capacity(deleted.len());
    for (run, tip) in deleted {
        let t = Tombstone {
            kind: "tombstone".into(),
            run: run.to_string(),
            tip: tip.to_string(),
            deleted_at: now,
            expires_at,
            by: by.clone(),
        };
        let mut body = serde_json::to_string(&t).map_err(|e| Error::other(e.to_string()))?;
        body.push('\n');
        let blob = staged.objects().write_blob(body.as_bytes())?;
        changes.push(RefChange::set(format!("{PREFIX}{run}/{tip}"), blob, None));
    }
    staged.persist_staged_objects()?;
    let mut written = 0;
    if changes.len() >= PACKED_FROM {
        // Thousands at once (a gc): one rewrite of `packed-refs`, as a fetch creates new
        // runs, instead of a lock, a loose file and a reflog per ref (7 s for 9,000). Those
        // that cannot be created that way (one exists) go one by one below.
        let groups: Vec<Vec<(String, ObjectId)>> = changes
            .iter()
            .filter_map(|c| Some(vec![(c.name.clone(), c.new?)]))
            .collect();
        let results = store.refs().create_packed_groups(&groups)?;
        let mut rest = vec![];
        for (change, result) in changes.into_iter().zip(results) {
            match result {
                // Raced: a loose ref of the same name appeared meanwhile; it is a tombstone.
                PackedCreate::Created | PackedCreate::Raced => written += 1,
                PackedCreate::Exists => rest.push(change),
            }
        }
        changes = rest;
    }
    let msg = "agent-rewind: tombstones of deleted runs";
    if store.refs().publish(&changes, msg).is_ok() {
        return Ok(written + changes.len());
    }
    // One already there (the same run deleted at the same tip before) stays.
    Ok(written
        + changes
            .into_iter()
            .filter(|c| store.refs().publish(std::slice::from_ref(c), msg).is_ok())
            .count())
}

/// A tombstone blob read and checked against the ref that names it (`<run>/<tip>`).
fn read(store: &Store, name: &str, blob: ObjectId) -> std::result::Result<Tombstone, String> {
    let (run, tip) = name.split_once('/').ok_or("not <run>/<tip>")?;
    RunId::new(run.to_string()).map_err(|e| e.message)?;
    let hex_len = store.objects().object_hash().len_in_hex();
    if tip.len() != hex_len || !tip.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(format!("{tip:?} is not a full commit id"));
    }
    let size = store.objects().object_size(blob).map_err(|e| e.message)?;
    if size > MAX_BYTES {
        return Err(format!("{size} bytes (at most {MAX_BYTES})"));
    }
    let bytes = store.objects().read_blob(blob).map_err(|e| e.message)?;
    let t: Tombstone = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    if t.kind != "tombstone" || t.run != run || t.tip != tip {
        return Err("its content does not match its name".into());
    }
    Ok(t)
}

/// The tombstones under `prefix` that are valid and not expired.
fn under(store: &Store, prefix: &str) -> Result<Vec<(String, ObjectId, Tombstone)>> {
    let now = Timestamp::now();
    Ok(store
        .refs()
        .refs_under(prefix)?
        .into_iter()
        .filter_map(|(full, blob)| {
            let name = full.strip_prefix(prefix)?.to_string();
            let t = read(store, &name, blob).ok()?;
            (t.expires_at > now).then_some((full, blob, t))
        })
        .collect())
}

/// This repository's tombstones that have not expired.
pub fn local(store: &Store) -> Result<Vec<Tombstone>> {
    Ok(under(store, PREFIX)?
        .into_iter()
        .map(|(_, _, t)| t)
        .collect())
}

/// Whether a tombstone of `tombstones` covers run `run` at `head`: its tip is `head` or
/// descends from it.
pub fn covers(store: &Store, tombstones: &[Tombstone], run: &str, head: ObjectId) -> bool {
    tombstones.iter().filter(|t| t.run == run).any(|t| {
        let Ok(tip) = ObjectId::from_hex(t.tip.as_bytes()) else {
            return false;
        };
        tip == head
            || (store.objects().has_object(tip)
                && store.objects().is_ancestor(head, tip).unwrap_or(false))
    })
}

/// Take the tombstones a fetch staged from `remote` that are valid, not expired and new
/// here. Returns how many were added and the ones skipped, with why.
pub fn import_staged(store: &Store, remote: &RemoteName) -> Result<(usize, Vec<String>)> {
    let prefix = format!("{STAGING_PREFIX}{remote}/");
    let mut added = 0;
    let mut skipped = vec![];
    let now = Timestamp::now();
    for (full, blob) in store.refs().refs_under(&prefix)? {
        let name = full.strip_prefix(&prefix).unwrap_or(&full).to_string();
        match read(store, &name, blob) {
            Err(why) => skipped.push(format!("tombstone {name:?} from {remote} skipped: {why}")),
            Ok(t) if t.expires_at <= now => {}
            Ok(_) => {
                let change = RefChange::set(format!("{PREFIX}{name}"), blob, None);
                if store
                    .refs()
                    .publish(&[change], "agent-rewind: fetched tombstone")
                    .is_ok()
                {
                    added += 1;
                }
            }
        }
    }
    Ok((added, skipped))
}

/// Delete this repository's expired (or unreadable) tombstones, each at the value read.
/// Returns how many.
pub fn prune_expired(store: &Store) -> Result<usize> {
    let now = Timestamp::now();
    let mut gone = 0;
    for (full, blob) in store.refs().refs_under(PREFIX)? {
        let name = full.strip_prefix(PREFIX).unwrap_or(&full).to_string();
        let expired = read(store, &name, blob).map_or(true, |t| t.expires_at <= now);
        if expired
            && store
                .refs()
                .publish(
                    &[RefChange::delete(full.clone(), blob)],
                    "agent-rewind: tombstone expired",
                )
                .is_ok()
        {
            gone += 1;
        }
    }
    Ok(gone)
}
