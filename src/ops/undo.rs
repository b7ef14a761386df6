//! `undo`: bring this worktree back to the state saved by its last backup (before the last
//! rewind, fork, restore — or undo). The current state is backed up first, so an undo is
//! itself undoable.

use crate::error::{Error, Result};
use crate::materialize::{self, Backup};
use crate::store::ObjectId;
use crate::store::Store;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct UndoOutcome {
    /// The backup that was brought back.
    pub restored: Backup,
    /// The backup of the state just before this undo (what the next `undo` brings back).
    pub backup: Backup,
}

pub fn undo(store: &Store) -> Result<UndoOutcome> {
    materialize::ensure_safe_to_overwrite(store)?;
    let target = materialize::backups_of_this_worktree(store, 1)?
        .into_iter()
        .next()
        .ok_or_else(|| Error::not_found("nothing to undo: no backup was taken in this worktree"))?;
    let target_tree = ObjectId::from_hex(target.worktree_tree.as_bytes())
        .map_err(|_| Error::corrupt(format!("backup {} has an invalid tree id", target.commit)))?;
    let prepared = materialize::prepare_overwrite(store, target_tree, None)?;
    let backup = materialize::publish_backup(
        store,
        &prepared.capture,
        &format!("undo to {}", target.commit),
    )?;
    crate::crash_point!("undo:backed-up");
    materialize::restore_backup(store, &prepared, &target)?;
    Ok(UndoOutcome {
        restored: target,
        backup,
    })
}
