//! `list`: the runs of the repository, or the checkpoints of one run in chain order.
//!
//! Listing runs reads the refs once (`refs/agent-runs/` and `refs/notes/agent-runs/`), then
//! each run's summary: from the summary cache when the run's (HEAD, notes tip) pair is the one
//! the cache was built from, else from two notes (tip and root). The cache
//! (`<git-common-dir>/agent-rewind/cache/runs.lines`, one line per run, format in
//! `runcache`) is only ever an optimisation: a missing, stale, damaged (checksum) or
//! unreadable cache is rebuilt. A run whose notes cannot be read is reported as a problem
//! and the others are still listed. Never writes refs or notes.

use super::runcache;
use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::{Store, write_atomic};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct RunList {
    pub runs: Vec<RunSummary>,
    /// Runs that could not be read, with the reason (malformed notes, invalid names).
    pub problems: Vec<String>,
    /// Archived runs left out (without `all`).
    pub archived_hidden: usize,
}

/// The listed runs, ready to print: each either a current cache line (borrowed from the
/// file's text) or the line of a summary computed now.
pub struct RunListing {
    file: String,
    /// Shown runs, newest activity first.
    entries: Vec<Entry>,
    pub problems: Vec<String>,
    pub archived_hidden: usize,
}

struct Entry {
    line: Line,
    steps: Vec<String>,
    unique_prefix: usize,
}

enum Line {
    /// A range of `RunListing::file`.
    Cached(std::ops::Range<usize>),
    Fresh(String),
}

impl RunListing {
    fn fields<'a>(&'a self, e: &'a Entry) -> runcache::Fields<'a> {
        runcache::split(line_text(&self.file, &e.line))
            .expect("lines are checked when read or made")
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The runs as `list --json` prints them: a JSON array, one run (compact) per line.
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        if self.entries.is_empty() {
            return w.write_all(b"[]");
        }
        w.write_all(b"[")?;
        for (i, e) in self.entries.iter().enumerate() {
            w.write_all(if i == 0 { b"\n" } else { b",\n" })?;
            runcache::write_json(w, &self.fields(e), &e.steps, e.unique_prefix)?;
        }
        w.write_all(b"\n]")
    }

    /// The shown runs' summaries, each parsed when it is reached (nothing is kept: a
    /// table of 100,000 runs walks them twice rather than hold them all).
    pub fn summaries(&self) -> impl Iterator<Item = Result<RunSummary>> + '_ {
        self.entries.iter().map(|e| {
            let f = self.fields(e);
            runcache::summary(&f, &e.steps, e.unique_prefix).ok_or_else(|| {
                crate::error::Error::corrupt(format!("{}: unreadable summary", f.run))
            })
        })
    }

    /// The summaries, parsed.
    pub fn into_run_list(self) -> Result<RunList> {
        let mut runs = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            let f = self.fields(e);
            runs.push(
                runcache::summary(&f, &e.steps, e.unique_prefix).ok_or_else(|| {
                    crate::error::Error::corrupt(format!("{}: unreadable summary", f.run))
                })?,
            );
        }
        Ok(RunList {
            runs,
            problems: self.problems,
            archived_hidden: self.archived_hidden,
        })
    }
}

fn line_text<'a>(file: &'a str, l: &'a Line) -> &'a str {
    match l {
        Line::Cached(r) => &file[r.clone()],
        Line::Fresh(s) => s.as_str(),
    }
}

/// The cache file's text when it is a cache of this version whose checksum matches (else
/// empty): its first line is the header and the CRC-32 of the rest, so a cache edited or
/// cut short is rebuilt whole, and a current line's JSON can be printed as it is.
fn read_cache(store: &Store) -> String {
    let Ok(text) = std::fs::read_to_string(store.private().runs_cache()) else {
        return String::new();
    };
    let intact = text
        .strip_prefix(runcache::HEADER)
        .and_then(|r| r.strip_prefix(' '))
        .and_then(|r| r.split_once('\n'))
        .is_some_and(|(crc, body)| crc == format!("{:08x}", crc32fast::hash(body.as_bytes())));
    if intact { text } else { String::new() }
}

/// Best effort: a cache that cannot be written only costs the next `list` some time.
/// `lines` are sorted by run.
fn save_cache<'a>(store: &Store, lines: impl Iterator<Item = &'a str>, hint: usize) {
    let mut body = Vec::with_capacity(hint);
    for l in lines {
        body.extend_from_slice(l.as_bytes());
        body.push(b'\n');
    }
    let mut out = format!("{} {:08x}\n", runcache::HEADER, crc32fast::hash(&body)).into_bytes();
    out.append(&mut body);
    let _ = write_atomic(&store.private().runs_cache(), &out, None);
    // The caches of earlier versions, if still there (v3 had the same name).
    let _ = std::fs::remove_file(store.private().legacy_runs_cache());
}

/// All runs, newest activity first; archived runs only with `all`.
pub fn list_runs(store: &Store, all: bool) -> Result<RunList> {
    run_listing(store, all)?.into_run_list()
}

/// [`list_runs`] without parsing the summaries: what `list --json` prints.
///
/// Cost at 100,000 runs: one pass over each of the two ref namespaces and one read of the
/// cache file; a summary is computed (two note reads) only for a run whose (HEAD, notes tip)
/// differs from the cache line's, and the cache is rewritten only then. A current line is
/// neither parsed nor re-serialized: its JSON is printed as it is.
pub fn run_listing(store: &Store, all: bool) -> Result<RunListing> {
    let (runs, invalid) = store.run_ref_sets()?;
    crate::trace::mark("list: run refs read");
    let mut problems: Vec<String> = invalid
        .into_iter()
        .map(|r| format!("{r:?}: invalid run or step name, skipped"))
        .collect();
    let notes_tips = store.notes_tips_sorted()?;
    let mut next_notes = notes_tips.iter().peekable();
    crate::trace::mark("list: notes refs read");
    let file = read_cache(store);
    crate::trace::mark("list: cache read");
    // Both the refs and the cache are sorted by run: one merge pass.
    let mut cache = file.split_inclusive('\n').skip(1).peekable();
    let base = file.as_ptr() as usize;
    let range_of = |l: &str| {
        let start = l.as_ptr() as usize - base;
        start..start + l.trim_end_matches('\n').len()
    };
    let mut cache_len = 0usize;
    let mut catalog: Option<Catalog> = None;
    // (sort key, archived, line, steps, index in `runs`)
    let mut entries: Vec<(i128, bool, Line, Vec<String>, usize)> = Vec::with_capacity(runs.len());
    let mut changed = false;
    let mut hex = [0u8; 64];
    let mut notes_hex = [0u8; 64];
    for (index, refs) in runs.iter().enumerate() {
        while next_notes
            .next_if(|(r, _)| r.as_str() < refs.run.as_str())
            .is_some()
        {}
        let notes = next_notes
            .next_if(|(r, _)| r.as_str() == refs.run.as_str())
            .map(|(_, id)| *id);
        let head = refs.head.hex_to_buf(&mut hex);
        let notes_str: &str = match &notes {
            Some(n) => n.hex_to_buf(&mut notes_hex),
            None => "-",
        };
        while let Some(l) = cache.peek() {
            let run = l.split('\t').next().unwrap_or("");
            if run >= refs.run.as_str() {
                break;
            }
            cache.next();
            cache_len += 1;
        }
        let mut found = None;
        if let Some(l) = cache.peek()
            && l.split('\t').next() == Some(refs.run.as_str())
        {
            let l = cache.next().expect("peeked");
            cache_len += 1;
            if let Some(f) = runcache::split(l.trim_end_matches('\n'))
                && f.head == head
                && f.notes == notes_str
                && runcache::valid(&f)
            {
                found = Some((f.key, f.archived, Line::Cached(range_of(l))));
            }
        }
        let found = match found {
            Some(f) => f,
            None => {
                changed = true;
                let catalog = catalog.get_or_insert_with(|| {
                    Catalog::new(store).with_notes_tips(notes_tips.iter().cloned().collect())
                });
                match catalog.summary_from_refs(refs) {
                    Ok(s) => (
                        s.last_activity.as_nanosecond(),
                        s.archived,
                        Line::Fresh(runcache::line_of(&s, head, notes_str)),
                    ),
                    Err(e) => {
                        problems.push(format!("{}: {}", refs.run, e.message));
                        continue;
                    }
                }
            }
        };
        let steps = refs.steps.iter().map(|(s, _)| s.to_string()).collect();
        entries.push((found.0, found.1, found.2, steps, index));
    }
    cache_len += cache.count();
    crate::trace::mark("list: summaries");
    if changed || cache_len != entries.len() {
        save_cache(
            store,
            entries.iter().map(|e| line_text(&file, &e.2)),
            file.len().max(entries.len() * 200),
        );
        crate::trace::mark("list: cache written");
    }
    // Prefixes are unique among every run, shown or not (a prefix resolves against all).
    let ids: Vec<&str> = runs.iter().map(|r| r.run.as_str()).collect();
    let prefixes = crate::ids::shortest_unique_prefixes(&ids);
    let mut archived_hidden = 0;
    let mut shown: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut order: Vec<(i128, usize)> = Vec::with_capacity(entries.len());
    for (key, archived, line, steps, index) in entries {
        if archived && !all {
            archived_hidden += 1;
            continue;
        }
        let unique_prefix = prefixes[index];
        order.push((key, shown.len()));
        shown.push(Entry {
            line,
            steps,
            unique_prefix,
        });
    }
    // Newest first, then by run: `shown` is sorted by run, so its index orders ties.
    order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut slots: Vec<Option<Entry>> = shown.into_iter().map(Some).collect();
    let entries = order
        .iter()
        .map(|(_, i)| slots[*i].take().expect("each index once"))
        .collect();
    crate::trace::mark("list: sorted");
    Ok(RunListing {
        file,
        entries,
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
