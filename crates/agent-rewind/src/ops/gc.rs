//! `gc`: retention. Selects the runs whose last activity is older than a duration and/or
//! that fall beyond the newest N, lists them, and (without `--dry-run`) deletes exactly
//! those through `delete`, then packs refs (`git pack-refs --all`) so listing stays fast.
//! With a duration it also drops the safety backups older than it, except the newest of each
//! worktree (`materialize::trim_backups`).
//!
//! It never deletes, without saying so, a run that a kept run's lineage passes through: such
//! a run is kept and reported with the run that needs it. Nor the active run of this
//! worktree, nor a run it cannot read. `--dry-run` changes nothing. Objects are left to
//! `git gc`; reflogs of deleted refs are removed with them (the others only ever hold
//! ancestors of their ref's current value, so they keep nothing alive). `gc --remote
//! --dry-run` (`remote`) says what a remote holds and what the policy would delete there.

mod remote;
pub use remote::{RemoteGcOutcome, RemoteRunInfo, gc_remote_dry_run};

use super::delete::{delete_runs, dependents, origins_of};
use super::list::list_runs;
use crate::remote::staged;
use crate::store::Store;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::time::Timestamp;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Clone, Default)]
pub struct GcOptions {
    /// Only runs whose last activity is older than this many seconds.
    pub older_than: Option<i64>,
    /// Never the newest N runs.
    pub keep: Option<usize>,
    /// The retention policy instead (`agentRewind.retain`): a run past any of its limits.
    pub policy: Option<super::retention::Policy>,
    pub dry_run: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct GcRun {
    pub run: String,
    pub last_activity: Timestamp,
    pub label: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeptRun {
    pub run: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct GcOutcome {
    pub dry_run: bool,
    /// Deleted (or, with `dry_run`, that would be deleted), newest first.
    pub deleted: Vec<GcRun>,
    /// Selected by age/count but kept, and why.
    pub kept: Vec<KeptRun>,
    /// Runs that could not be read (never deleted by gc).
    pub problems: Vec<String>,
    pub runs_before: usize,
    pub runs_after: usize,
    pub refs_packed: bool,
    /// The safety backups dropped for their age (only with `--older-than`).
    pub backups: Option<crate::materialize::BackupTrim>,
    /// Tombstones left for the deleted runs (pushed by the next `push`, so that other
    /// clones do not bring them back), and expired tombstones dropped.
    pub tombstones_written: usize,
    pub tombstones_expired: usize,
    /// The retention policy applied, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<super::retention::Policy>,
}

pub fn gc(store: &Store, opts: &GcOptions) -> Result<GcOutcome> {
    if opts.older_than.is_none() && opts.keep.is_none() && opts.policy.is_none() {
        return Err(
            Error::usage("gc needs --older-than DUR and/or --keep N, or a policy")
                .with_hint("e.g. `git agent-rewind gc --older-than 30d --keep 20 --dry-run`"),
        );
    }
    // Read before anything is deleted: a bad value changes nothing.
    let lifetime = super::tombstones::lifetime(store)?;
    // Locks a killed command of ours left on refs nothing may write to again soon (a gc
    // killed while it deleted runs): the next one removes them, and never anyone else's.
    if !opts.dry_run {
        store.refs().sweep_stale_locks();
    }
    // One pass over the refs, two note reads per run (like `list`); newest first.
    let list = list_runs(store, true)?;
    agent_rewind_core::trace::mark("gc: listed");
    let problems: Vec<String> = list
        .problems
        .iter()
        .map(|p| format!("{p} (left alone)"))
        .collect();
    let origins = origins_of(&list.runs);
    // Never what is in use (the active run of any worktree, a checked-out checkpoint's run,
    // a pending gate), nor what a kept run's lineage passes through.
    let in_use = super::retention::in_use(store, &list.runs)?;
    let mut runs: Vec<(RunId, Timestamp, Option<String>)> = list
        .runs
        .into_iter()
        .filter_map(|s| Some((RunId::new(s.run).ok()?, s.last_activity, s.label)))
        .collect();
    runs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let runs_before = runs.len();
    let mut selection = select(store, &runs, opts, &in_use)?;
    let mut deleted = selection.deletions(&runs, &origins);
    let Selection {
        mut kept, cutoff, ..
    } = selection;
    let mut refs_packed = false;
    let (mut tombstones_written, mut tombstones_expired) = (0, 0);
    if !opts.dry_run {
        // Runs that came from others first, so a lineage is never cut by a partial gc.
        let order = lineage_order(&deleted, &origins);
        agent_rewind_core::trace::mark("gc: selected");
        let locals = staged::local_runs(store)?;
        agent_rewind_core::trace::mark("gc: local refs read");
        let batch: Vec<_> = order
            .iter()
            .filter_map(|r| {
                let run = RunId::new(r.clone()).ok()?;
                Some((run, locals.get(r.as_str())?.clone()))
            })
            .collect();
        // Written (and signed) before anything is deleted: a key that cannot sign changes
        // nothing. Only the refs of the runs deleted are created after.
        let heads: Vec<super::tombstones::Doomed> = batch
            .iter()
            .filter_map(|(r, l)| {
                Some(super::tombstones::Doomed {
                    run: r.clone(),
                    tip: l.head?,
                    notes: l.notes,
                })
            })
            .collect();
        let tombstones = super::tombstones::prepare(store, &heads, lifetime)?;
        let done: BTreeSet<String> = delete_runs(store, &batch)?
            .into_iter()
            .map(|(r, _)| r.to_string())
            .collect();
        deleted.retain(|d| {
            let ok = done.contains(&d.run);
            if !ok {
                kept.push(KeptRun {
                    run: d.run.clone(),
                    reason: "it changed while gc ran".into(),
                });
            }
            ok
        });
        let tips: Vec<(RunId, crate::store::ObjectId)> = batch
            .iter()
            .filter(|(r, _)| done.contains(r.as_str()))
            .filter_map(|(r, l)| Some((r.clone(), l.head?)))
            .collect();
        tombstones_written = tombstones.publish(store, &tips)?;
        tombstones_expired = super::tombstones::prune_expired(store)?;
        agent_rewind_core::crash_point!("gc:runs-deleted");
        agent_rewind_core::trace::mark("gc: runs deleted");
        store.refs().pack_refs()?;
        agent_rewind_core::trace::mark("gc: refs packed");
        agent_rewind_core::crash_point!("gc:refs-packed");
        refs_packed = true;
    }
    let backups = match cutoff {
        Some(c) => Some(crate::materialize::trim_backups(
            store,
            c.as_second(),
            opts.dry_run,
        )?),
        None => None,
    };
    kept.sort_by(|a, b| a.run.cmp(&b.run));
    Ok(GcOutcome {
        dry_run: opts.dry_run,
        runs_after: if opts.dry_run {
            runs_before
        } else {
            runs_before - deleted.len()
        },
        deleted,
        kept,
        problems,
        runs_before,
        refs_packed,
        backups,
        tombstones_written,
        tombstones_expired,
        policy: opts.policy.clone(),
    })
}

/// Runs (newest first) with their last activity and label.
type Listed = (RunId, Timestamp, Option<String>);

/// What the filters (or the policy) select.
struct Selection {
    /// Indexes into the runs.
    selected: Vec<usize>,
    /// The selected runs to delete: not in use, plus the oldest runs a size limit takes.
    gone: BTreeSet<String>,
    /// Selected but kept, and why.
    kept: Vec<KeptRun>,
    /// The age cutoff.
    cutoff: Option<Timestamp>,
}

impl Selection {
    /// The selected runs of `runs` that go, once every run a remaining run's lineage passes
    /// through is kept (moved to `kept`, with why).
    fn deletions(&mut self, runs: &[Listed], origins: &HashMap<String, String>) -> Vec<GcRun> {
        loop {
            let needed = needed_by(origins, &self.gone);
            if needed.is_empty() {
                break;
            }
            for (run, by) in needed {
                self.gone.remove(&run);
                self.kept.push(KeptRun {
                    run,
                    reason: format!("the lineage of {by} passes through it"),
                });
            }
        }
        self.selected
            .iter()
            .map(|i| &runs[*i])
            .filter(|(r, _, _)| self.gone.contains(r.as_str()))
            .map(|(r, ts, label)| GcRun {
                run: r.to_string(),
                last_activity: *ts,
                label: label.clone(),
            })
            .collect()
    }
}

fn select(
    store: &Store,
    runs: &[Listed],
    opts: &GcOptions,
    in_use: &std::collections::BTreeMap<String, String>,
) -> Result<Selection> {
    let age = opts
        .older_than
        .or(opts.policy.as_ref().and_then(|p| p.max_age));
    let cutoff = age.map(|secs| Timestamp::now().minus_seconds(secs));
    let mut selected: Vec<usize> = match &opts.policy {
        // Past any limit of the policy.
        Some(p) => (0..runs.len())
            .filter(|i| {
                p.max_runs.is_some_and(|k| *i >= k) || cutoff.is_some_and(|c| runs[*i].1 <= c)
            })
            .collect(),
        // Every filter given.
        None => (0..runs.len())
            .filter(|i| opts.keep.is_none_or(|k| *i >= k))
            .filter(|i| cutoff.is_none_or(|c| runs[*i].1 <= c))
            .collect(),
    };

    let mut kept = vec![];
    let mut gone: BTreeSet<String> = BTreeSet::new();
    for i in &selected {
        let run = runs[*i].0.as_str();
        match in_use.get(run) {
            Some(why) => kept.push(KeptRun {
                run: run.to_string(),
                reason: why.clone(),
            }),
            None => {
                gone.insert(run.to_string());
            }
        }
    }
    if let Some(max) = opts.policy.as_ref().and_then(|p| p.max_bytes) {
        let (candidates, staying): (Vec<usize>, Vec<usize>) = (0..runs.len())
            .rev()
            .filter(|i| !gone.contains(runs[*i].0.as_str()))
            .partition(|i| !in_use.contains_key(runs[*i].0.as_str()));
        let ids = |v: &[usize]| v.iter().map(|i| runs[*i].0.clone()).collect::<Vec<_>>();
        let k = super::retention::past_size(store, &ids(&candidates), &ids(&staying), max)?;
        for i in &candidates[..k] {
            gone.insert(runs[*i].0.to_string());
            selected.push(*i);
        }
        selected.sort_unstable();
    }
    Ok(Selection {
        selected,
        gone,
        kept,
        cutoff,
    })
}

/// Runs in `gone` that a run outside it needs, with one run that needs each.
fn needed_by(origins: &HashMap<String, String>, gone: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut out = vec![];
    for by in dependents(origins, gone) {
        // The first run of `gone` on `by`'s origin chain.
        let mut cur = by.clone();
        let mut steps = 0;
        while let Some(o) = origins.get(&cur) {
            if gone.contains(o) {
                if !out.iter().any(|(r, _)| r == o) {
                    out.push((o.clone(), by.clone()));
                }
                break;
            }
            cur = o.clone();
            steps += 1;
            if steps > origins.len() {
                break;
            }
        }
    }
    out
}

/// Deleted runs ordered so that a run comes before the run it came from.
fn lineage_order(deleted: &[GcRun], origins: &HashMap<String, String>) -> Vec<String> {
    let depth = |r: &str| {
        let mut d = 0usize;
        let mut cur = r.to_string();
        while let Some(o) = origins.get(&cur) {
            d += 1;
            if d > origins.len() {
                break;
            }
            cur = o.clone();
        }
        d
    };
    let mut v: Vec<(usize, String)> = deleted
        .iter()
        .map(|d| (depth(&d.run), d.run.clone()))
        .collect();
    v.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    v.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        use agent_rewind_core::time::parse_age;
        assert_eq!(parse_age("30d").unwrap(), 30 * 86_400);
        assert_eq!(parse_age("1d12h").unwrap(), 36 * 3600);
        assert_eq!(parse_age("0s").unwrap(), 0);
        for bad in ["", "10", "d", "5x", "-1d"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lineage_is_kept_and_ordered() {
        let origins: HashMap<String, String> = [("b", "a"), ("c", "b")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let gone: BTreeSet<String> = ["a", "b"].map(String::from).into();
        assert_eq!(
            needed_by(&origins, &gone),
            vec![("b".to_string(), "c".to_string())]
        );
        let all: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
        assert!(needed_by(&origins, &all).is_empty());
        let runs: Vec<GcRun> = ["a", "b", "c"]
            .map(|r| GcRun {
                run: r.into(),
                last_activity: Timestamp::EPOCH,
                label: None,
            })
            .into();
        assert_eq!(lineage_order(&runs, &origins), vec!["c", "b", "a"]);
    }
}
