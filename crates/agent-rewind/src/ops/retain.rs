//! What the retention policy (`crate::retention`) selects: the runs that
//! are in use and so never deleted, how many of the oldest runs a size limit takes, and the
//! report of what the background policy deleted, kept for the next command a person runs.
//!
//! Owns the report. Deleting is `gc`'s; this module never deletes a run, and never selects
//! one that is in use.

use crate::catalog::RunSummary;
use crate::error::Result;
use crate::ids::RunId;
use crate::retention::{KEY, Policy};
use crate::store::private::envelope::RETENTION_REPORT;
use crate::store::{Store, Trailers, read_if_exists};
use std::collections::BTreeMap;

/// The runs no policy deletes, with why: the active run of every worktree, a run a
/// worktree's HEAD is a checkpoint of, and a run waiting at a gate or running a step.
pub fn in_use(store: &Store, runs: &[RunSummary]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if let Some(run) = crate::journal::active_run(store)? {
        out.insert(run.to_string(), "the active run of this worktree".into());
    }
    for w in store.worktree_uses()? {
        if let Ok(Some(run)) = crate::journal::active_run_in(&w.active_run_file) {
            out.entry(run.to_string())
                .or_insert_with(|| "the active run of a worktree".into());
        }
        if let Some(head) = w.head
            && let Ok(commit) = store.objects().read_commit(head)
            && let Some(run) = Trailers::parse(&commit.message).run
        {
            out.entry(run)
                .or_insert_with(|| "a worktree has one of its checkpoints checked out".into());
        }
    }
    for r in runs {
        let why = match r.status.as_str() {
            "awaiting_approval" | "approved" => "a gate is pending",
            "running" => "a step is running",
            _ => continue,
        };
        out.entry(r.run.clone()).or_insert_with(|| why.into());
    }
    Ok(out)
}

/// How many of `oldest_first` (deletable runs, oldest first) must go so that what the runs
/// left hold on disk (`kept` are staying anyway) is at most `max_bytes`: the fewest that do,
/// or all of them when even that is not enough. Binary search: each probe is one `git
/// rev-list --disk-usage` of the runs that would be left.
pub fn past_size(
    store: &Store,
    oldest_first: &[RunId],
    kept: &[RunId],
    max_bytes: u64,
) -> Result<usize> {
    let usage = |k: usize| -> Result<u64> {
        let left: Vec<RunId> = kept
            .iter()
            .chain(oldest_first[k..].iter())
            .cloned()
            .collect();
        store.objects().runs_disk_usage(&left)
    };
    let (mut lo, mut hi) = (0, oldest_first.len());
    if usage(0)? <= max_bytes {
        return Ok(0);
    }
    // usage(lo) > max_bytes; find the smallest hi with usage(hi) <= max_bytes (or the end).
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        if usage(mid)? <= max_bytes {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Keep, for the next command a person runs, what the policy deleted.
pub fn report(store: &Store, policy: &Policy, deleted: &[super::gc::GcRun]) -> Result<()> {
    let lines: Vec<String> = deleted
        .iter()
        .map(|d| {
            format!(
                "retention ({KEY}={}) deleted run {} (last active {}{})",
                policy.text,
                d.run,
                d.last_activity,
                d.label
                    .as_ref()
                    .map(|l| format!(", {l:?}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    RETENTION_REPORT.append(&store.private().retention_report(), &lines)
}

/// What the policy deleted since it was last told, told once: the report is removed. A
/// damaged report is told by name and removed (it held only what was to be told).
pub fn take_report(store: &Store) -> Vec<String> {
    let path = store.private().retention_report();
    let Ok(Some(bytes)) = read_if_exists(&path) else {
        return vec![];
    };
    let lines = match RETENTION_REPORT.records(&path, &bytes) {
        Ok(lines) => lines.into_iter().filter(|l| !l.is_empty()).collect(),
        Err(e) => vec![e.to_string()],
    };
    let _ = crate::store::remove_if_exists(&path);
    lines
}
