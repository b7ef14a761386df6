//! `list`: the runs of the repository, or the checkpoints of one run in chain order.
//!
//! Listing runs reads the refs once (`refs/agent-runs/` and `refs/notes/agent-runs/`), then
//! each run's summary: from the summary cache when the run's (HEAD, notes tip) pair is the one
//! the cache was built from, else from two notes (tip and root). The cache
//! (`<git-common-dir>/agent-rewind/cache/runs.lines`, one line per run) is only ever an
//! optimisation: a missing,
//! stale or unreadable cache is rebuilt, never trusted. A run whose notes cannot be read is
//! reported as a problem and the others are still listed.

use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::ObjectId;
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

/// The first line of the cache file; a file starting otherwise is rebuilt.
const CACHE_HEADER: &str = "agent-rewind runs cache v3";

/// What the cache keeps of a summary: what cannot be read from the refs (the run id, HEAD,
/// steps and unique prefix can).
#[derive(Serialize, Deserialize)]
struct Cached {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    status: String,
    archived: bool,
    checkpoints: u64,
    last_activity: crate::time::Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rewound_from: Option<crate::model::LineageLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forked_from: Option<crate::model::LineageLink>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    reverted: bool,
}

/// One cache line: `<run> TAB <head> TAB <notes or -> TAB <Cached as JSON>`.
struct CacheLine {
    run: String,
    head: ObjectId,
    notes: Option<ObjectId>,
    json_at: usize,
    line: String,
}

fn parse_line(line: String) -> Option<CacheLine> {
    let mut parts = line.splitn(4, '\t');
    let run = parts.next()?.to_string();
    let head = ObjectId::from_hex(parts.next()?.as_bytes()).ok()?;
    let notes = match parts.next()? {
        "-" => None,
        hex => Some(ObjectId::from_hex(hex.as_bytes()).ok()?),
    };
    let json_at = line.len() - parts.next()?.len();
    Some(CacheLine {
        run,
        head,
        notes,
        json_at,
        line,
    })
}

/// The cache's lines, in file order (sorted by run when the file is ours); nothing when the
/// file is missing or not a cache of this version. Read as a stream, never whole.
fn cache_lines(store: &Store) -> impl Iterator<Item = CacheLine> {
    use std::io::BufRead;
    let mut lines = std::fs::File::open(store.private().runs_cache())
        .ok()
        .map(|f| {
            std::io::BufReader::with_capacity(1 << 16, f)
                .lines()
                .map_while(|l| l.ok())
        });
    let ours = lines
        .as_mut()
        .and_then(|l| l.next())
        .is_some_and(|h| h == CACHE_HEADER);
    lines
        .filter(|_| ours)
        .into_iter()
        .flatten()
        .filter_map(parse_line)
}

/// Best effort: a cache that cannot be written only costs the next `list` some time.
fn save_cache(store: &Store, entries: &[(&RunSummary, ObjectId, Option<ObjectId>)]) {
    use std::io::Write;
    let mut out = Vec::with_capacity(entries.len() * 160 + CACHE_HEADER.len());
    let _ = writeln!(out, "{CACHE_HEADER}");
    let mut sorted: Vec<&(&RunSummary, ObjectId, Option<ObjectId>)> = entries.iter().collect();
    sorted.sort_by(|a, b| a.0.run.cmp(&b.0.run));
    for (s, head, notes) in sorted {
        let cached = Cached {
            label: s.label.clone(),
            status: s.status.clone(),
            archived: s.archived,
            checkpoints: s.checkpoints,
            last_activity: s.last_activity,
            rewound_from: s.rewound_from.clone(),
            forked_from: s.forked_from.clone(),
            reverted: s.reverted,
        };
        let _ = match notes {
            Some(n) => write!(out, "{}\t{head}\t{n}\t", s.run),
            None => write!(out, "{}\t{head}\t-\t", s.run),
        };
        if serde_json::to_writer(&mut out, &cached).is_err() {
            return;
        }
        out.push(b'\n');
    }
    let _ = write_atomic(&store.private().runs_cache(), &out, None);
    // The cache of versions before 3 (a JSON document), if still there.
    let _ = std::fs::remove_file(store.private().legacy_runs_cache());
}

/// The summary of `refs` from a cache line, if the line was made from these refs.
fn from_cache(
    line: &CacheLine,
    refs: &crate::store::RunRefSet,
    notes: Option<ObjectId>,
) -> Option<RunSummary> {
    if line.head != refs.head || line.notes != notes {
        return None;
    }
    let c: Cached = serde_json::from_str(&line.line[line.json_at..]).ok()?;
    Some(RunSummary {
        run: refs.run.to_string(),
        label: c.label,
        status: c.status,
        archived: c.archived,
        steps: refs.steps.iter().map(|(s, _)| s.to_string()).collect(),
        checkpoints: c.checkpoints,
        last_activity: c.last_activity,
        head: refs.head.to_string(),
        rewound_from: c.rewound_from,
        forked_from: c.forked_from,
        reverted: c.reverted,
        unique_prefix: 0,
    })
}

/// All runs, newest activity first; archived runs only with `all`.
///
/// Cost at 100,000 runs: one pass over each of the two ref namespaces and one read of the
/// cache file; a summary is computed (two note reads) only for a run whose refs differ from
/// the ones the cache holds, and the cache is rewritten only then.
pub fn list_runs(store: &Store, all: bool) -> Result<RunList> {
    let (runs, invalid) = store.run_ref_sets()?;
    crate::trace::mark("list: run refs read");
    let mut problems: Vec<String> = invalid
        .into_iter()
        .map(|r| format!("{r:?}: invalid run or step name, skipped"))
        .collect();
    let notes_tips = store.notes_tips()?;
    crate::trace::mark("list: notes refs read");
    // Both the refs and the cache are sorted by run: one merge pass.
    let mut cache = cache_lines(store).peekable();
    let mut cache_len = 0usize;
    let mut catalog: Option<Catalog> = None;
    let mut summaries: Vec<RunSummary> = Vec::with_capacity(runs.len());
    let mut keys: Vec<(ObjectId, Option<ObjectId>)> = Vec::with_capacity(runs.len());
    let mut changed = false;
    for refs in &runs {
        let notes = notes_tips.get(refs.run.as_str()).copied();
        while cache
            .peek()
            .is_some_and(|l| l.run.as_str() < refs.run.as_str())
        {
            cache.next();
            cache_len += 1;
        }
        let cached = match cache.peek() {
            Some(l) if l.run == refs.run.as_str() => {
                cache_len += 1;
                from_cache(&cache.next().expect("peeked"), refs, notes)
            }
            _ => None,
        };
        let summary = match cached {
            Some(s) => s,
            None => {
                changed = true;
                let catalog = catalog
                    .get_or_insert_with(|| Catalog::new(store).with_notes_tips(notes_tips.clone()));
                match catalog.summary_from_refs(refs) {
                    Ok(s) => s,
                    Err(e) => {
                        problems.push(format!("{}: {}", refs.run, e.message));
                        continue;
                    }
                }
            }
        };
        summaries.push(summary);
        keys.push((refs.head, notes));
    }
    cache_len += cache.count();
    crate::trace::mark("list: summaries");
    if changed || cache_len != summaries.len() {
        let entries: Vec<_> = summaries
            .iter()
            .zip(&keys)
            .map(|(s, (h, n))| (s, *h, *n))
            .collect();
        save_cache(store, &entries);
        crate::trace::mark("list: cache written");
    }
    drop(keys);
    // Prefixes are unique among every run, shown or not (a prefix resolves against all).
    let ids: Vec<&str> = runs.iter().map(|r| r.run.as_str()).collect();
    let prefixes: HashMap<&str, usize> = ids
        .iter()
        .copied()
        .zip(crate::ids::shortest_unique_prefixes(&ids))
        .collect();
    let mut archived_hidden = 0;
    summaries.retain(|s| {
        let keep = all || !s.archived;
        if !keep {
            archived_hidden += 1;
        }
        keep
    });
    for s in &mut summaries {
        s.unique_prefix = prefixes.get(s.run.as_str()).copied().unwrap_or(s.run.len());
    }
    summaries.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| a.run.cmp(&b.run))
    });
    crate::trace::mark("list: sorted");
    Ok(RunList {
        runs: summaries,
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
