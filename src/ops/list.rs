//! `list`: the runs of the repository (two note reads per run, whatever its length), or the
//! checkpoints of one run in chain order. A run whose notes cannot be read is reported as a
//! problem and the others are still listed.

use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::Store;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct RunList {
    pub runs: Vec<RunSummary>,
    /// Runs that could not be read, with the reason (malformed notes, invalid names).
    pub problems: Vec<String>,
}

/// All runs, newest activity first; archived runs only with `all`.
pub fn list_runs(store: &Store, all: bool) -> Result<RunList> {
    let (runs, invalid) = store.run_ref_sets()?;
    let mut problems: Vec<String> = invalid
        .into_iter()
        .map(|r| format!("{r:?}: invalid run or step name, skipped"))
        .collect();
    let mut catalog = Catalog::new(store);
    let mut out = Vec::with_capacity(runs.len());
    for refs in &runs {
        match catalog.summary_from_refs(refs) {
            Ok(s) if all || !s.archived => out.push(s),
            Ok(_) => {}
            Err(e) => problems.push(format!("{}: {}", refs.run, e.message)),
        }
    }
    out.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.run.cmp(&b.run))
    });
    Ok(RunList {
        runs: out,
        problems,
    })
}

/// The checkpoints of one run, oldest first.
pub fn list_checkpoints(store: &Store, run: &RunId) -> Result<Vec<Checkpoint>> {
    Catalog::new(store).run_chain(run)
}
