//! Finding untracked files: gix's directory walk (ignore rules and all), plus a cache of
//! it in the spirit of git's untracked cache, so that a snapshot does not read every
//! directory of a large worktree each time.
//!
//! The cache (`<git dir>/agent-rewind/cache/dirwalk`, per worktree) remembers, for every
//! directory the walk read, its stat data, whether it held untracked files, the stat data
//! of its `.gitignore`, and a digest of the index entries below it. The next walk skips a
//! tracked directory only when nothing that could make a difference can have changed:
//! every directory below it has the same stat data as then (adding, removing or renaming an
//! entry changes a directory's mtime) and held no untracked file, no `.gitignore` there or
//! above changed, the index lists the same paths below it, and the global ignore sources
//! and settings are the same. Stat data that is recent enough to be ambiguous (within two
//! seconds of the walk, the racy-git problem) is never trusted. A missing, unreadable or
//! stale cache only means more directories are read.
//!
//! It must never make the walk miss a file: every doubt reads the directory. It never writes
//! anything but its own cache file.
//!
//! One of the scanner's sources (`scan::snapshot::scan`). Fallback: every directory is read, as gix's
//! walk alone does. Kill switch: `agentRewind.untrackedCache=false` (and it is off on
//! platforms other than unix).
//!
//! A directory that cannot be read (no permission) is left out and reported, as `git status`
//! warns and goes on: the walk is run again without entering it.

use crate::ScanContext;
use crate::fsmonitor::Changes;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::private::digest::{Digest, path_digest};
use gix::bstr::{BStr, BString, ByteSlice};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod cache;
mod gixwalk;

pub use cache::StatData;
use cache::{Cache, DirRecord, cache_key, same_records};
pub(super) use cache::{global_files, source_stamp};
use gixwalk::dirwalk;
pub(super) use gixwalk::entries_named;

const CACHE_HEADER: &str = "agent-rewind dirwalk cache v3";
/// Stat data this close to the walk's start may not show a change made right after it.
const RACY_MARGIN: Duration = Duration::from_secs(2);

/// An untracked (not ignored) entry the walk found.
#[derive(Debug, Clone)]
pub struct Untracked {
    pub rela_path: BString,
    pub disk_kind: Option<gix::dir::entry::Kind>,
}

/// What the walk found and how much it read.
#[derive(Debug, Clone, Default)]
pub struct WalkOutcome {
    pub untracked: Vec<Untracked>,
    /// Directories read from disk.
    pub dirs_read: usize,
    /// Directories (whole subtrees counted) known from the cache without reading them.
    pub dirs_skipped: usize,
    /// Directories that could not be read, with why: not entered, their files left out.
    pub unreadable: Vec<(BString, String)>,
}

/// How many unreadable directories one walk steps around before it gives up.
const MAX_UNREADABLE: usize = 64;

/// What the filesystem monitor (`scan::fsmonitor`) tells the walk.
#[derive(Clone, Copy)]
pub struct WalkMonitor<'a> {
    /// What changed since our token (`None`: everything may have).
    pub changes: Option<&'a Changes>,
    /// The token the records of this walk will be valid at.
    pub next_token: Option<&'a str>,
    /// [`path_digest`] of each index entry, when already computed.
    pub path_digests: Option<&'a [u64]>,
}

/// The walk cache, read on a thread of its own (while the snapshot reads the index).
pub struct CacheRead {
    use_cache: bool,
    key: u64,
    cache: Option<std::thread::JoinHandle<Cache>>,
}

/// Start reading the walk cache of `store` (nothing when it is turned off).
pub fn read_cache(ctx: &ScanContext) -> Result<CacheRead> {
    let workdir = ctx.workdir();
    let use_cache = ctx
        .repo()
        .config_snapshot()
        .boolean("agentRewind.untrackedCache")
        .unwrap_or(true)
        && cfg!(unix);
    // The key is taken before the walk reads any ignore file: one changed after it only
    // makes the cache written now not match next time.
    let key = cache_key(ctx, workdir);
    let cache = use_cache.then(|| {
        let path = ctx.private().dirwalk_cache();
        std::thread::spawn(move || Cache::load(&path, key))
    });
    Ok(CacheRead {
        use_cache,
        key,
        cache,
    })
}

/// Find the untracked files of `store`'s worktree, with the cache (`cache`, from
/// [`read_cache`]) unless it is turned off. With `monitor`, a cached directory the monitor
/// did not report is known without a stat, when the cache's records are those of the token
/// the monitor was asked with.
pub fn untracked_files(
    ctx: &ScanContext,
    index: &gix::index::State,
    monitor: Option<WalkMonitor<'_>>,
    cache: CacheRead,
) -> Result<WalkOutcome> {
    let workdir = ctx.workdir().to_path_buf();
    let CacheRead {
        use_cache,
        key,
        cache,
    } = cache;
    let cache_path = ctx.private().dirwalk_cache();
    let walk_start = SystemTime::now();
    // A cache that could not be read (its thread failed) is no cache.
    let mut previous = cache.and_then(|h| h.join().ok()).unwrap_or_default();
    // The monitor's answer holds for the cache only when its records are those of the token
    // we asked with.
    let changes = monitor
        .and_then(|m| m.changes)
        .filter(|c| previous.token.as_deref() == Some(c.since.as_str()));
    let next_token = monitor.and_then(|m| m.next_token).map(str::to_string);
    let digests = IndexDigests::new(index, monitor.and_then(|m| m.path_digests));
    let mut unreadable: Vec<(BString, String)> = Vec::new();
    loop {
        let prune: HashSet<BString> = unreadable.iter().map(|(p, _)| p.clone()).collect();
        match walk_once(
            ctx, index, &digests, &workdir, &previous, walk_start, use_cache, &prune, changes,
        ) {
            Ok((read, skipped, mut outcome)) => {
                outcome.unreadable = unreadable;
                outcome.dirs_read = read.len();
                if use_cache && outcome.unreadable.is_empty() {
                    let same = previous.key == key
                        && previous.token == next_token
                        && read
                            .iter()
                            .all(|(k, r)| previous.dirs.get(k).is_some_and(|p| same_records(p, r)));
                    // The records of the skipped subtrees are carried over as they are (not
                    // copied one by one), and those of the directories read now replace theirs.
                    let mut dirs = std::mem::take(&mut previous.dirs);
                    let before = dirs.len();
                    dirs.retain(|k, _| below_any(k.as_bstr(), &skipped));
                    let same = same && dirs.len() + read.len() == before;
                    dirs.extend(read);
                    let cache = Cache {
                        key,
                        token: next_token,
                        dirs,
                    };
                    if !same {
                        // Best effort: a cache that cannot be written only costs time next run.
                        let _ = cache.save(&cache_path);
                    }
                }
                return Ok(outcome);
            }
            Err(e) => match unreadable_dir_of(&e, &workdir) {
                Some(found) if unreadable.len() < MAX_UNREADABLE && !prune.contains(&found.0) => {
                    unreadable.push(found);
                }
                _ => {
                    return Err(Error::other(format!(
                        "directory walk failed: {}",
                        agent_rewind_core::error::one_line(&e.to_string())
                    )));
                }
            },
        }
    }
}

/// The directory a failed walk could not read, relative to `workdir`, and why — when it
/// still cannot be read (else the failure is something else, or passing).
fn unreadable_dir_of(e: &dyn std::fmt::Display, workdir: &Path) -> Option<(BString, String)> {
    const MARK: &str = "Failed to read the directory at \"";
    let text = e.to_string();
    let start = text.find(MARK)? + MARK.len();
    let end = start + text[start..].rfind('"')?;
    let full = PathBuf::from(&text[start..end]);
    let rela = full.strip_prefix(workdir).ok()?;
    if rela.as_os_str().is_empty() {
        return None;
    }
    let why = match std::fs::read_dir(&full) {
        Ok(_) => return None,
        Err(e) => e.to_string(),
    };
    let rela = gix::path::into_bstr(rela).ok()?.into_owned();
    Some((rela, why))
}

/// One directory walk that does not enter the directories in `prune`.
#[allow(clippy::too_many_arguments)]
fn walk_once(
    ctx: &ScanContext,
    index: &gix::index::State,
    digests: &IndexDigests<'_>,
    workdir: &Path,
    previous: &Cache,
    walk_start: SystemTime,
    use_cache: bool,
    prune: &HashSet<BString>,
    changes: Option<&Changes>,
) -> std::result::Result<WalkResult, Box<dyn std::error::Error>> {
    let repo = ctx.repo();
    let mut delegate = CachingDelegate {
        prune,
        changes,
        workdir,
        digests,
        previous,
        next: BTreeMap::new(),
        skipped: HashSet::new(),
        racy_after: walk_start.checked_sub(RACY_MARGIN).unwrap_or(UNIX_EPOCH),
        changed_ignore_dirs: HashSet::new(),
        use_cache,
        outcome: WalkOutcome::default(),
    };
    // The root is always read: record it like any other directory.
    delegate.record_read_dir(BStr::new(""), true);
    let options = repo
        .dirwalk_options()?
        .emit_untracked(gix::dir::walk::EmissionMode::Matching);
    let interrupt = AtomicBool::new(false);
    dirwalk(repo, index, &interrupt, options, &mut delegate)?;
    let CachingDelegate {
        next,
        skipped,
        outcome,
        ..
    } = delegate;
    Ok((next, skipped, outcome))
}

/// What one walk found: the records of the directories it read, the directories whose
/// whole subtree it knew from the cache, and the outcome.
type WalkResult = (BTreeMap<BString, DirRecord>, HashSet<BString>, WalkOutcome);

/// Whether `dir` is one of `roots` or below one of them.
fn below_any(dir: &BStr, roots: &HashSet<BString>) -> bool {
    if roots.is_empty() {
        return false;
    }
    let mut d = dir;
    loop {
        if roots.contains(d) {
            return true;
        }
        match d.rfind_byte(b'/') {
            Some(i) => d = d[..i].as_bstr(),
            None => return false,
        }
    }
}

/// Per-entry digests of the index with prefix sums, so that the digest of all entries below
/// any directory is one subtraction.
struct IndexDigests<'a> {
    index: &'a gix::index::State,
    prefix_sums: Vec<u64>,
}

impl<'a> IndexDigests<'a> {
    /// With `known` ([`path_digest`] of each entry, computed beside the monitor's digests)
    /// the paths are not gone over again.
    fn new(index: &'a gix::index::State, known: Option<&[u64]>) -> Self {
        let mut prefix_sums = Vec::with_capacity(index.entries().len() + 1);
        let mut sum = 0u64;
        prefix_sums.push(sum);
        match known.filter(|k| k.len() == index.entries().len()) {
            Some(known) => {
                for d in known {
                    sum = sum.wrapping_add(*d);
                    prefix_sums.push(sum);
                }
            }
            None => {
                for e in index.entries() {
                    let mut h = Digest::default();
                    h.bytes(e.path(index));
                    sum = sum.wrapping_add(path_digest(h, e.mode.bits()));
                    prefix_sums.push(sum);
                }
            }
        }
        IndexDigests { index, prefix_sums }
    }

    /// (count, digest) of the entries below directory `dir` (`""` is the root).
    fn below(&self, dir: &BStr) -> (u64, u64) {
        let entries = self.index.entries();
        let (lo, hi) = if dir.is_empty() {
            (0, entries.len())
        } else {
            let mut prefix = dir.to_vec();
            prefix.push(b'/');
            let lo = entries.partition_point(|e| e.path(self.index).as_bytes() < &prefix[..]);
            let hi =
                lo + entries[lo..].partition_point(|e| e.path(self.index).starts_with(&prefix));
            (lo, hi)
        };
        (
            (hi - lo) as u64,
            self.prefix_sums[hi].wrapping_sub(self.prefix_sums[lo]),
        )
    }
}

/// The directory holding `rela` (`""` for the root's entries).
fn parent_of(rela: &BStr) -> &BStr {
    match rela.rfind_byte(b'/') {
        Some(i) => rela[..i].as_bstr(),
        None => BStr::new(""),
    }
}

struct CachingDelegate<'a> {
    /// Directories not to enter (unreadable).
    prune: &'a HashSet<BString>,
    /// What the monitor reported since the cache's token: directories it did not report
    /// are known without a stat.
    changes: Option<&'a Changes>,
    workdir: &'a Path,
    digests: &'a IndexDigests<'a>,
    previous: &'a Cache,
    /// Records of the directories read in this walk.
    next: BTreeMap<BString, DirRecord>,
    /// Directories whose cached subtree holds as a whole (not read, nor anything below).
    skipped: HashSet<BString>,
    racy_after: SystemTime,
    /// Directories whose `.gitignore` is not what the cache saw: nothing below is skipped.
    changed_ignore_dirs: HashSet<BString>,
    use_cache: bool,
    outcome: WalkOutcome,
}

impl CachingDelegate<'_> {
    /// `None` when the path cannot be a path here: then nothing about it is trusted.
    fn full_path(&self, rela: &BStr) -> Option<PathBuf> {
        if rela.is_empty() {
            return Some(self.workdir.to_path_buf());
        }
        gix::path::from_bstr(rela)
            .ok()
            .map(|p| self.workdir.join(p))
    }

    /// Record a directory the walk is about to read (stat before read, so that any later
    /// change shows as a different mtime next time).
    fn record_read_dir(&mut self, rela: &BStr, is_root: bool) {
        // A directory that cannot be recorded keeps its parent from ever being skipped.
        let Some((dir, stat)) = self
            .full_path(rela)
            .and_then(|dir| StatData::of(&dir).map(|stat| (dir, stat)))
        else {
            if let Some(parent) = self.next.get_mut(parent_of(rela)) {
                parent.has_untracked = true;
            }
            return;
        };
        let gitignore = StatData::of(&dir.join(".gitignore"));
        let previous = self.previous.dirs.get(rela);
        let ignore_changed = match previous {
            Some(p) => p.gitignore != gitignore || p.ignore_racy,
            None => gitignore.is_some() || (is_root && !self.previous.dirs.is_empty()),
        };
        if ignore_changed {
            self.changed_ignore_dirs.insert(rela.to_owned());
        }
        let racy = stat.is_racy(self.racy_after);
        let ignore_racy = gitignore.is_some_and(|g| g.is_racy(self.racy_after));
        self.next.insert(
            rela.to_owned(),
            DirRecord {
                stat,
                gitignore,
                has_untracked: false,
                index: self.digests.below(rela),
                racy,
                ignore_racy,
            },
        );
    }

    /// Whether the `.gitignore` of `rela` or of a directory above it is not what the cache saw.
    fn ignore_rules_changed_above(&self, rela: &BStr) -> bool {
        if self.changed_ignore_dirs.is_empty() {
            return false;
        }
        let mut dir = rela;
        loop {
            if self.changed_ignore_dirs.contains(dir) {
                return true;
            }
            match dir.rfind_byte(b'/') {
                Some(i) => dir = &dir[..i],
                None => return self.changed_ignore_dirs.contains(BStr::new("")),
            }
        }
    }

    /// The cached records of `rela` and every directory below it, if all of them still
    /// hold: same stat data, no untracked entry, same `.gitignore`, nothing racy.
    /// Returns how many directories that is.
    fn unchanged_subtree(&self, rela: &BStr) -> Option<usize> {
        let own = self.previous.dirs.get(rela)?;
        if own.index != self.digests.below(rela) {
            return None;
        }
        let mut prefix = rela.to_vec();
        prefix.push(b'/');
        let below = self
            .previous
            .dirs
            .range::<[u8], _>((
                std::ops::Bound::Excluded(&prefix[..]),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(&prefix));
        let mut out = 0;
        for (dir, rec) in std::iter::once((rela, own)).chain(below.map(|(k, r)| (k.as_bstr(), r))) {
            if rec.racy || rec.ignore_racy || rec.has_untracked {
                return None;
            }
            if let Some(changes) = self.changes {
                if changes.dir_may_have_changed(dir) {
                    return None;
                }
                out += 1;
                continue;
            }
            let full = self.full_path(dir)?;
            if StatData::of(&full) != Some(rec.stat) {
                return None;
            }
            if let Some(g) = rec.gitignore
                && StatData::of(&full.join(".gitignore")) != Some(g)
            {
                return None;
            }
            out += 1;
        }
        Some(out)
    }
}

impl gix::dir::walk::Delegate for CachingDelegate<'_> {
    fn emit(
        &mut self,
        entry: gix::dir::EntryRef<'_>,
        _collapsed_directory_status: Option<gix::dir::entry::Status>,
    ) -> gix::dir::walk::Action {
        if entry.status == gix::dir::entry::Status::Untracked {
            if let Some(r) = self.next.get_mut(parent_of(entry.rela_path.as_ref())) {
                r.has_untracked = true;
            }
            self.outcome.untracked.push(Untracked {
                rela_path: entry.rela_path.clone().into_owned(),
                disk_kind: entry.disk_kind,
            });
        }
        std::ops::ControlFlow::Continue(())
    }

    fn can_recurse(
        &mut self,
        entry: gix::dir::EntryRef<'_>,
        for_deletion: Option<gix::dir::walk::ForDeletionMode>,
        worktree_root_is_repository: bool,
    ) -> bool {
        let recurse = entry.status.can_recurse(
            entry.disk_kind,
            entry.pathspec_match,
            for_deletion,
            worktree_root_is_repository,
        );
        if !recurse {
            return false;
        }
        let rela = entry.rela_path.as_ref();
        if self.prune.contains(rela) {
            return false;
        }
        if self.use_cache
            && entry.status == gix::dir::entry::Status::Tracked
            && entry.disk_kind == Some(gix::dir::entry::Kind::Directory)
            && !self.ignore_rules_changed_above(rela)
            && let Some(count) = self.unchanged_subtree(rela)
        {
            self.outcome.dirs_skipped += count;
            self.skipped.insert(rela.to_owned());
            return false;
        }
        self.record_read_dir(rela, false);
        true
    }
}
