//! `undo`: bring back the worktree as it was before the last rewind/fork/restore/revert/undo,
//! or before an older one (`undo <backup>`); `undo --list` lists the backups.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;
use clap::Args;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind undo
      Bring back the worktree as it was before the last rewind, fork, restore, revert or undo, from the backup taken then (again: back to before the undo).
  git agent-rewind undo --list
      List the backups of this worktree, newest first: what each was taken before.
  git agent-rewind undo 3f2a9c1e
      Bring back an older backup, named by its id (or the first digits of it).";

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The backup to bring back (its commit id, or at least 4 of its first digits; default:
    /// the newest backup of this worktree).
    #[arg(value_name = "BACKUP", conflicts_with = "list")]
    pub backup: Option<String>,
    /// List the backups of this worktree, newest first; change nothing.
    #[arg(long)]
    pub list: bool,
}

pub fn run(a: UndoArgs, ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    if a.list {
        let backups = ops::undo::list(&store)?;
        let human = render::backups(&backups);
        return Ok(Output::new(
            serde_json::to_value(&backups).expect("json"),
            human,
        ));
    }
    let out = ops::undo::undo(&store, a.backup.as_deref())?;
    crate::cli::post_rewind::run_hook(
        &store,
        &ops::post_rewind::RewindEvent {
            operation: "undo",
            source: Some(&out.restored.commit),
            target: None,
            backup: Some(&out.backup.commit),
        },
    );
    let human = render::undone(&out);
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        human,
    ))
}
