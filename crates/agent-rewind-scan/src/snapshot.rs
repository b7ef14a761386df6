//! Worktree → tree (docs/FORMAT.md "Snapshot policy"): tracked files with their current
//! content (staged or not) plus untracked files that are not ignored, minus the exclusion
//! policy.
//!
//! A snapshot first asks the scanner (`scan`) what may have changed. When it is the
//! paths since the run's last checkpoint, `monitored` builds the tree from that checkpoint's.
//! Otherwise it takes the full pass, top to bottom: read the index, let the scanner prove
//! what it can unchanged and find the untracked files, have gix's status compare the rest
//! (HEAD against the index, the index against the worktree), and edit HEAD's tree with what
//! differs (`build`): only changed files are hashed and only their trees rewritten. Part of
//! the store because it is gix through and through. It must never write the user's index,
//! HEAD or files: it only writes objects (and, through the scanner, its caches).

use crate::ScanContext;
use crate::dirwalk::entries_named;
use crate::gixerror::from_gix;
use agent_rewind_core::error::Result;
use gix::ObjectId;
pub use scan::Purpose;
use scan::Scope;

/// A path the snapshot left out, and why (the `excluded` field of a checkpoint line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Excluded {
    pub path: String,
    pub reason: String,
}

mod build;
mod monitored;
mod newfile;
mod policy;
mod scan;
mod status;
mod tree;

use build::Build;
use newfile::{NewFile, new_file};
pub use policy::{DEFAULT_MAX_UNTRACKED, Policy, PolicyConfig, glob_match};
use status::{staged_changes, unproven_only, worktree_changes};
pub(crate) use tree::TreeEdits;
pub use tree::{edit_tree, retry_object_write};

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
    /// (`scan::dirwalk`) without reading them.
    pub dirs_read: usize,
    pub dirs_skipped: usize,
    /// Index entries proven unchanged by directory-relative stats (`scan::statcheck`)
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

/// Snapshot the worktree of `ctx` for `purpose`. Exclusion applies to paths that are not in
/// HEAD (untracked or newly staged); files already committed are kept as git keeps them.
/// For a checkpoint, with a filesystem monitor it may start from the run's last tree, and
/// it saves where it ended for the next checkpoint (`monitored`).
pub fn snapshot(ctx: &ScanContext, policy: &Policy, purpose: Purpose) -> Result<Snapshot> {
    let repo = ctx.repo();
    let workdir = ctx.workdir().to_path_buf();
    let head_tree = ctx.head_tree;

    // What may have changed: from the last checkpoint, or the full pass.
    let full = match scan::what_may_have_changed(ctx, policy, purpose, head_tree)? {
        Scope::SinceLastCheckpoint(since) => match since.snapshot(ctx, policy, head_tree)? {
            Ok(snapshot) => return Ok(snapshot),
            Err(raw) => scan::after_doubt(ctx, raw)?,
        },
        Scope::MonitorReport(full) | Scope::Everything(full) => full,
    };

    // The index, and the filters its attributes choose.
    let mut index = ctx.read_user_index()?;
    let attributes = repo
        .attributes_only(
            &checkin_attribute_entries(repo, &index),
            gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
        )
        .map_err(from_gix)?;
    let mut pipeline = gix::filter::Pipeline::new(repo, attributes.detach()).map_err(from_gix)?;
    agent_rewind_core::trace::mark("snapshot: index read");

    // The scanner proves what it can unchanged and finds the untracked files.
    let scanned = full.scan(ctx, &mut index, &workdir)?;

    // gix's status compares the rest. When the index's cache-tree is valid and equals
    // HEAD's tree, nothing is staged: skip the HEAD-vs-index diff (it reads every tree of
    // HEAD). With most entries proven, gix's pass is handed only the others: it would
    // otherwise still go through every entry of a large index only to skip it.
    let nothing_staged = index
        .tree()
        .filter(|t| t.num_entries.is_some())
        .is_some_and(|t| t.id == head_tree);
    let staged = if nothing_staged {
        Vec::new()
    } else {
        staged_changes(repo, head_tree, &index)?
    };
    let unproven = index.entries().len() - scanned.proven;
    // Threads only pay off for many entries (measured: slower below a few thousand).
    let threads = (unproven < 4000).then_some(1);
    let worktree = match unproven_only(&index, scanned.proven) {
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
    agent_rewind_core::trace::mark(&format!(
        "snapshot: status compared ({} entries proven unchanged, {} to look at; untracked walk read {} directories, {} known from its cache)",
        scanned.proven,
        worktree.len() + staged.len(),
        scanned.walk.dirs_read,
        scanned.walk.dirs_skipped
    ));

    // HEAD's tree with the index's changes on top (the index's tree, for a backup), then
    // the worktree's: tracked entries, submodules, and untracked files last.
    let mut build = Build::new(TreeEdits::new(repo, head_tree)?);
    build.unreadable(&scanned.walk.unreadable);
    build.staged(policy, &staged)?;
    let index_tree = match (policy.record_index, staged.is_empty()) {
        (false, _) => None,
        (true, true) => Some(head_tree),
        (true, false) => Some(build.editor.write()?),
    };
    let unreadable = |path: &[u8]| scanned.in_unreadable_dir(path);
    build.worktree(worktree, unreadable, &mut pipeline, &index)?;
    build.submodules(&index, &workdir)?;
    let protect = ctx.protect_options();
    let untracked = &scanned.walk.untracked;
    build.untracked(policy, protect, &workdir, &mut pipeline, &index, untracked)?;
    let (tree, excluded) = build.finish()?;
    agent_rewind_core::trace::mark("snapshot: tree written");

    let snapshot = Snapshot {
        tree,
        index_tree,
        excluded,
        dirs_read: scanned.walk.dirs_read,
        dirs_skipped: scanned.walk.dirs_skipped,
        entries_proven: scanned.proven,
        index_flags,
    };
    // What the next snapshot starts from.
    scanned.save(ctx, policy, head_tree, &index, &snapshot);
    Ok(snapshot)
}
