//! `undo`: bring this worktree back to the state saved by its last backup (before the last
//! rewind, fork, restore, revert — or undo), or by any older one named (`undo <backup>`,
//! listed by `undo --list`). The current state is backed up first, so an undo is itself
//! undoable. Besides files, index and HEAD, it puts back which run was active and reverses
//! what the operation did to runs: a rewind's source is un-archived, the run the operation
//! created is archived (kept, with its branch; an undo of the undo brings it back), a
//! reverted run is no longer called reverted. It never writes inside `.git`, whatever a
//! backup holds.

use crate::journal::{clear_active_run, runstatus, set_active_run, worktree_active_run};
use crate::materialize::{self, Backup};
use crate::model::NoteLine;
use crate::store::ObjectId;
use crate::store::Store;
use crate::store::layout;
use agent_rewind_core::error::{Error, Result};
use agent_rewind_core::ids::RunId;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct UndoOutcome {
    /// The backup that was brought back.
    pub restored: Backup,
    /// The backup of the state just before this undo (what the next `undo` brings back).
    pub backup: Backup,
    /// The active run of this worktree before and after the undo (`active_restored` is false
    /// when the backup did not record it: then it was left alone).
    pub active_run_before: Option<String>,
    pub active_run: Option<String>,
    pub active_restored: bool,
    /// Runs un-archived (the source of the rewind undone).
    pub unarchived: Vec<String>,
    /// Runs archived (the run the undone rewind/fork created; kept, not deleted).
    pub archived: Vec<String>,
    /// The branch HEAD was on before the undo when the undo left it (e.g. the branch the
    /// rewind created): kept, never deleted.
    pub branch_left: Option<String>,
}

/// The backups of this worktree, newest first: what `undo` (the first) and `undo <backup>`
/// bring back (without their details: the touched paths and index file are not read).
pub fn list(store: &Store) -> Result<Vec<Backup>> {
    store.worktree().root()?;
    materialize::list_backups(store)
}

/// The backup `which` names (a commit id or a prefix of at least 4 hex digits, among this
/// worktree's backups), or the newest.
fn choose(store: &Store, which: Option<&str>) -> Result<Backup> {
    let Some(which) = which else {
        return materialize::backups_of_this_worktree(store, 1)?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Error::not_found("nothing to undo: no backup was taken in this worktree")
            });
    };
    let hint = "`git agent-rewind undo --list` lists the backups of this worktree";
    let wanted = which.to_ascii_lowercase();
    if wanted.len() < 4 || !wanted.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::usage(format!(
            "{which:?} is not a backup id (at least 4 hex digits)"
        ))
        .with_hint(hint));
    }
    let found: Vec<Backup> = list(store)?
        .into_iter()
        .filter(|b| b.commit.starts_with(&wanted))
        .collect();
    match found.len() {
        1 => materialize::backup_of_this_worktree(store, &found[0].commit)?
            .ok_or_else(|| Error::conflict("the backups changed while they were read")),
        0 => Err(Error::not_found(format!("no backup {which} in this worktree")).with_hint(hint)),
        n => Err(Error::usage(format!(
            "{which} names {n} backups; give more of its digits"
        ))
        .with_hint(hint)),
    }
}

/// Bring back the backup `which` names (see [`choose`]), by default the newest.
pub fn undo(store: &Store, which: Option<&str>) -> Result<UndoOutcome> {
    materialize::ensure_safe_to_overwrite(store)?;
    let target = choose(store, which)?;
    // HEAD moves after the files are written: its lock is checked before.
    store.refs().ensure_unlocked("HEAD")?;
    let target_tree = ObjectId::from_hex(target.worktree_tree.as_bytes())
        .map_err(|_| Error::corrupt(format!("backup {} has an invalid tree id", target.commit)))?;
    let mut prepared = materialize::prepare_overwrite(store, target_tree, None, Some(&target))?;

    // The reverse of what the operation did to runs (runs deleted since are skipped).
    let exists = |r: &String| -> Result<Option<RunId>> {
        let Ok(run) = RunId::new(r.clone()) else {
            return Ok(None);
        };
        Ok(store.refs().run_head(&run)?.is_some().then_some(run))
    };
    let mut to_unarchive = vec![];
    for r in &target.runs.archives {
        to_unarchive.extend(exists(r)?);
    }
    let mut to_archive = vec![];
    for r in target.runs.unarchives.iter().chain(&target.runs.new_run) {
        to_archive.extend(exists(r)?);
    }
    let active_before = worktree_active_run(store)?;
    prepared.capture.runs = materialize::RunFacts::active(active_before.as_ref());
    prepared.capture.runs.archives = to_archive.iter().map(|r| r.to_string()).collect();
    prepared.capture.runs.unarchives = to_unarchive.iter().map(|r| r.to_string()).collect();
    // A revert taken back (or brought back again): the next undo reverses that too.
    let revert_fact = match (&target.runs.reverts, &target.runs.unreverts) {
        (Some(r), _) => exists(r)?.map(|r| (r, crate::model::REVERT_UNDONE)),
        (None, Some(r)) => exists(r)?.map(|r| (r, crate::model::REVERT_REDONE)),
        (None, None) => None,
    };
    match &revert_fact {
        Some((r, crate::model::REVERT_UNDONE)) => {
            prepared.capture.runs.unreverts = Some(r.to_string())
        }
        Some((r, _)) => prepared.capture.runs.reverts = Some(r.to_string()),
        None => {}
    }

    // The notes of those runs are written after the files: their locks are checked before.
    let noted = to_unarchive
        .iter()
        .chain(&to_archive)
        .chain(revert_fact.as_ref().map(|(r, _)| r));
    for r in noted {
        store.refs().ensure_unlocked(&layout::notes_ref(r))?;
    }

    let backup = materialize::publish_backup(
        store,
        &prepared.capture,
        &format!("undo to {}", target.commit),
    )?;
    agent_rewind_core::crash_point!("undo:backed-up");
    materialize::restore_backup(store, &prepared, &target)?;

    let why = format!("undo of: {}", target.reason);
    let mut unarchived = vec![];
    for r in &to_unarchive {
        if runstatus::unarchive(store, r, &why)? {
            unarchived.push(r.to_string());
        }
    }
    let mut archived = vec![];
    for r in &to_archive {
        if runstatus::archive(store, r, &why)? {
            archived.push(r.to_string());
        }
    }
    if let Some((run, kind)) = &revert_fact {
        record_revert_fact(store, run, kind, &target)?;
    }
    let active_restored = target.runs.recorded;
    let mut active_now = active_before.clone();
    if active_restored {
        active_now = target
            .runs
            .active_run
            .as_ref()
            .and_then(|r| RunId::new(r.clone()).ok());
        match &active_now {
            Some(r) => set_active_run(store, r)?,
            None => clear_active_run(store)?,
        }
    }
    let before_branch = prepared.capture.head.branch.clone();
    let branch_left = before_branch
        .filter(|b| target.branch.as_ref() != Some(b))
        .map(|b| b.strip_prefix("refs/heads/").unwrap_or(&b).to_string());
    Ok(UndoOutcome {
        restored: target,
        backup,
        active_run_before: active_before.map(|r| r.to_string()),
        active_run: active_now.map(|r| r.to_string()),
        active_restored,
        unarchived,
        archived,
        branch_left,
    })
}

/// Append to `run`'s tip the record that its revert was undone (`kind` = `revert-undone`) or
/// brought back (`revert-redone`) by bringing back `backup`.
fn record_revert_fact(store: &Store, run: &RunId, kind: &str, backup: &Backup) -> Result<()> {
    let Some(tip) = store.refs().run_head(run)? else {
        return Ok(());
    };
    let line = NoteLine::Other(serde_json::json!({
        "type": kind,
        "backup": backup.commit,
        "by": store.config().identity().unwrap_or_else(agent_rewind_core::time::writer_id),
        "ts": agent_rewind_core::time::Timestamp::now(),
    }));
    crate::journal::append_note_lines(store, run, tip, &[line])
}
