//! `log`: lineage. Without `--graph`: the first-parent walk from a run's tip back through
//! every run it was rewound or forked from, to the first run (plain `git log
//! --first-parent`, read as checkpoints). With `--graph`: the tree of runs that share the
//! same first run, each with the checkpoint it came from; with no run named, every tree
//! (as `git log --graph --all`).

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

/// Every tree of runs, the tree with the newest activity first: each first run (one that
/// came from no run, or from a run no longer here) with its descendants. A run caught in a
/// cycle of crafted lineage links starts a tree of its own, so every run is shown once.
pub fn lineage_forest(store: &Store) -> Result<Vec<LineageNode>> {
    let summaries = crate::ops::list::list_runs(store, true)?.runs;
    let present: std::collections::HashSet<&str> =
        summaries.iter().map(|s| s.run.as_str()).collect();
    let mut placed = std::collections::HashSet::new();
    let mut trees = vec![];
    let mut by_name: Vec<&RunSummary> = summaries.iter().collect();
    by_name.sort_by(|a, b| a.run.cmp(&b.run));
    let firsts = by_name
        .iter()
        .filter(|s| origin_run(s).is_none_or(|o| !present.contains(o.as_str())));
    for s in firsts.chain(by_name.iter()) {
        if !placed.contains(&s.run) {
            trees.push(build((*s).clone(), &summaries, &mut placed));
        }
    }
    trees.sort_by_key(|t| std::cmp::Reverse(t.newest_activity()));
    Ok(trees)
}

impl LineageNode {
    /// The newest activity of this run and its descendants.
    fn newest_activity(&self) -> agent_rewind_core::time::Timestamp {
        self.children
            .iter()
            .map(LineageNode::newest_activity)
            .fold(self.summary.last_activity, std::cmp::max)
    }

    /// Whether this run and all its descendants are archived.
    pub fn all_archived(&self) -> bool {
        self.summary.archived && self.children.iter().all(LineageNode::all_archived)
    }

    /// How many runs this node holds, itself included.
    pub fn runs(&self) -> usize {
        1 + self.children.iter().map(LineageNode::runs).sum::<usize>()
    }
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
