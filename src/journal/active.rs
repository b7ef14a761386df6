//! The active run of a worktree: a small file in the worktree's own git dir
//! (`.git/agent-rewind/active-run`, or `.git/worktrees/<name>/agent-rewind/active-run` for a
//! linked worktree), so each worktree has its own. Written atomically (temp file + rename).

use crate::error::{Error, Result};
use crate::ids::RunId;
use crate::store::Store;
use std::path::PathBuf;

fn path(store: &Store) -> PathBuf {
    Store::private_dir(store.git_dir()).join("active-run")
}

/// The active run of this worktree, if any. `AGENT_RUN` in the environment overrides it.
pub fn active_run(store: &Store) -> Result<Option<RunId>> {
    if let Ok(env) = std::env::var("AGENT_RUN")
        && !env.is_empty()
    {
        return RunId::new(env)
            .map(Some)
            .map_err(|e| e.context("AGENT_RUN"));
    }
    match std::fs::read_to_string(path(store)) {
        Ok(s) if !s.trim().is_empty() => RunId::new(s.trim())
            .map(Some)
            .map_err(|e| e.context("active-run file")),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::other(format!(
            "could not read {}: {e}",
            path(store).display()
        ))),
    }
}

/// Make `run` the active run of this worktree.
pub fn set_active_run(store: &Store, run: &RunId) -> Result<()> {
    let p = path(store);
    let dir = p.parent().expect("has parent");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("active-run.{}.tmp", std::process::id()));
    std::fs::write(&tmp, format!("{run}\n"))?;
    std::fs::rename(&tmp, &p)?;
    Ok(())
}

/// Forget the active run of this worktree.
pub fn clear_active_run(store: &Store) -> Result<()> {
    match std::fs::remove_file(path(store)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}
