//! Who wrote each line: an agent's turn or a person. Derived at read time from the runs
//! already stored (each `turn` checkpoint's tree, the checkpoint before it and the paths
//! the turn `touched`) and from git's own blame of the file; nothing new is written
//! (docs/FORMAT.md, "Line attribution").
//!
//! It owns the rule (an agent's lines are what its turn changed in the paths it touched;
//! everything else is a person's) and the matching of a commit's lines to the turns that
//! wrote them: by blob id where the commit kept the file as a checkpoint saw it, else by
//! aligning its lines with the closest recorded version (so content that a rebase, a squash
//! or a cherry-pick carried keeps its origin). It must never write objects, refs or files,
//! and never start a process but through the store.

mod porcelain;
mod replay;

pub use porcelain::{BlameLine, LineCommit, parse_porcelain};

use crate::error::Result;
use crate::store::linemap;
use crate::store::{ObjectId, Store};
use crate::time::Timestamp;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// One agent turn that wrote lines: where it is recorded and who the agent was.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AgentTurn {
    pub agent: Option<String>,
    pub model: Option<String>,
    pub run: String,
    pub step: Option<String>,
    pub seq: u64,
    pub checkpoint: String,
    pub session: Option<String>,
    pub ts: Timestamp,
}

/// Per line of a blob, the turn (an index into [`Index::turns`]) that wrote it, or `None`.
pub type Authors = Rc<Vec<Option<u32>>>;

/// A recorded version holding agent lines, for matching versions no checkpoint saw.
struct Candidate {
    blob: ObjectId,
    /// The turn of each non-trivial agent line, by its compared form.
    agent_keys: HashMap<Vec<u8>, u32>,
}

/// Every agent line of every run, by the blob that holds it.
pub struct Index {
    pub turns: Vec<AgentTurn>,
    by_blob: HashMap<ObjectId, Authors>,
    candidates: Vec<Candidate>,
    inferred: HashMap<(ObjectId, Option<i64>), Authors>,
    /// Runs that could not be read, and why (they attribute nothing).
    pub warnings: Vec<String>,
}

/// How many recorded versions a version no checkpoint saw is matched against, best first.
const ROUNDS: usize = 3;

impl Index {
    /// The index of every run of the repository, over the paths in `only` (every path a
    /// turn touched when `None`).
    pub fn build(store: &Store, only: Option<&BTreeSet<String>>) -> Result<Index> {
        replay::build(store, only)
    }

    /// Who wrote each line of the blob `id` (whose bytes are `content`, read when `None`),
    /// in a commit made at `until` (seconds; `None`: not committed yet): a turn recorded
    /// after the commit was made cannot have written its lines (one second of slack, git's
    /// times are whole seconds).
    pub fn authors(
        &mut self,
        store: &Store,
        id: ObjectId,
        content: Option<&[u8]>,
        until: Option<i64>,
    ) -> Result<Authors> {
        if let Some(a) = self.by_blob.get(&id) {
            if a.iter().flatten().all(|t| self.allowed(*t, until)) {
                return Ok(a.clone());
            }
            let kept = a
                .iter()
                .map(|t| t.filter(|t| self.allowed(*t, until)))
                .collect();
            return Ok(Rc::new(kept));
        }
        if let Some(a) = self.inferred.get(&(id, until)) {
            return Ok(a.clone());
        }
        let read;
        let content = match content {
            Some(c) => c,
            None => {
                read = store.objects().read_blob(id)?;
                &read
            }
        };
        let authors = Rc::new(self.infer(store, content, until)?);
        self.inferred.insert((id, until), authors.clone());
        Ok(authors)
    }

    fn allowed(&self, turn: u32, until: Option<i64>) -> bool {
        until.is_none_or(|u| self.turns[turn as usize].ts.as_second() <= u.saturating_add(1))
    }

    /// The authors of a version no checkpoint recorded: its lines aligned with the recorded
    /// versions that share the most agent lines with it (a rebased or cherry-picked commit
    /// holds the agent's lines among others'), a line kept from an agent line is that
    /// agent's; a line that moved keeps its agent when it says enough to be recognised.
    pub(super) fn infer(
        &self,
        store: &Store,
        content: &[u8],
        until: Option<i64>,
    ) -> Result<Vec<Option<u32>>> {
        let keys: Vec<Vec<u8>> = linemap::lines(content)
            .into_iter()
            .map(linemap::key)
            .collect();
        let mut out: Vec<Option<u32>> = vec![None; keys.len()];
        let mut used = vec![false; self.candidates.len()];
        for _ in 0..ROUNDS {
            let best = self
                .candidates
                .iter()
                .enumerate()
                .filter(|(i, _)| !used[*i])
                .map(|(i, c)| {
                    let score = keys
                        .iter()
                        .zip(&out)
                        .filter(|(k, o)| {
                            o.is_none()
                                && c.agent_keys
                                    .get(*k)
                                    .is_some_and(|t| self.allowed(*t, until))
                        })
                        .count();
                    (score, i)
                })
                .filter(|(score, _)| *score > 0)
                .max_by_key(|(score, i)| (*score, *i));
            let Some((_, i)) = best else { break };
            used[i] = true;
            let c = &self.candidates[i];
            let old = store.objects().read_blob(c.blob)?;
            let old_keys: Vec<Vec<u8>> =
                linemap::lines(&old).into_iter().map(linemap::key).collect();
            let old_authors = self.by_blob.get(&c.blob).cloned().unwrap_or_default();
            let kept = linemap::kept_keys(&old_keys, &keys);
            for (n, slot) in out.iter_mut().enumerate() {
                if slot.is_some() {
                    continue;
                }
                *slot = match kept[n] {
                    Some(o) => old_authors.get(o as usize).copied().flatten(),
                    None => c.agent_keys.get(&keys[n]).copied(),
                }
                .filter(|t| self.allowed(*t, until));
            }
        }
        Ok(out)
    }
}

impl Index {
    /// The turn that wrote each line git blamed (`None`: a person's). A line's version is the
    /// file at the commit git found it in, at its path there; a line not committed yet is
    /// looked up in `worktree` (the bytes of the worktree's file).
    pub fn attribute_lines(
        &mut self,
        store: &Store,
        lines: &[BlameLine],
        worktree: Option<&[u8]>,
    ) -> Result<Vec<Option<u32>>> {
        let mut versions: HashMap<(String, String), Option<Authors>> = HashMap::new();
        let mut out = Vec::with_capacity(lines.len());
        for l in lines {
            let key = (l.commit.id.clone(), l.orig_path.clone());
            if !versions.contains_key(&key) {
                let authors = self.version_authors(store, l, worktree)?;
                versions.insert(key.clone(), authors);
            }
            let who = versions[&key].as_ref().and_then(|a| {
                a.get(l.orig_line.saturating_sub(1) as usize)
                    .copied()
                    .flatten()
            });
            out.push(who);
        }
        Ok(out)
    }

    fn version_authors(
        &mut self,
        store: &Store,
        l: &BlameLine,
        worktree: Option<&[u8]>,
    ) -> Result<Option<Authors>> {
        if !l.commit.committed() {
            return match worktree {
                Some(bytes) => {
                    let id = store.objects().blob_id(bytes)?;
                    self.authors(store, id, Some(bytes), None).map(Some)
                }
                None => Ok(None),
            };
        }
        let Ok(commit) = ObjectId::from_hex(l.commit.id.as_bytes()) else {
            return Ok(None);
        };
        let tree = store.objects().commit_tree(commit)?;
        match store.objects().path_in_tree(tree, l.orig_path.as_bytes())? {
            Some(blob) => self
                .authors(store, blob, None, Some(l.commit.committer_time))
                .map(Some),
            None => Ok(None),
        }
    }
}
