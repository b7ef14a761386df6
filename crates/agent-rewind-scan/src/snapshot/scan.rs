//! The scanner (`scan::snapshot::scan`): the one place a snapshot asks "what may have changed in the worktree?". It
//! answers with a [`Scope`]:
//!
//! - [`Scope::SinceLastCheckpoint`]: the paths changed since the run's last checkpoint
//!   (`monitored`), when a checkpoint's snapshot may start from that tree;
//! - [`Scope::MonitorReport`]: the filesystem monitor is being asked what changed since our
//!   token (`scan::fsmonitor`); its answer, taken once the index is read, may still be
//!   "everything";
//! - [`Scope::Everything`]: nothing tells what changed.
//!
//! The last two are the full pass, and [`FullScan::scan`] does its scanning: the stat pass
//! (`scan::statcheck`) proves index entries unchanged, skipping those the monitor's last
//! answer vouches for, while the untracked walk (`scan::dirwalk`) reads the folders its
//! cache and the monitor cannot vouch for; after the tree is written, [`Scanned::save`]
//! keeps what the next snapshot starts from (the monitor's token and proofs, and for a
//! checkpoint where it ended, with the index as read without decoding it:
//! `scan::rawindex`). Each source names its fallback and its kill switch in its own module
//! comment; every fallback is a wider scope, never a narrower one:
//!
//! | source | fallback | turned off by |
//! |---|---|---|
//! | monitor (`fsmonitor`) | the full pass without it | `core.fsmonitor` unset or `false` |
//! | from the last checkpoint (`snapshot::monitored`) | the full pass | `agentRewind.fromLastCheckpoint=false` |
//! | raw index (`rawindex`) | the full pass, no state saved | only with the above |
//! | stat pass (`statcheck`) | gix's status looks at every entry | none (not on non-unix) |
//! | walk cache (`dirwalk`) | every folder is read | `agentRewind.untrackedCache=false` |
//!
//! It decides only what to look at: it never decides a file's content or a tree, never
//! writes the user's index, HEAD or files, and writes nothing but those sources' own cache
//! files.

use super::monitored::{self, Asked, SinceLast};
use super::{Policy, Snapshot};
use crate::ScanContext;
use crate::dirwalk::{CacheRead, WalkMonitor, WalkOutcome, read_cache, untracked_files};
use crate::fsmonitor::{self, EntryDigests, Monitor, Pending};
use crate::rawindex::{self, Identity, RawIndex};
use crate::statcheck;
use agent_rewind_core::error::Result;
use gix::ObjectId;
use std::path::Path;
use std::thread::JoinHandle;

/// What a snapshot is taken for.
#[derive(Clone, Copy)]
pub enum Purpose {
    /// A checkpoint of a run whose newest checkpoint has tree `last` (`None`: none yet).
    Checkpoint {
        last: Option<ObjectId>,
    },
    Other,
}

/// What may have changed in the worktree.
pub(crate) enum Scope {
    /// Nothing tells: the stat pass looks at every entry and the walk at every folder its
    /// cache cannot vouch for.
    Everything(FullScan),
    /// The monitor is being asked what changed since our token.
    MonitorReport(FullScan),
    /// The paths changed since the run's last checkpoint.
    SinceLastCheckpoint(Box<SinceLast>),
}

/// Ask what may have changed, for a snapshot taken for `purpose` under `policy` with HEAD's
/// tree `head_tree`. Only a checkpoint's snapshot (never a backup's) starts from the last
/// checkpoint or saves where it ended.
pub(crate) fn what_may_have_changed(
    ctx: &ScanContext,
    policy: &Policy,
    purpose: Purpose,
    head_tree: ObjectId,
) -> Result<Scope> {
    let checkpoint = match purpose {
        Purpose::Checkpoint { last } if !policy.record_index && monitored::enabled(ctx) => {
            Some(last)
        }
        _ => None,
    };
    let mut raw = None;
    if let Some(Some(last)) = checkpoint {
        match monitored::paths_since(ctx, policy, last, head_tree)? {
            Asked::Since(since) => return Ok(Scope::SinceLastCheckpoint(since)),
            Asked::Full(scanned) => raw = scanned,
        }
    }
    let full = full_pass(ctx, checkpoint.is_some(), raw)?;
    Ok(match full.pending {
        Some(_) => Scope::MonitorReport(full),
        None => Scope::Everything(full),
    })
}

/// The full pass of a checkpoint whose start from the last checkpoint found a doubt while
/// looking at the paths (`raw`: the index as it read it, when it did).
pub(crate) fn after_doubt(ctx: &ScanContext, raw: Option<RawIndex>) -> Result<FullScan> {
    full_pass(ctx, true, raw)
}

/// The full pass, started before the index is read: the monitor is asked, the walk cache
/// read and (for a checkpoint with a monitor) the index scanned, each meanwhile.
pub(crate) struct FullScan {
    pending: Option<Pending>,
    /// A checkpoint's monitored pass: it saves where it ended.
    records: bool,
    /// The index as scanned before, or being scanned now.
    raw: Option<RawIndex>,
    raw_thread: Option<JoinHandle<Option<RawIndex>>>,
    walk_cache: CacheRead,
    /// The index file's identity before gix read it.
    index_before: Option<Identity>,
}

fn full_pass(ctx: &ScanContext, checkpoint: bool, raw: Option<RawIndex>) -> Result<FullScan> {
    let repo = ctx.repo();
    // Ask the filesystem monitor (when configured) while the index is read.
    let pending = fsmonitor::start(ctx);
    // A checkpoint's monitored pass saves where it ended, with the index's digest: read on
    // a thread of its own meanwhile.
    let records = checkpoint && pending.is_some();
    let raw_thread = (records && raw.is_none()).then(|| {
        let (path, hash) = (repo.index_path(), repo.object_hash());
        std::thread::spawn(move || rawindex::read(&path, hash))
    });
    // …and read the untracked walk's cache meanwhile too.
    let walk_cache = read_cache(ctx)?;
    let index_before = records.then(|| Identity::at(&repo.index_path())).flatten();
    Ok(FullScan {
        pending,
        records,
        raw,
        raw_thread,
        walk_cache,
        index_before,
    })
}

/// What the full pass's scanning found.
pub(crate) struct Scanned {
    /// The untracked walk's outcome.
    pub walk: WalkOutcome,
    /// Index entries proven unchanged (marked `UPTODATE`).
    pub proven: usize,
    monitor: Option<Monitor>,
    digests: Option<EntryDigests>,
    unchanged: Option<Vec<bool>>,
    records: bool,
    raw: Option<RawIndex>,
    raw_thread: Option<JoinHandle<Option<RawIndex>>>,
    index_before: Option<Identity>,
}

impl FullScan {
    /// With the index read: take the monitor's answer, prove entries unchanged with cheap
    /// directory-relative stats (on their own threads) while the walk for untracked files
    /// runs here, and mark the proven entries `UPTODATE` in `index` (in memory), so that
    /// gix's status pass only looks at the rest. Tracked files in a folder that cannot be
    /// read keep their index entry (marked too).
    pub(crate) fn scan(
        self,
        ctx: &ScanContext,
        index: &mut gix::index::State,
        workdir: &Path,
    ) -> Result<Scanned> {
        let repo = ctx.repo();
        let settings = statcheck::Settings::new(repo, index);
        // Digests of the entries, to tell the ones the monitor's last answer proved (and to
        // store the ones proved now); only with a monitor and the stat pass. Computed while
        // the hook runs.
        let digests = match (&self.pending, &settings) {
            (Some(_), Some(_)) => Some(fsmonitor::entry_digests(index)),
            _ => None,
        };
        let mut monitor = self.pending.map(Pending::finish);
        if let Some(changes) = monitor.as_mut().and_then(|m| m.changes.as_mut()) {
            // Edited tracked files leave their folder's untracked files as they were.
            let ignore_case = repo
                .config_snapshot()
                .boolean("core.ignoreCase")
                .unwrap_or(false);
            let dirty = changes.unmark_content_only(index, workdir, ignore_case);
            agent_rewind_core::trace::mark(&format!(
                "fsmonitor: {dirty} paths and folders may list other untracked files"
            ));
        }
        let known = monitor
            .as_ref()
            .and_then(|m| m.changes.as_ref())
            .filter(|_| settings.is_some())
            .and_then(|c| digests.as_ref().map(|d| c.known_unchanged(index, d)));
        let walk_monitor = monitor.as_ref().map(|m| WalkMonitor {
            changes: m.changes.as_ref(),
            next_token: m.next_token.as_deref(),
            path_digests: digests.as_ref().map(|d| d.paths.as_slice()),
        });
        if monitor.is_some() {
            agent_rewind_core::trace::mark(&format!(
                "snapshot: fsmonitor asked ({} entries known unchanged)",
                known
                    .as_ref()
                    .map_or(0, |k| k.iter().filter(|y| **y).count())
            ));
        }
        let walk_cache = self.walk_cache;
        let (unchanged, walk) = std::thread::scope(|scope| {
            let state: &gix::index::State = index;
            let check = settings.as_ref().map(|settings| {
                let known = known.as_deref();
                scope.spawn(move || statcheck::unchanged_entries(state, workdir, settings, known))
            });
            let walk = untracked_files(ctx, state, walk_monitor, walk_cache);
            (check.map(|h| h.join().unwrap_or_default()), walk)
        });
        let walk = walk?;
        agent_rewind_core::trace::mark("snapshot: stats and untracked walk done");
        let proven = unchanged
            .as_ref()
            .map_or(0, |u| statcheck::mark_uptodate(index, u));
        let scanned = Scanned {
            walk,
            proven,
            monitor,
            digests,
            unchanged,
            records: self.records,
            raw: self.raw,
            raw_thread: self.raw_thread,
            index_before: self.index_before,
        };
        if !scanned.walk.unreadable.is_empty() {
            for (entry, path) in index.entries_mut_with_paths() {
                if scanned.in_unreadable_dir(path) {
                    entry.flags.insert(gix::index::entry::Flags::UPTODATE);
                }
            }
        }
        Ok(scanned)
    }
}

impl Scanned {
    /// Whether `path` is below a folder the walk could not read.
    pub(crate) fn in_unreadable_dir(&self, path: &[u8]) -> bool {
        self.walk
            .unreadable
            .iter()
            .any(|(dir, _)| path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'))
    }

    /// After the snapshot's tree is written: store the monitor's token with the proofs made
    /// now, and for a checkpoint where this pass ended (`snapshot::monitored`). Best effort:
    /// what cannot be saved only means a wider scope next time.
    pub(crate) fn save(
        self,
        ctx: &ScanContext,
        policy: &Policy,
        head_tree: ObjectId,
        index: &gix::index::File,
        snapshot: &Snapshot,
    ) {
        if let (Some(monitor), Some(unchanged)) = (&self.monitor, &self.unchanged) {
            monitor.save(ctx, self.digests.as_ref(), unchanged);
        }
        let (true, Some(monitor)) = (self.records, &self.monitor) else {
            return;
        };
        let raw = match self.raw_thread {
            Some(thread) => thread.join().ok().flatten(),
            None => self.raw,
        };
        let ended = monitored::Ended {
            next_token: monitor.next_token.as_deref(),
            head_tree,
            raw,
            unreadable: !self.walk.unreadable.is_empty(),
            index_before: self.index_before,
        };
        monitored::record(ctx, policy, ended, index, snapshot);
    }
}
