//! `list`: the runs of the repository, or the checkpoints of one run in chain order.
//!
//! Listing runs reads the refs once (`refs/agent-runs/` and `refs/notes/agent-runs/`), then
//! each run's summary: from the summary cache when the run's (HEAD, notes tip) pair is the one
//! the cache was built from, else from two notes (tip and root), many runs spread over the
//! CPUs. The cache (`<git-common-dir>/agent-rewind/cache/runs.lines`, one line per run,
//! format in `runcache`) is only ever an optimisation: a missing, stale, damaged (checksum)
//! or unreadable cache is rebuilt. A run whose notes cannot be read is reported as a problem
//! and the others are still listed. Never writes refs or notes.

use super::runcache;
use crate::catalog::{Catalog, Checkpoint, RunSummary};
use crate::error::Result;
use crate::ids::RunId;
use crate::store::{ObjectId, RunRefSet, Store, write_atomic_with};
use serde::Serialize;
use std::io::{Seek, Write};

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
/// `lines` are sorted by run. Written as the lines come (the header, of fixed length, holds
/// the checksum of the rest, so it is written last over a placeholder): at 100,000 runs the
/// body is 25 MB, which is not held a second time.
fn save_cache<'a>(store: &Store, lines: impl Iterator<Item = &'a str>) {
    let _ = write_atomic_with(&store.private().runs_cache(), |w| {
        let placeholder = format!("{} {:08x}\n", runcache::HEADER, 0);
        w.write_all(placeholder.as_bytes())?;
        let mut crc = crc32fast::Hasher::new();
        for l in lines {
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
            crc.update(l.as_bytes());
            crc.update(b"\n");
        }
        let header = format!("{} {:08x}\n", runcache::HEADER, crc.finalize());
        debug_assert_eq!(header.len(), placeholder.len());
        w.seek(std::io::SeekFrom::Start(0))?;
        w.write_all(header.as_bytes())
    });
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
    // (sort key, archived, line, steps, index in `runs`); `None` for a run whose summary
    // could not be made. The runs to summarize now get a placeholder and a place in `todo`.
    type Found = (i128, bool, Line, Vec<String>, usize);
    let mut entries: Vec<Option<Found>> = Vec::with_capacity(runs.len());
    let mut todo: Vec<(usize, Option<ObjectId>)> = Vec::new();
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
        let (key, archived, line) = found.unwrap_or_else(|| {
            todo.push((entries.len(), notes));
            (0, false, Line::Fresh(String::new()))
        });
        let steps = refs.steps.iter().map(|(s, _)| s.to_string()).collect();
        entries.push(Some((key, archived, line, steps, index)));
    }
    cache_len += cache.count();
    crate::trace::mark("list: cache merged");
    let changed = !todo.is_empty();
    let fresh = summarize(store, &runs, &todo);
    for ((at, _), made) in todo.iter().zip(fresh) {
        match made {
            Ok((key, archived, line)) => {
                let e = entries[*at].as_mut().expect("placeholder");
                (e.0, e.1, e.2) = (key, archived, Line::Fresh(line));
            }
            Err(problem) => {
                problems.push(problem);
                entries[*at] = None;
            }
        }
    }
    let entries: Vec<Found> = entries.into_iter().flatten().collect();
    crate::trace::mark("list: summaries");
    if changed || cache_len != entries.len() {
        save_cache(store, entries.iter().map(|e| line_text(&file, &e.2)));
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

/// Runs summarized by one thread before another is worth starting.
const RUNS_PER_THREAD: usize = 256;

/// The summaries of the runs in `todo` (index in `runs`, notes tip), in that order: (sort
/// key, archived, cache line), or the problem to report. Reading the notes is most of the
/// first `list` after many runs appear, so many runs are spread over the CPUs (one handle
/// on the repository each); the result does not depend on how they were spread.
fn summarize(
    store: &Store,
    runs: &[RunRefSet],
    todo: &[(usize, Option<ObjectId>)],
) -> Vec<std::result::Result<(i128, bool, String), String>> {
    let threads = match todo.len() / RUNS_PER_THREAD {
        0 | 1 => 1,
        wanted => wanted
            .min(std::thread::available_parallelism().map_or(2, |n| n.get()))
            .min(8),
    };
    if threads == 1 {
        return summarize_part(store, runs, todo);
    }
    let chunk = todo.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = todo
            .chunks(chunk)
            .map(|part| {
                let store = store.handle();
                scope.spawn(move || summarize_part(&store, runs, part))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn summarize_part(
    store: &Store,
    runs: &[RunRefSet],
    part: &[(usize, Option<ObjectId>)],
) -> Vec<std::result::Result<(i128, bool, String), String>> {
    let mut catalog = Catalog::new(store);
    let mut hex = [0u8; 64];
    let mut notes_hex = [0u8; 64];
    part.iter()
        .map(|(index, notes)| {
            let refs = &runs[*index];
            let s = catalog
                .summary_at(refs, *notes)
                .map_err(|e| format!("{}: {}", refs.run, e.message))?;
            let head = refs.head.hex_to_buf(&mut hex);
            let notes_str: &str = match notes {
                Some(n) => n.hex_to_buf(&mut notes_hex),
                None => "-",
            };
            Ok((
                s.last_activity.as_nanosecond(),
                s.archived,
                runcache::line_of(&s, head, notes_str),
            ))
        })
        .collect()
}

/// The checkpoints of one run, oldest first.
pub fn list_checkpoints(store: &Store, run: &RunId) -> Result<Vec<Checkpoint>> {
    let chain = Catalog::new(store).run_chain(run);
    crate::trace::mark("list: chain read");
    chain
}
