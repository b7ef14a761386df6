//! Runs retired on the remote: every `push` (and `delete --remote`) deletes, on the remote,
//! the runs this repository's own tombstones cover, so that retention reaches the team's
//! remote instead of only keeping clones from importing a deleted run again.
//!
//! It never deletes a ref whose value there is not the tombstoned tip (for the notes ref: the
//! tombstoned notes commit) or an ancestor of it: a teammate who pushed newer checkpoints or
//! records to the run keeps the whole run there, and the report says so. It never forces:
//! each deletion carries `--force-with-lease=<ref>:<value read>`, in one `git push --atomic`
//! per batch (a run goes whole or not at all), so a ref that moved after it was read is not
//! deleted. It never deletes a run that exists here (named, fetched or recorded again since),
//! nor anything a tombstone taken from a remote names.

use super::super::tombstones::{self, Tombstone};
use crate::remote::listing::{RemoteRun, remote_run_refs};
use crate::remote::{self, Remote};
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The most ref deletions in one `git push` (bounds the command line); a host's
/// `agentRewind.pushRefsPerPush` lowers it.
const REFS_PER_PUSH: usize = 1000;

/// What happened to one covered run on the remote.
#[derive(Debug, Clone, Serialize)]
pub struct Retired {
    pub run: String,
    /// `deleted`, `would delete` (a dry run), `kept` (with the reason), `not on the remote`.
    pub result: &'static str,
    /// How many refs (its `HEAD`, steps, notes) were (or would be) deleted there.
    pub refs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Which covered runs to look at, and whether to change anything.
#[derive(Debug, Clone, Default)]
pub struct RetireOptions {
    /// Only these runs (`delete --remote`); every covered run when `None`.
    pub only: Option<Vec<RunId>>,
    /// Say what would be deleted; delete nothing.
    pub dry_run: bool,
}

/// A run the remote holds that a tombstone covers: what to delete there, at which values.
struct Doomed {
    run: String,
    refs: Vec<(String, ObjectId)>,
}

/// Delete, on `remote`, the runs this repository's tombstones cover (see the module). One
/// `git ls-remote` when there is any tombstone (or `known` instead, when the caller read the
/// remote already), then the deletions.
pub fn retire(
    store: &Store,
    remote: &Remote,
    opts: &RetireOptions,
    known: Option<BTreeMap<String, RemoteRun>>,
) -> Result<Vec<Retired>> {
    let mut tombs: BTreeMap<String, Vec<Tombstone>> = BTreeMap::new();
    for t in tombstones::own(store)? {
        tombs.entry(t.run.clone()).or_default().push(t);
    }
    if let Some(only) = &opts.only {
        let only: BTreeSet<&str> = only.iter().map(RunId::as_str).collect();
        tombs.retain(|run, _| only.contains(run.as_str()));
    }
    if tombs.is_empty() {
        return Ok(vec![]);
    }
    let there = match known {
        Some(k) => k,
        None => remote_run_refs(store, remote)?,
    };
    let (here, _) = store.refs().list_runs()?;
    let here: BTreeSet<String> = here.into_iter().map(|(r, _)| r.to_string()).collect();
    let mut out = vec![];
    let mut doomed = vec![];
    for (run, ts) in &tombs {
        let Some(copy) = there.get(run) else {
            if opts.only.is_some() {
                out.push(report(run, "not on the remote", 0, None));
            }
            continue;
        };
        if here.contains(run) {
            out.push(report(
                run,
                "kept",
                0,
                Some("it exists here again (fetched or recorded since it was deleted): push it, or delete it again".into()),
            ));
            continue;
        }
        match why_kept(store, run, copy, ts) {
            Some(why) => out.push(report(run, "kept", 0, Some(why))),
            None => doomed.push(Doomed {
                run: run.clone(),
                refs: copy.all_refs(run),
            }),
        }
    }
    if opts.dry_run {
        out.extend(
            doomed
                .iter()
                .map(|d| report(&d.run, "would delete", d.refs.len(), None)),
        );
    } else {
        out.extend(delete_there(store, remote, &doomed)?);
    }
    out.sort_by(|a, b| a.run.cmp(&b.run));
    Ok(out)
}

fn report(run: &str, result: &'static str, refs: usize, reason: Option<String>) -> Retired {
    Retired {
        run: run.to_string(),
        result,
        refs,
        reason,
    }
}

/// Whether `value` is `tip` or an ancestor of it (both must be here to tell).
fn within(store: &Store, value: ObjectId, tip: ObjectId) -> bool {
    value == tip
        || (store.objects().has_object(value)
            && store.objects().has_object(tip)
            && store.objects().is_ancestor(value, tip).unwrap_or(false))
}

/// Why the remote's copy of `run` stays (`None`: every ref of it is covered).
fn why_kept(store: &Store, run: &str, copy: &RemoteRun, ts: &[Tombstone]) -> Option<String> {
    let tips: Vec<ObjectId> = ts
        .iter()
        .filter_map(|t| ObjectId::from_hex(t.tip.as_bytes()).ok())
        .collect();
    let moved = copy
        .refs
        .values()
        .any(|v| !tips.iter().any(|tip| within(store, *v, *tip)));
    if moved || copy.head(run).is_none() {
        return Some(
            "the remote copy moved on (checkpoints this clone never deleted: a teammate's newer work stays)".into(),
        );
    }
    let notes = copy.notes?;
    let covered = ts.iter().any(|t| match &t.notes {
        Some(hex) => ObjectId::from_hex(hex.as_bytes()).is_ok_and(|n| within(store, notes, n)),
        // A tombstone written before the notes were recorded: a notes commit this clone
        // holds is one it saw, not a record added elsewhere since.
        None => store.objects().has_object(notes),
    });
    (!covered).then(|| {
        "its notes on the remote moved on (a record this clone never deleted stays)".into()
    })
}

/// Delete the doomed runs there: atomic pushes of leased deletions, several runs each; when
/// one is refused, each of its runs again alone, so that only the run that moved stays.
fn delete_there(store: &Store, remote: &Remote, doomed: &[Doomed]) -> Result<Vec<Retired>> {
    let limit = super::refs_per_push(store)?
        .unwrap_or(REFS_PER_PUSH)
        .min(REFS_PER_PUSH);
    let mut batches: Vec<Vec<&Doomed>> = vec![];
    let mut size = 0;
    for d in doomed {
        if batches.is_empty() || size + d.refs.len() > limit {
            batches.push(vec![]);
            size = 0;
        }
        size += d.refs.len();
        batches.last_mut().expect("pushed above").push(d);
    }
    let mut out = vec![];
    for batch in batches {
        if push_deletions(store, remote, &batch)?.is_ok() {
            out.extend(deleted(&batch));
            continue;
        }
        // One of them moved (or the remote refused it): each alone, so the others go.
        for d in batch {
            match push_deletions(store, remote, &[d])? {
                Ok(()) => out.extend(deleted(&[d])),
                Err(mut why) => {
                    let reason = why
                        .remove(&d.run)
                        .unwrap_or_else(|| "the remote refused the deletion".into());
                    out.push(report(&d.run, "kept", 0, Some(reason)));
                }
            }
        }
    }
    Ok(out)
}

fn deleted(batch: &[&Doomed]) -> Vec<Retired> {
    batch
        .iter()
        .map(|d| report(&d.run, "deleted", d.refs.len(), None))
        .collect()
}

/// One atomic push deleting `batch`'s refs, each leased at the value read. `Err` (inside)
/// when the remote refused it: the reason per run whose own ref was refused.
fn push_deletions(
    store: &Store,
    remote: &Remote,
    batch: &[&Doomed],
) -> Result<std::result::Result<(), BTreeMap<String, String>>> {
    let mut specs = vec![];
    for d in batch {
        for (name, value) in &d.refs {
            specs.push(format!("--force-with-lease={name}:{value}"));
            specs.push(format!(":{name}"));
        }
    }
    let attempt = remote::push_atomic(store, remote, &specs)?;
    if attempt.refs.is_empty() && !attempt.success {
        return Err(Error::other(format!(
            "`git push` deleting covered runs on {} failed: {}",
            remote.target,
            if attempt.stderr.is_empty() {
                "no output"
            } else {
                &attempt.stderr
            }
        ))
        .with_hint("check that the remote is reachable and writable (`git push --dry-run`)"));
    }
    if attempt.success {
        return Ok(Ok(()));
    }
    let mut reasons = BTreeMap::new();
    for r in attempt
        .refs
        .iter()
        .filter(|r| r.rejected() && !r.collateral())
    {
        if let Some((run, _)) = remote::run_of_ref(&r.dst) {
            let why = if r.summary.contains("stale info") {
                "it moved on the remote while this push ran (not deleted; fetch to see it)"
                    .to_string()
            } else {
                format!("the remote refused to delete {}: {}", r.dst, r.summary)
            };
            reasons.insert(run, why);
        }
    }
    Ok(Err(reasons))
}
