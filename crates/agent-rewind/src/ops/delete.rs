//! `delete`: remove runs from this repository: their refs and their notes ref, with
//! compare-and-swap on the values read, in as few transactions as possible (a run is never
//! half deleted by a conflict). It refuses, unless forced, when another run's lineage passes
//! through a run being deleted (that run's history would lose its metadata).
//!
//! Deleting is local: like `git branch -d` leaves `origin/<branch>`, the fetched copies under
//! `refs/agent-runs-remote/` stay (the next `fetch --prune` drops them once the remote has
//! dropped the run). So that a later `fetch` of all runs does not bring a deleted run straight
//! back, the deleted tip is remembered (`.git/agent-rewind/deleted-runs`); a remote copy that
//! moved on, or a fetch naming the run, imports it again. Commits are not removed here: once
//! nothing references them, `git gc` prunes them on its own schedule. `delete --remote`
//! (`remote`) deletes the run on a remote too, leaving a tombstone that travels.

mod remote;
pub use remote::{RemoteDeleteOutcome, delete_here_and_there};

use super::list::list_runs;
use crate::catalog::RunSummary;
use crate::journal::{active_run, clear_active_run};
use crate::remote::staged::{self, LocalRun};
use crate::store::ObjectId;
use crate::store::{PackedDelete, PublishError, RefChange, Store, layout};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::private::envelope::DELETED_RUNS;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Runs deleted per transaction.
const CHUNK: usize = 500;
/// From this many runs, refs are deleted from `packed-refs` in one rewrite
/// (`Store::delete_packed_groups`) instead of a transaction per chunk that locks every ref.
const PACKED_FROM: usize = 100;

#[derive(Debug, Clone, Serialize)]
pub struct DeleteOutcome {
    pub run: String,
    /// The run's tip when it was deleted.
    pub head: Option<String>,
    pub refs_deleted: usize,
    /// Runs whose lineage passes through it (only with `force`).
    pub lineage_of: Vec<String>,
}

pub fn delete(store: &Store, run: &RunId, force: bool) -> Result<DeleteOutcome> {
    delete_leaving(store, run, force, false)
}

/// [`delete`]; with `tombstone`, the run leaves a tombstone as `gc`'s do (written before the
/// run is deleted, its ref created after), for a push to carry.
pub(crate) fn delete_leaving(
    store: &Store,
    run: &RunId,
    force: bool,
    tombstone: bool,
) -> Result<DeleteOutcome> {
    // Read before anything is deleted: a bad value changes nothing.
    let lifetime = match tombstone {
        true => Some(super::tombstones::lifetime(store)?),
        false => None,
    };
    let local = staged::local_run(store, run)?;
    if local == LocalRun::default() {
        return Err(crate::catalog::unknown_run(run));
    }
    let origins = origins_of(&list_runs(store, true)?.runs);
    let gone = BTreeSet::from([run.to_string()]);
    let lineage_of = dependents(&origins, &gone);
    if !lineage_of.is_empty() && !force {
        return Err(Error::refused(format!(
            "run {run} is in the lineage of {}: deleting it would cut their history",
            lineage_of.join(", ")
        ))
        .with_hint(
            "delete those runs first, or add --force (their commits stay, but the checkpoints of this run they pass through lose their metadata)",
        ));
    }
    let doomed: Vec<super::tombstones::Doomed> = local
        .head
        .filter(|_| lifetime.is_some())
        .map(|tip| super::tombstones::Doomed {
            run: run.clone(),
            tip,
            notes: local.notes,
        })
        .into_iter()
        .collect();
    let prepared = match lifetime {
        Some(l) => Some(super::tombstones::prepare(store, &doomed, l)?),
        None => None,
    };
    let deleted = delete_runs(store, &[(run.clone(), local.clone())])?;
    let refs_deleted = deleted.first().map(|(_, n)| *n).ok_or_else(|| {
        Error::conflict(format!("run {run} changed while it was being deleted"))
            .with_hint("run the command again")
    })?;
    if let Some(p) = prepared {
        let tips: Vec<(RunId, ObjectId)> = doomed.iter().map(|d| (d.run.clone(), d.tip)).collect();
        p.publish(store, &tips)?;
    }
    Ok(DeleteOutcome {
        run: run.to_string(),
        head: local.head.map(|h| h.to_string()),
        refs_deleted,
        lineage_of,
    })
}

/// Delete the given runs (with the ref values the caller read: a run that changed since is
/// left alone). Returns the runs deleted, with their ref counts.
pub(crate) fn delete_runs(
    store: &Store,
    runs: &[(RunId, LocalRun)],
) -> Result<Vec<(RunId, usize)>> {
    if runs.is_empty() {
        return Ok(vec![]);
    }
    // A damaged tombstone file is refused before any ref is deleted: nothing changes.
    deleted_runs(store)?;
    let mut done = vec![];
    let mut rest: Vec<(RunId, LocalRun)> = vec![];
    if runs.len() >= PACKED_FROM {
        // Many runs (gc): their refs packed, then deleted from packed-refs in one rewrite;
        // whatever is loose meanwhile goes through the per-ref transactions below.
        store.refs().pack_refs()?;
        agent_rewind_core::trace::mark("delete: refs packed");
        let groups: Vec<Vec<(String, ObjectId)>> = runs
            .iter()
            .map(|(r, l)| {
                changes_for(r, l)
                    .into_iter()
                    .filter_map(|c| Some((c.name, c.expected?)))
                    .collect()
            })
            .collect();
        let results = store.refs().delete_packed_groups(&groups)?;
        agent_rewind_core::trace::mark("delete: packed refs deleted");
        for ((run, local), (group, result)) in runs.iter().zip(groups.iter().zip(results)) {
            match result {
                PackedDelete::Deleted => done.push((run.clone(), group.len())),
                PackedDelete::NotPacked => rest.push((run.clone(), local.clone())),
                PackedDelete::Changed => {}
            }
        }
    }
    let runs_left: &[(RunId, LocalRun)] = if runs.len() >= PACKED_FROM {
        &rest
    } else {
        runs
    };
    for chunk in runs_left.chunks(CHUNK) {
        let changes: Vec<Vec<RefChange>> = chunk.iter().map(|(r, l)| changes_for(r, l)).collect();
        let all: Vec<RefChange> = changes.iter().flatten().cloned().collect();
        match store.refs().publish(&all, "agent-rewind: delete runs") {
            Ok(()) => done.extend(
                chunk
                    .iter()
                    .zip(&changes)
                    .map(|((r, _), c)| (r.clone(), c.len())),
            ),
            Err(PublishError::Conflict(_)) => {
                // Someone wrote to one of them: delete the others one by one.
                for ((r, _), c) in chunk.iter().zip(&changes) {
                    match store
                        .refs()
                        .publish(c, &format!("agent-rewind: delete run {r}"))
                    {
                        Ok(()) => done.push((r.clone(), c.len())),
                        Err(PublishError::Conflict(_)) => {}
                        Err(PublishError::Failed(e)) => return Err(e),
                    }
                }
            }
            Err(PublishError::Failed(e)) => return Err(e),
        }
    }
    agent_rewind_core::crash_point!("delete:refs-deleted");
    let deleted: std::collections::HashSet<&RunId> = done.iter().map(|(d, _)| d).collect();
    let tips: Vec<(RunId, ObjectId)> = runs
        .iter()
        .filter(|(r, _)| deleted.contains(r))
        .filter_map(|(r, l)| l.head.map(|h| (r.clone(), h)))
        .collect();
    remember_deleted(store, &tips)?;
    agent_rewind_core::trace::mark("delete: tombstones written");
    if let Ok(Some(active)) = active_run(store)
        && done.iter().any(|(d, _)| *d == active)
        && std::env::var_os("AGENT_RUN").is_none()
    {
        clear_active_run(store)?;
    }
    Ok(done)
}

/// Steps, then HEAD, then notes: a crash part-way leaves at worst a run without some refs,
/// which `delete` finishes on the next call.
fn changes_for(run: &RunId, l: &LocalRun) -> Vec<RefChange> {
    let mut c = vec![];
    for (step, id) in &l.steps {
        c.push(RefChange::delete(layout::listed_run_ref(run, step), *id));
    }
    if let Some(h) = l.head {
        c.push(RefChange::delete(layout::run_head(run), h));
    }
    if let Some(n) = l.notes {
        c.push(RefChange::delete(layout::notes_ref(run), n));
    }
    c
}

/// Each run's origin run (the run its root was rewound or forked from), from summaries.
pub(crate) fn origins_of(runs: &[RunSummary]) -> HashMap<String, String> {
    runs.iter()
        .filter_map(|s| {
            let link = s.rewound_from.as_ref().or(s.forked_from.as_ref())?;
            Some((s.run.clone(), link.run.clone()))
        })
        .collect()
}

/// The runs, not in `gone`, whose lineage passes through a run in `gone`, sorted.
pub(crate) fn dependents(
    origins: &HashMap<String, String>,
    gone: &BTreeSet<String>,
) -> Vec<String> {
    let mut out = vec![];
    for run in origins.keys() {
        if gone.contains(run) {
            continue;
        }
        let mut cur = run;
        let mut seen = BTreeSet::new();
        while let Some(o) = origins.get(cur) {
            if gone.contains(o) {
                out.push(run.clone());
                break;
            }
            if !seen.insert(o.clone()) {
                break;
            }
            cur = o;
        }
    }
    out.sort();
    out
}

/// Runs deleted here, with the tip they had.
pub fn deleted_runs(store: &Store) -> Result<BTreeMap<String, ObjectId>> {
    let Some(bytes) = DELETED_RUNS.read_state(&store.private().deleted_runs())? else {
        return Ok(BTreeMap::new());
    };
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| {
            let (run, hex) = l.split_once(' ')?;
            Some((
                run.to_string(),
                ObjectId::from_hex(hex.trim().as_bytes()).ok()?,
            ))
        })
        .collect())
}

fn update_tombstones(
    store: &Store,
    f: impl FnOnce(&mut BTreeMap<String, ObjectId>) -> bool,
) -> Result<()> {
    let _lock = store.locks().writer_lock("deleted-runs")?;
    let mut all = deleted_runs(store)?;
    if !f(&mut all) {
        return Ok(());
    }
    let body: String = all.iter().map(|(r, id)| format!("{r} {id}\n")).collect();
    DELETED_RUNS.write(&store.private().deleted_runs(), body.as_bytes())
}

fn remember_deleted(store: &Store, tips: &[(RunId, ObjectId)]) -> Result<()> {
    if tips.is_empty() {
        return Ok(());
    }
    update_tombstones(store, |all| {
        for (r, id) in tips {
            all.insert(r.to_string(), *id);
        }
        true
    })
}

/// The run exists again (imported or recreated): forget that it was deleted.
pub fn forget_deleted(store: &Store, run: &RunId) -> Result<()> {
    if !store.private().deleted_runs().exists() {
        return Ok(());
    }
    update_tombstones(store, |all| all.remove(run.as_str()).is_some())
}
