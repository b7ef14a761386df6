//! Building the attribution index by replaying each run's chain: for every checkpoint, the
//! files that changed since the checkpoint before it, line by line; a line a `turn` added
//! to a path it touched is that turn's, any other added line is no agent's, a kept line
//! keeps its author. Only paths some turn of the run touched are followed. Read-only.

use super::{AgentTurn, Authors, Candidate, IMPORTED_FROM, Index};
use crate::catalog::{Catalog, Checkpoint};
use crate::model::Event;
use crate::store::linemap;
use crate::store::{EntryKind, ObjectId, Store};
use agent_rewind_core::error::Result;
use std::cell::OnceCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// Files bigger than this are not followed (no one reads a blame of them line by line, and
/// each version would be read whole).
const MAX_FILE: usize = 8 << 20;

pub(super) fn build(store: &Store, only: Option<&BTreeSet<String>>) -> Result<Index> {
    let mut index = Index {
        turns: vec![],
        by_blob: HashMap::new(),
        candidates: vec![],
        candidate_at: HashMap::new(),
        inferred: HashMap::new(),
        warnings: vec![],
    };
    let mut catalog = Catalog::new(store);
    let (runs, _invalid) = store.refs().list_runs()?;
    let mut chains = vec![];
    for (run, _) in runs {
        match catalog.run_chain(&run) {
            Ok(chain) if !chain.is_empty() => chains.push(chain),
            Ok(_) => {}
            Err(e) => index.warnings.push(format!(
                "run {run} was not read for attribution: {}",
                e.message
            )),
        }
    }
    // Runs that others were forked from first: a fork starts from their authors.
    chains.sort_by(|a, b| (a[0].line().ts, a[0].id()).cmp(&(b[0].line().ts, b[0].id())));
    for chain in &chains {
        replay_run(store, chain, only, &mut index)?;
    }
    Ok(index)
}

/// The state of one followed path: its blob, bytes as compared, and authors.
struct FileState {
    blob: ObjectId,
    keys: Vec<u64>,
    authors: Vec<Option<u32>>,
}

fn replay_run(
    store: &Store,
    chain: &[Checkpoint],
    only: Option<&BTreeSet<String>>,
    index: &mut Index,
) -> Result<()> {
    let followed: BTreeSet<&str> = chain
        .iter()
        .filter(|c| c.line().event == Event::Turn)
        .flat_map(|c| c.line().touched.iter().map(String::as_str))
        .filter(|p| only.is_none_or(|o| o.contains(*p)))
        .collect();
    if followed.is_empty() {
        return Ok(());
    }
    let mut prev_tree = match chain[0].commit.parents.first() {
        Some(p) => store.objects().commit_tree(*p)?,
        None => store.objects().empty_tree(),
    };
    let mut files: HashMap<String, FileState> = HashMap::new();
    for cp in chain {
        let tree = cp.commit.tree;
        if tree == prev_tree {
            continue;
        }
        let line = cp.line();
        let turn = (line.event == Event::Turn && !line.touched.is_empty()).then(|| {
            index.turns.push(AgentTurn {
                agent: line.agent.clone(),
                model: line.meta.get("model").cloned(),
                run: line.run.clone(),
                step: line.step.clone(),
                seq: line.seq,
                checkpoint: cp.id().to_string(),
                session: line.sdk_session_id.clone(),
                ts: line.ts,
                source: line.meta.get(IMPORTED_FROM).cloned(),
            });
            (index.turns.len() - 1) as u32
        });
        for change in store.objects().diff_trees(prev_tree, tree)? {
            let Ok(path) = std::str::from_utf8(&change.path) else {
                continue;
            };
            if !followed.contains(path) {
                continue;
            }
            let new = match change.new {
                Some((id, EntryKind::Blob | EntryKind::BlobExecutable)) => id,
                _ => {
                    files.remove(path);
                    continue;
                }
            };
            let old = match files.remove(path) {
                Some(s) => Some(s),
                None => match change.old {
                    Some((id, EntryKind::Blob | EntryKind::BlobExecutable)) => {
                        start_state(store, id, index)?
                    }
                    _ => None,
                },
            };
            let by_turn = turn.filter(|_| line.touched.iter().any(|t| t == path));
            let at = line.ts.as_second();
            if let Some(state) = step_file(store, path, old, new, by_turn, at, index)? {
                files.insert(path.to_string(), state);
            }
        }
        prev_tree = tree;
    }
    Ok(())
}

/// The state of a file as the run found it: its authors as already known (a fork's source,
/// an earlier run), else no agent's.
fn start_state(store: &Store, blob: ObjectId, index: &Index) -> Result<Option<FileState>> {
    let Some(keys) = store.objects().blob_line_keys(blob, MAX_FILE)? else {
        return Ok(None);
    };
    let authors = match index.by_blob.get(&blob) {
        Some(a) if a.len() == keys.len() => a.to_vec(),
        _ => vec![None; keys.len()],
    };
    Ok(Some(FileState {
        blob,
        keys,
        authors,
    }))
}

/// The file after one checkpoint (recorded at `at`, seconds): lines kept keep their author,
/// added lines are `by_turn`'s. Outside a turn an added line is no agent's, unless it is an
/// agent's line coming back — git putting back a version (a checkout, a rebase, a revert)
/// — which the recorded versions recognise. The version is recorded in the index.
fn step_file(
    store: &Store,
    path: &str,
    old: Option<FileState>,
    new: ObjectId,
    by_turn: Option<u32>,
    at: i64,
    index: &mut Index,
) -> Result<Option<FileState>> {
    let Some(keys) = store.objects().blob_line_keys(new, MAX_FILE)? else {
        return Ok(None);
    };
    let kept: Vec<Option<u32>> = match &old {
        Some(o) if o.blob == new => (0..keys.len() as u32).map(Some).collect(),
        Some(o) => linemap::kept_keys(&o.keys, &keys),
        None => vec![None; keys.len()],
    };
    let back = match by_turn {
        None if kept.iter().any(Option::is_none) && !index.candidates.is_empty() => {
            index.infer_keys(store, &keys, Some(at), path)?
        }
        _ => vec![],
    };
    let authors: Vec<Option<u32>> = kept
        .iter()
        .enumerate()
        .map(|(n, k)| match (k, &old) {
            (Some(i), Some(o)) => o.authors[*i as usize],
            _ => by_turn.or_else(|| back.get(n).copied().flatten()),
        })
        .collect();
    record(index, path, new, &authors);
    Ok(Some(FileState {
        blob: new,
        keys,
        authors,
    }))
}

/// Record the authors of a version: merged line by line with what another run recorded
/// for the same blob (the first agent found for a line wins).
fn record(index: &mut Index, path: &str, blob: ObjectId, authors: &[Option<u32>]) {
    let merged: Vec<Option<u32>> = match index.by_blob.get(&blob) {
        Some(known) if known.len() == authors.len() => {
            known.iter().zip(authors).map(|(k, a)| k.or(*a)).collect()
        }
        _ => authors.to_vec(),
    };
    if merged.iter().any(Option::is_some) {
        let candidate = Candidate {
            blob,
            path: path.to_string(),
            agent_keys: OnceCell::new(),
        };
        match index.candidate_at.get(&blob) {
            // Its authors may have changed: its keys are made again when needed.
            Some(&i) => index.candidates[i] = candidate,
            None => {
                index.candidate_at.insert(blob, index.candidates.len());
                index.candidates.push(candidate);
            }
        }
    }
    let merged: Authors = Rc::new(merged);
    index.by_blob.insert(blob, merged);
}
