//! `list`: the runs of the repository, or the checkpoints of one run in chain order.
//!
//! Listing runs reads the refs once (`refs/agent-runs/` and `refs/notes/agent-runs/`), then
//! each run's summary: from the summary cache when the run's (HEAD, notes tip) pair is the one
//! the cache was built from, else from two notes (tip and root). The cache
//! (`<git-common-dir>/agent-rewind/cache/runs.json`) is only ever an optimisation: a missing,
//! stale or unreadable cache is rebuilt, never trusted. A run whose notes cannot be read is
//! reported as a problem and the others are still listed.

use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::{Store, write_atomic};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Debug, Clone, Serialize)]
pub struct RunList {
    pub runs: Vec<RunSummary>,
    /// Runs that could not be read, with the reason (malformed notes, invalid names).
    pub problems: Vec<String>,
    /// Archived runs left out (without `all`).
    pub archived_hidden: usize,
}

const CACHE_VERSION: u32 = 2;

#[derive(Serialize, Deserialize, Default)]
struct SummaryCache {
    version: u32,
    /// Run → the refs its summary was computed from, and the summary.
    runs: HashMap<String, CachedSummary>,
}

#[derive(Serialize, Deserialize, Clone)]
struct CachedSummary {
    head: String,
    notes: Option<String>,
    summary: RunSummary,
}

fn load_cache(store: &Store) -> SummaryCache {
    std::fs::read(store.private().runs_cache())
        .ok()
        .and_then(|b| serde_json::from_slice::<SummaryCache>(&b).ok())
        .filter(|c| c.version == CACHE_VERSION)
        .unwrap_or_default()
}

/// Best effort: a cache that cannot be written only costs the next `list` some time.
fn save_cache(store: &Store, cache: &SummaryCache) {
    if let Ok(bytes) = serde_json::to_vec(cache) {
        let _ = write_atomic(&store.private().runs_cache(), &bytes, None);
    }
}

/// All runs, newest activity first; archived runs only with `all`.
pub fn list_runs(store: &Store, all: bool) -> Result<RunList> {
    let (runs, invalid) = store.run_ref_sets()?;
    let mut problems: Vec<String> = invalid
        .into_iter()
        .map(|r| format!("{r:?}: invalid run or step name, skipped"))
        .collect();
    let notes_tips = store.notes_tips()?;
    let old = load_cache(store);
    let mut fresh = SummaryCache {
        version: CACHE_VERSION,
        runs: HashMap::with_capacity(runs.len()),
    };
    let mut catalog = Catalog::new(store).with_notes_tips(notes_tips.clone());
    let mut out = Vec::with_capacity(runs.len());
    let mut archived_hidden = 0;
    for refs in &runs {
        let head = refs.head.to_string();
        let notes = notes_tips.get(refs.run.as_str()).map(|n| n.to_string());
        let cached = old
            .runs
            .get(refs.run.as_str())
            .filter(|c| c.head == head && c.notes == notes)
            .map(|c| c.summary.clone());
        let summary = match cached {
            Some(mut s) => {
                s.steps = refs.steps.iter().map(|(s, _)| s.to_string()).collect();
                s
            }
            None => match catalog.summary_from_refs(refs) {
                Ok(s) => s,
                Err(e) => {
                    problems.push(format!("{}: {}", refs.run, e.message));
                    continue;
                }
            },
        };
        fresh.runs.insert(
            refs.run.to_string(),
            CachedSummary {
                head,
                notes,
                summary: summary.clone(),
            },
        );
        if all || !summary.archived {
            out.push(summary);
        } else {
            archived_hidden += 1;
        }
    }
    let changed = fresh.runs.len() != old.runs.len()
        || fresh.runs.iter().any(|(k, v)| {
            old.runs
                .get(k)
                .is_none_or(|o| o.head != v.head || o.notes != v.notes)
        });
    if changed {
        save_cache(store, &fresh);
    }
    // Prefixes are unique among every run, shown or not (a prefix resolves against all).
    let ids: Vec<&str> = runs.iter().map(|r| r.run.as_str()).collect();
    let prefixes: HashMap<&str, usize> = ids
        .iter()
        .copied()
        .zip(crate::ids::shortest_unique_prefixes(&ids))
        .collect();
    for s in &mut out {
        s.unique_prefix = prefixes.get(s.run.as_str()).copied().unwrap_or(s.run.len());
    }
    out.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.run.cmp(&b.run))
    });
    Ok(RunList {
        runs: out,
        problems,
        archived_hidden,
    })
}

/// The checkpoints of one run, oldest first.
pub fn list_checkpoints(store: &Store, run: &RunId) -> Result<Vec<Checkpoint>> {
    let chain = Catalog::new(store).run_chain(run);
    crate::trace::mark("list: chain read");
    chain
}
