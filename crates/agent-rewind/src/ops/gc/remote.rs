//! `gc --remote <r> --dry-run`: what a remote holds and what the retention policy would
//! delete there, fetching nothing. The remote's runs and their refs come from one `git
//! ls-remote`; sizes and ages from this repository, for the runs it holds at the same tip
//! (what only they hold on disk, as `gc` measures local runs: an estimate of the remote's,
//! whose packs may differ); a run here at another tip, or not here, is listed without them
//! and never selected. The runs this clone's tombstones cover, which the next `push`
//! deletes there, are listed too.
//!
//! It only reads: it deletes nothing, here or there (`gc --remote` without `--dry-run` is
//! refused by the command line; deleting there is `delete --remote` or `gc` then `push`).

use super::{GcOptions, GcRun, KeptRun, select};
use crate::ops::push::retire::{self, RetireOptions, Retired};
use crate::remote::Remote;
use crate::remote::listing::remote_run_refs;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use agent_rewind_core::time::Timestamp;
use serde::Serialize;
use std::collections::BTreeMap;

/// One run the remote holds.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteRunInfo {
    pub run: String,
    /// Its refs there (`HEAD`, steps, notes).
    pub refs: usize,
    pub head: Option<String>,
    /// This repository holds the run at the same tip: its age and size are known here.
    pub same_here: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<Timestamp>,
    /// What only this run holds on disk here (estimate; `None`: not the same run here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RemoteGcOutcome {
    pub remote: String,
    pub dry_run: bool,
    /// Every run the remote holds, by name.
    pub runs: Vec<RemoteRunInfo>,
    /// What the runs held here at the same tip hold on disk and no branch, tag or
    /// remote-tracking branch reaches, each object once: an estimate of what deleting them
    /// there frees (the remote's packs and the runs not held here are not counted).
    pub bytes_estimate: u64,
    /// How many runs the estimate and the policy could not judge (not here at that tip).
    pub not_judged: usize,
    /// What the policy would delete there, newest first.
    pub would_delete: Vec<GcRun>,
    /// Selected but kept, and why (in use here, a kept run's lineage passes through it).
    pub kept: Vec<KeptRun>,
    /// Runs this clone's tombstones cover: the next `push` deletes them there.
    pub covered_by_tombstones: Vec<Retired>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::ops::retention::Policy>,
}

/// What `remote` holds, and what `opts` (the filters or the policy) would delete there.
pub fn gc_remote_dry_run(
    store: &Store,
    remote: &Remote,
    opts: &GcOptions,
) -> Result<RemoteGcOutcome> {
    let there = remote_run_refs(store, remote)?;
    let list = crate::ops::list::list_runs(store, true)?;
    let in_use = crate::ops::retention::in_use(store, &list.runs)?;
    let origins = crate::ops::delete::origins_of(&list.runs);
    let here: BTreeMap<&str, &crate::catalog::RunSummary> =
        list.runs.iter().map(|s| (s.run.as_str(), s)).collect();
    let mut runs = vec![];
    let mut same: Vec<(RunId, Timestamp, Option<String>)> = vec![];
    for (name, copy) in &there {
        let head = copy.head(name);
        let local = here
            .get(name.as_str())
            .filter(|s| head.is_some_and(|h| h == s.head.as_str()));
        let id = RunId::new(name.clone()).ok();
        let bytes = match (local, &id) {
            (Some(_), Some(id)) => Some(store.objects().runs_disk_usage(std::slice::from_ref(id))?),
            _ => None,
        };
        if let (Some(s), Some(id)) = (local, id) {
            same.push((id, s.last_activity, s.label.clone()));
        }
        runs.push(RemoteRunInfo {
            run: name.clone(),
            refs: copy.all_refs(name).len(),
            head: head.map(|h| h.to_string()),
            same_here: local.is_some(),
            last_activity: local.map(|s| s.last_activity),
            bytes,
        });
    }
    same.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let ids: Vec<RunId> = same.iter().map(|(r, _, _)| r.clone()).collect();
    let bytes_estimate = store.objects().runs_disk_usage(&ids)?;
    let mut selection = select(store, &same, opts, &in_use)?;
    let would_delete = selection.deletions(&same, &origins);
    let mut kept = selection.kept;
    kept.sort_by(|a, b| a.run.cmp(&b.run));
    let covered_by_tombstones = retire::retire(
        store,
        remote,
        &RetireOptions {
            only: None,
            dry_run: true,
        },
        Some(there),
    )?;
    Ok(RemoteGcOutcome {
        remote: remote.target.clone(),
        dry_run: true,
        not_judged: runs.iter().filter(|r| !r.same_here).count(),
        runs,
        bytes_estimate,
        would_delete,
        kept,
        covered_by_tombstones,
        policy: opts.policy.clone(),
    })
}
