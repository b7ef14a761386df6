//! The active run of a worktree: a small private file in the worktree's own git dir (see
//! `store::private`), so each worktree has its own; `AGENT_RUN` overrides it. Written
//! atomically in the private envelope (`ACTIVE_RUN`); a damaged file is refused, one from
//! before the envelope (the bare run id) is read. Never decides which run should be active:
//! callers do.

use crate::store::Store;
use agent_rewind_core::error::Result;
use agent_rewind_core::ids::RunId;
use agent_rewind_core::private::envelope::ACTIVE_RUN;
use agent_rewind_core::private::remove_if_exists;

/// The active run of this worktree, if any. `AGENT_RUN` in the environment overrides it.
pub fn active_run(store: &Store) -> Result<Option<RunId>> {
    if let Ok(env) = std::env::var("AGENT_RUN")
        && !env.is_empty()
    {
        return RunId::new(env)
            .map(Some)
            .map_err(|e| e.context("AGENT_RUN"));
    }
    worktree_active_run(store)
}

/// The active run recorded in this worktree's file, ignoring `AGENT_RUN`: the worktree's own
/// state, which backups record and `undo` puts back.
pub fn worktree_active_run(store: &Store) -> Result<Option<RunId>> {
    active_run_in(&store.private().active_run())
}

/// The active run recorded in the active-run file at `path` (any worktree's).
pub fn active_run_in(path: &std::path::Path) -> Result<Option<RunId>> {
    match ACTIVE_RUN.read_state(path)? {
        Some(b) => {
            let s = String::from_utf8_lossy(&b);
            if s.trim().is_empty() {
                return Ok(None);
            }
            RunId::new(s.trim())
                .map(Some)
                .map_err(|e| e.context(format!("{}", path.display())))
        }
        None => Ok(None),
    }
}

/// Make `run` the active run of this worktree.
pub fn set_active_run(store: &Store, run: &RunId) -> Result<()> {
    ACTIVE_RUN.write(&store.private().active_run(), format!("{run}\n").as_bytes())
}

/// Forget the active run of this worktree.
pub fn clear_active_run(store: &Store) -> Result<()> {
    remove_if_exists(&store.private().active_run())
}
