//! `log`: lineage. Without `--graph`: the first-parent walk from a run's tip back through
//! every run it was rewound or forked from, to the first run (plain `git log
//! --first-parent`, read as checkpoints). With `--graph`: the tree of runs that share the
//! same first run, each with the checkpoint it came from.

use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use serde::Serialize;

/// Newest first, across runs.
pub fn lineage(store: &Store, run: &RunId) -> Result<Vec<Checkpoint>> {
    let mut catalog = Catalog::new(store);
    let tip = catalog.require_run_tip(run)?;
    catalog.lineage_chain(tip.id(), usize::MAX)
}

/// A run in the lineage tree.
#[derive(Debug, Clone, Serialize)]
pub struct LineageNode {
    #[serde(flatten)]
    pub summary: RunSummary,
    /// `rewound` / `forked` / `null` for the first run.
    pub relation: Option<&'static str>,
    pub children: Vec<LineageNode>,
}

/// The whole tree of runs that `run` belongs to, rooted at the first run.
pub fn lineage_graph(store: &Store, run: &RunId) -> Result<LineageNode> {
    let mut catalog = Catalog::new(store);
    catalog.require_run_tip(run)?;
    // Walk up to the first run.
    let mut top = catalog.summary(run)?;
    let mut seen = std::collections::HashSet::new();
    while let Some(parent) = origin_run(&top) {
        if !seen.insert(parent.clone()) {
            break;
        }
        match RunId::new(parent).ok().map(|p| catalog.summary(&p)) {
            Some(Ok(s)) => top = s,
            _ => break, // the source run was deleted or not fetched: the tree starts here
        }
    }
    // All runs, grouped by the run they came from.
    let (runs, _) = store.refs().list_runs()?;
    let mut summaries = vec![];
    for (r, _) in runs {
        if let Ok(s) = catalog.summary(&r) {
            summaries.push(s);
        }
    }
    let mut placed = std::collections::HashSet::new();
    Ok(build(top, &summaries, &mut placed))
}

fn origin_run(s: &RunSummary) -> Option<String> {
    s.rewound_from
        .as_ref()
        .or(s.forked_from.as_ref())
        .map(|l| l.run.clone())
}

/// The node of `summary` with its descendants. Each run is placed once: lineage links come
/// from notes (possibly fetched and crafted), so a cycle must end the walk, not loop it.
fn build(
    summary: RunSummary,
    all: &[RunSummary],
    placed: &mut std::collections::HashSet<String>,
) -> LineageNode {
    placed.insert(summary.run.clone());
    let relation = if summary.rewound_from.is_some() {
        Some("rewound")
    } else if summary.forked_from.is_some() {
        Some("forked")
    } else {
        None
    };
    let mut kids: Vec<&RunSummary> = all
        .iter()
        .filter(|c| origin_run(c).as_deref() == Some(summary.run.as_str()))
        .filter(|c| !placed.contains(&c.run))
        .collect();
    kids.sort_by(|a, b| a.run.cmp(&b.run));
    let mut children = Vec::with_capacity(kids.len());
    for c in kids {
        if !placed.contains(&c.run) {
            children.push(build(c.clone(), all, placed));
        }
    }
    LineageNode {
        summary,
        relation,
        children,
    }
}
