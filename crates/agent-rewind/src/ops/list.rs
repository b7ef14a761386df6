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
use crate::store::{ObjectId, RunRefSet, Store};
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use agent_rewind_core::private::envelope::{RUNS_CACHE, TRAILER_LEN};
use serde::Serialize;
use std::io::{Seek, Write};
use std::ops::Range;

#[derive(Debug, Clone, Serialize)]
pub struct RunList {
    pub runs: Vec<RunSummary>,
    /// Runs that could not be read, with the reason (malformed notes, invalid names).
    pub problems: Vec<String>,
    /// Archived runs left out (without `all`).
    pub archived_hidden: usize,
}

/// A listed run while the list is made; `None` in the list for a run whose summary could
/// not be made.
struct Found {
    /// Newest activity first.
    key: i128,
    archived: bool,
    line: Line,
    steps: Vec<String>,
    /// Index in the runs read.
    index: usize,
}

/// A run whose summary is made now: its index in the list being made, and its notes tip.
type Todo = (usize, Option<ObjectId>);

/// The listed runs, ready to print: each either a current cache line (a range of the
/// cache file's text) or the line of a summary computed now.
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
    /// The active run of this worktree.
    active: bool,
}

enum Line {
    /// A range of `RunListing::file`.
    Cached(Range<usize>),
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
            runcache::write_json(w, &self.fields(e), &e.steps, e.unique_prefix, e.active)?;
        }
        w.write_all(b"\n]")
    }

    /// The shown runs' summaries, each parsed when it is reached (nothing is kept: a
    /// table of 100,000 runs walks them twice rather than hold them all).
    pub fn summaries(&self) -> impl Iterator<Item = Result<RunSummary>> + '_ {
        self.entries.iter().map(|e| {
            let f = self.fields(e);
            runcache::summary(&f, &e.steps, e.unique_prefix, e.active).ok_or_else(|| {
                agent_rewind_core::error::Error::corrupt(format!("{}: unreadable summary", f.run))
            })
        })
    }

    /// The summaries, parsed.
    pub fn into_run_list(self) -> Result<RunList> {
        let runs = self.summaries().collect::<Result<Vec<_>>>()?;
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

/// The cache file's text (its header line and run lines, without the checksum line) and
/// where each run line lies in it, in file order, which is run order.
struct CacheFile {
    text: String,
    /// The run lines, each a byte range of `text` without its newline.
    lines: Vec<Range<usize>>,
}

impl CacheFile {
    /// The lines of `text` after its header line.
    fn new(text: String) -> CacheFile {
        let mut lines = Vec::new();
        let mut start = 0;
        let mut header = true;
        for (at, byte) in text.bytes().enumerate() {
            if byte == b'\n' {
                if !header {
                    lines.push(start..at);
                }
                header = false;
                start = at + 1;
            }
        }
        if !header && start < text.len() {
            lines.push(start..text.len());
        }
        CacheFile { text, lines }
    }

    /// The cache as read from the disk: empty when missing, damaged or of another version
    /// (a cache edited or cut short is rebuilt whole, and a current line's JSON can be
    /// printed as it is).
    fn read(store: &Store) -> CacheFile {
        let text = std::fs::read(store.private().runs_cache())
            .ok()
            .and_then(cache_text)
            .unwrap_or_default();
        CacheFile::new(text)
    }

    fn line(&self, i: usize) -> &str {
        &self.text[self.lines[i].clone()]
    }

    /// The run a line is of: its first field.
    fn run(&self, i: usize) -> &str {
        self.line(i).split('\t').next().unwrap_or("")
    }
}

/// The text of a cache file's bytes (header line and run lines) when it is current and
/// intact: its first line is the envelope's header (`RUNS_CACHE`), its last the checksum.
/// The bytes become the text in place: at 100,000 runs the file is about 26 MB, and a copy
/// would hold it twice at the command's peak.
fn cache_text(mut data: Vec<u8>) -> Option<String> {
    RUNS_CACHE.cache_body(&data)?;
    data.truncate(data.len() - TRAILER_LEN);
    String::from_utf8(data).ok()
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
    run_listing_once(store, all, true)
}

fn run_listing_once(store: &Store, all: bool, retry: bool) -> Result<RunListing> {
    let (runs, invalid) = store.refs().run_ref_sets()?;
    agent_rewind_core::trace::mark("list: run refs read");
    let mut problems: Vec<String> = invalid
        .into_iter()
        .map(|r| format!("{r:?}: invalid run or step name, skipped"))
        .collect();
    let notes_tips = store.refs().notes_tips_sorted()?;
    agent_rewind_core::trace::mark("list: notes refs read");
    let cache = CacheFile::read(store);
    agent_rewind_core::trace::mark("list: cache read");
    let (mut entries, todo) = merge_with_cache(&runs, &notes_tips, &cache);
    // The notes tips are in `todo` where still needed: not held through what follows.
    drop(notes_tips);
    agent_rewind_core::trace::mark("list: cache merged");
    let mut file = cache.text;
    if !todo.is_empty() || cache.lines.len() != entries.len() {
        match rewrite_cache(store, &runs, &file, &mut entries, &todo) {
            Some((new_file, mut found)) => {
                drop(file);
                agent_rewind_core::trace::mark("list: summaries and cache written");
                match read_back(new_file) {
                    Some(text) => file = text,
                    // Unreadable right after it was written: list again from the disk.
                    None if retry => return run_listing_once(store, all, false),
                    None => {
                        return Err(agent_rewind_core::error::Error::corrupt(
                            "the list cache could not be read back after it was written",
                        ));
                    }
                }
                problems.append(&mut found);
            }
            None => {
                // The cache cannot be written: the summaries are kept in memory instead.
                summarize_in_memory(store, &runs, &mut entries, &todo, &mut problems);
                agent_rewind_core::trace::mark("list: summaries");
            }
        }
    }
    // A worktree whose active run cannot be read lists the runs all the same, none marked.
    let active = crate::journal::active_run(store).ok().flatten();
    let (entries, archived_hidden) =
        shown_newest_first(&runs, &file, entries, all, active.as_ref());
    agent_rewind_core::trace::mark("list: sorted");
    Ok(RunListing {
        file,
        entries,
        problems,
        archived_hidden,
    })
}

/// Each run with its current cache line, or a placeholder and a place in the returned
/// runs to summarize now. Both the refs and the cache are sorted by run: one merge pass.
fn merge_with_cache(
    runs: &[RunRefSet],
    notes_tips: &[(String, ObjectId)],
    cache: &CacheFile,
) -> (Vec<Option<Found>>, Vec<Todo>) {
    let mut next_notes = notes_tips.iter().peekable();
    let mut next_line = 0;
    let mut entries: Vec<Option<Found>> = Vec::with_capacity(runs.len());
    let mut todo: Vec<Todo> = Vec::new();
    let mut hex = [0u8; 64];
    let mut notes_hex = [0u8; 64];
    for (index, refs) in runs.iter().enumerate() {
        let run = refs.run.as_str();
        while next_notes.next_if(|(r, _)| r.as_str() < run).is_some() {}
        let notes = next_notes
            .next_if(|(r, _)| r.as_str() == run)
            .map(|(_, id)| *id);
        let head = refs.head.hex_to_buf(&mut hex);
        let notes_str: &str = match &notes {
            Some(n) => n.hex_to_buf(&mut notes_hex),
            None => "-",
        };
        while next_line < cache.lines.len() && cache.run(next_line) < run {
            next_line += 1;
        }
        let mut found = None;
        if next_line < cache.lines.len() && cache.run(next_line) == run {
            if let Some(f) = runcache::split(cache.line(next_line))
                && f.head == head
                && f.notes == notes_str
                && runcache::valid(&f)
            {
                let line = Line::Cached(cache.lines[next_line].clone());
                found = Some((f.key, f.archived, line));
            }
            next_line += 1;
        }
        let (key, archived, line) = found.unwrap_or_else(|| {
            todo.push((entries.len(), notes));
            (0, false, Line::Fresh(String::new()))
        });
        let steps = refs.steps.iter().map(|(s, _)| s.to_string()).collect();
        entries.push(Some(Found {
            key,
            archived,
            line,
            steps,
            index,
        }));
    }
    (entries, todo)
}

/// The runs in `todo` summarized into `entries` (when the cache cannot be written); a run
/// that cannot be summarized leaves the list and becomes a problem.
fn summarize_in_memory(
    store: &Store,
    runs: &[RunRefSet],
    entries: &mut [Option<Found>],
    todo: &[Todo],
    problems: &mut Vec<String>,
) {
    let fresh = summarize(store, runs, todo);
    for ((at, _), made) in todo.iter().zip(fresh) {
        match made {
            Ok((key, archived, line)) => {
                let e = entries[*at].as_mut().expect("placeholder");
                (e.key, e.archived, e.line) = (key, archived, Line::Fresh(line));
            }
            Err(problem) => {
                problems.push(problem);
                entries[*at] = None;
            }
        }
    }
}

/// The runs to show (archived ones only with `all`), newest activity first, each with its
/// steps in its workflow's order and its unique prefix; and how many archived runs were
/// left out.
fn shown_newest_first(
    runs: &[RunRefSet],
    file: &str,
    entries: Vec<Option<Found>>,
    all: bool,
    active: Option<&RunId>,
) -> (Vec<Entry>, usize) {
    // Prefixes are unique among every run, shown or not (a prefix resolves against all).
    let ids: Vec<&str> = runs.iter().map(|r| r.run.as_str()).collect();
    let prefixes = agent_rewind_core::ids::shortest_unique_prefixes(&ids);
    let mut archived_hidden = 0;
    let mut shown: Vec<(i128, Entry)> = Vec::with_capacity(entries.len());
    for found in entries.into_iter().flatten() {
        if found.archived && !all {
            archived_hidden += 1;
            continue;
        }
        let mut steps = found.steps;
        // The refs list steps by name; the run's workflow, when it has one, orders them.
        // Most runs have none (their line ends in `-`): no second split of their line.
        let text = line_text(file, &found.line);
        if !text.ends_with("\t-")
            && let Some(f) = runcache::split(text)
        {
            crate::catalog::order_steps(&mut steps, f.step_order());
        }
        let entry = Entry {
            line: found.line,
            steps,
            unique_prefix: prefixes[found.index],
            active: active.is_some_and(|a| a.as_str() == runs[found.index].run.as_str()),
        };
        shown.push((found.key, entry));
    }
    // Newest first, then by run: `shown` is in run order and the sort is stable.
    shown.sort_by_key(|e| std::cmp::Reverse(e.0));
    let entries = shown.into_iter().map(|(_, e)| e).collect();
    (entries, archived_hidden)
}

/// Runs summarized through one private object database (`Store::handle_for_bulk_read`)
/// before it is dropped: the pages of the packs read for them leave memory with it.
/// The test build (feature `crash-points`) uses small chunks and threads so that the tests'
/// hundreds of runs cross both.
const RUNS_PER_CHUNK: usize = if agent_rewind_core::crash::ENABLED {
    128
} else {
    8192
};

/// The new cache, written as the runs in `todo` are summarized (a chunk at a time, in run
/// order) between the current lines of `old`: the file written (for reading back) and the
/// problems met, with every written entry's line now a range of the new file and every run
/// that could not be summarized removed from `entries`. `None` when the cache cannot be
/// written; `entries` are then as they were.
fn rewrite_cache(
    store: &Store,
    runs: &[RunRefSet],
    old: &str,
    entries: &mut [Option<Found>],
    todo: &[Todo],
) -> Option<(std::fs::File, Vec<String>)> {
    // What the entries become once the file is in place.
    let mut ranges: Vec<Range<usize>> = Vec::with_capacity(entries.len());
    let mut made: Vec<(i128, bool)> = Vec::with_capacity(todo.len());
    let mut problems = Vec::new();
    let written = RUNS_CACHE.write_with(&store.private().runs_cache(), |w| {
        let mut at = RUNS_CACHE.header().len();
        let mut line = |w: &mut dyn Write, l: &str| -> std::io::Result<Range<usize>> {
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
            let range = at..at + l.len();
            at += l.len() + 1;
            Ok(range)
        };
        let mut next = 0;
        let mut todo_left = todo.iter().peekable();
        for chunk in todo.chunks(RUNS_PER_CHUNK).map(Some).chain([None]) {
            let (upto, mut fresh) = match chunk {
                Some(chunk) => {
                    let objects = store
                        .handle_for_bulk_read()
                        .unwrap_or_else(|_| store.handle_for_thread());
                    let fresh = summarize(&objects, runs, chunk);
                    (
                        chunk.last().expect("chunks are not empty").0 + 1,
                        fresh.into_iter(),
                    )
                }
                None => (entries.len(), Vec::new().into_iter()),
            };
            while next < upto {
                let range = match &entries[next] {
                    None => 0..0,
                    Some(_) if todo_left.next_if(|(i, _)| *i == next).is_some() => {
                        match fresh.next().expect("one summary per run") {
                            Ok((key, archived, text)) => {
                                made.push((key, archived));
                                line(w, &text)?
                            }
                            Err(problem) => {
                                problems.push(problem);
                                made.push((0, false));
                                0..0
                            }
                        }
                    }
                    Some(e) => line(w, line_text(old, &e.line))?,
                };
                ranges.push(range);
                next += 1;
            }
        }
        Ok(())
    });
    // The caches of earlier versions, if still there (v3 had the same name).
    let _ = std::fs::remove_file(store.private().legacy_runs_cache());
    let file = written.ok()?;
    let mut made = made.into_iter();
    let mut todo = todo.iter().peekable();
    for (i, range) in ranges.into_iter().enumerate() {
        let fresh = todo
            .next_if(|(t, _)| *t == i)
            .map(|_| made.next().expect("one per run"));
        let Some(e) = entries[i].as_mut() else {
            continue;
        };
        if range.is_empty() {
            entries[i] = None;
            continue;
        }
        if let Some((key, archived)) = fresh {
            (e.key, e.archived) = (key, archived);
        }
        e.line = Line::Cached(range);
    }
    Some((file, problems))
}

/// The text of the cache file just written (see [`rewrite_cache`]).
fn read_back(mut file: std::fs::File) -> Option<String> {
    use std::io::Read;
    let len = file.seek(std::io::SeekFrom::End(0)).ok()?;
    file.seek(std::io::SeekFrom::Start(0)).ok()?;
    let mut data = Vec::with_capacity(usize::try_from(len).ok()?);
    file.read_to_end(&mut data).ok()?;
    cache_text(data)
}

/// Runs summarized by one thread before another is worth starting.
const RUNS_PER_THREAD: usize = if agent_rewind_core::crash::ENABLED {
    32
} else {
    256
};

/// The summaries of the runs in `todo` (index in `runs`, notes tip), in that order: (sort
/// key, archived, cache line), or the problem to report. Reading the notes is most of the
/// first `list` after many runs appear, so many runs are spread over the CPUs (one handle
/// on the repository each); the result does not depend on how they were spread.
fn summarize(
    store: &Store,
    runs: &[RunRefSet],
    todo: &[Todo],
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
                let store = store.handle_for_thread();
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
    part: &[Todo],
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
    agent_rewind_core::trace::mark("list: chain read");
    chain
}
