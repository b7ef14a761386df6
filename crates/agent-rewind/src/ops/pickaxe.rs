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
use agent_rewind_store::{EntryKind, ObjectId};
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
        let chain = catalog.run_chain(&run)?;
        for cp in chain.into_iter().rev() {
            let files = changed_files(store, &cp, pickaxe)?;
            if !files.is_empty() {
                hits.push(PickaxeHit {
                    checkpoint: cp,
                    files,
                });
            }
        }
    }
    // Stable: within a run the chain's order (newest first) stays.
    hits.sort_by_key(|h| std::cmp::Reverse(h.checkpoint.line().ts));
    Ok(hits)
}

/// The files of `cp`'s change from its first parent that the pickaxe picks.
fn changed_files(store: &Store, cp: &Checkpoint, pickaxe: &Pickaxe) -> Result<Vec<FileHit>> {
    let objects = store.objects();
    let before_tree = match cp.commit.parents.first() {
        Some(p) => objects.commit_tree(*p)?,
        None => objects.empty_tree(),
    };
    if before_tree == cp.commit.tree {
        return Ok(vec![]);
    }
    let mut files = vec![];
    for change in objects.diff_trees(before_tree, cp.commit.tree)? {
        let (old, new) = (file_blob(change.old), file_blob(change.new));
        if old.is_none() && new.is_none() || old == new {
            continue;
        }
        let read = |id: Option<ObjectId>| id.map(|id| objects.read_blob(id)).transpose();
        let (old, new) = (read(old)?, read(new)?);
        let (before, after) = match pickaxe.kind() {
            PickaxeKind::Occurrences => (
                old.as_deref().map_or(0, |d| pickaxe.count(d)),
                new.as_deref().map_or(0, |d| pickaxe.count(d)),
            ),
            PickaxeKind::ChangedLines => {
                let (old, new) = (old.unwrap_or_default(), new.unwrap_or_default());
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
