//! `status`: the active run of this worktree.

use crate::cli::{Ctx, Output, render};
use agent_rewind::error::Result;
use agent_rewind::ops;

/// The examples ending `-h`.
pub const EXAMPLES: &str = "Examples:\n  git agent-rewind status\n  git agent-rewind --json status";

pub fn run(ctx: &Ctx) -> Result<Output> {
    let store = ctx.store()?;
    match ops::status::status(&store)? {
        None => Ok(Output::new(
            serde_json::json!({"run": null}),
            "no active run in this worktree (start one with `git agent-rewind start`)".into(),
        )),
        Some(s) => Ok(Output::new(s.to_json(), render::status(&s, &ctx.style))),
    }
}
