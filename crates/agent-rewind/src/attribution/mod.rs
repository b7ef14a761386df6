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

pub mod gitai;
mod porcelain;
mod replay;

pub use porcelain::{BlameLine, LineCommit, parse_porcelain};

use crate::store::linemap;
use crate::store::{ObjectId, Store};
use agent_rewind_core::error::Result;
use agent_rewind_core::time::Timestamp;
use std::cell::OnceCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// The `meta` key naming the tool an imported turn came from (`git-ai`).
pub const IMPORTED_FROM: &str = "imported_from";

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
    /// The tool that recorded the turn when it was imported (`git-ai`: from its notes,
    /// `import --format git-ai`); `None` for our own turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Per line of a blob, the turn (an index into [`Index::turns`]) that wrote it, or `None`.
pub type Authors = Rc<Vec<Option<u32>>>;

/// A recorded version holding agent lines, for matching versions no checkpoint saw.
struct Candidate {
    blob: ObjectId,
    /// The path it was recorded at.
    path: String,
    /// The turn of each non-trivial agent line, by its compared form: made when a match
    /// first needs it.
    agent_keys: OnceCell<HashMap<u64, u32>>,
}

/// Every agent line of every run, by the blob that holds it.
pub struct Index {
    pub turns: Vec<AgentTurn>,
    by_blob: HashMap<ObjectId, Authors>,
    candidates: Vec<Candidate>,
    /// Where each blob is in `candidates`.
    candidate_at: HashMap<ObjectId, usize>,
    inferred: HashMap<(ObjectId, Option<i64>, String), Authors>,
    /// Runs that could not be read, and why (they attribute nothing).
    pub warnings: Vec<String>,
}

/// How many recorded versions a version no checkpoint saw is matched against, best first.
const ROUNDS: usize = 3;
/// How many recorded versions (the newest, of the same path when there are any) are
/// considered for such a match.
const POOL: usize = 64;

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
        path: &str,
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
        let key = (id, until, path.to_string());
        if let Some(a) = self.inferred.get(&key) {
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
        let authors = Rc::new(self.infer(store, content, until, path)?);
        self.inferred.insert(key, authors.clone());
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
        path: &str,
    ) -> Result<Vec<Option<u32>>> {
        self.infer_keys(store, &linemap::keys(content), until, path)
    }

    /// [`Self::infer`] of lines already turned into keys.
    pub(super) fn infer_keys(
        &self,
        store: &Store,
        keys: &[u64],
        until: Option<i64>,
        path: &str,
    ) -> Result<Vec<Option<u32>>> {
        let mut out: Vec<Option<u32>> = vec![None; keys.len()];
        let mut pool: Vec<&Candidate> = self.candidates.iter().filter(|c| c.path == path).collect();
        if pool.is_empty() {
            pool = self.candidates.iter().collect();
        }
        let pool = &pool[pool.len().saturating_sub(POOL)..];
        let mut used = vec![false; pool.len()];
        for _ in 0..ROUNDS {
            let mut best: Option<(usize, usize)> = None;
            for (i, c) in pool.iter().enumerate() {
                if used[i] {
                    continue;
                }
                let agent_keys = self.agent_keys(store, c)?;
                let score = keys
                    .iter()
                    .zip(&out)
                    .filter(|(k, o)| {
                        o.is_none() && agent_keys.get(*k).is_some_and(|t| self.allowed(*t, until))
                    })
                    .count();
                if score > 0 && best.is_none_or(|(s, _)| score >= s) {
                    best = Some((score, i));
                }
            }
            let Some((_, i)) = best else { break };
            used[i] = true;
            let c = pool[i];
            let agent_keys = self.agent_keys(store, c)?;
            let old = store.objects().read_blob(c.blob)?;
            let old_keys = linemap::keys(&old);
            let old_authors = self.by_blob.get(&c.blob).cloned().unwrap_or_default();
            let kept = linemap::kept_keys(&old_keys, keys);
            for (n, slot) in out.iter_mut().enumerate() {
                if slot.is_some() {
                    continue;
                }
                *slot = match kept[n] {
                    Some(o) => old_authors.get(o as usize).copied().flatten(),
                    None => agent_keys.get(&keys[n]).copied(),
                }
                .filter(|t| self.allowed(*t, until));
            }
        }
        Ok(out)
    }

    /// The turn of each non-trivial agent line of a candidate, by its compared form.
    fn agent_keys<'a>(&self, store: &Store, c: &'a Candidate) -> Result<&'a HashMap<u64, u32>> {
        if let Some(k) = c.agent_keys.get() {
            return Ok(k);
        }
        let data = store.objects().read_blob(c.blob)?;
        let authors = self.by_blob.get(&c.blob).cloned().unwrap_or_default();
        let keys: HashMap<u64, u32> = linemap::lines(&data)
            .into_iter()
            .zip(authors.iter())
            .filter_map(|(l, a)| {
                a.filter(|_| !linemap::is_trivial(l))
                    .map(|a| (linemap::key(l), a))
            })
            .collect();
        Ok(c.agent_keys.get_or_init(|| keys))
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
                    self.authors(store, id, Some(bytes), None, &l.orig_path)
                        .map(Some)
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
                .authors(
                    store,
                    blob,
                    None,
                    Some(l.commit.committer_time),
                    &l.orig_path,
                )
                .map(Some),
            None => Ok(None),
        }
    }
}
