//! `status`: the active run of this worktree.

use crate::cli::{Ctx, Output, render};
use agent_rewind::ops;
use agent_rewind_core::error::Result;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:
  git agent-rewind status
      The active run of this worktree, its last checkpoint, its unfinished steps and what a resume would do next.
  git agent-rewind --json status
      The same as one JSON document, for an orchestrator.";

pub fn run(ctx: &Ctx) -> Result<Output> {
    let store = ctx.store_to_look()?;
    match ops::status::status(&store)? {
        // A bare repository has no worktree to start a run in: where its runs are is the
        // useful answer.
        None if store.worktree().is_bare() => Ok(Output::new(
            serde_json::json!({"run": null}),
            "no active run: a bare repository has no worktree (`git agent-rewind list` shows its runs)".into(),
        )),
        None => Ok(Output::new(
            serde_json::json!({"run": null}),
            "no active run in this worktree (start one with `git agent-rewind start`)".into(),
        )),
        Some(s) => Ok(Output::new(
            s.to_json(),
            render::status(&s, &ctx.style(&store)?),
        )),
    }
}
