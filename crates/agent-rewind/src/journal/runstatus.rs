//! Run-level status lines on a run's root note: archiving a run (the source of a rewind) and
//! un-archiving it (an undo of that rewind). Lines are only ever appended; the newest by
//! timestamp wins (`Note::run_status`), so un-archiving appends the status the run had
//! before it was archived (`completed`, else `active`, which means "no run-level status:
//! read the tip").
//!
//! Never decides *whether* a run should be archived: callers do.

use crate::catalog::Catalog;
use crate::journal::append_note_lines;
use crate::model::NoteLine;
use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use agent_rewind_core::time::Timestamp;

/// The run-level status that means "not archived, nothing recorded: read the tip".
pub const ACTIVE: &str = "active";
pub const ARCHIVED: &str = "archived";
pub const COMPLETED: &str = "completed";

/// Append `archived` to `run`'s root note unless it is archived already. Returns whether a
/// line was written.
pub fn archive(store: &Store, run: &RunId, reason: &str) -> Result<bool> {
    let mut catalog = Catalog::new(store);
    let tip = catalog.require_run_tip(run)?;
    let root = catalog.root_of(&tip)?;
    if matches!(root.note.run_status(), Some((_, ARCHIVED))) {
        return Ok(false);
    }
    append_note_lines(
        store,
        run,
        root.id(),
        &[NoteLine::RunStatus {
            status: ARCHIVED.into(),
            ts: Timestamp::now(),
            reason: Some(reason.to_string()),
        }],
    )?;
    Ok(true)
}

/// Undo an `archived` status of `run`: append the run-level status it had before (a
/// `completed` that still held then, else `active`). Returns whether a line was written
/// (nothing when the run is not archived).
pub fn unarchive(store: &Store, run: &RunId, reason: &str) -> Result<bool> {
    let mut catalog = Catalog::new(store);
    let tip = catalog.require_run_tip(run)?;
    let root = catalog.root_of(&tip)?;
    let Some((archived_at, ARCHIVED)) = root.note.run_status() else {
        return Ok(false);
    };
    let before = root
        .note
        .lines
        .iter()
        .filter_map(|l| match l {
            NoteLine::RunStatus { status, ts, .. } if *ts < archived_at => {
                Some((*ts, status.as_str()))
            }
            _ => None,
        })
        .max_by(|a, b| a.0.cmp(&b.0));
    let status = match before {
        Some((ts, COMPLETED)) if ts >= tip.line().ts => COMPLETED,
        _ => ACTIVE,
    };
    // Strictly after the archive line, even with a clock that went back.
    let now = Timestamp::now().max(archived_at.add_millis(1));
    append_note_lines(
        store,
        run,
        root.id(),
        &[NoteLine::RunStatus {
            status: status.into(),
            ts: now,
            reason: Some(reason.to_string()),
        }],
    )?;
    Ok(true)
}
