//! `log -S`/`log -G`: git's pickaxe over a run's own chain of checkpoints (or every run's):
//! each checkpoint compared with its first parent, reported when a file's count of the
//! string changed (`-S`) or when an added or removed line matches the regex (`-G`), with
//! the turn that made it (agent, model, prompt id, time). It only reads: it must never
//! write a ref, a note or a file.

use crate::catalog::{Catalog, Checkpoint};
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use agent_rewind_core::pickaxe::{Pickaxe, PickaxeKind, is_binary};
use agent_rewind_store::{CommitInfo, EntryKind, ObjectId};
use serde_json::json;

/// Which runs to search.
pub enum PickaxeScope {
    /// One run's own checkpoints (not those of the run it was rewound or forked from).
    Run(RunId),
    /// Every run's own checkpoints.
    AllRuns,
}

/// A checkpoint whose turn added or removed what was looked for.
pub struct PickaxeHit {
    pub checkpoint: Checkpoint,
    pub files: Vec<FileHit>,
}

/// One file of a hit: for `-S` the counts before and after, for `-G` the matching lines
/// added and removed.
pub struct FileHit {
    pub path: String,
    pub before: usize,
    pub after: usize,
}

/// The hits, newest first (by the checkpoint's time, across runs with `AllRuns`).
pub fn search(store: &Store, scope: &PickaxeScope, pickaxe: &Pickaxe) -> Result<Vec<PickaxeHit>> {
    let runs = match scope {
        PickaxeScope::Run(run) => vec![run.clone()],
        PickaxeScope::AllRuns => store
            .refs()
            .list_runs()?
            .0
            .into_iter()
            .map(|(r, _)| r)
            .collect(),
    };
    let mut catalog = Catalog::new(store);
    let mut hits = vec![];
    for run in runs {
        let chain = own_commits(store, &mut catalog, &run)?;
        let mut steps = Vec::with_capacity(chain.len());
        let mut previous: Option<(ObjectId, ObjectId)> = None;
        for commit in chain {
            let before_tree = match (commit.parents.first(), previous) {
                (Some(p), Some((id, tree))) if *p == id => tree,
                (Some(p), _) => store.objects().commit_tree(*p)?,
                (None, _) => store.objects().empty_tree(),
            };
            previous = Some((commit.id, commit.tree));
            steps.push(Step {
                commit: commit.id,
                before_tree,
                tree: commit.tree,
            });
        }
        for (commit, files) in changed_in_parallel(store, &steps, pickaxe)?
            .into_iter()
            .rev()
        {
            // Only a hit's note is read: notes are most of a walk's cost otherwise.
            hits.push(PickaxeHit {
                checkpoint: catalog.checkpoint(commit)?,
                files,
            });
        }
    }
    // Stable: within a run the chain's order (newest first) stays.
    hits.sort_by_key(|h| std::cmp::Reverse(h.checkpoint.line().ts));
    Ok(hits)
}

/// One checkpoint of a chain: its commit, its first parent's tree and its own.
struct Step {
    commit: ObjectId,
    before_tree: ObjectId,
    tree: ObjectId,
}

/// Checkpoints (by commit) with the files the pickaxe picks in each.
type Changed = Vec<(ObjectId, Vec<FileHit>)>;

/// Fewest checkpoints a thread of its own is started for.
const STEPS_PER_THREAD: usize = 64;

/// The checkpoints of `steps` (oldest first) with the files the pickaxe picks in each, in
/// the same order. Consecutive stretches of the chain go to threads of their own: git's
/// pickaxe uses one core, and inflating objects is most of the cost.
fn changed_in_parallel(store: &Store, steps: &[Step], pickaxe: &Pickaxe) -> Result<Changed> {
    let threads = (steps.len() / STEPS_PER_THREAD)
        .min(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .clamp(1, 4);
    if threads == 1 {
        return changed_in(store, steps, pickaxe);
    }
    let chunk = steps.len().div_ceil(threads);
    let parts: Vec<Result<Changed>> = std::thread::scope(|scope| {
        let handles: Vec<_> = steps
            .chunks(chunk)
            .map(|part| {
                let store = store.handle_for_thread();
                scope.spawn(move || changed_in(&store, part, pickaxe))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut out = vec![];
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// [`changed_in_parallel`] for one stretch, oldest first, so that what a checkpoint wrote
/// is remembered when the next one changes it: each version of a file is read once.
fn changed_in(store: &Store, steps: &[Step], pickaxe: &Pickaxe) -> Result<Changed> {
    let mut memo = BlobMemo::default();
    let mut out = vec![];
    for step in steps {
        let files = changed_files(store, step.tree, step.before_tree, pickaxe, &mut memo)?;
        if !files.is_empty() {
            out.push((step.commit, files));
        }
    }
    Ok(out)
}

/// The files of a checkpoint's change from `before_tree` (its first parent's) to `tree`
/// that the pickaxe picks.
fn changed_files(
    store: &Store,
    tree: ObjectId,
    before_tree: ObjectId,
    pickaxe: &Pickaxe,
    memo: &mut BlobMemo,
) -> Result<Vec<FileHit>> {
    if before_tree == tree {
        return Ok(vec![]);
    }
    let mut files = vec![];
    for change in store.objects().diff_trees(before_tree, tree)? {
        let (old, new) = (file_blob(change.old), file_blob(change.new));
        if old.is_none() && new.is_none() || old == new {
            continue;
        }
        let (before, after) = match pickaxe.kind() {
            PickaxeKind::Occurrences => (
                memo.count(store, old, pickaxe)?,
                memo.count(store, new, pickaxe)?,
            ),
            PickaxeKind::ChangedLines => {
                let (old, new) = (memo.take(store, old)?, memo.keep(store, new)?);
                if is_binary(&old) || is_binary(&new) {
                    continue;
                }
                let patch = agent_rewind_store::text_patch("a", "b", &old, &new);
                let lines = pickaxe.changed_lines_matching(&patch);
                if lines.added + lines.removed == 0 {
                    continue;
                }
                (lines.removed, lines.added)
            }
        };
        if before != after || pickaxe.kind() == PickaxeKind::ChangedLines {
            files.push(FileHit {
                path: String::from_utf8_lossy(&change.path).into_owned(),
                before,
                after,
            });
        }
    }
    Ok(files)
}

/// The commits of `run`'s own chain, oldest first. The tip's note names the run's root
/// and its own position (`seq`): the chain is that many first parents back to the root, read
/// as commits alone. A chain that does not end at its root there (crafted or damaged notes)
/// is read checkpoint by checkpoint, as every other command reads it.
fn own_commits(store: &Store, catalog: &mut Catalog, run: &RunId) -> Result<Vec<CommitInfo>> {
    let tip = catalog.require_run_tip(run)?;
    let line = tip.line();
    let root = match line.run_root.as_deref() {
        None => Some(tip.id()),
        Some(hex) => ObjectId::from_hex(hex.as_bytes()).ok(),
    };
    let mut chain = vec![tip.commit.clone()];
    for _ in 0..line.seq {
        let Some(parent) = chain.last().and_then(|c| c.parents.first().copied()) else {
            break;
        };
        chain.push(store.objects().read_commit(parent)?);
    }
    if root.is_some() && chain.last().map(|c| c.id) == root {
        chain.reverse();
        return Ok(chain);
    }
    Ok(catalog
        .run_chain(run)?
        .into_iter()
        .map(|cp| cp.commit)
        .collect())
}

/// Most bytes of file versions [`BlobMemo`] keeps for `-G` at once.
const MEMO_BYTES: usize = 64 << 20;

/// What the walk learnt of the versions a checkpoint wrote, for the next checkpoint that
/// changes the same file: its count (`-S`), or its bytes (`-G`, up to [`MEMO_BYTES`]).
/// Reading a version again costs inflating its delta chain again, which is most of a
/// search's time.
#[derive(Default)]
struct BlobMemo {
    counts: std::collections::HashMap<ObjectId, usize>,
    bytes: std::collections::HashMap<ObjectId, std::rc::Rc<Vec<u8>>>,
    held: usize,
}

impl BlobMemo {
    /// The occurrences in a version (0 for no file).
    fn count(&mut self, store: &Store, id: Option<ObjectId>, pickaxe: &Pickaxe) -> Result<usize> {
        let Some(id) = id else { return Ok(0) };
        if let Some(n) = self.counts.get(&id) {
            return Ok(*n);
        }
        let n = pickaxe.count(&store.objects().read_blob(id)?);
        self.counts.insert(id, n);
        Ok(n)
    }

    /// A version's bytes (empty for no file), forgotten here: it was the old side.
    fn take(&mut self, store: &Store, id: Option<ObjectId>) -> Result<std::rc::Rc<Vec<u8>>> {
        let Some(id) = id else {
            return Ok(Default::default());
        };
        match self.bytes.remove(&id) {
            Some(data) => {
                self.held -= data.len();
                Ok(data)
            }
            None => Ok(std::rc::Rc::new(store.objects().read_blob(id)?)),
        }
    }

    /// A version's bytes (empty for no file), kept for the checkpoint that changes it next.
    fn keep(&mut self, store: &Store, id: Option<ObjectId>) -> Result<std::rc::Rc<Vec<u8>>> {
        let Some(id) = id else {
            return Ok(Default::default());
        };
        if let Some(data) = self.bytes.get(&id) {
            return Ok(data.clone());
        }
        let data = std::rc::Rc::new(store.objects().read_blob(id)?);
        if self.held + data.len() <= MEMO_BYTES {
            self.held += data.len();
            self.bytes.insert(id, data.clone());
        }
        Ok(data)
    }
}

/// The blob of a tree entry that holds a file's bytes (a regular file, an executable or a
/// symlink's target, as git diffs them); a submodule or a tree has none.
fn file_blob(entry: Option<(ObjectId, EntryKind)>) -> Option<ObjectId> {
    match entry {
        Some((id, EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link)) => Some(id),
        _ => None,
    }
}

impl PickaxeHit {
    /// The JSON docs/COMMANDS.md documents for `log -S/-G --json`.
    pub fn to_json(&self, kind: PickaxeKind) -> serde_json::Value {
        let l = self.checkpoint.line();
        let files: Vec<serde_json::Value> = self
            .files
            .iter()
            .map(|f| match kind {
                PickaxeKind::Occurrences => {
                    json!({"path": f.path, "before": f.before, "after": f.after})
                }
                PickaxeKind::ChangedLines => {
                    json!({"path": f.path, "removed": f.before, "added": f.after})
                }
            })
            .collect();
        json!({
            "checkpoint": self.checkpoint.id().to_string(),
            "run": l.run,
            "seq": l.seq,
            "step": l.step,
            "event": l.event,
            "agent": l.agent,
            "model": l.meta.get("model"),
            "prompt_id": l.meta.get("prompt_id"),
            "session": l.sdk_session_id,
            "ts": l.ts,
            "files": files,
        })
    }
}
