//! `view` and `log --graph --format`: the view model of the runs of a repository — each run's
//! chain of checkpoints, the rewind/fork edges between runs, every checkpoint's folded note
//! (with its appended records), a timeline of each run's step attempts, and the files changed
//! by the newest checkpoints against their predecessors.
//!
//! Plain data for a renderer (the `view` module draws it as HTML, Mermaid or Graphviz).
//! Reads through the catalog and the list's summaries; never writes refs, objects or notes,
//! and never renders anything itself.

use crate::catalog::{Catalog, Checkpoint, RunSummary, unknown_run};
use crate::model::{Event, NoteLine, Status, StepKind};
use crate::ops::diff::{FileDiff, file_diffs};
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use agent_rewind_core::time::Timestamp;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Checkpoints whose files changed are embedded by default (the newest ones).
pub const DEFAULT_DIFFS: usize = 100;
/// A file's patch longer than this is cut (at a line end) and marked truncated.
pub const MAX_PATCH_BYTES: usize = 64 * 1024;
/// At most this many files of one checkpoint are embedded; the rest are counted.
pub const MAX_FILES: usize = 300;

/// Which checkpoints get their changed files embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLimit {
    All,
    None,
    /// The newest N checkpoints (by time).
    Newest(usize),
}

impl DiffLimit {
    /// `all`, `none` or a number.
    pub fn parse(s: &str) -> Result<DiffLimit> {
        match s {
            "all" => Ok(DiffLimit::All),
            "none" => Ok(DiffLimit::None),
            n => n.parse().map(DiffLimit::Newest).map_err(|_| {
                Error::usage(format!(
                    "invalid --diffs {n:?}: expected all, none or a number"
                ))
            }),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ViewOptions {
    /// Only these runs and the runs of their lineage trees; empty: every run.
    pub runs: Vec<RunId>,
    pub diffs: DiffLimit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    /// From a checkpoint to the next one of the same run.
    Chain,
    /// From the checkpoint a run was rewound from to the run's root.
    Rewound,
    /// From the checkpoint a run was forked from to the run's root.
    Forked,
}

/// An edge between two checkpoints (indexes into [`ViewModel::checkpoints`]).
#[derive(Debug, Clone, Serialize)]
pub struct ViewEdge {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
}

/// Where a run came from.
#[derive(Debug, Clone, Serialize)]
pub struct Origin {
    pub kind: EdgeKind,
    pub run: String,
    pub step: Option<String>,
    pub checkpoint: String,
    /// The source checkpoint's index, when it is in the model.
    #[serde(skip)]
    pub index: Option<usize>,
}

/// A gate's wait for a decision.
#[derive(Debug, Clone, Serialize)]
pub struct Waiting {
    pub since: Timestamp,
    /// The first decision's time (`None`: still waiting).
    pub until: Option<Timestamp>,
    /// `approved` / `rejected`.
    pub decision: Option<String>,
}

/// One attempt of one step of a run: from its first checkpoint to its finish.
#[derive(Debug, Clone, Serialize)]
pub struct StepSpan {
    pub step: String,
    pub attempt: u32,
    pub kind: Option<StepKind>,
    /// The status of the attempt's last checkpoint (appended status lines folded in).
    pub status: Option<Status>,
    pub begin: Timestamp,
    /// `None` while the attempt has not finished.
    pub end: Option<Timestamp>,
    /// Indexes of the attempt's first and last checkpoints.
    pub first: usize,
    pub last: usize,
    pub waiting: Option<Waiting>,
}

/// A run: its summary, its lane of checkpoints and its step timeline.
#[derive(Debug, Clone, Serialize)]
pub struct ViewRun {
    #[serde(flatten)]
    pub summary: RunSummary,
    /// Archived and not asked for by name: shown folded away.
    pub folded: bool,
    /// The `agent` metadata of its newest checkpoint that has one.
    pub agent: Option<String>,
    /// The distinct agent session ids of its checkpoints, first seen first.
    pub sessions: Vec<String>,
    /// Its own checkpoints (indexes), oldest first.
    pub checkpoints: Vec<usize>,
    pub origin: Option<Origin>,
    pub steps: Vec<StepSpan>,
}

/// A changed file of a checkpoint, as embedded.
#[derive(Debug, Clone, Serialize)]
pub struct ViewFile {
    #[serde(flatten)]
    pub diff: FileDiff,
    /// The patch was cut at [`MAX_PATCH_BYTES`].
    pub truncated: bool,
}

/// The files a checkpoint changed against its first parent.
#[derive(Debug, Clone, Serialize)]
pub struct ViewFiles {
    pub files: Vec<ViewFile>,
    /// Changed files left out beyond [`MAX_FILES`].
    pub omitted: usize,
}

#[derive(Debug, Clone)]
pub struct ViewCheckpoint {
    pub checkpoint: Checkpoint,
    /// Index of its run in [`ViewModel::runs`].
    pub run: usize,
    /// Index of its first parent, when that is a checkpoint in the model.
    pub parent: Option<usize>,
    /// Embedded only for the checkpoints the [`DiffLimit`] chose.
    pub files: Option<ViewFiles>,
    /// Who signed it and git's verdict (`Signed::summary`), when it is signed.
    pub signed: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ViewModel {
    pub generated_at: Timestamp,
    /// Lanes in drawing order: each tree of runs depth first, children right below.
    pub runs: Vec<ViewRun>,
    pub checkpoints: Vec<ViewCheckpoint>,
    pub edges: Vec<ViewEdge>,
    /// Runs that could not be read, with the reason.
    pub problems: Vec<String>,
    /// The configured price of each model the checkpoints' `usage` names.
    pub prices: crate::ops::usage::Prices,
}

/// Build the view model.
pub fn build(store: &Store, opts: &ViewOptions) -> Result<ViewModel> {
    let list = crate::ops::list::list_runs(store, true)?;
    let mut problems = list.problems;
    let by_run: HashMap<&str, &RunSummary> =
        list.runs.iter().map(|s| (s.run.as_str(), s)).collect();
    for r in &opts.runs {
        if !by_run.contains_key(r.as_str()) {
            return Err(unknown_run(r));
        }
    }
    let named: HashSet<&str> = opts.runs.iter().map(|r| r.as_str()).collect();
    let ordered = lane_order(&list.runs, &named);

    let mut catalog = Catalog::new(store).with_notes_tips(store.refs().notes_tips()?);
    let mut runs: Vec<ViewRun> = Vec::with_capacity(ordered.len());
    let mut checkpoints: Vec<ViewCheckpoint> = vec![];
    for summary in ordered {
        let chain = match RunId::new(summary.run.clone()).and_then(|r| catalog.run_chain(&r)) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{}: {}", summary.run, e.message));
                continue;
            }
        };
        let run_index = runs.len();
        let first = checkpoints.len();
        let mut agent = None;
        let mut sessions: Vec<String> = vec![];
        for cp in chain {
            let line = cp.line();
            if let Some(a) = line.meta.get("agent") {
                agent = Some(a.clone());
            }
            if let Some(s) = &line.sdk_session_id
                && !sessions.contains(s)
            {
                sessions.push(s.clone());
            }
            checkpoints.push(ViewCheckpoint {
                checkpoint: cp,
                run: run_index,
                parent: None,
                files: None,
                signed: None,
            });
        }
        let indexes: Vec<usize> = (first..checkpoints.len()).collect();
        let steps = timeline(&checkpoints, &indexes);
        runs.push(ViewRun {
            folded: summary.archived && !named.contains(summary.run.as_str()),
            summary: summary.clone(),
            agent,
            sessions,
            checkpoints: indexes,
            origin: None,
            steps,
        });
    }

    // Signers: one `git log` for the checkpoints that carry a signature.
    let signed: Vec<usize> = (0..checkpoints.len())
        .filter(|&i| {
            store
                .objects()
                .is_signed(checkpoints[i].checkpoint.id())
                .unwrap_or(false)
        })
        .collect();
    if !signed.is_empty() {
        let ids: Vec<ObjectId> = signed
            .iter()
            .map(|&i| checkpoints[i].checkpoint.id())
            .collect();
        let found = crate::ops::signatures::describe_all(store, &ids)?;
        for (i, s) in signed.into_iter().zip(found) {
            checkpoints[i].signed = Some(s.summary());
        }
    }

    // Parents and edges, now that every checkpoint has an index.
    let index: HashMap<ObjectId, usize> = checkpoints
        .iter()
        .enumerate()
        .map(|(i, c)| (c.checkpoint.id(), i))
        .collect();
    let mut edges = vec![];
    for i in 0..checkpoints.len() {
        let parent = checkpoints[i]
            .checkpoint
            .commit
            .parents
            .first()
            .and_then(|p| index.get(p).copied());
        checkpoints[i].parent = parent;
        let line = checkpoints[i].checkpoint.line();
        let origin = line.origin().map(|(link, rewound)| Origin {
            kind: if rewound {
                EdgeKind::Rewound
            } else {
                EdgeKind::Forked
            },
            run: link.run.clone(),
            step: link.step.clone(),
            checkpoint: link.checkpoint.clone(),
            index: parent,
        });
        let kind = match (&origin, parent) {
            (_, None) => None,
            (Some(o), Some(_)) => Some(o.kind),
            (None, Some(p)) if checkpoints[p].run == checkpoints[i].run => Some(EdgeKind::Chain),
            (None, Some(_)) => None,
        };
        if let (Some(kind), Some(p)) = (kind, parent) {
            edges.push(ViewEdge {
                from: p,
                to: i,
                kind,
            });
        }
        if origin.is_some() && line.seq == 0 {
            let run = checkpoints[i].run;
            runs[run].origin = origin;
        }
    }

    embed_files(store, &mut checkpoints, opts.diffs)?;
    let prices =
        crate::ops::usage::prices_of_all(store, checkpoints.iter().map(|c| &c.checkpoint))?;
    Ok(ViewModel {
        generated_at: Timestamp::now(),
        runs,
        checkpoints,
        edges,
        problems,
        prices,
    })
}

fn origin_run(s: &RunSummary) -> Option<&str> {
    s.rewound_from
        .as_ref()
        .or(s.forked_from.as_ref())
        .map(|l| l.run.as_str())
}

/// The runs to draw, in lane order: every tree of runs (linked by rewinds and forks) whose
/// newest activity is newest first, each depth first with a run's children (oldest first)
/// right below it. With `named` runs, only the trees that hold one of them.
fn lane_order<'a>(all: &'a [RunSummary], named: &HashSet<&str>) -> Vec<&'a RunSummary> {
    let known: HashSet<&str> = all.iter().map(|s| s.run.as_str()).collect();
    let mut children: HashMap<&str, Vec<&RunSummary>> = HashMap::new();
    for s in all {
        if let Some(o) = origin_run(s).filter(|o| known.contains(o) && *o != s.run) {
            children.entry(o).or_default().push(s);
        }
    }
    for c in children.values_mut() {
        c.sort_by(|a, b| a.run.cmp(&b.run));
    }
    // `all` is newest activity first; a tree goes where its newest run is.
    let mut seen = HashSet::new();
    let mut out = vec![];
    for s in all {
        // Find this run's tree root (guarding against a cycle of crafted links).
        let mut top = s;
        let mut guard = HashSet::new();
        while let Some(o) = origin_run(top).filter(|o| known.contains(o)) {
            if !guard.insert(top.run.as_str()) {
                break;
            }
            match all.iter().find(|x| x.run == o) {
                Some(p) => top = p,
                None => break,
            }
        }
        if !seen.insert(top.run.as_str()) {
            continue;
        }
        let mut tree = vec![];
        let mut stack = vec![top];
        let mut visited = HashSet::new();
        while let Some(r) = stack.pop() {
            if !visited.insert(r.run.as_str()) {
                continue;
            }
            tree.push(r);
            if let Some(cs) = children.get(r.run.as_str()) {
                stack.extend(cs.iter().rev());
            }
        }
        for r in &tree {
            seen.insert(r.run.as_str());
        }
        if named.is_empty() || tree.iter().any(|r| named.contains(r.run.as_str())) {
            out.extend(tree);
        }
    }
    // Runs in a cycle of links have no root: draw them anyway.
    for s in all {
        if !seen.contains(s.run.as_str()) && (named.is_empty() || named.contains(s.run.as_str())) {
            out.push(s);
        }
    }
    out
}

/// The step attempts of one run's chain, in the order they began.
pub fn timeline(cps: &[ViewCheckpoint], chain: &[usize]) -> Vec<StepSpan> {
    let mut spans: Vec<StepSpan> = vec![];
    let mut open: HashMap<(String, u32), usize> = HashMap::new();
    for &i in chain {
        let cp = &cps[i].checkpoint;
        let line = cp.line();
        let Some(step) = line.step.clone() else {
            continue;
        };
        let key = (step.clone(), line.attempt);
        let at = *open.entry(key).or_insert_with(|| {
            spans.push(StepSpan {
                step,
                attempt: line.attempt,
                kind: line.step_kind,
                status: None,
                begin: line.started_at.unwrap_or(line.ts),
                end: None,
                first: i,
                last: i,
                waiting: None,
            });
            spans.len() - 1
        });
        let span = &mut spans[at];
        span.last = i;
        span.kind = line.step_kind.or(span.kind);
        let status = cp.status();
        span.status = status;
        let status_ts = cp
            .note
            .lines
            .iter()
            .filter_map(|l| match l {
                NoteLine::Status { ts, .. } => Some(*ts),
                _ => None,
            })
            .max();
        match status {
            Some(Status::Completed | Status::Failed | Status::Skipped | Status::Interrupted) => {
                span.end = Some(match (line.event, status_ts) {
                    (Event::Finish, _) => line.finished_at.unwrap_or(line.ts),
                    (_, Some(t)) if t > line.ts => t,
                    _ => line.ts,
                });
            }
            _ => span.end = None,
        }
        let waits = line.status == Some(Status::AwaitingApproval);
        if waits && span.waiting.is_none() {
            span.waiting = Some(Waiting {
                since: line.ts,
                until: None,
                decision: None,
            });
        }
        if let Some(w) = span.waiting.as_mut().filter(|w| w.until.is_none()) {
            let decided = cp
                .note
                .lines
                .iter()
                .filter_map(|l| match l {
                    NoteLine::Approval { approved, ts, .. } => Some((*ts, *approved)),
                    _ => None,
                })
                .min_by_key(|(ts, _)| *ts);
            if let Some((ts, approved)) = decided {
                w.until = Some(ts);
                w.decision = Some(if approved { "approved" } else { "rejected" }.into());
            } else if !waits {
                // Moved on without a recorded decision on that checkpoint.
                w.until = Some(line.ts);
            }
        }
    }
    spans
}

fn embed_files(store: &Store, cps: &mut [ViewCheckpoint], limit: DiffLimit) -> Result<()> {
    let n = match limit {
        DiffLimit::None => return Ok(()),
        DiffLimit::All => cps.len(),
        DiffLimit::Newest(n) => n.min(cps.len()),
    };
    let mut order: Vec<usize> = (0..cps.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&cps[a].checkpoint, &cps[b].checkpoint);
        y.line()
            .ts
            .cmp(&x.line().ts)
            .then(y.line().seq.cmp(&x.line().seq))
    });
    for &i in order.iter().take(n) {
        let commit = &cps[i].checkpoint.commit;
        let from = match commit.parents.first() {
            Some(p) => store.objects().commit_tree(*p)?,
            None => store.objects().empty_tree(),
        };
        let all = file_diffs(store, from, commit.tree)?;
        let omitted = all.len().saturating_sub(MAX_FILES);
        let files = all
            .into_iter()
            .take(MAX_FILES)
            .map(|mut diff| {
                let truncated = diff
                    .patch
                    .as_ref()
                    .is_some_and(|p| p.len() > MAX_PATCH_BYTES);
                if truncated && let Some(p) = diff.patch.as_mut() {
                    let cut = p[..MAX_PATCH_BYTES].rfind('\n').map_or(0, |e| e + 1);
                    let mut end = cut;
                    while !p.is_char_boundary(end) {
                        end -= 1;
                    }
                    p.truncate(end);
                }
                ViewFile { diff, truncated }
            })
            .collect();
        cps[i].files = Some(ViewFiles { files, omitted });
    }
    Ok(())
}

/// The graph of `log --graph --format json`: runs, checkpoint nodes and edges.
#[derive(Debug, Clone, Serialize)]
pub struct Graph {
    pub runs: Vec<GraphRun>,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphRun {
    pub run: String,
    pub label: Option<String>,
    pub status: String,
    pub archived: bool,
    pub agent: Option<String>,
    pub sessions: Vec<String>,
    pub last_activity: Timestamp,
    pub origin: Option<Origin>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphNode {
    pub id: String,
    pub run: String,
    pub seq: u64,
    pub step: Option<String>,
    pub attempt: u32,
    pub event: Event,
    pub status: Option<Status>,
    pub ts: Timestamp,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

impl ViewModel {
    pub fn graph(&self) -> Graph {
        let id = |i: usize| self.checkpoints[i].checkpoint.id().to_string();
        Graph {
            runs: self
                .runs
                .iter()
                .map(|r| GraphRun {
                    run: r.summary.run.clone(),
                    label: r.summary.label.clone(),
                    status: r.summary.status.clone(),
                    archived: r.summary.archived,
                    agent: r.agent.clone(),
                    sessions: r.sessions.clone(),
                    last_activity: r.summary.last_activity,
                    origin: r.origin.clone(),
                })
                .collect(),
            nodes: self
                .checkpoints
                .iter()
                .map(|c| {
                    let l = c.checkpoint.line();
                    GraphNode {
                        id: c.checkpoint.id().to_string(),
                        run: l.run.clone(),
                        seq: l.seq,
                        step: l.step.clone(),
                        attempt: l.attempt,
                        event: l.event,
                        status: c.checkpoint.status(),
                        ts: l.ts,
                    }
                })
                .collect(),
            edges: self
                .edges
                .iter()
                .map(|e| GraphEdge {
                    from: id(e.from),
                    to: id(e.to),
                    kind: e.kind,
                })
                .collect(),
        }
    }
}

/// The lineage tree of `run` (every run linked to it by rewinds and forks), without files.
pub fn lineage(store: &Store, run: &RunId) -> Result<ViewModel> {
    build(
        store,
        &ViewOptions {
            runs: vec![run.clone()],
            diffs: DiffLimit::None,
        },
    )
}
