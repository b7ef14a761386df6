//! Worktree → tree (DESIGN.md §3.5): tracked files with their current content (staged or
//! not) plus untracked files that are not ignored, minus the exclusion policy.
//!
//! One in-process `gix` status pass (stat cache of the real index, dirwalk honouring
//! ignores) and a tree editor over HEAD's tree: only changed files are hashed and only their
//! trees rewritten, though the stat pass and the directory walk still visit every file (as
//! `git add -A` does; see docs/PERFORMANCE.md) unless `core.fsmonitor` names a hook, whose
//! answer (`store::fsmonitor`) spares the stats of what did not change. Part of the store
//! because it is gix through and through. It must never write the user's index, HEAD or files: it only writes objects.

use crate::Store;
use crate::dirwalk::{WalkMonitor, entries_named, read_cache, untracked_files};
use crate::error::{Error, Result};
use crate::fsmonitor;
use crate::glob_match;
use crate::objects::retry_object_write;
use crate::redact::SECRET_PATH_PATTERNS;
use crate::statcheck;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};
use std::collections::HashSet;

/// A path the snapshot left out, and why (the `excluded` field of a checkpoint line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Excluded {
    pub path: String,
    pub reason: String,
}

mod monitored;
mod newfile;
mod status;

use newfile::{NewFile, new_file, secret_in_content};

use status::{staged_changes, worktree_changes};

/// Default `agentRewind.maxUntrackedSize`: 10 MiB.
pub const DEFAULT_MAX_UNTRACKED: u64 = 10 * 1024 * 1024;

/// What the snapshot leaves out.
#[derive(Debug, Clone)]
pub struct Policy {
    pub max_untracked_size: u64,
    /// Secret patterns plus `agentRewind.exclude` globs.
    pub exclude: Vec<String>,
    /// Also write the index's tree (HEAD + staged changes): backups need it, checkpoints not.
    pub record_index: bool,
    /// Leave out new untracked files whose content holds a private key or an access key
    /// (checkpoints; backups stay local and keep them).
    pub scan_content: bool,
}

impl Policy {
    /// The policy from the repository's config (`agentRewind.maxUntrackedSize`,
    /// `agentRewind.exclude`).
    pub fn from_config(store: &Store) -> Result<Policy> {
        let mut exclude: Vec<String> = SECRET_PATH_PATTERNS.iter().map(|s| s.to_string()).collect();
        exclude.extend(store.config_strings("agentRewind.exclude"));
        Ok(Policy {
            max_untracked_size: store
                .config_size("agentRewind.maxUntrackedSize")?
                .unwrap_or(DEFAULT_MAX_UNTRACKED),
            exclude,
            record_index: false,
            scan_content: true,
        })
    }

    /// The policy for safety backups: they stay local, so secret-looking files are kept;
    /// big untracked files are still left out (and are never touched by a checkout).
    pub fn for_backup(store: &Store) -> Result<Policy> {
        Ok(Policy {
            exclude: vec![],
            record_index: true,
            scan_content: false,
            ..Self::from_config(store)?
        })
    }

    /// Whether checkpoints leave `path` out when it is not in HEAD (a secret pattern).
    pub fn is_excluded_path(&self, path: &str) -> bool {
        self.excluded_pattern(path).is_some()
    }

    /// Whether checkpoints leave the worktree file `path` out when it is new: a secret
    /// pattern, or (with [`Policy::scan_content`]) content holding a credential.
    pub fn is_excluded_file(&self, workdir: &std::path::Path, path: &str) -> bool {
        self.is_excluded_path(path)
            || (self.scan_content && secret_in_content(&workdir.join(path)).is_some())
    }

    fn excluded_pattern(&self, path: &str) -> Option<&str> {
        self.exclude
            .iter()
            .find(|p| glob_match(p, path))
            .map(String::as_str)
    }
}

/// The result of a snapshot.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The worktree as it is (what a checkpoint records).
    pub tree: ObjectId,
    /// The index as it is (HEAD plus staged changes), for backups that must restore
    /// staged and unstaged state separately; only with [`Policy::record_index`].
    pub index_tree: Option<ObjectId>,
    pub excluded: Vec<Excluded>,
    /// Directories the walk for untracked files read, and those it knew from its cache
    /// (`store::dirwalk`) without reading them.
    pub dirs_read: usize,
    pub dirs_skipped: usize,
    /// Index entries proven unchanged by directory-relative stats (`store::statcheck`)
    /// before gix's status pass.
    pub entries_proven: usize,
    /// Whether an index entry carries a flag a tree cannot hold (intent-to-add,
    /// skip-worktree, assume-unchanged): a backup then keeps the index file itself.
    pub index_flags: bool,
}

/// The `.gitattributes` entries gix may read from the index when the worktree has no such
/// file: the skip-worktree ones only (a sparse checkout). Any other `.gitattributes` missing
/// from the worktree is a deletion, and `git add -A` stages deletions before it hashes the
/// new files, so its rules no longer apply; reading it from the index would rewrite the
/// line endings of files beside it, and a restore would give them back changed.
fn checkin_attribute_entries(
    repo: &gix::Repository,
    index: &gix::index::State,
) -> gix::index::State {
    let named = entries_named(repo, index, b".gitattributes");
    let from = named.as_ref().unwrap_or(index);
    let mut only = gix::index::State::new(index.object_hash());
    for e in from.entries() {
        if e.flags.contains(gix::index::entry::Flags::SKIP_WORKTREE) {
            only.dangerously_push_entry(e.stat, e.id, e.flags, e.mode, e.path(from));
        }
    }
    only
}

/// Snapshot the worktree of `store`. Exclusion applies to paths that are not in HEAD
/// (untracked or newly staged); files already committed are kept as git keeps them.
pub fn snapshot_worktree(store: &Store, policy: &Policy) -> Result<Snapshot> {
    snapshot(store, policy, Purpose::Other)
}

/// What a snapshot is taken for.
#[derive(Clone, Copy)]
enum Purpose {
    /// A checkpoint of a run whose newest checkpoint has tree `last` (`None`: none yet).
    Checkpoint {
        last: Option<ObjectId>,
    },
    Other,
}

/// [`snapshot_worktree`] for a checkpoint of a run whose newest checkpoint has tree `last`
/// (`None`: the run has none yet). With a filesystem monitor it may start from that tree,
/// and it saves where it ended for the next checkpoint (`monitored`).
pub fn snapshot_for_checkpoint(
    store: &Store,
    policy: &Policy,
    last: Option<ObjectId>,
) -> Result<Snapshot> {
    snapshot(store, policy, Purpose::Checkpoint { last })
}

fn snapshot(store: &Store, policy: &Policy, purpose: Purpose) -> Result<Snapshot> {
    use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};

    let repo = store.repo();
    let workdir = store.workdir()?.to_path_buf();
    let head_tree = repo.head_tree_id_or_empty()?.detach();
    // Only a checkpoint's snapshot (never a backup's) saves where it ended or starts from
    // the last one.
    let checkpoint = match purpose {
        Purpose::Checkpoint { last } if !policy.record_index && monitored::enabled(store) => {
            Some(last)
        }
        _ => None,
    };
    let mut raw = None;
    if let Some(Some(last)) = checkpoint {
        match monitored::try_from_last(store, policy, last, head_tree)? {
            monitored::Attempt::Done(snapshot) => return Ok(snapshot),
            monitored::Attempt::Full(scanned) => raw = scanned,
        }
    }
    let mut editor = TreeEdits::new(repo, head_tree)?;
    let protect = store.protect_options();
    // Ask the filesystem monitor (when configured) while the index is read.
    let pending = fsmonitor::start(store);
    // A checkpoint's monitored pass saves where it ended, with the index's digest: read on
    // a thread of its own meanwhile.
    let records = checkpoint.is_some() && pending.is_some();
    let scan = (records && raw.is_none()).then(|| {
        let (path, hash) = (repo.index_path(), repo.object_hash());
        std::thread::spawn(move || crate::rawindex::read(&path, hash))
    });
    // …and read the untracked walk's cache meanwhile too.
    let walk_cache = read_cache(store)?;
    let index_before = records
        .then(|| crate::rawindex::Identity::at(&repo.index_path()))
        .flatten();
    let mut index = store.read_user_index()?;
    let attributes = repo.attributes_only(
        &checkin_attribute_entries(repo, &index),
        gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
    )?;
    let mut pipeline = gix::filter::Pipeline::new(repo, attributes.detach())?;
    crate::trace::mark("snapshot: index read");

    // Prove most entries unchanged with cheap directory-relative stats (statcheck, on its
    // own threads) while the walk for untracked files runs here; gix's status pass then only
    // looks at the rest.
    let settings = statcheck::Settings::new(repo, &index);
    // Digests of the entries, to tell the ones the monitor's last answer proved (and to
    // store the ones proved now); only with a monitor and the stat pass. Computed while the
    // hook runs.
    let digests = match (&pending, &settings) {
        (Some(_), Some(_)) => Some(fsmonitor::entry_digests(&index)),
        _ => None,
    };
    let mut monitor = pending.map(fsmonitor::Pending::finish);
    if let Some(changes) = monitor.as_mut().and_then(|m| m.changes.as_mut()) {
        // Edited tracked files leave their folder's untracked files as they were.
        let ignore_case = repo
            .config_snapshot()
            .boolean("core.ignoreCase")
            .unwrap_or(false);
        let dirty = changes.unmark_content_only(&index, &workdir, ignore_case);
        crate::trace::mark(&format!(
            "fsmonitor: {dirty} paths and folders may list other untracked files"
        ));
    }
    let known = monitor
        .as_ref()
        .and_then(|m| m.changes.as_ref())
        .filter(|_| settings.is_some())
        .and_then(|c| digests.as_ref().map(|d| c.known_unchanged(&index, d)));
    let walk_monitor = monitor.as_ref().map(|m| WalkMonitor {
        changes: m.changes.as_ref(),
        next_token: m.next_token.as_deref(),
        path_digests: digests.as_ref().map(|d| d.paths.as_slice()),
    });
    if monitor.is_some() {
        crate::trace::mark(&format!(
            "snapshot: fsmonitor asked ({} entries known unchanged)",
            known
                .as_ref()
                .map_or(0, |k| k.iter().filter(|y| **y).count())
        ));
    }
    let (unchanged, walk) = std::thread::scope(|scope| {
        let state: &gix::index::State = &index;
        let check = settings.as_ref().map(|settings| {
            let workdir = workdir.as_path();
            let known = known.as_deref();
            scope.spawn(move || statcheck::unchanged_entries(state, workdir, settings, known))
        });
        let walk = untracked_files(store, state, walk_monitor, walk_cache);
        (check.map(|h| h.join().unwrap_or_default()), walk)
    });
    let walk = walk?;
    crate::trace::mark("snapshot: stats and untracked walk done");
    let proven = unchanged
        .as_ref()
        .map_or(0, |u| statcheck::mark_uptodate(&mut index, u));
    let unreadable = |path: &[u8]| {
        walk.unreadable
            .iter()
            .any(|(dir, _)| path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'))
    };
    if !walk.unreadable.is_empty() {
        // Tracked files in a directory that cannot be read keep their index entry.
        for (entry, path) in index.entries_mut_with_paths() {
            if unreadable(path) {
                entry.flags.insert(gix::index::entry::Flags::UPTODATE);
            }
        }
    }

    // When the index's cache-tree is valid and equals HEAD's tree, nothing is staged: skip
    // the HEAD-vs-index diff (it reads every tree of HEAD).
    let nothing_staged = index
        .tree()
        .filter(|t| t.num_entries.is_some())
        .is_some_and(|t| t.id == head_tree);
    let unproven = index.entries().len() - proven;
    // Threads only pay off for many entries (measured: slower below a few thousand).
    let threads = (unproven < 4000).then_some(1);
    let staged = if nothing_staged {
        Vec::new()
    } else {
        staged_changes(repo, head_tree, &index)?
    };
    // With most entries proven, gix's pass is handed only the others: it would otherwise
    // still go through every entry of a large index only to skip it.
    let worktree = match unproven_only(&index, proven) {
        Some(rest) => worktree_changes(repo, &rest, threads)?,
        None => worktree_changes(repo, &index, threads)?,
    };
    let index_flags = index.entries().iter().any(|e| {
        e.flags.intersects(
            gix::index::entry::Flags::INTENT_TO_ADD
                | gix::index::entry::Flags::SKIP_WORKTREE
                | gix::index::entry::Flags::ASSUME_VALID,
        )
    });
    crate::trace::mark(&format!(
        "snapshot: status compared ({proven} entries proven unchanged, {} to look at; untracked walk read {} directories, {} known from its cache)",
        worktree.len() + staged.len(),
        walk.dirs_read,
        walk.dirs_skipped
    ));
    let mut excluded = Vec::new();
    let mut skip: HashSet<Vec<u8>> = HashSet::new();
    let exclude =
        |path: &BStr, reason: String, excluded: &mut Vec<Excluded>, skip: &mut HashSet<Vec<u8>>| {
            skip.insert(path.to_vec());
            excluded.push(Excluded {
                path: crate::quote::text_path(path),
                reason,
            });
        };

    // Directories the walk could not read: left out with what is below them (tracked files
    // there keep their index entry), as `git status` warns and goes on.
    for (dir, why) in &walk.unreadable {
        excluded.push(Excluded {
            path: format!("{}/", crate::quote::text_path(dir)),
            reason: format!("directory cannot be read ({why}); left out, as git status does"),
        });
    }
    // Index vs HEAD first.
    for c in &staged {
        use gix::diff::index::ChangeRef as C;
        match c {
            C::Addition {
                location,
                entry_mode,
                id,
                ..
            } => {
                if let Some(p) = policy.excluded_pattern(&location.to_str_lossy()) {
                    exclude(
                        location.as_ref(),
                        format!("matches secret pattern {p}"),
                        &mut excluded,
                        &mut skip,
                    );
                    continue;
                }
                if let Some(kind) = entry_mode.to_tree_entry_mode().map(|m| m.kind()) {
                    editor.upsert(location.as_ref(), kind, id.clone().into_owned())?;
                }
            }
            C::Modification {
                location,
                entry_mode,
                id,
                ..
            } => {
                if let Some(kind) = entry_mode.to_tree_entry_mode().map(|m| m.kind()) {
                    editor.upsert(location.as_ref(), kind, id.clone().into_owned())?;
                }
            }
            C::Deletion { location, .. } => {
                editor.remove(location.as_ref())?;
            }
            C::Rewrite { .. } => {}
        }
    }
    let index_tree = match (policy.record_index, staged.is_empty()) {
        (false, _) => None,
        (true, true) => Some(head_tree),
        (true, false) => Some(editor.write()?),
    };
    // …then worktree vs index on top: tracked entries first, untracked files last (a
    // tracked file that became a folder must be removed before the untracked files inside
    // that folder are added, or the removal would take them with it).
    for (rela_path, status) in worktree {
        if skip.contains(rela_path.as_slice()) || unreadable(&rela_path) {
            continue;
        }
        match status {
            EntryStatus::Change(Change::Removed) => {
                editor.remove(rela_path.as_bstr())?;
            }
            EntryStatus::Change(Change::Modification { .. } | Change::Type { .. })
            | EntryStatus::IntentToAdd
            | EntryStatus::Conflict { .. } => {
                match retry_object_write(|| {
                    pipeline.worktree_file_to_object(rela_path.as_bstr(), &index)
                })? {
                    Some((id, kind, _)) => {
                        editor.upsert(rela_path.as_bstr(), kind, id)?;
                    }
                    None => {
                        editor.remove(rela_path.as_bstr())?;
                    }
                }
            }
            _ => {} // stat-only changes, submodule changes: keep the index/HEAD entry
        }
    }
    // Submodules: their current commit, as `git add -A` records it (a submodule that is not
    // checked out keeps its entry).
    for entry in index.entries() {
        if entry.mode != gix::index::entry::Mode::COMMIT || entry.stage_raw() != 0 {
            continue;
        }
        let rela = entry.path(&index);
        if skip.contains(rela.as_bytes()) {
            continue;
        }
        if let Some(head) = submodule_head(&workdir.join(super::worktree::rel_path(rela)))
            && head != entry.id
        {
            editor.upsert(rela, gix::objs::tree::EntryKind::Commit, head)?;
        }
    }
    for entry in &walk.untracked {
        if matches!(
            entry.disk_kind,
            Some(gix::dir::entry::Kind::Directory) | None
        ) {
            // An untracked directory is only reported whole when it is empty or cannot
            // be read: the latter is listed.
            let full = workdir.join(super::worktree::rel_path(&entry.rela_path));
            if entry.disk_kind.is_some()
                && let Err(e) = std::fs::read_dir(&full)
            {
                excluded.push(Excluded {
                    path: format!("{}/", crate::quote::text_path(&entry.rela_path)),
                    reason: format!("directory cannot be read ({e}); left out, as git status does"),
                });
            }
            continue;
        }
        let rela = entry.rela_path.as_bstr();
        match new_file(policy, protect, &workdir, &mut pipeline, &index, rela)? {
            NewFile::Blob(id, kind) => editor.upsert(rela, kind, id)?,
            NewFile::Excluded(reason) => exclude(rela, reason, &mut excluded, &mut skip),
            NewFile::Gone => {}
        }
    }
    let tree = editor.write()?;
    crate::trace::mark("snapshot: tree written");
    if let (Some(monitor), Some(unchanged)) = (&monitor, &unchanged) {
        monitor.save(store, digests.as_ref(), unchanged);
    }
    excluded.sort_by(|a, b| a.path.cmp(&b.path));
    excluded.dedup_by(|a, b| a.path == b.path);
    let snapshot = Snapshot {
        tree,
        index_tree,
        excluded,
        dirs_read: walk.dirs_read,
        dirs_skipped: walk.dirs_skipped,
        entries_proven: proven,
        index_flags,
    };
    if let (true, Some(monitor)) = (records, &monitor) {
        if let Some(scan) = scan {
            raw = scan.join().ok().flatten();
        }
        let ended = monitored::Ended {
            next_token: monitor.next_token.as_deref(),
            head_tree,
            raw,
            unreadable: !walk.unreadable.is_empty(),
            index_before,
        };
        monitored::record(store, policy, ended, &index, &snapshot);
    }
    Ok(snapshot)
}

/// A copy of `index` holding only the entries not marked `UPTODATE` (in order, with the
/// index's timestamp, which decides what is racily clean), when `proven` entries are most of
/// the index; `None` otherwise (a sparse index is always looked at whole). Each entry's
/// status depends on that entry alone (and on the other stages of a conflicted path, which
/// are never proven), so gix finds the same changes in it.
fn unproven_only(index: &gix::index::State, proven: usize) -> Option<gix::index::State> {
    let total = index.entries().len();
    if proven == 0 || proven < total / 2 || index.is_sparse() {
        return None;
    }
    let mut rest = gix::index::State::new(index.object_hash());
    rest.set_timestamp(index.timestamp());
    for e in index.entries() {
        if !e.flags.contains(gix::index::entry::Flags::UPTODATE) {
            rest.dangerously_push_entry(e.stat, e.id, e.flags, e.mode, e.path(index));
        }
    }
    Some(rest)
}

/// The commit checked out in the submodule at `dir`, if it is checked out there.
fn submodule_head(dir: &std::path::Path) -> Option<ObjectId> {
    if !dir.join(".git").exists() {
        return None;
    }
    let sub = gix::open_opts(dir, gix::open::Options::isolated()).ok()?;
    sub.head_id().ok().map(|id| id.detach())
}

/// `base` with `edits` applied (`None` removes the path): the tree's id.
pub(crate) fn edit_tree(
    repo: &gix::Repository,
    base: ObjectId,
    edits: &[(
        gix::bstr::BString,
        Option<(ObjectId, gix::objs::tree::EntryKind)>,
    )],
) -> Result<ObjectId> {
    if edits.is_empty() {
        return Ok(base);
    }
    let mut editor = TreeEdits::new(repo, base)?;
    for (path, entry) in edits {
        match entry {
            Some((id, kind)) => editor.upsert(path.as_bstr(), *kind, *id)?,
            None => editor.remove(path.as_bstr())?,
        }
    }
    editor.write()
}

/// HEAD's tree with edits. Written with the plumbing editor: gix's own editor checks that
/// every entry of every tree it writes exists (a `stat` per entry, hundreds per snapshot),
/// while every id here comes from HEAD, the index, or was just written.
struct TreeEdits<'r> {
    inner: gix::objs::tree::Editor<'r>,
    repo: &'r gix::Repository,
}

impl<'r> TreeEdits<'r> {
    fn new(repo: &'r gix::Repository, tree: ObjectId) -> Result<Self> {
        Ok(TreeEdits {
            inner: repo.edit_tree(tree)?.detach(),
            repo,
        })
    }

    fn upsert(
        &mut self,
        path: &BStr,
        kind: gix::objs::tree::EntryKind,
        id: ObjectId,
    ) -> Result<()> {
        self.inner
            .upsert(path.split_str("/"), kind, id)
            .map_err(|e| edit_failed(path, &e))?;
        Ok(())
    }

    fn remove(&mut self, path: &BStr) -> Result<()> {
        self.inner
            .remove(path.split_str("/"))
            .map_err(|e| edit_failed(path, &e))?;
        Ok(())
    }

    fn write(&mut self) -> Result<ObjectId> {
        let repo = self.repo;
        Ok(self
            .inner
            .write(|tree| retry_object_write(|| repo.write_object(tree)).map(|id| id.detach()))?)
    }
}

fn edit_failed(path: &BStr, e: &dyn std::fmt::Display) -> Error {
    Error::other(format!(
        "cannot put {path} into the snapshot tree: {}",
        crate::error::one_line(&e.to_string())
    ))
}

impl Store {
    /// `base` with `edits` applied (`None` removes the path): the new tree's id.
    pub fn edit_tree(
        &self,
        base: ObjectId,
        edits: &[(
            gix::bstr::BString,
            Option<(ObjectId, gix::objs::tree::EntryKind)>,
        )],
    ) -> Result<ObjectId> {
        edit_tree(self.repo(), base, edits)
    }
}
