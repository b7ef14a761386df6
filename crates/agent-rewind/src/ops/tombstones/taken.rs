//! A remote's tombstones, taken: after a fetch of everything has staged a remote's
//! tombstones (a copy of what the remote holds, `refs/agent-runs-tombstones-remote/<remote>/`),
//! those that are valid, not expired, signed as `agentRewind.requireSigned` asks, and — when
//! first taken — cover the remote's own copy of their run are kept under
//! `refs/agent-runs-tombstones-from/<remote>/`, where they count for that remote's runs only
//! (`super::for_remote`). A tombstone that names a run the remote does not hold is not taken:
//! no remote hides, by naming it, a run it never had. One taken stays while the remote keeps
//! it (the run itself may be deleted from the remote by hand), until it expires.
//!
//! It never writes outside the taken folder of that remote, never takes a tombstone into
//! this repository's own (which `push` carries), and never deletes a run.

use super::{Readers, read};
use crate::store::{ObjectId, RefChange, Store, layout};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::{RemoteName, RunId};
use agent_rewind_core::time::Timestamp;
use std::collections::BTreeMap;

/// Take the tombstones a fetch of everything staged from `remote` (see the module), and
/// drop those taken before that it no longer holds or that no longer qualify. Returns a
/// line for each tombstone skipped (invalid) or refused (not signed as required).
pub fn take_staged(
    store: &Store,
    remote: &RemoteName,
    require_signed: bool,
) -> Result<Vec<String>> {
    let staged_prefix = layout::remote_tombstones_prefix(remote);
    let taken_prefix = layout::taken_tombstones_prefix(remote);
    let by_name = |prefix: &str| -> Result<BTreeMap<String, ObjectId>> {
        Ok(store
            .refs()
            .refs_under(prefix)?
            .into_iter()
            .filter_map(|(full, id)| Some((full.strip_prefix(prefix)?.to_string(), id)))
            .collect())
    };
    let staged = by_name(&staged_prefix)?;
    let taken = by_name(&taken_prefix)?;
    let now = Timestamp::now();
    let mut readers = Readers::new();
    let mut warnings = vec![];
    // name → (value, the signed commit holding it)
    let mut wanted: BTreeMap<String, (ObjectId, Option<ObjectId>)> = BTreeMap::new();
    for (name, target) in &staged {
        let (t, commit) = match read(store, &mut readers, name, *target) {
            Ok(found) => found,
            Err(why) => {
                warnings.push(format!("tombstone {name:?} from {remote} skipped: {why}"));
                continue;
            }
        };
        let kept = taken.get(name) == Some(target);
        if t.expires_at <= now || !(kept || covers_remote_copy(store, remote, &t.run, &t.tip)?) {
            continue;
        }
        wanted.insert(name.clone(), (*target, commit));
    }
    if require_signed {
        refuse_unsigned(store, remote, &mut wanted, &mut warnings)?;
    }
    let mut changes = vec![];
    for (name, (target, _)) in &wanted {
        match taken.get(name) {
            Some(old) if old == target => {}
            old => changes.push(RefChange::set(
                format!("{taken_prefix}{name}"),
                *target,
                old.copied(),
            )),
        }
    }
    for (name, old) in taken.iter().filter(|(n, _)| !wanted.contains_key(*n)) {
        changes.push(RefChange::delete(format!("{taken_prefix}{name}"), *old));
    }
    let msg = format!("agent-rewind: tombstones taken from {remote}");
    if !changes.is_empty() && store.refs().publish(&changes, &msg).is_err() {
        // Another fetch from the same remote at the same time: each on its own; what it
        // already did stays.
        for c in &changes {
            let _ = store.refs().publish(std::slice::from_ref(c), &msg);
        }
    }
    Ok(warnings)
}

/// Whether the tombstone of `run` at `tip` covers the copy of `run` the remote holds (as
/// staged by this fetch): its `HEAD` is `tip` or an ancestor of it.
fn covers_remote_copy(store: &Store, remote: &RemoteName, run: &str, tip: &str) -> Result<bool> {
    let (Ok(run), Ok(tip)) = (
        RunId::new(run.to_string()),
        ObjectId::from_hex(tip.as_bytes()),
    ) else {
        return Ok(false);
    };
    let Some(head) = store
        .refs()
        .ref_target(&layout::remote_run_head(remote, &run))?
    else {
        return Ok(false);
    };
    Ok(head == tip
        || (store.objects().has_object(tip) && store.objects().is_ancestor(head, tip)?))
}

/// With `agentRewind.requireSigned`: take out of `wanted` every tombstone that is not held
/// by a commit git accepts as signed (a plain blob is unsigned), each with a line saying why.
fn refuse_unsigned(
    store: &Store,
    remote: &RemoteName,
    wanted: &mut BTreeMap<String, (ObjectId, Option<ObjectId>)>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let mut commits: Vec<ObjectId> = wanted.values().filter_map(|(_, c)| *c).collect();
    commits.sort();
    commits.dedup();
    let bad: BTreeMap<ObjectId, String> = crate::ops::signatures::unaccepted(store, &commits)?
        .into_iter()
        .map(|(c, verdict, detail)| {
            (
                c,
                detail.map_or(verdict.to_string(), |d| format!("{verdict}: {d}")),
            )
        })
        .collect();
    wanted.retain(|name, (_, commit)| {
        let why = match commit {
            None => "unsigned".to_string(),
            Some(c) => match bad.get(c) {
                None => return true,
                Some(why) => why.clone(),
            },
        };
        warnings.push(format!(
            "tombstone {name:?} from {remote} refused: {why} (agentRewind.requireSigned / --require-signed)"
        ));
        false
    });
    Ok(())
}
