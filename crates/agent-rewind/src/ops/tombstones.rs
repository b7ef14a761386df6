//! Tombstones that travel: when `gc` deletes a run, it leaves a tombstone,
//! `refs/agent-runs-tombstones/<run>/<tip>`, holding a small JSON document (the run, its tip,
//! when and by whom it was deleted, when the tombstone expires): a blob, or — with
//! `agentRewind.sign` on — the note of `<tip>` in a signed commit laid out as a notes commit
//! (one for all the tombstones of one `gc`). `push` carries these, and only these: the
//! tombstones this repository made. A fetch of everything stages a remote's tombstones and
//! takes those that cover that remote's own copy of a run (`taken`), under
//! `refs/agent-runs-tombstones-from/<remote>/`; they count only for that remote: a fetch from
//! it does not import a run they cover, `push --all` to it does not send one. This
//! repository's own tombstones count everywhere. A tombstone covers a run whose `HEAD` is
//! its tip or an ancestor of it: a copy that moved on since (new checkpoints) is new work
//! and travels again. Tombstones expire after `agentRewind.tombstoneLifetime` (90 days by
//! default); `gc` drops expired ones.
//!
//! Nothing here deletes a run: a tombstone only keeps one from coming back. Tombstones from
//! a remote are parsed, never trusted: a bad one is skipped, and with
//! `agentRewind.requireSigned` an unsigned one is refused. Every ref is created only if
//! absent (compare-and-swap) or deleted at the value read.

use crate::store::{NotesReader, ObjectId, PackedCreate, RefChange, Store, layout};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::{RemoteName, RunId};
use agent_rewind_core::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

mod taken;
pub use taken::take_staged;

/// Where this repository's tombstones live, here and on a remote.
pub const PREFIX: &str = layout::TOMBSTONES_PREFIX;
/// The most bytes a tombstone document may have.
const MAX_BYTES: u64 = 4096;
/// From this many tombstones on, they are created in one rewrite of `packed-refs` (as
/// `delete` removes that many runs' refs).
const PACKED_FROM: usize = 100;
/// The default lifetime, in days.
const DEFAULT_DAYS: i64 = 90;

/// One tombstone, as its document holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tombstone {
    #[serde(rename = "type")]
    pub kind: String,
    pub run: String,
    pub tip: String,
    pub deleted_at: Timestamp,
    pub expires_at: Timestamp,
    pub by: String,
    /// The run's notes ref when it was deleted (absent in tombstones written before it was
    /// recorded, and for a run without notes): a `push` deletes the remote's notes ref only
    /// at this value or an ancestor of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// A run about to be deleted, as its tombstone records it.
#[derive(Debug, Clone)]
pub struct Doomed {
    pub run: RunId,
    /// Its `HEAD`.
    pub tip: ObjectId,
    /// Its notes ref, when it has one.
    pub notes: Option<ObjectId>,
}

/// `agentRewind.tombstoneLifetime` in seconds (a duration like `90d`).
pub fn lifetime(store: &Store) -> Result<i64> {
    match store.config().string("agentRewind.tombstoneLifetime") {
        None => Ok(DEFAULT_DAYS * 86_400),
        Some(v) => agent_rewind_core::time::parse_age(v.trim()).map_err(|e| {
            Error::usage(format!(
                "config agentRewind.tombstoneLifetime = {v:?}: {}",
                e.message
            ))
            .with_hint("a duration like 90d")
        }),
    }
}

/// The tombstones of the runs a `gc` is about to delete, written (and signed, when
/// `agentRewind.sign` is on) before any run is deleted, so that a signing failure changes
/// nothing. [`Prepared::publish`] then creates the refs of those actually deleted.
pub struct Prepared {
    /// What each run's tombstone ref will point at.
    targets: HashMap<String, ObjectId>,
}

/// Write the tombstones of `runs` (each with its tip and notes), living `lifetime` seconds
/// ([`lifetime`]): one blob each, or with signing on one signed commit holding each as the
/// note of its tip. Nothing points at them yet.
pub fn prepare(store: &Store, runs: &[Doomed], lifetime: i64) -> Result<Prepared> {
    let mut targets = HashMap::with_capacity(runs.len());
    if runs.is_empty() {
        return Ok(Prepared { targets });
    }
    let now = Timestamp::now();
    let expires_at = now.minus_seconds(-lifetime);
    let by = store
        .config()
        .identity()
        .unwrap_or_else(agent_rewind_core::time::writer_id);
    let mut bodies = Vec::with_capacity(runs.len());
    for d in runs {
        let t = Tombstone {
            kind: "tombstone".into(),
            run: d.run.to_string(),
            tip: d.tip.to_string(),
            deleted_at: now,
            expires_at,
            by: by.clone(),
            notes: d.notes.map(|n| n.to_string()),
        };
        let mut body = serde_json::to_string(&t).map_err(|e| Error::other(e.to_string()))?;
        body.push('\n');
        bodies.push((d.tip, body.into_bytes()));
    }
    // All in one pack (a gc may delete thousands of runs).
    let staged = store.handle_for_staged_writes();
    if store.config().signing_enabled()? {
        let message = format!("agent-rewind: tombstones of {} deleted run(s)", runs.len());
        let commit = staged.notes().write_notes_commit(None, &bodies, &message)?;
        targets.extend(runs.iter().map(|d| (d.run.to_string(), commit)));
    } else {
        for (d, (_, body)) in runs.iter().zip(&bodies) {
            targets.insert(d.run.to_string(), staged.objects().write_blob(body)?);
        }
    }
    staged.objects().persist_staged()?;
    Ok(Prepared { targets })
}

impl Prepared {
    /// Create the tombstone refs of the runs of `deleted` (each with its tip), in one
    /// transaction (thousands: in one rewrite of `packed-refs`); one that exists already
    /// (the same run deleted at the same tip before) stays. Returns how many were created.
    pub fn publish(&self, store: &Store, deleted: &[(RunId, ObjectId)]) -> Result<usize> {
        let mut changes: Vec<RefChange> = deleted
            .iter()
            .filter_map(|(run, tip)| {
                let target = self.targets.get(run.as_str())?;
                Some(RefChange::set(
                    format!("{PREFIX}{run}/{tip}"),
                    *target,
                    None,
                ))
            })
            .collect();
        let mut written = 0;
        if changes.len() >= PACKED_FROM {
            // One rewrite of `packed-refs`, as a fetch creates new runs, instead of a lock, a
            // loose file and a reflog per ref (7 s for 9,000). Those that cannot be created
            // that way (one exists) go one by one below.
            let groups: Vec<Vec<(String, ObjectId)>> = changes
                .iter()
                .filter_map(|c| Some(vec![(c.name.clone(), c.new?)]))
                .collect();
            let results = store.refs().create_packed_groups(&groups)?;
            let mut rest = vec![];
            for (change, result) in changes.into_iter().zip(results) {
                match result {
                    // Raced: a loose ref of the same name appeared meanwhile; a tombstone.
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
        Ok(written
            + changes
                .into_iter()
                .filter(|c| store.refs().publish(std::slice::from_ref(c), msg).is_ok())
                .count())
    }
}

/// The notes readers of signed tombstone commits, opened once per commit.
type Readers<'s> = HashMap<ObjectId, NotesReader<'s>>;

/// One tombstone ref read and checked against its name (`<run>/<tip>`): the tombstone, and
/// the signed commit that holds it (`None`: a plain blob).
fn read<'s>(
    store: &'s Store,
    readers: &mut Readers<'s>,
    name: &str,
    target: ObjectId,
) -> std::result::Result<(Tombstone, Option<ObjectId>), String> {
    let (run, tip) = name.split_once('/').ok_or("not <run>/<tip>")?;
    RunId::new(run.to_string()).map_err(|e| e.message)?;
    let hex_len = store.objects().object_hash().len_in_hex();
    if tip.len() != hex_len || !tip.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(format!("{tip:?} is not a full commit id"));
    }
    let tip_id = ObjectId::from_hex(tip.as_bytes()).map_err(|e| e.to_string())?;
    let commit = store.objects().is_commit(target).then_some(target);
    let blob = match commit {
        None => target,
        Some(c) => {
            let reader = match readers.entry(c) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(
                    store
                        .notes()
                        .notes_reader_at(Some(c), format!("tombstone {name}"))
                        .map_err(|e| e.message)?,
                ),
            };
            reader
                .blob(tip_id)
                .map_err(|e| e.message)?
                .ok_or("its commit holds no tombstone for that tip")?
        }
    };
    let size = store.objects().object_size(blob).map_err(|e| e.message)?;
    if size > MAX_BYTES {
        return Err(format!("{size} bytes (at most {MAX_BYTES})"));
    }
    let bytes = store.objects().read_blob(blob).map_err(|e| e.message)?;
    let t: Tombstone = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    if t.kind != "tombstone" || t.run != run || t.tip != tip {
        return Err("its content does not match its name".into());
    }
    Ok((t, commit))
}

/// The tombstones under `prefix` that are valid and not expired.
fn under(store: &Store, prefix: &str) -> Result<Vec<Tombstone>> {
    let now = Timestamp::now();
    let mut readers = Readers::new();
    Ok(store
        .refs()
        .refs_under(prefix)?
        .into_iter()
        .filter_map(|(full, target)| {
            let name = full.strip_prefix(prefix)?;
            let (t, _) = read(store, &mut readers, name, target).ok()?;
            (t.expires_at > now).then_some(t)
        })
        .collect())
}

/// This repository's own tombstones (those `gc` and `delete --remote` left here), valid and
/// not expired: what `push` carries, and whose runs it deletes on the remote.
pub fn own(store: &Store) -> Result<Vec<Tombstone>> {
    under(store, PREFIX)
}

/// The tips tombstones name, by run: what they cover.
#[derive(Debug, Default)]
pub struct Covering {
    by_run: HashMap<String, Vec<ObjectId>>,
}

impl Covering {
    fn add(&mut self, tombstones: Vec<Tombstone>) {
        for t in tombstones {
            if let Ok(tip) = ObjectId::from_hex(t.tip.as_bytes()) {
                self.by_run.entry(t.run).or_default().push(tip);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_run.is_empty()
    }

    /// Whether a tombstone covers run `run` at `head`: its tip is `head` or descends from it.
    pub fn covers(&self, store: &Store, run: &str, head: ObjectId) -> bool {
        self.by_run.get(run).is_some_and(|tips| {
            tips.iter().any(|tip| {
                *tip == head
                    || (store.objects().has_object(*tip)
                        && store.objects().is_ancestor(head, *tip).unwrap_or(false))
            })
        })
    }
}

/// What counts for the runs of `remote` (fetched from it, pushed to it): this repository's
/// own tombstones and those taken from that remote, valid and not expired. Never another
/// remote's.
pub fn for_remote(store: &Store, remote: &RemoteName) -> Result<Covering> {
    let mut c = Covering::default();
    c.add(under(store, PREFIX)?);
    c.add(under(store, &layout::taken_tombstones_prefix(remote))?);
    Ok(c)
}

/// Delete this repository's expired (or unreadable) tombstones, its own and those taken
/// from remotes, each at the value read. Returns how many.
pub fn prune_expired(store: &Store) -> Result<usize> {
    let now = Timestamp::now();
    let mut gone = 0;
    let mut readers = Readers::new();
    let mut refs = store.refs().refs_under(PREFIX)?;
    refs.extend(store.refs().refs_under(layout::TAKEN_TOMBSTONES_PREFIX)?);
    for (full, target) in refs {
        let name = match full.strip_prefix(PREFIX) {
            Some(own) => own.to_string(),
            // `<remote>/<run>/<tip>`: the name without its remote.
            None => full
                .strip_prefix(layout::TAKEN_TOMBSTONES_PREFIX)
                .and_then(|rest| rest.split_once('/'))
                .map_or_else(String::new, |(_, name)| name.to_string()),
        };
        let expired =
            read(store, &mut readers, &name, target).map_or(true, |(t, _)| t.expires_at <= now);
        if expired
            && store
                .refs()
                .publish(
                    &[RefChange::delete(full.clone(), target)],
                    "agent-rewind: tombstone expired",
                )
                .is_ok()
        {
            gone += 1;
        }
    }
    Ok(gone)
}
