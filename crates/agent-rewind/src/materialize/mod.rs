//! Putting a checkpoint's files into a worktree without ever losing a byte.
//!
//! Before anything is overwritten, the current state (worktree, index, HEAD) is captured as
//! a backup commit on `refs/agent-rewind/backups` (a chain shared by all worktrees, each entry
//! naming its worktree), so `undo` can bring it back. Then only the paths that differ are
//! written, each atomically.
//!
//! The backup holds every path the operation writes or deletes as its bytes are on disk (no
//! clean filter, no line-ending conversion) — ignored files in the way included — and `undo`
//! writes those back as they are. Files snapshots leave out (secret-looking, too big) are
//! left in place and listed; a too-big file the target needs the path of refuses the
//! operation.
//!
//! This module decides *what* to write; `store` does the writing. It never prints.

use crate::model::Excluded;
use crate::snapshot::{Policy, snapshot_worktree};
use crate::store::ObjectId;
use crate::store::{
    AsBackedUp, BString, ByteSlice, EntryKind, OnDisk, Store, TreeChange, UserHead, WrittenFile,
};
use agent_rewind_core::error::IoResultExt;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::quote::rel_path;
use agent_rewind_core::quote::{quote_path, text_path};
use std::collections::HashSet;

mod chain;
pub use chain::{
    Backup, BackupDetails, BackupTrim, RunFacts, backup_of_this_worktree, backups_of_this_worktree,
    list_backups, publish_backup, trim_backups, withdraw_backup, worktree_id,
};

/// Refuse when the worktree is in a state a checkout would destroy: a merge, rebase,
/// cherry-pick or revert in progress, or conflicted paths.
pub fn ensure_safe_to_overwrite(store: &Store) -> Result<()> {
    store.worktree().root()?;
    if let Some(op) = store.worktree().operation_in_progress() {
        return Err(
            Error::refused(format!("{op} is in progress in this worktree")).with_hint(
                "finish or abort it first (e.g. `git merge --abort`, `git rebase --abort`)",
            ),
        );
    }
    if store.index().user_index_locked() {
        return Err(Error::refused(
            "the index is locked (index.lock exists): another git process is running in this worktree",
        )
        .with_hint("wait for it to finish; if none is running, remove the lock file"));
    }
    let unmerged = store.index().unmerged_paths()?;
    if !unmerged.is_empty() {
        return Err(Error::refused(format!(
            "{} unresolved conflicts (first: {})",
            agent_rewind_core::words::count(unmerged.len(), "path has", "paths have"),
            unmerged[0]
        ))
        .with_hint("resolve them and `git add` them, or `git merge --abort`"));
    }
    Ok(())
}

/// The current state of this worktree (worktree tree, index tree, HEAD), written as
/// objects but not yet published: nothing is referenced until [`publish_backup`].
#[derive(Debug, Clone)]
pub struct Capture {
    pub tree: ObjectId,
    pub index_tree: ObjectId,
    pub head: UserHead,
    /// Files left in place (see [`Backup::left_in_place`]).
    pub excluded: Vec<Excluded>,
    /// The active run now and what the operation does to runs: filled by the caller (the
    /// active run is the journal's, a layer beside this one), see [`RunFacts::active`].
    pub runs: RunFacts,
    pub details: BackupDetails,
}

pub fn capture(store: &Store) -> Result<Capture> {
    let snap = snapshot_worktree(store, &Policy::for_backup(store)?)?;
    let index_file = match snap.index_flags {
        true => store.index().user_index_file()?,
        false => None,
    };
    Ok(Capture {
        tree: snap.tree,
        index_tree: snap
            .index_tree
            .expect("the backup policy records the index"),
        head: store.refs().user_head()?,
        excluded: snap.excluded,
        runs: RunFacts::default(),
        details: BackupDetails {
            touched: vec![],
            index_file,
            modes: Default::default(),
        },
    })
}

/// Capture the worktree, index and HEAD of this worktree onto the backups chain, with the
/// files at `touched` (about to be overwritten by the caller) as their bytes are on disk,
/// and the run facts given.
pub fn take_backup(
    store: &Store,
    reason: &str,
    touched: &[BString],
    runs: RunFacts,
) -> Result<Backup> {
    let mut cap = capture(store)?;
    cap.runs = runs;
    cover_paths(store, &mut cap, touched)?;
    publish_backup(store, &cap, reason)
}

/// Make `cap` hold each of `paths` (about to be written or deleted by the caller) as its
/// bytes are on disk, ignored files included, and record them as touched. Refuses when one
/// is an untracked file too big for a backup.
pub fn cover_paths(store: &Store, cap: &mut Capture, paths: &[BString]) -> Result<()> {
    let max = Policy::for_backup(store)?.max_untracked_size;
    let mut edits = vec![];
    for p in paths {
        // A backup never holds a path inside `.git` (undo would have to write there).
        store.worktree().check_checkout_path(p, false)?;
        let in_capture = store.objects().entry_in_tree(cap.tree, p)?;
        let limit = if in_capture.is_some() { u64::MAX } else { max };
        match store.worktree().raw_entry(p, limit)? {
            OnDisk::Entry(id, kind) if in_capture.map(|e| e.0) != Some(id) => {
                // A tracked file keeps the kind git records for it (core.fileMode).
                let kind = match (in_capture, kind) {
                    (
                        Some((_, k @ (EntryKind::Blob | EntryKind::BlobExecutable))),
                        EntryKind::Blob | EntryKind::BlobExecutable,
                    ) => k,
                    _ => kind,
                };
                edits.push((p.clone(), Some((id, kind))));
            }
            OnDisk::TooBig(size) => return Err(too_big_in_the_way(p, size)),
            _ => {}
        }
    }
    cap.tree = store.objects().edit_tree(cap.tree, &edits)?;
    cap.details.touched.extend(paths.iter().cloned());
    cap.details
        .modes
        .extend(store.worktree().file_modes(paths)?);
    Ok(())
}

fn too_big_in_the_way(p: &[u8], size: u64) -> Error {
    Error::refused(format!(
        "{} is in the worktree but not in the backup (an untracked file of {size} bytes, above agentRewind.maxUntrackedSize), and the target needs that path",
        quote_path(p)
    ))
    .with_hint("move it out of the way, then run the command again")
}

/// Everything an overwrite needs, decided before anything is written: the capture of the
/// current state (to publish as the backup) and the changes that reach the target.
pub struct PreparedOverwrite {
    pub capture: Capture,
    pub changes: Vec<TreeChange>,
    /// An undo's backup entries: bytes to write as they are, with the bits each file had.
    pub backed_up: AsBackedUp,
}

/// Capture this worktree and plan the changes that turn it into `target` (only under
/// `paths` when given); `undoing` is the backup an undo brings back (its entries are written
/// as the bytes they hold). The capture holds every path the changes touch as it is on
/// disk: ignored files in the way and, for an undo, what the undone operation wrote that is
/// ignored now. Refuses — with nothing written but unreferenced objects — when the changes
/// would overwrite an untracked file too big for the backup. Files the snapshot leaves out
/// (secret-looking) are left in place when the target lacks them; both kinds are listed in
/// the capture's `excluded`.
pub fn prepare_overwrite(
    store: &Store,
    target: ObjectId,
    paths: Option<&[String]>,
    undoing: Option<&Backup>,
) -> Result<PreparedOverwrite> {
    let mut capture = capture(store)?;
    let max = Policy::for_backup(store)?.max_untracked_size;
    // What the undone operation wrote and the capture lacks (ignored now) goes back too.
    if let Some(b) = undoing {
        // Past a few dozen paths, one read of the whole tree beats a lookup per path.
        let held: Option<HashSet<BString>> = (b.details.touched.len() > 64)
            .then(|| store.objects().tree_entries(capture.tree))
            .transpose()?
            .map(|entries| entries.into_iter().map(|(p, _, _)| p).collect());
        let mut extra = vec![];
        // Only paths a checkout may write (a backup an older version took may list one
        // inside `.git`).
        let touched = b
            .details
            .touched
            .iter()
            .filter(|p| store.worktree().check_checkout_path(p, false).is_ok());
        for p in touched {
            let in_capture = match &held {
                Some(held) => held.contains(p),
                None => store.objects().entry_in_tree(capture.tree, p)?.is_some(),
            };
            if !in_capture && let OnDisk::Entry(id, kind) = store.worktree().raw_entry(p, max)? {
                extra.push((p.clone(), Some((id, kind))));
            }
        }
        capture.tree = store.objects().edit_tree(capture.tree, &extra)?;
    }
    let target = match undoing {
        Some(_) => writable_part(store, capture.tree, target, &mut capture.excluded)?,
        None => target,
    };
    let mut changes = plan_changes(store, capture.tree, target, paths)?;
    // Files in the way that the capture does not hold (ignored): into the backup too.
    let unsaved = unsaved_in_the_way(store, capture.tree, &changes)?;
    if !unsaved.is_empty() {
        let mut extra = vec![];
        for p in unsaved {
            match store.worktree().raw_entry(&p, max)? {
                OnDisk::Entry(id, kind) => extra.push((p, Some((id, kind)))),
                OnDisk::TooBig(size) => return Err(too_big_in_the_way(&p, size)),
                OnDisk::Missing | OnDisk::Dir => {}
            }
        }
        capture.tree = store.objects().edit_tree(capture.tree, &extra)?;
        changes = plan_changes(store, capture.tree, target, paths)?;
    }
    // One rule for files checkpoints leave out: never deleted, listed.
    let policy = Policy::from_config(store)?;
    let root = store.worktree().root()?;
    changes.retain(|c| {
        let shown = text_path(&c.path);
        let secret = c.new.is_none() && policy.is_excluded_file(root, &shown);
        if secret {
            capture.excluded.push(Excluded {
                path: shown,
                reason: "matches a secret pattern; snapshots leave it out, so it stays".into(),
            });
        }
        !secret
    });
    // Skip-worktree entries exist only when the capture kept the index file for its flags.
    let flags = capture.details.index_file.is_some();
    leave_in_place(store, flags, &mut capture.excluded, &mut changes)?;
    // Only what lies under the named paths is reported as left alone.
    if let Some(paths) = paths {
        capture
            .excluded
            .retain(|e| paths.iter().any(|p| text_path_is_under(&e.path, p)));
    }
    capture.excluded.sort_by(|a, b| a.path.cmp(&b.path));
    // The backup holds each path about to change as its bytes are on disk.
    let mut raw_edits = vec![];
    for c in &changes {
        if let Some((id, kind @ (EntryKind::Blob | EntryKind::BlobExecutable))) = c.old
            && let Some(raw) = store.worktree().raw_blob_if_different(&c.path, id)?
        {
            raw_edits.push((c.path.clone(), Some((raw, kind))));
        }
    }
    capture.tree = store.objects().edit_tree(capture.tree, &raw_edits)?;
    capture.details.touched = changes.iter().map(|c| c.path.clone()).collect();
    capture.details.modes = store.worktree().file_modes(&capture.details.touched)?;
    let backed_up = undoing
        .map(|b| AsBackedUp {
            raw: b.details.touched.iter().cloned().collect(),
            modes: b.details.modes.clone(),
        })
        .unwrap_or_default();
    Ok(PreparedOverwrite {
        capture,
        changes,
        backed_up,
    })
}

/// Why a submodule whose checked-out commit is not the target's stays as it is.
pub const SUBMODULE_LEFT_ALONE: &str = "a submodule: its worktree stays as it is, as git \
     leaves it (`git submodule update` checks out the commit the target records)";

/// What a checkout leaves as it is, as git's does, listed in `excluded`: a nested git
/// repository (a gitlink, as `git add -A` records an untracked one) the target lacks — its
/// files are in no backup, so it is never removed — a submodule whose checked-out commit
/// is not the target's, and a skip-worktree file with local
/// edits that the changes do not touch (looked for only when `index_flags`: the index has
/// entries with flags a tree cannot hold). Refuses when the target needs the path of a
/// nested repository for something else.
fn leave_in_place(
    store: &Store,
    index_flags: bool,
    excluded: &mut Vec<Excluded>,
    changes: &mut Vec<TreeChange>,
) -> Result<()> {
    let mut kept = Ok(());
    changes.retain(|c| {
        let Some((_, EntryKind::Commit)) = c.old else {
            return true;
        };
        match c.new {
            None => {
                excluded.push(Excluded {
                    path: text_path(&c.path),
                    reason: "a nested git repository (a gitlink); its files are in no backup, \
                             so it stays"
                        .into(),
                });
                false
            }
            Some((_, EntryKind::Commit)) => {
                // git checks a submodule's commit out only through `git submodule update`.
                excluded.push(Excluded {
                    path: text_path(&c.path),
                    reason: SUBMODULE_LEFT_ALONE.into(),
                });
                false
            }
            Some(_) => {
                kept = Err(Error::refused(format!(
                    "{} is a nested git repository, and the target needs that path for a file",
                    quote_path(&c.path)
                ))
                .with_hint("move the repository out of the way, then run the command again"));
                true
            }
        }
    });
    kept?;
    if !index_flags {
        return Ok(());
    }
    let changing: HashSet<&BString> = changes.iter().map(|c| &c.path).collect();
    let skipped: Vec<(BString, ObjectId)> = store
        .index()
        .skip_worktree_entries()?
        .into_iter()
        .filter(|(p, _)| !changing.contains(p))
        .collect();
    if skipped.is_empty() {
        return Ok(());
    }
    let paths: Vec<BString> = skipped.iter().map(|(p, _)| p.clone()).collect();
    let on_disk = store.worktree().worktree_entries(&paths)?;
    for ((p, id), disk) in skipped.iter().zip(on_disk) {
        if disk.is_some_and(|(d, _)| d != *id) {
            excluded.push(Excluded {
                path: text_path(p),
                reason: "skip-worktree in the index, with local edits: kept as it is on disk, \
                         as git checkout keeps it"
                    .into(),
            });
        }
    }
    Ok(())
}

/// Whether worktree path `path` (bytes from the top) is `under`: the same file, or inside
/// that folder; `under` may start with `./` and end with `/`, and `.` or empty is everything.
pub fn path_is_under(path: &[u8], under: &str) -> bool {
    let under = under.trim_start_matches("./").trim_end_matches('/');
    under.is_empty()
        || under == "."
        || path == under.as_bytes()
        || (path.starts_with(under.as_bytes()) && path.get(under.len()) == Some(&b'/'))
}

/// [`path_is_under`] for a path as [`text_path`] shows it: git's quoted form for a name that
/// is not UTF-8. Quoting escapes byte by byte, so a quoted name starts with the quoted form
/// of its folder.
fn text_path_is_under(path: &str, under: &str) -> bool {
    let under = under.trim_start_matches("./").trim_end_matches('/');
    if under.is_empty() || under == "." {
        return true;
    }
    let unquoted = |s: &str| -> String {
        s.strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .map_or_else(|| s.to_string(), str::to_string)
    };
    let under = unquoted(&agent_rewind_core::quote::quote_path(under.as_bytes()));
    path_is_under(unquoted(path).as_bytes(), &under)
}

/// The changes that turn the worktree captured in `from` (a backup tree) into `to`,
/// optionally only under the given paths (files or folders).
pub fn plan_changes(
    store: &Store,
    from: ObjectId,
    to: ObjectId,
    paths: Option<&[String]>,
) -> Result<Vec<TreeChange>> {
    let mut changes = store.objects().diff_trees(from, to)?;
    if let Some(paths) = paths {
        changes.retain(|c| paths.iter().any(|p| path_is_under(&c.path, p)));
    }
    store.worktree().check_checkout_paths(&changes)?;
    Ok(changes)
}

/// `target` (a backup tree) without the paths a checkout may not write — inside `.git`, as
/// in a backup an older version took before refusing a crafted run — each listed in
/// `excluded`: an undo brings back everything else and never writes there.
fn writable_part(
    store: &Store,
    from: ObjectId,
    target: ObjectId,
    excluded: &mut Vec<Excluded>,
) -> Result<ObjectId> {
    let mut drop = vec![];
    for c in store.objects().diff_trees(from, target)? {
        if c.new.is_some()
            && store
                .worktree()
                .check_checkout_path(&c.path, c.new.is_some_and(|n| n.1 == EntryKind::Link))
                .is_err()
        {
            excluded.push(Excluded {
                path: text_path(&c.path),
                reason: "a path inside .git in the backup; undo never writes there".into(),
            });
            drop.push((c.path, None));
        }
    }
    if drop.is_empty() {
        return Ok(target);
    }
    store.objects().edit_tree(target, &drop)
}

/// The files on disk that writing `changes` would overwrite or remove and that `from` (the
/// capture that becomes the backup) does not hold: a file at a path the target adds, the
/// files of a folder there, or a file where the target needs a folder.
fn unsaved_in_the_way(
    store: &Store,
    from: ObjectId,
    changes: &[TreeChange],
) -> Result<Vec<BString>> {
    let root = store.worktree().root()?;
    let mut out = vec![];
    let mut seen = HashSet::new();
    for c in changes.iter().filter(|c| c.old.is_none()) {
        // A file where the target needs a folder.
        let comps: Vec<&[u8]> = c.path.split_str("/").collect();
        for end in 1..comps.len() {
            let prefix = BString::from(comps[..end].join(&b'/'));
            if !seen.insert(prefix.clone()) {
                continue;
            }
            match std::fs::symlink_metadata(root.join(rel_path(&prefix))) {
                Ok(md)
                    if !md.is_dir() && store.objects().path_in_tree(from, &prefix)?.is_none() =>
                {
                    out.push(prefix);
                }
                _ => {}
            }
        }
        // The path itself.
        match std::fs::symlink_metadata(root.join(rel_path(&c.path))) {
            Err(_) => {}
            Ok(md) if md.is_dir() => unsaved_under(store, root, from, &c.path, &mut out)?,
            Ok(_) => {
                if store.objects().path_in_tree(from, &c.path)?.is_none() {
                    out.push(c.path.clone());
                }
            }
        }
    }
    Ok(out)
}

/// The files under folder `rel` (on disk) that `tree` does not hold.
fn unsaved_under(
    store: &Store,
    root: &std::path::Path,
    tree: ObjectId,
    rel: &[u8],
    out: &mut Vec<BString>,
) -> Result<()> {
    let mut stack = vec![BString::from(rel)];
    while let Some(dir) = stack.pop() {
        let full = root.join(rel_path(&dir));
        for entry in std::fs::read_dir(&full).at(&full)? {
            let entry = entry.at(&full)?;
            let mut path = dir.clone();
            path.push(b'/');
            path.extend_from_slice(&agent_rewind_core::platform::paths::os_bytes(
                &entry.file_name(),
            ));
            if entry.file_type().at(entry.path())?.is_dir() {
                stack.push(path);
            } else if store.objects().path_in_tree(tree, &path)?.is_none() {
                out.push(path);
            }
        }
    }
    Ok(())
}

/// A path a rewind/restore/undo changed in the worktree: `A`dded, `D`eleted (removed; its
/// content is in the backup), `M`odified or `T`ype changed (the previous one set aside in the
/// backup).
#[derive(Debug, Clone, serde::Serialize)]
pub struct PathChange {
    pub path: agent_rewind_core::quote::PathBytes,
    pub change: crate::store::ChangeKind,
}

/// What `changes` do to the worktree, path by path.
pub fn path_changes(changes: &[TreeChange]) -> Vec<PathChange> {
    changes
        .iter()
        .map(|c| PathChange {
            path: agent_rewind_core::quote::PathBytes(c.path.to_vec()),
            change: c.change,
        })
        .collect()
}

/// Write the planned changes into this worktree (the blobs at `backed_up.raw` paths as they
/// are, with the bits `backed_up.modes` holds; the others through the checkout filters,
/// with git's modes); returns the files written. The caller has taken a
/// backup, so a failure part-way (its message names the files already changed) says that
/// `undo` brings the worktree back.
pub fn write_changes(
    store: &Store,
    changes: &[TreeChange],
    backed_up: &AsBackedUp,
) -> Result<Vec<WrittenFile>> {
    store
        .worktree()
        .apply_changes(store.worktree().root()?, changes, backed_up)
        .map_err(|e| {
            if e.kind == agent_rewind_core::error::ErrorKind::Refused {
                return e; // refused before anything was written
            }
            let undo = "`git agent-rewind undo` brings back every file as it was before this \
                        command (its backup was taken first)";
            let hint = match e.hint.as_deref() {
                Some(h) => format!("{h}; {undo}"),
                None => undo.to_string(),
            };
            e.with_hint(hint)
        })
}

/// `e`, a failure after every planned change was written: says so, naming the files, and
/// that `undo` brings them back (the backup was taken first).
pub fn files_were_changed(e: Error, changes: &[TreeChange]) -> Error {
    const MAX_LISTED: usize = 200;
    let mut list: Vec<String> = changes
        .iter()
        .take(MAX_LISTED)
        .map(|c| quote_path(&c.path).to_string())
        .collect();
    if changes.len() > MAX_LISTED {
        list.push(format!("and {} more", changes.len() - MAX_LISTED));
    }
    let n = changes.len();
    let mut e = e;
    if n > 0 {
        let files = if n == 1 { "file" } else { "files" };
        e.message = format!(
            "{}; before that, {n} {files} of the worktree had been changed: {}",
            e.message,
            list.join(", ")
        );
    }
    let undo = "`git agent-rewind undo` brings back every file, the index and HEAD as they \
                were before this command (its backup was taken first)";
    let hint = match e.hint.as_deref() {
        Some(h) => format!("{h}; {undo}"),
        None => undo.to_string(),
    };
    e.with_hint(hint)
}

/// Put HEAD, index and worktree of this worktree back to what `backup` captured, writing
/// the changes planned by [`prepare_overwrite`]. The current state (`prepared.capture`) must
/// already be backed up by the caller.
pub fn restore_backup(store: &Store, prepared: &PreparedOverwrite, backup: &Backup) -> Result<()> {
    let written = write_changes(store, &prepared.changes, &prepared.backed_up)?;
    agent_rewind_core::crash_point!("undo:files-written");
    restore_head_and_index(store, prepared, backup, &written)
        .map_err(|e| files_were_changed(e, &prepared.changes))
}

/// The part of [`restore_backup`] after the files: HEAD, then the index.
fn restore_head_and_index(
    store: &Store,
    prepared: &PreparedOverwrite,
    backup: &Backup,
    written: &[WrittenFile],
) -> Result<()> {
    let head = backup.head.as_deref().map(oid).transpose()?;
    match (&backup.branch, head) {
        // The branch may have moved since; leave it where it is and only re-attach HEAD.
        (Some(b), _) => store.worktree().attach_user_head(b, "agent-rewind: undo")?,
        (None, Some(h)) => store.worktree().move_user_head(None, Some(h))?,
        (None, None) => {}
    }
    agent_rewind_core::crash_point!("undo:head-moved");
    let index_tree = oid(&backup.index_tree)?;
    // An index holding flags no tree can is put back as the file it was.
    if let Some(saved) = &backup.details.index_file
        && store.index().reinstall_user_index(saved, index_tree)?
    {
        return Ok(());
    }
    store
        .index()
        .set_user_index(Some(index_tree), Some(prepared.capture.index_tree), written)?;
    Ok(())
}

fn oid(hex: &str) -> Result<ObjectId> {
    ObjectId::from_hex(hex.as_bytes())
        .map_err(|_| Error::corrupt(format!("invalid object id {hex:?} in a backup")))
}
