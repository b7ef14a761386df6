//! `undo`: bring back the worktree as it was before the last rewind/fork/restore/undo.

use crate::cli::{Ctx, Output, render};
use agent_rewind::error::Result;
use agent_rewind::ops;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind undo
      Bring back the worktree as it was before the last rewind, fork, restore or undo, from the backup taken then.
  git agent-rewind undo
      Again: back to before the undo.";

pub fn run(ctx: &Ctx) -> Result<Output> {
    let out = ops::undo::undo(&ctx.store()?)?;
    let human = render::undone(&out);
    Ok(Output::new(
        serde_json::to_value(&out).expect("json"),
        human,
    ))
}
